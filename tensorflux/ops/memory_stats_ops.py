"""Memory statistics ops (TF1's `tf.contrib.memory_stats`): BytesInUse, BytesLimit and
MaxBytesInUse, int64 scalars about the memory of the device the op runs on.

TensorFlow reads its allocator's statistics. On a CPU device tensorflux's arrays are
NumPy's, allocated by the process's malloc, so the CPU kernels
(kernels/cpu/memory_stats_ops.py) report the process's memory instead:

- BytesInUse: the process's resident set size now (/proc/self/statm);
- MaxBytesInUse: its peak resident set size (VmHWM, or getrusage's ru_maxrss);
- BytesLimit: the memory the process may use: the host's physical memory, or the cgroup's
  limit when that is lower (not the CPU device's nominal memory_limit, which limits
  nothing).

So BytesInUse counts everything the process holds (the interpreter, imported modules,
variables, staged and queued tensors), not only tensors. Place the ops with `tf.device`.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable

# Not top-level TF1 names (tf.contrib.memory_stats has them).
__all__: list[str] = []

for _t in ("BytesInUse", "BytesLimit", "MaxBytesInUse"):
    define_op(_t, outputs=["out: int64"], shape_fn=common_shapes.scalar, stateful=True)
not_differentiable("BytesInUse", "BytesLimit", "MaxBytesInUse")


def BytesInUse():  # noqa: N802 - TF1's contrib name
    """An int64 scalar: the bytes in use on the device (on a CPU, the process's resident
    memory)."""
    return apply_op("BytesInUse", name="BytesInUse")


def BytesLimit():  # noqa: N802 - TF1's contrib name
    """An int64 scalar: the most bytes the device may use (on a CPU, the host's physical
    memory or the cgroup's limit)."""
    return apply_op("BytesLimit", name="BytesLimit")


def MaxBytesInUse():  # noqa: N802 - TF1's contrib name
    """An int64 scalar: the peak of BytesInUse so far (on a CPU, the process's peak
    resident memory)."""
    return apply_op("MaxBytesInUse", name="MaxBytesInUse")
