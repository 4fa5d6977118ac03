"""Control-flow contexts: how tf.cond and tf.while_loop turn Python functions into dataflow.

While a branch of a cond or the condition/body of a loop is being built, its context is the
graph's current control-flow context, and `Graph._create_op_internal` hands every new op to
`ctx.AddOp(op)`. The context then establishes the invariants the executor relies on
(tensorflux/runtime/executor.py):

- CondContext(pred, pivot, branch): every tensor from outside the branch is routed through a
  `Switch(value, pred)` and the branch's output of it is used instead, so the branch's ops
  are dead (never run, stateful ones included) when the other branch is taken. Ops without
  inputs (constants) get a control edge from the branch's pivot (`switch_t`/`switch_f`) for
  the same reason. One Switch per external value and branch, reused.
- WhileContext: every tensor from outside the loop enters it once through an Enter with
  `is_constant=True` (a loop invariant, visible in every iteration); ops without inputs, and
  ops fed only by invariants, get a control edge from the loop's pivot (the first Merge in
  the condition, the first body Identity in the body) so they run once per iteration and
  never in the iteration that exits. Control inputs from outside the loop would cross frames:
  they are dropped and, for ops that have outputs, replaced by an Identity of the output
  entered into the loop. Each loop is one frame, named after the context (`while/while_context`),
  so nested loops get distinct frame names.

Contexts nest through `outer_context`; a value entering an inner context is first added to
the outer ones (a cond inside a loop switches an Enter of the value, and so on). Values are
tracked by Tensor identity (`_values`: known inside; `_external_values`: the stand-in used
for an outside tensor).

Gradients. A WhileContext built for back-propagation (`grad_state` set, see
control_flow_state.py) treats forward-loop tensors specially in `AddValue`: the value of
each iteration is saved on a stack in the forward loop and popped in the gradient loop. The
accumulator loops it needs (iteration counters, gradient accumulators for loop invariants)
are built by the WhileContext methods at the end of this module.
"""

from __future__ import annotations

from tensorflux.control_flow import control_flow_util as util
from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.operation import Operation, Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    constant_op,
    math_ops,
    state_ops,
    tensor_array_ops,
)
from tensorflux.ops import control_flow_ops as cfo


class ControlFlowContext:
    """The base of CondContext and WhileContext: nesting, entering/leaving, known values."""

    def __init__(self):
        self._graph = graph_lib.get_default_graph()
        self._outer_context = self._graph._get_control_flow_context()
        self._context_stack: list = []
        self._values: set[Tensor] = set()
        self._external_values: dict[Tensor, Tensor] = {}
        self._nested_contexts: list[ControlFlowContext] = []
        if self._outer_context is not None:
            self._outer_context._nested_contexts.append(self)

    @property
    def name(self) -> str:
        return self._name

    @property
    def outer_context(self):
        return self._outer_context

    @property
    def grad_state(self):
        raise NotImplementedError("Abstract method")

    @property
    def back_prop(self):
        raise NotImplementedError("Abstract method")

    def IsWhileContext(self) -> bool:  # noqa: N802 - TensorFlow's method names
        return False

    def IsCondContext(self) -> bool:  # noqa: N802
        return False

    def GetWhileContext(self):  # noqa: N802
        """The innermost WhileContext containing this context, or None."""
        return self._outer_context.GetWhileContext() if self._outer_context else None

    def GetControlPivot(self):  # noqa: N802
        return None

    def AddName(self, t: Tensor) -> None:  # noqa: N802
        """Marks `t` as already known in this context."""
        self._values.add(t)

    def Enter(self) -> None:  # noqa: N802
        """Makes this the graph's current context (ops created now are added to it)."""
        g = self._graph
        self._context_stack.append(g._get_control_flow_context())
        g._set_control_flow_context(self)

    def Exit(self) -> None:  # noqa: N802
        self._graph._set_control_flow_context(self._context_stack.pop())

    def ExitResult(self, result) -> None:  # noqa: N802
        """Makes the tensors in `result` known to the outer context."""
        if self._outer_context is not None:
            for t in util.flatten(result):
                if isinstance(t, Tensor):
                    self._outer_context.AddName(t)

    def AddInnerOp(self, op: Operation) -> None:  # noqa: N802
        """Notifies this context of an op created in an inner one."""
        if self._outer_context is not None:
            self._outer_context.AddInnerOp(op)

    def _RemoveExternalControlEdges(self, op: Operation):  # noqa: N802
        """Drops `op`'s control inputs from outside the enclosing loop (they would cross
        frames); returns (kept, dropped)."""
        while_ctx = self.GetWhileContext()
        controls = list(op._control_inputs)
        if while_ctx is None:
            return controls, []
        internal, external = [], []
        for c in controls:
            ctx = util.GetOutputContext(c)
            if ctx is not None and ctx.GetWhileContext() is while_ctx:
                internal.append(c)
            else:
                external.append(c)
        if external:
            util.set_control_inputs(op, internal)
        return internal, external

    def _mark_outputs(self, op: Operation) -> None:
        ctx = self
        while ctx is not None:
            ctx._values.update(op.outputs)
            ctx = ctx._outer_context

    def _add_inputs(self, op: Operation) -> None:
        """Replaces each input of `op` by its stand-in in this context (Switch or Enter),
        naming new stand-ins inside the op's scope ("cond/add/Switch")."""
        with self._graph.name_scope(op.name + "/"):
            for index, x in enumerate(op.inputs):
                real_x = self.AddValue(x)
                if real_x is not x:
                    op._update_input(index, real_x)

    def __str__(self) -> str:
        return self._name


