#!/usr/bin/env bash
# The side-by-side tables of docs/routing.md, section 5, measured again with `lm-warden simulate`
# (docs/experiments/2026-12-08-tables-after-independence.md): one process per (table, policy, seed, level),
# JOBS at a time (xargs -P), each cell's rows in OUT/TABLE/POLICY-sSEED-lLEVEL.json, its printout beside
# them (.txt). Tables: chat (the reference workload, levels 4-32), chat-compare (the same by the reference
# method, `--compare vllm-lb,affinity --vs-reference`, one process a seed: OUT/chat-compare/sSEED.*), steady
# (ten-minute levels with client jitter, 16 and 24 sessions), gpu5090 and offload5090 (the RTX 5090 host,
# 16/26/32 agents, GPU caches only and with 16 GiB of CPU offload a rank), refagents and refoffload (the
# reference host with agents, 4-32), sharedids (the 5090 host, agents sharing 6 session ids).
# Then scripts/retables-summary.py OUT prints the tables.
#
#   scripts/retables.sh [OUT]   BINARY (build/lm-warden), JOBS (2), SEEDS (1 2 3 4), TABLES (all of the above)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-state/retables}
BINARY=${BINARY:-build/lm-warden}
JOBS=${JOBS:-2}
SEEDS=${SEEDS:-1 2 3 4}
TABLES=${TABLES:-chat chat-compare steady gpu5090 offload5090 refagents refoffload sharedids}

CHAT="--preset a4000-qwen3-4b --replicas 4 --think-time 3s --client-rtt 0.2s --num-gpu-blocks 2100"
STEADY="--preset a4000-qwen3-4b --replicas 4 --num-gpu-blocks 2100 --client-rtt 0.2s --think-time 2s"
STEADY="$STEADY --think-jitter 2s --duration 10m"
AGENTS="--preset rtx5090-qwen3.6-27b --replicas 7 --workload agentic --tool-rounds 20 --duration 60m"
AGENTS="$AGENTS --client-rtt 0.2s"
REFAGENTS="--preset a4000-qwen3-4b --replicas 4 --workload agentic --duration 60m --client-rtt 0.2s"
REFAGENTS="$REFAGENTS --num-gpu-blocks 2100"

# cells TABLE "POLICIES" "LEVELS" FLAGS: one command line per (policy, seed, level).
cells() {
  local table=$1 policies=$2 levels=$3 flags=$4 p s l
  mkdir -p "$OUT/$table"
  for p in $policies; do
    for s in $SEEDS; do
      for l in $levels; do
        local base="$OUT/$table/$p-s$s-l$l"
        echo "$BINARY simulate $flags --policies $p --levels $l --seed $s --out $base.json > $base.txt"
      done
    done
  done
}

commands() {
  local t s
  for t in $TABLES; do
    case $t in
      chat) cells chat "vllm-lb affinity" "4 8 16 24 32" "$CHAT" ;;
      chat-compare)
        mkdir -p "$OUT/chat-compare"
        for s in $SEEDS; do
          echo "$BINARY simulate $CHAT --compare vllm-lb,affinity --vs-reference --seed $s" \
            "--out $OUT/chat-compare/s$s.json > $OUT/chat-compare/s$s.txt"
        done
        ;;
      steady) cells steady "vllm-lb affinity" "16 24" "$STEADY" ;;
      gpu5090) cells gpu5090 "affinity session-hash vllm-lb ceiling" "16 26 32" "$AGENTS" ;;
      offload5090)
        cells offload5090 "affinity session-hash vllm-lb ceiling" "16 26 32" "$AGENTS --kv-offloading-size 16"
        ;;
      refagents) cells refagents "affinity vllm-lb ceiling" "4 8 16 24 32" "$REFAGENTS" ;;
      refoffload) cells refoffload "affinity vllm-lb ceiling" "4 8 16 24 32" "$REFAGENTS --kv-offloading-size 16" ;;
      sharedids) cells sharedids "affinity session-hash vllm-lb" "16 26" "$AGENTS --session-keys 6" ;;
      *)
        echo "unknown table $t" >&2
        exit 2
        ;;
    esac
  done
}

mkdir -p "$OUT"
commands > "$OUT/commands.txt"
echo "$(wc -l < "$OUT/commands.txt") runs, $JOBS at a time: $OUT/commands.txt" >&2
xargs -P "$JOBS" -d '\n' -n 1 sh -c < "$OUT/commands.txt"
