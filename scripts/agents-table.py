#!/usr/bin/env python3
"""The agents-past-the-cache table with `lm-warden simulate` (docs/routing.md, "Agents past the cache").

  scripts/agents-table.py [--binary B] [--seeds 1,2,3,4] [--levels 4,8,16,26,32] [--jobs 2]
                          [--policies vllm-lb,session-hash,affinity,ceiling] [-- simulate options]

Runs one simulate per (policy, seed, level), so that no policy or level shares a random stream or a cache
with another, `--jobs` at a time; prints per level and policy the median over the seeds
of tasks/h, prefix hits, stayed, task p50 and p95, and the mean wait of a held task start; then the
default's (`affinity`) ratios to the others. Options after `--` go to every run (the host, the workload).
Standard library only.
"""

import argparse
import concurrent.futures
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

COLUMNS = [("tasks_per_hour", "tasks/h", 0), ("prefix_hits", "hits %", 1), ("stayed_on_replica", "stayed %", 1),
           ("task_time_p50", "task p50 s", 0), ("task_time_p95", "task p95 s", 0)]
HELD = re.compile(r"^(\S+)\s+(\d+) sessions: held (\d+) of \d+ requests \(mean wait ([0-9.]+) s")


def run(binary, policy, seed, levels, extra):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.json")
        cmd = [binary, "simulate", "--policies", policy, "--seed", str(seed), "--levels", levels,
               "--out", out] + extra
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            sys.exit(f"failed: {' '.join(cmd)}\n{done.stderr}")
        with open(out, encoding="utf-8") as f:
            rows = json.load(f)["rows"]
    waits = {}
    for line in done.stdout.splitlines():
        m = HELD.match(line)
        if m and int(m.group(3)) > 0:
            waits[int(m.group(2))] = float(m.group(4))
    return policy, seed, rows, waits


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def cell(value, decimals):
    return "–" if value is None else f"{value:,.{decimals}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default="build/lm-warden")
    ap.add_argument("--seeds", default="1,2,3,4")
    ap.add_argument("--levels", default="4,8,16,26,32")
    ap.add_argument("--policies", default="vllm-lb,session-hash,affinity,ceiling")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("extra", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    extra = a.extra[1:] if a.extra[:1] == ["--"] else a.extra
    policies = a.policies.split(",")
    seeds = [int(s) for s in a.seeds.split(",")]
    runs = [(p, s, lv) for p in policies for s in seeds for lv in a.levels.split(",")]
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futures = [pool.submit(run, a.binary, p, s, lv, extra) for p, s, lv in runs]
        for f in concurrent.futures.as_completed(futures):
            results.append(f.result())
            print(f"  done {results[-1][0]} seed {results[-1][1]}", file=sys.stderr)
    table = {}
    for policy, _, rows, waits in results:
        for r in rows:
            entry = table.setdefault((r["sessions"], policy), {"rows": [], "waits": []})
            entry["rows"].append(r)
            entry["waits"].append(waits.get(r["sessions"]))
    print(f"medians over seeds {a.seeds}: " + " / ".join(c[1] for c in COLUMNS) + " / held start wait s")
    print("| agents | " + " | ".join(policies) + " |")
    print("|---|" + "---|" * len(policies))
    med = {}
    for level in sorted({k[0] for k in table}):
        cells = []
        for p in policies:
            e = table.get((level, p))
            if not e:
                cells.append("")
                continue
            vals = [median([r.get(c[0]) for r in e["rows"]]) for c in COLUMNS]
            med[(level, p)] = vals
            wait = median(e["waits"])
            cells.append(" / ".join(cell(v, c[2]) for v, c in zip(vals, COLUMNS)) +
                         ("" if wait is None else f" / {wait:.0f}"))
        print(f"| {level} | " + " | ".join(cells) + " |")
    if "affinity" in policies:
        print("\naffinity against the others (tasks/h ratio, task p50 ratio, task p95 ratio):")
        for level in sorted({k[0] for k in med}):
            a_vals = med.get((level, "affinity"))
            parts = []
            for p in policies:
                o = med.get((level, p))
                if p == "affinity" or not o or not a_vals or None in (o[0], o[3], o[4]) or not o[0]:
                    continue
                parts.append(f"{p} x{a_vals[0] / o[0]:.2f} tasks, x{a_vals[3] / o[3]:.2f} p50, "
                             f"x{a_vals[4] / o[4]:.2f} p95")
            print(f"  {level} agents: " + "; ".join(parts))


if __name__ == "__main__":
    main()
