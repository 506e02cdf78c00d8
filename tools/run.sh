#!/usr/bin/env bash
# The README's first command: installs what is missing, builds, and runs KPS's main
# job with the `kps` tool -- on the GPU when there is one, on the CPU backend otherwise.
# With arguments, runs `kps ARGS...` instead (e.g. tools/run.sh bench --json out.json).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install_deps.sh
tools/build.sh
kps=build/kps
if [ $# -gt 0 ]; then
  exec "$kps" "$@"
fi
"$kps" list
# --device auto: cuda when a GPU is usable, else cpu; --check compares with the CPU kernel.
"$kps" run add --shape 1000003 --dtype float32 --attr alpha=2 --device auto --check
"$kps" run mul --shape 4096,257 --dtype bfloat16 --device auto --check
if nvidia-smi -L >/dev/null 2>&1; then
  "$kps" bench
else
  echo "run.sh: no GPU here, so no benchmark; the CPU backend ran the ops above."
fi
