"""CPU kernels of queues, accumulators and Barrier (tensorflux/ops/data_flow_ops.py).

Resource-creating ops (FIFOQueueV2, ResourceConditionalAccumulator, Barrier, the readers in
io_ops) behave like TensorFlow's ResourceOpKernel: the first run of the node in a Session
creates the resource in the device's ResourceMgr, in the node's `container`, under its
`shared_name` or else under a process-unique "_N_<node name>" (N counts every resource
created, as TensorFlow's messages show: "FIFOQueue '_0_fifo_queue' is closed ..."). Later
runs of the node, from any step of that Session, return the same handle. An existing
shared resource must agree with the op's attributes (InvalidArgumentError otherwise).

Blocking kernels (enqueue, dequeue, close, take) are asynchronous: they hand the step's
CancellationManager and their `done` callback to the resource (kernels/queues.py,
kernels/accumulators.py) and return at once.
"""

from __future__ import annotations

import itertools
import threading
import weakref

import numpy as np

from tensorflux.framework import dtypes, errors
from tensorflux.kernels import accumulators as acc_lib
from tensorflux.kernels import queues as q_lib
from tensorflux.kernels.cpu.state_ops import ResourceHandle, as_handle
from tensorflux.kernels.queues import shape_str, type_name
from tensorflux.kernels.registry import kernel, kernel_factory

# ---- resource-creating ops ---------------------------------------------------------------

_unique_ids = itertools.count()
_handles: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # ResourceMgr -> {node: h}
_handles_lock = threading.Lock()


class LiveHandle(ResourceHandle):
    """A ResourceHandle that also carries the resource it names and (weakly) its
    ResourceMgr, so kernels skip the lookup while the resource has not been dropped (every
    resource here sets `dropped` in its `close_resource`, which the ResourceMgr calls when
    it drops it)."""

    __slots__ = ("resource", "rm")


def _make_handle(container, name, device, resource, rm) -> LiveHandle:
    h = LiveHandle(container, name, device, dtypes.resource, None)
    object.__setattr__(h, "resource", resource)
    object.__setattr__(h, "rm", weakref.ref(rm))  # weak: _handles is keyed weakly by rm
    return h


def resource_op(node, create, check=None):
    """compute(ctx) -> the handle of the resource `node` creates (see the module docstring).

    Args:
      node: the resource op's node (attrs `container` and `shared_name`).
      create: name -> a new resource (with a `dropped` attribute, False while alive).
      check: resource -> None; raises if an existing shared resource does not fit.
    """
    container = node.attrs.get("container", "")
    shared = node.attrs.get("shared_name", "")
    node_name = node.name
    last = [(None, None)]  # (ResourceMgr, handle) of the latest run, one atomic object

    def compute(ctx):
        rm = ctx.resource_mgr
        last_rm, h = last[0]
        if last_rm is rm and not h.resource.dropped:
            return h
        with _handles_lock:
            per_rm = _handles.setdefault(rm, {})
            h = per_rm.get(node_name)
            if h is None or h.resource.dropped:
                name = shared or f"_{next(_unique_ids)}_{node_name}"
                res = rm.lookup_or_create(container, name, lambda: create(name))
                if check is not None:
                    check(res)
                h = _make_handle(container, name, ctx.device.name if ctx.device else "", res,
                                 rm)
                per_rm[node_name] = h
            last[0] = (rm, h)
            return h

    return compute


def lookup(ctx, handle, cls, what: str):
    """The resource `handle` names, of class `cls`; NotFoundError or InvalidArgumentError."""
    res = getattr(handle, "resource", None)
    if res is not None and not res.dropped and handle.rm() is ctx.resource_mgr and \
            isinstance(res, cls):
        return res
    h = as_handle(handle)
    res = ctx.resource_mgr.get(h.container, h.name)
    if res is None:
        container = h.container or ctx.resource_mgr.default_container
        raise errors.NotFoundError(None, None, f"Resource {container}/{h.name}/{what} does "
                                   "not exist.")
    if not isinstance(res, cls):
        raise errors.InvalidArgumentError(
            None, None, f"Trying to access resource {h.name} using the wrong type. Expected "
            f"{what} got {type(res).__name__}")
    return res


