#!/usr/bin/env python3
"""plot_results.py — the goal ratios of docs/performance.md over the
recorded runs, as one SVG.

    python3 bench/plot_results.py [RESULTS_DIR] [OUT_SVG]
    (default: bench/results docs/img/goal_ratios.svg)

Reads every *.json run file in RESULTS_DIR (schema: bench/results/README.md),
checks that each has the fields the schema asks for, and draws one panel
per goal: the ratio each run printed, in the order the runs were made,
with the goal as a dashed line.  Python's standard library only (no
matplotlib), and the output depends on the data alone, so the committed
SVG is exactly what the script writes from the committed data.

Exit status: 0 when the SVG was written; 1 (with one line naming the
file and the field) when a run file does not follow the schema.
"""
import json
import os
import sys
from xml.sax.saxutils import escape

# One panel per goal: title, goal operator and value, and the series drawn
# in it — (script the run came from, figure name in the run file, label).
# A tuple of names means the first the run has (reports before the goals
# block of perf_compare.sh print the bandwidth ratio under the second).
PANELS = [
    ("host-local: ib_send_lat RTT / UCX posix tag_lat RTT", "<=", 3.0, [
        ("local_compare", "host-local ib_send_lat RTT / UCX posix tag_lat RTT", "ib_send_lat / UCX")]),
    ("host-local: ib_read_lat RTT / ib_write_lat RTT", "<=", 1.1, [
        ("local_compare", "host-local ib_read_lat RTT / ib_write_lat RTT", "read / write")]),
    ("host-local: ib_write_bw 64 KiB / UCX posix tag_bw (best round)", ">=", 1.0, [
        ("local_compare", "host-local ib_write_bw 64 KiB / UCX posix tag_bw best", "write_bw / UCX")]),
    ("host-local: CPU per GiB / iperf3 TCP", "<=", 1.0, [
        ("local_compare", "host-local CPU per GiB moved, busy-polling / iperf3 TCP", "moved, busy-polling"),
        ("local_compare", "host-local CPU per GiB moved, event mode / iperf3 TCP", "moved, event mode"),
        ("local_compare", "host-local CPU per GiB of a whole run, busy-polling / iperf3 TCP", "whole run, busy-polling"),
        ("local_compare", "host-local CPU per GiB of a whole run, event mode / iperf3 TCP", "whole run, event mode")]),
    ("UDP: ib_send_lat RTT / busy-polling UDP ping-pong RTT", "<=", 1.3, [
        ("perf_compare", "ib_send_lat RTT / UDP busy-poll RTT", "ib_send_lat / ping-pong"),
        ("perf_compare", "of which RoCEv2-shaped / plain ping-pong", "the kernel alone (udp_pingpong -R / plain)")]),
    ("UDP: ib_write_bw 64 KiB / iperf3 TCP", ">=", 1.5, [
        ("perf_compare", ("ib_write_bw 64 KiB / iperf3 TCP", "ib_write_bw / iperf3"), "write_bw / iperf3")]),
    ("UDP: CPU per GiB / iperf3 TCP", "<=", 1.0, [
        ("perf_compare", "CPU/GiB ib_write_bw / iperf3", "ib_write_bw, busy-polling"),
        ("perf_compare", "CPU/GiB ib_send_bw -e / iperf3", "ib_send_bw -e, event mode")]),
]

RUN_FIELDS = ("date", "time", "commit", "machine", "command", "figures")
FIGURE_FIELDS = ("figure", "value", "unit", "baseline", "baseline_value", "ratio", "goal")
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd")
MARKERS = ("circle", "square", "diamond", "triangle")


def fail(msg):
    print("plot_results: " + msg, file=sys.stderr)
    sys.exit(1)


