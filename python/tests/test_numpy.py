"""kps on NumPy arrays (the CPU kernels): every op family against NumPy, dtypes including
bfloat16 through ml_dtypes, strided views, errors, the generated functions, and lifetimes."""

import gc
import inspect
import sys

import ml_dtypes
import numpy as np
import pytest

import kps

BF16 = ml_dtypes.bfloat16


@pytest.fixture
def rng():
    seed = np.random.SeedSequence().entropy % (2**32)
    print("seed", seed)  # shown when a test fails
    return np.random.default_rng(seed)


def rand(rng, shape, dtype=np.float32):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100) + 1, size=shape).astype(dtype)
    return (rng.random(shape) * 4 - 2).astype(dtype)


# --- calling ------------------------------------------------------------------------


def test_call_by_name_and_generated_function_agree(rng):
    x = rand(rng, (7, 33))
    a = kps.call("sum", x, dims=[1], keepdim=True)
    b = kps.ops.sum(x, dims=[1], keepdim=True)
    np.testing.assert_allclose(a, x.sum(1, keepdims=True), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(a, b)
    assert isinstance(a, np.ndarray) and a.shape == (7, 1) and a.dtype == np.float32


def test_inputs_by_keyword_and_an_int_for_a_list_attribute(rng):
    x, y = rand(rng, (5, 6)), rand(rng, (5, 6))
    np.testing.assert_allclose(kps.call("add", y=y, x=x, alpha=2), x + 2 * y, rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(kps.ops.mean(x, dims=-1), x.mean(-1), rtol=1e-5, atol=1e-5)


def test_generated_functions_carry_signature_and_doc():
    sig = inspect.signature(kps.ops.topk)
    assert list(sig.parameters)[:5] == ["x", "k", "dim", "largest", "sorted"]
    assert sig.parameters["dim"].default == -1
    assert sig.parameters["k"].default is inspect.Parameter.empty
    doc = kps.ops.topk.__doc__
    assert "Outputs:" in doc and "indices" in doc and "k (int, required)" in doc
    assert "device" in inspect.signature(kps.ops.arange).parameters
    assert set(kps.list_ops()) >= {"add", "sum", "sort", "topk", "cumsum", "nonzero", "conv1d"}
    assert "inputs:" in kps.describe("sum")


def test_multi_output_ops_return_named_tuples(rng):
    x = rand(rng, (9, 40))
    r = kps.ops.topk(x, k=3)
    assert type(r).__name__ == "TopkOutputs" and r._fields == ("values", "indices")
    np.testing.assert_array_equal(r.values, -np.sort(-x, axis=1)[:, :3])
    np.testing.assert_array_equal(np.take_along_axis(x, r.indices, 1), r.values)


def test_ops_without_inputs_run_on_the_cpu():
    t = kps.ops.arange(end=5, dtype="int32")
    assert isinstance(t, kps.Tensor) and t.shape == (5,) and t.dtype == "int32"  # no input framework
    np.testing.assert_array_equal(t.numpy(), np.arange(5, dtype=np.int32))
    np.testing.assert_array_equal(np.from_dlpack(t), np.arange(5, dtype=np.int32))  # consumed twice
    np.testing.assert_array_equal(np.asarray(kps.ops.fill(shape=[2, 3], value=7.0)), np.full((2, 3), 7, np.float32))
    b = kps.ops.fill(shape=[2], value=1.5, dtype="bfloat16")
    assert b.dtype == "bfloat16" and b.numpy().dtype == BF16 and list(b.numpy()) == [1.5, 1.5]


# --- every family against NumPy -----------------------------------------------------


def test_elementwise(rng):
    x, y = rand(rng, (3, 4, 5)), rand(rng, (4, 1))
    np.testing.assert_allclose(kps.ops.mul(x, y), x * y, rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(kps.ops.exp(x), np.exp(x), rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(kps.ops.maximum_scalar(x, other=0.5), np.maximum(x, 0.5), atol=1e-5)
    c = x > 0
    np.testing.assert_array_equal(kps.ops.where(c, x, np.float32(0)[()] + np.zeros_like(x)), np.where(c, x, 0))
    np.testing.assert_array_equal(kps.ops.cast(x, dtype="int32"), x.astype(np.int32))
    np.testing.assert_array_equal(kps.ops.gt(x, y), x > y)


def test_dtype_attributes_take_numpy_dtypes(rng):
    x = rand(rng, (7,)) * 100
    for dt in (np.int32, np.dtype("int16"), np.float64, np.bool_):
        out = kps.ops.cast(x, dtype=dt)
        assert out.dtype == np.dtype(dt)
        np.testing.assert_array_equal(out, x.astype(dt))
    assert kps.call("cast", x, dtype=ml_dtypes.bfloat16).dtype == ml_dtypes.bfloat16
    with pytest.raises(ValueError, match="attribute 'dtype' takes a dtype name"):
        kps.ops.cast(x, dtype=3.5)


def test_reductions(rng):
    x = rand(rng, (6, 7, 8))
    np.testing.assert_allclose(kps.ops.sum(x, dims=[0, 2]), x.sum((0, 2)), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(kps.ops.max(x, dims=[1]), x.max(1))
    np.testing.assert_array_equal(kps.ops.argmax(x, dims=[2]), x.argmax(2))
    np.testing.assert_allclose(kps.ops.var(x, dims=[1]), x.var(1, ddof=1), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(kps.ops.logsumexp(x, dims=[2]), np.log(np.exp(x).sum(2)), rtol=1e-5, atol=1e-5)


def test_scans(rng):
    x = rand(rng, (5, 9))
    np.testing.assert_allclose(kps.ops.cumsum(x, dim=1), np.cumsum(x, 1), rtol=1e-5, atol=1e-6)
    v, i = kps.ops.cummax(x, dim=0)
    np.testing.assert_array_equal(v, np.maximum.accumulate(x, 0))
    np.testing.assert_array_equal(np.take_along_axis(x, i, 0), v)


def test_sort_argsort(rng):
    x = rand(rng, (4, 100))
    s = kps.ops.sort(x, descending=True)
    np.testing.assert_array_equal(s.values, -np.sort(-x, 1))
    np.testing.assert_array_equal(kps.ops.argsort(x), np.argsort(x, 1, kind="stable"))


def test_compaction(rng):
    x = rand(rng, (6, 7), np.int32) * (rand(rng, (6, 7)) > 0)
    np.testing.assert_array_equal(kps.ops.nonzero(x), np.argwhere(x))
    m = x > 10
    np.testing.assert_array_equal(kps.ops.masked_select(x, m), x[m])


def test_index_add_and_its_in_place_form(rng):
    x, src = rand(rng, (10, 3)), rand(rng, (6, 3))
    idx = rng.integers(0, 10, 6).astype(np.int64)
    want = x.copy()
    np.add.at(want, idx, src)
    np.testing.assert_allclose(kps.ops.index_add(x, idx, src), want, rtol=1e-5, atol=1e-6)
    assert kps.ops.index_add_(x, idx, src) is None  # writes x itself: zero copy
    np.testing.assert_allclose(x, want, rtol=1e-5, atol=1e-6)


def test_linalg_conv_upsample(rng):
    x, y = rand(rng, 1000), rand(rng, 1000)
    np.testing.assert_allclose(kps.ops.dot(x, y), np.dot(x, y), rtol=1e-4, atol=1e-5)
    w = rand(rng, 5)
    np.testing.assert_allclose(kps.ops.conv1d(x, w), np.convolve(x, w), rtol=1e-4, atol=1e-5)
    img = rand(rng, (1, 2, 3, 4))
    np.testing.assert_array_equal(kps.ops.upsample_nearest2d(img), img.repeat(2, 2).repeat(2, 3))


# --- dtypes and layouts ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.int64, np.float16, BF16,
                                   np.float32, np.float64])
def test_every_dtype_round_trips(rng, dtype):
    x = rand(rng, (3, 17), np.float32 if dtype == BF16 else dtype).astype(dtype)
    out = kps.ops.copy(x)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.view(np.uint8), x.view(np.uint8))
    if dtype not in (np.bool_,):
        m = kps.ops.max(x, dims=[1])
        assert m.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(m.astype(np.float64), x.astype(np.float64).max(1))


def test_bfloat16_math_matches_float_rounding(rng):
    a, b = rand(rng, 1000).astype(BF16), rand(rng, 1000).astype(BF16)
    want = (a.astype(np.float32) + b.astype(np.float32)).astype(BF16)
    np.testing.assert_array_equal(kps.ops.add(a, b), want)


def test_strided_views_are_read_in_place(rng):
    base = rand(rng, (8, 12))
    for view in (base.T, base[1:7:2, ::3], base[:, 5], base[2:3, 4:]):
        assert kps._kps.data_pointer(view) == view.__array_interface__["data"][0]
        np.testing.assert_array_equal(kps.ops.copy(view), view)
        np.testing.assert_allclose(kps.ops.sum(view), view.sum(), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="op 'copy': input 'x' has a negative stride"):
        kps.ops.copy(base[::-1])


def test_empty_and_scalar_arrays(rng):
    e = np.zeros((0, 4), np.float32)
    assert kps.ops.add(e, e).shape == (0, 4)
    np.testing.assert_array_equal(kps.ops.sum(e, dims=[0]), np.zeros(4, np.float32))
    s = np.float32(3.5) * np.ones((), np.float32)
    assert kps.ops.neg(s).shape == () and kps.ops.neg(s) == -3.5


# --- errors ----------------------------------------------------------------------------


def test_errors_map_to_python_exceptions_with_kps_messages(rng):
    x = rand(rng, (2, 3))
    with pytest.raises(LookupError, match="unknown op 'nope'"):
        kps.call("nope", x)
    with pytest.raises(ValueError, match=r"op 'add': inputs 'x' \[2, 3\] and 'y' \[4\] do not broadcast"):
        kps.ops.add(x, rand(rng, 4))
    with pytest.raises(ValueError, match="op 'topk'"):
        kps.ops.topk(x, k=10)
    with pytest.raises(ValueError, match="attribute 'k' takes an int, not str"):
        kps.call("topk", x, k="3")
    with pytest.raises(ValueError, match="op 'sum'.*'dimz'"):
        kps.call("sum", x, dimz=[0])
    with pytest.raises(ValueError, match="DLPack|dtype"):
        kps.ops.neg(np.zeros(3, np.complex64))
    with pytest.raises(TypeError):
        kps.call("neg", x, x)
    with pytest.raises(TypeError, match="input 'x' is not an array"):
        kps.ops.neg(object())
    with pytest.raises(MemoryError):
        kps.ops.fill(shape=[1 << 40, 1 << 20], value=1.0)


def test_device_strings_name_a_gpu_and_a_missing_one_is_an_error():
    # Runs without a GPU: a GPU past the count (cuda:0 on a machine with none) is a
    # ValueError naming it, never a crash.
    n = kps._kps.cuda_device_count()
    for device in (f"cuda:{n}", f"cuda:{n + 1}"):
        with pytest.raises(ValueError, match=f"op 'fill': device {device} does not exist: this process sees {n}"):
            kps.ops.fill(shape=[2], value=1.0, device=device)
    for bad in ("cuda:x", "cuda:-1", "cpu:1", "tpu"):
        with pytest.raises(ValueError, match=f"'{bad}'"):
            kps.ops.fill(shape=[2], value=1.0, device=bad)
    t = kps.ops.fill(shape=[2], value=1.0, device="cpu")
    assert t.device == "cpu"


# --- lifetimes -------------------------------------------------------------------------


def test_outputs_outlive_inputs_and_inputs_outlive_the_call(rng):
    x = rand(rng, (100, 100))
    want = x.sum(0)
    out = kps.ops.sum(x, dims=[0])
    del x
    gc.collect()
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    t = kps.ops.fill(shape=[3], value=2.0)  # a kps.Tensor
    arr = np.from_dlpack(t)
    del t
    gc.collect()
    np.testing.assert_array_equal(arr, [2, 2, 2])


def test_no_references_leak_over_many_calls(rng):
    x, y = rand(rng, 8), rand(rng, 8)
    before_x, before_y = sys.getrefcount(x), sys.getrefcount(y)
    for _ in range(1000):  # warm up caches
        kps.ops.add(x, y)
    gc.collect()
    objects = len(gc.get_objects())
    for _ in range(100000):
        kps.ops.add(x, y)
    gc.collect()
    assert sys.getrefcount(x) == before_x and sys.getrefcount(y) == before_y
    assert len(gc.get_objects()) - objects < 100


def test_shape_inference_without_data():
    # (name, shape, strides, dtype, device) -> (shape, dtype, dynamic) per output, as
    # kps.torch's fake implementations use it.
    assert kps._kps.infer("sum", [("x", [5, 6, 7], [42, 7, 1], "bfloat16", "cpu")], {"dims": [1]}) == [
        ([5, 7], "bfloat16", False)]
    assert kps._kps.infer("topk", [("x", [3, 100], [1, 3], "float32", "cpu")], {"k": 4}) == [
        ([3, 4], "float32", False), ([3, 4], "int64", False)]
    assert kps._kps.infer("nonzero", [("x", [4, 4], [4, 1], "int32", "cpu")], {})[0][1:] == ("int64", True)
    with pytest.raises(ValueError, match="do not broadcast"):
        kps._kps.infer("add", [("x", [2, 3], [3, 1], "float32", "cpu"), ("y", [4], [1], "float32", "cpu")], {})


def test_sparse_spmv_against_a_dense_product(rng):
    m, n = 50, 40
    dense = rand(rng, (m, n)) * (rng.random((m, n)) < 0.2)
    dense[7] = 0  # an empty row
    rows, cols = np.nonzero(dense)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=m))]).astype(np.int64)
    x, y = rand(rng, n), rand(rng, m)
    out = kps.ops.spmv(indptr, cols.astype(np.int32), dense[rows, cols], x, y, alpha=2.0, beta=-0.5)
    np.testing.assert_allclose(out, 2 * dense @ x - 0.5 * y, rtol=1e-5, atol=1e-5)
    # An optional input before a required one has no default in the signature.
    assert inspect.signature(kps.ops.spmv).parameters["values"].default is inspect.Parameter.empty
    with pytest.raises(ValueError, match="input 'indices' has 40 at"):
        kps.ops.spmv(indptr, np.full(len(cols), n, np.int32), None, x)
