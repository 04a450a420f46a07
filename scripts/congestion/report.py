#!/usr/bin/env python3
"""report.py — summary, plots and checks for scripts/congestion.sh.

Reads OUT/<n>flows-<mode>.csv (congestion/sample.py) and the logs of the
ib_write_bw processes (softrnic's counters, printed at exit because
congestion.sh sets SOFTRNIC_STATS_AT_EXIT=1), and writes:
  OUT/summary.md        one row per run
  OUT/<n>flows.png      per-flow throughput over time, one mode (DCQCN on
                        or off, DCTCP, TIMELY) above the other, with the marked fraction and the
                        bottleneck's backlog (needs python3-matplotlib)
With --check it exits non-zero unless every DCQCN and DCTCP run shows
CNPs > 0, rate cuts and Jain's index >= 0.9 over its measured tail
(every TIMELY run: rate cuts and a third of the link used, or half of
what DCTCP used in the same run when that was less; its fairness
is reported, not held: TIMELY has no unique fair fixed point), and no
qdisc drops.
"""
import argparse
import csv
import glob
import os
import re
import sys


def load(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return [{k: float(v) for k, v in r.items()} for r in rows]


def counters(out, tag, role):
    """Sum softrnic's exit counters over the processes of one role."""
    total = {}
    for path in glob.glob(os.path.join(out, "%s.%s*.log" % (tag, role))):
        with open(path, errors="replace") as f:
            for line in f:
                if "counters:" not in line:
                    continue
                for name, value in re.findall(r"(\w+)=(\d+)", line):
                    total[name] = total.get(name, 0) + int(value)
    return total


def jain(xs):
    s = sum(xs)
    q = sum(x * x for x in xs)
    return s * s / (len(xs) * q) if q > 0 else 0.0


def label(mode):
    """A run's mode for a plot: DCQCN on or off, DCTCP, TIMELY."""
    return {"dcqcn": "DCQCN on", "off": "DCQCN off"}.get(mode, mode.upper())


def analyse(out, n, mode, stagger, rate):
    tag = "%dflows-%s" % (n, mode)
    path = os.path.join(out, tag + ".csv")
    if not os.path.exists(path):
        return None
    rows = load(path)
    flows = ["flow%d_mbps" % i for i in range(n)]
    # The sampler starts about a second before the first client.
    active = [r for r in rows if r["total_mbps"] > 1]
    if not active:
        return {"tag": tag, "n": n, "mode": mode, "rows": rows, "empty": True}
    t_first = active[0]["t"]
    t_last_start = t_first + (n - 1) * stagger
    t_end = active[-1]["t"]
    # The measured tail: from 2 s after the last flow started to 0.5 s
    # before the end (the clients stop together, give or take).
    tail = [r for r in rows if t_last_start + 2 <= r["t"] <= t_end - 0.5]
    if not tail:
        tail = [r for r in rows if r["t"] >= t_last_start]
    means = [sum(r[f] for r in tail) / len(tail) for f in flows]
    # Convergence: the first time after the last start from which every
    # 1 s window (ten bins) has Jain >= 0.95.
    conv = None
    after = [r for r in rows if t_last_start <= r["t"] <= t_end - 0.5]
    win = 10
    for i in range(len(after) - win + 1):
        ok = True
        for j in range(i, len(after) - win + 1):
            seg = after[j:j + win]
            if jain([sum(r[f] for r in seg) for f in flows]) < 0.95:
                ok = False
                break
        if ok:
            conv = after[i]["t"] - t_last_start
            break
    client = counters(out, tag, "client")
    server = counters(out, tag, "server")
    return {
        "tag": tag, "n": n, "mode": mode, "rows": rows, "empty": False,
        "means": means,
        "jain": jain(means) if n > 1 else 1.0,
        "utilisation": sum(means) / rate,
        "marked": sum(r["marked_fraction"] for r in tail) / len(tail),
        "max_backlog": max(r["backlog_bytes"] for r in rows),
        "mean_backlog": sum(r["backlog_bytes"] for r in tail) / len(tail),
        "drops": int(rows[-1]["drops"]),
        "cnp_sent": server.get("cnp_sent", 0),
        "cnp_received": client.get("cnp_received", 0),
        "rate_decreases": client.get("rate_decreases", 0),
        "retransmits": client.get("retransmits", 0),
        "naks": client.get("rx_nak_psn_seq", 0),
        "ce": server.get("ecn_marked", 0),
        "converged_s": conv,
        "t_first": t_first, "stagger": stagger,
    }


def plot(out, n, runs, rate):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: python3-matplotlib missing; no plots", file=sys.stderr)
        return
    fig, axes = plt.subplots(len(runs) + 1, 1, figsize=(10, 3.2 * (len(runs) + 1)), sharex=True)
    for ax, r in zip(axes, runs):
        t = [row["t"] - r["t_first"] for row in r["rows"]]
        for i in range(n):
            ax.plot(t, [row["flow%d_mbps" % i] for row in r["rows"]], label="flow %d" % i, lw=1)
        ax.axhline(rate, color="grey", ls=":", lw=1)
        ax.set_ylabel("Mb/s at receiver (100 ms)")
        ax.set_ylim(0, rate * 1.3)
        ax.set_title("%d flow(s), %s: Jain %.3f, marked %.0f%%, drops %d, retransmits %d" %
                     (n, label(r["mode"]), r["jain"], 100 * r["marked"], r["drops"], r["retransmits"]), fontsize=9)
        ax.legend(loc="upper right", fontsize=7)
    ax = axes[-1]
    ax2 = ax.twinx()
    for r, style in zip(runs, ("-", "--")):
        t = [row["t"] - r["t_first"] for row in r["rows"]]
        ax.plot(t, [row["backlog_bytes"] / 1024 for row in r["rows"]], style, lw=1, label="backlog, " + label(r["mode"]))
        ax2.plot(t, [row["marked_fraction"] for row in r["rows"]], style, lw=0.8, color="tab:red",
                 label="marked, " + label(r["mode"]))
    ax.set_ylabel("bottleneck backlog (KiB)")
    ax2.set_ylabel("marked fraction")
    ax2.set_ylim(0, 1.05)
    ax.set_xlabel("seconds since the first flow started")
    ax.legend(loc="upper left", fontsize=7)
    ax2.legend(loc="upper right", fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "%dflows.png" % n), dpi=90)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--flows", default="1 2 4")
    ap.add_argument("--modes", default="dcqcn off")
    ap.add_argument("--stagger", type=float, default=2)
    ap.add_argument("--rate", type=float, default=1000, help="bottleneck, Mb/s")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()

    lines = ["| flows | mode | per-flow Mb/s at the receiver (tail) | Jain | link use | Jain ≥ 0.95 after | marked | "
             "backlog mean / max (KiB) | qdisc drops | CNPs sent / received | rate cuts | retransmits |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    failures = []
    for n in [int(x) for x in a.flows.split()]:
        runs = []
        for mode in a.modes.split():
            r = analyse(a.out, n, mode, a.stagger, a.rate)
            if r is None:
                continue
            if r["empty"]:
                failures.append("%s: no traffic measured" % r["tag"])
                continue
            runs.append(r)
            conv = "%.1f s" % r["converged_s"] if r["converged_s"] is not None else "never"
            if n == 1:
                conv = "-"
            lines.append("| %d | %s | %s | %.3f | %.2f | %s | %.1f%% | %.0f / %.0f | %d | %d / %d | %d | %d |" % (
                n, r["mode"], " ".join("%.0f" % m for m in r["means"]), r["jain"], r["utilisation"], conv,
                100 * r["marked"], r["mean_backlog"] / 1024, r["max_backlog"] / 1024, r["drops"],
                r["cnp_sent"], r["cnp_received"], r["rate_decreases"], r["retransmits"]))
            if a.check and mode in ("dcqcn", "dctcp", "timely"):
                if mode != "timely" and r["cnp_sent"] <= 0:
                    failures.append("%s: no CNPs" % r["tag"])
                # The reaction point acted on the feedback (with
                # SOFTRNIC_DCQCN=0 the same CNPs come and nothing is cut).
                if r["rate_decreases"] <= 0:
                    failures.append("%s: no rate cut" % r["tag"])
                if r["drops"] != 0:
                    failures.append("%s: %d qdisc drops" % (r["tag"], r["drops"]))
                # TIMELY promises no fair share: its rate has no unique
                # fixed point (Zhu et al., "ECN or Delay", CoNEXT 2016), and
                # here 1 run in 3 ended at Jain 0.86.  Reported, not held.
                if n > 1 and mode != "timely" and r["jain"] < 0.9:
                    failures.append("%s: Jain %.3f < 0.9" % (r["tag"], r["jain"]))
        # TIMELY reads its RTT in software: a busy host's scheduling
        # delays look like queueing to it, and it cuts.  So its floor is a
        # third of the link, or half of what DCTCP (ECN, blind to host
        # delay) moved in the same run when the host held DCTCP down too;
        # checked once every mode ran, whatever their order.  Measured
        # with both CPUs taken by other work: DCTCP 0.25, TIMELY 0.16;
        # with one: TIMELY 0.49-0.62; idle: 0.69-0.80.
        dctcp = next((x for x in runs if x["mode"] == "dctcp"), None)
        for r in runs:
            if a.check and r["mode"] == "timely":
                floor = 0.33
                if dctcp is not None and 0.5 * dctcp["utilisation"] < floor:
                    floor = 0.5 * dctcp["utilisation"]
                if r["utilisation"] < floor:
                    failures.append("%s: link use %.2f < %.2f" % (r["tag"], r["utilisation"], floor))
        if runs:
            plot(a.out, n, runs, a.rate)
    summary = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write(summary)
    print(summary)
    for msg in failures:
        print("congestion: FAIL " + msg, file=sys.stderr)
    if failures:
        sys.exit(1)
    if a.check:
        print("congestion: checks passed")


if __name__ == "__main__":
    main()
