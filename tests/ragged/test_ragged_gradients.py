"""Gradients through the ragged compositions (broadcasting math, reductions over axis 0
and several axes, indexing, gather along axis 1, concat, boolean_mask), checked by
finite differences, and run-time checks of shapes only known when fed."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf

RT = tf.RaggedTensor

# Each builds a scalar loss from a [7] float64 vector x cut into rows [[x0, x1], [], [x2,
# x3, x4], [x5, x6]] (and a dense [4, 1] tensor w where it takes one).
GRADIENT_CASES = [
    ("broadcast_rows", lambda r, w: tf.reduce_sum((r * w) ** 2)),
    ("broadcast_outer", lambda r, w: tf.reduce_sum(r + tf.reshape(w, [4, 1, 1]))),
    ("sum_axis0", lambda r, w: tf.reduce_sum(tf.reduce_sum(r * r, axis=0) * [1.0, 2.0, 3.0])),
    ("max_axis0", lambda r, w: tf.reduce_sum(tf.reduce_max(r, axis=0))),
    ("mean_axes", lambda r, w: tf.reduce_mean(tf.ragged.stack([r, r * 2], 1) ** 2,
                                              axis=[0, 1]) * 1.0),
    ("slice_rows", lambda r, w: tf.reduce_sum(r[::-2, 1:] ** 2)),
    ("gather_axis1", lambda r, w: tf.reduce_sum(tf.gather(r[2:], [0, 1], axis=1) ** 2)),
    ("concat_axis1", lambda r, w: tf.reduce_sum(tf.concat([r, r * r], axis=1) ** 2)),
    ("mask", lambda r, w: tf.reduce_sum(tf.ragged.boolean_mask(r, r > 0.5) ** 2)),
]


@pytest.mark.parametrize("name,build", GRADIENT_CASES, ids=[c[0] for c in GRADIENT_CASES])
def test_gradients_match_finite_differences(name, build):
    xv = np.array([0.3, 0.9, 1.2, -0.4, 0.7, 0.6, 1.1])
    wv = np.array([[0.5], [1.5], [-1.0], [2.0]])
    with tf.Graph().as_default():
        x = tf.constant(xv)
        w = tf.constant(wv)
        rt = RT.from_row_splits(x, [0, 2, 2, 5, 7])
        loss = tf.reduce_sum(build(rt, w))
        with tf.Session():
            err = tf.test.compute_gradient_error([x, w], [[7], [4, 1]], loss, [],
                                                 x_init_value=[xv, wv])
    assert err < 1e-4, name


def _run(x, feed):
    with tf.Session() as sess:
        v = sess.run(x, feed)
    return v.to_list() if hasattr(v, "to_list") else v.tolist()


def test_broadcast_checks_at_run_time():
    with tf.Graph().as_default():
        p = tf.ragged.placeholder(tf.float32, 1)
        y = tf.placeholder(tf.float32, [None, None])
        out = p + y
        rows = tf.ragged.constant_value([[1.0, 2.0], [3.0]], dtype=tf.float32)
        assert _run(out, {p: rows, y: [[10.0], [20.0]]}) == [[11.0, 12.0], [23.0]]
        assert _run(out, {p: tf.ragged.constant_value([[1.0, 2.0]], dtype=tf.float32),
                          y: [[1.0, 1.0], [2.0, 2.0]]}) == [[2.0, 3.0], [3.0, 4.0]]
        with pytest.raises(tf.errors.InvalidArgumentError, match="Unable to broadcast"):
            _run(out, {p: rows, y: [[1.0, 2.0], [3.0, 4.0]]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Unable to broadcast"):
            _run(out, {p: rows, y: [[1.0], [2.0], [3.0]]})


def test_splits_checks_at_run_time():
    with tf.Graph().as_default():
        a, b = tf.ragged.placeholder(tf.int32, 1), tf.ragged.placeholder(tf.int32, 1)
        rows = tf.ragged.constant_value([[1, 2], [3]], dtype=tf.int32)
        other = tf.ragged.constant_value([[1], [2, 3]], dtype=tf.int32)
        assert _run(tf.concat([a, b], 1), {a: rows, b: other}) == [[1, 2, 1], [3, 2, 3]]
        for out in (a + b, tf.stack([a, b], 2), tf.ragged.boolean_mask(a, b > 1)):
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="identical ragged splits"):
                _run(out, {a: rows, b: other})
        with pytest.raises(tf.errors.InvalidArgumentError, match="incompatible shapes"):
            _run(tf.concat([a, b], 1), {a: rows, b: tf.ragged.constant_value(
                [[1]], dtype=tf.int32)})


def test_uniform_row_length_and_shapes():
    with tf.Graph().as_default():
        d = tf.zeros([2, 3, 4])
        assert RT.from_tensor(d).uniform_row_length is not None
        assert RT.from_tensor(d, ragged_rank=2).shape.as_list() == [2, 3, 4]
        assert RT.from_tensor(d[0], padding=0.0).uniform_row_length is None
        assert tf.ragged.constant([[1]]).uniform_row_length is None
        u = RT.from_uniform_row_length(tf.range(6), 2)
        assert u.shape.as_list() == [3, 2] and _run(u, None) == [[0, 1], [2, 3], [4, 5]]
        assert u.with_row_splits_dtype(tf.int32).shape.as_list() == [3, 2]
        assert tf.expand_dims(tf.ragged.constant([[1], []]), 1).shape.as_list() == [2, 1, None]
        with pytest.raises(tf.errors.InvalidArgumentError):
            _run(RT.from_uniform_row_length(tf.range(5), 2, nrows=3), None)
        with pytest.raises(TypeError):
            bool(tf.ragged.constant([[1]]))
