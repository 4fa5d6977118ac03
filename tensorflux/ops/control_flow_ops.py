"""Control-flow ops: NoOp and the primitives of dynamic control flow (paper §3.4: Switch,
Merge, Enter, Exit, NextIteration, LoopCond, ControlTrigger).

Where the other pieces live:
- the executor gives the primitives their meaning (tensorflux/runtime/executor.py), and runs
  cheap loops compiled (tensorflux/runtime/compiled_loops.py);
- tensorflux/control_flow/builders.py: the TF1 builders on top of the primitives
  (`tf.group`, `tf.tuple`, `tf.cond`, `tf.case`, `tf.switch_case`, `tf.while_loop`);
- tensorflux/control_flow/control_flow_context.py: CondContext and WhileContext, which
  route values into branches and loops as ops are created;
- tensorflux/control_flow/control_flow_grad.py / control_flow_state.py: the gradients of
  these ops, through conds and loops;
- tensorflux/control_flow/control_flow_util.py: nested structures, questions about contexts;
- tensor_array_ops.py, tensorflux/control_flow/functional_ops.py: TensorArray, map_fn,
  foldl, foldr, scan.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.indexed_slices import IndexedSlices
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.operation import Operation, Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor

# The TF1 public names of this module.
__all__ = ["no_op"]

define_op("NoOp", shape_fn=lambda op: [], cost_free=True, keep_identity=True)
not_differentiable("NoOp")


def no_op(name: str | None = None) -> Operation:
    """Does nothing; useful as a target carrying control dependencies (`tf.no_op`)."""
    return apply_op("NoOp", name=name or "NoOp")


# ---- primitives of dynamic control flow (paper §3.4) ---------------------------------------
#
# Switch forwards `data` to the output `pred` selects; the other output is dead. Merge forwards
# its first live input. Enter passes a value into the frame `frame_name` (into every iteration
# when `is_constant`: a loop invariant), Exit out of it, NextIteration into the next iteration,
# and LoopCond marks the loop predicate. tensorflux/runtime/executor.py gives them their
# meaning; control_flow_context.py builds tf.cond and tf.while_loop from them; their
# gradients are in control_flow_grad.py.


def _merge_shape(op):
    shape = op.inputs[0].shape
    for t in op.inputs[1:]:
        shape = shape.most_specific_compatible_shape(t.shape)
    return [shape, tensor_shape.TensorShape([])]


def _switch_shape(op):
    if op.inputs[1].shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {op.inputs[1].shape.ndims}")
    return [op.inputs[0].shape] * 2


def _enter_shape(op):
    # A loop variable's shape may change from one iteration to the next: the builder sets
    # the shape invariant on the Enter. A loop invariant keeps its input's shape.
    if op.attrs.get("is_constant"):
        return [op.inputs[0].shape]
    return [tensor_shape.unknown_shape()]


def _loop_cond_shape(op):
    if op.inputs[0].shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {op.inputs[0].shape.ndims}")
    return [tensor_shape.TensorShape([])]


define_op("Switch", inputs=["data: T", "pred: bool"], outputs=["output_false: T",
                                                                 "output_true: T"],
          attrs=["T: type"], shape_fn=_switch_shape, control_flow=True, flow_kind="switch")
define_op("Merge", inputs=["inputs: N * T"], outputs=["output: T", "value_index: int32"],
          attrs=["T: type", "N: int >= 1"], shape_fn=_merge_shape, control_flow=True,
          flow_kind="merge")
define_op("Enter", inputs=["data: T"], outputs=["output: T"],
          attrs=["T: type", "frame_name: string", "is_constant: bool = false",
                 "parallel_iterations: int = 10"],
          shape_fn=_enter_shape, control_flow=True, flow_kind="enter")
define_op("Exit", inputs=["data: T"], outputs=["output: T"], attrs=["T: type"],
          shape_fn=common_shapes.unchanged, control_flow=True, flow_kind="exit")
define_op("NextIteration", inputs=["data: T"], outputs=["output: T"], attrs=["T: type"],
          shape_fn=common_shapes.unchanged, control_flow=True, flow_kind="next_iteration")
# The ref forms TF1 graphs use on reference variables (ops/ref_variable_ops.py): the same
# ops with `Ref(T)` data, so a ref can flow into a cond or a loop.
define_op("RefSwitch", inputs=["data: Ref(T)", "pred: bool"],
          outputs=["output_false: Ref(T)", "output_true: Ref(T)"], attrs=["T: type"],
          shape_fn=_switch_shape, control_flow=True, flow_kind="switch")
define_op("RefMerge", inputs=["inputs: Ref(N * T)"],
          outputs=["output: Ref(T)", "value_index: int32"], attrs=["T: type", "N: int >= 1"],
          shape_fn=_merge_shape, control_flow=True, flow_kind="merge")
define_op("RefEnter", inputs=["data: Ref(T)"], outputs=["output: Ref(T)"],
          attrs=["T: type", "frame_name: string", "is_constant: bool = false",
                 "parallel_iterations: int = 10"],
          shape_fn=_enter_shape, control_flow=True, flow_kind="enter")
define_op("RefExit", inputs=["data: Ref(T)"], outputs=["output: Ref(T)"], attrs=["T: type"],
          shape_fn=common_shapes.unchanged, control_flow=True, flow_kind="exit")
define_op("RefNextIteration", inputs=["data: Ref(T)"], outputs=["output: Ref(T)"],
          attrs=["T: type"], shape_fn=common_shapes.unchanged, control_flow=True,
          flow_kind="next_iteration")
not_differentiable("RefSwitch", "RefMerge", "RefEnter", "RefExit", "RefNextIteration")
define_op("LoopCond", inputs=["input: bool"], outputs=["output: bool"],
          shape_fn=_loop_cond_shape, control_flow=True)
define_op("ControlTrigger", shape_fn=lambda op: [], control_flow=True,
          flow_kind="dead_aware")
not_differentiable("ControlTrigger")
# The gradients of the others are in control_flow_grad.py (they depend on the contexts).


def switch(data, pred, dtype=None, name: str | None = None):
    """(output_false, output_true): `data` on the side `pred` selects; the other is dead."""
    with graph_lib.name_scope(name, "Switch", [data, pred]) as scope:
        if hasattr(data, "_is_indexed_slices"):
            pairs = [switch(t, pred) if t is not None else (None, None)
                     for t in (data.values, data.indices, data.dense_shape)]

            return (IndexedSlices(*[p[0] for p in pairs]), IndexedSlices(*[p[1] for p in pairs]))
        data = convert_to_tensor(data, dtype=dtype, name="data")
        pred = convert_to_tensor(pred, name="pred")
        return apply_op("Switch", data=data, pred=pred, name=scope)


def _switch_ref_or_tensor(data, pred, name: str = "Switch"):
    """Switch for the builders, colocated with `data` (as TensorFlow places it); RefSwitch
    for a TF1 reference variable's ref, so the untaken branch never reads the variable."""
    with graph_lib.colocate_with(data, ignore_existing=True):
        if isinstance(data, Tensor) and data.dtype._is_ref_dtype:
            return apply_op("RefSwitch", data=data, pred=pred, name=name)
        return apply_op("Switch", data=data, pred=pred, name=name)


