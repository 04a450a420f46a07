#!/usr/bin/env python3
"""congestion_sample.py — the sampler of scripts/congestion.sh.

Every 100 ms (wall clock) it reads, from outside the softrnic processes:
  - the receiver's nftables input counters: bytes per sending address, i.e.
    each flow's goodput on the wire as the receiving host sees it, all
    RoCEv2 bytes, and the bytes that arrived CE-marked;
  - the bottleneck qdisc (tc -s -j): backlog bytes and drops.
and appends one CSV row: time, per-flow Mb/s in the bin, marked fraction,
backlog, cumulative drops.  It stops when the file named by --stop exists.

Counters come from the kernel, not from softrnic: an independent view.
"""
import argparse
import json
import os
import subprocess
import time


def netns_json(ns, *cmd):
    out = subprocess.run(["ip", "netns", "exec", ns, *cmd], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def nft_counters(ns, table):
    """{comment: bytes} for every rule of `table` with a counter and a comment."""
    data = netns_json(ns, "nft", "-j", "list", "table", "ip", table)
    found = {}
    for item in data.get("nftables", []):
        rule = item.get("rule")
        if not rule or "comment" not in rule:
            continue
        for expr in rule.get("expr", []):
            if "counter" in expr:
                found[rule["comment"]] = expr["counter"]["bytes"]
    return found


def qdisc_stats(ns, dev):
    """(backlog bytes, drops) summed over the qdiscs of dev."""
    backlog = drops = 0
    for q in netns_json(ns, "tc", "-s", "-j", "qdisc", "show", "dev", dev):
        if q.get("kind") in ("htb", "clsact"):
            continue        # the leaf holds the packets; htb repeats them
        backlog += q.get("backlog", 0)
        drops += q.get("drops", 0)
    return backlog, drops


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--router", required=True)
    ap.add_argument("--receiver", required=True)
    ap.add_argument("--dev", required=True, help="the router's interface toward the receiver")
    ap.add_argument("--flows", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--stop", required=True)
    ap.add_argument("--period", type=float, default=0.1)
    a = ap.parse_args()

    names = ["flow%d" % i for i in range(a.flows)]
    with open(a.out, "w") as f:
        f.write("t," + ",".join("%s_mbps" % n for n in names) +
                ",total_mbps,marked_fraction,backlog_bytes,drops\n")
        prev = None
        t0 = time.monotonic()
        next_t = t0
        while not os.path.exists(a.stop):
            now = time.monotonic()
            rx = nft_counters(a.receiver, "ccrx")
            backlog, drops = qdisc_stats(a.router, a.dev)
            cur = (now, [rx.get(n, 0) for n in names], rx.get("total", 0), rx.get("marked", 0))
            if prev:
                dt = cur[0] - prev[0]
                rates = [(b - pb) * 8 / dt / 1e6 for b, pb in zip(cur[1], prev[1])]
                fwd_bytes = cur[2] - prev[2]
                marked = cur[3] - prev[3]
                frac = marked / fwd_bytes if fwd_bytes > 0 else 0.0
                f.write("%.3f,%s,%.1f,%.4f,%d,%d\n" % (now - t0, ",".join("%.1f" % r for r in rates),
                                                       sum(rates), frac, backlog, drops))
                f.flush()
            prev = cur
            next_t += a.period
            time.sleep(max(0.0, next_t - time.monotonic()))


if __name__ == "__main__":
    main()
