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


def _framework(x):
    """The framework an array belongs to: numpy, torch, cupy, jax, or "" (any other)."""
    module = type(x).__module__.split(".")[0]
    if module in ("numpy", "torch", "cupy"):
        return module
    if module in ("jax", "jaxlib"):
        return "jax"
    if isinstance(x, Tensor):
        return "kps"
    return ""


_bf16_by_dtype = {}


def _is_bf16_numpy(x):
    """True for a NumPy array of ml_dtypes.bfloat16 (checked once per dtype object)."""
    if type(x).__module__.split(".")[0] != "numpy":
        return False
    dt = x.dtype
    r = _bf16_by_dtype.get(dt)
    if r is None:
        r = _bf16_by_dtype[dt] = dt.name == "bfloat16"
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


def call(op, *args, stream=None, device=None, **kwargs):
    """Runs op `op` by name.

    Positional arguments are the op's inputs in schema order; keyword arguments are inputs
    (by input name) or attributes. `stream`: a CUDA stream (torch.cuda.Stream, a CuPy
    stream or an int handle) instead of the inputs' framework's current one. `device`:
    "cpu" or "cuda" for ops without inputs. Returns the output, or a named tuple of them.
    """
    schema = _schema(op)
    input_names = [i["name"] for i in schema["inputs"]]
    if len(args) > len(input_names):
        raise TypeError(f"op '{op}' takes {len(input_names)} inputs ({', '.join(input_names)}), got {len(args)}")
    bound = dict(zip(input_names, args))
    attrs = {}
    for key, value in kwargs.items():
        if key in input_names:
            if key in bound:
                raise TypeError(f"op '{op}': input '{key}' given twice")
            bound[key] = value
        else:
            attrs[key] = value
    for name, value in attrs.items():
        if hasattr(value, "name") and type(value).__module__.split(".")[0] in ("numpy", "torch"):
            attrs[name] = str(value).replace("torch.", "")  # a dtype object as its name
        elif type(value).__name__ == "dtype":
            attrs[name] = str(value)

    frameworks = set()
    cuda_device = None
    inputs = []
    for name in input_names:
        x = bound.get(name)
        if x is None:
            continue
        if not hasattr(x, "__dlpack__") and not isinstance(x, Tensor):
            import numpy as np

            x = np.asarray(x)  # NumPy scalars, Python numbers and sequences
        frameworks.add(_framework(x))
        dev = _dlpack_device(x)
        if dev[0] == _CUDA:
            cuda_device = dev[1]
        inputs.append((name, x))
    framework = frameworks.pop() if len(frameworks) == 1 else ""
    if framework == "kps":
        framework = ""

    handle = _stream_int(stream)
    if cuda_device is not None and handle is None:
        handle = _current_stream(framework, cuda_device)
    args_out = []
    for name, x in inputs:
        view_as = None
        if _is_bf16_numpy(x):
            import numpy as np

            x, view_as = x.view(np.uint16), "bfloat16"
        elif isinstance(x, Tensor):
            x = x.__dlpack__(stream=handle if x.device == "cuda" and handle else None)
        elif _dlpack_device(x)[0] == _CUDA and hasattr(x, "__dlpack__"):
            # DLPack's stream rule: the producer orders its work before our stream.
            x = x.__dlpack__(stream=handle if handle else 1)
        args_out.append(_kps.InputArg(name, x, view_as))

    bf16_bits = framework == "numpy"
    dev = device or "cpu"
    outs = _kps.call(op, args_out, attrs, handle or 0, dev, framework, bf16_bits)
    results = []
    for array, bf16 in outs:
        results.append(_wrap(array, framework, bf16))
    if not results:
        return None  # an in-place op (index_add_)
    if len(results) == 1:
        return results[0]
    return _output_tuple(op, tuple(o["name"] for o in schema["outputs"]))(*results)


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


_schemas = {}
_tuples = {}


def _schema(op):
    s = _schemas.get(op)
    if s is None:
        s = _schemas[op] = _kps.schema(op)
    return s


def _output_tuple(op, names):
    t = _tuples.get(op)
    if t is None:
        t = _tuples[op] = _namedtuple(op.title().replace("_", "") + "Outputs", names)
    return t


def list_ops():
    """The names of every registered op, sorted."""
    return list(_kps.list_ops())


def describe(op):
    """Op `op`'s inputs, outputs, attributes and kernels, as `kps describe` prints them."""
    return _kps.describe(op)


from . import ops  # noqa: E402  (needs call and _schema above)