class CondContext(ControlFlowContext):
    """The context of one branch of a tf.cond.

    Args:
      pred: the boolean scalar predicate (the cond's `pred_id` Identity).
      pivot: the branch's pivot: `switch_t` (branch 1) or `switch_f` (branch 0).
      branch: 1 for the true branch, 0 for the false one.
    """

    def __init__(self, pred: Tensor, pivot: Tensor, branch: int, name: str = "cond_text"):
        self._name = graph_lib.get_default_graph().unique_name(name)
        super().__init__()
        self._pred = pred
        self._pivot = pivot
        self._branch = branch
        self._values.add(pred)
        self._external_values[pred] = pred
        self._values.add(pivot)
        util.set_context(pivot.op, self)

    @property
    def pred(self) -> Tensor:
        return self._pred

    @property
    def pivot(self) -> Tensor:
        return self._pivot

    @property
    def branch(self) -> int:
        return self._branch

    @property
    def grad_state(self):
        w = self.GetWhileContext()
        return w.grad_state if w is not None else None

    @property
    def back_prop(self) -> bool:
        w = self.GetWhileContext()
        return w.back_prop if w is not None else False

    def IsCondContext(self) -> bool:  # noqa: N802
        return True

    def GetControlPivot(self):  # noqa: N802
        return self._pivot

    def AddValue(self, val: Tensor) -> Tensor:  # noqa: N802
        """The stand-in of `val` in this branch: `val` if it was made here, else (once) the
        branch's output of `Switch(val, pred)`."""
        if val in self._values:
            result = self._external_values.get(val)
            return val if result is None else result
        result = val
        self._values.add(val)
        if self._outer_context is not None:
            result = self._outer_context.AddValue(val)
            self._values.add(result)
            self._external_values[result] = result
        with util.outside_control_flow(self._graph):
            result = cfo._switch_ref_or_tensor(result, self._pred)[self._branch]
            if self._outer_context is not None:
                self._outer_context.AddInnerOp(result.op)
        self._graph.prevent_fetching(result.op)
        util.set_context(result.op, self)
        ctx = self
        while ctx is not None:
            ctx._values.add(result)
            ctx = ctx._outer_context
        self._external_values[val] = result
        return result

    def AddOp(self, op: Operation) -> None:  # noqa: N802
        self._AddOpInternal(op)

    def _AddOpInternal(self, op: Operation) -> None:  # noqa: N802
        if not op.inputs:
            self._RemoveExternalControlEdges(op)
            if not any(util.OpInContext(c, self) for c in op._control_inputs):
                op._add_control_input(self._pivot.op)
        else:
            self._add_inputs(op)
            self._RemoveExternalControlEdges(op)
        self._mark_outputs(op)
        if self._outer_context is not None or not util.IsLoopExit(op):
            self._graph.prevent_fetching(op)
        if self._outer_context is not None:
            self._outer_context.AddInnerOp(op)

    def _ProcessOutputTensor(self, val: Tensor) -> Tensor:  # noqa: N802
        """A branch result: a tensor from outside (`lambda: x`) is switched in too, so the
        Merge sees a dead input for the untaken branch."""
        if val not in self._values:
            self._values.add(val)
            real_val = val
            if self._outer_context is not None:
                real_val = self._outer_context.AddValue(val)
                self._values.add(real_val)
                self._external_values[real_val] = real_val
            real_val = cfo._switch_ref_or_tensor(real_val, self._pred)[self._branch]
            self._external_values[val] = real_val
            return real_val
        external = self._external_values.get(val)
        return val if external is None else external

    def _BuildCondTensor(self, v):  # noqa: N802
        if isinstance(v, Operation):  # an op as a result: the pivot, after the op
            # builders.with_dependencies([v], self._pivot), spelled out: builders import us.
            with graph_lib.name_scope(None, "control_dependency", [v, self._pivot]) as scope:
                with graph_lib.control_dependencies([v]):
                    return array_ops.identity(self._pivot, name=scope)
        if isinstance(v, tensor_array_ops.TensorArray):
            v = v.flow
        return self._ProcessOutputTensor(convert_to_tensor(v))

    def BuildCondBranch(self, fn):  # noqa: N802
        """Calls `fn` in this context; returns (its result, the flat branch tensors)."""
        original = fn()
        if original is None:
            return None, None
        result = [self._BuildCondTensor(v) for v in util.flatten(original)]
        return original, result


