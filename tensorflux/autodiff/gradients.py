"""tf.gradients: reverse-mode differentiation as a library over the graph (paper §4.1).

Given ys and xs, the driver
1. finds the ops *between*: reachable forward from the xs (through data edges) and backward
   from the ys (a `stop_gradients` op still receives gradients but passes none on);
2. visits them in reverse topological order: an op is ready once every consumer of its
   outputs that lies between has contributed its gradients (a pending count per op);
3. for each ready op, sums the partial gradients of each output (AddN for dense tensors,
   concatenation for IndexedSlices, densifying when they are mixed), calls the gradient
   function registered for its type (or for `_gradient_op_type`, set by
   `gradient_override_map`) with one gradient per output, zeros standing in for outputs
   with none, and gets one gradient per input;
4. for ops that broadcast their inputs (`broadcasts=True` in define_op), sums each input
   gradient over the broadcast dimensions back to that input's shape, here and only here.

Control flow (control_flow_grad.py, control_flow_state.py): a cond's gradient is built from
the Switch/Merge gradients like any other op's. When a while loop's Exit is between ys and
xs, a ControlFlowState builds one gradient loop per forward loop; each op of a loop has its
gradient built inside that loop's gradient context (forward values it uses are saved per
iteration on stacks and popped in reverse), a loop Switch is visited twice (from its Exit,
then from its body, which closes the gradient loop's back edge), and a loop's Exits enter
the gradient loop together, zeros standing in for the ones no y uses.

Gradients flow only through floating, complex and resource tensors; integer paths give
None, as in TensorFlow. Resource variables in xs stand for their handles: the gradient of
a ReadVariableOp passes through to the handle.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from tensorflux.control_flow import (
    builders,
    control_flow_grad,  # noqa: F401 - control-flow op gradients
    control_flow_state,
)
from tensorflux.control_flow import control_flow_util as cf_util
from tensorflux.framework import dtypes, op_registry
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.indexed_slices import IndexedSlices
from tensorflux.framework.operation import Operation, Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    constant_op,
    joining_ops,
    math_ops,
    reduction_ops,
    sequence_ops,
)

__all__ = ["gradients", "hessians", "AggregationMethod", "RegisterGradient",
           "NotDifferentiable", "NoGradient"]


class AggregationMethod:
    """How partial gradients are summed (all methods give the same values here)."""

    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


class RegisterGradient:
    """`@tf.RegisterGradient("Name")`: registers a gradient function under a name."""

    def __init__(self, op_type: str):
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, fn):
        return op_registry.gradient(self._op_type)(fn)


def NotDifferentiable(op_type: str) -> None:  # noqa: N802 - TF1 name
    op_registry.not_differentiable(op_type)


NoGradient = NotDifferentiable


def _backpropagatable(t: Tensor) -> bool:
    dt = t.dtype.base_dtype
    return dt.is_floating or dt.is_complex or dt is dtypes.resource or dt is dtypes.variant


def _as_list(x) -> list:
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def _as_x_tensor(x) -> Tensor:
    """Resource variables stand for their handle; other objects convert to tensors."""
    if getattr(x, "_is_resource_variable", False):
        return x.handle
    if isinstance(x, Tensor):
        return x
    return convert_to_tensor(x)


def gradients(ys, xs, grad_ys=None, name: str = "gradients",
              colocate_gradients_with_ops: bool = False, gate_gradients: bool = False,
              aggregation_method=None, stop_gradients=None):
    """Symbolic partial derivatives of sum(ys) with respect to each x in xs.

    Args:
      ys: a Tensor or list of Tensors to differentiate.
      xs: a Tensor, Variable or list of them.
      grad_ys: initial gradients for each y (default: ones of y's shape).
      name: name scope of the gradient ops.
      colocate_gradients_with_ops: place each gradient op with its forward op.
      gate_gradients: group the gradients of each op's inputs (tf.tuple) before use.
      aggregation_method: accepted for compatibility; partial gradients are summed.
      stop_gradients: tensors through which no gradient flows (held constant).

    Returns:
      A list with one entry per x: a Tensor, an IndexedSlices, or None where ys do not
      depend on x through differentiable paths.

    Raises:
      LookupError: an op on the path has no registered gradient (naming op and type).
      ValueError: grad_ys does not match ys in length or dtype; a gradient function
        returned the wrong number of gradients.
    """
    ys = [convert_to_tensor(y) if not isinstance(y, Tensor) else y for y in _as_list(ys)]
    xs = [_as_x_tensor(x) for x in _as_list(xs)]
    stop = [convert_to_tensor(s) if not isinstance(s, Tensor) else s
            for s in (_as_list(stop_gradients) if stop_gradients is not None else [])]
    if grad_ys is not None:
        grad_ys = _as_list(grad_ys)
        if len(grad_ys) != len(ys):
            raise ValueError(f"Passed {len(grad_ys)} grad_ys for {len(ys)} ys")
    g = graph_lib.get_graph_from_inputs(ys + xs + stop)
    with g.as_default(), g.name_scope(name or "gradients"):
        grads: dict[Tensor, list] = {}
        for k, y in enumerate(ys):
            gy = None if grad_ys is None else grad_ys[k]
            grads.setdefault(y, []).append(_initial_grad(y, gy, k))
        between, pending, loop_state = _between(ys, xs)
        _backprop(g, ys, xs, stop, between, pending, grads, colocate_gradients_with_ops,
                  gate_gradients, loop_state)
        return [_aggregate(grads.get(x)) for x in xs]


def _initial_grad(y: Tensor, gy, k: int):
    if gy is None:
        with graph_lib.name_scope(f"grad_ys_{k}"):
            if y.shape.is_fully_defined():
                return constant_op.constant(np.ones(y.shape.as_list(),
                                                    y.dtype.as_numpy_dtype), name="ones")
            return array_ops.ones_like(y)
    if isinstance(gy, IndexedSlices):
        return gy
    # A grad_ys tensor must have y's dtype (TypeError, as TensorFlow's ops raise for it).
    # Its shape is not checked against y's, as TensorFlow does not: a gradient that
    # reshapes (Reshape's) takes any grad_ys of y's size, which TF1 programs rely on
    # (baselines' ACER passes a [1, n, k] grad_ys for an [n, k] y); elsewhere the first
    # op whose input gradient comes out incompatible with the input raises (_backprop_op).
    if not _backpropagatable(y):  # integer ys get no gradient whatever grad_ys says
        return gy if isinstance(gy, Tensor) else convert_to_tensor(gy)
    if isinstance(gy, Tensor) and gy.dtype.base_dtype != y.dtype.base_dtype:
        raise TypeError(f"Gradient type {gy.dtype.name} of grad_ys[{k}] does not match the "
                        f"type {y.dtype.name} of y {y.name}")
    return convert_to_tensor(gy, dtype=y.dtype)


def _between(ys, xs):
    """Ops on a path from some x to some y (reached forward through differentiable outputs
    only), in breadth-first order from the ys, and each one's pending-consumer count.
    (`stop_gradients` do not shorten these paths: a stop op still receives gradients; it
    only passes none on, which `_backprop` handles.)

    When a loop Exit is among them, a ControlFlowState is made for the loops
    (control_flow_state.py), which also adds every other Exit of those loops.
    """
    reached: set[Operation] = set()
    work = [x.op for x in xs]
    while work:
        op = work.pop()
        if op in reached:
            continue
        reached.add(op)
        for out in op.outputs:
            if _backpropagatable(out):
                work.extend(out._consumers)
    between: set[Operation] = set()
    between_list: list[Operation] = []
    queue = deque(y.op for y in ys)
    while queue:
        op = queue.popleft()
        if op in between or op not in reached:
            continue
        between.add(op)
        between_list.append(op)
        queue.extend(t.op for t in op.inputs)
    loop_state = control_flow_state.MaybeCreateControlFlowState(between_list, between, False)
    pending: dict[Operation, int] = {}
    for op in between_list:
        for t in op.inputs:
            if t.op in between:
                pending[t.op] = pending.get(t.op, 0) + 1
    return between, pending, loop_state


def _backprop(g, ys, xs, stop, between, pending, grads, colocate, gate,
              loop_state=None) -> None:
    """Visits the between ops in reverse dataflow order, calling their gradient functions.

    An op is ready when all its consumers between have contributed (pending count 0). With
    loops (`loop_state`): a loop Switch is visited twice (from its Exit, then from its body);
    the Exits of a loop are processed together once all of them are ready; each op's
    gradient is built in its loop's gradient context.
    """
    stop_ops = {t.op for t in stop}
    live = _passing(between, stop_ops) | {x.op for x in xs}
    queue: deque = deque()
    to_ops_set: set[Operation] = set()
    for op in dict.fromkeys(y.op for y in ys):
        if op in between and pending.get(op, 0) == 0 and op not in to_ops_set:
            to_ops_set.add(op)
            queue.append(op)
    if loop_state is not None:
        for y in loop_state.ProcessUnusedLoopExits(pending, to_ops_set):
            if _backpropagatable(y):
                grads.setdefault(y, []).append(loop_state.ZerosLikeForExit(y))
            queue.append(y.op)
    while queue:
        op = queue.popleft()
        if op not in stop_ops and op.inputs:
            scope = g.colocate_with(op) if colocate else _nullcontext()
            with scope:
                _backprop_op(g, op, between, grads, gate, loop_state, live)
        # A stop op gets gradients but passes none on; its inputs' pending counts still
        # drop, so what lies behind it on other paths is still visited.
        _update_pending_and_enqueue_ready(grads, op, queue, pending, loop_state, between)
    if loop_state is not None:
        loop_state.PostProcessing()


def _update_pending_and_enqueue_ready(grads, op, queue, pending, loop_state,
                                      between) -> None:
    for t in op.inputs:
        x = t.op
        if x not in between:
            continue
        pending[x] -= 1
        ready = pending[x] == 0
        if loop_state is not None and not ready:
            ready = pending[x] > 0 and cf_util.IsLoopSwitch(x)
        if not ready:
            continue
        if loop_state is not None and cf_util.IsLoopExit(x):
            # The exits of a loop enter its gradient loop together, once all are ready.
            grad_state = loop_state.GetGradState(x, before=False)
            grad_state.deferred_exits.append(x.outputs[0])
            grad_state.pending_exits_count -= 1
            if grad_state.pending_exits_count == 0:
                has_grad = False
                for y in grad_state.deferred_exits:
                    if any(gr is not None for gr in grads.get(y, ())):
                        has_grad = True
                        queue.append(y.op)
                    else:
                        grad_state.unused_exits.append(y)
                for y in grad_state.unused_exits:
                    if has_grad and _backpropagatable(y):
                        grads.setdefault(y, []).append(loop_state.ZerosLikeForExit(y))
                    queue.append(y.op)
        else:
            queue.append(x)


def _zeros_for_output(op: Operation, i: int, loop_state):
    """A zero gradient for output i of `op` (which got none); dead where the output is."""
    if loop_state is not None:
        return loop_state.ZerosLike(op, i)
    if op._control_flow_context is not None or op.type == "Switch":
        return control_flow_state.ZerosLike(op, i)
    return array_ops.zeros_like(op.outputs[i])


def _passing(between, stop_ops) -> set:
    """The ops between that pass gradients on: not stop ops, not NotDifferentiable."""
    return {op for op in between if op not in stop_ops and op_registry.get_gradient(
        op.attrs.get("_gradient_op_type", op.type)) is not op_registry.NOT_DIFFERENTIABLE}


def _backprop_op(g, op: Operation, between, grads, gate, loop_state=None,
                 live=None) -> None:
    if loop_state is not None:
        loop_state.EnterGradWhileContext(op, before=True)
    try:
        out_grads = []
        for t in op.outputs:
            agg = _aggregate(grads.get(t))
            if agg is not None and len(grads[t]) > 1:
                grads[t] = [agg]  # a loop Switch is visited twice: aggregate once
            out_grads.append(agg)
    finally:
        if loop_state is not None:
            loop_state.ExitGradWhileContext(op, before=True)
    if all(gr is None for gr in out_grads):
        return
    if not any(t.op in between and _backpropagatable(t) for t in op.inputs):
        return
    grad_name = op.attrs.get("_gradient_op_type", op.type)
    grad_fn = op_registry.get_gradient(grad_name)
    if grad_fn is None or grad_fn is op_registry.NO_GRADIENT:
        raise LookupError(f"No gradient defined for operation '{op.name}' (op type: "
                          f"{op.type}). In general every operation must have an associated "
                          "`@tf.RegisterGradient` for correct autodiff, which this op is "
                          "lacking.")
    if grad_fn is op_registry.NOT_DIFFERENTIABLE:
        return
    if loop_state is not None:
        loop_state.EnterGradWhileContext(op, before=False)
    try:
        is_loop_switch = cf_util.IsLoopSwitch(op)
        with g.name_scope(op.name + "_grad"):
            for i, gr in enumerate(out_grads):
                if gr is None and _backpropagatable(op.outputs[i]) and not is_loop_switch:
                    out_grads[i] = _zeros_for_output(op, i, loop_state)
            in_grads = grad_fn(op, *out_grads)
            in_grads = list(in_grads) if isinstance(in_grads, (list, tuple)) else [in_grads]
            if len(in_grads) != len(op.inputs):
                raise ValueError(f"Num gradients {len(in_grads)} generated for op "
                                 f"{op.name} do not match num inputs "
                                 f"{len(op.inputs)}")
            if loop_state is None and live is not None:
                in_grads = _kept(in_grads, op, live)
            if op._op_def is not None and op._op_def.broadcasts:
                in_grads = [None if gr is None else _sum_to_shape(gr, x)
                            for gr, x in zip(in_grads, op.inputs, strict=True)]
            if gate and sum(gr is not None for gr in in_grads) > 1:
                dense = [gr for gr in in_grads if isinstance(gr, Tensor)]
                gated = iter(builders.tuple(dense))
                in_grads = [next(gated) if isinstance(gr, Tensor) else gr for gr in in_grads]
        for index, (x, gr) in enumerate(zip(op.inputs, in_grads, strict=True)):
            if gr is None or not _backpropagatable(x):
                continue
            if not isinstance(gr, (Tensor, IndexedSlices)):
                gr = convert_to_tensor(gr, dtype=x.dtype)
            if isinstance(gr, Tensor) and x.dtype.base_dtype is not dtypes.resource:
                if not gr.shape.is_compatible_with(x.shape):
                    raise ValueError(
                        "Incompatible shapes between op input and calculated input gradient. "
                        f"Forward operation: {op.name}. Input index: {index}. "
                        f"Original input shape: {x.shape}. Calculated input gradient shape: "
                        f"{gr.shape}")
                gr.set_shape(x.shape)
            grads.setdefault(x, []).append(gr)
    finally:
        if loop_state is not None:
            loop_state.ExitGradWhileContext(op, before=False)


def _kept(in_grads: list, op: Operation, live) -> list:
    """`in_grads` without the gradients of inputs that no x needs: made by ops that are
    not between (a constant, an input no x reaches) or that pass nothing on (a
    StopGradient, a stop op), unless the input is an x. Nothing reads those, so they are
    neither summed to their input's shape nor gated with the others, and the step never
    runs them (TF's grappler turns such nodes into NoOps; a gated
    softmax_cross_entropy_with_logits computed LogSoftmax for its stopped labels)."""
    return [gr if gr is None or x.op in live else None
            for gr, x in zip(in_grads, op.inputs, strict=True)]


class _nullcontext:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _sum_to_shape(grad, x: Tensor):
    """Sums `grad` (shaped like a broadcast output) back to the shape of input `x`.

    Statically when x's shape is fully known (no ops at all when nothing broadcast),
    otherwise with BroadcastGradientArgs at run time.
    """
    if isinstance(grad, IndexedSlices):
        grad = convert_to_tensor(grad)
    gshape, xshape = grad.shape, x.shape
    if xshape.is_fully_defined() and gshape.ndims is not None:
        xdims = xshape.as_list()
        gdims = gshape.as_list()
        lead = len(gdims) - len(xdims)
        if lead < 0:
            raise ValueError(f"Gradient of rank {len(gdims)} for input {x.name} of rank "
                             f"{len(xdims)}")
        axes = list(range(lead)) + [lead + i for i, d in enumerate(xdims)
                                    if d == 1 and gdims[lead + i] != 1]
        if not axes:
            return grad if gdims == xdims else array_ops.reshape(grad, xdims)
        summed = reduction_ops.reduce_sum(grad, axes)
        return array_ops.reshape(summed, xdims)
    sx = array_ops.shape(x)
    sg = array_ops.shape(grad)
    _, rx = sequence_ops.broadcast_gradient_args(sg, sx)
    return array_ops.reshape(reduction_ops.reduce_sum(grad, rx), sx)


def _aggregate(parts):
    """Sum of partial gradients: AddN, IndexedSlices concatenation, or None."""
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]

    if all(isinstance(p, IndexedSlices) for p in parts):
        dense_shape = next((p.dense_shape for p in parts if p.dense_shape is not None), None)
        indices = [p.indices for p in parts]
        if len({i.dtype.base_dtype for i in indices}) > 1:  # int32 and int64 ids: as int64
            indices = [math_ops.cast(i, dtypes.int64) for i in indices]
        return IndexedSlices(joining_ops.concat([p.values for p in parts], 0),
                             joining_ops.concat(indices, 0), dense_shape)
    dense = [convert_to_tensor(p) if isinstance(p, IndexedSlices) else p for p in parts]
    return math_ops.add_n(dense)


def hessians(ys, xs, name: str = "hessians", colocate_gradients_with_ops: bool = False,
             gate_gradients: bool = False, aggregation_method=None):
    """Second derivatives of sum(ys) for each x (`tf.hessians`): for x of shape S, a tensor
    of shape S + S. Each x needs a fully defined static shape (its gradient is unrolled
    element by element)."""
    xs = _as_list(xs)
    out = []
    with graph_lib.name_scope(name):
        for x in xs:
            xt = _as_x_tensor(x)
            # A resource variable differentiates through its handle, but is shaped as itself.
            shape = x.shape if getattr(x, "_is_resource_variable", False) else xt.shape
            dtype = x.dtype.base_dtype
            if not shape.is_fully_defined():
                raise ValueError(f"tf.hessians needs a fully defined shape for {xt.name}, got "
                                 f"{shape}")
            (grad,) = gradients(ys, [x], colocate_gradients_with_ops=colocate_gradients_with_ops,
                                gate_gradients=gate_gradients)
            if grad is None:
                out.append(None)
                continue
            flat = array_ops.reshape(convert_to_tensor(grad), [-1])
            n = int(np.prod(shape.as_list(), dtype=np.int64))
            rows = []
            for i in range(n):
                (row,) = gradients(flat[i], [x])
                rows.append(array_ops.zeros(shape.as_list(), dtype) if row is None else
                            array_ops.reshape(convert_to_tensor(row), shape.as_list()))
            h = joining_ops.stack(rows)
            out.append(array_ops.reshape(h, shape.as_list() * 2))
    return out
