"""Host cost of one eager PyTorch call on tiny CUDA tensors, measured the way `kps bench`
measures KPS's: many calls back to back, host wall time per call (sync once at the
end), and per call with a synchronize after each. Prints JSON."""
import json
import statistics
import time

import torch


def per_call_us(fn, n=10000, sync_each=False, rounds=7):
    """Median over `rounds` of the per-call time of n back-to-back calls (as kps bench)."""
    for _ in range(100):
        fn()
    per_call = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            fn()
            if sync_each:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        per_call.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(per_call)


a = torch.randn(1, device="cuda")
b = torch.randn(1, device="cuda")
c = torch.empty_like(a)
res = {
    "torch_add_out_1": per_call_us(lambda: torch.add(a, b, out=c)),
    "torch_add_alloc_1": per_call_us(lambda: torch.add(a, b)),
    "torch_add_alloc_1_sync": per_call_us(lambda: torch.add(a, b), sync_each=True),
}
print(json.dumps({"results": [{"name": k, "us": v} for k, v in res.items()]}))
