"""`tf.queue`: the queue classes under their TF 1.14+ namespace."""

from tensorflux.ops.data_flow_ops import (  # noqa: F401
    FIFOQueue,
    PaddingFIFOQueue,
    PriorityQueue,
    QueueBase,
    RandomShuffleQueue,
)
