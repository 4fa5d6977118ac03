"""Queues, conditional accumulators and Barrier (paper §3.1; whitepaper §4.6).

A queue is a stateful resource: `FIFOQueueV2` (and PaddingFIFOQueueV2, RandomShuffleQueueV2,
PriorityQueueV2) outputs a scalar `resource` handle naming it, and QueueEnqueueV2,
QueueDequeueV2, ... take that handle, so producer and consumer steps meet in the queue that
lives in the device's ResourceMgr (container `container`, name `shared_name` or a unique
"_N_<node name>"). Blocking ops (enqueue, dequeue, close) have asynchronous kernels
(tensorflux/kernels/cpu/data_flow_ops.py over tensorflux/kernels/queues.py): a step waiting
on a queue holds no thread, and Session.close or a RunOptions deadline cancels it.

The Python classes (`tf.FIFOQueue`, ...) follow TF1's `data_flow_ops`: names, static shapes
set on the outputs, dictionaries for named components, and the checks TF1 makes while the
graph is built (ValueError/TypeError). ConditionalAccumulator uses TensorFlow's resource ops
(ResourceConditionalAccumulator, ResourceAccumulator*); SparseConditionalAccumulator and
Barrier keep TensorFlow's string-handle ops, whose consumers are colocated with the handle.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.indexed_slices import IndexedSlices
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.operation import Tensor
from tensorflux.framework.random_seed import get_seed
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import gather_ops, joining_ops, math_ops
from tensorflux.ops.staging_ops import (  # noqa: F401 - TF1's data_flow_ops has them
    BaseStagingArea,
    MapStagingArea,
    StagingArea,
)

# The TF1 public names of this module.
__all__ = ["QueueBase", "FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue",
           "PriorityQueue", "ConditionalAccumulatorBase", "ConditionalAccumulator",
           "SparseConditionalAccumulator", "Barrier"]

TensorShape = tensor_shape.TensorShape
_DEVICE = "/device:CPU:*"  # queues live in host memory, as in TensorFlow


# ---- op definitions ----------------------------------------------------------------------


def _no_outputs(op):
    return []


def _queue_shapes(handle: Tensor) -> list[TensorShape] | None:
    """The component shapes of the queue op `handle` comes from, if the graph tells."""
    op = handle.op
    while op.type in ("Identity", "StopGradient") and op.inputs:
        op = op.inputs[0].op
    if op.type not in _QUEUE_OPS:
        return None
    shapes = [TensorShape(s) for s in op.attrs.get("shapes") or ()]
    if op.type == "PriorityQueueV2":
        shapes = [TensorShape([])] + shapes
    return shapes or None


def _dequeue_shapes(op, batch: TensorShape | None):
    n = len(op.outputs)
    shapes = _queue_shapes(op.inputs[0])
    if shapes is None or len(shapes) != n:
        return [None] * n
    if batch is None:
        return shapes
    return [batch.concatenate(s) for s in shapes]


def _dequeue_one_shape(op):
    return _dequeue_shapes(op, None)


def _dequeue_many_shape(op):
    n = common_shapes.constant_value(op.inputs[1])
    return _dequeue_shapes(op, TensorShape([None if n is None else int(n)]))


def _dequeue_up_to_shape(op):
    return _dequeue_shapes(op, TensorShape([None]))


_QUEUE_TAIL = ["capacity: int = -1", "container: string = ''", "shared_name: string = ''"]
_QUEUE_OPS = ("FIFOQueueV2", "PaddingFIFOQueueV2", "RandomShuffleQueueV2", "PriorityQueueV2")
for _t in ("FIFOQueueV2", "PaddingFIFOQueueV2"):
    define_op(_t, outputs=["handle: resource"],
              attrs=["component_types: list(type) >= 1",
                     "shapes: list(shape) >= 0 = []"] + _QUEUE_TAIL,
              shape_fn=common_shapes.scalar, stateful=True)
define_op("RandomShuffleQueueV2", outputs=["handle: resource"],
          attrs=["component_types: list(type) >= 1", "shapes: list(shape) >= 0 = []",
                 "capacity: int = -1", "min_after_dequeue: int = 0", "seed: int = 0",
                 "seed2: int = 0", "container: string = ''", "shared_name: string = ''"],
          shape_fn=common_shapes.scalar, stateful=True)
define_op("PriorityQueueV2", outputs=["handle: resource"],
          attrs=["component_types: list(type) >= 0 = []", "shapes: list(shape) >= 0"]
          + _QUEUE_TAIL, shape_fn=common_shapes.scalar, stateful=True)
for _t in ("QueueEnqueueV2", "QueueEnqueueManyV2"):
    define_op(_t, inputs=["handle: resource", "components: Tcomponents"],
              attrs=["Tcomponents: list(type) >= 1", "timeout_ms: int = -1"],
              shape_fn=_no_outputs, stateful=True)
define_op("QueueDequeueV2", inputs=["handle: resource"], outputs=["components: component_types"],
          attrs=["component_types: list(type) >= 1", "timeout_ms: int = -1"],
          shape_fn=_dequeue_one_shape, stateful=True)
define_op("QueueDequeueManyV2", inputs=["handle: resource", "n: int32"],
          outputs=["components: component_types"],
          attrs=["component_types: list(type) >= 1", "timeout_ms: int = -1"],
          shape_fn=_dequeue_many_shape, stateful=True)
define_op("QueueDequeueUpToV2", inputs=["handle: resource", "n: int32"],
          outputs=["components: component_types"],
          attrs=["component_types: list(type) >= 1", "timeout_ms: int = -1"],
          shape_fn=_dequeue_up_to_shape, stateful=True)
define_op("QueueCloseV2", inputs=["handle: resource"],
          attrs=["cancel_pending_enqueues: bool = false"], shape_fn=_no_outputs, stateful=True)
define_op("QueueSizeV2", inputs=["handle: resource"], outputs=["size: int32"],
          shape_fn=common_shapes.scalar, stateful=True)
define_op("QueueIsClosedV2", inputs=["handle: resource"], outputs=["is_closed: bool"],
          shape_fn=common_shapes.scalar, stateful=True)
not_differentiable(*_QUEUE_OPS, "QueueEnqueueV2", "QueueEnqueueManyV2", "QueueDequeueV2",
                   "QueueDequeueManyV2", "QueueDequeueUpToV2", "QueueCloseV2", "QueueSizeV2",
                   "QueueIsClosedV2")


# ---- argument normalisation (TF1's helpers) ----------------------------------------------


def _as_type_list(dtype_list) -> list[dtypes.DType]:
    if not isinstance(dtype_list, (list, tuple)):
        dtype_list = [dtype_list]
    return [dtypes.as_dtype(d) for d in dtype_list]


def _as_shape_list(shapes, unknown_dim_allowed: bool = False,
                   unknown_rank_allowed: bool = False) -> list[TensorShape] | None:
    """TF1's normalisation of a queue's `shapes` argument, with its errors."""
    if unknown_dim_allowed and (not isinstance(shapes, Sequence) or not shapes or any(
            s is None or isinstance(s, int) for s in shapes)):
        raise ValueError("When providing partial shapes, a list of shapes must be provided.")
    if shapes is None:
        return None
    if isinstance(shapes, TensorShape):
        shapes = [shapes]
    if not isinstance(shapes, (tuple, list)):
        raise TypeError("Shapes must be a TensorShape or a list or tuple of TensorShapes, got "
                        f"{type(shapes)} instead.")
    if all(s is None or isinstance(s, int) for s in shapes):
        shapes = [shapes]  # a single shape
    shapes = [tensor_shape.as_shape(s) for s in shapes]
    if not unknown_dim_allowed and any(not s.is_fully_defined() for s in shapes):
        raise ValueError(f"All shapes must be fully defined: {shapes}")
    if not unknown_rank_allowed and any(s.dims is None for s in shapes):
        raise ValueError(f"All shapes must have a defined rank: {shapes}")
    return shapes


def _as_name_list(names, dtype_list):
    if names is None:
        return None
    if not isinstance(names, (list, tuple)):
        names = [names]
    if len(names) != len(dtype_list):
        raise ValueError("List of names must have the same length as the list of dtypes")
    return list(names)


def _shared_name(shared_name):
    return shared_name or ""


# ---- queues ------------------------------------------------------------------------------


def _common_shape(shapes: list) -> TensorShape:
    """The most specific shape all of `shapes` have (dimensions that differ unknown; an
    unknown rank where the ranks differ)."""
    out = shapes[0]
    for s in shapes[1:]:
        if out.ndims is None or s.ndims is None or out.ndims != s.ndims:
            return tensor_shape.unknown_shape()
        out = TensorShape([a if a == b else None
                           for a, b in zip(out.as_list(), s.as_list(), strict=True)])
    return out


class QueueBase:
    """Base class for queue implementations (`tf.QueueBase`).

    A queue holds tuples of tensors ("elements"), each with one tensor per component.
    `enqueue`/`enqueue_many` add elements; `dequeue`/`dequeue_many`/`dequeue_up_to` remove
    them, blocking (without holding a thread) while the queue is empty; `close` ends it.

    Args:
      dtypes: the component DTypes.
      shapes: TensorShapes, one per component, or None.
      names: component names (enqueue then takes, and dequeue returns, dictionaries).
      queue_ref: the queue's `resource` handle tensor.
    """

    def __init__(self, dtypes, shapes, names, queue_ref):
        self._dtypes = dtypes
        if shapes is not None:
            if len(shapes) != len(dtypes):
                raise ValueError("Queue shapes must have the same length as dtypes")
            self._shapes = [TensorShape(s) for s in shapes]
        else:
            self._shapes = [tensor_shape.unknown_shape() for _ in dtypes]
        if names is not None:
            if len(names) != len(dtypes):
                raise ValueError("Queue names must have the same length as dtypes")
            self._names = names
        else:
            self._names = None
        self._queue_ref = queue_ref
        self._name = queue_ref.op.name.split("/")[-1]

    @staticmethod
    def from_list(index, queues):
        """A queue whose handle is `queues[index]`'s, chosen when a step runs (`index` a
        scalar int tensor): the queues' handles stacked and gathered, as TF1 does.

        Raises:
          TypeError: `queues` is not a non-empty list of queues, or their component dtypes
            or names differ.
        """
        if not queues or not isinstance(queues, list) or \
                not all(isinstance(q, QueueBase) for q in queues):
            raise TypeError("A list of queues expected")
        first = queues[0]
        if any(q.dtypes != first.dtypes for q in queues[1:]):
            raise TypeError("Queues do not have matching component dtypes.")
        if any(q.names != first.names for q in queues[1:]):
            raise TypeError("Queues do not have matching component names.")
        shapes = [_common_shape(list(s)) for s in zip(*(q.shapes for q in queues),
                                                      strict=True)]
        handles = joining_ops.stack([q.queue_ref for q in queues])
        return QueueBase(first.dtypes, shapes, first.names,
                         gather_ops.gather(handles, index))

    @property
    def queue_ref(self) -> Tensor:
        """The underlying queue reference (a `resource` handle)."""
        return self._queue_ref

    @property
    def name(self) -> str:
        """The name of the underlying queue."""
        return self._queue_ref.op.name

    @property
    def dtypes(self) -> list:
        return self._dtypes

    @property
    def shapes(self) -> list:
        return self._shapes

    @property
    def names(self):
        return self._names

    def _check_enqueue_dtypes(self, vals) -> list[Tensor]:
        if isinstance(vals, dict):
            if not self._names:
                raise ValueError("Queue must have names to enqueue a dictionary")
            if sorted(self._names, key=str) != sorted(vals.keys(), key=str):
                raise ValueError(
                    "Keys in dictionary to enqueue do not match names of Queue.  Dictionary: "
                    f"({sorted(vals.keys())}), Queue: ({sorted(self._names)})")
            vals = [vals[k] for k in self._names]
        else:
            if self._names:
                raise ValueError("You must enqueue a dictionary in a Queue with names")
            if not isinstance(vals, (list, tuple)):
                vals = [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError(f"Expected {len(self._dtypes)} components to enqueue, got "
                             f"{len(vals)}")
        return [convert_to_tensor(v, dtype=dt, name=f"component_{i}")
                for i, (v, dt) in enumerate(zip(vals, self._dtypes, strict=True))]

    @staticmethod
    def _scope_vals(vals) -> list:
        if isinstance(vals, (list, tuple)):
            return list(vals)
        if isinstance(vals, dict):
            return list(vals.values())
        return [vals]

    def enqueue(self, vals, name=None):
        """Enqueues one element: a tensor, a list/tuple of tensors, or a dict (named queues).

        Blocks (without holding a thread) while the queue is full; fails with CancelledError
        if the queue is closed first.

        Returns:
          The operation that enqueues.

        Raises:
          ValueError: a value's static shape does not fit its component's shape.
        """
        with graph_lib.name_scope(name, f"{self._name}_enqueue",
                                  self._scope_vals(vals)) as scope:
            vals = self._check_enqueue_dtypes(vals)
            for val, shape in zip(vals, self._shapes, strict=True):
                val.shape.assert_is_compatible_with(shape)
            return apply_op("QueueEnqueueV2", handle=self._queue_ref, components=vals,
                            name=scope)

    def enqueue_many(self, vals, name=None):
        """Enqueues the slices of `vals` along dimension 0 as separate elements.

        Returns:
          The operation that enqueues.

        Raises:
          ValueError: the components disagree on dimension 0 or a slice's shape does not fit.
        """
        with graph_lib.name_scope(name, f"{self._name}_EnqueueMany",
                                  self._scope_vals(vals)) as scope:
            vals = self._check_enqueue_dtypes(vals)
            batch_dim = tensor_shape.Dimension(
                tensor_shape.dimension_value(vals[0].shape.with_rank_at_least(1)[0]))
            for val, shape in zip(vals, self._shapes, strict=True):
                val_batch = tensor_shape.dimension_value(val.shape.with_rank_at_least(1)[0])
                batch_dim = batch_dim.merge_with(val_batch)
                val.shape[1:].assert_is_compatible_with(shape)
            return apply_op("QueueEnqueueManyV2", handle=self._queue_ref, components=vals,
                            name=scope)

    def _dequeue_return_value(self, tensors):
        if self._names:
            return {n: tensors[i] for i, n in enumerate(self._names)}
        if len(tensors) == 1:
            return tensors[0]
        return tensors

    def dequeue(self, name=None):
        """Dequeues one element (a tensor, a list of tensors, or a dict for named queues).

        Blocks while the queue is empty; fails with OutOfRangeError once it is closed and
        empty.
        """
        name = name or f"{self._name}_Dequeue"
        ret = apply_op("QueueDequeueV2", handle=self._queue_ref,
                       component_types=self._dtypes, name=name)
        ret = list(ret) if isinstance(ret, (list, tuple)) else [ret]
        for out, shape in zip(ret, self._shapes, strict=True):
            out.set_shape(shape)
        return self._dequeue_return_value(ret)

    def dequeue_many(self, n, name=None):
        """Dequeues `n` elements, concatenated along a new dimension 0.

        Blocks until `n` are there; OutOfRangeError if the queue is closed with fewer.
        """
        name = name or f"{self._name}_DequeueMany"
        ret = apply_op("QueueDequeueManyV2", handle=self._queue_ref, n=n,
                       component_types=self._dtypes, name=name)
        ret = list(ret) if isinstance(ret, (list, tuple)) else [ret]
        value = common_shapes.constant_value(ret[0].op.inputs[1])
        batch = TensorShape([None if value is None else int(value)])
        for out, shape in zip(ret, self._shapes, strict=True):
            out.set_shape(batch.concatenate(shape))
        return self._dequeue_return_value(ret)

    def dequeue_up_to(self, n, name=None):
        """Like `dequeue_many`, but once the queue is closed returns the (at least one)
        elements left when fewer than `n` remain."""
        name = name or f"{self._name}_DequeueUpTo"
        ret = apply_op("QueueDequeueUpToV2", handle=self._queue_ref, n=n,
                       component_types=self._dtypes, name=name)
        ret = list(ret) if isinstance(ret, (list, tuple)) else [ret]
        for out, shape in zip(ret, self._shapes, strict=True):
            out.set_shape(TensorShape([None]).concatenate(shape))
        return self._dequeue_return_value(ret)

    def close(self, cancel_pending_enqueues=False, name=None):
        """Closes the queue: later enqueues fail, dequeues drain what is left.

        With `cancel_pending_enqueues`, blocked enqueues fail with CancelledError; without
        it the close waits for them.
        """
        name = name or f"{self._name}_Close"
        return apply_op("QueueCloseV2", handle=self._queue_ref,
                        cancel_pending_enqueues=cancel_pending_enqueues, name=name)

    def is_closed(self, name=None) -> Tensor:
        """A bool scalar: whether the queue is closed."""
        return apply_op("QueueIsClosedV2", handle=self._queue_ref,
                        name=name or f"{self._name}_Is_Closed")

    def size(self, name=None) -> Tensor:
        """An int32 scalar: the number of elements in the queue."""
        return apply_op("QueueSizeV2", handle=self._queue_ref,
                        name=name or f"{self._name}_Size")


def _create_queue(op_type: str, name: str, **attrs) -> Tensor:
    with graph_lib.device(_DEVICE):
        return apply_op(op_type, name=name, **attrs)


class FIFOQueue(QueueBase):
    """A queue that dequeues elements in first-in first-out order (`tf.FIFOQueue`).

    Args:
      capacity: the most elements it holds.
      dtypes: a DType or a list of them, one per component.
      shapes: fully defined shapes, one per component (needed by dequeue_many), or None.
      names: component names, or None.
      shared_name: share the queue with every queue op of this name in the session.
      name: the op name.
    """

    def __init__(self, capacity, dtypes, shapes=None, names=None, shared_name=None,
                 name="fifo_queue"):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes)
        names = _as_name_list(names, dtypes)
        ref = _create_queue("FIFOQueueV2", name, component_types=dtypes, shapes=shapes or [],
                            capacity=capacity, shared_name=_shared_name(shared_name))
        super().__init__(dtypes, shapes, names, ref)


class PaddingFIFOQueue(QueueBase):
    """A FIFOQueue whose dequeue_many pads variable-size components (`tf.PaddingFIFOQueue`).

    `shapes` is required; a `None` dimension varies per element and is padded (with zeros,
    or empty strings) to the largest element of each dequeued batch.
    """

    def __init__(self, capacity, dtypes, shapes, names=None, shared_name=None,
                 name="padding_fifo_queue"):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes, unknown_dim_allowed=True)
        names = _as_name_list(names, dtypes)
        if len(dtypes) != len(shapes):
            raise ValueError("Shapes must be provided for all components, but received "
                             f"{len(dtypes)} dtypes and {len(shapes)} shapes.")
        ref = _create_queue("PaddingFIFOQueueV2", name, component_types=dtypes, shapes=shapes,
                            capacity=capacity, shared_name=_shared_name(shared_name))
        super().__init__(dtypes, shapes, names, ref)


class RandomShuffleQueue(QueueBase):
    """A queue that dequeues elements in a random order (`tf.RandomShuffleQueue`).

    Dequeues wait until more than `min_after_dequeue` elements remain (unless the queue is
    closed), which keeps the shuffle well mixed. `seed` follows TF's seed rules with the
    graph seed.
    """

    def __init__(self, capacity, min_after_dequeue, dtypes, shapes=None, names=None,
                 seed=None, shared_name=None, name="random_shuffle_queue"):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes)
        names = _as_name_list(names, dtypes)
        seed1, seed2 = get_seed(seed)
        if seed1 is None and seed2 is None:
            seed1, seed2 = 0, 0
        elif seed is None and shared_name is not None:
            # A graph seed but no op seed: seed2 depends only on the graph seed and the
            # shared name, so every op sharing the queue asks for the same one.
            digest = hashlib.md5((str(seed1) + shared_name).encode()).hexdigest()
            seed2 = int(digest[:8], 16) & 0x7FFFFFFF
        ref = _create_queue("RandomShuffleQueueV2", name, component_types=dtypes,
                            shapes=shapes or [], capacity=capacity,
                            min_after_dequeue=min_after_dequeue, seed=seed1, seed2=seed2,
                            shared_name=_shared_name(shared_name))
        super().__init__(dtypes, shapes, names, ref)


class PriorityQueue(QueueBase):
    """A queue that dequeues the element with the smallest priority first
    (`tf.PriorityQueue`). Each element is (priority int64 scalar, components...)."""

    def __init__(self, capacity, types, shapes=None, names=None, shared_name=None,
                 name="priority_queue"):
        types = _as_type_list(types)
        shapes = _as_shape_list(shapes)
        if shapes is None:
            raise TypeError("Expected list for 'shapes' argument to 'priority_queue_v2' Op, "
                            "not None.")
        ref = _create_queue("PriorityQueueV2", name, component_types=types, shapes=shapes,
                            capacity=capacity, shared_name=_shared_name(shared_name))
        priority_dtypes = [dtypes.int64] + types
        priority_shapes = [TensorShape([])] + shapes if shapes else shapes
        super().__init__(priority_dtypes, priority_shapes, names, ref)


# ---- conditional accumulators ------------------------------------------------------------

_ACC_ATTRS = ["dtype: numbertype", "shape: shape", "container: string = ''",
              "shared_name: string = ''", "reduction_type: {'MEAN', 'SUM'} = 'MEAN'"]
define_op("ResourceConditionalAccumulator", outputs=["handle: resource"], attrs=_ACC_ATTRS,
          shape_fn=common_shapes.scalar, stateful=True)
define_op("ResourceAccumulatorApplyGradient",
          inputs=["handle: resource", "local_step: int64", "gradient: dtype"],
          attrs=["dtype: numbertype"], shape_fn=_no_outputs, stateful=True)
define_op("ResourceAccumulatorTakeGradient", inputs=["handle: resource", "num_required: int32"],
          outputs=["average: dtype"], attrs=["dtype: numbertype"],
          shape_fn=common_shapes.unknown, stateful=True)
define_op("ResourceAccumulatorNumAccumulated", inputs=["handle: resource"],
          outputs=["num_accumulated: int32"], shape_fn=common_shapes.scalar, stateful=True)
define_op("ResourceAccumulatorSetGlobalStep",
          inputs=["handle: resource", "new_global_step: int64"], shape_fn=_no_outputs,
          stateful=True)
define_op("SparseConditionalAccumulator", outputs=["handle: Ref(string)"], attrs=_ACC_ATTRS,
          shape_fn=lambda op: [TensorShape([2])], stateful=True)
define_op("SparseAccumulatorApplyGradient",
          inputs=["handle: Ref(string)", "local_step: int64", "gradient_indices: int64",
                  "gradient_values: dtype", "gradient_shape: int64"],
          attrs=["dtype: numbertype", "has_known_shape: bool"], shape_fn=_no_outputs,
          stateful=True)
define_op("SparseAccumulatorTakeGradient", inputs=["handle: Ref(string)", "num_required: int32"],
          outputs=["indices: int64", "values: dtype", "shape: int64"],
          attrs=["dtype: numbertype"],
          shape_fn=lambda op: [TensorShape([None]), None, TensorShape([None])], stateful=True)
define_op("AccumulatorNumAccumulated", inputs=["handle: Ref(string)"],
          outputs=["num_accumulated: int32"], shape_fn=common_shapes.scalar, stateful=True)
define_op("AccumulatorSetGlobalStep", inputs=["handle: Ref(string)", "new_global_step: int64"],
          shape_fn=_no_outputs, stateful=True)
# tensorflux's own (TensorFlow only logs a dropped gradient): how many stale gradients an
# accumulator has dropped since it was created.
define_op("ResourceAccumulatorNumDropped", inputs=["handle: resource"],
          outputs=["num_dropped: int64"], shape_fn=common_shapes.scalar, stateful=True)
define_op("AccumulatorNumDropped", inputs=["handle: Ref(string)"],
          outputs=["num_dropped: int64"], shape_fn=common_shapes.scalar, stateful=True)
not_differentiable("ResourceConditionalAccumulator", "ResourceAccumulatorApplyGradient",
                   "ResourceAccumulatorTakeGradient", "ResourceAccumulatorNumAccumulated",
                   "ResourceAccumulatorSetGlobalStep", "SparseConditionalAccumulator",
                   "SparseAccumulatorApplyGradient", "SparseAccumulatorTakeGradient",
                   "AccumulatorNumAccumulated", "AccumulatorSetGlobalStep",
                   "ResourceAccumulatorNumDropped", "AccumulatorNumDropped")


def _int64(value, name=None) -> Tensor:
    return math_ops.cast(convert_to_tensor(value), dtypes.int64, name=name)


class ConditionalAccumulatorBase:
    """What both accumulators share: the handle, the dtype and shape, the counters.

    Gradients applied with a `local_step` older than the accumulator's global step are
    dropped as stale; `take_grad` blocks until enough are in, returns their aggregate and
    advances the global step by one.
    """

    def __init__(self, dtype, shape, accumulator_ref):
        self._dtype = dtypes.as_dtype(dtype)
        self._shape = TensorShape(shape) if shape is not None else \
            tensor_shape.unknown_shape()
        self._accumulator_ref = accumulator_ref
        self._name = accumulator_ref.op.name.split("/")[-1]

    @property
    def accumulator_ref(self) -> Tensor:
        return self._accumulator_ref

    @property
    def name(self) -> str:
        return self._accumulator_ref.op.name

    @property
    def dtype(self):
        return self._dtype

    def _resource(self) -> bool:
        return self._accumulator_ref.dtype is dtypes.resource

    def num_accumulated(self, name=None) -> Tensor:
        """An int32 scalar: how many gradients have been accumulated since the last take."""
        name = name or f"{self._name}_NumAccumulated"
        if self._resource():
            return apply_op("ResourceAccumulatorNumAccumulated", handle=self._accumulator_ref,
                            name=name)
        with graph_lib.colocate_with(self._accumulator_ref):
            return apply_op("AccumulatorNumAccumulated", handle=self._accumulator_ref,
                            name=name)

    def num_dropped(self, name=None) -> Tensor:
        """An int64 scalar: how many stale gradients (applied with a `local_step` older than
        the global step) were dropped since the accumulator was created. A tensorflux
        extension: TensorFlow only logs each drop."""
        name = name or f"{self._name}_NumDropped"
        op_type = "ResourceAccumulatorNumDropped" if self._resource() else \
            "AccumulatorNumDropped"
        with graph_lib.colocate_with(self._accumulator_ref):
            return apply_op(op_type, handle=self._accumulator_ref, name=name)

    def set_global_step(self, new_global_step, name=None):
        """Sets the global step that staleness is measured against."""
        step = _int64(new_global_step)
        op_type = "ResourceAccumulatorSetGlobalStep" if self._resource() else \
            "AccumulatorSetGlobalStep"
        with graph_lib.colocate_with(self._accumulator_ref):
            return apply_op(op_type, handle=self._accumulator_ref, new_global_step=step,
                            name=name or op_type)


class ConditionalAccumulator(ConditionalAccumulatorBase):
    """Accumulates dense gradients and hands out their mean (or sum) once enough are in
    (`tf.ConditionalAccumulator`), the building block of synchronous replication.

    Args:
      dtype: the gradients' numeric type.
      shape: their shape (checked when applied), or None.
      shared_name, name: as for queues.
      reduction_type: "MEAN" (default) or "SUM".
    """

    def __init__(self, dtype, shape=None, shared_name=None, name="conditional_accumulator",
                 reduction_type="MEAN"):
        shape_attr = tensor_shape.unknown_shape() if shape is None else TensorShape(shape)
        ref = _create_queue("ResourceConditionalAccumulator", name,
                            dtype=dtypes.as_dtype(dtype), shape=shape_attr,
                            shared_name=_shared_name(shared_name),
                            reduction_type=reduction_type)
        super().__init__(dtype, shape, ref)

    def apply_grad(self, grad, local_step=0, name=None):
        """Adds `grad` unless `local_step` is older than the global step (then it is dropped).

        Raises:
          ValueError: `grad`'s static shape does not fit the accumulator's.
        """
        grad = convert_to_tensor(grad, self._dtype)
        grad.shape.assert_is_compatible_with(self._shape)
        local_step = _int64(local_step)
        return apply_op("ResourceAccumulatorApplyGradient", handle=self._accumulator_ref,
                        local_step=local_step, gradient=grad,
                        name=name or "ResourceAccumulatorApplyGradient")

    def take_grad(self, num_required, name=None) -> Tensor:
        """Blocks until `num_required` gradients are in; returns their mean (or sum), resets
        the accumulator and increments its global step."""
        out = apply_op("ResourceAccumulatorTakeGradient", handle=self._accumulator_ref,
                       num_required=num_required, dtype=self._dtype,
                       name=name or "ResourceAccumulatorTakeGradient")
        out.set_shape(self._shape)
        return out


class SparseConditionalAccumulator(ConditionalAccumulatorBase):
    """Accumulates sparse gradients (IndexedSlices) per row index
    (`tf.SparseConditionalAccumulator`); with MEAN each row is averaged over the gradients
    that touched it."""

    def __init__(self, dtype, shape=None, shared_name=None,
                 name="sparse_conditional_accumulator", reduction_type="MEAN"):
        shape_attr = tensor_shape.unknown_shape() if shape is None else TensorShape(shape)
        ref = _create_queue("SparseConditionalAccumulator", name,
                            dtype=dtypes.as_dtype(dtype), shape=shape_attr,
                            shared_name=_shared_name(shared_name),
                            reduction_type=reduction_type)
        super().__init__(dtype, shape, ref)

    def apply_indexed_slices_grad(self, grad, local_step=0, name=None):
        """Applies an IndexedSlices gradient."""
        return self.apply_grad(grad.indices, grad.values, grad.dense_shape, local_step, name)

    def apply_grad(self, grad_indices, grad_values, grad_shape=None, local_step=0, name=None):
        """Applies a sparse gradient given as indices, values and (optionally) dense shape."""
        values = convert_to_tensor(grad_values, self._dtype)
        with graph_lib.colocate_with(self._accumulator_ref):
            return apply_op(
                "SparseAccumulatorApplyGradient", handle=self._accumulator_ref,
                local_step=_int64(local_step), gradient_indices=_int64(grad_indices),
                gradient_values=values,
                gradient_shape=_int64([] if grad_shape is None else grad_shape),
                has_known_shape=grad_shape is not None,
                name=name or "SparseAccumulatorApplyGradient")

    def take_grad(self, num_required, name=None):
        """Blocks until `num_required` gradients are in; returns (indices, values, shape)."""
        with graph_lib.colocate_with(self._accumulator_ref):
            indices, values, shape = apply_op(
                "SparseAccumulatorTakeGradient", handle=self._accumulator_ref,
                num_required=num_required, dtype=self._dtype,
                name=name or "SparseAccumulatorTakeGradient")
        if self._shape.ndims is not None:
            values.set_shape(TensorShape([None]).concatenate(self._shape[1:]))
        return _TakeGradResult(indices, values, shape)

    def take_indexed_slices_grad(self, num_required, name=None) -> IndexedSlices:
        """Like `take_grad`, as an IndexedSlices."""
        r = self.take_grad(num_required, name)
        return IndexedSlices(indices=r.indices, values=r.values, dense_shape=r.shape)


class _TakeGradResult(tuple):
    """(indices, values, shape), also by attribute, as TensorFlow's op result."""

    __slots__ = ()

    def __new__(cls, indices, values, shape):
        return super().__new__(cls, (indices, values, shape))

    indices = property(lambda self: self[0])
    values = property(lambda self: self[1])
    shape = property(lambda self: self[2])


