"""KPS from Python: call any registered op on NumPy, PyTorch, CuPy or JAX arrays.

    import numpy as np, kps
    x = np.random.rand(4, 5).astype(np.float32)
    kps.call("sum", x, dims=[1], keepdim=True)     # by name
    kps.ops.sum(x, dims=[1])                        # generated from the op's schema
    kps.list_ops(); print(kps.describe("sum"))

Inputs are taken through DLPack without a copy (strided views keep their strides); CPU
arrays run the CPU kernels, CUDA arrays the CUDA kernels. Outputs come back as the
inputs' framework's arrays when all inputs share one, else as kps.Tensor (which has
__dlpack__). On CUDA a call runs on the stream the inputs' framework considers current
(or `stream=`), with no synchronization. A failed call raises the exception its status
code stands for (ValueError for invalid arguments, LookupError for unknown ops,
MemoryError when memory runs out) with KPS's message unchanged.
"""

from collections import namedtuple as _namedtuple

from . import _kps

__all__ = ["call", "ops", "list_ops", "describe", "Tensor"]


class Tensor:
    """A KPS output with no framework to return it in: a DLPack producer.

    Hand it to any framework (numpy.from_dlpack, torch.from_dlpack, cupy.from_dlpack; as
    many times as you like) or call .numpy() for a CPU tensor.
    """

    __slots__ = ("_core",)

    def __init__(self, core):
        self._core = core  # _kps.Tensor

    @property
    def shape(self):
        return tuple(self._core.shape)

    @property
    def dtype(self):
        return self._core.dtype

    @property
    def device(self):
        return self._core.device

    def __dlpack__(self, *, stream=None, **kwargs):
        return self._core.__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self):
        return self._core.__dlpack_device__()

    def numpy(self):
        a = self._core.numpy_bits()
        if self.dtype == "bfloat16":
            import ml_dtypes

            a = a.view(ml_dtypes.bfloat16)
        return a

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __repr__(self):
        return f"kps.Tensor(shape={self.shape}, dtype={self.dtype}, device={self.device})"


_FRAMEWORKS = {"numpy": "numpy", "torch": "torch", "cupy": "cupy", "jax": "jax", "jaxlib": "jax"}
_framework_by_type = {}


def _framework(x):
    """The framework an array belongs to: numpy, torch, cupy, jax, kps, or "" (any other);
    looked up once per type."""
    t = type(x)
    f = _framework_by_type.get(t)
    if f is None:
        f = "kps" if issubclass(t, Tensor) else _FRAMEWORKS.get(t.__module__.split(".")[0], "")
        if f == "numpy":
            import numpy as np

            f = "numpy" if issubclass(t, np.ndarray) else ""  # NumPy scalars: converted below
        _framework_by_type[t] = f
    return f


_bf16_by_dtype = {}


def _is_bf16(dtype):
    """True for NumPy's ml_dtypes.bfloat16 (checked once per dtype object)."""
    r = _bf16_by_dtype.get(dtype)
    if r is None:
        r = _bf16_by_dtype[dtype] = dtype.name == "bfloat16"
    return r


def _dlpack_device(x):
    try:
        return x.__dlpack_device__()
    except AttributeError:
        return (1, 0)  # a buffer: CPU


_CUDA = 2  # DLPack's kDLCUDA


def _current_stream(framework, device_id):
    """The caller's current CUDA stream, as an int, for inputs of `framework`."""
    if framework == "torch":
        import torch

        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # no Stream object per call
        if raw is not None:
            return raw(device_id)
        return torch.cuda.current_stream(device_id).cuda_stream
    if framework == "cupy":
        import cupy

        return cupy.cuda.get_current_stream().ptr
    return 0  # the legacy default stream


def _stream_int(stream):
    if stream is None:
        return None
    for attr in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    return int(stream)


_PLAIN = (bool, int, float, str, list, tuple)


def _attr_value(value):
    """A dtype object (NumPy's, PyTorch's) as its name; anything else as it is."""
    if isinstance(value, _PLAIN):
        return value
    if type(value).__module__.split(".")[0] in ("numpy", "torch") or type(value).__name__ == "dtype":
        return str(value).replace("torch.", "")
    return value


