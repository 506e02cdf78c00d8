"""kps on JAX arrays (the CPU backend here): DLPack in, JAX arrays out. Skipped without jax."""

import numpy as np
import pytest

import kps

jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.fixture
def rng():
    return np.random.default_rng(20261127)


def test_jax_in_jax_out(rng):
    a = rng.standard_normal((5, 7)).astype(np.float32)
    x = jnp.asarray(a)
    out = kps.ops.add(x, x, alpha=2.0)
    assert isinstance(out, jax.Array)
    np.testing.assert_allclose(np.asarray(out), 3 * a, rtol=1e-6)
    v, i = kps.ops.topk(x, k=3)
    assert isinstance(v, jax.Array) and isinstance(i, jax.Array)
    np.testing.assert_array_equal(np.asarray(v), -np.sort(-a, axis=1)[:, :3])
    np.testing.assert_allclose(np.asarray(kps.ops.sum(x, dims=[0])), a.sum(0), rtol=1e-5)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "int8", "int32", "bool"])
def test_jax_dtypes_round_trip(rng, dtype):
    x = jnp.asarray((rng.standard_normal(1001) * 50).astype(np.float32)).astype(dtype)
    out = kps.ops.copy(x)
    assert out.dtype == x.dtype
    np.testing.assert_array_equal(np.asarray(out), np.asarray(x))


def test_jax_errors_name_the_op(rng):
    x = jnp.asarray(rng.standard_normal((2, 3)).astype(np.float32))
    with pytest.raises(ValueError, match="op 'add'"):
        kps.ops.add(x, jnp.zeros(4, jnp.float32))
