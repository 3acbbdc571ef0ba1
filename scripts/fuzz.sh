#!/usr/bin/env bash
# Runs each libFuzzer target for a given time on its corpus: `make fuzz` (FUZZ_SECONDS per target).
#   scripts/fuzz.sh BUILD_DIR SECONDS [TARGET...]
# The corpus in fuzz/corpus/NAME/ is read, never written: new inputs go to BUILD_DIR/fuzz-work/NAME/, and
# with FUZZ_MERGE=1 the ones that add coverage are merged back into fuzz/corpus/NAME/ at the end.
# A crash leaves its input in BUILD_DIR/fuzz-work/crash-NAME-*; the script then exits non-zero.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$1
seconds=$2
shift 2
targets=("$@")
((${#targets[@]})) || targets=(request sse prometheus usage config kv_events)

failed=0
printf '%-11s %12s %8s %7s %7s %8s %s\n' target execs exec/s cov ft corpus result
for t in "${targets[@]}"; do
  bin=$build/fuzz/${t}_fuzz
  work=$build/fuzz-work
  mkdir -p "$work/$t"
  log=$work/$t.log
  "$bin" -max_total_time="$seconds" -max_len=16384 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$work/crash-$t-" "$work/$t" "$here/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)
  [ -n "$done_line" ] || done_line=$(grep -E '^#[0-9]+[[:space:]]' "$log" | tail -1)
  execs=$(grep -oP 'stat::number_of_executed_units: +\K[0-9]+' "$log")
  rate=$(grep -oP 'stat::average_exec_per_sec: +\K[0-9]+' "$log")
  cov=$(grep -oP 'cov: \K[0-9]+' <<<"$done_line")
  ft=$(grep -oP 'ft: \K[0-9]+' <<<"$done_line")
  corp=$(grep -oP 'corp: \K[0-9]+' <<<"$done_line")
  result=ok
  if ((rc != 0)); then
    result="CRASH (exit $rc): see $log"
    failed=1
  fi
  printf '%-11s %12s %8s %7s %7s %8s %s\n' "$t" "${execs:--}" "${rate:--}" "${cov:--}" "${ft:--}" \
    "${corp:--}" "$result"
  if [ "${FUZZ_MERGE:-0}" = 1 ] && ((rc == 0)); then
    "$bin" -merge=1 -max_len=16384 "$here/fuzz/corpus/$t" "$work/$t" >"$work/$t.merge.log" 2>&1 ||
      { echo "merge of $t failed: see $work/$t.merge.log"; failed=1; }
  fi
done
exit $failed
