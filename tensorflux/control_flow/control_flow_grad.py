"""Gradients of the control-flow primitives (Switch, Merge, Enter, Exit, NextIteration,
LoopCond), for tf.cond and tf.while_loop.

Conds. The gradient of a cond Merge switches the incoming gradient on the cond's predicate
(for a cond inside a loop: on the predicate's saved value for the iteration), so each
branch's gradient ops are dead when the branch was not taken; the gradient of a cond Switch
merges the gradient of its taken output with zeros that exist only when the other branch
is taken (control_flow_state.ZerosLike), giving exactly one live input.

Loops. tf.gradients visits a loop backwards, inside the gradient loop's context
(control_flow_state.py): an Exit's gradient Enters the gradient loop; a loop Switch,
visited first from its Exit, creates the gradient loop's Merge ("b_switch") and, visited
again from its body Identity, closes that Merge's back edge with the body's gradient; a loop
Merge's gradient Switches on the gradient loop's predicate (output 0 leaves with the result,
output 1 continues into the next gradient iteration); NextIteration passes the gradient
through; the gradient of a variable's Enter Exits the gradient loop, and that of a loop
invariant's constant Enter sums the per-iteration gradients in an accumulator loop.
"""

from __future__ import annotations

from tensorflux.control_flow import control_flow_util as util
from tensorflux.control_flow.control_flow_context import _add_next_and_back_edge
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_registry import gradient
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import comparison_ops
from tensorflux.ops import control_flow_ops as cfo


def _dense(grad):
    """Gradients through control flow are dense (IndexedSlices are converted)."""
    if grad is not None and hasattr(grad, "_is_indexed_slices"):
        return convert_to_tensor(grad)
    return grad


@gradient("Switch")
def _switch_grad(op, *grad):
    grad = [_dense(g) for g in grad]
    g = graph_lib.get_default_graph()
    op_ctxt = util.get_context(op)
    grad_ctxt = g._get_control_flow_context()
    if op_ctxt is not None and op_ctxt.IsWhileContext():
        merge_grad = grad_ctxt.grad_state.switch_map.get(op)
        if merge_grad is not None:
            # Second visit, from the body: the gradient of the next iteration closes the
            # back edge of the gradient Merge.
            if grad[1] is not None:
                _add_next_and_back_edge(merge_grad, grad[1], enforce_shape_invariant=False)
            return None, None
        if grad[0] is not None:
            # First visit, from the Exit: the gradient loop's Merge, entry value for both
            # inputs until the back edge is known.
            merge_grad = cfo.merge([grad[0], grad[0]], name="b_switch")[0]
            grad_ctxt.grad_state.switch_map[op] = merge_grad
            return merge_grad, None
        return None, None
    if op_ctxt is not None and op_ctxt.IsCondContext():
        zero_grad = grad[1 - op_ctxt.branch]
        if zero_grad is None:
            if op.inputs[0].dtype.base_dtype is dtypes.resource:
                return cfo.merge([grad[op_ctxt.branch]] * 2, name="cond_resource_grad")[0], \
                    None
            return None, None
        return cfo.merge(grad, name="cond_grad")[0], None
    false_grad = cfo.switch(grad[0], op.inputs[1])[0]
    true_grad = cfo.switch(grad[1], op.inputs[1])[1]
    return cfo.merge([false_grad, true_grad])[0], None


@gradient("Merge")
def _merge_grad(op, grad, _):
    grad = _dense(grad)
    g = graph_lib.get_default_graph()
    op_ctxt = util.GetOutputContext(op.inputs[0].op)
    grad_ctxt = g._get_control_flow_context()
    if op_ctxt is not None and op_ctxt.IsWhileContext():
        return cfo._switch_ref_or_tensor(grad, grad_ctxt.pivot)
    if op_ctxt is not None and op_ctxt.IsCondContext():
        pred = op_ctxt.pred
        if grad_ctxt is not None and grad_ctxt.grad_state is not None:
            # A cond inside a loop: switch on the predicate's value of this iteration.
            grad_state = grad_ctxt.grad_state
            real_pred = grad_state.history_map.get(pred)
            if real_pred is None:
                grad_ctxt = grad_state.grad_context
                grad_ctxt.Exit()
                history_pred = grad_state.AddForwardAccumulator(pred)
                grad_ctxt.Enter()
                real_pred = grad_state.AddBackpropAccumulatedValue(history_pred, pred)
                grad_state.history_map[pred] = real_pred
            pred = real_pred
        return cfo._switch_ref_or_tensor(grad, pred, name="cond_grad")

    n = len(op.inputs)
    conds = [comparison_ops.equal(op.outputs[1], i) for i in range(n)]
    return [cfo._switch_ref_or_tensor(grad, conds[i])[1] for i in range(n)]


@gradient("Exit")
def _exit_grad(op, grad):
    grad = _dense(grad)
    g = graph_lib.get_default_graph()
    op_ctxt = util.get_context(op)
    grad_ctxt = g._get_control_flow_context()
    if not grad_ctxt.back_prop:
        return None
    if op_ctxt.grad_state is not None:
        raise TypeError("Second-order gradient for while loops not supported.")
    grad_ctxt.AddName(grad)
    grad_ctxt.Enter()
    try:
        result = cfo._enter(grad, grad_ctxt.name, is_constant=False,
                            parallel_iterations=grad_ctxt.parallel_iterations, name="b_exit")
    finally:
        grad_ctxt.Exit()
    grad_ctxt.loop_enters.append(result)
    return result


@gradient("NextIteration")
def _next_iteration_grad(op, grad):
    return grad


@gradient("Enter")
def _enter_grad(op, grad):
    g = graph_lib.get_default_graph()
    grad_ctxt = g._get_control_flow_context()
    if grad_ctxt is None or not grad_ctxt.back_prop or grad_ctxt.grad_state is None:
        return grad
    grad = _dense(grad)
    if op.attrs.get("is_constant"):
        return grad_ctxt.AddBackpropAccumulator(op, grad)
    result = cfo.exit(grad)
    grad_ctxt.loop_exits.append(result)
    grad_ctxt.ExitResult([result])
    return result


@gradient("LoopCond")
def _loop_cond_grad(op, grad):
    return None
