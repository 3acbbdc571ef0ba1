#!/usr/bin/env python3
"""Classes of work, tenants and the hold bound with `lm-warden simulate` (docs/experiments/2026-12-07-classes-and-tenants.md).

  scripts/classes-table.py [--binary B] [--seeds 1,2,3,4] [--levels 26] [--jobs 2]
                           --variant NAME='simulate flags' [--variant ...] [--per-seed] [-- common flags]

Runs one simulate per (variant, seed, level), `--jobs` at a time, each a process of its own (policy
`affinity` unless a variant names others); prints per level and variant the medians over the seeds of
tasks/h, prefix hits, task p50 and p95, and of each group (class of work, tenant) its tasks/h per agent,
its task starts' wait at the warden (p50 / p95) and their TTFB p95; with --per-seed each seed's cells too. Options after `--`
go to every run (the host, the workload). Standard library only.
"""

import argparse
import concurrent.futures
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

COLUMNS = [("tasks_per_hour", "tasks/h", 0), ("prefix_hits", "hits %", 1), ("task_time_p50", "task p50 s", 0),
           ("task_time_p95", "task p95 s", 0)]
GROUP = [("tasks_per_agent_hour", "tasks/h/agent", 2), ("start_wait_p50", "wait p50 s", 1),
         ("start_wait_p95", "wait p95 s", 1), ("start_ttfb_p95", "start ttfb p95 s", 1)]


def run(binary, name, flags, seed, level, extra):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.json")
        cmd = [binary, "simulate", "--seed", str(seed), "--levels", level, "--out", out] + extra + flags
        if "--policies" not in flags:
            cmd += ["--policies", "affinity"]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            sys.exit(f"failed: {' '.join(cmd)}\n{done.stderr}")
        with open(out, encoding="utf-8") as f:
            doc = json.load(f)
    return name, seed, doc["rows"], doc["meta"].get("groups", [])


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def cell(value, decimals):
    return "–" if value is None else f"{value:,.{decimals}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default="build/lm-warden")
    ap.add_argument("--seeds", default="1,2,3,4")
    ap.add_argument("--levels", default="26")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--variant", action="append", required=True, help="NAME='flags'")
    ap.add_argument("--per-seed", action="store_true")
    ap.add_argument("extra", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    extra = a.extra[1:] if a.extra[:1] == ["--"] else a.extra
    variants = []
    for v in a.variant:
        name, _, flags = v.partition("=")
        variants.append((name, shlex.split(flags)))
    seeds = [int(s) for s in a.seeds.split(",")]
    runs = [(n, f, s, lv) for n, f in variants for s in seeds for lv in a.levels.split(",")]
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futures = [pool.submit(run, a.binary, n, f, s, lv, extra) for n, f, s, lv in runs]
        for f in concurrent.futures.as_completed(futures):
            results.append(f.result())
            print(f"  done {results[-1][0]} seed {results[-1][1]}", file=sys.stderr)
    rows = {}    # (level, variant) -> {seed: row}
    groups = {}  # (level, variant, group) -> {seed: group}
    for name, seed, rs, gs in results:
        for r in rs:
            rows.setdefault((r["sessions"], name), {})[seed] = r
        for g in gs:
            groups.setdefault((g["sessions"], name, g["group"]), {})[seed] = g
    order = [v[0] for v in variants]
    table(f"medians over seeds {a.seeds}", ["agents", "variant"], COLUMNS, rows,
          sorted(rows, key=lambda k: (k[0], order.index(k[1]))), a.per_seed, lambda k, _: list(k))
    if groups:
        print()
        table(f"by group, medians over seeds {a.seeds}", ["agents", "variant", "group", "agents in it"], GROUP,
              groups, sorted(groups, key=lambda k: (k[0], order.index(k[1]), k[2])), a.per_seed,
              lambda k, by_seed: list(k) + [next(iter(by_seed.values()))["agents"]])


def table(title, keys, columns, cells_by_key, order, per_seed, key_cells):
    """One Markdown table: a row per key, the medians of `columns` over the seeds (and each seed's)."""
    print(f"{title}; " + " / ".join(c[1] for c in columns))
    print("| " + " | ".join(keys + [c[1] for c in columns]) + " |" + (" per seed |" if per_seed else ""))
    print("|" + "---|" * (len(keys) + len(columns)) + ("---|" if per_seed else ""))
    for key in order:
        by_seed = cells_by_key[key]
        cells = [cell(median([r.get(c[0]) for r in by_seed.values()]), c[2]) for c in columns]
        line = "| " + " | ".join(str(k) for k in key_cells(key, by_seed)) + " | " + " | ".join(cells) + " |"
        if per_seed:
            line += " " + "; ".join(f"s{s}: " + " / ".join(cell(by_seed[s].get(c[0]), c[2]) for c in columns)
                                    for s in sorted(by_seed)) + " |"
        print(line)


if __name__ == "__main__":
    main()
