#!/usr/bin/env bash
# Installs what building KPS needs and is missing, from the machine's Debian packages.
# The CUDA toolkit (nvcc, CCCL/CUB) must already be installed: it is not a Debian
# package of the version KPS needs.
set -euo pipefail

packages=(cmake ninja-build g++ libabsl-dev libgoogle-glog-dev libgtest-dev libgmock-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install_deps: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v nvcc >/dev/null 2>&1; then
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
    if [ -x "$d/nvcc" ]; then
      echo "install_deps: nvcc is in $d but not on PATH; add it: export PATH=$d:\$PATH" >&2
      exit 1
    fi
  done
  echo "install_deps: the CUDA toolkit (nvcc) is missing; install CUDA 12.4 or newer from NVIDIA" >&2
  exit 1
fi
