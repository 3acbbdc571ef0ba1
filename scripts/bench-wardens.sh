#!/usr/bin/env bash
# One warden against two (`make bench-wardens`): `lm-warden bench` once against one warden, then once with
# each conversation's turns alternating between two wardens that share conversation homes through Redis,
# each run on a fresh `make run` setup (4 simulated ranks of the reference host, run-demo.sh), then prefix
# hits, stayed on replica and TTFB p50 side by side with the ratio (bench --baseline).
# LEVELS (4,8,16), DURATION (3m per level, model time), TIME_SCALE (10), SEED (1) and OUT (the folder for
# the reports, state/bench-wardens) can be set; at the defaults it takes about three minutes. SEEDS=1,2,3,4
# runs that pair once per seed (reports in OUT/seed-N) and prints the medians over the seeds
# (scripts/bench-wardens-summary.py): one seed of this closed loop is chaotic, the median is not.
# SHARED_STATE=0 runs the two wardens without Redis, each placing conversations on its own: what the
# shared state prevents.
# ROUTING='{"rebalance": false}' (an admin PATCH body) changes every warden's routing before each run.
set -euo pipefail
bin=${1:-build/lm-warden}
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/common.sh
source "$root/scripts/common.sh"
levels=${LEVELS:-4,8,16}
duration=${DURATION:-3m}
time_scale=${TIME_SCALE:-10}
seeds=${SEEDS:-${SEED:-1}}
seed=
out=${OUT:-$root/state/bench-wardens}
tmp=$(mktemp -d)
demo_pid=
sim_url=
warden_urls=

stop_demo() {
  if [[ -n "$demo_pid" ]]; then
    kill -TERM "$demo_pid" 2>/dev/null || true
    wait "$demo_pid" 2>/dev/null || true
    demo_pid=
  fi
}
cleanup() {
  trap - EXIT INT TERM
  stop_demo
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo; echo "interrupted" >&2; exit 130' INT TERM

# `make run`'s setup with $1 wardens on free ports and a fresh state directory (no homes carried over);
# sets sim_url and warden_urls (comma-separated).
start_demo() {
  local n=$1 sim_port warden_port i
  sim_port=$(free_port 18000)
  warden_port=$(free_port 18080 "$n")
  SIM_PORT=$sim_port WARDEN_PORT=$warden_port WARDENS=$n TIME_SCALE=$time_scale SHARED_STATE=${SHARED_STATE:-1} \
    WARDEN_STATE_DIR="$tmp/state-$seed-$n" bash "$root/scripts/run-demo.sh" "$bin" >"$tmp/demo-$n.out" \
    2>"$tmp/demo-$n.err" &
  demo_pid=$!
  if wait_ready "$demo_pid" 600 grep -qs '^Ctrl-C stops' "$tmp/demo-$n.out"; then
    sim_url="http://127.0.0.1:${sim_port}"
    warden_urls="http://127.0.0.1:${warden_port}"
    for ((i = 1; i < n; i++)); do
      warden_urls+=",http://127.0.0.1:$((warden_port + i))"
    done
    return 0
  fi
  echo "the demo with ${n} warden(s) did not start; its log:" >&2
  tail -20 "$tmp/demo-$n.err" >&2
  return 1
}

# One bench run: label $1, report $2 (.json), then extra options.
run_bench() {
  local label=$1 report=$2
  shift 2
  "$bin" bench --url "$warden_urls" --model qwen3-4b-dp4 --metrics "${sim_url}/metrics" --levels "$levels" \
    --duration "$duration" --time-scale "$time_scale" --seed "$seed" --stayed-by replica --label "$label" \
    --out "$report" --records "${report%.json}.jsonl" --log-interval 30 "$@"
}

# Each warden's /metrics after a run (shared-state lookups, their timeouts and latency among them) into
# $out/$1-warden-N.metrics.
save_metrics() {
  local run=$1 url i=1
  for url in ${warden_urls//,/ }; do
    curl -s "${url}/metrics" >"$dir/${run}-warden-${i}.metrics" || true
    i=$((i + 1))
  done
}

# ROUTING, if set, on every warden of the current setup (the demo's admin token).
patch_routing() {
  local url
  [[ -n "${ROUTING:-}" ]] || return 0
  for url in ${warden_urls//,/ }; do
    curl -sf -X PATCH -H 'Authorization: Bearer demo' -d "$ROUTING" "${url}/api/models/qwen3-4b-dp4/routing" \
      >/dev/null || { echo "PATCH ${ROUTING} failed at ${url}" >&2; return 1; }
  done
}

# One warden, then two, at $seed; reports into $dir.
run_pair() {
  local two="two wardens"
  mkdir -p "$dir"
  echo "== one warden (${levels} sessions, ${duration} each, time scale ${time_scale}, seed ${seed})" >&2
  start_demo 1
  patch_routing
  run_bench "one warden" "$dir/one.json"
  save_metrics one
  stop_demo
  if [[ "${SHARED_STATE:-1}" == 0 ]]; then
    two="two wardens, no shared state"
    echo "== two wardens without shared state, each conversation's turns alternating between them" >&2
  else
    echo "== two wardens sharing homes through Redis, each conversation's turns alternating between them" >&2
  fi
  start_demo 2
  patch_routing
  run_bench "$two" "$dir/two.json" --baseline "$dir/one.json" | tee "$dir/two.txt"
  save_metrics two
  stop_demo
  grep -h '^lm_warden_shared_state_requests_total' "$dir"/two-warden-*.metrics >&2 || true
  echo "reports: $dir/one.json, $dir/two.json (records: .jsonl); the table above: $dir/two.txt;" \
    "the wardens' /metrics: $dir/*.metrics" >&2
}

dirs=()
for seed in ${seeds//,/ }; do
  dir=$out
  [[ "$seeds" == "$seed" ]] || dir="$out/seed-$seed"
  run_pair
  dirs+=("$dir")
done
if ((${#dirs[@]} > 1)); then
  echo "== medians over seeds ${seeds}" >&2
  python3 "$root/scripts/bench-wardens-summary.py" "${dirs[@]}" | tee "$out/summary.txt"
  echo "the table above: $out/summary.txt" >&2
fi
