#!/usr/bin/python3
"""sim_plot.py — plots of `softrnic sim exp` outputs.

usage: sim_plot.py dcqcn-fairness DIR OUT.png   (DIR: that experiment's --out)
       sim_plot.py gbn-loss DIR OUT.png
       sim_plot.py run DIR OUT.png        (softrnic sim run --sample-us N --out DIR)
       sim_plot.py hpcc-workload DIR OUT.png   (FCT slowdown by size, as HPCC's Figure 11)
       sim_plot.py cc-compare DIR OUT.png      (the four congestion controls, as HPCC's Figure 11)
"""
import csv
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def fairness(d, out):
    data = rows(d + "/dcqcn-fairness.csv")
    runs = ["8-mlx5", "8-paper", "8-off"]
    fig, axes = plt.subplots(2, len(runs), figsize=(4 * len(runs), 6), sharex="col")
    for i, run in enumerate(runs):
        rs = [r for r in data if r["run"] == run]
        if not rs:
            continue
        t = [float(r["t_us"]) / 1000 for r in rs]
        n = int(run.split("-")[0])
        for k in range(n):
            axes[0][i].plot(t, [float(r["flow%d_gbps" % k] or 0) for r in rs], lw=0.7, label="flow %d" % k)
        axes[1][i].plot(t, [float(r["queue_bytes"]) / 1000 for r in rs], color="black", lw=0.7)
        axes[0][i].set_title("%d flows, DCQCN %s" % (n, run.split("-")[1]))
        axes[0][i].set_ylabel("Gb/s (wire)")
        axes[1][i].set_ylabel("bottleneck queue (KB)")
        axes[1][i].set_xlabel("time (ms)")
        for a in axes[:, i]:
            a.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=80)


def gbn(d, out):
    data = rows(d + "/gbn-loss.csv")
    modes = ["go-back-n", "selective"]
    loss = [r["loss"] for r in data if r["recovery"] == modes[0]]
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    width = 0.4
    for i, mode in enumerate(modes):
        g = {r["loss"]: float(r["goodput_gbps"]) for r in data if r["recovery"] == mode}
        ax.bar([k + (i - 0.5) * width for k in range(len(loss))], [g.get(x, 0) for x in loss], width,
               label="Go-Back-N" if mode == "go-back-n" else "selective repeat")
    ax.set_xticks(range(len(loss)))
    ax.set_xticklabels([("%g%%" % (float(x) * 100)) for x in loss])
    ax.set_xlabel("random loss per link")
    ax.set_ylabel("goodput (Gb/s)")
    ax.legend(fontsize=8, loc="lower left")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=80)


def run(d, out):
    """sim run's time series: the throughput of the flows that moved most
    bytes, and the longest queues."""
    tput = rows(d + "/throughput.csv")
    queues = rows(d + "/queues.csv")
    fig, axes = plt.subplots(2, 1, figsize=(7, 5.5), sharex=True)
    total = {}
    for r in tput:
        total[r["flow"]] = total.get(r["flow"], 0) + float(r["gbps"])
    for flow in sorted(total, key=total.get, reverse=True)[:8]:
        rs = [r for r in tput if r["flow"] == flow]
        axes[0].plot([float(r["t_us"]) / 1000 for r in rs], [float(r["gbps"]) for r in rs], lw=1,
                     label="flow %s" % flow)
    axes[0].set_ylabel("throughput (Gb/s)")
    axes[0].legend(fontsize=7, ncol=4)
    peak = {}
    for r in queues:
        key = (r["node"], r["port"])
        peak[key] = max(peak.get(key, 0), int(r["queue_bytes"]))
    for key in sorted(peak, key=peak.get, reverse=True)[:6]:
        rs = [r for r in queues if (r["node"], r["port"]) == key]
        axes[1].plot([float(r["t_us"]) / 1000 for r in rs], [int(r["queue_bytes"]) / 1000 for r in rs], lw=1,
                     label="node %s port %s" % key)
    axes[1].set_ylabel("queue (KB)")
    axes[1].set_xlabel("time (ms)")
    axes[1].legend(fontsize=7, ncol=3)
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=80)


def hpcc(d, out):
    """fct_analysis.csv: p50/p95/p99 slowdown of each 5% of the flows by
    size, against the bucket's largest size, as the HPCC paper plots it."""
    data = rows(d + "/fct_analysis.csv")
    x = range(len(data))
    fig, ax = plt.subplots(figsize=(7, 3.4))
    for key, style in (("p50", "-o"), ("p95", "-s"), ("p99", "-^")):
        ax.plot(x, [float(r[key]) for r in data], style, ms=3, lw=1, label=key + " slowdown")
    ax.set_xticks(list(x))
    ax.set_xticklabels([human(int(r["size"])) for r in data], rotation=60, fontsize=7)
    ax.set_xlabel("flow size (largest of each 5% of the flows)")
    ax.set_ylabel("FCT slowdown")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=80)


def cc_compare(d, out):
    """cc-compare.csv: per load (a row of panels) the p50, p95 and p99 FCT
    slowdown of each 5% of the flows by size under each congestion control,
    as the HPCC paper's Figure 11 draws them; runs.csv: the switch queues'
    p99 and maximum."""
    data = rows(d + "/cc-compare.csv")
    runs = rows(d + "/runs.csv")
    loads = sorted({r["load"] for r in data}, key=int)
    ccs = []
    for r in data:
        if r["cc"] not in ccs:
            ccs.append(r["cc"])
    fig, axes = plt.subplots(len(loads), 4, figsize=(16, 3.4 * len(loads)), squeeze=False)
    for i, load in enumerate(loads):
        for j, key in enumerate(("p50", "p95", "p99")):
            ax = axes[i][j]
            for cc in ccs:
                rs = [r for r in data if r["load"] == load and r["cc"] == cc]
                ax.plot(range(len(rs)), [float(r[key]) for r in rs], "-o", ms=2.5, lw=1, label=cc)
            rs = [r for r in data if r["load"] == load and r["cc"] == ccs[0]]
            ax.set_xticks(list(range(len(rs)))[::2])
            ax.set_xticklabels([human(int(r["size"])) for r in rs][::2], rotation=60, fontsize=7)
            ax.set_yscale("log")
            ax.set_title("%s%% load: %s FCT slowdown" % (load, key), fontsize=9)
            ax.grid(alpha=0.3)
            if j == 0:
                ax.legend(fontsize=7)
        ax = axes[i][3]
        rs = [r for r in runs if r["load"] == load]
        x = range(len(rs))
        ax.bar([k - 0.2 for k in x], [int(r["queue_p99"]) / 1024 for r in rs], 0.4, label="p99")
        ax.bar([k + 0.2 for k in x], [int(r["queue_max"]) / 1024 for r in rs], 0.4, label="max")
        ax.set_xticks(list(x))
        ax.set_xticklabels([r["cc"] for r in rs], fontsize=8)
        ax.set_ylabel("switch queue (KiB)")
        ax.set_title("%s%% load: queues holding packets" % load, fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=80)


def human(b):
    for unit, k in (("M", 1000000), ("K", 1000)):
        if b >= k:
            return "%.3g%s" % (b / k, unit)
    return str(b)


if __name__ == "__main__":
    {"dcqcn-fairness": fairness, "gbn-loss": gbn, "run": run, "hpcc-workload": hpcc,
     "cc-compare": cc_compare}[sys.argv[1]](
        sys.argv[2], sys.argv[3])
