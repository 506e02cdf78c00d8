#!/usr/bin/env python3
"""PyTorch's side of `kps bench --sweep`: times the same cases in PyTorch, the same way.

    build/kps bench --sweep --cases cases.json          # the case list (no GPU needed)
    build/kps bench --sweep --json kps.json             # KPS's times
    python3 tools/bench_sweep_torch.py cases.json torch.json
    python3 tools/sweep_report.py cases.json kps.json torch.json --png sweep.png

Inputs are made as KPS's bench makes them: standard normal values converted to the
dtype (integers truncate, bool is x != 0), transposed cases built with the last two dims
swapped and transposed back. single: CUDA events around one call on the current stream,
median of --reps after --warmup calls; b2b: --reps calls between two events, per call.
Each call allocates its output, as a kps::Call does. Writes {"results": [{"name", "ms",
"GBps", "b2b_ms"} or {"name", "error"}]}.
"""
import argparse
import json
import os
import statistics
import sys

import torch
import torch.nn.functional as F

DTYPES = {
    "bool": torch.bool, "int8": torch.int8, "uint8": torch.uint8, "int16": torch.int16,
    "int32": torch.int32, "int64": torch.int64, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64,
}


def make_input(shape, dtype, transposed, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    dims = list(shape)
    swap = transposed and len(dims) >= 2
    if swap:
        dims[-2], dims[-1] = dims[-1], dims[-2]
    x = torch.randn(dims, device="cuda", generator=gen)
    x = (x != 0) if dtype == torch.bool else x.to(dtype)
    return x.transpose(-2, -1) if swap else x


def the_call(case, inputs):
    """A function of no arguments that runs the case's op in PyTorch."""
    op, attrs = case["op"], case.get("attrs", {})
    dims, dim = case.get("dims"), case.get("dim")
    x = inputs[0]
    y = inputs[1] if len(inputs) > 1 else None
    if op == "add":
        return lambda: torch.add(x, y)
    if op == "copy":
        return lambda: torch.empty_like(x, memory_format=torch.contiguous_format).copy_(x)
    if op in ("exp", "sigmoid"):
        f = getattr(torch, op)
        return lambda: f(x)
    if op == "gelu":
        return lambda: F.gelu(x)
    if op == "silu":
        return lambda: F.silu(x)
    if op == "pow_scalar":
        return lambda: torch.pow(x, attrs["other"])
    if op == "cast":
        to = DTYPES[attrs["dtype"]]
        return lambda: x.to(to)
    if op == "sum":
        return lambda: torch.sum(x, dim=dims)
    if op == "mean":
        return lambda: torch.mean(x, dim=dims)
    if op == "max":
        return lambda: torch.amax(x, dim=dims)
    if op == "any":
        return lambda: torch.any(x, dim=dims[0])
    if op == "argmax":
        return lambda: torch.argmax(x, dim=dims[0])
    if op == "var":
        return lambda: torch.var(x, dim=dims, correction=1)
    if op == "cumsum":
        return lambda: torch.cumsum(x, dim=dim)
    if op == "cummax":
        return lambda: torch.cummax(x, dim=dim)
    if op == "logcumsumexp":
        return lambda: torch.logcumsumexp(x, dim=dim)
    if op == "sort":
        return lambda: torch.sort(x, dim=dim)
    if op == "argsort":
        return lambda: torch.argsort(x, dim=dim)
    if op == "topk":
        return lambda: torch.topk(x, attrs["k"], dim=dim)
    if op == "nonzero":
        return lambda: torch.nonzero(x)
    if op == "upsample_nearest2d":
        s = attrs["scale"]
        return lambda: F.interpolate(x, scale_factor=s, mode="nearest")
    if op == "dot":
        return lambda: torch.dot(x, y)
    if op == "index_add":  # inputs: x, source (the index is made here, as KPS's side makes it)
        index = torch.randint(0, x.shape[0], (y.shape[0],), device="cuda")
        if attrs.get("deterministic"):
            def det():
                torch.use_deterministic_algorithms(True)
                try:
                    return torch.index_add(x, 0, index, y)
                finally:
                    torch.use_deterministic_algorithms(False)
            return det
        return lambda: torch.index_add(x, 0, index, y)
    if op == "conv1d":  # KPS's conv1d is the full convolution: flip the filter, pad m - 1
        m = y.numel()
        w = y.flip(0).view(1, 1, m)
        return lambda: F.conv1d(x.view(1, 1, -1), w, padding=m - 1)
    raise ValueError(f"no PyTorch twin for op '{op}'")


def time_case(fn, reps, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    singles = []
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        singles.append(start.elapsed_time(stop))
    start.record()
    for _ in range(reps):
        fn()
    stop.record()
    stop.synchronize()
    return statistics.median(singles), start.elapsed_time(stop) / reps


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cases")
    p.add_argument("out")
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--filter", default="")
    a = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench_sweep_torch.py: no CUDA device")
    cases = json.load(open(a.cases))["cases"]
    results = []
    for i, case in enumerate(cases):
        if a.filter not in case["name"]:
            continue
        inputs = None
        try:
            dtype = DTYPES[case["dtype"]]
            inputs = [make_input(s, dtype, case["transposed"], 16 * i + k) for k, s in enumerate(case["shapes"])]
            ms, b2b = time_case(the_call(case, inputs), a.reps, a.warmup)
            r = {"name": case["name"], "ms": ms, "GBps": case["bytes"] / ms / 1e6, "b2b_ms": b2b}
            print(f"{case['name']:60s} {ms:9.4f} ms {r['GBps']:9.1f} GB/s  (b2b {b2b:9.4f} ms)", flush=True)
        except Exception as e:  # noqa: BLE001 (one case's failure must not stop the sweep)
            r = {"name": case["name"], "error": str(e).splitlines()[0] if str(e) else type(e).__name__}
            print(f"{case['name']:60s} FAILED {r['error']}", flush=True)
        results.append(r)
        del inputs
        torch.cuda.empty_cache()
    with open(a.out + ".tmp", "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "results": results}, f, indent=1)
    os.replace(a.out + ".tmp", a.out)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
