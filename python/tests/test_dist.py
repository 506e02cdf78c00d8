"""kps.dist and the collectives from Python.

Anywhere: the ops' schemas and attributes reach C++ (shape inference over a placeholder
group), the environment is read as init_world reads it, and a missing GPU or NCCL gives a
Python exception with KPS's message. With a GPU (skipped otherwise; KPS_REQUIRE_GPU=1
makes a missing GPU fail), in a world of 1 or under
`build/kps launch --nproc N -- python -m pytest python/tests/test_dist.py`: every
collective on torch and kps CUDA tensors against NumPy references computed from the rank.
Every rank runs the same tests in the same order, so the collectives meet.
"""

import inspect
import os
import subprocess
import sys

import numpy as np
import pytest

import kps
import kps.dist as dist

COLLECTIVES = ["all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "all_to_all", "send", "recv"]
LAUNCHER_VARS = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"]


def _cuda_input(shape, dtype="float32"):
    """An input description for kps._kps.infer: a contiguous tensor on cuda:0 (no data)."""
    strides = [int(np.prod(shape[d + 1:])) for d in range(len(shape))]
    return [("x", list(shape), strides, dtype, "cuda:0")]


def _python(code, **env):
    """Runs `code` in a fresh interpreter (NCCL's loader keeps its first result) with the
    launcher's variables removed and `env` added; returns (returncode, stdout + stderr)."""
    e = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    e.update(env)
    r = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout + r.stderr


# ---- anywhere ------------------------------------------------------------------------


def test_collectives_have_functions_with_their_attributes():
    for op in COLLECTIVES:
        fn = getattr(kps.ops, op)
        assert getattr(dist, op) is fn
        params = inspect.signature(fn).parameters
        assert params["group"].default == "world"
    sig = lambda op: inspect.signature(getattr(kps.ops, op)).parameters  # noqa: E731
    assert sig("all_reduce")["op"].default == "sum"
    assert sig("reduce")["root"].default == 0 and sig("reduce")["op"].default == "sum"
    assert sig("broadcast")["root"].default == 0
    assert sig("all_to_all")["input_split_sizes"].default == []
    assert sig("all_to_all")["output_split_sizes"].default == []
    assert sig("send")["peer"].default is inspect.Parameter.empty  # required
    recv = sig("recv")
    assert list(recv) == ["peer", "shape", "dtype", "group", "device", "stream"]
    assert recv["dtype"].default == "float32"


def test_call_takes_the_op_attribute_by_keyword():
    # kps.call's own first parameter is positional only, so all_reduce's `op` is free.
    x = np.ones(3, np.float32)
    with pytest.raises(ValueError, match="op 'all_reduce': input 'x' is on cpu"):
        kps.call("all_reduce", x, op="max")
    with pytest.raises(ValueError, match="collectives run on CUDA tensors only"):
        kps.ops.reduce(x, op="min", root=0)


@pytest.fixture
def placeholder_group():
    """Group "py_ph": rank 1 of 4, no NCCL; removed afterwards (other groups untouched)."""
    g = dist.placeholder(1, 4, name="py_ph")
    yield g
    dist.remove_group("py_ph")


def test_shapes_through_a_placeholder_group(placeholder_group):
    g = placeholder_group
    assert (g.rank, g.size, g.aborted) == (1, 4, False)
    assert "py_ph" in dist.group_names() and dist.is_initialized("py_ph")
    assert dist.get_group("py_ph").size == 4
    assert "placeholder" in repr(g)
    infer = kps._kps.infer
    assert infer("all_gather", _cuda_input([2, 3]), {"group": "py_ph"}) == [([8, 3], "float32", False)]
    assert infer("all_reduce", _cuda_input([5], "int64"), {"group": "py_ph", "op": "max"}) == [([5], "int64", False)]
    assert infer("reduce_scatter", _cuda_input([8, 3], "bfloat16"), {"group": "py_ph", "op": "avg"}) == [
        ([2, 3], "bfloat16", False)]
    out = infer("all_to_all", _cuda_input([10, 2]),
                {"group": "py_ph", "input_split_sizes": [1, 2, 3, 4], "output_split_sizes": (4, 4, 4, 5)})
    assert out == [([17, 2], "float32", False)]
    assert infer("broadcast", _cuda_input([7]), {"group": "py_ph", "root": 3}) == [([7], "float32", False)]
    assert infer("send", _cuda_input([7]), {"group": "py_ph", "peer": 0}) == []


def test_attribute_errors_name_the_op(placeholder_group):
    infer = kps._kps.infer
    with pytest.raises(ValueError, match="attribute 'root' = 4 is not a rank of group 'py_ph'"):
        infer("broadcast", _cuda_input([2]), {"group": "py_ph", "root": 4})
    with pytest.raises(ValueError, match="'mean' is not a reduction"):
        infer("all_reduce", _cuda_input([2]), {"group": "py_ph", "op": "mean"})
    with pytest.raises(ValueError, match="a rank cannot send to itself"):
        infer("send", _cuda_input([2]), {"group": "py_ph", "peer": 1})
    with pytest.raises(ValueError, match="not a multiple of the 4 ranks"):
        infer("reduce_scatter", _cuda_input([6]), {"group": "py_ph"})
    with pytest.raises(ValueError, match="input_split_sizes"):
        infer("all_to_all", _cuda_input([10]), {"group": "py_ph", "input_split_sizes": [1, 2]})
    with pytest.raises(LookupError, match="no communicator group 'py_nope'"):
        infer("all_reduce", _cuda_input([2]), {"group": "py_nope"})
    with pytest.raises(ValueError, match="attribute 'peer' takes an int"):
        kps.call("send", np.ones(2, np.float32), peer="1", group="py_ph")


def test_group_table_errors(placeholder_group):
    with pytest.raises(LookupError, match="no communicator group 'py_nope' .*py_ph"):
        dist.get_group("py_nope")
    with pytest.raises(LookupError, match="py_nope"):
        dist.synchronize(group="py_nope")
    with pytest.raises(LookupError, match="py_nope"):
        dist.split(0, group="py_nope")
    # A placeholder has no NCCL behind it: a clear error, not a crash.
    with pytest.raises(ValueError, match="placeholder"):
        dist.synchronize(group="py_ph", stream=0)
    with pytest.raises(ValueError, match="placeholder"):
        dist.split(0, name="py_sub", group="py_ph")
    assert "py_sub" not in dist.group_names()
    with pytest.raises(ValueError, match="timeout_s must be > 0"):
        placeholder_group.synchronize(0, -1.0)
    with pytest.raises(ValueError, match="rank 4 is not in 0..size-1"):
        dist.placeholder(4, 4)


def test_destroy_clears_every_group():
    if dist.group_names():
        pytest.skip("groups exist already (a world): destroy() would drop them")  # a reordered run
    dist.placeholder(0, 2, name="py_a")
    dist.placeholder(1, 2, name="py_b")
    assert dist.group_names() == ["py_a", "py_b"]
    dist.destroy()
    assert dist.group_names() == []
    assert not dist.is_initialized()


def test_process_info_reads_the_launchers_variables():
    code = "import kps.dist as d; i = d.process_info(); print(i['rank'], i['world_size'], i['source'])"
    rc, out = _python(code)
    assert rc == 0, out
    assert out.split() == ["0", "1", "none"]
    rc, out = _python(code, RANK="1", WORLD_SIZE="3", LOCAL_RANK="1", MASTER_PORT="29999")
    assert rc == 0, out
    assert out.split() == ["1", "3", "torchrun"]
    rc, out = _python(code, RANK="x", WORLD_SIZE="2")
    assert rc != 0 and "ValueError" in out and "RANK" in out, out


def test_process_info_in_this_process():
    info = dist.process_info()
    if "RANK" in os.environ:  # under kps launch or torchrun
        assert (info["rank"], info["world_size"]) == (int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    elif info["source"] == "none":
        assert (info["rank"], info["world_size"], info["local_rank"]) == (0, 1, 0)


def test_nccl_version_or_a_clear_error():
    try:
        v = dist.nccl_version()
    except ValueError as e:
        assert "NCCL" in str(e)
    else:
        assert v >= (2, 18, 0) and v.major == 2
        lib = dist.nccl_library()
        assert lib.path and lib.version == f"{v.major}.{v.minor}.{v.patch}"


def test_without_nccl_every_entry_point_says_so():
    code = """
import numpy as np, kps, kps.dist as d
for f in (d.nccl_version, lambda: d.init_world(timeout_s=5)):
    try:
        f()
        print("ok")
    except Exception as e:
        print(type(e).__name__, "|", e)
"""
    rc, out = _python(code, KPS_NCCL_LIBRARY="/nonexistent/libnccl.so.2")
    assert rc == 0, out
    lines = out.strip().splitlines()
    assert lines[0].startswith("ValueError |") and "NCCL" in lines[0], out
    assert "/nonexistent/libnccl.so.2" in lines[0] or "built without NCCL" in lines[0], out
    # No GPU, or a GPU without NCCL: a ValueError either way, not a crash.
    assert lines[1].startswith("ValueError |"), out
    assert "no CUDA device" in lines[1] or "NCCL" in lines[1], out


@pytest.mark.skipif(kps._kps.cuda_device_count() > 0, reason="checks the machine without a GPU")
def test_without_a_gpu_init_world_says_so():
    with pytest.raises(ValueError, match="no CUDA device; collectives need one GPU per process"):
        dist.init_world(timeout_s=5)
    with pytest.raises(ValueError, match="timeout_s must be > 0"):
        dist.init_world(timeout_s=0)
    assert "world" not in dist.group_names()


# ---- on GPUs ---------------------------------------------------------------------------

REQUIRE_GPU = os.environ.get("KPS_REQUIRE_GPU") == "1"


@pytest.fixture(scope="module")
def torch():
    if kps._kps.cuda_device_count() == 0:
        if REQUIRE_GPU:
            raise RuntimeError("KPS_REQUIRE_GPU=1 but no CUDA GPU is visible")
        pytest.skip("no CUDA GPU")
    return pytest.importorskip("torch") if not REQUIRE_GPU else __import__("torch")


@pytest.fixture(scope="module")
def world(torch):
    """The world (rank 0 of 1 without a launcher), made once; destroyed at the end."""
    try:
        dist.nccl_version()
    except ValueError as e:
        if REQUIRE_GPU:
            raise
        pytest.skip(f"no NCCL: {e}")
    w = dist.init_world(timeout_s=120)
    info = dist.process_info()
    assert (w.rank, w.size) == (info["rank"], info["world_size"])
    assert torch.cuda.current_device() == w.device  # init_world set torch's device too
    yield w
    dist.destroy()


# Dtypes by torch name; bfloat16 has no NumPy twin (compared through float64).
DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "int8", "uint8"]


def _make(torch, world, rank, shape, dtype, salt=0):
    """Rank `rank`'s input: small integers (1 to 5) whose sums over the ranks are exact in
    every dtype, as a NumPy float64 array (the reference) and a torch tensor on world's GPU."""
    n = int(np.prod(shape))
    ref = ((np.arange(n) * 7 + rank * 3 + salt) % 5 + 1).astype(np.float64).reshape(shape)
    return ref, torch.tensor(ref, device=f"cuda:{world.device}").to(getattr(torch, dtype))


def _check(torch, got, ref, dtype):
    assert str(got.dtype) == f"torch.{dtype}"
    want = torch.tensor(ref).to(getattr(torch, dtype))
    tol = {"float16": 1e-3, "bfloat16": 1e-2}.get(dtype, 1e-6)
    torch.testing.assert_close(got.cpu(), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_all_reduce(torch, world, dtype, op):
    r, n = world.rank, world.size
    refs = [_make(torch, world, i, (3, 37), dtype)[0] for i in range(n)]
    _, x = _make(torch, world, r, (3, 37), dtype)
    out = kps.dist.all_reduce(x, op=op)
    assert out.data_ptr() != x.data_ptr()
    dist.synchronize()
    _check(torch, out, {"sum": np.add, "max": np.maximum, "min": np.minimum}[op].reduce(refs), dtype)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_all_reduce_prod_and_avg(torch, world, dtype):
    r, n = world.rank, world.size
    dev = f"cuda:{world.device}"
    vals = [((np.arange(50) + i) % 2 + 1).astype(np.float64) for i in range(n)]  # 1 or 2: no overflow
    x = torch.tensor(vals[r], device=dev).to(getattr(torch, dtype))
    _check(torch, kps.call("all_reduce", x, op="prod"), np.prod(vals, axis=0), dtype)
    if dtype == "float32":
        _check(torch, kps.ops.all_reduce(x, op="avg"), np.mean(vals, axis=0), dtype)


@pytest.mark.parametrize("dtype", DTYPES + ["bool"])
def test_all_gather(torch, world, dtype):
    r, n = world.rank, world.size
    if dtype == "bool":
        ref = [(np.arange(6).reshape(2, 3) + i) % 2 == 0 for i in range(n)]
        x = torch.tensor(ref[r], device=f"cuda:{world.device}")
        out = kps.dist.all_gather(x)
        assert torch.equal(out.cpu(), torch.tensor(np.concatenate(ref)))
        return
    refs = [_make(torch, world, i, (2, 5), dtype)[0] for i in range(n)]
    _, x = _make(torch, world, r, (2, 5), dtype)
    out = kps.dist.all_gather(x)
    assert tuple(out.shape) == (2 * n, 5)
    _check(torch, out, np.concatenate(refs), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast(torch, world, dtype):
    r, n = world.rank, world.size
    root = n - 1
    ref_root = _make(torch, world, root, (4, 9), dtype, salt=1)[0]
    _, x = _make(torch, world, r, (4, 9), dtype, salt=1)
    out = kps.dist.broadcast(x, root=root)
    dist.synchronize()
    _check(torch, out, ref_root, dtype)


def test_reduce_and_reduce_scatter(torch, world):
    r, n = world.rank, world.size
    refs = [_make(torch, world, i, (2 * n, 3), "float32")[0] for i in range(n)]
    _, x = _make(torch, world, r, (2 * n, 3), "float32")
    out = kps.dist.reduce(x, op="max", root=0)
    if r == 0:  # written on the root only
        _check(torch, out, np.maximum.reduce(refs), "float32")
    rs = kps.dist.reduce_scatter(x)
    assert tuple(rs.shape) == (2, 3)
    _check(torch, rs, np.sum(refs, axis=0)[2 * r:2 * r + 2], "float32")


def test_all_to_all_equal_and_variable_splits(torch, world):
    r, n = world.rank, world.size
    dev = f"cuda:{world.device}"

    def block(src, dst, rows):  # what rank src sends rank dst: rows x 2 values naming both
        return np.array([[src * 100 + dst * 10 + t, -t] for t in range(rows)], np.int64).reshape(rows, 2)

    x = torch.tensor(np.concatenate([block(r, j, 2) for j in range(n)]), device=dev)
    out = kps.dist.all_to_all(x)
    assert torch.equal(out.cpu(), torch.tensor(np.concatenate([block(i, r, 2) for i in range(n)])))
    # Rank r sends r + j + 1 rows to rank j, so it receives i + r + 1 rows from rank i.
    send = [r + j + 1 for j in range(n)]
    recv = [i + r + 1 for i in range(n)]
    x = torch.tensor(np.concatenate([block(r, j, send[j]) for j in range(n)]), device=dev).float()
    out = kps.dist.all_to_all(x, input_split_sizes=send, output_split_sizes=recv)
    want = np.concatenate([block(i, r, recv[i]) for i in range(n)])
    assert torch.equal(out.cpu(), torch.tensor(want).float())


def test_send_recv_between_pairs(torch, world):
    r, n = world.rank, world.size
    dev = f"cuda:{world.device}"
    if n == 1:  # nobody to talk to: the op says so
        with pytest.raises(ValueError, match="cannot send to itself"):
            kps.dist.send(torch.ones(3, device=dev), peer=0)
        with pytest.raises(ValueError, match="op .recv.: attribute .peer. = 0 is this rank"):
            kps.dist.recv(peer=0, shape=[3], device=dev)
        return
    partner = r + 1 if r % 2 == 0 else r - 1
    if partner >= n:  # the last rank of an odd world
        return
    payload = lambda src: np.arange(5, dtype=np.int64) * 10 + src  # noqa: E731
    for sender in (0, 1):  # even ranks send first, then odd ones
        if r % 2 == sender:
            assert kps.dist.send(torch.tensor(payload(r), device=dev), peer=partner) is None
        else:
            t = kps.dist.recv(peer=partner, shape=[5], dtype=torch.int64, device=dev)
            assert isinstance(t, kps.Tensor) and t.device == dev and t.dtype == "int64"
            assert torch.equal(torch.from_dlpack(t).cpu(), torch.tensor(payload(partner)))
    dist.synchronize()


def test_kps_tensors_in_and_out(torch, world):
    r, n = world.rank, world.size
    x = kps.ops.arange(start=r, end=r + 8, dtype="float32", device=f"cuda:{world.device}")
    assert isinstance(x, kps.Tensor)
    out = kps.dist.all_reduce(x)
    assert isinstance(out, kps.Tensor) and out.device == f"cuda:{world.device}"
    want = sum(np.arange(i, i + 8, dtype=np.float64) for i in range(n))
    dist.synchronize()
    np.testing.assert_array_equal(torch.from_dlpack(out).cpu().numpy(), want.astype(np.float32))


def test_on_a_side_stream_and_synchronize(torch, world):
    r, n = world.rank, world.size
    s = torch.cuda.Stream(device=world.device)
    x = torch.full((1 << 16,), float(r + 1), device=f"cuda:{world.device}")
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        out = kps.dist.all_reduce(x)  # on s, torch's current stream here
        dist.synchronize(timeout_s=60)  # waits for s
    assert torch.equal(out.cpu(), torch.full((1 << 16,), float(n * (n + 1) // 2)))
    dist.synchronize(stream=s)


def test_captured_in_a_cuda_graph(torch, world):
    """all_reduce inside torch.cuda.graph, replayed over new inputs written in place (the
    blocking data path, the default; the nonblocking one may refuse a capture)."""
    if os.environ.get("KPS_NCCL_BLOCKING") == "0":
        pytest.skip("capture is checked on the blocking data path")
    r, n = world.rank, world.size
    dev = f"cuda:{world.device}"
    x = torch.zeros(1000, device=dev)
    s = torch.cuda.Stream(device=world.device)
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # a warm-up call outside the capture, as torch advises
        kps.dist.all_reduce(x)
    torch.cuda.current_stream().wait_stream(s)
    dist.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, capture_error_mode="thread_local"):
        out = kps.dist.all_reduce(x)
    for step in (1, 2):
        x.copy_(torch.arange(1000, device=dev, dtype=torch.float32) * (step + 1) + r)
        g.replay()
        torch.cuda.synchronize()
        want = sum(np.arange(1000, dtype=np.float64) * (step + 1) + i for i in range(n))
        np.testing.assert_array_equal(out.cpu().numpy(), want.astype(np.float32))


def test_split_into_named_groups(torch, world):
    r, n = world.rank, world.size
    sub = dist.split(r % 2, name="py_parity")
    members = [i for i in range(n) if i % 2 == r % 2]
    assert sub.size == len(members) and sub.rank == members.index(r) and sub.device == world.device
    assert "py_parity" in dist.group_names()
    x = torch.full((4,), float(r + 1), device=f"cuda:{world.device}")
    out = kps.dist.all_reduce(x, group="py_parity")
    dist.synchronize(group="py_parity")
    assert torch.equal(out.cpu(), torch.full((4,), float(sum(i + 1 for i in members))))
    dist.remove_group("py_parity")
    assert "py_parity" not in dist.group_names()


def test_destroy_and_init_again(torch, world):
    dist.destroy()
    assert dist.group_names() == []
    with pytest.raises(LookupError, match="no communicator group 'world'"):
        kps.dist.all_reduce(torch.ones(2, device=f"cuda:{world.device}"))
    again = dist.init_world(timeout_s=120)
    assert (again.rank, again.size, again.device) == (world.rank, world.size, world.device)
    out = kps.dist.all_reduce(torch.ones(2, device=f"cuda:{again.device}"))
    dist.synchronize()
    assert torch.equal(out.cpu(), torch.full((2,), float(again.size), device="cpu"))
