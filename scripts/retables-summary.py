#!/usr/bin/env python3
"""The tables of scripts/retables.sh's runs, per seed and as medians over the seeds (Markdown).

  scripts/retables-summary.py OUT

chat, chat-compare (the reference method) and steady: prefix hits, TTFB p50 / p95 and output tokens/min as
`vllm-lb → affinity`; gpu5090 and offload5090: tasks/h of the default (`affinity`) against session-hash /
vllm-lb / ceiling (those that ran), the default's hits, and each policy's tasks/h / hits / task p50 / task p95 (and the mean
wait of a held start). Standard library only.
"""

import json
import os
import re
import statistics
import sys

CELL = re.compile(r"^(?P<policy>.+)-s(?P<seed>\d+)-l(?P<level>\d+)\.json$")
HELD = re.compile(r"^(\S+)\s+(\d+) sessions: held (\d+) of \d+ requests \(mean wait ([0-9.]+) s")
CHAT = [("prefix_hits", "hits %", 1), ("ttfb_p50", "TTFB p50 s", 2), ("ttfb_p95", "TTFB p95 s", 2),
        ("output_tokens_per_min", "tokens/min", 0)]
AGENT = [("tasks_per_hour", "tasks/h", 0), ("prefix_hits", "hits %", 1), ("task_time_p50", "task p50 s", 0),
         ("task_time_p95", "task p95 s", 0), ("held_wait", "held wait s", 0)]
ORDER = ["session-hash", "vllm-lb", "ceiling"]


def held_waits(path):
    waits = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = HELD.match(line)
                if m and int(m.group(3)) > 0:
                    waits[int(m.group(2))] = float(m.group(4))
    return waits


def load(out, table):
    """{(policy, seed, level): row} of one table's runs."""
    cells = {}
    folder = os.path.join(out, table)
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if not name.endswith(".json"):
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            rows = json.load(f)["rows"]
        m = CELL.match(name)
        seed = int(m.group("seed")) if m else int(name[1:-5])
        waits = held_waits(os.path.join(folder, name[:-5] + ".txt"))
        for r in rows:
            r["held_wait"] = waits.get(r["sessions"], 0.0)
            cells[(r["policy"], seed, r["sessions"])] = r
    return cells


def fmt(value, decimals):
    return "–" if value is None else f"{value:,.{decimals}f}"


def med(cells, policy, seeds, level, key):
    values = [cells[(policy, s, level)].get(key) for s in seeds if (policy, s, level) in cells]
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def keys(cells):
    return sorted({k[1] for k in cells}), sorted({k[2] for k in cells})


def chat_table(title, cells):
    seeds, levels = keys(cells)
    if not cells:
        return
    head = "| seed | sessions | " + " | ".join(c[1] + ", vllm-lb → affinity" for c in CHAT) + " |"
    print(f"\n### {title}\n\n{head}\n|---|---|" + "---|" * len(CHAT))
    for group in [[s] for s in seeds] + [seeds]:
        label = str(group[0]) if len(group) == 1 else "median"
        for lv in levels:
            parts = [f"{fmt(med(cells, 'vllm-lb', group, lv, k), d)} → {fmt(med(cells, 'affinity', group, lv, k), d)}"
                     for k, _, d in CHAT]
            print(f"| {label} | {lv} | " + " | ".join(parts) + " |")


def agents_table(title, cells):
    seeds, levels = keys(cells)
    if not cells:
        return
    others = [p for p in ORDER if any(k[0] == p for k in cells)]
    print(f"\n### {title}\n\ntasks/h, default (affinity) against " + " / ".join(others) + " (default's hits %)\n")
    print("| agents | " + " | ".join(f"seed {s}" for s in seeds) + " | median |\n|---|" + "---|" * (len(seeds) + 1))
    for lv in levels:
        parts = []
        for group in [[s] for s in seeds] + [seeds]:
            tasks = fmt(med(cells, "affinity", group, lv, "tasks_per_hour"), 0)
            against = " / ".join(fmt(med(cells, p, group, lv, "tasks_per_hour"), 0) for p in others)
            parts.append(f"{tasks} against {against} ({fmt(med(cells, 'affinity', group, lv, 'prefix_hits'), 1)} %)")
        print(f"| {lv} | " + " | ".join(parts) + " |")
    print("\nmedians over seeds " + ",".join(map(str, seeds)) + ": " + " / ".join(c[1] for c in AGENT) + "\n")
    policies = ["affinity"] + others
    print("| agents | " + " | ".join(policies) + " |\n|---|" + "---|" * len(policies))
    for lv in levels:
        parts = [" / ".join(fmt(med(cells, p, seeds, lv, k), d) for k, _, d in AGENT) for p in policies]
        print(f"| {lv} | " + " | ".join(parts) + " |")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "state/retables"
    chat_table("Chat, one process per policy, seed and level", load(out, "chat"))
    chat_table("Chat, the reference method (--compare vllm-lb,affinity, one process a seed)", load(out, "chat-compare"))
    chat_table("Chat with jitter, ten-minute levels, one process per policy, seed and level", load(out, "steady"))
    agents_table("RTX 5090 host, GPU caches only", load(out, "gpu5090"))
    agents_table("RTX 5090 host, 16 GiB CPU offload a rank", load(out, "offload5090"))
    agents_table("Reference host with agents, GPU caches only", load(out, "refagents"))
    agents_table("Reference host with agents, 16 GiB CPU offload a rank", load(out, "refoffload"))
    agents_table("RTX 5090 host, the agents sharing 6 session ids (--session-keys 6)", load(out, "sharedids"))


if __name__ == "__main__":
    main()
