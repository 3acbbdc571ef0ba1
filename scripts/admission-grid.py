#!/usr/bin/env python3
"""Admission measurements with `lm-warden simulate` on the fitted reference host (docs/routing.md).

  scripts/admission-grid.py grid [--binary B] [-- simulate options for policy admission]
      seeds 1-4, with and without think jitter, policies vllm-lb, affinity, admission, levels
      4-32: prints each policy's tokens/min, TTFB p50 and p95 as ratios to vllm-lb, median over seeds.
  scripts/admission-grid.py frontier --svg FILE [--knob max-wait] [--values 0,10s,...] [-- options]
      the same ratios at 16, 24 and 32 sessions over one admission knob, as an SVG (plain text, no
      plotting library), with the default marked.

Runs one simulate at a time (nice -n 5). Standard library only.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HOST = ["--preset", "a4000-qwen3-4b", "--replicas", "4", "--num-gpu-blocks", "2100",
        "--client-rtt", "0.2s", "--think-time", "2s"]
# The admission setting measured in docs/routing.md (options given after `--` come later and win).
MEASURED = ["--admission-high", "1.2", "--admission-low", "1.1", "--admission-when-waiting", "on"]
SEEDS = [1, 2, 3, 4]
JITTERS = ["0", "2s"]
COLUMNS = [("output_tokens_per_min", "tok/min", 1.15, ">="), ("ttfb_p50", "p50", 0.5, "<="),
           ("ttfb_p95", "p95", 1.0, "<=")]


def measured(extra):
    """MEASURED without the options `extra` gives again (each option once on the command line)."""
    out = []
    for flag, value in zip(MEASURED[::2], MEASURED[1::2]):
        if flag not in extra:
            out += [flag, value]
    return out


def simulate(binary, policies, levels, seed, jitter, extra):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.json")
        cmd = ["nice", "-n", "5", binary, "simulate", *HOST, "--think-jitter", jitter, "--seed", str(seed),
               "--policies", ",".join(policies), "--levels", ",".join(map(str, levels)), "--out", out,
               *measured(extra), *extra]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)["rows"]


def by_key(rows):
    return {(r["policy"], r["sessions"]): r for r in rows}


def ratio(rows, policy, level, column):
    value = rows[(policy, level)][column]
    base = rows[("vllm-lb", level)][column]
    return value / base if base else float("nan")


def median_ratios(runs, policy, level):
    return [statistics.median(ratio(r, policy, level, c) for r in runs) for c, _, _, _ in COLUMNS]


def meets(values):
    return all(v >= goal if op == ">=" else v <= goal for v, (_, _, goal, op) in zip(values, COLUMNS))


def grid(args, extra):
    levels = [4, 8, 16, 24, 32]
    policies = ["vllm-lb", "affinity", "admission"]
    for jitter in JITTERS:
        runs = [by_key(simulate(args.binary, policies, levels, s, jitter, extra)) for s in SEEDS]
        print(f"\nthink jitter {jitter}: ratios to vllm-lb, median of seeds {SEEDS} "
              f"(goal at 16-32: tok/min >= 1.15, p50 <= 0.5, p95 <= 1.0)\n")
        print("| sessions | affinity tok/min, p50, p95 | admission tok/min, p50, p95 | admission meets goal |")
        print("|---|---|---|---|")
        for level in levels:
            a = median_ratios(runs, "affinity", level)
            b = median_ratios(runs, "admission", level)
            goal = ("yes" if meets(b) else "no") if level >= 16 else "-"
            print(f"| {level} | {a[0]:.2f}, {a[1]:.2f}, {a[2]:.2f} | {b[0]:.2f}, {b[1]:.2f}, {b[2]:.2f} | {goal} |")


def frontier(args, extra):
    levels = [16, 24, 32]
    values = args.values.split(",")
    base = {j: [by_key(simulate(args.binary, ["vllm-lb"], levels, s, j, [])) for s in SEEDS] for j in JITTERS}
    points = []  # (value, level, ratios)
    for value in values:
        for level in levels:
            runs = []
            for jitter in JITTERS:
                for s, b in zip(SEEDS, base[jitter]):
                    rows = simulate(args.binary, ["admission"], [level], s, jitter,
                                    [f"--{args.knob}", value, *extra])
                    merged = dict(b)
                    merged.update(by_key(rows))
                    runs.append(merged)
            points.append((value, level, median_ratios(runs, "admission", level)))
            print(value, level, " ".join(f"{v:.2f}" for v in points[-1][2]), file=sys.stderr)
    with open(args.svg, "w") as f:
        f.write(svg(points, values, levels, args.knob, args.default))


def svg(points, values, levels, knob, default):
    width, height, pad = 300, 220, 45
    colors = {16: "#1f77b4", 24: "#ff7f0e", 32: "#2ca02c"}
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{3 * width}" height="{height + 40}" '
             f'font-family="sans-serif" font-size="11">']
    for panel, (_, label, goal, op) in enumerate(COLUMNS):
        x0 = panel * width
        ys = [p[2][panel] for p in points] + [goal]
        lo, hi = min(ys) * 0.9, max(ys) * 1.1
        sx = lambda i: x0 + pad + i * (width - 2 * pad) / max(1, len(values) - 1)
        sy = lambda v: height - pad + 10 - (v - lo) / (hi - lo) * (height - 2 * pad)
        parts.append(f'<text x="{x0 + width / 2}" y="14" text-anchor="middle" font-weight="bold">'
                     f'{label} / vllm-lb (goal {"≥" if op == ">=" else "≤"} {goal})</text>')
        parts.append(f'<line x1="{sx(0)}" y1="{sy(goal)}" x2="{sx(len(values) - 1)}" y2="{sy(goal)}" '
                     f'stroke="#d62728" stroke-dasharray="4 3"/>')
        parts.append(f'<line x1="{sx(0)}" y1="{sy(1.0)}" x2="{sx(len(values) - 1)}" y2="{sy(1.0)}" '
                     f'stroke="#999" stroke-width="0.5"/>')
        for i, v in enumerate(values):
            mark = " (default)" if v == default else ""
            weight = ' font-weight="bold"' if mark else ""
            parts.append(f'<text x="{sx(i)}" y="{height - pad + 28}" text-anchor="middle"{weight}>{v}{mark}</text>')
            if mark:
                parts.append(f'<line x1="{sx(i)}" y1="{sy(hi)}" x2="{sx(i)}" y2="{sy(lo)}" stroke="#000" '
                             f'stroke-width="0.5" stroke-dasharray="2 2"/>')
        for tick in (lo, (lo + hi) / 2, hi):
            parts.append(f'<text x="{x0 + pad - 4}" y="{sy(tick) + 4}" text-anchor="end">{tick:.2f}</text>')
        for level in levels:
            pts = [(sx(values.index(v)), sy(r[panel])) for v, lv, r in points if lv == level]
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colors[level]}" stroke-width="1.5"/>')
            for x, y in pts:
                parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{colors[level]}"/>')
        parts.append(f'<text x="{x0 + width / 2}" y="{height + 30}" text-anchor="middle">--{knob}</text>')
    for i, level in enumerate(levels):
        parts.append(f'<text x="{3 * width - 90}" y="{30 + 14 * i}" fill="{colors[level]}">'
                     f'{level} sessions</text>')
    parts.append("</svg>\n")
    return "\n".join(parts)


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["grid", "frontier"])
    p.add_argument("--binary", default="build/lm-warden")
    p.add_argument("--svg", default="docs/admission-frontier.svg")
    p.add_argument("--knob", default="max-wait")
    p.add_argument("--values", default="0,10s,20s,30s,60s,120s")
    p.add_argument("--default", default="0")
    args = p.parse_args(argv)
    (grid if args.mode == "grid" else frontier)(args, extra)


if __name__ == "__main__":
    main()
