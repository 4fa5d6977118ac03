"""The state tf.gradients keeps while it differentiates through while loops.

For every forward while loop on a path between ys and xs, `ControlFlowState` holds one
`GradLoopState`, which builds the gradient loop and the plumbing between the two:

- a forward counter loop, `n = 0; while (pivot) n++`, added to the forward loop: its Exit is
  the number of iterations run; its NextIteration (`forward_index`) orders, iteration by
  iteration, the pushes below;
- the gradient loop (a WhileContext with `grad_state` set), whose condition counts that
  number back down, `while (n >= 1) n--`: it runs exactly as many iterations as the forward
  loop did, in reverse;
- histories: when a gradient function in the gradient loop uses a forward tensor of the
  loop (an op's input or output), `GetRealValue` adds a per-step stack in the context where
  gradients() was called, a StackPushV2 of the tensor in the forward loop (after iteration
  i's counter update, before its NextIteration, so pushes happen in iteration order even
  with parallel iterations) and a StackPopV2 in the gradient loop (ordered the same way by
  `grad_sync`). Iteration i of the gradient loop thus sees the value forward iteration
  n-1-i produced. Loop invariants need no history (they enter the gradient loop as its own
  invariants); constants are cloned.
- nested loops: an inner loop's state has the outer one as `outer_grad_state`; the inner
  iteration count of every outer iteration is itself saved on an outer-loop stack, and the
  inner gradient loop runs inside the outer gradient loop.

The gradient functions of Enter, Exit, Switch, Merge and NextIteration
(control_flow_grad.py) wire the gradient loop; `gradients.py` calls the hooks here to enter
the right gradient context for each op it visits and to finish unused loop exits.
"""

from __future__ import annotations

import numpy as np

from tensorflux.control_flow import control_flow_util as util
from tensorflux.control_flow.control_flow_context import WhileContext, shape_internal
from tensorflux.framework import common_shapes, dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Operation, Tensor
from tensorflux.ops import array_ops, constant_op, state_ops, tensor_array_ops
from tensorflux.ops import control_flow_ops as cfo


