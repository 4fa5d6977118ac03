"""Batching of concurrent calls: the BatchFunction op (under
`tf.nondifferentiable_batch_function`, tensorflux/control_flow/batch_function.py).

A BatchFunction node calls the graph function `f` on its `in_tensors` (each batched along
dimension 0, all of one size, the call's "task size") and `captured_tensors`. Calls made at
about the same time, by concurrent Session.run calls of any thread, are gathered into one
batch: their inputs concatenated along dimension 0, `f` run once on the batch, its outputs
split back into each call's rows. As in TensorFlow:

- a batch holds at most `max_batch_size` rows, or `allowed_batch_sizes[-1]` when given (the
  batch then is padded up to the next allowed size with copies of its first row, and `f`'s
  outputs for the padding dropped); a batch is run when full or `batch_timeout_micros`
  after its first call came; `num_batch_threads` batches run at once;
- a call of more than `max_batch_size` rows fails (InvalidArgumentError); with
  `enable_large_batch_splitting` a call may be split across batches, else it starts a new
  batch when it does not fit in the current one;
- a call of 0 rows gets, without running `f`, an empty output of shape [0] per output;
- every output of `f` must have one row per batch row (FailedPreconditionError);
- at most `max_enqueued_batches` batches wait (UnavailableError beyond).

The batches of one node live in its device's ResourceMgr under `container` and
`shared_name` (kernels/cpu/batch_ops.py). There is no gradient (tf.gradients raises
LookupError, as in TensorFlow: hence the TF1 name "nondifferentiable").
"""

from __future__ import annotations

from tensorflux.framework import common_shapes
from tensorflux.framework.op_registry import define_op, no_gradient

# The ops are TensorFlow's raw ops (tf.raw_ops); the TF1 name built on BatchFunction,
# tf.nondifferentiable_batch_function, is in tensorflux/control_flow/batch_function.py.
__all__: list[str] = []

_POLICIES = ("'low_priority_padding_with_max_batch_size', "
             "'low_priority_padding_with_next_allowed_batch_size', 'priority_isolation', "
             "'priority_merge'")

define_op("BatchFunction", inputs=["in_tensors: Tin", "captured_tensors: Tcaptured"],
          outputs=["out_tensors: Tout"],
          attrs=["f: func", "num_batch_threads: int", "max_batch_size: int",
                 "batch_timeout_micros: int", "max_enqueued_batches: int = 10",
                 "allowed_batch_sizes: list(int) = []", "container: string = ''",
                 "shared_name: string = ''", "batching_queue: string = ''",
                 "low_priority_max_batch_size: int = 0",
                 "low_priority_batch_timeout_micros: int = 0",
                 "low_priority_allowed_batch_sizes: list(int) = []",
                 "low_priority_max_enqueued_batches: int = 0",
                 "mixed_priority_policy: {" + _POLICIES + "} = "
                 "'low_priority_padding_with_max_batch_size'",
                 "batch_padding_policy: {'PAD_UP', 'BATCH_DOWN', "
                 "'MINIMIZE_TPU_COST_PER_REQUEST'} = 'PAD_UP'",
                 "Tin: list(type) >= 1", "Tcaptured: list(type) >= 0",
                 "Tout: list(type) >= 1", "enable_large_batch_splitting: bool = false"],
          shape_fn=common_shapes.unknown, stateful=True)
# No gradient: tf.gradients through a BatchFunction raises LookupError, as TensorFlow's.


no_gradient("BatchFunction")  # as TensorFlow: tf.gradients through it is a LookupError