def merge(inputs, name: str | None = None):
    """(output, value_index): the first input to become available.

    Raises:
      ValueError: `inputs` is empty, or mixes Tensors and IndexedSlices of other dtypes.
    """
    inputs = list(inputs)
    if any(x is None for x in inputs):
        raise ValueError(f"At least one of the merge inputs is None: {inputs}")
    if any(hasattr(x, "_is_indexed_slices") for x in inputs):
        inputs = [convert_to_tensor(x) for x in inputs]
    with graph_lib.name_scope(name, "Merge", inputs) as scope:
        return apply_op("Merge", inputs=inputs, name=scope)


def _enter(data, frame_name: str, is_constant: bool = False, parallel_iterations: int = 10,
           use_input_shape: bool = True, name: str = "Enter") -> Tensor:
    """Enter `data` into the loop frame `frame_name` (a loop invariant if `is_constant`)."""
    op_type = "RefEnter" if isinstance(data, Tensor) and data.dtype._is_ref_dtype else "Enter"
    result = apply_op(op_type, data=data, frame_name=frame_name, is_constant=is_constant,
                      parallel_iterations=parallel_iterations, name=name)
    if use_input_shape:
        result.set_shape(data.shape)
    return result


def exit(data, name: str = "Exit") -> Tensor:  # noqa: A001 - TensorFlow's name
    """Leaves the current loop frame with `data`."""
    return apply_op("Exit", data=data, name=name)


def _next_iteration(data, name: str = "NextIteration") -> Tensor:
    return apply_op("NextIteration", data=data, name=name)


def loop_cond(input, name: str = "LoopCond") -> Tensor:  # noqa: A002
    """Marks `input` as the predicate of a while loop."""
    return apply_op("LoopCond", input=input, name=name)


def control_trigger(name: str | None = None) -> Operation:
    """An op that does nothing and is never dead (the executor runs it on dead inputs)."""
    return apply_op("ControlTrigger", name=name or "ControlTrigger")
