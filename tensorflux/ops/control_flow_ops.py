"""Control-flow ops and helpers: NoOp, `tf.group`, `tf.tuple`, and the primitives of
dynamic control flow (paper §3.4): Switch, Merge, Enter, Exit, NextIteration, LoopCond,
ControlTrigger. The executor gives them their meaning (tensorflux/runtime/executor.py).

(The builders tf.cond and tf.while_loop, and gradients through them, arrive with issue #4.)
"""

from __future__ import annotations

import builtins

from tensorflux.framework import common_shapes, tensor_shape
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
        if isinstance(x, (list, builtins.tuple)):  # `tuple` is tf.tuple in this module
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


# ---- primitives of dynamic control flow ----------------------------------------------------


def _merge_shape(op):
    shape = op.inputs[0].shape
    for t in op.inputs[1:]:
        shape = shape.most_specific_compatible_shape(t.shape)
    return [shape, tensor_shape.TensorShape([])]


define_op("Switch", inputs=["data: T", "pred: bool"], outputs=["output_false: T",
                                                                 "output_true: T"],
          attrs=["T: type"], shape_fn=lambda op: [op.inputs[0].shape] * 2, control_flow=True)
define_op("Merge", inputs=["inputs: N * T"], outputs=["output: T", "value_index: int32"],
          attrs=["T: type", "N: int >= 1"], shape_fn=_merge_shape, control_flow=True)
define_op("Enter", inputs=["data: T"], outputs=["output: T"],
          attrs=["T: type", "frame_name: string", "is_constant: bool = false",
                 "parallel_iterations: int = 10"],
          shape_fn=common_shapes.unchanged, control_flow=True)
define_op("Exit", inputs=["data: T"], outputs=["output: T"], attrs=["T: type"],
          shape_fn=common_shapes.unchanged, control_flow=True)
define_op("NextIteration", inputs=["data: T"], outputs=["output: T"], attrs=["T: type"],
          shape_fn=common_shapes.unchanged, control_flow=True)
define_op("LoopCond", inputs=["input: bool"], outputs=["output: bool"],
          shape_fn=common_shapes.unchanged, control_flow=True)
define_op("ControlTrigger", shape_fn=lambda op: [], control_flow=True)
# Until the cond/while_loop builders (issue #4) register their frame-aware gradients.
not_differentiable("Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond",
                   "ControlTrigger")


def switch(data, pred, name: str | None = None):
    """(output_false, output_true): `data` on the side `pred` selects; the other is dead."""
    return apply_op("Switch", data=data, pred=pred, name=name or "Switch")


def merge(inputs, name: str | None = None):
    """(output, value_index): the first input to become available."""
    return apply_op("Merge", inputs=list(inputs), name=name or "Merge")
