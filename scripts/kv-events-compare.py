#!/usr/bin/env python3
"""Side by side: the warden with KV cache events against the estimate, in `lm-warden simulate`.

Runs each seed once per side (separate processes, the same draws) and prints, per level, the medians over
seeds of tasks/h (or sessions/h), prefix hits and the expected-cached column, and the ratio events/estimate.

  scripts/kv-events-compare.py build/lm-warden --seeds 1,2,3,4 -- --preset rtx5090-qwen3.6-27b \
      --replicas 7 --workload agentic --tool-rounds 20 --duration 60m --client-rtt 0.2s --levels 26
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile


def run(binary, args, seed, events):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [binary, "simulate", "--policies", "affinity", "--seed", str(seed), "--out", out.name] + args
        if events:
            cmd.append("--kv-events")
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return json.load(open(out.name))["rows"]


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def main():
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    p = argparse.ArgumentParser()
    p.add_argument("binary")
    p.add_argument("--seeds", default="1,2,3,4")
    a = p.parse_args(argv[:cut])
    args = argv[cut + 1:]
    seeds = [int(s) for s in a.seeds.split(",")]
    sides = {name: [run(a.binary, args, s, name == "events") for s in seeds] for name in ("estimate", "events")}
    levels = [r["sessions"] for r in sides["estimate"][0]]
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


if __name__ == "__main__":
    sys.exit(main())
