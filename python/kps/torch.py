"""KPS's ops as PyTorch operators: kps.torch.register() defines torch.ops.kps.<op> for
every op (or the ones named) through torch.library, with a fake implementation from KPS's
own shape inference (kps._kps.infer), so that they trace under torch.compile.

    import torch, kps.torch
    kps.torch.register()
    y = torch.ops.kps.add(x, x, alpha=2.0)
    f = torch.compile(lambda x: torch.ops.kps.sum(x, dims=[1]) * 2)

torch is imported only here: the kps package never needs it.
"""

import torch as _torch

from . import _kps, call

_TYPES = {"bool": "bool", "int": "int", "float": "float", "string": "str", "ints": "int[]", "dtype": "str"}
_library = None
_registered = set()


def _torch_schema(s):
    ins = [f"Tensor{'?' if i['optional'] else ''} {i['name']}" for i in s["inputs"]]
    attrs = []
    for a in s["attrs"]:
        t = _TYPES[a["type"]]
        if a["required"]:
            attrs.append(f"{t} {a['name']}")
            continue
        d = a["default"]
        if isinstance(d, bool):
            d = "True" if d else "False"
        elif isinstance(d, str):
            d = '"' + d + '"'
        elif isinstance(d, float):
            if d != d or d in (float("inf"), float("-inf")):
                # torch's schemas have no literal for these: the argument is optional, and
                # None (dropped before the call) leaves KPS's default in place.
                attrs.append(f"{t}? {a['name']}=None")
                continue
            d = repr(d)
        elif isinstance(d, list):
            d = "[" + ", ".join(str(v) for v in d) + "]"
        attrs.append(f"{t} {a['name']}={d}")
    args = ", ".join(ins + (["*"] + attrs if attrs else []))
    outs = s["outputs"]
    ret = "Tensor" if len(outs) == 1 else "(" + ", ".join("Tensor" for _ in outs) + ")"
    return f"({args}) -> {ret}"


def _fake(op, s):
    names = [i["name"] for i in s["inputs"]]
    dtypes = {"bool": _torch.bool, "int8": _torch.int8, "uint8": _torch.uint8, "int16": _torch.int16,
              "int32": _torch.int32, "int64": _torch.int64, "float16": _torch.float16, "bfloat16": _torch.bfloat16,
              "float32": _torch.float32, "float64": _torch.float64}

    def fake(*args, **kwargs):
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        inputs = []
        device = None
        for name, t in zip(names, args):
            if t is None:
                continue
            device = t.device
            inputs.append((name, list(t.shape), list(t.stride()), str(t.dtype).replace("torch.", ""),
                           "cuda" if t.is_cuda else "cpu"))
        outs = []
        for shape, dtype, dynamic in _kps.infer(op, inputs, kwargs):
            if dynamic:  # nonzero, masked_select: the first dim depends on the values
                ctx = _torch.library.get_ctx()
                shape = [ctx.new_dynamic_size()] + shape[1:] if shape else [ctx.new_dynamic_size()]
            outs.append(_torch.empty(shape, dtype=dtypes[dtype], device=device))
        return outs[0] if len(outs) == 1 else tuple(outs)

    return fake


def _real(op, s):
    def real(*args, **kwargs):
        out = call(op, *args, **{k: v for k, v in kwargs.items() if v is not None})
        return tuple(out) if isinstance(out, tuple) else out

    return real


def register(ops=None):
    """Defines torch.ops.kps.<op> for `ops` (default: every op with outputs). Idempotent."""
    global _library
    if _library is None:
        _library = _torch.library.Library("kps", "DEF")
    for op in ops if ops is not None else _kps.list_ops():
        if op in _registered:
            continue
        s = _kps.schema(op)
        if not s["outputs"]:
            continue  # in-place ops (index_add_) would need mutation annotations
        _library.define(op + _torch_schema(s))
        _library.impl(op, _real(op, s), "CPU")
        _library.impl(op, _real(op, s), "CUDA")
        _torch.library.register_fake("kps::" + op, _fake(op, s), lib=_library)
        _registered.add(op)
