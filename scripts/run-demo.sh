#!/usr/bin/env bash
# `make run`: 4 simulated data-parallel ranks of the reference host and the warden in front of them.
# Ctrl-C (or either process exiting) stops both.
set -euo pipefail
bin=${1:-build/lm-warden}
root=$(cd "$(dirname "$0")/.." && pwd)
sim_port=${SIM_PORT:-8000}
warden_port=${WARDEN_PORT:-8080}
tmp=$(mktemp -d)
pids=()

cleanup() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo; echo "stopping..."; exit 0' INT TERM

# Waits (bounded) for a child's "listening on http://HOST:PORT" line and prints the URL.
wait_listening() {
  local file=$1 pid=$2 name=$3
  for _ in $(seq 1 300); do
    if grep -qo 'listening on http://[^ ]*' "$file" 2>/dev/null; then
      grep -o 'listening on http://[^ ]*' "$file" | head -1 | sed 's/listening on //'
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "$name exited before listening" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "$name did not start listening within 30 s" >&2
  return 1
}

"$bin" sim --port "$sim_port" --data-parallel-size 4 --preset a4000-qwen3-4b \
  --served-model-name Qwen/Qwen3-4B-Instruct-2507 >"$tmp/sim.out" 2>"$tmp/sim.err" &
pids+=($!)
sim_url=$(wait_listening "$tmp/sim.out" "${pids[0]}" "lm-warden sim") || { cat "$tmp/sim.err" >&2; exit 1; }

# The demo config points at port 8000; follow SIM_PORT if it was changed.
sed "s|http://127.0.0.1:8000|${sim_url}|" "$root/config/demo.yaml" >"$tmp/demo.yaml"
"$bin" serve --config "$tmp/demo.yaml" --listen "127.0.0.1:${warden_port}" \
  --state-dir "${WARDEN_STATE_DIR:-$root/state/demo}" >"$tmp/serve.out" 2> >(tee "$tmp/serve.err" >&2) &
pids+=($!)
warden_url=$(wait_listening "$tmp/serve.out" "${pids[1]}" "lm-warden serve") || exit 1

cat <<INFO

LM Warden demo is running.
  warden (OpenAI + Anthropic APIs)   ${warden_url}/v1/...
  console                            ${warden_url}/
  admin API                          ${warden_url}/api/models   (admin token: demo)
  warden metrics                     ${warden_url}/metrics
  simulated vLLM (4 DP ranks)        ${sim_url}   (${sim_url}/metrics)

Point Claude Code at it:
  ANTHROPIC_BASE_URL=${warden_url} ANTHROPIC_API_KEY=dummy claude --model qwen3-4b-dp4

Or try:
  curl -s ${warden_url}/v1/chat/completions -H 'content-type: application/json' \\
    -d '{"model":"qwen3-4b-dp4","messages":[{"role":"user","content":"hello"}]}'

Ctrl-C stops both.
INFO

# Returns as soon as either child exits (then the trap stops the other).
wait -n "${pids[@]}" || true
echo "a child exited; stopping" >&2
