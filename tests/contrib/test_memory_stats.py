"""tf.contrib.memory_stats on a CPU device (tensorflux/ops/memory_stats_ops.py): the
process's resident memory, its peak, and the memory it may use. TensorFlow 2.21 has no
memory_stats ops to ask, so the values are checked against the process's own counters."""

import resource

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels.cpu import memory_stats_ops as kernels

memory_stats = tf.contrib.memory_stats


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


@pytest.mark.parametrize("fn,op_type", [
    (memory_stats.BytesInUse, "BytesInUse"),
    (memory_stats.BytesLimit, "BytesLimit"),
    (memory_stats.MaxBytesInUse, "MaxBytesInUse"),
])
def test_ops_are_int64_scalars(graph, fn, op_type):
    t = fn()
    assert (t.op.type, t.op.name, t.dtype, t.shape.as_list()) == (op_type, op_type,
                                                                  tf.int64, [])
    assert hasattr(tf.raw_ops, op_type)


def test_values_are_consistent(graph):
    in_use, peak, limit = (memory_stats.BytesInUse(), memory_stats.MaxBytesInUse(),
                           memory_stats.BytesLimit())
    with tf.Session() as sess:
        u, p, lim = (int(x) for x in sess.run([in_use, peak, limit]))
    assert 10 << 20 < u <= p  # an interpreter with NumPy holds more than 10 MiB
    assert p <= lim
    # ru_maxrss (KiB on Linux) is the kernel's own peak for the process.
    assert p >= resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 // 2


def test_bytes_in_use_follows_a_large_allocation(graph):
    in_use, peak = memory_stats.BytesInUse(), memory_stats.MaxBytesInUse()
    with tf.Session() as sess:
        before = int(sess.run(in_use))
        block = np.ones(64 << 20, np.uint8)  # 64 MiB, touched
        during, peak_during = (int(x) for x in sess.run([in_use, peak]))
        del block
    assert during - before > 48 << 20
    assert peak_during >= during


def test_limit_is_physical_memory_or_lower():
    import os

    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert 0 < kernels.memory_limit_bytes() <= physical


def test_ops_follow_device_scope(graph):
    with tf.device("/cpu:0"):
        t = memory_stats.BytesInUse()
    with tf.Session() as sess:
        assert sess.run(t) > 0
    assert t.op.device.upper().endswith("CPU:0")
