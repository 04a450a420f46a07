#!/usr/bin/env python3
"""kv_report.py — the tables and plots of bench/kv_vs_redis.sh.

usage: kv_report.py KV_BENCH_CSV OUT_DIR  ->  OUT_DIR/kv_bench.md, kv_bench.png

Ratios are softrnic over Redis from the same run: latency below 1 and
throughput above 1 favour softrnic.
"""
import csv
import sys


def load(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def pick(rows, **want):
    for r in rows:
        if all(r[k] == str(v) for k, v in want.items()):
            return r
    return None


def num(r, k):
    return float(r[k]) if r and r.get(k) not in (None, "") else None


def fmt(x, spec="{:.1f}"):
    return "n/a" if x is None else spec.format(x)


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def main():
    rows = load(sys.argv[1])
    out = sys.argv[2]
    kv_rows = [r for r in rows if r["system"] != "udp"]
    values = sorted({int(r["value"]) for r in kv_rows})
    clients = sorted({int(r["clients"]) for r in kv_rows})
    md = ["# softrnic-kv and Redis, side by side", "",
          "From `bench/kv_vs_redis.sh` (one run; latencies in microseconds, "
          "throughput in requests/s; ratio = softrnic / Redis). softrnic's server "
          "busy-polls (`--busy-poll`) in the first two tables.", ""]
    floor = pick(rows, system="udp", path="pingpong")
    if floor:
        md += ["For scale: a UDP ping-pong of 100-byte messages between two processes that "
               "busy-poll their sockets (`bench/udp_pingpong`) has a round trip of p50 %s us, p99 %s us "
               "on this machine in the same run; every RoCEv2 request over UDP pays at least that. "
               "The server and the clients here share one host, so softrnic carries their packets "
               "on its host-local path (shared-memory rings, docs/performance.md) unless "
               "SOFTRNIC_LOCAL=0." % (fmt(num(floor, "p50_us")), fmt(num(floor, "p99_us"))), ""]
    for op in ("get", "set"):
        md += ["## %s" % op.upper(), "",
               "| value | clients | Redis p50 | softrnic p50 | ratio | Redis p99 | softrnic p99 | "
               "Redis req/s | softrnic req/s | ratio |" + (" one-sided p50 | one-sided req/s |" if op == "get" else ""),
               "|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if op == "get" else "")]
        for v in values:
            for c in clients:
                r = pick(rows, system="redis", path=op, clients=c, value=v)
                s = pick(rows, system="softrnic", path=op, transport="write", server="busy-poll", clients=c, value=v)
                line = "| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    v, c, fmt(num(r, "p50_us")), fmt(num(s, "p50_us")),
                    fmt(ratio(num(s, "p50_us"), num(r, "p50_us")), "{:.2f}"),
                    fmt(num(r, "p99_us")), fmt(num(s, "p99_us")),
                    fmt(num(r, "rps"), "{:.0f}"), fmt(num(s, "rps"), "{:.0f}"),
                    fmt(ratio(num(s, "rps"), num(r, "rps")), "{:.2f}"))
                if op == "get":
                    o = pick(rows, system="softrnic", path="get-one-sided", server="busy-poll", clients=c, value=v)
                    line += " %s | %s |" % (fmt(num(o, "p50_us")), fmt(num(o, "rps"), "{:.0f}"))
                md.append(line)
        md.append("")
    md += ["## Server CPU per operation, sleeping servers", "",
           "Redis: INFO cpu (user + system, the whole process). softrnic without `--busy-poll`: "
           "the serving thread, and the whole process, which under softrnic includes the NIC's "
           "progress thread (on a hardware RNIC that work is in the NIC).", "",
           "| value | clients | op | Redis CPU/op | softrnic thread CPU/op | softrnic process CPU/op | "
           "softrnic p50 | softrnic req/s |", "|---|---|---|---|---|---|---|---|"]
    for v in values:
        for c in clients:
            for op in ("get", "get-one-sided", "set"):
                r = pick(rows, system="redis", path=op.split("-")[0] if op != "get-one-sided" else "get",
                         clients=c, value=v)
                s = pick(rows, system="softrnic", path=op, transport="write", server="sleeping", clients=c, value=v)
                md.append("| %d | %d | %s | %s | %s | %s | %s | %s |" % (
                    v, c, op, fmt(num(r, "cpu_process_us"), "{:.2f}"), fmt(num(s, "cpu_thread_us"), "{:.2f}"),
                    fmt(num(s, "cpu_process_us"), "{:.2f}"), fmt(num(s, "p50_us")), fmt(num(s, "rps"), "{:.0f}")))
    md += ["", "## The two transports, one client", "",
           "| value | server | op | SEND p50 | WRITE-imm p50 | SEND req/s | WRITE-imm req/s |",
           "|---|---|---|---|---|---|---|"]
    for v in values:
        for srv in ("busy-poll", "sleeping"):
            for op in ("get", "set"):
                a = pick(rows, system="softrnic", path=op, transport="send", server=srv, clients=1, value=v)
                b = pick(rows, system="softrnic", path=op, transport="write", server=srv, clients=1, value=v)
                md.append("| %d | %s | %s | %s | %s | %s | %s |" % (
                    v, srv, op, fmt(num(a, "p50_us")), fmt(num(b, "p50_us")),
                    fmt(num(a, "rps"), "{:.0f}"), fmt(num(b, "rps"), "{:.0f}")))
    with open(out + "/kv_bench.md", "w") as f:
        f.write("\n".join(md) + "\n")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(2, len(values), figsize=(4.2 * len(values), 7), squeeze=False)
    series = [("Redis", dict(system="redis", path="get")),
              ("softrnic two-sided", dict(system="softrnic", path="get", transport="write", server="busy-poll")),
              ("softrnic one-sided", dict(system="softrnic", path="get-one-sided", server="busy-poll"))]
    for i, v in enumerate(values):
        for label, want in series:
            pts = [(c, pick(rows, clients=c, value=v, **want)) for c in clients]
            pts = [(c, r) for c, r in pts if r]
            axes[0][i].plot([c for c, _ in pts], [num(r, "p50_us") for _, r in pts], marker="o", label=label)
            axes[1][i].plot([c for c, _ in pts], [num(r, "rps") / 1000 for _, r in pts], marker="o", label=label)
        axes[0][i].set_title("GET, %d B values" % v)
        axes[0][i].set_ylabel("p50 latency (us)")
        axes[1][i].set_ylabel("thousand requests/s")
        for a in (axes[0][i], axes[1][i]):
            a.set_xscale("log", base=2)
            a.set_xticks(clients)
            a.set_xticklabels([str(c) for c in clients])
            a.set_xlabel("clients")
            a.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out + "/kv_bench.png", dpi=90)


if __name__ == "__main__":
    main()