def load(results_dir):
    """Every run file, checked against the schema, as (file name, run)."""
    runs = []
    for name in sorted(os.listdir(results_dir)):
        if not name.endswith(".json"):
            continue
        path = os.path.join(results_dir, name)
        try:
            with open(path, encoding="utf-8") as f:
                run = json.load(f)
        except (OSError, ValueError) as e:
            fail("%s: not a readable JSON file (%s)" % (path, e))
        for k in RUN_FIELDS:
            if k not in run:
                fail("%s: no field '%s'" % (path, k))
        if not isinstance(run["figures"], list) or not run["figures"]:
            fail("%s: 'figures' must be a non-empty list" % path)
        for i, fig in enumerate(run["figures"]):
            for k in FIGURE_FIELDS:
                if k not in fig:
                    fail("%s: figure %d has no field '%s'" % (path, i, k))
            for k in ("value", "baseline_value", "ratio"):
                if fig[k] is not None and not isinstance(fig[k], (int, float)):
                    fail("%s: figure %d: '%s' is %r, not a number or null" % (path, i, k, fig[k]))
        runs.append((name, run))
    if not runs:
        fail("%s: no *.json run files" % results_dir)
    return runs


def order_key(name, run):
    """When a run was made: its 'order' if given, else its date and time."""
    if run.get("order"):
        return run["order"]
    return "%sT%sZ" % (run["date"] or "9999-99-99", run["time"] or "99:99")


def script_of(name):
    for s in ("local_compare", "perf_compare"):
        if s in name:
            return s
    return None


def label_of(run):
    day = (run["date"] or "?")[5:]
    when = "%s %s" % (day, run["time"]) if run["time"] else day
    commit = run["commit"] if run["commit"] and run["commit"] != "unknown" else ""
    return when, commit


