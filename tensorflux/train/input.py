"""Input pipelines built from queues and queue runners (TF1's `tf.train` input functions).

Producers: `string_input_producer` (file names), `range_input_producer` (integers),
`slice_input_producer` (rows of tensors) and the general `input_producer` fill a FIFOQueue
from a QueueRunner, optionally shuffled each epoch and limited to `num_epochs` (a local
variable counts epochs; when it reaches the limit the enqueue fails with OutOfRangeError,
the runner closes the queue and consumers end with OutOfRangeError in their turn).

Batchers: `batch`, `shuffle_batch`, `batch_join`, `shuffle_batch_join` (and `maybe_*`)
put single examples into a FIFOQueue, PaddingFIFOQueue (`dynamic_pad`) or
RandomShuffleQueue from `num_threads` runner threads and dequeue `batch_size` of them at a
time (`dequeue_up_to` when `allow_smaller_final_batch`).

Everything here is graph ops plus a QueueRunner in the QUEUE_RUNNERS collection (paper
§4): `tf.train.start_queue_runners(sess, coord)` starts the threads. The queue-fullness
summaries TF1 adds are written once `tf.summary` exists.
"""

from __future__ import annotations

from tensorflux.control_flow import builders
from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import constant_value
from tensorflux.framework.graph import GraphKeys
from tensorflux.framework.operation import Tensor
from tensorflux.framework.sparse_tensor import SparseTensor, SparseTensorValue
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    constant_op,
    control_flow_ops,
    data_flow_ops,
    gather_ops,
    io_ops,
    logging_ops,
    math_ops,
    random_ops,
    sequence_ops,
    sparse_map_ops,
)
from tensorflux.train import queue_runner
from tensorflux.variables import variables

__all__ = ["limit_epochs", "match_filenames_once", "input_producer", "string_input_producer",
           "range_input_producer", "slice_input_producer", "batch", "batch_join", "shuffle_batch",
           "shuffle_batch_join", "maybe_batch", "maybe_batch_join", "maybe_shuffle_batch",
           "maybe_shuffle_batch_join"]


def _summary_scalar(name: str, tensor) -> None:
    """TF1's queue-fullness summary, when tensorflux has `tf.summary`."""
    try:
        from tensorflux import summary  # noqa: PLC0415 - optional, added by another issue
    except ImportError:
        return
    scalar = getattr(summary, "scalar", None)
    if scalar is not None:
        scalar(name, tensor)


def limit_epochs(tensor, num_epochs=None, name=None):
    """Returns `tensor`, raising OutOfRangeError after it has been produced `num_epochs`
    times (`tf.train.limit_epochs`). Needs `tf.local_variables_initializer()`.

    Raises:
      ValueError: `num_epochs` is not positive.
    """
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    with graph_lib.name_scope(name, "limit_epochs", [tensor]) as scope:
        zero64 = convert_to_tensor(0, dtype=dtypes.int64)
        epochs = variables.Variable(zero64, name="epochs", trainable=False,
                                    collections=[GraphKeys.LOCAL_VARIABLES])
        counter = epochs.count_up_to(num_epochs)
        with graph_lib.control_dependencies([counter]):
            return array_ops.identity(tensor, name=scope)


def match_filenames_once(pattern, name=None):
    """A local variable holding the file names matching `pattern`, computed once when it
    is initialized (`tf.train.match_filenames_once`)."""
    with graph_lib.name_scope(name, "matching_filenames", [pattern]) as scope:
        return variables.Variable(io_ops.matching_files(pattern), name=scope,
                                  trainable=False, validate_shape=False,
                                  collections=[GraphKeys.LOCAL_VARIABLES])


