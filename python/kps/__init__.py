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

__all__ = ["call", "ops", "dist", "list_ops", "describe", "Tensor"]


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
        return _torch_current_stream(device_id)
    if framework == "cupy":
        import cupy

        return cupy.cuda.get_current_stream().ptr
    return 0  # the legacy default stream


def _torch_current_stream(device_id):
    """torch's current stream on `device_id` as an int; the C function where torch has it
    (no torch.cuda.Stream object per call)."""
    global _torch_current_stream
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    _torch_current_stream = raw if raw is not None else lambda d: torch.cuda.current_stream(d).cuda_stream
    return _torch_current_stream(device_id)


def _stream_int(stream):
    if stream is None:
        return None
    for attr in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    return int(stream)


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
_fast_call = _kps.fast_call


def _op_info(op):
    """op's _Op, made on first use."""
    info = _ops.get(op)
    if info is None:
        info = _ops[op] = _Op(_kps.schema(op))
    return info


def call(op, /, *args, stream=None, device=None, **kwargs):
    """Runs op `op` by name (positional only: the collectives have an attribute `op`).

    Positional arguments are the op's inputs in schema order; keyword arguments are inputs
    (by input name) or attributes. `stream`: a CUDA stream (torch.cuda.Stream, a CuPy
    stream or an int handle) instead of the inputs' framework's current one. `device`:
    "cpu", "cuda" (the current GPU) or "cuda:N" (or a torch.device) for ops without inputs.
    Returns the output, or a named tuple of them.
    """
    info = _ops.get(op) or _op_info(op)
    names = info.inputs
    if len(args) > len(names):
        raise TypeError(f"op '{op}' takes {len(names)} inputs ({', '.join(names)}), got {len(args)}")
    if not kwargs:
        return _run(op, info, args, {}, stream, device)
    attrs = {}
    bound = list(args) + [None] * (len(names) - len(args))
    for key, value in kwargs.items():
        k = info.index.get(key)
        if k is None:
            attrs[key] = value
        elif k < len(args) or bound[k] is not None:
            raise TypeError(f"op '{op}': input '{key}' given twice")
        else:
            bound[k] = value
    return _run(op, info, bound, attrs, stream, device)


def _run(op, info, bound, attrs, stream, device):
    """call() once bound: `bound` holds the inputs in schema order (None where absent; it
    may end early), `attrs` the attributes by name. NumPy arrays and torch tensors on the
    caller's current stream take the short path: all in C++ (kps._kps.fast_call), else
    NotImplemented and the long way below."""
    if stream is None:
        out = _fast_call(op, bound, attrs, info.outputs)
        if out is not NotImplemented:
            return out
    framework = None  # the inputs' one framework; "" once they differ
    cuda_device = None
    handle = None if stream is None else _stream_int(stream)
    arrays = list(bound)
    views = None  # per input, a dtype name its elements are viewed as (bfloat16 NumPy arrays)
    later = None  # (index, framework) of inputs exported once the stream is known
    for k, x in enumerate(bound):
        if x is None:
            continue
        f = _framework_by_type.get(type(x)) or _framework(x)
        if f == "torch":
            dev = x.get_device()  # -1 on the CPU; a C call, unlike __dlpack_device__
            if dev >= 0:
                cuda_device = dev
            if handle is None and not x.requires_grad:
                # The call runs on torch's current stream, so DLPack's stream rule holds
                # without an event: the capsule straight from torch's C function.
                arrays[k] = _torch_to_dlpack(x)
            else:
                later = (later or []) + [(k, f)]
        else:
            if f == "" and (not hasattr(x, "__dlpack__") or type(x).__module__ == "numpy"):
                import numpy as np

                x = arrays[k] = np.asarray(x)  # NumPy scalars, Python numbers and sequences
                f = "numpy"
            if f == "numpy":
                if _is_bf16(x.dtype):
                    import numpy as np

                    arrays[k] = x.view(np.uint16)
                    views = views or [None] * len(bound)
                    views[k] = "bfloat16"
            else:
                dev = x.__dlpack_device__() if f != "" or hasattr(x, "__dlpack_device__") else (1, 0)
                if dev[0] == _CUDA:
                    cuda_device = dev[1]
                later = (later or []) + [(k, f)]
        framework = f if framework is None or framework == f else ""
    if framework is None or framework == "kps":
        framework = ""
    if cuda_device is not None and handle is None:
        handle = _current_stream(framework, cuda_device)
    if later:
        for k, f in later:
            x = arrays[k]
            if f == "torch":
                # Torch orders its current stream before `handle`, or refuses a tensor that
                # requires grad (naming detach()). It exports a CUDA tensor only while the
                # tensor's GPU is torch's current one (a tensor of cuda:1 under cuda:0 raised).
                if x.is_cuda:
                    import torch

                    with torch.cuda.device(x.get_device()):
                        arrays[k] = x.__dlpack__(stream=handle if handle else 1)
                else:
                    arrays[k] = x.__dlpack__()
            elif f == "kps":
                arrays[k] = x.__dlpack__(stream=handle if x.device.startswith("cuda") and handle else None)
            elif cuda_device is not None and hasattr(x, "__dlpack__") and _dlpack_device(x)[0] == _CUDA:
                # DLPack's stream rule: the producer orders its work before our stream.
                arrays[k] = x.__dlpack__(stream=handle if handle else 1)

    if framework == "torch":
        outs = _kps.call(op, arrays, views, attrs, handle or 0, str(device) if device else "cpu", "capsule", False)
        if len(outs) == 1:
            return _torch_from_dlpack(outs[0][0])
        if not outs:
            return None
        return info.outputs(*[_torch_from_dlpack(array) for array, _ in outs])
    outs = _kps.call(op, arrays, views, attrs, handle or 0, str(device) if device else "cpu", framework, framework == "numpy")
    if len(outs) == 1:
        array, bf16 = outs[0]
        return _wrap(array, framework, bf16)
    if not outs:
        return None  # an in-place op (index_add_)
    return info.outputs(*[_wrap(array, framework, bf16) for array, bf16 in outs])


def _torch_to_dlpack(x):
    """torch's C-level DLPack export (Tensor.__dlpack__ is Python: about 2 us on a CPU)."""
    global _torch_to_dlpack
    import torch

    _torch_to_dlpack = getattr(torch._C, "_to_dlpack", None) or torch.utils.dlpack.to_dlpack
    return _torch_to_dlpack(x)


def _torch_from_dlpack(capsule):
    """torch's C-level DLPack import of a KPS output's capsule (torch.from_dlpack is Python)."""
    global _torch_from_dlpack
    import torch

    _torch_from_dlpack = getattr(torch._C, "_from_dlpack", None) or torch.utils.dlpack.from_dlpack
    return _torch_from_dlpack(capsule)


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
from . import dist  # noqa: E402  (re-exports the collectives of ops)
