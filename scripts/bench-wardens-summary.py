#!/usr/bin/env python3
"""One warden against two over several seeds: the medians of `scripts/bench-wardens.sh SEEDS=...`.

  scripts/bench-wardens-summary.py DIR [DIR ...]

Each DIR holds one seed's `one.json` and `two.json` (`lm-warden bench --out`) and their `.jsonl` records.
Prints, per level, each seed's prefix hits, stayed on replica, TTFB p50 and mean TTFB (from the records)
for one warden and for two, the difference (points) or ratio, and the median over the seeds with the range.
A single seed of this closed loop is chaotic (where a conversation is placed changes which replica
overflows its KV cache first), so the median is the figure to compare. Standard library only.
"""

import json
import os
import statistics
import sys


def load(path):
    """The report's rows by level, each with the mean TTFB of its records' successful requests."""
    with open(path) as f:
        rows = {row["sessions"]: dict(row) for row in json.load(f)["rows"]}
    ttfbs = {}
    with open(path[: -len(".json")] + ".jsonl") as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("ok"):
                ttfbs.setdefault(rec["sessions"], []).append(rec["ttfb"])
    for level, row in rows.items():
        row["ttfb_mean"] = statistics.mean(ttfbs[level]) if ttfbs.get(level) else float("nan")
    return rows


# (key, header, how one and two are compared: "points" as a difference, "ratio" as two / one)
COLUMNS = [("prefix_hits", "prefix hits %", "points"), ("stayed_on_replica", "stayed %", "points"),
           ("ttfb_p50", "TTFB p50 s", "ratio"), ("ttfb_mean", "TTFB mean s", "ratio")]


def compare(one, two, how):
    if how == "points":
        return two - one
    return two / one if one > 0 else float("nan")


def cell(one, two, how):
    change = compare(one, two, how)
    mark = f"{change:+.1f}" if how == "points" else f"x{change:.2f}"
    return f"{one:.1f} → {two:.1f} ({mark})" if how == "points" else f"{one:.2f} → {two:.2f} ({mark})"


def median_cell(pairs, how):
    one = statistics.median(p[0] for p in pairs)
    two = statistics.median(p[1] for p in pairs)
    changes = [compare(a, b, how) for a, b in pairs]
    mid = statistics.median(changes)
    if how == "points":
        return f"{one:.1f} → {two:.1f} ({mid:+.1f}, {min(changes):+.1f}..{max(changes):+.1f})"
    return f"{one:.2f} → {two:.2f} (x{mid:.2f}, {min(changes):.2f}..{max(changes):.2f})"


def main(dirs):
    runs = []
    for d in dirs:
        one, two = load(os.path.join(d, "one.json")), load(os.path.join(d, "two.json"))
        runs.append((os.path.basename(os.path.normpath(d)), one, two))
    levels = sorted(set.intersection(*(set(one) & set(two) for _, one, two in runs)))
    header = "| Sessions | Seed | " + " | ".join(f"{h} one → two" for _, h, _ in COLUMNS) + " | Errors |"
    print(header)
    print("|" + "---|" * (len(COLUMNS) + 3))
    for level in levels:
        for name, one, two in runs:
            a, b = one[level], two[level]
            cells = [cell(a[k], b[k], how) for k, _, how in COLUMNS]
            print(f"| {level} | {name} | " + " | ".join(cells) + f" | {a['errors']} → {b['errors']} |")
        pairs = {k: [(one[level][k], two[level][k]) for _, one, two in runs] for k, _, _ in COLUMNS}
        errors = sum(one[level]["errors"] + two[level]["errors"] for _, one, two in runs)
        cells = [median_cell(pairs[k], how) for k, _, how in COLUMNS]
        print(f"| {level} | median of {len(runs)} | " + " | ".join(cells) + f" | {errors} in all |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
