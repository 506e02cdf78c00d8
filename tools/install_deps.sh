#!/usr/bin/env bash
# Installs what building KPS needs and is missing: Debian packages, and a Python virtual
# environment in .venv with the Python module's build and test dependencies from PyPI
# (tools/python-requirements.txt). The CUDA toolkit (nvcc, CCCL/CUB) must already be
# installed: it is not a Debian package of the version KPS needs.
set -euo pipefail

packages=(cmake ninja-build g++ libabsl-dev libgoogle-glog-dev libgtest-dev libgmock-dev zlib1g-dev python3-dev
          python3-venv)
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

# The Python module's dependencies (nanobind to build it; NumPy, ml_dtypes, pytest, JAX, SciPy and networkx to
# test it), in .venv, which tools/build.sh hands to CMake.
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ ! -x "$root/.venv/bin/python" ]; then
  echo "install_deps: creating $root/.venv"
  python3 -m venv "$root/.venv"
fi
if ! "$root/.venv/bin/python" -c "import nanobind, numpy, ml_dtypes, pytest, jax, scipy, networkx" >/dev/null 2>&1; then
  echo "install_deps: installing the Python dependencies into .venv"
  "$root/.venv/bin/python" -m pip install -q --disable-pip-version-check -r "$root/tools/python-requirements.txt"
fi

# NCCL for the collective ops (KPS_WITH_NCCL=AUTO finds it), on machines with a GPU only:
# NVIDIA's wheel for the toolkit's CUDA major version, into .venv, unless a system NCCL or
# the wheel is already there.
if nvidia-smi -L >/dev/null 2>&1 && [ ! -f /usr/include/nccl.h ] && [ ! -f /usr/local/include/nccl.h ] &&
   ! ls "$root"/.venv/lib/python3*/site-packages/nvidia/nccl/include/nccl.h >/dev/null 2>&1; then
  cuda_major="$(nvcc --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')"
  echo "install_deps: installing NCCL (nvidia-nccl-cu$cuda_major) into .venv"
  "$root/.venv/bin/python" -m pip install -q --disable-pip-version-check "nvidia-nccl-cu$cuda_major>=2.18" ||
    echo "install_deps: could not install NCCL (the collective ops will report it missing)" >&2
fi

# Real matrices for the sparse tests (SuiteSparse's pores_1, lund_a and jgl009, as Debian's
# r-cran-matrix ships them), unpacked from the package without installing it. The tests
# that read them skip, saying why, when this could not fetch them.
data="$root/.data/matrices"
if [ ! -f "$data/pores_1.mtx" ] && command -v apt-get >/dev/null 2>&1; then
  tmp="$(mktemp -d)"
  if (cd "$tmp" && apt-get download -qq r-cran-matrix >/dev/null 2>&1) &&
     dpkg -x "$tmp"/r-cran-matrix_*.deb "$tmp/x" 2>/dev/null; then
    mkdir -p "$data"
    cp "$tmp"/x/usr/lib/R/library/Matrix/external/{pores_1,lund_a,jgl009}.mtx "$data/"
  else
    echo "install_deps: could not fetch r-cran-matrix's test matrices (the tests that read them will skip)" >&2
  fi
  rm -rf "$tmp"
fi

# Real networks for the graph readers (io/graph.h): the collection that Debian's
# python3-graph-tool bundles as graph-tool binary files (.gt.gz; karate, lesmis, power,
# email-Enron, pgp-strong-2009, ...; 14 MB), unpacked from the package (a 45 MB download)
# without installing it. The tests that read them skip, saying why, when this failed.
data="$root/.data/graphs"
if [ ! -f "$data/karate.gt.gz" ] && command -v apt-get >/dev/null 2>&1; then
  tmp="$(mktemp -d)"
  collection="$tmp/x/usr/lib/python3/dist-packages/graph_tool/collection"
  if (cd "$tmp" && apt-get download -qq python3-graph-tool >/dev/null 2>&1) &&
     dpkg -x "$tmp"/python3-graph-tool_*.deb "$tmp/x" 2>/dev/null && [ -f "$collection/karate.gt.gz" ]; then
    mkdir -p "$data"
    cp "$collection"/*.gt.gz "$data/"
  else
    echo "install_deps: could not fetch python3-graph-tool's networks (the tests that read them will skip)" >&2
  fi
  rm -rf "$tmp"
fi
