"""One function per registered op, generated from its schema: kps.ops.sum(x, dims=[1]).

Each function's signature lists the op's inputs (positional; optional ones default to
None) and its attributes (keyword-only, with their defaults), and its docstring is the
op's doc with every input, output and attribute described. The functions run the op as kps.call does, without binding arguments again.
"""

import builtins as _builtins
import inspect as _inspect
import keyword as _keyword

from . import _kps

_TYPES = {"bool": bool, "int": int, "float": float, "string": str, "ints": "list[int]", "dtype": str}


def _make(op):
    from . import _op_info, _run

    schema = _kps.schema(op)
    params = []
    ins = schema["inputs"]
    for k, i in enumerate(ins):
        # An optional input defaults to None only when no required input follows it
        # (spmv's values comes before x): elsewhere None is passed explicitly.
        trailing = _builtins.all(j["optional"] for j in ins[k:])  # `all` here is kps.ops.all
        default = None if trailing else _inspect.Parameter.empty
        params.append(_inspect.Parameter(i["name"], _inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default))
    for a in schema["attrs"]:
        default = _inspect.Parameter.empty if a["required"] else a["default"]
        params.append(
            _inspect.Parameter(a["name"], _inspect.Parameter.KEYWORD_ONLY, default=default,
                               annotation=_TYPES.get(a["type"], _inspect.Parameter.empty)))
    if not schema["inputs"]:
        params.append(_inspect.Parameter("device", _inspect.Parameter.KEYWORD_ONLY, default=None))
    params.append(_inspect.Parameter("stream", _inspect.Parameter.KEYWORD_ONLY, default=None))
    # The function is compiled from source, so that Python binds its arguments (an
    # inspect.Signature.bind per call costs microseconds). Defaults live in a namespace.
    names = [p.name for p in params]
    defaults = {f"_d{k}": p.default for k, p in enumerate(params) if p.default is not _inspect.Parameter.empty}
    head, star = [], False
    for k, p in enumerate(params):
        if p.kind == _inspect.Parameter.KEYWORD_ONLY and not star:
            head.append("*")
            star = True
        head.append(p.name + (f"=_d{k}" if f"_d{k}" in defaults else ""))
    inputs = [i["name"] for i in schema["inputs"]]
    attrs = [a["name"] for a in schema["attrs"]]
    # Straight to kps._run: the arguments are already bound to inputs and attributes.
    body = (f"    return _run({op!r}, _info, ({''.join(n + ', ' for n in inputs)}), "
            + "{" + ", ".join(f"{n!r}: {n}" for n in attrs) + "}, stream, "
            + ("device" if not inputs else "None") + ")")
    src = f"def _fn({', '.join(head)}):\n{body}\n"
    namespace = dict(defaults, _run=_run, _info=_op_info(op))
    exec(src, namespace)  # noqa: S102 (names come from the registry's schemas)
    fn = namespace["_fn"]

    lines = [schema["doc"], "", "Inputs:"]
    lines += [f"    {i['name']}{' (optional)' if i['optional'] else ''}: {i['doc']}" for i in schema["inputs"]]
    lines += ["", "Outputs:"] + [f"    {o['name']}: {o['doc']}" for o in schema["outputs"]]
    if schema["attrs"]:
        lines += ["", "Attributes:"]
        for a in schema["attrs"]:
            default = "required" if a["required"] else f"default {a['default']!r}"
            lines.append(f"    {a['name']} ({a['type']}, {default}): {a['doc']}")
    if not schema["inputs"]:
        lines += ["", "device: \"cpu\" (default), \"cuda\" (the current GPU) or \"cuda:N\"."]
    lines += ["", "stream: a CUDA stream instead of the inputs' framework's current one."]
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = "\n".join(lines)
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
