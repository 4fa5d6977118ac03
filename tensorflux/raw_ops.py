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


def __getattr__(name: str):
    fn = _FUNCTIONS.get(name)
    if fn is not None:
        return fn
    if name.startswith("_") or op_registry.lookup(name) is None:
        raise AttributeError(f"module 'tensorflux.raw_ops' has no attribute '{name}'")
    return _FUNCTIONS.setdefault(name, _make(name))


def __dir__() -> list[str]:
    return sorted(n for n in op_registry.registered_ops() if not n.startswith("_"))