# ---- Barrier -----------------------------------------------------------------------------

define_op("Barrier", outputs=["handle: Ref(string)"],
          attrs=["component_types: list(type) >= 1", "shapes: list(shape) >= 0 = []",
                 "capacity: int = -1", "container: string = ''", "shared_name: string = ''"],
          shape_fn=lambda op: [TensorShape([2])], stateful=True)
define_op("BarrierInsertMany", inputs=["handle: Ref(string)", "keys: string", "values: T"],
          attrs=["T: type", "component_index: int"], shape_fn=_no_outputs, stateful=True)
define_op("BarrierTakeMany", inputs=["handle: Ref(string)", "num_elements: int32"],
          outputs=["indices: int64", "keys: string", "values: component_types"],
          attrs=["component_types: list(type) >= 1", "allow_small_batch: bool = false",
                 "wait_for_incomplete: bool = false", "timeout_ms: int = -1"],
          shape_fn=lambda op: [None] * len(op.outputs), stateful=True)
define_op("BarrierClose", inputs=["handle: Ref(string)"],
          attrs=["cancel_pending_enqueues: bool = false"], shape_fn=_no_outputs, stateful=True)
define_op("BarrierReadySize", inputs=["handle: Ref(string)"], outputs=["size: int32"],
          shape_fn=common_shapes.scalar, stateful=True)
