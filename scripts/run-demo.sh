#!/usr/bin/env bash
# Demo: 4 simulated data-parallel ranks of the reference host on port 8000.
set -euo pipefail
bin=${1:-build/lm-warden}
port=${SIM_PORT:-8000}
echo "Simulated vLLM (4 DP ranks, preset a4000-qwen3-4b) at http://127.0.0.1:${port}"
exec "$bin" sim --port "$port" --data-parallel-size 4 --preset a4000-qwen3-4b \
  --served-model-name Qwen/Qwen3-4B-Instruct-2507