def input_producer(input_tensor, element_shape=None, num_epochs=None, shuffle=True,
                   seed=None, capacity=32, shared_name=None, summary_name=None, name=None,
                   cancel_op=None):
    """A FIFOQueue filled with the rows of `input_tensor`, epoch after epoch
    (`tf.train.input_producer`).

    Args:
      input_tensor: a tensor whose rows are the elements.
      element_shape: the shape of a row, if `input_tensor` does not say.
      num_epochs: produce each row this many times, then close (None: forever).
      shuffle: shuffle the rows within each epoch.
      seed, capacity, shared_name, name: for the shuffle and the queue.
      summary_name: name of the fullness summary.
      cancel_op: the QueueRunner's cancel op.

    Returns:
      The queue; its QueueRunner is in the QUEUE_RUNNERS collection.

    Raises:
      ValueError: the row shape is not fully defined.
    """
    with graph_lib.name_scope(name, "input_producer", [input_tensor]):
        input_tensor = convert_to_tensor(input_tensor, name="input_tensor")
        element_shape = input_tensor.shape[1:].merge_with(
            tensor_shape.as_shape(element_shape) if element_shape is not None
            else tensor_shape.unknown_shape())
        if not element_shape.is_fully_defined():
            raise ValueError("Either `input_tensor` must have a fully defined shape or "
                             "`element_shape` must be specified")
        if shuffle:
            input_tensor = random_ops.random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        q = data_flow_ops.FIFOQueue(capacity=capacity, dtypes=[input_tensor.dtype.base_dtype],
                                    shapes=[element_shape], shared_name=shared_name,
                                    name=name)
        enq = q.enqueue_many([input_tensor])
        queue_runner.add_queue_runner(queue_runner.QueueRunner(q, [enq], cancel_op=cancel_op))
        if summary_name is not None:
            _summary_scalar(summary_name,
                            math_ops.cast(q.size(), dtypes.float32) * (1.0 / capacity))
        return q


def string_input_producer(string_tensor, num_epochs=None, shuffle=True, seed=None,
                          capacity=32, shared_name=None, name=None, cancel_op=None):
    """A queue of strings (typically file names) for a reader
    (`tf.train.string_input_producer`).

    Raises:
      ValueError: `string_tensor` is an empty list (an empty tensor fails at run time).
    """
    not_null_err = "string_input_producer requires a non-null input tensor"
    if not isinstance(string_tensor, Tensor) and not len(string_tensor):
        raise ValueError(not_null_err)
    with graph_lib.name_scope(name, "input_producer", [string_tensor]) as scope:
        string_tensor = convert_to_tensor(string_tensor, dtype=dtypes.string)
        check = logging_ops.Assert(comparison_ops.greater(array_ops.size(string_tensor), 0),
                                   [not_null_err])
        with graph_lib.control_dependencies([check]):
            string_tensor = array_ops.identity(string_tensor)
        return input_producer(input_tensor=string_tensor, element_shape=[],
                              num_epochs=num_epochs, shuffle=shuffle, seed=seed,
                              capacity=capacity, shared_name=shared_name, name=scope,
                              summary_name=f"fraction_of_{capacity}_full",
                              cancel_op=cancel_op)


def range_input_producer(limit, num_epochs=None, shuffle=True, seed=None, capacity=32,
                         shared_name=None, name=None):
    """A queue of the integers 0 .. limit-1 (`tf.train.range_input_producer`)."""
    with graph_lib.name_scope(name, "input_producer", [limit]) as scope:
        range_tensor = sequence_ops.range(limit)
        return input_producer(range_tensor, [], num_epochs, shuffle, seed, capacity,
                              shared_name, f"fraction_of_{capacity}_full", scope)


def slice_input_producer(tensor_list, num_epochs=None, shuffle=True, seed=None, capacity=32,
                         shared_name=None, name=None):
    """One row (the same index) of each tensor in `tensor_list` per dequeue
    (`tf.train.slice_input_producer`).

    Returns:
      A list with one tensor per input: row i of each, for an index i from a
      range_input_producer over the first dimension.

    Raises:
      ValueError: `tensor_list` is empty.
    """
    with graph_lib.name_scope(name, "input_producer", tensor_list):
        tensor_list = [convert_to_tensor(t) for t in tensor_list]
        if not tensor_list:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        range_size = array_ops.shape(tensor_list[0])[0]
        queue = range_input_producer(range_size, num_epochs=num_epochs, shuffle=shuffle,
                                     seed=seed, capacity=capacity, shared_name=shared_name)
        index = queue.dequeue()

        return [gather_ops.gather(t, index) for t in tensor_list]


# ---- batching ----------------------------------------------------------------------------


def _as_tensor_list(tensors) -> list:
    if isinstance(tensors, dict):
        return [tensors[k] for k in sorted(tensors, key=str)]
    return list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]


def _as_tensor_list_list(tensors_list) -> list:
    if not tensors_list:
        raise ValueError("Expected at least one set of tensors")
    if isinstance(tensors_list[0], dict):
        keys = set(tensors_list[0].keys())
        for tl in tensors_list[1:]:
            if set(tl.keys()) != keys:
                raise ValueError("All dictionaries in tensors_list must have the same keys")
    return [_as_tensor_list(tl) for tl in tensors_list]


