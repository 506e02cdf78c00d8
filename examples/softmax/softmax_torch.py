#!/usr/bin/env python3
"""PyTorch's side of softmax_bench: torch.softmax(x, dim=-1), torch.sum(x, dim=1) as the
row-read floor and torch.neg(x) as the read-write ceiling, on the same [N, C] shapes
(256 MiB of float32; the same element counts in bfloat16), timed the same way and
printed in the same format:

  op=torch_softmax dtype=float32 shape=[65536,1024] single_ms=... single_GBps=... b2b_ms=... b2b_GBps=...

single: CUDA events around one eager call on the current (default) stream, median of 30
after 5 warm-ups; b2b: 30 calls between two events, per call.
"""
import statistics

import torch

WARMUP = 5
REPS = 30
NUMEL = (256 << 20) // 4  # 256 MiB of float32
NAMES = {torch.float32: "float32", torch.bfloat16: "bfloat16"}


def time_call(fn):
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    singles = []
    for _ in range(REPS):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        singles.append(start.elapsed_time(stop))
    start.record()
    for _ in range(REPS):
        fn()
    stop.record()
    stop.synchronize()
    return statistics.median(singles), start.elapsed_time(stop) / REPS


def report(op, dtype, rows, cols, nbytes, single_ms, b2b_ms):
    print(f"op={op} dtype={NAMES[dtype]} shape=[{rows},{cols}] single_ms={single_ms:.4f} "
          f"single_GBps={nbytes / single_ms / 1e6:.1f} b2b_ms={b2b_ms:.4f} b2b_GBps={nbytes / b2b_ms / 1e6:.1f}",
          flush=True)


def main():
    if not torch.cuda.is_available():
        raise SystemExit("softmax_torch.py: no CUDA device")
    for dtype in (torch.float32, torch.bfloat16):
        elem = torch.tensor([], dtype=dtype).element_size()
        for cols in (1024, 2048, 4096, 8192, 16384):
            rows = NUMEL // cols
            x = torch.randn(rows, cols, device="cuda", dtype=dtype)
            numel = rows * cols
            single, b2b = time_call(lambda: torch.softmax(x, dim=-1))
            report("torch_softmax", dtype, rows, cols, 2 * numel * elem, single, b2b)
            single, b2b = time_call(lambda: torch.sum(x, dim=1))
            report("torch_sum_dim1", dtype, rows, cols, numel * elem + rows * elem, single, b2b)
            single, b2b = time_call(lambda: torch.neg(x))
            report("torch_neg", dtype, rows, cols, 2 * numel * elem, single, b2b)
            del x


if __name__ == "__main__":
    main()
