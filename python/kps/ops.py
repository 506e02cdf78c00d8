"""One function per registered op, generated from its schema: kps.ops.sum(x, dims=[1]).

Each function's signature lists the op's inputs (positional; optional ones default to
None) and its attributes (keyword-only, with their defaults), and its docstring is the
op's doc with every input, output and attribute described. The functions call kps.call.
"""

import inspect as _inspect
import keyword as _keyword

from . import _kps

_TYPES = {"bool": bool, "int": int, "float": float, "string": str, "ints": "list[int]", "dtype": str}


def _make(op):
    from . import call

    schema = _kps.schema(op)
    params = []
    for i in schema["inputs"]:
        default = None if i["optional"] else _inspect.Parameter.empty
        params.append(_inspect.Parameter(i["name"], _inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default))
    for a in schema["attrs"]:
        default = _inspect.Parameter.empty if a["required"] else a["default"]
        params.append(
            _inspect.Parameter(a["name"], _inspect.Parameter.KEYWORD_ONLY, default=default,
                               annotation=_TYPES.get(a["type"], _inspect.Parameter.empty)))
    if not schema["inputs"]:
        params.append(_inspect.Parameter("device", _inspect.Parameter.KEYWORD_ONLY, default=None))
    params.append(_inspect.Parameter("stream", _inspect.Parameter.KEYWORD_ONLY, default=None))
    signature = _inspect.Signature(params)
    input_names = [i["name"] for i in schema["inputs"]]

    def fn(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        inputs = [bound.arguments.get(n) for n in input_names]
        while inputs and inputs[-1] is None:
            inputs.pop()
        rest = {k: v for k, v in bound.arguments.items() if k not in input_names}
        return call(op, *inputs, **rest)

    lines = [schema["doc"], "", "Inputs:"]
    lines += [f"    {i['name']}{' (optional)' if i['optional'] else ''}: {i['doc']}" for i in schema["inputs"]]
    lines += ["", "Outputs:"] + [f"    {o['name']}: {o['doc']}" for o in schema["outputs"]]
    if schema["attrs"]:
        lines += ["", "Attributes:"]
        for a in schema["attrs"]:
            default = "required" if a["required"] else f"default {a['default']!r}"
            lines.append(f"    {a['name']} ({a['type']}, {default}): {a['doc']}")
    if not schema["inputs"]:
        lines += ["", "device: \"cpu\" (default) or \"cuda\"."]
    lines += ["", "stream: a CUDA stream instead of the inputs' framework's current one."]
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = "\n".join(lines)
    fn.__signature__ = signature
    fn.__module__ = __name__
    return fn


def _populate():
    names = []
    for op in _kps.list_ops():
        attr = op + "_" if _keyword.iskeyword(op) else op
        globals()[attr] = _make(op)
        names.append(attr)
    return names


__all__ = _populate()