def _shapes_attr(node, fully_defined: bool):
    """The `shapes` attr as tuples (None for unknown dims), or None when empty."""
    shapes = node.attrs.get("shapes") or []
    if not shapes:
        return None
    out = []
    for s in shapes:
        if s.ndims is None:
            raise errors.InvalidArgumentError(None, None, "Queue shapes must have a known rank")
        dims = tuple(s.as_list())
        if fully_defined and any(d is None for d in dims):
            raise errors.InvalidArgumentError(
                None, None, f"All shapes must be fully defined, got {shape_str(dims)}")
        out.append(dims)
    types = node.attrs["component_types"]
    if node.op != "PriorityQueueV2" and len(out) != len(types):
        raise errors.InvalidArgumentError(
            None, None, f"Number of shapes ({len(out)}) does not match the number of component "
            f"types ({len(types)})")
    return out


def _queue_kernel(op_type: str):
    @kernel_factory(op_type)
    def factory(node):
        a = node.attrs
        types = list(a["component_types"])
        capacity = a.get("capacity", -1)
        shapes = _shapes_attr(node, fully_defined=op_type != "PaddingFIFOQueueV2")
        if op_type == "FIFOQueueV2":
            cls, extra = q_lib.FIFOQueue, ()
        elif op_type == "PaddingFIFOQueueV2":
            cls, extra = q_lib.PaddingFIFOQueue, ()
        elif op_type == "RandomShuffleQueueV2":
            cls = q_lib.RandomShuffleQueue
            extra = (a["min_after_dequeue"], a["seed"], a["seed2"])
            limit = capacity if capacity > 0 else 2**31 - 1
            if extra[0] >= limit:
                raise errors.InvalidArgumentError(
                    None, None, f"min_after_dequeue {extra[0]} must be < capacity {capacity}")
        else:
            cls, extra = q_lib.PriorityQueue, ()
            if shapes is None or len(shapes) != len(types):
                raise errors.InvalidArgumentError(
                    None, None, "PriorityQueue requires one shape per component type")
            types = [dtypes.int64] + types
            shapes = [()] + shapes

        def check(res):
            if not isinstance(res, q_lib.QueueBase):
                raise errors.InvalidArgumentError(
                    None, None, f"Expected {cls.kind}, found {type(res).__name__}")
            if cls is q_lib.RandomShuffleQueue and isinstance(res, cls):
                res.check_compatible(cls.kind, capacity, types, shapes, extra[0])
            else:
                res.check_compatible(cls.kind, capacity, types, shapes)

        return resource_op(node, lambda name: cls(name, types, shapes, capacity, *extra),
                           check)

    return factory


for _t in ("FIFOQueueV2", "PaddingFIFOQueueV2", "RandomShuffleQueueV2", "PriorityQueueV2"):
    _queue_kernel(_t)


def _queue(ctx, handle) -> q_lib.QueueBase:
    return lookup(ctx, handle, q_lib.QueueBase, "QueueInterface")


# ---- enqueue -----------------------------------------------------------------------------


def _check_signature(queue, types: list, output: bool = False) -> None:
    if types != queue.dtypes:
        have = ", ".join(type_name(t) for t in types)
        want = ", ".join(type_name(t) for t in queue.dtypes)
        if output:
            msg = f"Signature mismatch, have: resource-> {have} expected: resource-> {want}"
        else:
            msg = f"Signature mismatch, have: resource, {have}-> expected: resource, {want}->"
        raise errors.InvalidArgumentError(
            None, None, f"{msg} ({queue.kind} '{queue.name}' holds {want})")


@kernel_factory("QueueEnqueueV2", is_async=True)
def _enqueue(node):
    types = list(node.attrs["Tcomponents"])

    def compute(ctx, done, handle, *comps):
        queue = _queue(ctx, handle)
        _check_signature(queue, types)
        queue.enqueue(ctx.cancellation, queue.own(comps), done)  # done(None or an error)

    return compute


