"""Control-flow ops and helpers: NoOp, `tf.group`, `tf.tuple`.

(Switch, Merge, Enter, Exit, NextIteration, cond and while_loop arrive with issue #4.)
"""

from __future__ import annotations

from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.operation import Operation, Tensor

# The TF1 public names of this module.
__all__ = ["no_op", "group", "tuple"]

define_op("NoOp", shape_fn=lambda op: [])
not_differentiable("NoOp")


def no_op(name: str | None = None) -> Operation:
    """Does nothing; useful as a target carrying control dependencies (`tf.no_op`)."""
    return apply_op("NoOp", name=name or "NoOp")


def _as_op(x) -> Operation:
    if isinstance(x, Operation):
        return x
    if isinstance(x, Tensor):
        return x.op
    if hasattr(x, "_as_graph_element"):
        return _as_op(x._as_graph_element())
    if hasattr(x, "op"):
        return x.op
    raise TypeError(f"Expected an Operation or Tensor, got {x!r}")


def _flatten(inputs):
    for x in inputs:
        if isinstance(x, (list, tuple)):
            yield from _flatten(x)
        elif isinstance(x, dict):
            yield from _flatten(list(x.values()))
        elif x is not None:
            yield x


def group(*inputs, name: str | None = None) -> Operation:
    """An op that runs after all of `inputs` (`tf.group`); outputs nothing.

    Ops on several devices are first grouped per device, as TensorFlow does, so the final
    NoOp waits on one NoOp per device.
    """
    ops = [_as_op(x) for x in _flatten(inputs)]
    g = graph_lib.get_graph_from_inputs(ops) if ops else graph_lib.get_default_graph()
    with g.as_default(), graph_lib.name_scope(name, "group_deps", ops) as scope:
        by_device: dict[str, list[Operation]] = {}
        for op in ops:
            by_device.setdefault(op.device, []).append(op)
        if len(by_device) <= 1:
            with g.control_dependencies(ops):
                return no_op(name=scope)
        deps = []
        for dev in sorted(by_device):
            with g.device(dev), g.control_dependencies(by_device[dev]):
                deps.append(no_op())
        with g.control_dependencies(deps):
            return no_op(name=scope)


def tuple(tensors, name: str | None = None, control_inputs=None):  # noqa: A001
    """Copies of `tensors` that are available only after all of them are (`tf.tuple`)."""
    from tensorflux.ops import array_ops

    tensors = list(tensors)
    deps = [t for t in tensors if t is not None] + list(control_inputs or ())
    with graph_lib.name_scope(name, "tuple", [t for t in tensors if t is not None]):
        gate = group(*deps)
        out = []
        for t in tensors:
            if t is None:
                out.append(None)
                continue
            with graph_lib.control_dependencies([gate]):
                out.append(array_ops.identity(t))
        return out