def _as_original_type(original, tensor_list):
    if isinstance(original, dict):
        if len(original) == 1:
            tensor_list = [tensor_list]  # a single dequeued component comes back bare
        return {k: tensor_list[i] for i, k in enumerate(sorted(original, key=str))}
    return tensor_list


def _validate(tensor_list) -> list:
    """Tensors, SparseTensors (a SparseTensorValue made one) kept as they are."""
    if not tensor_list:
        raise ValueError("Expected at least one tensor in batch().")
    return [t if isinstance(t, SparseTensor) else
            SparseTensor.from_value(t) if isinstance(t, SparseTensorValue) else
            convert_to_tensor(t) for t in tensor_list]


def _store_sparse(tensor_list, enqueue_many: bool, keep_input, shared=None):
    """(tensor_list with each SparseTensor replaced by its handle in a SparseTensors map,
    or a vector of handles with `enqueue_many`; per position (map op, rank of a stored
    element) or None), as TF1's batchers store them: a queue holds dense tensors only.
    An example that `keep_input` drops is not stored. `shared`: the first list's
    positions of a join, whose maps the other lists' stores use."""
    out, maps = [], []
    for i, t in enumerate(tensor_list):
        if not isinstance(t, SparseTensor):
            out.append(t)
            maps.append(None)
            continue
        rank = t.dense_shape.shape.dims[0].value if t.dense_shape.shape.ndims == 1 else None
        if enqueue_many and rank is not None:
            rank -= 1
        shared_name = shared[i][0].name if shared and shared[i] else None
        made = []

        def store(t=t, shared_name=shared_name, made=made):
            handle = sparse_map_ops.add_sparse_to_tensors_map(t, many=enqueue_many,
                                                              shared_name=shared_name)
            made.append(handle.op)
            return handle

        if enqueue_many or _static_true(keep_input) is True:
            out.append(store())
        else:
            out.append(builders.cond(keep_input, store,
                                     lambda: constant_op.constant(-1, dtypes.int64)))
        maps.append((made[0], rank))
    return out, maps


def _restore_sparse(dequeued, maps):
    """`dequeued` with the stored positions' handles taken back as SparseTensors."""
    if not any(maps):
        return dequeued
    single = not isinstance(dequeued, (list, tuple))
    parts = [dequeued] if single else list(dequeued)
    for i, stored in enumerate(maps):
        if stored is not None:
            parts[i] = sparse_map_ops.take_many_sparse_from_tensors_map(stored[0], parts[i],
                                                                        rank=stored[1])
    return parts[0] if single else parts


def _validate_join(tensor_list_list) -> list[list[Tensor]]:
    out = [_validate(tl) for tl in tensor_list_list]
    if not out:
        raise ValueError("Expected at least one input in batch_join().")
    return out


def _validate_keep_input(keep_input, enqueue_many) -> Tensor:
    keep_input = convert_to_tensor(keep_input, dtype=dtypes.bool)
    if keep_input.shape.ndims == 1 and not enqueue_many:
        raise ValueError("`keep_input` cannot be a vector when `enqueue_many=False`.")
    if keep_input.shape.ndims not in (0, 1, None):
        raise ValueError("`keep_input` must be 0 or 1 dimensions.")
    return keep_input


def _dtypes(tensor_list_list) -> list:
    types = [t.dtype for t in tensor_list_list[0]]
    for other in tensor_list_list[1:]:
        if [t.dtype for t in other] != types:
            raise TypeError(f"Expected types to be {types}, got {[t.dtype for t in other]}")
    return types


def _merge_shapes(shape_list, enqueue_many: bool) -> list:
    shapes = [tensor_shape.as_shape(s) for s in shape_list]
    if enqueue_many:
        shapes = [s.with_rank_at_least(1)[1:] for s in shapes]
    merged = shapes[0]
    for s in shapes[1:]:
        merged.merge_with(s)  # checks compatibility (TF1 keeps the first shape)
    return merged.as_list()


def _shapes(tensor_list_list, shapes, enqueue_many: bool):
    if shapes is None:
        n = len(tensor_list_list[0])
        for tl in tensor_list_list:
            for i in range(n):
                if tl[i].shape.ndims is None:
                    raise ValueError(f"Cannot infer Tensor's rank: {tl[i]}")
        shapes = [_merge_shapes([tl[i].shape.as_list() for tl in tensor_list_list],
                                enqueue_many) for i in range(n)]
    return shapes


