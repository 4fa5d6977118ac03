"""tf.raw_ops: every registered op as a function of its op def's arguments.

`tf.raw_ops.MatMul(a=x, b=y, transpose_b=True)` adds one MatMul node, as TensorFlow's
raw_ops do: arguments by keyword only (the op def's input names and the attrs that are
not inferred from the inputs), plus `name`. The result is what `apply_op` gives: a Tensor,
the Operation of an op without outputs, or the op's named tuple of outputs. Ops whose names
start with "_" (the runtime's own) are not listed.
"""

from __future__ import annotations

from tensorflux.framework import op_registry
from tensorflux.framework.op_def_library import apply_op

_FUNCTIONS: dict = {}

# Where TensorFlow's raw_ops name an argument otherwise than the op def here (its api_defs
# rename some op-def arguments): raw_ops name -> op-def name, per op. Checked against
# TF 2.21's raw_ops signatures for every op both have.
_AXIS = {"axis": "reduction_indices"}
_RENAMED = {
    "ExpandDims": {"axis": "dim"}, "Select": {"x": "t", "y": "e"},
    "Where": {"condition": "input"}, "Split": {"axis": "split_dim"},
    "SplitV": {"axis": "split_dim"}, "Squeeze": {"axis": "squeeze_dims"},
    "Sum": _AXIS, "Mean": _AXIS, "Prod": _AXIS, "Max": _AXIS, "Min": _AXIS, "All": _AXIS,
    "Any": _AXIS, "EuclideanNorm": _AXIS,
    "Igamma": {"a": "x", "x": "y"}, "Igammac": {"a": "x", "x": "y"},
    "IgammaGradA": {"a": "x", "x": "y"}, "Polygamma": {"a": "x", "x": "y"},
    "Zeta": {"q": "y"},
}


def _make(op_type: str):
    renamed = _RENAMED.get(op_type, {})

    def raw_op(*args, name=None, **kwargs):
        if args:
            raise TypeError(f"raw_ops.{op_type}() only takes keyword arguments "
                            f"(got {len(args)} positional).")
        if renamed:
            kwargs = {renamed.get(k, k): v for k, v in kwargs.items()}
        return apply_op(op_type, name=name, **kwargs)

    opdef = op_registry.get(op_type)
    raw_op.__name__ = raw_op.__qualname__ = op_type
    raw_op.__doc__ = (f"The {op_type} op. Inputs: "
                      f"{', '.join(a.name for a in opdef.inputs) or 'none'}.")
    return raw_op


def lower_case_name(op_type: str) -> str:
    """TensorFlow's generated-wrapper name of an op ("MatMul" -> "mat_mul", "Conv2D" ->
    "conv2d", "BatchMatMulV2" -> "batch_mat_mul_v2", "LRN" -> "lrn"): an underscore before
    a capital that follows a small letter or precedes one."""
    out = []
    for i, c in enumerate(op_type):
        if c.isupper() and i > 0 and (op_type[i - 1].islower() or
                                      (i + 1 < len(op_type) and op_type[i + 1].islower())):
            out.append("_")
        out.append(c.lower())
    return "".join(out)


_GENERATED: dict = {}


def generated_wrapper(function_name: str):
    """The `gen_*_ops` function `function_name` (e.g. `gen_nn_ops.conv2d`): the op's inputs
    then its attrs not inferred from them (those without defaults first), by position or by
    keyword, and `name`; None when no registered op has that name."""
    if not _GENERATED:
        for op_type in op_registry.registered_ops():
            if not op_type.startswith("_"):
                _GENERATED.setdefault(lower_case_name(op_type), op_type)
    # Ops TensorFlow hides get a leading underscore there (`gen_math_ops._sum`).
    op_type = _GENERATED.get(function_name) or _GENERATED.get(function_name[1:]
                                                               if function_name[:1] == "_"
                                                               else None)
    if op_type is None:
        return None
    opdef = op_registry.get(op_type)
    back = {v: k for k, v in _RENAMED.get(op_type, {}).items()}
    inferred = {a.type_attr for a in opdef.inputs} | {a.number_attr for a in opdef.inputs} | \
        {a.type_list_attr for a in opdef.inputs}
    attrs = [a for a in opdef.attrs.values() if a.name not in inferred]
    order = [back.get(a.name, a.name) for a in opdef.inputs] + \
        [back.get(a.name, a.name) for a in attrs if not a.has_default] + \
        [back.get(a.name, a.name) for a in attrs if a.has_default]
    raw = __getattr__(op_type)

    def wrapper(*args, name=None, **kwargs):
        if len(args) > len(order):
            raise TypeError(f"{function_name}() takes {len(order)} positional arguments but "
                            f"{len(args)} were given")
        for key, value in zip(order[:len(args)], args, strict=True):
            if key in kwargs:
                raise TypeError(f"{function_name}() got multiple values for argument '{key}'")
            kwargs[key] = value
        return raw(name=name, **kwargs)

    wrapper.__name__ = wrapper.__qualname__ = function_name
    wrapper.arg_names = tuple(order)
    wrapper.__doc__ = f"The {op_type} op: {function_name}({', '.join(order)}, name=None)."
    return wrapper


def __getattr__(name: str):
    fn = _FUNCTIONS.get(name)
    if fn is not None:
        return fn
    if name.startswith("_") or op_registry.lookup(name) is None:
        raise AttributeError(f"module 'tensorflux.raw_ops' has no attribute '{name}'")
    return _FUNCTIONS.setdefault(name, _make(name))


def __dir__() -> list[str]:
    return sorted(n for n in op_registry.registered_ops() if not n.startswith("_"))