def nice_axis(top):
    """A tick step of 1, 2, 2.5 or 5 times a power of ten giving 4 to 7
    ticks, and the axis maximum: the first tick at or above top."""
    for exp in range(-3, 6):
        for m in (1, 2, 2.5, 5):
            step = m * 10 ** exp
            ticks = -(-top // step)
            if ticks <= 6:
                return step, step * ticks
    return top / 5, top


def svg(runs):
    # The x axis: every run that has a point in some panel, in the order made.
    points = []  # (panel, series, run index, ratio)
    used = []
    for name, run in sorted(runs, key=lambda r: order_key(*r)):
        script = script_of(name) or script_of(run.get("command", ""))
        hits = []
        for p, (_, _, _, series) in enumerate(PANELS):
            for s, (sscript, figure, _) in enumerate(series):
                if sscript != script:
                    continue
                names = figure if isinstance(figure, tuple) else (figure,)
                for name_ in names:
                    found = [f for f in run["figures"] if f["figure"] == name_
                             and f["ratio"] is not None and f.get("comparable", True)]
                    if found:
                        hits.append((p, s, found[0]["ratio"]))
                        break
        if hits:
            for p, s, ratio in hits:
                points.append((p, s, len(used), ratio))
            used.append(run)

    n = len(used)
    left, right, top = 120, 290, 40
    pw, ph, gap = max(600, 26 * n), 130, 46
    width = left + pw + right
    height = top + len(PANELS) * (ph + gap) + 180
    out = []
    w = out.append
    w('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
      'font-family="sans-serif" font-size="11">' % (width, height, width, height))
    w('<rect width="100%" height="100%" fill="white"/>')
    w('<text x="%d" y="22" font-size="15" font-weight="bold">softrnic: goal ratios per recorded run '
      '(bench/results/, drawn by bench/plot_results.py)</text>' % left)

    def xpos(i):
        return left + (pw * (i + 0.5) / n)

    for p, (title, op, goal, series) in enumerate(PANELS):
        y0 = top + p * (ph + gap) + 20
        vals = [r for (pp, _, _, r) in points if pp == p]
        step, ymax = nice_axis(max(vals + [goal]) * 1.1)

        def ypos(v):
            return y0 + ph - ph * v / ymax

        w('<text x="%d" y="%d" font-size="12" font-weight="bold">%s (goal %s %g)</text>'
          % (left, y0 - 6, escape(title), escape(op), goal))
        w('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>' % (left, y0, pw, ph))
        for k in range(int(round(ymax / step)) + 1):
            v = step * k
            y = ypos(v)
            w('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>' % (left, y, left + pw, y))
            w('<text x="%d" y="%.1f" text-anchor="end">%g</text>' % (left - 4, y + 4, round(v, 3)))
        for i in range(n):
            w('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#f4f4f4"/>' % (xpos(i), y0, xpos(i), y0 + ph))
        gy = ypos(goal)
        w('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#d62728" stroke-dasharray="6,4"/>'
          % (left, gy, left + pw, gy))
        w('<text x="%d" y="%.1f" fill="#d62728">goal %s %g</text>' % (left + pw + 6, gy + 4, escape(op), goal))
        for s, (_, _, label) in enumerate(series):
            col, mark = COLOURS[s % len(COLOURS)], MARKERS[s % len(MARKERS)]
            pts = sorted((i, r) for (pp, ss, i, r) in points if pp == p and ss == s)
            if len(pts) > 1:
                w('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>'
                  % (col, " ".join("%.1f,%.1f" % (xpos(i), ypos(r)) for i, r in pts)))
            for i, r in pts:
                x, y = xpos(i), ypos(r)
                if mark == "circle":
                    w('<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s: %g</title></circle>'
                      % (x, y, col, escape(label), r))
                elif mark == "square":
                    w('<rect x="%.1f" y="%.1f" width="7" height="7" fill="%s"><title>%s: %g</title></rect>'
                      % (x - 3.5, y - 3.5, col, escape(label), r))
                elif mark == "diamond":
                    w('<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s"><title>%s: %g</title></polygon>'
                      % (x, y - 4.5, x + 4.5, y, x, y + 4.5, x - 4.5, y, col, escape(label), r))
                else:
                    w('<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s"><title>%s: %g</title></polygon>'
                      % (x, y - 4.5, x + 4.5, y + 3.5, x - 4.5, y + 3.5, col, escape(label), r))
            if len(series) > 1:
                # the legend on the side of the panel away from the goal's label
                first = y0 + 12 if gy > y0 + ph / 2 else y0 + ph - 14 * len(series) + 6
                ly = first + 14 * s
                w('<rect x="%d" y="%d" width="9" height="9" fill="%s"/>' % (left + pw + 6, ly - 8, col))
                w('<text x="%d" y="%d">%s</text>' % (left + pw + 19, ly, escape(label)))

    base = top + len(PANELS) * (ph + gap) + 2
    for i, run in enumerate(used):
        when, commit = label_of(run)
        text = when + (" " + commit if commit else "")
        w('<text transform="translate(%.1f,%d) rotate(-60)" text-anchor="end">%s</text>'
          % (xpos(i) + 3, base, escape(text)))
    w('<text x="%d" y="%d" fill="#555">x: runs in the order made (UTC date and time, commit where recorded); '
      'y: the ratio the run printed. Hover a point for its value.</text>' % (left, height - 8))
    w('</svg>')
    return "\n".join(out) + "\n"


def main(argv):
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if len(argv) > 3:
        fail("at most two arguments (RESULTS_DIR OUT_SVG), got %d" % (len(argv) - 1))
    results_dir = argv[1] if len(argv) > 1 else os.path.join(repo, "bench", "results")
    out_svg = argv[2] if len(argv) > 2 else os.path.join(repo, "docs", "img", "goal_ratios.svg")
    if not os.path.isdir(results_dir):
        fail("%s: not a directory" % results_dir)
    text = svg(load(results_dir))
    os.makedirs(os.path.dirname(os.path.abspath(out_svg)), exist_ok=True)
    with open(out_svg, "w", encoding="utf-8") as f:
        f.write(text)
    print("plot_results: wrote %s" % out_svg)


if __name__ == "__main__":
    main(sys.argv)
