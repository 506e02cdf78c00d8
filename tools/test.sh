#!/usr/bin/env bash
# The README's second command: installs what is missing, builds, and runs every test
# (GPU tests skip without a GPU unless KPS_REQUIRE_GPU=1).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install_deps.sh
tools/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