class GradLoopState:
    """The gradient loop of one forward while loop, and its saved forward values.

    Args:
      forward_ctxt: the forward WhileContext.
      outer_grad_state: the GradLoopState of the enclosing forward loop, if any.
    """

    def __init__(self, forward_ctxt, outer_grad_state):
        self._outer_grad_state = outer_grad_state
        self._forward_context = forward_ctxt
        self._forward_sync = None
        self._grad_sync = None
        self._history_map: dict[Tensor, Tensor] = {}
        self._switch_map: dict[Operation, Tensor] = {}
        self._unused_exits: list[Tensor] = []
        self._deferred_exits: list[Tensor] = []
        self._forward_loop_exits = list(forward_ctxt.loop_exits)
        self._pending_exits_count = len(forward_ctxt.loop_exits)
        outer_forward_ctxt = outer_grad_state.forward_context if outer_grad_state \
            else forward_ctxt.outer_context
        if outer_forward_ctxt is not None:
            outer_forward_ctxt.Enter()
        try:
            cnt, self._forward_index = forward_ctxt.AddForwardLoopCounter(outer_grad_state)
        finally:
            if outer_forward_ctxt is not None:
                outer_forward_ctxt.Exit()

        def new_grad_context():
            return WhileContext(maximum_iterations=forward_ctxt.maximum_iterations,
                                parallel_iterations=forward_ctxt.parallel_iterations,
                                back_prop=forward_ctxt.back_prop,
                                swap_memory=forward_ctxt.swap_memory,
                                name=forward_ctxt.name, grad_state=self)

        if outer_grad_state is not None:
            # A nested loop: remember its iteration count for every outer iteration.
            outer_forward_ctxt.AddName(cnt)
            history_cnt = outer_grad_state.AddForwardAccumulator(cnt)
            outer_grad_ctxt = outer_grad_state.grad_context
            outer_grad_ctxt.Enter()
            try:
                self._grad_context = new_grad_context()
                real_cnt = outer_grad_state.AddBackpropAccumulatedValue(history_cnt, cnt)
                self._grad_index = self._grad_context.AddBackpropLoopCounter(
                    real_cnt, outer_grad_state)
            finally:
                outer_grad_ctxt.Exit()
        else:
            if outer_forward_ctxt is not None:
                outer_forward_ctxt.Enter()
            try:
                self._grad_context = new_grad_context()
                self._grad_index = self._grad_context.AddBackpropLoopCounter(
                    cnt, outer_grad_state)
            finally:
                if outer_forward_ctxt is not None:
                    outer_forward_ctxt.Exit()

    # ---- properties -----------------------------------------------------------------------
    @property
    def outer_grad_state(self):
        return self._outer_grad_state

    @property
    def forward_context(self):
        return self._forward_context

    @property
    def forward_index(self) -> Tensor:
        return self._forward_index

    @property
    def grad_context(self):
        return self._grad_context

    @property
    def grad_index(self) -> Tensor:
        return self._grad_index

    @property
    def history_map(self) -> dict:
        return self._history_map

    @property
    def switch_map(self) -> dict:
        return self._switch_map

    @property
    def unused_exits(self) -> list:
        return self._unused_exits

    @property
    def deferred_exits(self) -> list:
        return self._deferred_exits

    @property
    def forward_loop_exits(self) -> list:
        return self._forward_loop_exits

    @property
    def pending_exits_count(self) -> int:
        return self._pending_exits_count

    @pending_exits_count.setter
    def pending_exits_count(self, cnt: int) -> None:
        self._pending_exits_count = cnt

    @property
    def forward_sync(self) -> Operation:
        """A ControlTrigger in the forward loop: pushes inside conds run before the forward
        index moves on."""
        if self._forward_sync is None:
            with util.outside_control_flow():
                self._forward_sync = cfo.control_trigger(name="f_sync")
            util.set_context(self._forward_sync, self._forward_context)
            self._forward_index.op._add_control_input(self._forward_sync)
        return self._forward_sync

    @property
    def grad_sync(self) -> Operation:
        """A ControlTrigger in the gradient loop: pops run before the index moves on."""
        if self._grad_sync is None:
            with util.outside_control_flow():
                self._grad_sync = cfo.control_trigger(name="b_sync")
            util.set_context(self._grad_sync, self._grad_context)
            self._grad_index.op._add_control_input(self._grad_sync)
            if self._grad_context.outer_context is not None:
                self._grad_context.outer_context.AddInnerOp(self._grad_sync)
        return self._grad_sync

    # ---- histories ------------------------------------------------------------------------
    def AddForwardAccumulator(self, value: Tensor, dead_branch: bool = False):  # noqa: N802
        """Saves `value` of every forward iteration on a new stack; returns the stack.

        Called in the context where gradients() was called: the stack is created there, the
        push in the forward loop (or in the cond inside it that `value` lives in).
        """
        g = value.graph
        curr_ctxt = g._get_control_flow_context()
        with util.outside_control_flow(g):
            if curr_ctxt is not None:
                curr_ctxt.Enter()
            with graph_lib.colocate_with(value):
                acc = tensor_array_ops.stack_v2(-1, value.dtype.base_dtype, name="f_acc")
            if curr_ctxt is not None:
                curr_ctxt.Exit()
            enter_acc = self._forward_context.AddValue(acc)
            value_ctxt = util.GetOutputContext(value.op)
            if value_ctxt is self._forward_context:
                self._forward_context.Enter()
                push = tensor_array_ops.stack_push_v2(enter_acc, value)
                self._forward_context.Exit()
                # The push precedes the forward index of its iteration.
                self._forward_index.op._add_control_input(push.op)
            else:
                if value_ctxt is None or not value_ctxt.IsCondContext():
                    raise TypeError(f"value_ctxt is not a CondContext: {value_ctxt}")
                if dead_branch:
                    # The zeros of a dead branch of a Switch (see ZerosLike).
                    value_ctxt.outer_context.Enter()
                    push = tensor_array_ops.stack_push_v2(enter_acc, value)
                    value_ctxt.outer_context.Exit()
                    util.set_context(push.op, value_ctxt)
                else:
                    value_ctxt.Enter()
                    push = tensor_array_ops.stack_push_v2(enter_acc, value)
                    value_ctxt.Exit()
                self.forward_sync._add_control_input(push.op)
            # The push follows the counter update of its iteration.
            push.op._add_control_input(self._forward_index.op.inputs[0].op)
        return acc

    def AddBackpropAccumulatedValue(self, history_value, value,  # noqa: N802
                                    dead_branch: bool = False) -> Tensor:
        """Pops the saved `value` in the gradient loop (guarded by the predicate of the
        cond `value` lives in, if any). Called in the gradient loop's context."""
        history_ctxt = util.get_context(history_value.op)
        cond_ctxt = None
        value_ctxt = util.get_context(value.op)
        while value_ctxt is not None and value_ctxt is not history_ctxt:
            if value_ctxt.IsCondContext():
                cond_ctxt = value_ctxt
                break
            value_ctxt = value_ctxt.outer_context
        with util.outside_control_flow(value.graph):
            self._grad_context.Enter()
            try:
                if cond_ctxt is not None:
                    grad_state, pred = self, None
                    while pred is None and grad_state is not None:
                        pred = grad_state.history_map.get(cond_ctxt.pred)
                        grad_state = grad_state.outer_grad_state
                    if pred is None:
                        pred = cond_ctxt.pred
                    branch = (1 - cond_ctxt.branch) if dead_branch else cond_ctxt.branch
                    history_value = cfo._switch_ref_or_tensor(history_value, pred)[branch]
                pop = tensor_array_ops.stack_pop_v2(history_value, value.dtype.base_dtype)
                pop.set_shape(value.shape)
            finally:
                self._grad_context.Exit()
        if self._grad_context.parallel_iterations > 1:
            # Pops happen after the pivot and before the index moves on.
            self.grad_sync._add_control_input(pop.op)
        return pop

    def GetRealValue(self, value: Tensor) -> Tensor:  # noqa: N802
        """The value of forward tensor `value` for the current gradient iteration (a pop of
        its history, added on first use). Called in the gradient loop's context."""
        real_value = self._history_map.get(value)
        if real_value is not None:
            return real_value
        cur_value, cur_grad_state = value, self
        history_value = None
        while True:
            enter_op = util.GetLoopConstantEnter(cur_value)
            if enter_op is not None:
                # A loop invariant: look at what entered it, one loop further out.
                cur_value = enter_op.inputs[0]
                cur_grad_state = cur_grad_state.outer_grad_state
                if cur_grad_state is None:
                    # Outside every loop of this gradient(): no history needed.
                    real_value = self._grad_context.AddValue(cur_value)
                    break
            elif cur_value.op.type == "Const":
                real_value = constant_op.constant(
                    common_shapes.constant_value(cur_value), dtype=cur_value.dtype)
                break
            else:
                self._grad_context.Exit()
                history_value = cur_grad_state.AddForwardAccumulator(cur_value)
                self._grad_context.Enter()
                break
        if real_value is None:
            real_value = cur_grad_state.AddBackpropAccumulatedValue(history_value, cur_value)
            if cur_grad_state is not self:
                real_value = self._grad_context.AddValue(real_value)
        self._history_map[value] = real_value
        return real_value


