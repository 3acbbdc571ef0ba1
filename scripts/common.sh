# shellcheck shell=bash
# Helpers shared by the demo scripts (sourced, not run).

# Runs the command $3... every 0.1 s until it succeeds (0), process $1 has exited (1) or $2 tries have
# failed (2): waiting for a child process to be ready.
wait_ready() {
  local pid=$1 tries=$2
  shift 2
  for _ in $(seq 1 "$tries"); do
    if "$@"; then
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      return 1
    fi
    sleep 0.1
  done
  return 2
}

# Waits (bounded) for the "listening on http://HOST:PORT" line in file $1 of process $2 (named $3 in errors)
# and prints the URL.
wait_listening() {
  local file=$1 pid=$2 name=$3 rc=0
  wait_ready "$pid" 300 grep -qs 'listening on http://[^ ]*' "$file" || rc=$?
  case $rc in
    0) grep -o 'listening on http://[^ ]*' "$file" | head -1 | sed 's/listening on //' ;;
    1) echo "$name exited before listening" >&2 ;;
    *) echo "$name did not start listening within 30 s" >&2 ;;
  esac
  return $((rc > 0))
}

# The first of $2 (default 1) consecutive loopback ports nothing answers on, from $1 upwards.
free_port() {
  local port=$1 count=${2:-1} i
  while true; do
    for ((i = 0; i < count; i++)); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$((port + i))") 2>/dev/null; then
        break
      fi
    done
    if ((i == count)); then
      echo "$port"
      return 0
    fi
    port=$((port + i + 1))
  done
}
