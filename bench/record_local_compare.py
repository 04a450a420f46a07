#!/usr/bin/env python3
"""record_local_compare.py — a report of bench/local_compare.sh as a run
file of bench/results/ (schema: bench/results/README.md), on stdout.

    python3 bench/record_local_compare.py REPORT [--commit C] [--machine M] [--note N]

REPORT is local_compare.sh's output as printed.  The date, time and
kernel come from its first line; each goal line becomes a figure with
its ratio, goal and verdict (the names of the goals plot_results.py
draws where they are the same goals), and the whole report is kept in
`report`.  Nothing is filled in that the report does not say.
"""
import json
import re
import sys


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__.strip().splitlines()[2].strip())
    report = open(args[0], encoding="utf-8").read().splitlines()
    opts = dict(zip(args[1::2], args[2::2]))
    head = re.search(r"(\d+) CPUs, (\S+); (\d{4}-\d\d-\d\d)T(\d\d:\d\d)Z", report[0]) if report else None
    if not head:
        sys.exit("record_local_compare: %s: no local_compare.sh header line" % args[0])
    figures = []
    # "  NAME RTT V us = R x UCX posix tag_lat RTT B us (goal <= 3): VERDICT"
    lat = re.compile(r"^  (\S+) RTT ([\d.]+) us = ([\d.]+) x UCX posix tag_lat RTT ([\d.]+) us \(goal (<=|>=) ([\d.]+)\): (.*)$")
    ucx = re.compile(r"^  UCX over softrnic rc_verbs tag_lat RTT ([\d.]+) us = ([\d.]+) x UCX posix ([\d.]+) us \(goal (<=) ([\d.]+)\): (.*)$")
    bw = re.compile(r"^  (\S+) 64 KiB ([\d.]+) MB/s = ([\d.]+) x UCX posix tag_bw best ([\d.]+) MB/s \(goal (>=) ([\d.]+);.*\): (.*)$")
    rate = re.compile(r"^  ib_write_bw 4 KiB message rate ([\d.]+) Mpps = ([\d.]+) x UCX posix tag_bw 4 KiB ([\d.]+) Mpps \(goal (>=) ([\d.]+)\): (.*)$")
    rw = re.compile(r"^  ib_read_lat / ib_write_lat = ([\d.]+) / ([\d.]+) = ([\d.]+) \(goal (<=) ([\d.]+)\): (.*)$")
    cpu = re.compile(r"^  CPU per GiB moved ([\d.]+) s busy-polling, ([\d.]+) s in event mode = ([\d.]+) x / ([\d.]+) x iperf3 TCP ([\d.]+) s \(goal (<=) ([\d.]+)\): (\S+(?: met)?) / (.*)$")

    def fig(name, value, unit, base, base_value, ratio, goal, verdict):
        figures.append({"figure": name, "value": float(value), "unit": unit, "baseline": base,
                        "baseline_value": float(base_value), "ratio": float(ratio), "goal": goal,
                        "verdict": verdict.strip()})

    for line in report:
        m = lat.match(line)
        if m:
            name = "host-local %s RTT / UCX posix tag_lat RTT" % m.group(1)
            fig(name, m.group(2), "us", "UCX posix tag_lat RTT", m.group(4), m.group(3),
                "%s %s" % (m.group(5), m.group(6)), m.group(7))
            continue
        m = ucx.match(line)
        if m:
            fig("UCX over softrnic rc_verbs tag_lat RTT / UCX posix tag_lat RTT", m.group(1), "us",
                "UCX posix tag_lat RTT", m.group(3), m.group(2), "%s %s" % (m.group(4), m.group(5)), m.group(6))
            continue
        m = bw.match(line)
        if m:
            fig("host-local %s 64 KiB / UCX posix tag_bw best" % m.group(1), m.group(2), "MB/s",
                "UCX posix tag_bw best", m.group(4), m.group(3), "%s %s" % (m.group(5), m.group(6)), m.group(7))
            continue
        m = rate.match(line)
        if m:
            fig("host-local ib_write_bw 4 KiB message rate / UCX posix tag_bw 4 KiB", m.group(1), "Mpps",
                "UCX posix tag_bw 4 KiB message rate", m.group(3), m.group(2),
                "%s %s" % (m.group(4), m.group(5)), m.group(6))
            continue
        m = rw.match(line)
        if m:
            fig("host-local ib_read_lat RTT / ib_write_lat RTT", m.group(1), "us", "ib_write_lat RTT",
                m.group(2), m.group(3), "%s %s" % (m.group(4), m.group(5)), m.group(6))
            continue
        m = cpu.match(line)
        if m:
            goal = "%s %s" % (m.group(6), m.group(7))
            fig("host-local CPU per GiB moved, busy-polling / iperf3 TCP", m.group(1), "s/GiB",
                "iperf3 TCP CPU per GiB", m.group(5), m.group(3), goal, m.group(8))
            fig("host-local CPU per GiB moved, event mode / iperf3 TCP", m.group(2), "s/GiB",
                "iperf3 TCP CPU per GiB", m.group(5), m.group(4), goal, m.group(9))
    if not figures:
        sys.exit("record_local_compare: %s: no goal lines" % args[0])
    run = {
        "date": head.group(3), "time": head.group(4), "commit": opts.get("--commit", "unknown"),
        "machine": opts.get("--machine", "unknown"), "kernel": head.group(2),
        "build": "release (build/)", "command": "bash bench/local_compare.sh build --runs 3",
        "source": "the script's report, " + args[0].split("/")[-1],
        "figures": figures, "report": report,
    }
    if "--note" in opts:
        run["note"] = opts["--note"]
    json.dump(run, sys.stdout, indent=1, ensure_ascii=False)
    print()


if __name__ == "__main__":
    main()
