"""`tf.contrib.memory_stats`: BytesInUse, BytesLimit and MaxBytesInUse (what they measure on
a CPU device: tensorflux/ops/memory_stats_ops.py)."""

from tensorflux.ops.memory_stats_ops import BytesInUse, BytesLimit, MaxBytesInUse

__all__ = ["BytesInUse", "BytesLimit", "MaxBytesInUse"]