class ControlFlowState:
    """Maps each forward WhileContext between ys and xs to its GradLoopState."""

    def __init__(self):
        self._map: dict = {}

    def GetGradState(self, op: Operation, before: bool):  # noqa: N802
        """The grad state of the loop `op` is in; for an Exit `before` its gradient, the
        loop around that loop (its gradient arrives from outside the loop)."""
        if before and util.IsLoopExit(op):
            forward_ctxt = util.get_context(op).outer_context
            if forward_ctxt is not None:
                forward_ctxt = forward_ctxt.GetWhileContext()
        else:
            forward_ctxt = util.GetWhileContext(op)
        return self._map.get(forward_ctxt) if forward_ctxt is not None else None

    def ProcessUnusedLoopExits(self, pending_count: dict, to_ops_set: set) -> list:  # noqa: N802
        """The loop exits no y depends on (pending count 0) of loops some y does depend on:
        they enter the gradient loop with zeros (or None when no exit has a gradient)."""
        loop_exits = []
        for grad_state in self._map.values():
            for y in grad_state.forward_loop_exits:
                if pending_count.get(y.op, 0) == 0:
                    grad_state.pending_exits_count -= 1
                    if y.op not in to_ops_set:
                        grad_state.unused_exits.append(y)
                    if grad_state.pending_exits_count == 0:
                        loop_exits.extend(grad_state.unused_exits)
            for y in grad_state.forward_context.loop_enters:
                if pending_count.get(y.op, 0) == 0:
                    pending_count[y.op] = 1
        return loop_exits

    def EnterGradWhileContext(self, op: Operation, before: bool) -> None:  # noqa: N802
        grad_state = self.GetGradState(op, before)
        if grad_state is not None:
            grad_state.grad_context.Enter()

    def ExitGradWhileContext(self, op: Operation, before: bool) -> None:  # noqa: N802
        grad_state = self.GetGradState(op, before)
        if grad_state is not None:
            grad_state.grad_context.Exit()

    def AddWhileContext(self, op: Operation, between_op_list: list,  # noqa: N802
                        between_ops: set) -> None:
        """Adds the grad state of the loop of Exit `op` (and all its exits to between)."""
        forward_ctxt = util.GetWhileContext(op)
        if forward_ctxt in self._map:
            return
        outer_forward_ctxt = forward_ctxt.outer_context
        if outer_forward_ctxt is not None:
            outer_forward_ctxt = outer_forward_ctxt.GetWhileContext()
        outer_grad_state = self._map.get(outer_forward_ctxt) if outer_forward_ctxt else None
        grad_state = GradLoopState(forward_ctxt, outer_grad_state)
        self._map[forward_ctxt] = grad_state
        for loop_exit in grad_state.forward_loop_exits:
            if loop_exit.op not in between_ops:
                between_ops.add(loop_exit.op)
                between_op_list.append(loop_exit.op)

    def ZerosLikeForExit(self, val: Tensor) -> Tensor:  # noqa: N802
        """Zeros for the gradient of an Exit no y uses. Called where gradients() was."""
        forward_ctxt = util.get_context(val.op)
        outer_forward_ctxt = forward_ctxt.outer_context
        if outer_forward_ctxt is not None:
            outer_forward_ctxt = outer_forward_ctxt.GetWhileContext()
        outer_grad_state = self._map.get(outer_forward_ctxt) if outer_forward_ctxt else None
        shape = val.shape
        if outer_grad_state is not None:
            if shape.is_fully_defined():
                outer_grad_state.grad_context.Enter()
                result = array_ops.zeros(shape.as_list(), val.dtype.base_dtype)
                outer_grad_state.grad_context.Exit()
            else:
                forward_ctxt.outer_context.Enter()
                zeros_shape = shape_internal(val)
                forward_ctxt.outer_context.Exit()
                history_shape = outer_grad_state.AddForwardAccumulator(zeros_shape)
                outer_grad_ctxt = outer_grad_state.grad_context
                outer_grad_ctxt.Enter()
                real_shape = outer_grad_state.AddBackpropAccumulatedValue(history_shape,
                                                                          zeros_shape)
                result = array_ops.zeros(real_shape, val.dtype.base_dtype)
                outer_grad_ctxt.Exit()
        elif shape.is_fully_defined():
            result = array_ops.zeros(shape.as_list(), val.dtype.base_dtype)
        else:
            result = array_ops.zeros_like(val, optimize=False)
        return result

    def ZerosLike(self, op: Operation, index: int):  # noqa: N802
        """Zeros for output `index` of `op`, for the iteration being differentiated (None
        for a loop Switch). Called in the op's gradient loop context."""
        if util.IsLoopSwitch(op):
            return None
        dead_branch = util.IsSwitch(op)
        forward_ctxt = util.GetWhileContext(op)
        grad_state = self._map.get(forward_ctxt) if forward_ctxt is not None else None
        if grad_state is None:
            return ZerosLike(op, index)
        op_ctxt = util.get_context(op)
        val = op.outputs[index]
        if val.dtype.base_dtype is dtypes.resource:
            return None
        shape = val.shape
        if shape.is_fully_defined():
            result = constant_op.constant(
                np.zeros(shape.as_list(), val.dtype.base_dtype.as_numpy_dtype))
            if dead_branch:
                # op is a cond Switch: guard the zeros with a Switch on the saved predicate.
                pred = grad_state.history_map.get(op_ctxt.pred)
                branch = op_ctxt.branch
                result = cfo._switch_ref_or_tensor(result, pred)[1 - branch]
            return result
        if dead_branch:
            pred, branch = op_ctxt.pred, op_ctxt.branch
            op_ctxt.outer_context.Enter()
            val = cfo._switch_ref_or_tensor(op.inputs[0], pred)[1 - branch]
            zeros_shape = shape_internal(val)
            op_ctxt.outer_context.Exit()
            util.set_context(val.op, op_ctxt)
            util.set_context(zeros_shape.op, op_ctxt)
        else:
            op_ctxt.Enter()
            zeros_shape = shape_internal(val)
            op_ctxt.Exit()
        grad_state.grad_context.Exit()
        history_zeros_shape = grad_state.AddForwardAccumulator(zeros_shape,
                                                               dead_branch=dead_branch)
        grad_state.grad_context.Enter()
        shape_t = grad_state.AddBackpropAccumulatedValue(history_zeros_shape, zeros_shape,
                                                         dead_branch)
        return array_ops.zeros(shape_t, val.dtype.base_dtype)

    def PostProcessing(self) -> None:  # noqa: N802
        """Patches gradient Merges whose loop variable at i+1 does not depend on its value
        at i: their back edge is still the entry value, so it becomes zeros instead."""
        for grad_state in self._map.values():
            for b_merge in grad_state.switch_map.values():
                if b_merge.op.inputs[0] is not b_merge.op.inputs[1]:
                    continue
                dtype = b_merge.op.inputs[0].dtype.base_dtype
                shape = b_merge.op.inputs[0].shape
                if shape.is_fully_defined():
                    grad_state.grad_context.Enter()
                    grad_val = constant_op.constant(
                        np.zeros(shape.as_list(), dtype.as_numpy_dtype))
                    next_grad_val = cfo._next_iteration(grad_val)
                    grad_state.grad_context.Exit()
                else:
                    outer_grad_ctxt = grad_state.grad_context.outer_context
                    if outer_grad_ctxt is not None:
                        outer_grad_ctxt.Enter()
                    enter_grad = b_merge.op.inputs[0].op.inputs[0]
                    grad_val = array_ops.zeros(shape_internal(enter_grad), dtype)
                    if outer_grad_ctxt is not None:
                        outer_grad_ctxt.Exit()
                    grad_state.grad_context.Enter()
                    next_grad_val = cfo._next_iteration(grad_val)
                    grad_state.grad_context.Exit()
                b_merge.op._update_input(1, next_grad_val)


