#!/usr/bin/env bash
# `make run`: the warden with the demo config, which launches 4 simulated data-parallel ranks of the
# reference host itself (config/demo.yaml, `launch:` — docs/engines.md) and supervises them.
# WARDENS=2 (or more): a redis-server on a free loopback port and further wardens on the next ports, in
# front of the same simulated ranks (they launch nothing), all sharing conversation homes through Redis.
# SHARED_STATE=0 leaves Redis out: each warden then places conversations on its own (for comparison).
# ENGINE_ARGS="--kv-offloading-size 16" adds those arguments (words without quotes or commas) to the
# simulated engines' command line (docs/sim.md).
# PRESET=rtx5090-qwen3.6-27b REPLICAS=7: another engine preset and number of simulated ranks; the model's
# max_num_seqs and context come from the preset itself (`lm-warden sim --preset P --print-config`).
# Ctrl-C stops the wardens and Redis, and the first warden stops the sim.
set -euo pipefail
bin=${1:-build/lm-warden}
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/common.sh
source "$root/scripts/common.sh"
sim_port=${SIM_PORT:-8000}
warden_port=${WARDEN_PORT:-8080}
wardens=${WARDENS:-1}
tmp=$(mktemp -d)
pids=()
redis_pid=

cleanup() {
  trap - EXIT INT TERM
  # The later wardens first: the first one stops the engine it launched.
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -TERM "${pids[i]}" 2>/dev/null || true
    wait "${pids[i]}" 2>/dev/null || true
  done
  if [[ -n "$redis_pid" ]]; then
    kill -TERM "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo; echo "stopping..."; exit 0' INT TERM

redis_answers() { [[ "$(redis-cli -p "$1" ping 2>/dev/null)" == PONG ]]; }

# A throwaway redis-server (nothing saved to disk) on a free loopback port; sets redis_url. (Run in this
# shell, not in $(...): the pid must be this shell's child to be stopped and waited for.)
start_redis() {
  if ! command -v redis-server >/dev/null; then
    echo "WARDENS=${wardens} needs redis-server (make setup installs it)" >&2
    return 1
  fi
  local port
  port=$(free_port "${REDIS_PORT:-6379}")
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >"$tmp/redis.out" 2>&1 &
  redis_pid=$!
  if wait_ready "$redis_pid" 100 redis_answers "$port"; then
    redis_url="redis://127.0.0.1:${port}/0"
    redis_port=$port
    return 0
  fi
  echo "redis-server did not start on port ${port}; its output:" >&2
  cat "$tmp/redis.out" >&2
  return 1
}

# Starts warden $1 (0 = the first) with config $2 on port $3 and appends its URL to warden_urls; each
# warden has its own state directory (the first one the demo's, the others -2, -3, ...).
start_warden() {
  local i=$1 config=$2 port=$3 state_dir=${WARDEN_STATE_DIR:-$root/state/demo} url
  if ((i > 0)); then
    state_dir="${state_dir}-$((i + 1))"
  fi
  "$bin" serve --config "$config" --listen "127.0.0.1:${port}" --state-dir "$state_dir" \
    >"$tmp/serve-$i.out" 2> >(tee "$tmp/serve-$i.err" >&2) &
  pids+=($!)
  url=$(wait_listening "$tmp/serve-$i.out" "${pids[-1]}" "lm-warden serve (warden $((i + 1)))") || return 1
  warden_urls+=("$url")
}

if ! [[ "$wardens" =~ ^[1-9]$ ]]; then
  echo "WARDENS must be a number of wardens from 1 to 9, not '$wardens'" >&2
  exit 2
fi

# TIME_SCALE=10: the simulated engines run ten times faster than the wall clock (`sim --time-scale`), and
# the warden scrapes them ten times as often, so a scrape still spans one model second (down to the
# shortest scrape_interval the config accepts, 50ms: above TIME_SCALE=20 a scrape spans more).
time_scale=${TIME_SCALE:-1}
if ! [[ "$time_scale" =~ ^[0-9]+([.][0-9]+)?$ ]] || awk "BEGIN { exit !($time_scale <= 0) }"; then
  echo "TIME_SCALE must be a positive number (model seconds per wall second), not '$time_scale'" >&2
  exit 2
fi
scrape_ms=$(awk "BEGIN { ms = int(1000 / $time_scale); print (ms < 50 ? 50 : ms) }")

# The engine preset and its ranks. The demo's own (the reference host) keeps config/demo.yaml's model as
# it is; another preset brings its max_num_seqs and max_model_len, read from the preset (one source).
preset=${PRESET:-a4000-qwen3-4b}
replicas=${REPLICAS:-4}
if ! [[ "$preset" =~ ^[A-Za-z0-9._-]+$ ]] || ! [[ "$replicas" =~ ^[1-9][0-9]?$ ]]; then
  echo "PRESET must be a preset name and REPLICAS a number of ranks from 1 to 99" >&2
  exit 2
fi
model=qwen3-4b-dp4
served=Qwen/Qwen3-4B-Instruct-2507
preset_edits=(-e "s|size: 4 }|size: ${replicas} }|")
if [[ "$preset" != a4000-qwen3-4b ]]; then
  if ! preset_yaml=$("$bin" sim --preset "$preset" --print-config 2>&1); then
    echo "$preset_yaml" >&2
    exit 2
  fi
  preset_value() { sed -n "s/^$1: //p" <<<"$preset_yaml"; }
  model="${preset}-dp${replicas}"
  served=$preset
  preset_edits+=(-e "s|name: qwen3-4b-dp4|name: ${model}|"
    -e "s|served_model_name: Qwen/Qwen3-4B-Instruct-2507|served_model_name: ${served}|"
    -e "s|max_num_seqs: 32|max_num_seqs: $(preset_value max_num_seqs)|"
    -e "s|--max-model-len, \"40000\"|--max-model-len, \"$(preset_value max_model_len)\"|"
    -e "s|--preset, a4000-qwen3-4b,|--preset, ${preset},|")
fi
engine_args=
read -ra engine_words <<<"${ENGINE_ARGS:-}"
for word in "${engine_words[@]}"; do
  if ! [[ "$word" =~ ^[A-Za-z0-9._=/+-]+$ ]]; then
    echo "ENGINE_ARGS takes plain words (letters, digits and ._=/+-), not '$word'" >&2
    exit 2
  fi
  engine_args+=", \"$word\""
done

# The demo config puts the sim on port 8000; follow SIM_PORT if it was changed.
sed -e "s|http://127.0.0.1:8000|http://127.0.0.1:${sim_port}|" \
  "${preset_edits[@]}" -e "s|--preset, ${preset},|--preset, ${preset}, --time-scale, \"${time_scale}\",|" \
  -e "s|scrape_interval: 1s|scrape_interval: ${scrape_ms}ms|" \
  -e "s|--tool-rounds, \"3.5\"]|--tool-rounds, \"3.5\"${engine_args}]|" \
  "$root/config/demo.yaml" >"$tmp/demo.yaml"
redis_url=
redis_port=
warden_urls=()
if ((wardens > 1)) && [[ "${SHARED_STATE:-1}" != 0 ]]; then
  start_redis || exit 1
  printf '\n# Conversation homes shared with the other wardens of the demo.\nstate: { redis: %s, prefix: "lm-warden:" }\n' \
    "$redis_url" >>"$tmp/demo.yaml"
fi
if ((wardens > 1)); then
  # The other wardens: the same model and replicas without the `launch:` block (the first one runs the sim).
  awk '/^    launch:/ { skip = 1; next } skip && match($0, /[^ ]/) && RSTART <= 5 { skip = 0 } !skip' "$tmp/demo.yaml" \
    >"$tmp/demo-attached.yaml"
fi
start_warden 0 "$tmp/demo.yaml" "$warden_port" || exit 1
warden_url=${warden_urls[0]}
sim_url="http://127.0.0.1:${sim_port}"

# The engine status comes from the warden (starting → ready; failed if e.g. the port is taken).
status=starting
for _ in $(seq 1 300); do
  status=$(curl -s "${warden_url}/api/models/${model}" |
    sed -n 's/.*"launch":{"status":"\([a-z]*\)".*/\1/p') || true
  [[ "$status" == ready || "$status" == failed ]] && break
  sleep 0.1
done
if [[ "$status" != ready ]]; then
  echo "the simulated engine is not ready (status: ${status:-unknown}); its log:" >&2
  curl -s "${warden_url}/api/models/${model}/logs?lines=20" >&2 || true
  echo >&2
fi
if ((wardens > 1)); then
  # The other wardens listen to the same KV cache events, at the ports the first one picked for the sim
  # (listed by the sim at /kv_event_sources, as vLLM lists them; rank r publishes on rank 0's port + r).
  sources=$(curl -s "${sim_url}/kv_event_sources") || true
  kv_port=$(sed -n 's/^\[{[^}]*"endpoint":"tcp:\/\/\*:\([0-9]*\)".*/\1/p' <<<"$sources")
  kv_replay=$(sed -n 's/^\[{[^}]*"replay_endpoint":"tcp:\/\/\*:\([0-9]*\)".*/\1/p' <<<"$sources")
  if [[ -n "$kv_port" ]]; then
    kv_line="    kv_events: { endpoint: tcp://127.0.0.1:${kv_port}${kv_replay:+, replay_endpoint: tcp://127.0.0.1:${kv_replay}} }"
    sed -i "/^      data_parallel:/a\\${kv_line}" "$tmp/demo-attached.yaml"
  fi
fi
for ((i = 1; i < wardens; i++)); do
  start_warden "$i" "$tmp/demo-attached.yaml" "$((warden_port + i))" || exit 1
done

# The model's context window, as the engine reports it (vLLM and the sim: max_model_len in /v1/models).
# Claude Code needs it: for a model name it does not know it assumes 1M tokens and never compacts in time.
context=$(curl -s "${sim_url}/v1/models" | sed -n 's/.*"max_model_len":\([0-9]*\).*/\1/p') || true
context=${context:-32768}

cat <<INFO

LM Warden demo is running.
  warden (OpenAI + Anthropic APIs)   ${warden_url}/v1/...
  console                            ${warden_url}/
INFO
# The further wardens and Redis (nothing with one warden).
for ((i = 1; i < wardens; i++)); do
  printf '  %-35s%s/v1/...   console %s/\n' "warden $((i + 1)), same replicas" "${warden_urls[i]}" \
    "${warden_urls[i]}"
done
if [[ -n "$redis_url" ]]; then
  printf '  %-35s%s   (redis-server, nothing saved: redis-cli -p %s)\n' "shared conversation homes" \
    "$redis_url" "$redis_port"
fi
stop_line="Ctrl-C stops the warden, which stops the engine."
if ((wardens > 1)); then
  stop_line="Ctrl-C stops the wardens$([[ -n "$redis_url" ]] && echo " and Redis") (the first warden stops the engine).
Load over all the wardens, each conversation's turns alternating between them (docs/bench.md):
  lm-warden bench --url $(IFS=,; echo "${warden_urls[*]}") --model ${model} --metrics ${sim_url}/metrics \\
    --time-scale ${time_scale}"
fi
cat <<INFO
  admin API                          ${warden_url}/api/models   (admin token: demo)
  engine logs                        ${warden_url}/api/models/${model}/logs?lines=50
  warden metrics                     ${warden_url}/metrics
  simulated vLLM (${replicas} DP ranks)        ${sim_url}   (${sim_url}/metrics), launched by the warden,
                                     time scale ${time_scale} (TIME_SCALE=10 make run: ten times faster)

The simulated engine answers agents with tool calls that only read (ls, Read, subagents; docs/sim.md).

Point Claude Code at it (its real context window, and an output limit that leaves room to compact):
  ANTHROPIC_BASE_URL=${warden_url} ANTHROPIC_AUTH_TOKEN=dummy CLAUDE_CODE_MAX_CONTEXT_TOKENS=${context} \\
    CLAUDE_CODE_MAX_OUTPUT_TOKENS=4096 ANTHROPIC_DEFAULT_HAIKU_MODEL=${model} \\
    ANTHROPIC_DEFAULT_SONNET_MODEL=${model} claude --model ${model} --permission-mode manual
  First start in a fresh home on a host without internet access: Claude Code's first-run setup checks
  api.anthropic.com and stops there. Mark the setup done once, then answer "Yes, I trust this folder":
  node -e 'const fs=require("fs"),f=require("os").homedir()+"/.claude.json";let c={};try{c=JSON.parse(fs.readFileSync(f,"utf8"))}catch{}c.hasCompletedOnboarding=true;fs.writeFileSync(f,JSON.stringify(c,null,2))'

Point Codex at it:
  WARDEN_API_KEY=dummy codex -m ${model} -c model_provider=warden \\
    -c 'model_providers.warden={name="LM Warden",base_url="${warden_url}/v1",wire_api="responses",env_key="WARDEN_API_KEY"}' \\
    -c model_context_window=${context}

Or try:
  curl -s ${warden_url}/v1/chat/completions -H 'content-type: application/json' \\
    -d '{"model":"${model}","messages":[{"role":"user","content":"hello"}]}'

${stop_line}
INFO

# Until the first warden exits (it owns the engine); the others are stopped with it.
wait "${pids[0]}" || true
echo "the warden exited" >&2
