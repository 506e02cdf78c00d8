#!/usr/bin/env bash
# Configures and builds KPS in build/ (Release). Extra arguments go to CMake's configure.
set -euo pipefail
cd "$(dirname "$0")/.."
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
python=()
[ -x .venv/bin/python ] && python=(-DPython_EXECUTABLE="$PWD/.venv/bin/python")
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${python[@]}" "$@"
elif [ $# -gt 0 ] || { ((${#python[@]})) && ! grep -q "^Python_EXECUTABLE:.*=$PWD/.venv/bin/python$" build/CMakeCache.txt; }; then
  cmake -S . -B build "${python[@]}" "$@"
fi
cmake --build build -j "$(nproc)"