def _which_queue(dynamic_pad: bool):
    return data_flow_ops.PaddingFIFOQueue if dynamic_pad else data_flow_ops.FIFOQueue


def _static_true(keep_input: Tensor) -> bool | None:
    value = constant_value(keep_input)
    return None if value is None or keep_input.shape.ndims != 0 else bool(value)


def _discard(handles, stored):
    """Takes the stored entries of dropped examples out of their map (when there are any)."""
    def take():
        taken = sparse_map_ops.take_many_sparse_from_tensors_map(stored[0], handles)
        return builders.group(taken.indices, taken.values, taken.dense_shape)

    return builders.cond(comparison_ops.greater(array_ops.size(handles), 0), take,
                         control_flow_ops.no_op)


def _enqueue_ops(queue, tensor_list, enqueue_many, keep_input, maps=None) -> object:
    """One enqueue op for `tensor_list`, honouring `keep_input` (`maps`: _store_sparse's,
    for the stored entries of dropped examples)."""
    enqueue = queue.enqueue_many if enqueue_many else queue.enqueue
    if keep_input.shape.ndims == 1:
        cases = math_ops.cast(keep_input, dtypes.int32)
        parts = [gather_ops.dynamic_partition(t, cases, 2) for t in tensor_list]
        dropped = [_discard(p[0], stored) for p, stored in zip(parts, maps or (), strict=False)
                   if stored is not None]
        with graph_lib.get_default_graph().control_dependencies(dropped):
            return enqueue([p[1] for p in parts])
    static = _static_true(keep_input)
    if static is True:
        return enqueue(tensor_list)
    return builders.cond(keep_input, lambda: enqueue(tensor_list), control_flow_ops.no_op)


def _enqueue(queue, tensor_list, threads, enqueue_many, keep_input, maps) -> None:
    op = _enqueue_ops(queue, tensor_list, enqueue_many, keep_input, maps)
    queue_runner.add_queue_runner(queue_runner.QueueRunner(queue, [op] * threads))


def _enqueue_join(queue, tensor_list_list, enqueue_many, keep_input, maps_list) -> None:
    ops = [_enqueue_ops(queue, tl, enqueue_many, keep_input, maps)
           for tl, maps in zip(tensor_list_list, maps_list, strict=True)]
    queue_runner.add_queue_runner(queue_runner.QueueRunner(queue, ops))


def _store_join(tensor_list_list, enqueue_many, keep_input):
    """_store_sparse of each list of a join, the later ones into the first one's maps."""
    stored, maps_list = [], []
    for tl in tensor_list_list:
        out, maps = _store_sparse(tl, enqueue_many, keep_input,
                                  maps_list[0] if maps_list else None)
        stored.append(out)
        maps_list.append(maps)
    return stored, maps_list


def _dequeue(queue, batch_size, allow_smaller_final_batch, name):
    if allow_smaller_final_batch:
        return queue.dequeue_up_to(batch_size, name=name)
    return queue.dequeue_many(batch_size, name=name)


def _batch(tensors, batch_size, keep_input, num_threads=1, capacity=32, enqueue_many=False,
           shapes=None, dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None,
           name=None):
    tensor_list = _as_tensor_list(tensors)
    with graph_lib.name_scope(name, "batch", list(tensor_list) + [keep_input]) as scope:
        tensor_list = _validate(tensor_list)
        keep_input = _validate_keep_input(keep_input, enqueue_many)
        tensor_list, maps = _store_sparse(tensor_list, enqueue_many, keep_input)
        types = _dtypes([tensor_list])
        shapes = _shapes([tensor_list], shapes, enqueue_many)
        queue = _which_queue(dynamic_pad)(capacity=capacity, dtypes=types, shapes=shapes,
                                          shared_name=shared_name)
        _enqueue(queue, tensor_list, num_threads, enqueue_many, keep_input, maps)
        _summary_scalar(f"fraction_of_{capacity}_full",
                        math_ops.cast(queue.size(), dtypes.float32) * (1.0 / capacity))
        dequeued = _restore_sparse(_dequeue(queue, batch_size, allow_smaller_final_batch,
                                            scope), maps)
        return _as_original_type(tensors, dequeued)


