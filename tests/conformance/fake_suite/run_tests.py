# Stand-in for rdma-core's run_tests.py: only --list-tests is used by the
# driver (tests themselves run through the driver's own child mode).
import os
import sys
import unittest
from importlib.machinery import SourceFileLoader

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from args_parser import parser  # noqa: E402

parser.parse_args()
tests = SourceFileLoader('tests', os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                               '__init__.py')).load_module()


def ids(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from ids(item)
        else:
            yield item.id()


if parser.args['list_tests']:
    loader = unittest.TestLoader()
    for name in sorted(n for n in dir(tests) if n.startswith('test_')):
        for test_id in ids(loader.loadTestsFromModule(getattr(tests, name))):
            print(test_id)
