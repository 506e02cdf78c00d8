"""PyTorch's side of the `kps bench` rows that the benchmark workloads lack (so PyTorch's
side of the benchmark, scripts supplied from outside this repository, see
docs/performance.md, does not time them): conv1d_f32_16M_k127, the full linear
convolution of 2^24 samples with a 127-tap filter. Timed as that side times its rows
(CUDA events around one call, median of 30 after 5 warm-ups), GB/s by the same rule as
`kps bench` (inputs read once, output written once); prints a table and writes
torch_extra.json to $OUT (or .) in the same format, for tools/bench_compare.py's extra
argument.

torch.nn.functional.conv1d is a cross-correlation, so the filter is flipped to give the
true convolution (numpy.convolve's, and KPS's); padding m - 1 gives the full output.
"""
import json
import os
import statistics
import sys

import torch

dev = "cuda"
torch.manual_seed(0)

# name, n (signal), m (taps), dtype
EXTRA = [("conv1d_f32_16M_k127", 1 << 24, 127, torch.float32)]


def make_conv1d(n, m, dtype):
    x = torch.randn(1, 1, n, device=dev, dtype=dtype)
    w = torch.randn(m, device=dev, dtype=dtype)
    wf = w.flip(0).view(1, 1, m).contiguous()
    return lambda: torch.nn.functional.conv1d(x, wf, padding=m - 1)


def time_ms(fn, reps=30, warm=5):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    return statistics.median(ts)


def main():
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "results": []}
    names = set(sys.argv[1:])
    for name, n, m, dtype in EXTRA:
        if names and name not in names:
            continue
        try:
            fn = make_conv1d(n, m, dtype)
            assert fn().shape[-1] == n + m - 1
            ms = time_ms(fn)
            size = torch.tensor([], dtype=dtype).element_size()
            gbs = (n + m + (n + m - 1)) * size / ms / 1e6
            out["results"].append({"name": name, "ms": ms, "GBps": gbs})
            print(f"{name:34s} {ms:9.4f} ms {gbs:9.1f} GB/s", flush=True)
        except Exception as ex:  # report, keep going
            print(f"{name:34s} FAILED {ex}", flush=True)
            out["results"].append({"name": name, "error": str(ex)})
        torch.cuda.empty_cache()
    path = os.path.join(os.environ.get("OUT", "."), "torch_extra.json")
    json.dump(out, open(path, "w"), indent=1)


if __name__ == "__main__":
    main()
