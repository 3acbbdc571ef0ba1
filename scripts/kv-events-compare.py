#!/usr/bin/env python3
"""Side by side: the warden with KV cache events against the estimate, in `lm-warden simulate`.

Runs each seed and level once per side, each a process of its own (the same draws, whatever ran before),
and prints, per level, the medians over seeds of tasks/h (or sessions/h), prefix hits and the
expected-cached column, and the ratio events/estimate. --jobs N runs N processes at once. With groups of
agents (--direct-share, --tenants, --interactive) each group's tasks/h and prefix hits too, per seed and
medians.

  scripts/kv-events-compare.py build/lm-warden --seeds 1,2,3,4 -- --preset rtx5090-qwen3.6-27b \
      --replicas 7 --workload agentic --tool-rounds 20 --duration 60m --client-rtt 0.2s --levels 26 \
      --direct-share 0.25
"""
import argparse
import concurrent.futures
import json
import statistics
import subprocess
import sys
import tempfile


def run(binary, args, seed, events, level):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [binary, "simulate", "--policies", "affinity", "--seed", str(seed), "--levels", str(level),
               "--out", out.name] + args
        if events:
            cmd.append("--kv-events")
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        report = json.load(open(out.name))
        row = report["rows"][0]
        row["groups"] = {g["group"]: g for g in report.get("meta", {}).get("groups", [])}
        return row


def levels_of(args):
    """The --levels value, taken out of the flags (each level runs alone)."""
    rest, levels = [], "4,8,16,24,32"
    it = iter(args)
    for a in it:
        if a == "--levels":
            levels = next(it)
        elif a.startswith("--levels="):
            levels = a.split("=", 1)[1]
        else:
            rest.append(a)
    return [int(v) for v in levels.split(",")], rest


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def print_groups(sides, i):
    """Each group's tasks/h and hits, estimate -> events: medians over seeds, then per seed."""
    for name in sides["estimate"][0][i]["groups"]:
        cells = {n: [rows[i]["groups"][name] for rows in sides[n]] for n in sides}
        med = {n: {k: median([g[k] for g in cells[n]]) for k in ("tasks_per_hour", "prefix_hits")} for n in sides}
        e, v = med["estimate"], med["events"]
        ratio = v["tasks_per_hour"] / e["tasks_per_hour"] if e["tasks_per_hour"] else float("nan")
        per_seed = ", ".join(f"{ge['tasks_per_hour']:.0f}->{gv['tasks_per_hour']:.0f} "
                             f"({ge['prefix_hits']:.1f}->{gv['prefix_hits']:.1f} %)"
                             for ge, gv in zip(cells["estimate"], cells["events"]))
        print(f"      {name} ({cells['estimate'][0]['agents']} agents): tasks/h {e['tasks_per_hour']:.1f} -> "
              f"{v['tasks_per_hour']:.1f} (x{ratio:.3f}), hits {e['prefix_hits']:.1f} -> {v['prefix_hits']:.1f} %")
        print(f"        per seed: {per_seed}")


def main():
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    p = argparse.ArgumentParser()
    p.add_argument("binary")
    p.add_argument("--seeds", default="1,2,3,4")
    p.add_argument("--jobs", type=int, default=1)
    a = p.parse_args(argv[:cut])
    levels, args = levels_of(argv[cut + 1:])
    seeds = [int(s) for s in a.seeds.split(",")]
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        jobs = {(n, s, lv): pool.submit(run, a.binary, args, s, n == "events", lv)
                for n in ("estimate", "events") for s in seeds for lv in levels}
        sides = {n: [[jobs[(n, s, lv)].result() for lv in levels] for s in seeds] for n in ("estimate", "events")}
    rate = "tasks_per_hour" if sides["estimate"][0][0].get("tasks_per_hour") is not None else "output_tokens_per_min"
    print(f"seeds {a.seeds}; {' '.join(args)}")
    print(f"{'level':>5} | {rate} estimate -> events (x) | hits % estimate -> events | expected ok % estimate -> events")
    for i, level in enumerate(levels):
        col = {n: {k: median([rows[i].get(k) for rows in sides[n]]) for k in (rate, "prefix_hits", "expected_cached")}
               for n in sides}
        e, v = col["estimate"], col["events"]
        ratio = v[rate] / e[rate] if e[rate] else float("nan")
        fmt = lambda x: "n/a" if x is None else f"{x:.1f}"
        print(f"{level:>5} | {fmt(e[rate])} -> {fmt(v[rate])} (x{ratio:.3f}) | {fmt(e['prefix_hits'])} -> "
              f"{fmt(v['prefix_hits'])} | {fmt(e['expected_cached'])} -> {fmt(v['expected_cached'])}")
        per_seed = [f"{rows_e[i].get(rate):.0f}->{rows_v[i].get(rate):.0f}" for rows_e, rows_v in zip(sides["estimate"], sides["events"])]
        print(f"      per seed: {', '.join(per_seed)}")
        print_groups(sides, i)


if __name__ == "__main__":
    sys.exit(main())
