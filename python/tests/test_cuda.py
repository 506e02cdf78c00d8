"""kps on CUDA arrays (PyTorch, CuPy): zero copy, the caller's current stream, CUDA graphs.
Skipped where there is no GPU or no torch/cupy; KPS_REQUIRE_GPU=1 makes a missing GPU fail."""

import os

import numpy as np
import pytest

import kps

torch = pytest.importorskip("torch") if os.environ.get("KPS_REQUIRE_GPU") != "1" else __import__("torch")

if not torch.cuda.is_available() or kps._kps.cuda_device_count() == 0:
    if os.environ.get("KPS_REQUIRE_GPU") == "1":
        raise RuntimeError("KPS_REQUIRE_GPU=1 but no CUDA GPU is visible")
    pytest.skip("no CUDA GPU", allow_module_level=True)


def test_torch_in_torch_out_without_copies():
    x = torch.randn(300, 257, device="cuda")
    y = torch.randn(300, 257, device="cuda")
    # DLPack stream numbers: torch's default stream is 1 (legacy default), not its handle 0.
    capsule = x.__dlpack__(stream=torch.cuda.current_stream().cuda_stream or 1)
    assert kps._kps.data_pointer(capsule) == x.data_ptr()
    assert kps._kps.data_pointer(torch._C._to_dlpack(x)) == x.data_ptr()  # call()'s short path
    out = kps.ops.add(x, y, alpha=2.0)
    assert isinstance(out, torch.Tensor) and out.is_cuda and out.dtype == torch.float32
    torch.testing.assert_close(out, x + 2 * y)
    t = x.t()  # a strided view keeps its strides
    torch.testing.assert_close(kps.ops.copy(t), t.contiguous())
    v, i = kps.ops.topk(x, k=5)
    torch.testing.assert_close(v, torch.topk(x, 5).values)


def test_tensors_that_require_grad_are_refused_as_torch_refuses_them():
    x = torch.randn(5, device="cuda", requires_grad=True)
    with pytest.raises(BufferError, match="detach"):
        kps.ops.neg(x)
    torch.testing.assert_close(kps.ops.neg(x.detach()), -x.detach())


def test_dtype_attributes_take_torch_dtypes():
    x = torch.randn(100, device="cuda") * 100
    for dt in (torch.int32, torch.float16, torch.bfloat16, torch.float64):
        assert torch.equal(kps.ops.cast(x, dtype=dt), x.to(dt))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int8", "int32", "int64", "bool"])
def test_every_torch_dtype(dtype):
    dt = getattr(torch, dtype)
    x = (torch.randn(1000, device="cuda") * 50).to(dt)
    out = kps.ops.copy(x)
    assert out.dtype == dt
    assert torch.equal(out, x)


