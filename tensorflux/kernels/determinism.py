"""TF_DETERMINISTIC_OPS and TF_CUDNN_DETERMINISTIC: what tensorflux does differently when a
program asks for deterministic ops, as TensorFlow does for the same variables.

Every CPU kernel is deterministic already: a seeded program gives the same bits in every
run for a fixed intra-op thread count (kernels/intra_op.py: chunks and the order of partial
sums follow from the sizes and the thread count, never from timing). What remains depends
on which thread runs first, and these variables change it:
  - tf.data: a parallel map (`num_parallel_calls`) whose function holds a stateful op
    (a random op, a variable read) maps its elements one at a time, in order, as
    TensorFlow does: its random draws then follow the elements, not the threads
    (kernels/cpu/dataset_ops.py);
  - GPU kernels (kernels/gpu/): cuDNN convolutions take a deterministic algorithm chosen
    in a fixed order, not the fastest one measured (TF_CUDNN_DETERMINISTIC as well),
    MaxPoolGrad gathers rather than adds atomically, and scatter-adds (UnsortedSegmentSum,
    ResourceScatterAdd: sparse gradients) add repeated indices in index order.
TensorFlow reads the variables once per process; here each use reads them (a step reads
them when it is built), so that a test may set them.
"""

from __future__ import annotations

import os


def _flag(name: str) -> bool:
    """Whether environment variable `name` is set to true ("1" or "true", any case; TF's
    boolean variables)."""
    return os.environ.get(name, "").strip().lower() in ("1", "true")


def op_determinism_required() -> bool:
    """TF_DETERMINISTIC_OPS: ops must give the same bits on every run."""
    return _flag("TF_DETERMINISTIC_OPS")


def cudnn_determinism_required() -> bool:
    """TF_CUDNN_DETERMINISTIC (or TF_DETERMINISTIC_OPS): cuDNN must run deterministic
    algorithms, chosen without timing."""
    return _flag("TF_CUDNN_DETERMINISTIC") or op_determinism_required()
