"""`slim.prefetch_queue`: a FIFO queue that a queue runner keeps filled with `tensors`, so
that a step dequeuing from it does not wait for them to be assembled (TF-Slim's
`prefetch_queue`, used by TF1's multi-GPU CIFAR-10 tutorial on `tf.train.batch`'s output)."""

from __future__ import annotations

from tensorflux.framework import graph as graph_lib
from tensorflux.ops import math_ops
from tensorflux.ops.data_flow_ops import FIFOQueue, PaddingFIFOQueue
from tensorflux.summary import summary
from tensorflux.train.queue_runner import QueueRunner, add_queue_runner

__all__ = ["prefetch_queue"]


def prefetch_queue(tensors, capacity=8, num_threads=1, dynamic_pad=False, shared_name=None,
                   name=None):
    """Creates a queue to prefetch `tensors`, with its QueueRunner in the QUEUE_RUNNERS
    collection and a `fraction_of_<capacity>_full` scalar summary.

    Args:
      tensors: a list or dict of Tensors to enqueue (a dict's keys become the queue's
        component names, in sorted order).
      capacity: the most elements the queue holds.
      num_threads: how many threads run the enqueue op.
      dynamic_pad: use a PaddingFIFOQueue, allowing unknown dimensions in the shapes.
      shared_name: share the queue under this name across sessions.
      name: the name scope (default "prefetch_queue").

    Returns:
      The queue; its `dequeue()` gives tensors of `tensors`' dtypes and shapes.
    """
    if isinstance(tensors, dict):
        names = sorted(tensors)
        tensor_list = [tensors[n] for n in names]
    else:
        names = None
        tensor_list = tensors
    with graph_lib.name_scope(name, "prefetch_queue", tensor_list):
        queue_class = PaddingFIFOQueue if dynamic_pad else FIFOQueue
        queue = queue_class(capacity=capacity, dtypes=[t.dtype for t in tensor_list],
                            shapes=[t.get_shape() for t in tensor_list], names=names,
                            shared_name=shared_name)
        enqueue_op = queue.enqueue(tensors)
        add_queue_runner(QueueRunner(queue, [enqueue_op] * num_threads))
        summary.scalar(f"fraction_of_{capacity}_full",
                       math_ops.to_float(queue.size()) * (1. / capacity))
        return queue
