#!/usr/bin/env bash
# The GPU check: on the GPU machine (no network, no Abseil/glog/GTest installed), unpack
# the carried Debian packages, configure for sm_90, build, run every test with
# KPS_REQUIRE_GPU=1, and optionally the sanitizers and the benchmarks beside PyTorch.
#
#   tools/gpu_check.sh [--sanitize] [--bench] [--no-tests] [--asan] [--dist] [--dist-bench]
#                      [--dist-scale=S ...] [--dist-files] [--dist-real]
#
# --asan also builds the `asan` preset (ASan + UBSan host code) beside the GPU build and
# runs the whole CPU suite under it (CUDA hidden, so every GPU case skips), using the
# machine's cores instead of a 2-core one's.
#
# --dist (2+ GPUs, NCCL): the tests/dist binaries and the Python kps.dist tests under
# `kps launch` at 2 ranks and at every GPU (collectives_test and peer_death_test also with
# KPS_NCCL_BLOCKING=0, the nonblocking data path), then memcheck over the collectives and
# the distributed count (NCCL's own probing API errors not reported). --dist-bench: the
# collective bandwidth beside raw NCCL on both data paths and the distributed count at R-MAT 24
# (1 rank, 2, every GPU; 1-D, and 2-D on the square grid), each against the single-GPU count
# in the same run. --dist-scale=S (repeatable): the count at R-MAT S, one repetition, 1-D at 2
# ranks and every GPU and 2-D on the square grid. --dist-files: R-MAT 24 partitioned once to
# disk for every GPU, then counted from the files. --dist-real: the largest real networks of
# .data/graphs at every GPU, 1-D and 2-D.
#
# Needs .deps/debs (see docs/development.md) and, for --bench, the benchmark's PyTorch
# scripts, copied into .shared/bench (git-ignored; see docs/performance.md). Full logs go
# to $OUT (or ./gpu-logs); a short summary is printed last.
set -uo pipefail
cd "$(dirname "$0")/.."
sanitize=0 bench=0 tests=1 asan=0 dist=0 dist_bench=0 dist_files=0 dist_real=0
dist_scales=()
for a in "$@"; do
  case "$a" in
    --sanitize) sanitize=1 ;;
    --bench) bench=1 ;;
    --no-tests) tests=0 ;;
    --asan) asan=1 ;;
    --dist) dist=1 ;;
    --dist-bench) dist_bench=1 ;;
    --dist-scale=*) dist_scales+=("${a#--dist-scale=}") ;;
    --dist-files) dist_files=1 ;;
    --dist-real) dist_real=1 ;;
    *) echo "usage: $0 [--sanitize] [--bench] [--no-tests] [--asan] [--dist] [--dist-bench]" \
            "[--dist-scale=S ...] [--dist-files] [--dist-real]" >&2; exit 2 ;;
  esac
done
logs=${OUT:-$PWD/gpu-logs}
mkdir -p "$logs"
summary=()
say() { summary+=("$*"); echo "== $*"; }