def test_runs_on_the_current_stream_without_syncing():
    s = torch.cuda.Stream()
    x = torch.randn(1 << 22, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        y = x * 3  # queued on s
        z = kps.ops.add(y, y)  # must follow y on s
        w = z + 1
    s.synchronize()
    torch.testing.assert_close(w, 6 * x + 1)
    # An explicit stream argument.
    s2 = torch.cuda.Stream()
    with torch.cuda.stream(s2):
        a = x * 2
    b = kps.ops.neg(a, stream=s2)
    s2.synchronize()
    torch.testing.assert_close(b, -2 * x)


def test_cuda_graph_capture_and_replay():
    x = torch.randn(4096, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        kps.ops.mul(x, x)  # warm up: kernels loaded, allocator blocks cached
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = kps.ops.mul(x, x)
        z = kps.ops.sum(y)
    x.copy_(torch.arange(4096, device="cuda", dtype=torch.float32))
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(z, (x * x).sum())


def test_cupy_in_cupy_out():
    cupy = pytest.importorskip("cupy")
    x = cupy.random.rand(5, 6, dtype=cupy.float32)
    out = kps.ops.sum(x, dims=[1])
    assert isinstance(out, cupy.ndarray)
    np.testing.assert_allclose(cupy.asnumpy(out), cupy.asnumpy(x).sum(1), rtol=1e-5)


def test_kps_tensor_from_cuda_hands_over_by_dlpack():
    t = kps.ops.fill(shape=[3, 4], value=2.5, device="cuda")
    assert isinstance(t, kps.Tensor) and t.device == f"cuda:{torch.cuda.current_device()}"
    a = torch.from_dlpack(t)
    assert a.is_cuda and torch.equal(a, torch.full((3, 4), 2.5, device="cuda"))


def test_torch_register_and_compile():
    import kps.torch

    kps.torch.register()
    x = torch.randn(64, 33, device="cuda")
    torch.testing.assert_close(torch.ops.kps.add(x, x, alpha=2.0), 3 * x)
    v, i = torch.ops.kps.topk(x, k=4)
    torch.testing.assert_close(v, torch.topk(x, 4).values)

    def f(x):
        return torch.ops.kps.sum(torch.ops.kps.mul(x, x), dims=[1]) * 2

    compiled = torch.compile(f, fullgraph=True)
    torch.testing.assert_close(compiled(x), (x * x).sum(1) * 2, rtol=1e-5, atol=1e-5)
    nz = torch.compile(lambda x: torch.ops.kps.nonzero(x > 0))(x)  # a value-dependent shape
    torch.testing.assert_close(nz, torch.nonzero(x > 0))


def test_the_readme_example():
    x = torch.randn(4096, 1000, device="cuda")
    s = kps.call("sum", x, dims=[1], keepdim=True)
    torch.testing.assert_close(s, x.sum(1, keepdim=True), rtol=1e-4, atol=1e-3)
    v, i = kps.ops.topk(x, k=8)
    torch.testing.assert_close(v, torch.topk(x, 8).values)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        y = kps.ops.gelu(x)
    stream.synchronize()
    torch.testing.assert_close(y, torch.nn.functional.gelu(x), rtol=1e-5, atol=1e-5)
    from kps import torch as kps_torch  # `import kps.torch` here would make kps a local name

    kps_torch.register()
    f = torch.compile(lambda t: torch.ops.kps.logsumexp(t, dims=[1]) * 2)
    torch.testing.assert_close(f(x), torch.logsumexp(x, 1) * 2, rtol=1e-5, atol=1e-5)


# --- several GPUs: each needs 2 and skips with fewer ---------------------------------

two_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2 or kps._kps.cuda_device_count() < 2,
                              reason="needs 2 GPUs")


@two_gpus
def test_multi_gpu_calls_run_on_the_inputs_gpu():
    torch.cuda.set_device(0)
    x = torch.randn(1000, 33, device="cuda:1")
    y = torch.randn(1000, 33, device="cuda:1")
    out = kps.ops.add(x, y)  # the short path
    assert out.device == torch.device("cuda:1")
    torch.testing.assert_close(out, x + y)
    s = kps.ops.sum(x, dims=[1], stream=torch.cuda.Stream(device=1))  # the long path, a stream of cuda:1
    torch.cuda.synchronize(1)
    assert s.device == torch.device("cuda:1")
    torch.testing.assert_close(s, x.sum(1), rtol=1e-4, atol=1e-4)
    t = kps.ops.fill(shape=[4], value=3.0, device="cuda:1")
    assert t.device == "cuda:1" and t.__dlpack_device__() == (2, 1)
    a = torch.from_dlpack(t)
    assert a.device == torch.device("cuda:1") and torch.equal(a, torch.full((4,), 3.0, device="cuda:1"))
    t2 = kps.ops.fill(shape=[2], value=1.0, device=torch.device("cuda", 1))
    assert t2.device == "cuda:1"
    assert torch.cuda.current_device() == 0  # the caller's device is left alone


@two_gpus
def test_multi_gpu_mixing_devices_is_an_error():
    x = torch.randn(10, device="cuda:0")
    y = torch.randn(10, device="cuda:1")
    with pytest.raises(ValueError, match="op 'add': input 'y' is on cuda:1 but input 'x' is on cuda:0"):
        kps.ops.add(x, y)
    with pytest.raises(ValueError, match="the call runs on cuda:0 but its stream is on cuda:1"):
        kps.ops.add(x, x, stream=torch.cuda.Stream(device=1))
