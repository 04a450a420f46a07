# Stand-in for rdma-core's args_parser: keeps --dev/--port/--gid so the
# fake tests can check that the driver passed them through.
import argparse
import sys


class _Parser:
    def __init__(self):
        self.args = None

    def parse_args(self):
        p = argparse.ArgumentParser()
        p.add_argument('--dev')
        p.add_argument('--port', type=int, default=1)
        p.add_argument('--gid', type=int)
        p.add_argument('--list-tests', action='store_true')
        ns, rest = p.parse_known_args()
        self.args = vars(ns)
        sys.argv[1:] = rest

    def get_config(self):
        return self.args


parser = _Parser()
