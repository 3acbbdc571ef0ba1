#!/usr/bin/env bash
# Installs every Debian and npm dependency of LM Warden. Idempotent: a second run checks and exits quietly.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

debs=(
  build-essential cmake ninja-build ccache clang-format pkg-config
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev libsqlite3-dev libxxhash-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev  # make fuzz: libclang-rt-14-dev holds libFuzzer (-fsanitize=fuzzer)
  chromium nginx-light curl
  tmux  # the interactive Claude Code test types into a terminal
  libhiredis-dev redis-server  # shared state of several wardens (state.redis) and its tests
  prometheus haproxy  # deploy/: the dashboard and alert rules' test, the load balancer's test
  dpkg-dev lintian   # make deb: dpkg-shlibdeps for the package's dependencies, lintian to check it
  libssl-dev openssl  # TLS on the listener and to https:// engines; the TLS tests make their certificates
  libzmq3-dev cppzmq-dev  # vLLM's KV cache events (ZMQ PUB/SUB): the sim publishes them, the warden subscribes
  python3-zmq python3-msgpack  # an independent KV events publisher in the tests (run with /usr/bin/python3)
)

missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# Node.js 20 with npm may come from outside Debian (it bundles npm); install Debian's only when absent.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm packages: SDK conformance clients, browser driver and chart library (see package.json).
if [ -f "$here/package.json" ]; then
  if [ ! -d "$here/node_modules" ] || [ "$here/package.json" -nt "$here/node_modules/.stamp" ]; then
    echo "setup: installing npm packages"
    (cd "$here" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
    touch "$here/node_modules/.stamp"
  fi
fi