@kernel_factory("QueueEnqueueManyV2", is_async=True)
def _enqueue_many(node):
    types = list(node.attrs["Tcomponents"])

    def compute(ctx, done, handle, *comps):
        queue = _queue(ctx, handle)
        _check_signature(queue, types)
        own, count = queue.own_batch(comps)
        queue.enqueue_many(ctx.cancellation, own, count, done)

    return compute


# ---- dequeue -----------------------------------------------------------------------------


def _tuple_callback(done, n: int):
    if n == 1:
        def one(result):
            done(result if isinstance(result, BaseException) else result[0])

        return one

    def many(result):
        done(result if isinstance(result, BaseException) else tuple(result))

    return many


@kernel_factory("QueueDequeueV2", is_async=True)
def _dequeue(node):
    types = list(node.attrs["component_types"])

    def compute(ctx, done, handle):
        queue = _queue(ctx, handle)
        _check_signature(queue, types, output=True)
        queue.dequeue(ctx.cancellation, _tuple_callback(done, len(types)))

    return compute


def _dequeue_many_kernel(op_type: str, allow_small: bool):
    @kernel_factory(op_type, is_async=True)
    def factory(node):
        types = list(node.attrs["component_types"])

        def compute(ctx, done, handle, n):
            queue = _queue(ctx, handle)
            _check_signature(queue, types, output=True)
            n = int(n)
            if n < 0:
                raise errors.InvalidArgumentError(
                    None, None, f"DequeueManyOp requested {n} < 0 elements")
            if queue.shapes is None or (not isinstance(queue, q_lib.PaddingFIFOQueue) and any(
                    d is None for s in queue.shapes for d in s)):
                raise errors.InvalidArgumentError(
                    None, None, f"{queue.kind}'s DequeueMany and DequeueUpTo require the "
                    "components to have specified shapes.")
            queue.dequeue_many(ctx.cancellation, n, allow_small,
                               _tuple_callback(done, len(types)))

        return compute

    return factory


_dequeue_many_kernel("QueueDequeueManyV2", False)
_dequeue_many_kernel("QueueDequeueUpToV2", True)


@kernel_factory("QueueCloseV2", is_async=True)
def _close(node):
    cancel = bool(node.attrs["cancel_pending_enqueues"])

    def compute(ctx, done, handle):
        _queue(ctx, handle).close(ctx.cancellation, cancel, done)

    return compute


@kernel("QueueSizeV2")
def _size(ctx, handle):
    return np.int32(_queue(ctx, handle).size())


@kernel("QueueIsClosedV2")
def _is_closed(ctx, handle):
    return np.bool_(_queue(ctx, handle).is_closed())


# ---- accumulators ------------------------------------------------------------------------


def _static_shape(node):
    shape = node.attrs.get("shape")
    return None if shape is None or shape.ndims is None else tuple(shape.as_list())


def _accumulator_kernel(op_type: str, cls):
    @kernel_factory(op_type)
    def factory(node):
        dtype, shape = node.attrs["dtype"], _static_shape(node)
        reduction = node.attrs["reduction_type"]

        def check(res):
            if not isinstance(res, cls):
                raise errors.InvalidArgumentError(
                    None, None, f"Expected {cls.resource_kind}, found {type(res).__name__}")
            res.check_compatible(dtype, shape, reduction)

        return resource_op(node, lambda name: cls(name, dtype, shape, reduction), check)

    return factory


_accumulator_kernel("ResourceConditionalAccumulator", acc_lib.ConditionalAccumulator)
_accumulator_kernel("SparseConditionalAccumulator", acc_lib.SparseConditionalAccumulator)
_ANY_ACCUMULATOR = (acc_lib.ConditionalAccumulator, acc_lib.SparseConditionalAccumulator)


def _accumulator(ctx, handle, cls=_ANY_ACCUMULATOR):
    return lookup(ctx, handle, cls, "ConditionalAccumulator")


def _check_dtype(res, dtype) -> None:
    if dtype != res.dtype:
        raise errors.InvalidArgumentError(
            None, None, f"Type mismatch: accumulator '{res.name}' holds {type_name(res.dtype)}"
            f", got {type_name(dtype)}")


