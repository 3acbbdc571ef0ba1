#!/usr/bin/env bash
# `make run`: the warden with the demo config, which launches 4 simulated data-parallel ranks of the
# reference host itself (config/demo.yaml, `launch:` — docs/engines.md) and supervises them.
# Ctrl-C stops the warden, and the warden stops the sim.
set -euo pipefail
bin=${1:-build/lm-warden}
root=$(cd "$(dirname "$0")/.." && pwd)
sim_port=${SIM_PORT:-8000}
warden_port=${WARDEN_PORT:-8080}
tmp=$(mktemp -d)
pid=

cleanup() {
  trap - EXIT INT TERM
  if [[ -n "$pid" ]]; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo; echo "stopping..."; exit 0' INT TERM

# Waits (bounded) for the "listening on http://HOST:PORT" line and prints the URL.
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

# TIME_SCALE=10: the simulated engines run ten times faster than the wall clock (`sim --time-scale`), and
# the warden scrapes them ten times as often, so a scrape still spans one model second (down to the
# shortest scrape_interval the config accepts, 50ms: above TIME_SCALE=20 a scrape spans more).
time_scale=${TIME_SCALE:-1}
if ! [[ "$time_scale" =~ ^[0-9]+([.][0-9]+)?$ ]] || awk "BEGIN { exit !($time_scale <= 0) }"; then
  echo "TIME_SCALE must be a positive number (model seconds per wall second), not '$time_scale'" >&2
  exit 2
fi
scrape_ms=$(awk "BEGIN { ms = int(1000 / $time_scale); print (ms < 50 ? 50 : ms) }")

# The demo config puts the sim on port 8000; follow SIM_PORT if it was changed.
sed -e "s|http://127.0.0.1:8000|http://127.0.0.1:${sim_port}|" \
  -e "s|--preset, a4000-qwen3-4b,|--preset, a4000-qwen3-4b, --time-scale, \"${time_scale}\",|" \
  -e "s|scrape_interval: 1s|scrape_interval: ${scrape_ms}ms|" \
  "$root/config/demo.yaml" >"$tmp/demo.yaml"
"$bin" serve --config "$tmp/demo.yaml" --listen "127.0.0.1:${warden_port}" \
  --state-dir "${WARDEN_STATE_DIR:-$root/state/demo}" >"$tmp/serve.out" 2> >(tee "$tmp/serve.err" >&2) &
pid=$!
warden_url=$(wait_listening "$tmp/serve.out" "$pid" "lm-warden serve") || exit 1
sim_url="http://127.0.0.1:${sim_port}"

# The engine status comes from the warden (starting → ready; failed if e.g. the port is taken).
status=starting
for _ in $(seq 1 300); do
  status=$(curl -s "${warden_url}/api/models/qwen3-4b-dp4" |
    sed -n 's/.*"launch":{"status":"\([a-z]*\)".*/\1/p') || true
  [[ "$status" == ready || "$status" == failed ]] && break
  sleep 0.1
done
if [[ "$status" != ready ]]; then
  echo "the simulated engine is not ready (status: ${status:-unknown}); its log:" >&2
  curl -s "${warden_url}/api/models/qwen3-4b-dp4/logs?lines=20" >&2 || true
  echo >&2
fi

# The model's context window, as the engine reports it (vLLM and the sim: max_model_len in /v1/models).
# Claude Code needs it: for a model name it does not know it assumes 1M tokens and never compacts in time.
context=$(curl -s "${sim_url}/v1/models" | sed -n 's/.*"max_model_len":\([0-9]*\).*/\1/p') || true
context=${context:-32768}

cat <<INFO

LM Warden demo is running.
  warden (OpenAI + Anthropic APIs)   ${warden_url}/v1/...
  console                            ${warden_url}/
  admin API                          ${warden_url}/api/models   (admin token: demo)
  engine logs                        ${warden_url}/api/models/qwen3-4b-dp4/logs?lines=50
  warden metrics                     ${warden_url}/metrics
  simulated vLLM (4 DP ranks)        ${sim_url}   (${sim_url}/metrics), launched by the warden,
                                     time scale ${time_scale} (TIME_SCALE=10 make run: ten times faster)

Point Claude Code at it (its real context window, and an output limit that leaves room to compact):
  ANTHROPIC_BASE_URL=${warden_url} ANTHROPIC_API_KEY=dummy CLAUDE_CODE_MAX_CONTEXT_TOKENS=${context} \\
    CLAUDE_CODE_MAX_OUTPUT_TOKENS=4096 ANTHROPIC_DEFAULT_HAIKU_MODEL=qwen3-4b-dp4 claude --model qwen3-4b-dp4

Point Codex at it:
  WARDEN_API_KEY=dummy codex -m qwen3-4b-dp4 -c model_provider=warden \\
    -c 'model_providers.warden={name="LM Warden",base_url="${warden_url}/v1",wire_api="responses",env_key="WARDEN_API_KEY"}' \\
    -c model_context_window=${context}

Or try:
  curl -s ${warden_url}/v1/chat/completions -H 'content-type: application/json' \\
    -d '{"model":"qwen3-4b-dp4","messages":[{"role":"user","content":"hello"}]}'

Ctrl-C stops the warden, which stops the engine.
INFO

wait "$pid" || true
pid=
echo "the warden exited" >&2