class _Op:
    """What call() needs of an op's schema, looked up once."""

    __slots__ = ("inputs", "index", "outputs")

    def __init__(self, schema):
        self.inputs = tuple(i["name"] for i in schema["inputs"])
        self.index = {n: k for k, n in enumerate(self.inputs)}
        names = tuple(o["name"] for o in schema["outputs"])
        typename = schema["name"].title().replace("_", "") + "Outputs"
        self.outputs = _namedtuple(typename, names) if len(names) > 1 else None


_ops = {}


def call(op, *args, stream=None, device=None, **kwargs):
    """Runs op `op` by name.

    Positional arguments are the op's inputs in schema order; keyword arguments are inputs
    (by input name) or attributes. `stream`: a CUDA stream (torch.cuda.Stream, a CuPy
    stream or an int handle) instead of the inputs' framework's current one. `device`:
    "cpu" or "cuda" for ops without inputs. Returns the output, or a named tuple of them.
    """
    info = _ops.get(op)
    if info is None:
        info = _ops[op] = _Op(_kps.schema(op))
    names = info.inputs
    if len(args) > len(names):
        raise TypeError(f"op '{op}' takes {len(names)} inputs ({', '.join(names)}), got {len(args)}")
    attrs = {}
    if kwargs:
        bound = list(args) + [None] * (len(names) - len(args))
        for key, value in kwargs.items():
            k = info.index.get(key)
            if k is None:
                attrs[key] = _attr_value(value)
            elif k < len(args) or bound[k] is not None:
                raise TypeError(f"op '{op}': input '{key}' given twice")
            else:
                bound[k] = value
    else:
        bound = args

    framework = None  # the inputs' one framework; "" once they differ
    cuda_device = None
    inputs = []
    for name, x in zip(names, bound):
        if x is None:
            continue
        f = _framework(x)
        if f == "" and (not hasattr(x, "__dlpack__") or type(x).__module__ == "numpy"):
            import numpy as np

            x = np.asarray(x)  # NumPy scalars, Python numbers and sequences
            f = "numpy"
        if f != "numpy":
            dev = x.__dlpack_device__() if f != "" or hasattr(x, "__dlpack_device__") else (1, 0)
            if dev[0] == _CUDA:
                cuda_device = dev[1]
        framework = f if framework is None or framework == f else ""
        inputs.append((name, x, f))
    if framework is None or framework == "kps":
        framework = ""

    handle = _stream_int(stream)
    if cuda_device is not None and handle is None:
        handle = _current_stream(framework, cuda_device)
    args_out = []
    for name, x, f in inputs:
        view_as = None
        if f == "numpy":
            if _is_bf16(x.dtype):
                import numpy as np

                x, view_as = x.view(np.uint16), "bfloat16"
        elif f == "kps":
            x = x.__dlpack__(stream=handle if x.device == "cuda" and handle else None)
        elif cuda_device is not None and hasattr(x, "__dlpack__") and _dlpack_device(x)[0] == _CUDA:
            # DLPack's stream rule: the producer orders its work before our stream.
            x = x.__dlpack__(stream=handle if handle else 1)
        args_out.append(_kps.InputArg(name, x, view_as))

    outs = _kps.call(op, args_out, attrs, handle or 0, device or "cpu", framework, framework == "numpy")
    if len(outs) == 1:
        array, bf16 = outs[0]
        return _wrap(array, framework, bf16)
    if not outs:
        return None  # an in-place op (index_add_)
    return info.outputs(*[_wrap(array, framework, bf16) for array, bf16 in outs])


def _wrap(array, framework, is_bf16):
    """An output array as the caller gets it; is_bf16: it holds bfloat16 as uint16 bits."""
    if framework == "numpy":
        if is_bf16:
            import ml_dtypes

            return array.view(ml_dtypes.bfloat16)
        return array
    if framework in ("torch", "cupy", "jax"):
        return array
    return Tensor(array)


def list_ops():
    """The names of every registered op, sorted."""
    return list(_kps.list_ops())


def describe(op):
    """Op `op`'s inputs, outputs, attributes and kernels, as `kps describe` prints them."""
    return _kps.describe(op)


from . import ops  # noqa: E402  (needs call above)