def _shape_less_than_or_equal(shape1, shape2) -> bool:
    """True if `shape1` is at least as specific as `shape2` (a valid shape invariant)."""
    if shape2.dims is None:
        return True
    if shape1.ndims != shape2.ndims:
        return False
    for d1, d2 in zip(shape1.as_list(), shape2.as_list(), strict=True):
        if d2 is not None and d1 != d2:
            return False
    return True


def _tf_type_name(dtype) -> str:
    return {"float32": "float", "float64": "double", "float16": "half"}.get(dtype.name,
                                                                          dtype.name)


class WhileContext(ControlFlowContext):
    """The context of one tf.while_loop (its condition and body), one executor frame.

    Args:
      maximum_iterations: the scalar bound tf.while_loop was given, or None.
      parallel_iterations: how many iterations may run at once.
      back_prop: whether gradients may flow through the loop.
      swap_memory: accepted (host swapping is not modelled).
      name: base of the frame name (made unique in the current name scope).
      grad_state: the _GradLoopState when this is the gradient loop of a forward loop.
    """

    def __init__(self, maximum_iterations=None, parallel_iterations: int = 10,
                 back_prop: bool = True, swap_memory: bool = False,
                 name: str = "while_context", grad_state=None):
        self._name = graph_lib.get_default_graph().unique_name(name)
        super().__init__()
        self._maximum_iterations = maximum_iterations
        self._parallel_iterations = parallel_iterations
        self._back_prop = back_prop
        self._swap_memory = swap_memory
        self._grad_state = grad_state
        self._pivot_for_pred = None  # the first Merge: control pivot of the condition
        self._pivot_for_body = None  # the first body Identity: control pivot of the body
        self._pivot = None  # the LoopCond
        self._loop_exits: list[Tensor] = []
        self._loop_enters: list[Tensor] = []

    @property
    def maximum_iterations(self):
        return self._maximum_iterations

    @property
    def parallel_iterations(self) -> int:
        return self._parallel_iterations

    @property
    def back_prop(self) -> bool:
        return self._back_prop

    @property
    def swap_memory(self) -> bool:
        return self._swap_memory

    @property
    def pivot(self):
        return self._pivot

    @property
    def loop_enters(self) -> list:
        return self._loop_enters

    @property
    def loop_exits(self) -> list:
        return self._loop_exits

    @property
    def grad_state(self):
        return self._grad_state

    def IsWhileContext(self) -> bool:  # noqa: N802
        return True

    def GetWhileContext(self):  # noqa: N802
        return self

    def GetControlPivot(self):  # noqa: N802
        return self._pivot_for_body if self._pivot_for_body is not None \
            else self._pivot_for_pred

    # ---- values from outside ---------------------------------------------------------------
    def AddValue(self, val: Tensor) -> Tensor:  # noqa: N802
        """The stand-in of `val` in this loop: a constant Enter of it, made once; in a
        gradient loop, a forward-loop value is popped from its per-iteration history."""
        if val in self._values or util.get_context(val.op) is self:
            actual = self._external_values.get(val)
            return val if actual is None else actual
        self._values.add(val)
        grad_ctx = self._graph._get_control_flow_context()
        if grad_ctx is not None:
            grad_ctx = grad_ctx.GetWhileContext()
            if grad_ctx is not None and grad_ctx.grad_state is not None:
                forward_ctx = util.GetWhileContext(val.op)
                if util.IsLoopExit(val.op):
                    forward_ctx = forward_ctx.outer_context
                    if forward_ctx is not None:
                        forward_ctx = forward_ctx.GetWhileContext()
                if forward_ctx is grad_ctx.grad_state.forward_context:
                    real_val = grad_ctx.grad_state.GetRealValue(val)
                    self._external_values[val] = real_val
                    return real_val
        result = val
        if self._outer_context is not None:
            result = self._outer_context.AddValue(val)
        with util.outside_control_flow(self._graph):
            enter = cfo._enter(result, self._name, is_constant=True,
                               parallel_iterations=self._parallel_iterations)
            self._graph.prevent_feeding(enter)
            if self._outer_context is not None:
                self._outer_context.AddInnerOp(enter.op)
        self._FixControlInputsAndContext([enter])
        self._values.add(enter)
        self._external_values[val] = enter
        return enter

    def _FixControlInputsAndContext(self, enters) -> None:  # noqa: N802
        """Gives Enters built clear of all scopes their context, and the control inputs of
        the enclosing control_dependencies scopes that are valid in the outer context."""
        g = self._graph
        outer_while = self._outer_context.GetWhileContext() if self._outer_context else None
        for e in enters:
            controls = g._control_inputs_for((e.op.inputs[0],))
            keep = []
            for c in controls:
                c_ctx = util.GetOutputContext(c)
                outer = self._outer_context
                ok = True
                while outer is not c_ctx:
                    if outer is None or outer is outer_while:
                        ok = False
                        break
                    outer = outer.outer_context
                if ok:
                    keep.append(c)
            util.set_context(e.op, self)
            e.op._add_control_inputs(keep)
            for controller in g._control_dependencies_stack:
                controller.seen.add(e.op)

    # ---- ops -----------------------------------------------------------------------------
    def AddOp(self, op: Operation) -> None:  # noqa: N802
        # In a gradient loop, Shape/Size/Rank of a forward value are computed in the forward
        # loop, so the (small) result is what gets saved per iteration.
        if op.type in ("Shape", "Size", "Rank"):
            grad_ctx = self._graph._get_control_flow_context()
            grad_ctx = grad_ctx.GetWhileContext() if grad_ctx is not None else None
            if grad_ctx is not None and grad_ctx.grad_state is not None:
                if util.GetWhileContext(op.inputs[0].op) is \
                        grad_ctx.grad_state.forward_context:
                    input_ctx = util.get_context(op.inputs[0].op)
                    util.set_context(op, input_ctx)
                    input_ctx._AddOpInternal(op)
                    return
        self._AddOpInternal(op)

    def _AddOpInternal(self, op: Operation) -> None:  # noqa: N802
        if not op.inputs:
            controls, external = self._RemoveExternalControlEdges(op)
            if not controls:
                op._add_control_input(self.GetControlPivot().op)
        else:
            self._add_inputs(op)
            _, external = self._RemoveExternalControlEdges(op)
            self._MaybeAddControlDependency(op)
        self._values.update(op.outputs)
        if external:
            # Control inputs from outside become data: an Identity of each one's output,
            # entered into the loop like any external value.
            with util.outside_control_flow(self._graph):
                self.Enter()
                try:
                    pulled = [array_ops.identity(x.outputs[0]).op for x in external
                              if x.outputs]
                finally:
                    self.Exit()
            op._add_control_inputs(pulled)
        if self._outer_context is not None or not util.IsLoopExit(op):
            self._graph.prevent_fetching(op)
            for t in op.outputs:
                self._graph.prevent_feeding(t)
        if self._outer_context is not None:
            self._outer_context.AddInnerOp(op)

    def _MaybeAddControlDependency(self, op: Operation) -> None:  # noqa: N802
        """An op fed only by loop invariants runs once per iteration: after the pivot."""
        if op._control_inputs:
            return
        if all(util.IsLoopConstantEnter(x.op) for x in op.inputs):
            op._add_control_input(self.GetControlPivot().op)

    def _InitializeValues(self, values) -> None:  # noqa: N802
        self._values = {v for v in values if isinstance(v, Tensor)}

    # ---- building the loop ---------------------------------------------------------------
    def BuildLoop(self, pred, body, loop_vars, shape_invariants,  # noqa: N802
                  return_same_structure: bool = False):
        """Adds the loop to the graph; returns the Exit tensors shaped like the body's
        result (a single tensor for one loop variable unless `return_same_structure`)."""
        flat_orig = util.flatten(loop_vars)
        flat_vars = [v.flow if isinstance(v, tensor_array_ops.TensorArray)
                     else convert_to_tensor(v) for v in flat_orig]
        if shape_invariants is None:
            flat_invariants = [v.shape for v in flat_vars]
        else:
            util.assert_same_structure(loop_vars, shape_invariants, check_types=False)
            flat_invariants = [
                tensor_shape.TensorShape([]) if isinstance(o, tensor_array_ops.TensorArray)
                else _shape_invariant(v, s) for o, v, s in zip(
                    flat_orig, flat_vars, util.flatten(shape_invariants), strict=True)]
        try:
            self.Enter()
            original_body_result, exit_vars = self._BuildLoop(
                pred, body, loop_vars, flat_orig, flat_vars, flat_invariants)
        finally:
            self.Exit()
        flat_result = util.flatten(original_body_result)
        exits = [tensor_array_ops.build_ta_with_new_flow(o, e)
                 if isinstance(o, tensor_array_ops.TensorArray) else e
                 for o, e in zip(flat_result, exit_vars, strict=True)]
        packed = util.pack_sequence_as(original_body_result, exits)
        if return_same_structure:
            return packed
        return packed[0] if len(exit_vars) == 1 else packed

    def _BuildLoop(self, pred, body, loop_vars, flat_orig, flat_vars,  # noqa: N802
                   flat_invariants):
        def with_tas(flat):
            return util.pack_sequence_as(loop_vars, [
                tensor_array_ops.build_ta_with_new_flow(o, t)
                if isinstance(o, tensor_array_ops.TensorArray) else t
                for o, t in zip(flat_orig, flat, strict=True)])

        self._InitializeValues(flat_vars)
        real_vars = flat_vars
        if self._outer_context is not None:
            real_vars = [self._outer_context.AddValue(x) for x in flat_vars]
        enter_vars = []
        with util.outside_control_flow(self._graph):
            for real_var, invariant in zip(real_vars, flat_invariants, strict=True):
                enter_var = cfo._enter(real_var, self._name, is_constant=False,
                                       parallel_iterations=self._parallel_iterations,
                                       use_input_shape=False)
                if not _shape_less_than_or_equal(real_var.shape, invariant):
                    raise ValueError(
                        f"The shape invariant specified for {real_var.name} is not "
                        f"compatible with the initial shape of the loop variable. It enters "
                        f"the loop with shape {real_var.shape}, but the specified shape "
                        f"invariant is {invariant}.")
                enter_var.set_shape(invariant)
                self._graph.prevent_feeding(enter_var)
                if self._outer_context is not None:
                    self._outer_context.AddInnerOp(enter_var.op)
                enter_vars.append(enter_var)
        # Enters of invariants of an enclosing loop wait for the enclosing pivot.
        outer, control_pivot = self._outer_context, None
        while outer is not None and control_pivot is None:
            control_pivot = outer.GetControlPivot()
            outer = outer.outer_context
        if control_pivot is not None:
            for var in enter_vars:
                if util.IsLoopConstantEnter(var.op.inputs[0].op):
                    var.op._add_control_input(control_pivot.op)
        self._FixControlInputsAndContext(enter_vars)
        self._InitializeValues(enter_vars)
        self._loop_enters = enter_vars

        merge_vars = [cfo.merge([x, x])[0] for x in enter_vars]
        self._pivot_for_pred = merge_vars[0]
        c = convert_to_tensor(pred(*with_tas(merge_vars)))
        self._pivot = cfo.loop_cond(c, name="LoopCond")
        switch_vars = [cfo._switch_ref_or_tensor(x, self._pivot) for x in merge_vars]
        vars_for_body = [array_ops.identity(x[1], name="Identity") for x in switch_vars]
        self._pivot_for_body = vars_for_body[0]
        packed_for_body = with_tas(vars_for_body)
        body_result = body(*packed_for_body)
        if not util.is_nested(body_result):
            body_result = [body_result]
        util.assert_same_structure(list(packed_for_body), list(body_result))
        original_body_result = body_result
        result = [v.flow if isinstance(v, tensor_array_ops.TensorArray) else
                  convert_to_tensor(v) for v in util.flatten(body_result)]
        if len(merge_vars) != len(result):
            raise ValueError(f"Number of inputs and outputs of 'body' are different "
                             f"{len(merge_vars)} and {len(result)}.")
        for m, v in zip(merge_vars, result, strict=True):
            _add_next_and_back_edge(m, v)
        exit_vars = [cfo.exit(x[0]) for x in switch_vars]
        self._loop_exits = exit_vars
        self.ExitResult(exit_vars)
        return original_body_result, exit_vars

    # ---- loops built for gradients (control_flow_state.py) --------------------------------
    def AddForwardLoopCounter(self, outer_grad_state):  # noqa: N802
        """Adds `n = 0; while (pivot) n++;` to this (forward) loop; called in its outer
        context. Returns (the Exit of n: the iteration count, its NextIteration: the
        forward index that orders the history pushes of each iteration)."""
        n = constant_op.constant(0, name="f_count")
        if outer_grad_state is not None:
            # The pushes of the i-th run of this inner loop precede those of the (i+1)-th.
            n.op._add_control_input(outer_grad_state.forward_index.op.inputs[0].op)
        self.Enter()
        try:
            self.AddName(n)
            enter_n = cfo._enter(n, self._name, is_constant=False,
                                 parallel_iterations=self._parallel_iterations, name="f_count")
            self._loop_enters.append(enter_n)
            merge_n = cfo.merge([enter_n, enter_n])[0]
            switch_n = cfo.switch(merge_n, self._pivot)
            index = math_ops.add(switch_n[1], 1)
            next_n = cfo._next_iteration(index)
            merge_n.op._update_input(1, next_n)
            total_iterations = cfo.exit(switch_n[0], name="f_count")
            self._loop_exits.append(total_iterations)
            self.ExitResult([total_iterations])
        finally:
            self.Exit()
        return total_iterations, next_n

    def AddBackpropLoopCounter(self, count, outer_grad_state):  # noqa: N802
        """Adds `n = count; while (n >= 1) n--;` as this gradient loop's condition; called
        in its outer context. Returns the NextIteration of n (the backprop index)."""
        one = constant_op.constant(1, name="b_count")
        self.Enter()
        try:
            self.AddName(count)
            enter_count = cfo._enter(count, self._name, is_constant=False,
                                     parallel_iterations=self._parallel_iterations,
                                     name="b_count")
            self._loop_enters.append(enter_count)
            merge_count = cfo.merge([enter_count, enter_count])[0]
            self._pivot_for_pred = merge_count
            pred = comparison_ops.greater_equal(merge_count, one)
            self._pivot = cfo.loop_cond(pred, name="b_count")
            switch_count = cfo.switch(merge_count, self._pivot)
            index = math_ops.subtract(switch_count[1], one)
            self._pivot_for_body = index
            next_count = cfo._next_iteration(index)
            merge_count.op._update_input(1, next_count)
            final_zero = cfo.exit(switch_count[0], name="b_count")
            self._loop_exits.append(final_zero)
            if outer_grad_state is not None:
                # The pops of the i-th run of this inner loop precede those of the next run.
                outer_grad_state.grad_sync._add_control_input(final_zero.op)
            self.ExitResult([final_zero])
        finally:
            self.Exit()
        return next_count

    def AddBackpropAccumulator(self, op: Operation, grad: Tensor) -> Tensor:  # noqa: N802
        """Sums the per-iteration gradients of a loop invariant (`op` is its constant
        Enter): `acc = 0; while (pivot) acc += grad;`. Called in this gradient loop;
        returns the Exit of the sum."""
        self.Exit()
        shape = grad.shape
        outer = self.outer_context
        if shape.is_fully_defined():
            if outer is not None:
                outer.Enter()
            acc = constant_op.constant(0, grad.dtype.base_dtype, shape=shape.as_list(),
                                       name="b_acc")
            if outer is not None:
                outer.Exit()
        else:
            value = op.inputs[0]
            if isinstance(outer, WhileContext) and outer.grad_state is not None:
                # A nested loop: the shape of the invariant comes from the forward history.
                forward_ctx = self.grad_state.forward_context
                forward_ctx.outer_context.Enter()
                zeros_shape = shape_internal(value)
                forward_ctx.outer_context.Exit()
                outer_grad_state = self.grad_state.outer_grad_state
                history_zeros_shape = outer_grad_state.AddForwardAccumulator(zeros_shape)
                outer.Enter()
                real_shape = outer_grad_state.AddBackpropAccumulatedValue(
                    history_zeros_shape, zeros_shape)
                acc = array_ops.zeros(real_shape, grad.dtype.base_dtype)
                outer.Exit()
            else:
                if outer is not None:
                    outer.Enter()
                zeros_shape = shape_internal(value)
                acc = array_ops.zeros(zeros_shape, grad.dtype.base_dtype)
                if outer is not None:
                    outer.Exit()
        self.Enter()
        self.AddName(acc)
        enter_acc = cfo._enter(acc, self._name, is_constant=False,
                               parallel_iterations=self._parallel_iterations, name="b_acc")
        self._loop_enters.append(enter_acc)
        merge_acc = cfo.merge([enter_acc, enter_acc], name="b_acc")[0]
        switch_acc_false, switch_acc_true = cfo.switch(merge_acc, self._pivot)
        add_acc = math_ops.add(switch_acc_true, grad)
        next_acc = cfo._next_iteration(add_acc)
        merge_acc.op._update_input(1, next_acc)
        result_acc = cfo.exit(switch_acc_false, name="b_acc")
        self._loop_exits.append(result_acc)
        self.ExitResult([result_acc])
        return result_acc