def _batch_join(tensors_list, batch_size, keep_input, capacity=32, enqueue_many=False,
                shapes=None, dynamic_pad=False, allow_smaller_final_batch=False,
                shared_name=None, name=None):
    tensor_list_list = _as_tensor_list_list(tensors_list)
    with graph_lib.name_scope(name, "batch_join",
                              [t for tl in tensor_list_list for t in tl] + [keep_input]) \
            as scope:
        tensor_list_list = _validate_join(tensor_list_list)
        keep_input = _validate_keep_input(keep_input, enqueue_many)
        tensor_list_list, maps_list = _store_join(tensor_list_list, enqueue_many, keep_input)
        types = _dtypes(tensor_list_list)
        shapes = _shapes(tensor_list_list, shapes, enqueue_many)
        queue = _which_queue(dynamic_pad)(capacity=capacity, dtypes=types, shapes=shapes,
                                          shared_name=shared_name)
        _enqueue_join(queue, tensor_list_list, enqueue_many, keep_input, maps_list)
        _summary_scalar(f"fraction_of_{capacity}_full",
                        math_ops.cast(queue.size(), dtypes.float32) * (1.0 / capacity))
        dequeued = _restore_sparse(_dequeue(queue, batch_size, allow_smaller_final_batch,
                                            scope), maps_list[0])
        return _as_original_type(tensors_list[0], dequeued)


def _shuffle_queue(capacity, min_after_dequeue, seed, types, shapes, shared_name):
    if capacity <= min_after_dequeue:
        raise ValueError(f"capacity {capacity} must be bigger than min_after_dequeue "
                         f"{min_after_dequeue}.")
    return data_flow_ops.RandomShuffleQueue(capacity=capacity,
                                            min_after_dequeue=min_after_dequeue, seed=seed,
                                            dtypes=types, shapes=shapes,
                                            shared_name=shared_name)


def _shuffle_summary(queue, capacity, min_after_dequeue) -> None:
    full = math_ops.cast(math_ops.maximum(0, queue.size() - min_after_dequeue),
                         dtypes.float32) * (1.0 / (capacity - min_after_dequeue))
    _summary_scalar(f"fraction_over_{min_after_dequeue}_of_{capacity - min_after_dequeue}_full",
                    full)


def _shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input,
                   num_threads=1, seed=None, enqueue_many=False, shapes=None,
                   allow_smaller_final_batch=False, shared_name=None, name=None):
    tensor_list = _as_tensor_list(tensors)
    with graph_lib.name_scope(name, "shuffle_batch", list(tensor_list) + [keep_input]) \
            as scope:
        tensor_list = _validate(tensor_list)
        keep_input = _validate_keep_input(keep_input, enqueue_many)
        tensor_list, maps = _store_sparse(tensor_list, enqueue_many, keep_input)
        types = _dtypes([tensor_list])
        shapes = _shapes([tensor_list], shapes, enqueue_many)
        queue = _shuffle_queue(capacity, min_after_dequeue, seed, types, shapes, shared_name)
        _enqueue(queue, tensor_list, num_threads, enqueue_many, keep_input, maps)
        _shuffle_summary(queue, capacity, min_after_dequeue)
        dequeued = _restore_sparse(_dequeue(queue, batch_size, allow_smaller_final_batch,
                                            scope), maps)
        return _as_original_type(tensors, dequeued)


def _shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, keep_input,
                        seed=None, enqueue_many=False, shapes=None,
                        allow_smaller_final_batch=False, shared_name=None, name=None):
    tensor_list_list = _as_tensor_list_list(tensors_list)
    with graph_lib.name_scope(name, "shuffle_batch_join",
                              [t for tl in tensor_list_list for t in tl] + [keep_input]) \
            as scope:
        tensor_list_list = _validate_join(tensor_list_list)
        keep_input = _validate_keep_input(keep_input, enqueue_many)
        tensor_list_list, maps_list = _store_join(tensor_list_list, enqueue_many, keep_input)
        types = _dtypes(tensor_list_list)
        shapes = _shapes(tensor_list_list, shapes, enqueue_many)
        queue = _shuffle_queue(capacity, min_after_dequeue, seed, types, shapes, shared_name)
        _enqueue_join(queue, tensor_list_list, enqueue_many, keep_input, maps_list)
        _shuffle_summary(queue, capacity, min_after_dequeue)
        dequeued = _restore_sparse(_dequeue(queue, batch_size, allow_smaller_final_batch,
                                            scope), maps_list[0])
        return _as_original_type(tensors_list[0], dequeued)