@kernel_factory("ResourceAccumulatorApplyGradient")
def _apply_gradient(node):
    dtype = node.attrs["dtype"]

    def compute(ctx, handle, local_step, gradient):
        res = _accumulator(ctx, handle, acc_lib.ConditionalAccumulator)
        _check_dtype(res, dtype)
        res.apply(int(local_step), np.asarray(gradient))

    return compute


@kernel_factory("SparseAccumulatorApplyGradient")
def _sparse_apply_gradient(node):
    dtype, known = node.attrs["dtype"], bool(node.attrs["has_known_shape"])

    def compute(ctx, handle, local_step, indices, values, shape):
        res = _accumulator(ctx, handle, acc_lib.SparseConditionalAccumulator)
        _check_dtype(res, dtype)
        res.apply(int(local_step), indices, values, shape, known)

    return compute


def _take_kernel(op_type: str, cls, sparse: bool):
    @kernel_factory(op_type, is_async=True)
    def factory(node):
        dtype = node.attrs["dtype"]

        def compute(ctx, done, handle, num_required):
            res = _accumulator(ctx, handle, cls)
            _check_dtype(res, dtype)
            res.take(ctx.cancellation, int(num_required), done)

        return compute

    return factory


_take_kernel("ResourceAccumulatorTakeGradient", acc_lib.ConditionalAccumulator, False)
_take_kernel("SparseAccumulatorTakeGradient", acc_lib.SparseConditionalAccumulator, True)


@kernel("ResourceAccumulatorNumAccumulated", "AccumulatorNumAccumulated")
def _num_accumulated(ctx, handle):
    return np.int32(_accumulator(ctx, handle).num_accumulated())


@kernel("ResourceAccumulatorNumDropped", "AccumulatorNumDropped")
def _num_dropped(ctx, handle):
    return np.int64(_accumulator(ctx, handle).num_dropped())


@kernel("ResourceAccumulatorSetGlobalStep", "AccumulatorSetGlobalStep")
def _set_global_step(ctx, handle, step):
    _accumulator(ctx, handle).set_global_step(int(step))


# ---- Barrier -----------------------------------------------------------------------------


@kernel_factory("Barrier")
def _barrier(node):
    types = list(node.attrs["component_types"])
    shapes = _shapes_attr(node, fully_defined=True)
    capacity = node.attrs.get("capacity", -1)

    def check(res):
        if not isinstance(res, acc_lib.Barrier) or res.dtypes != types or \
                res.shapes != shapes:
            raise errors.InvalidArgumentError(
                None, None, f"Shared barrier '{res.name}' does not match the requested "
                "component types and shapes")

    return resource_op(node, lambda name: acc_lib.Barrier(name, types, shapes, capacity), check)


def _barrier_of(ctx, handle) -> acc_lib.Barrier:
    return lookup(ctx, handle, acc_lib.Barrier, "Barrier")


@kernel_factory("BarrierInsertMany")
def _barrier_insert(node):
    component = node.attrs["component_index"]

    def compute(ctx, handle, keys, values):
        _barrier_of(ctx, handle).insert_many(component, keys, values)

    return compute


@kernel_factory("BarrierTakeMany", is_async=True)
def _barrier_take(node):
    allow_small = bool(node.attrs["allow_small_batch"])

    def compute(ctx, done, handle, num_elements):
        _barrier_of(ctx, handle).take_many(ctx.cancellation, int(num_elements), allow_small,
                                           done)

    return compute


@kernel_factory("BarrierClose")
def _barrier_close(node):
    cancel = bool(node.attrs["cancel_pending_enqueues"])

    def compute(ctx, handle):
        _barrier_of(ctx, handle).close(cancel)

    return compute


@kernel("BarrierReadySize")
def _barrier_ready(ctx, handle):
    return np.int32(_barrier_of(ctx, handle).ready_size())


@kernel("BarrierIncompleteSize")
def _barrier_incomplete(ctx, handle):
    return np.int32(_barrier_of(ctx, handle).incomplete_size())