deps=/opt/kps-deps
if [ ! -d $deps/usr ]; then
  mkdir -p $deps && for f in .deps/debs/*.deb; do dpkg -x "$f" $deps; done
fi
export LD_LIBRARY_PATH=$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$logs/gpu.txt" 2>&1
say "gpu: $(cat "$logs/gpu.txt")"

t0=$(date +%s)
# KPS_CMAKE_ARGS: extra configure arguments (e.g. -DKPS_BUILD_TOOLS=OFF). The machine's PyTorch
# environment has nanobind, so the Python package is built and tested there too.
if [ -x /opt/torch/.venv/bin/python ] && [[ "${KPS_CMAKE_ARGS:-}" != *Python_EXECUTABLE* ]]; then
  KPS_CMAKE_ARGS="${KPS_CMAKE_ARGS:-} -DPython_EXECUTABLE=/opt/torch/.venv/bin/python"
fi
if cmake --preset gpu ${KPS_CMAKE_ARGS:-} > "$logs/configure.log" 2>&1 && \
   cmake --build build-gpu -j "$(nproc)" > "$logs/build.log" 2>&1; then
  say "build: ok in $(( $(date +%s) - t0 )) s"
else
  say "build: FAILED (see build.log)"; tail -40 "$logs/build.log" "$logs/configure.log"
  printf '%s\n' "${summary[@]}"; exit 1
fi

rc=0
if ((asan)); then
  t0=$(date +%s)
  if cmake --preset asan -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$deps/usr \
       -DCMAKE_MODULE_PATH=$deps/usr/share/glog/cmake > "$logs/asan_configure.log" 2>&1 && \
     cmake --build build-asan -j "$(nproc)" > "$logs/asan_build.log" 2>&1; then
    say "asan build: ok in $(( $(date +%s) - t0 )) s"
    t0=$(date +%s)
    # custom_op_example links an uninstrumented program against the instrumented library.
    CUDA_VISIBLE_DEVICES= ctest --preset asan -j "$(nproc)" -E custom_op_example > "$logs/asan_ctest.log" 2>&1
    arc=$?
    say "asan tests (CPU): $(grep -E 'tests passed|tests failed' "$logs/asan_ctest.log" | tail -1) in $(( $(date +%s) - t0 )) s"
    if ((arc)); then rc=1; grep -E "ERROR: AddressSanitizer|runtime error|Failed|\*\*\*" "$logs/asan_ctest.log" | head -30; fi
  else
    say "asan build: FAILED (see asan_build.log)"; tail -30 "$logs/asan_build.log" "$logs/asan_configure.log"; rc=1
  fi
fi

if ((tests)); then
  # Most GPU tests spend their time in CPU references: half the cores keep the GPU busy. A
  # test past 300 s is reported as a timeout rather than holding the run.
  # At most 12 at once: the GPU tests share one GPU's memory (beside 2^31-element tests
  # they ran out of it at 16 on an 80 GB H100; those now run alone).
  jobs=$(( $(nproc) / 2 > 4 ? $(nproc) / 2 : 4 )); ((jobs > 12)) && jobs=12
  KPS_REQUIRE_GPU=1 ctest --test-dir build-gpu --output-on-failure -j "$jobs" \
    --timeout 300 > "$logs/ctest.log" 2>&1
  trc=$?
  skipped=$(grep -c "Skipped" "$logs/ctest.log" || true)
  say "tests (KPS_REQUIRE_GPU=1): $(grep -E 'tests passed|tests failed' "$logs/ctest.log" | tail -1), skipped lines: $skipped"
  if ((trc)); then rc=1; grep -E "Failed|FAILED|\*\*\*" "$logs/ctest.log" | head -30; fi
fi

if ((sanitize)); then
  # Whole binaries: their CPU cases cost seconds, and no GPU case can be missed. The
  # (tool, binary) pairs run 6 at a time: the sanitizer is CPU-bound, the GPU mostly idle.
  # LargeTensor* (2^31- and 2^32-element tensors) would take hours under it; they run
  # unsanitized in the test step, as do the *Determinism*/*Deterministic* tests (repeat
  # runs of the same large inputs: the kernels they repeat are sanitized elsewhere) and
  # index_add's *Larger* cases.
  # KPS_SANITIZE_BINS: a subset of the test binaries, e.g. "reduce_test functors_test".
  bins=${KPS_SANITIZE_BINS:-$(cd build-gpu/tests && ls primitives_*_test functors_test elementwise_test reduce_test scan_test \
                                sort_test compaction_test upsample_test index_add_test dot_test conv1d_test \
                                registry_test 2>/dev/null)}
  for tool in memcheck racecheck synccheck; do
    for t in $bins; do
      echo "$tool $t"
    done
  done | xargs -P 6 -L 1 bash -c 'KPS_REQUIRE_GPU=1 compute-sanitizer --tool $0 --error-exitcode 9 \
      build-gpu/tests/$1 --gtest_filter=-LargeTensor*:*Determinism*:*Deterministic*:*Larger* > "'"$logs"'/sanitize_$0_$1.log" 2>&1; echo $? > "'"$logs"'/sanitize_$0_$1.rc"'
  for tool in memcheck racecheck synccheck; do
    for t in $bins; do
      src=$(cat "$logs/sanitize_${tool}_$t.rc" 2>/dev/null || echo missing)
      errs=$(grep -E "(ERROR|RACECHECK) SUMMARY|FAILED  \]" "$logs/sanitize_${tool}_$t.log" | tr -s ' =' ' ' | tr '\n' ' ')
      say "sanitizer $tool $t: rc=$src ${errs:-no summary}"
      [ "$src" = 0 ] || rc=1
    done
  done
fi

gpus=$(nvidia-smi --list-gpus 2>/dev/null | wc -l)
export NCCL_NVLS_ENABLE=0  # NVLink multicast can take shared GPUs out of service
if ((dist)) && ((gpus < 2)); then say "dist: $gpus GPU(s), the multi-rank tests need 2"; rc=1; fi
if ((dist)) && ((gpus >= 2)); then
  py=$(sed -n 's/^Python_EXECUTABLE:[A-Z]*=//p' build-gpu/CMakeCache.txt)
  for n in $(printf '%s\n' 2 "$gpus" | sort -un); do
    for t in collectives_test dist_triangle_test peer_death_test; do
      timeout 600 build-gpu/kps launch --nproc "$n" -- build-gpu/tests/$t > "$logs/dist_${t}_$n.log" 2>&1
      drc=$?
      say "dist $t, $n ranks: rc=$drc, $(grep -c '^\[  PASSED  \]' "$logs/dist_${t}_$n.log") of $n ranks passed"
      ((drc)) && rc=1
    done
    # The same on the nonblocking data path (the default is the blocking twins).
    for t in collectives_test peer_death_test; do
      KPS_NCCL_BLOCKING=0 timeout 600 build-gpu/kps launch --nproc "$n" -- build-gpu/tests/$t \
        > "$logs/dist_${t}_nonblocking_$n.log" 2>&1
      drc=$?
      say "dist $t, KPS_NCCL_BLOCKING=0, $n ranks: rc=$drc," \
        "$(grep -c '^\[  PASSED  \]' "$logs/dist_${t}_nonblocking_$n.log") of $n ranks passed"
      ((drc)) && rc=1
    done
    if [ -n "$py" ] && [ -d build-gpu/python ]; then
      PYTHONPATH=build-gpu/python timeout 600 build-gpu/kps launch --nproc "$n" -- "$py" -m pytest -q \
        -p no:cacheprovider python/tests/test_dist.py > "$logs/dist_pytest_$n.log" 2>&1
      drc=$?
      say "dist pytest test_dist.py, $n ranks: rc=$drc, $(grep -E '[0-9]+ passed' "$logs/dist_pytest_$n.log" | tail -1)"
      ((drc)) && rc=1
    fi
  done
  for t in collectives_test dist_triangle_test; do
    KPS_REQUIRE_GPU=1 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
      build-gpu/tests/$t > "$logs/dist_memcheck_$t.log" 2>&1
    drc=$?
    say "dist memcheck $t (1 rank): rc=$drc $(grep 'ERROR SUMMARY' "$logs/dist_memcheck_$t.log" | tr -s ' =' ' ')"
    ((drc)) && rc=1
  done
fi
# 2-D on the square grid of every GPU, or 1 x P when P is not a square.
grid=$(python3 -c "import math; g=$gpus; r=math.isqrt(g); print(f'{r}x{r}' if r * r == g else f'1x{g}')")
# One distributed count under the launcher, appended to bench_dist_triangle.md:
# count_spec TITLE RANKS ARGS...
count_spec() {
  local title=$1 n=$2
  shift 2
  echo "### $title, $n ranks, $*" >> "$logs/bench_dist_triangle.md"
  timeout 600 build-gpu/kps launch --nproc "$n" -- build-gpu/tools/bench_dist_triangle "$@" \
    >> "$logs/bench_dist_triangle.md" 2>&1 || rc=1
}
if ((dist_bench)) && ((gpus >= 2)); then
  for n in $(printf '%s\n' 2 "$gpus" | sort -un); do
    # Both data paths: the nonblocking world's tables, then a blocking duplicate's.
    timeout 600 build-gpu/kps launch --nproc "$n" -- build-gpu/tools/bench_collectives --max-bytes 4G \
      --data-path both > "$logs/bench_collectives_$n.md" 2>&1 || rc=1
    awk '/^# bench_collectives/ {print} /host us\/call/ {h = 1} h && /^$/ {h = 0} h {print}' \
      "$logs/bench_collectives_$n.md"
  done
  # 1-D also with the exchange on the host (the default is on the GPU: device_exchange).
  specs=("1 --scheme 1d" "2 --scheme 1d" "2 --scheme 1d --host-exchange")
  ((gpus > 2)) && specs+=("$gpus --scheme 1d" "$gpus --scheme 1d --host-exchange")
  specs+=("$gpus --scheme 2d --grid $grid")
  for spec in "${specs[@]}"; do
    set -- $spec
    n=$1
    shift
    count_spec "R-MAT 24" "$n" --inmemory --scale 24 --reps 2 --verify "$@"
  done
fi
if ((gpus >= 2)); then
  scale_specs=("2 --scheme 1d")
  ((gpus > 2)) && scale_specs+=("$gpus --scheme 1d")
  scale_specs+=("$gpus --scheme 2d --grid $grid")
  for s in ${dist_scales[@]+"${dist_scales[@]}"}; do
    for spec in "${scale_specs[@]}"; do
      set -- $spec
      n=$1
      shift
      count_spec "R-MAT $s" "$n" --inmemory --scale "$s" --reps 1 --verify "$@"
    done
  done
  if ((dist_files)); then
    for scheme in "1d" "2d --grid $grid"; do
      dir=/tmp/kps-rmat24.p$gpus
      rm -rf "$dir"
      echo "### R-MAT 24 partitioned to disk, $gpus blocks, $scheme" >> "$logs/bench_dist_triangle.md"
      timeout 600 build-gpu/tools/bench_dist_triangle --partition --scale 24 --ranks "$gpus" --dir "$dir" \
        --scheme $scheme >> "$logs/bench_dist_triangle.md" 2>&1 || rc=1
      count_spec "R-MAT 24 from files" "$gpus" --count --dir "$dir" --reps 2 --verify
      rm -rf "$dir"
    done
  fi
  if ((dist_real)); then
    for g in as-22july06 astro-ph cond-mat-2005 email-Enron; do
      [ -f ".data/graphs/$g.gt.gz" ] || continue
      for scheme in "1d" "2d --grid $grid"; do
        count_spec "$g" "$gpus" --inmemory --graph ".data/graphs/$g.gt.gz" --reps 2 --verify --scheme $scheme
      done
    done
  fi
fi
[ -f "$logs/bench_dist_triangle.md" ] && grep -E "^###|^\| [0-9]+ \| [a-z]|^verify" "$logs/bench_dist_triangle.md"

if ((bench)); then
  build-gpu/kps bench --json "$logs/kps_bench.json" > "$logs/kps_bench.txt" 2>&1 || rc=1
  cat "$logs/kps_bench.txt"
  # PyTorch's side: the benchmark's PyTorch scripts, copied into .shared/bench (git-ignored).
  if [ -f .shared/bench/torch_anchor.py ]; then
    names=$(python3 -c "import json; print(' '.join(r['name'] for r in json.load(open('$logs/kps_bench.json'))['results'] if 'GBps' in r or 'ms' in r))" 2>/dev/null)
    OUT=$logs python3 .shared/bench/torch_anchor.py $names > "$logs/torch_anchor.txt" 2>&1 || rc=1
    python3 tools/bench_torch_eager.py > "$logs/torch_eager.json" 2> "$logs/torch_eager.err" || true
    OUT=$logs python3 tools/bench_torch_extra.py > "$logs/torch_extra.txt" 2>&1 || true  # conv1d
    python3 tools/bench_compare.py "$logs/kps_bench.json" "$logs/torch_anchor.json" "$logs/torch_eager.json" \
      "$logs/torch_extra.json" > "$logs/compare.txt" 2>&1
    cat "$logs/compare.txt"
  else
    say "bench: .shared/bench missing, PyTorch side not run"
  fi
fi

echo
echo "==== summary ===="
printf '%s\n' "${summary[@]}"
exit $rc