define_op("BarrierIncompleteSize", inputs=["handle: Ref(string)"], outputs=["size: int32"],
          shape_fn=common_shapes.scalar, stateful=True)
not_differentiable("Barrier", "BarrierInsertMany", "BarrierTakeMany", "BarrierClose",
                   "BarrierReadySize", "BarrierIncompleteSize")


class Barrier:
    """Groups values by key until every component of a key has arrived (`tf.Barrier`).

    `insert_many(i, keys, values)` sets component `i` of each key; a key whose components
    are all set becomes ready, and `take_many(n)` removes ready keys in the order they were
    first inserted, returning (insertion indices, keys, component values).
    """

    def __init__(self, types, shapes=None, shared_name=None, name="barrier"):
        self._types = _as_type_list(types)
        if shapes is not None:
            self._shapes = [TensorShape(s) for s in _as_shape_list(shapes)]
            for i, shape in enumerate(self._shapes):
                if shape.num_elements() == 0:
                    raise ValueError("Empty tensors are not supported, but received shape "
                                     f"'{shape}' at index {i}")
        else:
            self._shapes = [tensor_shape.unknown_shape() for _ in self._types]
        self._barrier_ref = _create_queue(
            "Barrier", name, component_types=self._types,
            shapes=self._shapes if shapes is not None else [],
            shared_name=_shared_name(shared_name))
        self._name = self._barrier_ref.op.name.split("/")[-1]

    @property
    def barrier_ref(self) -> Tensor:
        return self._barrier_ref

    @property
    def name(self) -> str:
        return self._barrier_ref.op.name

    def _op(self, op_type, name, **kw):
        with graph_lib.colocate_with(self._barrier_ref):
            return apply_op(op_type, handle=self._barrier_ref, name=name, **kw)

    def insert_many(self, component_index, keys, values, name=None):
        """Sets component `component_index` of each of `keys` to the rows of `values`."""
        values = convert_to_tensor(values, self._types[component_index])
        return self._op("BarrierInsertMany", name or f"{self._name}_BarrierInsertMany",
                        keys=convert_to_tensor(keys, dtypes.string), values=values,
                        component_index=component_index)

    def take_many(self, num_elements, allow_small_batch=False, timeout=None, name=None):
        """Takes `num_elements` complete keys (fewer if `allow_small_batch` and closed)."""
        ret = self._op("BarrierTakeMany", name or f"{self._name}_BarrierTakeMany",
                       num_elements=num_elements, component_types=self._types,
                       allow_small_batch=allow_small_batch,
                       timeout_ms=-1 if timeout is None else int(timeout))
        indices, keys, values = ret[0], ret[1], list(ret[2])
        if allow_small_batch:
            batch = tensor_shape.Dimension(None)
        else:
            value = common_shapes.constant_value(indices.op.inputs[1])
            batch = tensor_shape.Dimension(None if value is None else int(value))
        indices.set_shape(TensorShape([batch]))
        keys.set_shape(TensorShape([batch]))
        for out, shape in zip(values, self._shapes, strict=True):
            out.set_shape(TensorShape([batch]).concatenate(shape))
        return indices, keys, values

    def close(self, cancel_pending_enqueues=False, name=None):
        """Closes the barrier: new keys are refused; keys already present may complete."""
        return self._op("BarrierClose", name or f"{self._name}_BarrierClose",
                        cancel_pending_enqueues=cancel_pending_enqueues)

    def ready_size(self, name=None) -> Tensor:
        return self._op("BarrierReadySize", name or f"{self._name}_BarrierReadySize")

    def incomplete_size(self, name=None) -> Tensor:
        return self._op("BarrierIncompleteSize", name or f"{self._name}_BarrierIncompleteSize")