def batch(tensors, batch_size, num_threads=1, capacity=32, enqueue_many=False, shapes=None,
          dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    """Batches single examples with a FIFOQueue and `num_threads` runner threads
    (`tf.train.batch`).

    Args:
      tensors: a list or dict of tensors (one example, or a batch if `enqueue_many`).
      batch_size: the batch size.
      num_threads: threads running the enqueue.
      capacity: the queue's capacity.
      enqueue_many: each tensor is a batch of examples along dimension 0.
      shapes: the example shapes, if the tensors' static shapes are not enough.
      dynamic_pad: pad variable dimensions (a PaddingFIFOQueue).
      allow_smaller_final_batch: the last batch may be smaller once the input ends.
      shared_name, name: for the queue and the ops.

    Returns:
      The batched tensors, in the structure of `tensors` (a single tensor for a list of
      one, as TF1 does).

    Raises:
      ValueError: shapes are not known well enough, or the input is empty.
    """
    return _batch(tensors, batch_size, True, num_threads, capacity, enqueue_many, shapes,
                  dynamic_pad, allow_smaller_final_batch, shared_name, name)


def maybe_batch(tensors, keep_input, batch_size, num_threads=1, capacity=32,
                enqueue_many=False, shapes=None, dynamic_pad=False,
                allow_smaller_final_batch=False, shared_name=None, name=None):
    """`batch`, enqueueing only examples for which `keep_input` is true
    (`tf.train.maybe_batch`)."""
    return _batch(tensors, batch_size, keep_input, num_threads, capacity, enqueue_many,
                  shapes, dynamic_pad, allow_smaller_final_batch, shared_name, name)


def batch_join(tensors_list, batch_size, capacity=32, enqueue_many=False, shapes=None,
               dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None,
               name=None):
    """Batches examples from several inputs, one runner thread per input
    (`tf.train.batch_join`)."""
    return _batch_join(tensors_list, batch_size, True, capacity, enqueue_many, shapes,
                       dynamic_pad, allow_smaller_final_batch, shared_name, name)


def maybe_batch_join(tensors_list, keep_input, batch_size, capacity=32, enqueue_many=False,
                     shapes=None, dynamic_pad=False, allow_smaller_final_batch=False,
                     shared_name=None, name=None):
    """`batch_join` keeping only examples for which `keep_input` is true."""
    return _batch_join(tensors_list, batch_size, keep_input, capacity, enqueue_many, shapes,
                       dynamic_pad, allow_smaller_final_batch, shared_name, name)


def shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads=1, seed=None,
                  enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                  shared_name=None, name=None):
    """Batches examples in random order with a RandomShuffleQueue
    (`tf.train.shuffle_batch`).

    Args:
      min_after_dequeue: elements kept in the queue after a dequeue, for mixing.
      seed: the shuffle's op seed.
      (others as for `batch`)

    Raises:
      ValueError: `capacity` is not larger than `min_after_dequeue`, or shapes unknown.
    """
    return _shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, True, num_threads,
                          seed, enqueue_many, shapes, allow_smaller_final_batch, shared_name,
                          name)


def maybe_shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input,
                        num_threads=1, seed=None, enqueue_many=False, shapes=None,
                        allow_smaller_final_batch=False, shared_name=None, name=None):
    """`shuffle_batch` keeping only examples for which `keep_input` is true."""
    return _shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input,
                          num_threads, seed, enqueue_many, shapes, allow_smaller_final_batch,
                          shared_name, name)


def shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, seed=None,
                       enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                       shared_name=None, name=None):
    """`shuffle_batch` over several inputs, one runner thread per input
    (`tf.train.shuffle_batch_join`)."""
    return _shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, True,
                               seed, enqueue_many, shapes, allow_smaller_final_batch,
                               shared_name, name)


def maybe_shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue,
                             keep_input, seed=None, enqueue_many=False, shapes=None,
                             allow_smaller_final_batch=False, shared_name=None, name=None):
    """`shuffle_batch_join` keeping only examples for which `keep_input` is true."""
    return _shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue,
                               keep_input, seed, enqueue_many, shapes,
                               allow_smaller_final_batch, shared_name, name)
