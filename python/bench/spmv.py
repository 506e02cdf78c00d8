"""kps.ops.spmv (check=False) beside torch's CSR matrix-vector product (cuSPARSE's SpMV) in
one process, float32 values, int32 indices, on a few matrix classes: a 2-D 5-point stencil,
random rows of 1-29 entries, power-law rows, 95% empty rows, one row of 50M entries, a
tall matrix of 1000 columns. Prints single call (events around one call, sync between;
median of 20) and back to back (50 calls between two events), in ms, and KPS's GB/s.

    PYTHONPATH=build/python python python/bench/spmv.py
"""
import numpy as np
import torch

import kps

def csr_from_rows(rows, n, gen):
    lengths = np.asarray(rows, dtype=np.int64)
    indptr = np.zeros(len(lengths) + 1, np.int64); np.cumsum(lengths, out=indptr[1:])
    nnz = int(indptr[-1])
    cols = gen.integers(0, n, nnz, dtype=np.int64)
    # sort columns within rows (cuSPARSE wants sorted CSR)
    rid = np.repeat(np.arange(len(lengths)), lengths)
    order = np.lexsort((cols, rid)); cols = cols[order]
    return indptr, cols

def stencil2d(k):
    # 5-point on k x k
    n = k * k; idx = np.arange(n)
    r, c = idx // k, idx % k
    cols = []; rows = []
    for dr, dc in [(-1,0),(0,-1),(0,0),(0,1),(1,0)]:
        ok = (r+dr >= 0) & (r+dr < k) & (c+dc >= 0) & (c+dc < k)
        rows.append(idx[ok]); cols.append((r[ok]+dr)*k + c[ok]+dc)
    rows = np.concatenate(rows); cols = np.concatenate(cols)
    order = np.lexsort((cols, rows)); rows, cols = rows[order], cols[order]
    indptr = np.zeros(n+1, np.int64); np.add.at(indptr, rows+1, 1); indptr = np.cumsum(indptr)
    return indptr, cols, n

def bench(fn, reps=50):
    for _ in range(5): fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    single = []
    for _ in range(20):
        torch.cuda.synchronize(); s.record(); fn(); e.record(); e.synchronize(); single.append(s.elapsed_time(e))
    s.record()
    for _ in range(reps): fn()
    e.record(); e.synchronize()
    return float(np.median(single)), s.elapsed_time(e) / reps

gen = np.random.default_rng(1)
cases = {}
ip, cl, n = stencil2d(4000); cases["stencil5_16M"] = (ip, cl, n)
m = 4_000_000; ip, cl = csr_from_rows(gen.integers(1, 30, m), m, gen); cases["banded-ish_random_4M"] = (ip, cl, m)
m = 2_000_000; deg = np.minimum((gen.pareto(1.2, m) + 1).astype(np.int64) * 4, 200000); ip, cl = csr_from_rows(deg, m, gen); cases["powerlaw_2M"] = (ip, cl, m)
m = 4_000_000; rows = np.where(gen.random(m) < 0.05, gen.integers(1, 40, m), 0); ip, cl = csr_from_rows(rows, m, gen); cases["empty_rows_4M"] = (ip, cl, m)
rows = np.ones(100000, np.int64); rows[5] = 50_000_000; ip, cl = csr_from_rows(rows, 1_000_000, gen); cases["one_long_row"] = (ip, cl, 1_000_000)
m = 8_000_000; ip, cl = csr_from_rows(np.full(m, 8), 1000, gen); cases["tall_8Mx1000"] = (ip, cl, 1000)
print(f"{'case':<24}{'nnz':>12}{'kps ms':>10}{'torch ms':>10}{'kps b2b':>10}{'torch b2b':>10}{'kps GB/s':>10}{'ratio b2b':>10}")
for name, (ip, cl, n) in cases.items():
    m = len(ip) - 1; nnz = len(cl)
    indptr = torch.from_numpy(ip).cuda().to(torch.int32) if nnz < 2**31 else torch.from_numpy(ip).cuda()
    indices = torch.from_numpy(cl).cuda().to(torch.int32)
    vals = torch.randn(nnz, device="cuda")
    x = torch.randn(n, device="cuda")
    A = torch.sparse_csr_tensor(indptr, indices, vals, size=(m, n))
    out = kps.ops.spmv(indptr, indices, vals, x, check=False)
    ref = (A @ x.unsqueeze(1)).squeeze(1)
    err = (out - ref).abs().max().item() / (ref.abs().max().item() + 1e-30)
    k1, kb = bench(lambda: kps.ops.spmv(indptr, indices, vals, x, check=False))
    t1, tb = bench(lambda: A @ x.unsqueeze(1))
    bytes_ = indptr.numel()*indptr.element_size() + nnz*(4+4) + n*4 + m*4
    print(f"{name:<24}{nnz:>12}{k1:>10.4f}{t1:>10.4f}{kb:>10.4f}{tb:>10.4f}{bytes_/kb/1e6:>10.0f}{tb/kb:>10.2f}  relerr {err:.1e}")