def shape_internal(t: Tensor) -> Tensor:
    """A Shape op of `t` (VariableShape for a variable's handle), never folded to a
    constant at construction."""
    if t.dtype.base_dtype is dtypes.resource:
        return state_ops.variable_shape(t)
    return apply_op("Shape", input=t, out_type=dtypes.int32, name="Shape")


def _shape_invariant(var: Tensor, shape):
    if shape is None:
        return var.shape
    return tensor_shape.as_shape(shape)


def _add_next_and_back_edge(m: Tensor, v: Tensor, enforce_shape_invariant: bool = True):
    """Closes a loop: NextIteration(v) becomes the second input of the Merge `m`.

    Raises:
      TypeError: `v`'s dtype is not the loop variable's.
      ValueError: `v`'s static shape is not within the loop variable's shape invariant.
    """
    enter = m.op.inputs[0].op
    input_t = enter.inputs[0] if util.IsLoopEnter(enter) else m
    if v.dtype.base_dtype != m.dtype.base_dtype:
        raise TypeError(
            f"Loop variable {input_t.name} enters the loop with dtype {m.dtype.name}, but "
            f"the loop body returns {v.dtype.name} for it ({v.name}). Input 1 of node "
            f"{m.op.name} was passed {_tf_type_name(v.dtype)} from {v.name} incompatible "
            f"with expected {_tf_type_name(m.dtype)}.")
    v = cfo._next_iteration(v)
    if enforce_shape_invariant and not _shape_less_than_or_equal(v.shape, m.shape):
        raise ValueError(
            f"Input tensor '{input_t.name}' enters the loop with shape {input_t.shape}, but "
            f"has shape {v.shape} after one iteration. To allow the shape to vary across "
            f"iterations, use the `shape_invariants` argument of tf.while_loop to specify a "
            f"less-specific shape.")
    m.op._update_input(1, v)
    return v
