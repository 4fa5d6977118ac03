"""tf.tile, tf.reverse, tf.squeeze, tf.split and tf.math.cumsum on RaggedTensors
(tensorflux/ragged/ragged_structure_ops.py).

Table-driven (tests/ragged/ragged_cases.py): each case's expected value is what TensorFlow
2.21 gives (tf.compat.v1, graph mode); the oracle test asks it again and also compares
ragged ranks and static shapes. Gradients are checked by finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.ragged import ragged_cases

SETUP = ragged_cases.BASE_SETUP + """
f = tf.ragged.constant([[1.0, -2.0], [], [3.5, 4.0, -0.5]])
s = tf.ragged.constant([["a", "Bc"], [], [" De ", "1", "2.5"]])
ph = tf.placeholder(tf.int32, [None])
sq = tf.ragged.constant([[[1]], [[2], [3]]])
sqi = tf.ragged.constant([[[1], [2]], [[3]]], ragged_rank=1)
"""

CASES = [
    ('tile', 'tf.tile(r, [2, 2])',
     [[1, 2, 1, 2], [], [3, 4, 5, 3, 4, 5], [1, 2, 1, 2], [], [3, 4, 5, 3, 4, 5]]),
    ('tile_rows', 'tf.tile(r, [3, 1])',
     [[1, 2], [], [3, 4, 5], [1, 2], [], [3, 4, 5], [1, 2], [], [3, 4, 5]]),
    ('tile_cols', 'tf.tile(r, tf.constant([1, 3], tf.int64))',
     [[1, 2, 1, 2, 1, 2], [], [3, 4, 5, 3, 4, 5, 3, 4, 5]]),
    ('tile_zero', 'tf.tile(r, [0, 2])', []),
    ('tile3', 'tf.tile(r3, [1, 2, 3])',
     [[[1, 2, 1, 2, 1, 2], [3, 3, 3], [1, 2, 1, 2, 1, 2], [3, 3, 3]], [],
      [[4, 4, 4], [5, 6, 7, 5, 6, 7, 5, 6, 7], [4, 4, 4], [5, 6, 7, 5, 6, 7, 5, 6, 7]]]),
    ('tile3_outer', 'tf.tile(r3, [2, 1, 1])',
     [[[1, 2], [3]], [], [[4], [5, 6, 7]], [[1, 2], [3]], [], [[4], [5, 6, 7]]]),
    ('tile_inner', 'tf.tile(ri, [2, 1, 3])',
     [[[1, 2, 1, 2, 1, 2]], [[3, 4, 3, 4, 3, 4], [5, 6, 5, 6, 5, 6]], [[1, 2, 1, 2, 1, 2]],
      [[3, 4, 3, 4, 3, 4], [5, 6, 5, 6, 5, 6]]]),
    ('tile_uniform', 'tf.tile(u2, [1, 2, 1])',
     [[[1, 2, 3], [4, 5, 6], [1, 2, 3], [4, 5, 6]],
      [[7, 8, 9], [10, 11, 12], [7, 8, 9], [10, 11, 12]]]),
    ('tile_err_len', 'tf.tile(r, [2, 2, 2])', 'ValueError'),
    ('tile_err_float', 'tf.tile(r, [2.0, 1.0])', 'TypeError'),
    ('tile_strings', 'tf.tile(s, [1, 2])',
     [[b'a', b'Bc', b'a', b'Bc'], [], [b' De ', b'1', b'2.5', b' De ', b'1', b'2.5']]),
    ('reverse0', 'tf.reverse(r, [0])', [[3, 4, 5], [], [1, 2]]),
    ('reverse1', 'tf.reverse(r, [1])', [[2, 1], [], [5, 4, 3]]),
    ('reverse01', 'tf.reverse(r, [0, 1])', [[5, 4, 3], [], [2, 1]]),
    ('reverse_neg', 'tf.reverse(r, [-1])', [[2, 1], [], [5, 4, 3]]),
    ('reverse3_02', 'tf.reverse(r3, [0, 2])', [[[4], [7, 6, 5]], [], [[2, 1], [3]]]),
    ('reverse3_1', 'tf.reverse(r3, [1])', [[[3], [1, 2]], [], [[5, 6, 7], [4]]]),
    ('reverse_inner', 'tf.reverse(ri, [-1])', [[[2, 1]], [[4, 3], [6, 5]]]),
    ('reverse_inner_1', 'tf.reverse(ri, [1, 2])', [[[2, 1]], [[6, 5], [4, 3]]]),
    ('reverse_const', 'tf.reverse(r, tf.constant([1]))', 'TypeError'),
    ('reverse_v2', 'tf.reverse_v2(r, [1])', [[2, 1], [], [5, 4, 3]]),
    ('reverse_err_axis', 'tf.reverse(r, [2])', 'ValueError'),
    ('reverse_err_ph', 'tf.reverse(r, ph)', 'TypeError'),
    ('squeeze', 'tf.squeeze(tf.expand_dims(r, 2), [2])', [[1, 2], [], [3, 4, 5]]),
    ('squeeze_u', 'tf.squeeze(sq, axis=-1)', [[1], [2, 3]]),
    ('squeeze_u1', 'tf.squeeze(sq, [1])', 'InvalidArgumentError'),
    ('squeeze_outer', 'tf.squeeze(tf.expand_dims(r, 0), [0])', [[1, 2], [], [3, 4, 5]]),
    ('squeeze_inner', 'tf.squeeze(sqi, [2])', [[1, 2], [3]]),
    ('squeeze_dims', 'tf.squeeze(sqi, squeeze_dims=[2])', [[1, 2], [3]]),
    ('squeeze_rows1', 'tf.squeeze(tf.ragged.constant([[1], [2], [3]]), [1])', [1, 2, 3]),
    ('squeeze_err_none', 'tf.squeeze(r)', 'ValueError'),
    ('squeeze_err_inner', 'tf.squeeze(ri, [2])', 'ValueError'),
    ('squeeze_err_rows', 'tf.squeeze(r, [1])', 'InvalidArgumentError'),
    ('squeeze_err_outer', 'tf.squeeze(r, [0])', 'InvalidArgumentError'),
    ('squeeze_err_axis', 'tf.squeeze(r, [3])', 'ValueError'),
    ('split0', 'tf.split(r, 3)', [[[1, 2]], [[]], [[3, 4, 5]]]),
    ('split0_sizes', 'tf.split(r, [1, 2])', [[[1, 2]], [[], [3, 4, 5]]]),
    ('split0_tensor', 'tf.split(r, tf.constant([2, 0, 1]))', [[[1, 2], []], [], [[3, 4, 5]]]),
    ('split_inner', 'tf.split(ri, 2, axis=2)', [[[[1]], [[3], [5]]], [[[2]], [[4], [6]]]]),
    ('split_inner_sizes', 'tf.split(ri, [1, 1], axis=-1)',
     [[[[1]], [[3], [5]]], [[[2]], [[4], [6]]]]),
    ('split3', 'tf.split(r3, [2, 1])', [[[[1, 2], [3]], []], [[[4], [5, 6, 7]]]]),
    ('split_num', 'tf.split(r, tf.placeholder_with_default([1, 2], [None]), num=2)',
     [[[1, 2]], [[], [3, 4, 5]]]),
    ('split_err_ragged', 'tf.split(r, 3, axis=1)', 'ValueError'),
    ('split_err_ragged_inner', 'tf.split(ri, 2, axis=1)', 'ValueError'),
    ('split_err_num', 'tf.split(r, ph)', 'ValueError'),
    ('split_err_negative', 'tf.split(r, [1, -1])', 'InvalidArgumentError'),
    ('split_err_sum', 'tf.split(r, [1, 1])', 'InvalidArgumentError'),
    ('split_err_divisible', 'tf.split(r, 2)', 'InvalidArgumentError'),
    ('cumsum0', 'tf.math.cumsum(r, axis=0)', [[1, 2], [], [4, 6, 5]]),
    ('cumsum1', 'tf.math.cumsum(r, axis=1)', [[1, 3], [], [3, 7, 12]]),
    ('cumsum_neg', 'tf.math.cumsum(r, axis=-1)', [[1, 3], [], [3, 7, 12]]),
    ('cumsum1_excl_rev', 'tf.math.cumsum(r, axis=1, exclusive=True, reverse=True)',
     [[2, 0], [], [9, 5, 0]]),
    ('cumsum0_rev', 'tf.math.cumsum(r, axis=0, reverse=True)', [[4, 6], [], [3, 4, 5]]),
    ('cumsum_top', 'tf.cumsum(f, 1)', [[1.0, -1.0], [], [3.5, 7.5, 7.0]]),
    ('cumsum3_1', 'tf.math.cumsum(r3, axis=1)', [[[1, 2], [4]], [], [[4], [9, 6, 7]]]),
    ('cumsum3_2', 'tf.math.cumsum(r3, axis=2, exclusive=True)',
     [[[0, 1], [0]], [], [[0], [0, 5, 11]]]),
    ('cumsum3_0', 'tf.math.cumsum(r3, axis=0)', [[[1, 2], [3]], [], [[5], [8, 6, 7]]]),
    ('cumsum_inner', 'tf.math.cumsum(ri, axis=2, reverse=True)', [[[3, 2]], [[7, 4], [11, 6]]]),
    ('cumsum_inner_1', 'tf.math.cumsum(ri, axis=1)', [[[1, 2]], [[3, 4], [8, 10]]]),
    ('cumsum_err_axis', 'tf.math.cumsum(r, axis=2)', 'ValueError'),
    ('cumsum_err_tensor', 'tf.math.cumsum(r, axis=tf.constant(1))', 'TypeError'),
]


@pytest.mark.parametrize("name,expr,expected", CASES, ids=[c[0] for c in CASES])
def test_structure(name, expr, expected):
    answer = ragged_cases.evaluate(tf, SETUP, [(name, expr)])[name]
    ragged_cases.check(answer, expected, name)


@pytest.mark.oracle
def test_structure_against_tensorflow():
    ragged_cases.check_against_tensorflow(tf, SETUP, CASES)


# Each builds a ragged result from rows [[x0, x1], [], [x2, x3, x4], [x5, x6]] of a [7]
# float64 x (and r2: the same rows regrouped [[[x0, x1], []], [[x2, x3, x4], [x5, x6]]]).
GRADIENT_CASES = [
    ("tile", lambda r, r2: tf.tile(r, [2, 3])),
    ("tile3", lambda r, r2: tf.tile(r2, [1, 2, 2])),
    ("reverse", lambda r, r2: tf.reverse(r, [0, 1])),
    ("reverse3", lambda r, r2: tf.reverse(r2, [2])),
    ("squeeze", lambda r, r2: tf.squeeze(tf.expand_dims(r, 0), [0])),
    ("split", lambda r, r2: tf.split(r, [1, 3])[1]),
    ("cumsum0", lambda r, r2: tf.math.cumsum(r, axis=0)),
    ("cumsum1", lambda r, r2: tf.math.cumsum(r, axis=1, exclusive=True, reverse=True)),
    ("cumsum3", lambda r, r2: tf.math.cumsum(r2, axis=1)),
]


@pytest.mark.parametrize("name,build", GRADIENT_CASES, ids=[c[0] for c in GRADIENT_CASES])
def test_gradients_match_finite_differences(name, build):
    xv = np.array([0.3, 0.9, 1.2, -0.4, 0.7, 0.6, 1.1])
    with tf.Graph().as_default():
        x = tf.constant(xv)
        r = tf.RaggedTensor.from_row_splits(x, [0, 2, 2, 5, 7])
        r2 = tf.RaggedTensor.from_row_splits(r, [0, 2, 4])
        out = build(r, r2)
        weights = tf.range(1.0, 1.0 + tf.cast(tf.size(out.flat_values), tf.float64))
        loss = tf.reduce_sum(out.flat_values * out.flat_values * weights)
        with tf.Session():
            err = tf.test.compute_gradient_error(x, [7], loss, [], x_init_value=xv)
    assert err < 1e-4, name


def test_run_time_checks():
    with tf.Graph().as_default():
        p = tf.ragged.placeholder(tf.int32, 1)
        rows = tf.ragged.constant_value([[1, 2], [3]], dtype=tf.int32)
        squeezed = tf.squeeze(p, [1])
        pieces = tf.split(p, 2)
        with tf.Session() as sess:
            assert sess.run(squeezed, {p: tf.ragged.constant_value(
                [[1], [3]], dtype=tf.int32)}).tolist() == [1, 3]
            with pytest.raises(tf.errors.InvalidArgumentError):
                sess.run(squeezed, {p: rows})
            assert [v.to_list() for v in sess.run(pieces, {p: rows})] == [[[1, 2]], [[3]]]
            with pytest.raises(tf.errors.InvalidArgumentError):
                sess.run(pieces, {p: tf.ragged.constant_value([[1]], dtype=tf.int32)})
