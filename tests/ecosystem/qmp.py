#!/usr/bin/python3
"""qmp.py — one QMP exchange with a running QEMU (tests/ecosystem/qemu_migrate.sh).

    qmp.py SOCKET COMMAND [JSON-ARGUMENTS]

Connects to QEMU's QMP unix socket, negotiates capabilities, runs COMMAND
with the arguments given as one JSON object, prints the "return" value as
JSON (a string as it is) and exits 0; on an "error" answer prints it to
stderr and exits 1.  Asynchronous events QEMU sends meanwhile are skipped.
"""
import json
import socket
import sys


def main():
    path, command = sys.argv[1], sys.argv[2]
    args = json.loads(sys.argv[3]) if len(sys.argv) > 3 else None
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    s.connect(path)
    f = s.makefile("rw")

    def answer():
        while True:
            line = f.readline()
            if not line:
                raise SystemExit("qmp: QEMU closed the socket")
            msg = json.loads(line)
            if "return" in msg or "error" in msg:
                return msg

    json.loads(f.readline())  # the greeting
    f.write(json.dumps({"execute": "qmp_capabilities"}) + "\n")
    f.flush()
    answer()
    req = {"execute": command}
    if args is not None:
        req["arguments"] = args
    f.write(json.dumps(req) + "\n")
    f.flush()
    msg = answer()
    if "error" in msg:
        print("qmp: %s: %s" % (command, msg["error"]), file=sys.stderr)
        return 1
    ret = msg["return"]
    print(ret if isinstance(ret, str) else json.dumps(ret))
    return 0


if __name__ == "__main__":
    sys.exit(main())