def MaybeCreateControlFlowState(between_op_list: list, between_ops: set,  # noqa: N802
                                colocate_gradients_with_ops: bool):
    """A ControlFlowState if any loop Exit is between ys and xs, else None (may add the
    other exits of those loops to between)."""
    loop_state = None
    for op in list(between_op_list):
        if util.IsLoopExit(op):
            if loop_state is None:
                loop_state = ControlFlowState()
            if colocate_gradients_with_ops:
                with graph_lib.colocate_with(op):
                    loop_state.AddWhileContext(op, between_op_list, between_ops)
            else:
                loop_state.AddWhileContext(op, between_op_list, between_ops)
    return loop_state


def ZerosLike(op: Operation, index: int):  # noqa: N802
    """Zeros for output `index` of `op` outside any differentiated loop; for a cond Switch,
    zeros that exist only when the other branch is taken (so the gradient Merge gets
    exactly one live input)."""
    val = op.outputs[index]
    is_resource = val.dtype.base_dtype is dtypes.resource
    op_ctxt = util.get_context(op)
    if not util.IsSwitch(op) or op_ctxt is None or not op_ctxt.IsCondContext():
        return None if is_resource else array_ops.zeros_like(val, optimize=False)
    pred, branch = op_ctxt.pred, op_ctxt.branch
    switch_val = cfo.switch(op.inputs[0], pred)[1 - branch]
    pivot = array_ops.identity(switch_val)
    if is_resource:
        # A variable switched into the branch: zeros shaped like the variable.

        dtype = _resource_dtype(op.inputs[0])
        if dtype is None:
            return None
        with graph_lib.control_dependencies([pivot]):
            return array_ops.zeros(state_ops.variable_shape(switch_val), dtype=dtype)
    zeros_shape = shape_internal(switch_val)
    with graph_lib.control_dependencies([pivot]):
        return array_ops.zeros(zeros_shape, dtype=val.dtype.base_dtype)


def _resource_dtype(t: Tensor):
    """The dtype of the variable a resource tensor refers to (through Identity, Switch and
    Enter to its VarHandleOp), or None."""
    op = t.op
    while op.type in ("Identity", "Switch", "Enter", "RefSwitch", "RefEnter") and op.inputs:
        op = op.inputs[0].op
    dtype = op.attrs.get("dtype")
    return dtype.base_dtype if dtype is not None else None
