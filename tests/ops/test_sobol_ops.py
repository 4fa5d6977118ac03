"""SobolSample / tf.math.sobol_sample: values, shapes, bad input, and TensorFlow's values."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle

# The sequence's first points (after the all-zero point 0, which is never returned), by hand:
# dimension 1 is the van der Corput sequence in Gray-code order.
_FIRST = np.array([[0.5, 0.5, 0.5], [0.75, 0.25, 0.25], [0.25, 0.75, 0.75],
                   [0.375, 0.375, 0.625], [0.875, 0.875, 0.125]])


def _run(t, feed=None):
    with tf.Session() as sess:
        return sess.run(t, feed)


def test_first_points_and_skip():
    with tf.Graph().as_default():
        x = tf.math.sobol_sample(3, 5)
        y = tf.math.sobol_sample(3, 2, skip=3, dtype=tf.float64)
        assert x.op.name == "sobol/SobolSample" and x.shape.as_list() == [5, 3]
        assert x.dtype == tf.float32 and y.dtype == tf.float64
        a, b = _run([x, y])
    np.testing.assert_array_equal(a, _FIRST)
    np.testing.assert_array_equal(b, _FIRST[3:5])


def test_points_are_in_unit_cube_and_balanced():
    with tf.Graph().as_default():
        x = _run(tf.math.sobol_sample(7, 255, dtype=tf.float64))
    assert ((x >= 0) & (x < 1)).all()
    # With point 0 added, the first 256 points put 128 in each half of every axis.
    counts = np.concatenate([np.zeros((1, 7)), x]) < 0.5
    np.testing.assert_array_equal(counts.sum(0), 128)


def test_unknown_arguments_give_unknown_dims():
    with tf.Graph().as_default():
        d = tf.placeholder(tf.int32)
        x = tf.math.sobol_sample(d, 4)
        assert x.shape.as_list() == [4, None]
        assert _run(x, {d: 2}).shape == (4, 2)


@pytest.mark.parametrize("args, message", [
    ((0, 3, 0), "dim must be at least one"),
    ((3, 0, 0), "num_results must be at least one"),
    ((3, 3, -1), "skip must be non-negative"),
    ((21201, 1, 0), "dim must be at most 21200"),
])
def test_bad_arguments_fail_at_run_time(args, message):
    with tf.Graph().as_default():
        ph = [tf.placeholder(tf.int32) for _ in range(3)]
        x = tf.math.sobol_sample(*ph)
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            _run(x, dict(zip(ph, args, strict=True)))


def test_bad_graph_arguments():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="rank 0"):
            tf.math.sobol_sample([3], 4)
        with pytest.raises(TypeError, match="float16"):
            tf.math.sobol_sample(3, 4, dtype=tf.float16)


def test_has_no_gradient():
    with tf.Graph().as_default():
        d = tf.constant(2)
        x = tf.math.sobol_sample(d, 3)
        assert tf.gradients(x, d) == [None]


@pytest.mark.oracle
def test_values_equal_tensorflow():
    program = """
result = {}
with tf.Session() as s:
    result["a"] = s.run(tf.math.sobol_sample(60, 300))
    result["b"] = s.run(tf.math.sobol_sample(5, 40, skip=1000, dtype=tf.float64))
    result["c"] = s.run(tf.math.sobol_sample(1111, 4, skip=7))
"""
    ours, theirs = oracle.run_both(program, tf)
    for key in theirs:
        np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)
        assert ours[key].dtype == theirs[key].dtype
