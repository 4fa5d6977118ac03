"""The resource guard (issue 21): a few bytes of graph never allocate without bound.

Import and construction expand nothing (a large splat Const keeps its TensorProto, its
static shape known); a step that would build a tensor larger than the bound fails with
ResourceExhaustedError naming the node before allocating it, never with a bare
MemoryError, and the process stays healthy. The bound is per process
(`tensor_util.set_max_expanded_bytes`) or per session (`ExecOptions.max_tensor_bytes`).
"""

from __future__ import annotations

import resource

import numpy as np
import pytest
from google.protobuf import text_format

import tensorflux as tf
from tensorflux.framework import resource_guard, tensor_util
from tensorflux.runtime.exec_options import ExecOptions

HUGE = 2**40  # elements: 4 TiB of float32


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _splat_graph_def(size: int, name: str = "c"):
    return text_format.Parse(
        f'node {{ name: "{name}" op: "Const" attr {{ key: "dtype" value {{ type: DT_FLOAT }} }} '
        'attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: '
        f'{size} }} }} float_val: 1.5 }} }} }} }}', tf.GraphDef())


def test_import_of_a_huge_splat_allocates_nothing_and_its_run_is_resource_exhausted():
    before = _rss_mb()
    with tf.Graph().as_default() as g:
        tf.import_graph_def(_splat_graph_def(HUGE, "huge_const"), name="")
        c = g.get_tensor_by_name("huge_const:0")
        assert c.shape.as_list() == [HUGE] and c.dtype == tf.float32
        # Still exported as the small proto it came from.
        exported = g.as_graph_def().node[0].attr["value"].tensor
        assert list(exported.float_val) == [1.5] and not exported.tensor_content
        y = tf.reduce_sum(c)
        with tf.Session() as s:
            with pytest.raises(tf.errors.ResourceExhaustedError, match="huge_const"):
                s.run(y)
            assert s.run(tf.constant(2.0) + 1.0) == 3.0  # healthy
    assert _rss_mb() - before < 200


@pytest.mark.parametrize("strategy", ["auto", "dataflow", "reference", "traced"])
def test_a_deferred_splat_within_the_bound_computes_its_value(strategy):
    n = 3 << 20  # 12 MiB of float32: deferred at import, expanded by the Const kernel
    traced = strategy == "traced"
    opts = ExecOptions(strategy="auto" if traced else strategy)
    run_options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE) if traced else None
    with tf.Graph().as_default() as g:
        tf.import_graph_def(_splat_graph_def(n), name="")
        c = g.get_tensor_by_name("c:0")
        assert isinstance(c.op._attrs["value"], tensor_util.DeferredTensor)
        with tf.Session(exec_options=opts) as s:
            assert s.run(tf.reduce_sum(c), options=run_options) == pytest.approx(1.5 * n)
            assert s.run(tf.reduce_sum(c)) == pytest.approx(1.5 * n)
            got = s.run(c)
            assert got.shape == (n,) and got.dtype == np.float32 and (got == 1.5).all()


def test_tf_constant_with_a_huge_shape_is_lazy_as_in_tf_graph_mode():
    with tf.Graph().as_default():
        c = tf.constant(0.5, shape=[HUGE, 2], name="lazy")
        assert c.shape.as_list() == [HUGE, 2]
        small = tf.constant(2, shape=[4])
        with tf.Session() as s:
            with pytest.raises(tf.errors.ResourceExhaustedError, match="lazy"):
                s.run(c)
            np.testing.assert_array_equal(s.run(small), [2, 2, 2, 2])


@pytest.mark.parametrize("build, node", [
    (lambda: tf.fill([HUGE], 1.0, name="f"), "f"),
    (lambda: tf.zeros([HUGE], name="z"), "z"),
    (lambda: tf.ones([HUGE, 4], name="o"), "o"),
    (lambda: tf.zeros(tf.constant([HUGE], tf.int64), name="zd"), "zd"),
    (lambda: tf.tile(tf.ones([2, 2]), [2**30, 2**10], name="t"), "t"),
    (lambda: tf.broadcast_to(tf.ones([1]), [HUGE], name="b"), "b"),
    (lambda: tf.range(tf.constant(0, tf.int64), 2**62, name="r"), "r"),
    (lambda: tf.pad(tf.ones([2]), [[0, HUGE]], name="p"), "p"),
    (lambda: tf.random_normal([HUGE], name="rn"), "rn"),
    (lambda: tf.one_hot(tf.zeros([16], tf.int64), 2**31 - 1, name="oh"), "oh"),
    (lambda: tf.random_uniform([HUGE], maxval=5, dtype=tf.int64, name="ri"), "ri"),
    (lambda: tf.multinomial(tf.zeros([4096, 3]), 2**30, name="mn"), "mn"),
])
def test_kernels_building_huge_tensors_from_small_inputs_are_resource_exhausted(build, node):
    before = _rss_mb()
    with tf.Graph().as_default():
        y = build()
        with tf.Session() as s:
            with pytest.raises(tf.errors.ResourceExhaustedError) as info:
                s.run(y, options=tf.RunOptions(timeout_in_ms=60_000))
            assert node in str(info.value)
            assert s.run(tf.constant(1) + 1) == 2
    assert _rss_mb() - before < 200


def test_the_session_bound_from_exec_options():
    opts = ExecOptions(max_tensor_bytes=1 << 20)  # 1 MiB
    with tf.Graph().as_default():
        d = tf.placeholder(tf.int32, [None])
        y = tf.fill(d, 1.0)
        c = tf.constant(1.0, shape=[1 << 19])  # 2 MiB, deferred
        with tf.Session(exec_options=opts) as s:
            assert s.run(y, {d: [1 << 18]}).shape == (1 << 18,)  # exactly 1 MiB
            with pytest.raises(tf.errors.ResourceExhaustedError, match="exceed the limit of "
                               "1048576 bytes"):
                s.run(y, {d: [(1 << 18) + 1]})
            with pytest.raises(tf.errors.ResourceExhaustedError):
                s.run(c)
        with tf.Session() as s:  # the process default: plenty
            assert s.run(c).shape == (1 << 19,)


def test_check_shape_message_and_defaults():
    assert resource_guard.default_limit() == tensor_util._max_expanded_bytes
    assert resource_guard.limit(None) == resource_guard.default_limit()
    with pytest.raises(tf.errors.ResourceExhaustedError,
                       match=r"shape\[3, 4\] and type float64: 96 bytes exceed the limit of 95"):
        resource_guard.check_shape([3, 4], np.float64, bound=95)
    resource_guard.check_shape([3, 4], np.float64, bound=96)


def test_python_ints_beyond_int32_are_not_wrapped_in_shape_arguments():
    # A default int32 index type must not wrap 2**40 to 0 (TF infers int64 there).
    with tf.Graph().as_default():
        f = tf.fill([HUGE], 1.0)
        assert f.op.inputs[0].dtype == tf.int64
        assert f.shape.as_list() == [HUGE]
        assert tf.random_uniform([HUGE]).shape.as_list() == [HUGE]


def test_range_of_an_infinite_size_is_a_value_error_as_in_tf():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Requires"):
            tf.range(0.0, float("inf"), 1.0)
        start = tf.placeholder(tf.float32, [])
        y = tf.range(start, 1e30, 1e-3)
        with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError,
                                              match="Requires"):
            s.run(y, {start: 0.0})
