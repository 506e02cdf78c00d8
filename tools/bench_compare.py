"""Lines up `kps bench --json` with the JSON of PyTorch's side of the benchmark (same run,
same workloads; its scripts are supplied from outside this repository, see
docs/performance.md): name, KPS and PyTorch GB/s, their ratio, the target and whether it
is met.

    python3 tools/bench_compare.py KPS.json TORCH.json [EAGER.json [TORCH_EXTRA.json ...]]"""
import json
import sys

# Single-call targets (GB/s) of the benchmark workloads KPS has so far.
TARGETS = {
    "copy_f32_256M": 2850, "add_f32_256M": 2900, "add_f16_256M": 2900,
    "add_bf16_256M": 2900, "add_f32_odd": 2850,
    "add_bcast_row_f32": 2800, "add_bcast_col_f32": 2800, "add_bcast_nchw_f16": 2500,
    "mul_f32_256M": 2850, "exp_f32_256M": 2850,
    "sum_all_f32_256M": 2950, "sum_last_f32_8Kx8K": 2850, "sum_first_f32_8Kx8K": 2850,
    "sum_mid_f32_256x1Kx256": 2800, "sum_last_f32_1Mx32": 2400, "sum_last_f16_8Kx8K": 2700,
    "max_last_f32_8Kx8K": 2850, "mean_hw_f16_64x256x56x56": 2700,
    "cumsum_f32_256M": 2500, "cumsum_last_f32_8Kx8K": 2500, "cumsum_first_f32_8Kx8K": 2500,
    "upsample2x_f32_16x64x256x256": 2800, "index_add_f32_1Mx256": 2700, "dot_f16_256M": 2850,
}
# Targets in milliseconds (sorts and top-k are compared by time).
TARGETS_MS = {
    "sort_f32_64M": 2.5, "argsort_rows_f32_64Kx128": 0.25, "argsort_rows_f32_4Kx4K": 0.45,
    "topk8_rows_f32_4Kx32K": 0.35,
}


def load(path):
    try:
        return {r["name"]: r for r in json.load(open(path))["results"]}
    except Exception as ex:  # a missing side is reported, not fatal
        print(f"(could not read {path}: {ex})")
        return {}


def gbs(r):
    return r.get("GBps", r.get("gbs")) if r else None


kps = load(sys.argv[1])
torch = load(sys.argv[2]) if len(sys.argv) > 2 else {}
eager = load(sys.argv[3]) if len(sys.argv) > 3 else {}
# More PyTorch rows in the same format (tools/bench_torch_extra.py: conv1d).
for extra in sys.argv[4:]:
    torch.update(load(extra))
# "b2b": KPS's GB/s over back-to-back calls (the kernels alone, launch gaps hidden), a
# diagnostic beside the single-call figure that the targets are about.
print(f"{'workload':28s} {'KPS GB/s':>9s} {'torch GB/s':>10s} {'ratio':>6s} {'target':>7s}  met  {'b2b':>7s}")
for name, r in kps.items():
    k = gbs(r)
    if k is None:
        continue
    t = gbs(torch.get(name))
    tgt = TARGETS.get(name)
    ratio = f"{k / t:6.3f}" if t else "   n/a"
    met = "" if tgt is None else ("yes" if k >= tgt else "NO")
    b2b = k * r["ms"] / r["b2b_ms"] if r.get("b2b_ms", -1) > 0 else float("nan")
    print(f"{name:28s} {k:9.1f} {t if t else float('nan'):10.1f} {ratio} {tgt or '':>7}  {met:3s}  {b2b:7.1f}")
    if name in TARGETS_MS:  # compared by time
        km, tm, tgt_ms = r.get("ms"), (torch.get(name) or {}).get("ms"), TARGETS_MS[name]
        print(f"  {'':26s} {km:9.4f} ms vs torch {tm if tm else float('nan'):.4f} ms, "
              f"target <= {tgt_ms} ms: {'yes' if km <= tgt_ms else 'NO'}")
print()
print("host cost per call (us):")
for name, r in list(kps.items()) + list(eager.items()):
    if "us" in r:
        print(f"  {name:28s} {r['us']:8.2f}")
