#!/usr/bin/env python3
"""core_bench and gateway_bench of two commits side by side: medians of N runs each, and their ratios.

    scripts/bench-compare.py BASE [HEAD] [--runs 3] [--work build-compare] [--jobs 2]

Each commit is exported (git archive) and built in its own folder under --work (only lm-warden and the two
benchmarks); the runs alternate between the two builds, so a drift of the machine falls on both. Run it
on a quiet machine: the gateway figures are loopback latencies of tens of microseconds.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGETS = ["lm-warden", "core_bench", "gateway_bench"]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def build(rev, work, jobs):
    """Exports `rev` into work/<sha>/src, builds TARGETS in work/<sha>/build; returns the build folder."""
    sha = run(["git", "-C", str(REPO), "rev-parse", "--short", rev], capture_output=True, text=True).stdout.strip()
    root = work / sha
    src, out = root / "src", root / "build"
    if not (src / "CMakeLists.txt").exists():
        src.mkdir(parents=True, exist_ok=True)
        archive = subprocess.Popen(["git", "-C", str(REPO), "archive", rev], stdout=subprocess.PIPE)
        run(["tar", "-x", "-C", str(src)], stdin=archive.stdout)
        if archive.wait() != 0:
            sys.exit(f"git archive {rev} failed")
        # The console's assets are embedded from node_modules at configure time.
        (src / "node_modules").symlink_to(REPO / "node_modules")
    env = dict(os.environ, CCACHE_BASEDIR=str(src), CCACHE_NOHASHDIR="1",
               CCACHE_SLOPPINESS="pch_defines,time_macros")
    if not (out / "build.ninja").exists():
        run(["cmake", "-S", str(src), "-B", str(out), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
            env=env, stdout=subprocess.DEVNULL)
    run(["nice", "cmake", "--build", str(out), "-j", str(jobs), "--target", *TARGETS], env=env,
        stdout=subprocess.DEVNULL)
    return sha, out


def core_figures(out):
    """core_bench: real time per benchmark, ns."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        run(["nice", str(out / "bench" / "core_bench"), f"--benchmark_out={f.name}",
             "--benchmark_out_format=json"], stdout=subprocess.DEVNULL)
        data = json.load(open(f.name))
    return {f"core {b['name']} ns": b["real_time"] for b in data["benchmarks"] if b.get("run_type") == "iteration"}


def gateway_figures(out):
    """gateway_bench: the warden's row of each latency table, the paired difference, throughput, memory."""
    text = run(["nice", str(out / "bench" / "gateway_bench")], capture_output=True, text=True).stdout
    figures = {}
    tables = re.split(r"\n(?=Small request|Agent-sized request)", text)
    for part in tables[1:]:
        title = "small" if part.startswith("Small") else "agent"
        title += " ttft" if "time to first token" in part.splitlines()[0] else " whole"
        row = re.search(r"^\| warden \| ([\d.]+) \| ([\d.]+) \| ([+\-\d.]+) \| ([+\-\d.]+) \|(?: (\d+) \|)?", part,
                        re.M)
        if row:
            figures[f"gw {title} p50 ms"] = float(row[1])
            figures[f"gw {title} p99 ms"] = float(row[2])
            figures[f"gw {title} added p50 ms"] = float(row[3])
            if row[5]:
                figures["gw requests/s"] = float(row[5])
        paired = re.search(r"paired per request: median ([+\-\d.]+) us", part)
        if paired:
            figures[f"gw {title} warden-nginx us"] = float(paired[1])
    stream = re.search(r"^\| warden \| \d+ \| \d+ \| ([\d.]+) \|$", text, re.M)
    if stream:
        figures["gw KiB per open stream"] = float(stream[1])
    return figures


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base")
    p.add_argument("head", nargs="?", default="HEAD")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--work", type=Path, default=REPO / "build-compare")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--no-gateway", action="store_true", help="core_bench only")
    args = p.parse_args()
    builds = [build(args.base, args.work, args.jobs), build(args.head, args.work, args.jobs)]
    runs = {sha: [] for sha, _ in builds}
    for i in range(args.runs):
        for sha, out in builds:
            print(f"run {i + 1}/{args.runs}: {sha}", file=sys.stderr)
            figures = core_figures(out)
            if not args.no_gateway:
                figures.update(gateway_figures(out))
            runs[sha].append(figures)
    (base, _), (head, _) = builds
    names = [n for n in runs[base][0] if all(n in r for r in runs[base] + runs[head])]
    print(f"medians of {args.runs} runs; load average at the end {os.getloadavg()[0]:.2f}")
    print(f"| figure | {base} | {head} | {head}/{base} |\n|---|---|---|---|")
    for n in names:
        b = statistics.median(r[n] for r in runs[base])
        h = statistics.median(r[n] for r in runs[head])
        ratio = f"{h / b:.2f}" if b != 0 else "-"
        print(f"| {n} | {b:.3f} | {h:.3f} | {ratio} |")


if __name__ == "__main__":
    main()
