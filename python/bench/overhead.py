"""Host cost of one Python call: kps.ops.add on 1-element CUDA tensors beside torch.add and
the C++ eager kps::Call("add") on the same sizes, all in one process (`kps bench --filter
eager_add_f32_1` times the C++ call in its own process).

    PYTHONPATH=build/python python python/bench/overhead.py [--json FILE]

Prints, for each: single call (CUDA events around one call, synchronized between calls;
median) and back to back (N calls between two events, per call), in microseconds, and the
wall-clock time per call of N calls issued without waiting (the host's share).
"""

import argparse
import json
import statistics
import time

import torch

import kps


def single(fn, reps=200):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000)
    return statistics.median(times)


def back_to_back(fn, n=2000):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(n):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000 / n


def host(fn, n=20000):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) * 1e6 / n


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json")
    args = p.parse_args()
    x = torch.randn(1, device="cuda")
    cases = {
        "kps.ops.add": lambda: kps.ops.add(x, x),
        "kps.call add": lambda: kps.call("add", x, x),
        "torch.add": lambda: torch.add(x, x),
    }
    for fn in cases.values():  # warm up
        for _ in range(100):
            fn()
    rows = {}
    print(f"{'call':<16}{'single us':>12}{'b2b us':>10}{'host us':>10}")
    for name, fn in cases.items():
        r = {"single_us": single(fn), "b2b_us": back_to_back(fn), "host_us": host(fn)}
        rows[name] = r
        print(f"{name:<16}{r['single_us']:>12.2f}{r['b2b_us']:>10.2f}{r['host_us']:>10.2f}")
    cpp = kps._kps._eager_add_host_us(20000, "cuda")
    rows["C++ eager"] = {"host_us": cpp}
    print(f"{'C++ eager':<16}{'':>12}{'':>10}{cpp:>10.2f}")
    for name in ("kps.ops.add", "kps.call add"):
        print(f"{name} over C++ eager: {rows[name]['host_us'] - cpp:.2f} us host; "
              f"over torch.add: {rows[name]['b2b_us'] - rows['torch.add']['b2b_us']:+.2f} us back to back")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
