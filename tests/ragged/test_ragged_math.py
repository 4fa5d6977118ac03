"""Ragged reductions over any axes, elementwise math with broadcasting, logsumexp, add_n,
and tf.size / tf.rank / tf.where of RaggedTensors (tensorflux/ragged/ragged_math_ops.py,
ragged_array_ops.py).

Table-driven (tests/ragged/ragged_cases.py): each case's expected value is what TensorFlow
2.21 gives (tf.compat.v1, graph mode); the oracle tests ask it again and also compare
ragged ranks and static shapes."""

from __future__ import annotations

import pytest

import tensorflux as tf
from tests.ragged import ragged_cases

NAN = float("nan")
INF = float("inf")

SETUP = ragged_cases.BASE_SETUP

REDUCTIONS = [
    ('sum_r_0', 'tf.reduce_sum(r, axis=0)', [4, 6, 5]),
    ('sum_r_1', 'tf.reduce_sum(r, axis=1)', [3, 0, 12]),
    ('sum_r_all', 'tf.reduce_sum(r)', 15),
    ('sum_r_0_keep', 'tf.reduce_sum(r, axis=0, keepdims=True)', [[4, 6, 5]]),
    ('sum_r_1_keep', 'tf.reduce_sum(r, axis=1, keepdims=True)', [[3], [0], [12]]),
    ('sum_r_01_keep', 'tf.reduce_sum(r, axis=(0, 1), keepdims=True)', [[15]]),
    ('sum_r_tensor_axis', 'tf.reduce_sum(r, axis=tf.constant(1))', [3, 0, 12]),
    ('sum_r3_0', 'tf.reduce_sum(r3, axis=0)', [[5, 2], [8, 6, 7]]),
    ('sum_r3_1', 'tf.reduce_sum(r3, axis=1)', [[4, 2], [], [9, 6, 7]]),
    ('sum_r3_2', 'tf.reduce_sum(r3, axis=2)', [[3, 3], [], [4, 18]]),
    ('sum_r3_neg', 'tf.reduce_sum(r3, axis=-1)', [[3, 3], [], [4, 18]]),
    ('sum_r3_01', 'tf.reduce_sum(r3, axis=(0, 1))', [13, 8, 7]),
    ('sum_r3_12', 'tf.reduce_sum(r3, axis=[1, 2])', [6, 0, 22]),
    ('sum_r3_02', 'tf.reduce_sum(r3, axis=(0, 2))', [7, 21]),
    ('sum_r3_all', 'tf.reduce_sum(r3, axis=[0, 1, 2])', 28),
    ('mean_r3_0', 'tf.reduce_mean(r3, axis=0)', [[2.5, 2.0], [4.0, 6.0, 7.0]]),
    ('mean_r3_1', 'tf.reduce_mean(r3, axis=1)', [[2.0, 2.0], [], [4.5, 6.0, 7.0]]),
    ('mean_r3_01', 'tf.reduce_mean(r3, axis=(0, 1))', [3.25, 4.0, 7.0]),
    ('mean_r3_12', 'tf.reduce_mean(r3, axis=(1, 2))', [2.0, NAN, 5.5]),
    ('mean_r3_02', 'tf.reduce_mean(r3, axis=(0, 2))', [2.3333333333333335, 5.25]),
    ('mean_r3_all', 'tf.reduce_mean(r3)', 4.0),
    ('max_r3_0_keep', 'tf.reduce_max(r3, axis=0, keepdims=True)', [[[4, 2], [5, 6, 7]]]),
    ('max_r3_1_keep', 'tf.reduce_max(r3, axis=1, keepdims=True)', [[[3, 2]], [[]], [[5, 6, 7]]]),
    ('max_r3_2_keep', 'tf.reduce_max(r3, axis=2, keepdims=True)', [[[2], [3]], [], [[4], [7]]]),
    ('max_r3_01_keep', 'tf.reduce_max(r3, axis=(0, 1), keepdims=True)', [[[5, 6, 7]]]),
    ('max_r3_12_keep', 'tf.reduce_max(r3, axis=(1, 2), keepdims=True)',
     [[[3]], [[-2147483648]], [[7]]]),
    ('min_r_1', 'tf.reduce_min(r, axis=1)', [1, 2147483647, 3]),
    ('prod_r_0', 'tf.reduce_prod(r, axis=0)', [3, 8, 5]),
    ('max_r_1', 'tf.reduce_max(r, axis=1)', [2, -2147483648, 5]),
    ('sum_ri_0', 'tf.reduce_sum(ri, axis=0)', [[4, 6], [5, 6]]),
    ('sum_ri_1', 'tf.reduce_sum(ri, axis=1)', [[1, 2], [8, 10]]),
    ('sum_ri_2', 'tf.reduce_sum(ri, axis=2)', [[3], [7, 11]]),
    ('mean_ri_0', 'tf.reduce_mean(ri, axis=0)', [[2.0, 3.0], [5.0, 6.0]]),
    ('sum_ri_01', 'tf.reduce_sum(ri, axis=(0, 1))', [9, 12]),
    ('sum_ri_12', 'tf.reduce_sum(ri, axis=(1, 2))', [3, 18]),
    ('mean_ri_02', 'tf.reduce_mean(ri, axis=(0, 2))', [2.5, 5.5]),
    ('all_1', 'tf.reduce_all(tf.ragged.constant([[True, False], []]), axis=1)', [False, True]),
    ('any_0', 'tf.reduce_any(tf.ragged.constant([[True, False], []]), axis=0)', [True, False]),
    ('any_1', 'tf.reduce_any(tf.ragged.constant([[True, False], [], [False]]), axis=1)',
     [True, False, False]),
    ('std_1', 'tf.math.reduce_std(tf.ragged.constant([[1.0, 2.0], [3.0]]), axis=1)', [0.5, 0.0]),
    ('var_0', 'tf.math.reduce_variance(tf.ragged.constant([[1.0, 2.0], [3.0]]), axis=0)',
     [1.0, 0.0]),
    ('var_all', 'tf.math.reduce_variance(tf.ragged.constant([[1.0, 2.0], [3.0, 6.0]]))', 3.5),
    ('err_axis', 'tf.reduce_sum(r, axis=3)', 'ValueError'),
    ('err_axis_neg', 'tf.reduce_sum(r, axis=-3)', 'ValueError'),
]



@pytest.mark.parametrize("name,expr,expected", REDUCTIONS, ids=[c[0] for c in REDUCTIONS])
def test_reductions(name, expr, expected):
    answer = ragged_cases.evaluate(tf, SETUP, [(name, expr)])[name]
    ragged_cases.check(answer, expected, name)


@pytest.mark.oracle
def test_reductions_against_tensorflow():
    ragged_cases.check_against_tensorflow(tf, SETUP, REDUCTIONS)

MATH_SETUP = ragged_cases.BASE_SETUP + """

r1 = tf.ragged.constant([[1, 2, 3], [4, 5, 6]])
rl = tf.ragged.constant([[1], [2, 3]])
one = tf.ragged.constant([[1, 2]])
"""

BROADCASTS = [
    ('scalar', 'r * 2', [[2, 4], [], [6, 8, 10]]),
    ('inner_vec', 'ri + tf.constant([10, 20])', [[[11, 22]], [[13, 24], [15, 26]]]),
    ('inner_row', 'ri + tf.constant([[10, 20]])', [[[11, 22]], [[13, 24], [15, 26]]]),
    ('per_row', 'r + tf.constant([[1], [2], [3]])', [[2, 3], [], [6, 7, 8]]),
    ('one_one', 'r1 + tf.constant([10])', [[11, 12, 13], [14, 15, 16]]),
    ('col_lengths', 'rl + tf.constant([[10], [20]])', [[11], [22, 23]]),
    ('one_row_tiled', 'one + tf.constant([[1], [2], [3]])', [[2, 3], [3, 4], [4, 5]]),
    ('one_row_grid', 'one + tf.constant([[1, 1], [2, 2], [3, 3]])', [[2, 3], [3, 4], [4, 5]]),
    ('new_outer', 'r1 + tf.constant([[[1]], [[2]]])',
     [[[2, 3, 4], [5, 6, 7]], [[3, 4, 5], [6, 7, 8]]]),
    ('tiled_outer', 'r + tf.constant([[[1]], [[2]], [[3]], [[4]]])',
     [[[2, 3], [], [4, 5, 6]], [[3, 4], [], [5, 6, 7]], [[4, 5], [], [6, 7, 8]],
      [[5, 6], [], [7, 8, 9]]]),
    ('r3_scalar_vec', 'r3 + tf.constant([10])', [[[11, 12], [13]], [], [[14], [15, 16, 17]]]),
    ('r3_per_row', 'r3 + tf.constant([[[1]], [[2]], [[3]]])',
     [[[2, 3], [4]], [], [[7], [8, 9, 10]]]),
    ('r3_ones', 'r3 + tf.constant([[[1]]])', [[[2, 3], [4]], [], [[5], [6, 7, 8]]]),
    ('ri_rows', 'ri + tf.constant([[[10, 20]], [[30, 40]]])', [[[11, 22]], [[33, 44], [35, 46]]]),
    ('ri_rows_col', 'ri + tf.constant([[[10]], [[30]]])', [[[11, 12]], [[33, 34], [35, 36]]]),
    ('full_uniform', 'r1 + tf.constant([[1, 2, 3], [4, 5, 6]])', [[2, 4, 6], [8, 10, 12]]),
    ('dense_first', 'tf.constant([[10], [20]]) - r1', [[9, 8, 7], [16, 15, 14]]),
    ('maximum', 'tf.maximum(r1, tf.constant([[2], [5]]))', [[2, 2, 3], [5, 5, 6]]),
    ('ragged_same', 'r + r', [[2, 4], [], [6, 8, 10]]),
    ('ragged_sub', 'r3 - r3', [[[0, 0], [0]], [], [[0], [0, 0, 0]]]),
    ('less', 'r < 3', [[True, True], [], [False, False, False]]),
    ('dense_less', 'tf.constant([[2], [1], [4]]) < r', [[False, False], [], [False, False, True]]),
    ('logical', '(r > 1) & (r < 5)', [[False, True], [], [True, True, False]]),
    ('invert', '~(r > 2)', [[True, True], [], [False, False, False]]),
    ('rpow', '2 ** r', [[2, 4], [], [8, 16, 32]]),
    ('rfloordiv', 'r // 2', [[0, 1], [], [1, 2, 2]]),
    ('equal_bcast', 'tf.equal(r, tf.constant([[1], [0], [4]]))',
     [[True, False], [], [False, True, False]]),
    ('uniform_bcast', 'u + tf.constant([[[100]], [[200]]])',
     [[[101, 102, 103], [104, 105, 106]], [[207, 208, 209], [210, 211, 212]]]),
    ('err_lengths', 'r + tf.constant([1, 2, 3])', 'InvalidArgumentError'),
    ('err_row1', 'rl + tf.constant([[10, 20]])', 'InvalidArgumentError'),
    ('err_nrows', 'r + tf.constant([[1], [2]])', 'InvalidArgumentError'),
    ('err_r3', 'r3 + tf.constant([[[1], [2]], [[3], [4]], [[5], [6]]])', 'InvalidArgumentError'),
    ('err_inner', 'ri + tf.constant([[10, 20], [30, 40]])', 'InvalidArgumentError'),
    ('err_splits', 'r + tf.ragged.constant([[1], [2, 3], [4, 5]])', 'InvalidArgumentError'),
    ('err_rank', 'r + rl', 'InvalidArgumentError'),
]



@pytest.mark.parametrize("name,expr,expected", BROADCASTS, ids=[c[0] for c in BROADCASTS])
def test_broadcasting(name, expr, expected):
    answer = ragged_cases.evaluate(tf, MATH_SETUP, [(name, expr)])[name]
    ragged_cases.check(answer, expected, name)


@pytest.mark.oracle
def test_broadcasting_against_tensorflow():
    ragged_cases.check_against_tensorflow(tf, MATH_SETUP, BROADCASTS)

EXTRAS_SETUP = ragged_cases.BASE_SETUP + """

f = tf.ragged.constant([[1.0, 2.0], [], [3.0, 4.0, 5.0]])
f3 = tf.ragged.constant([[[1.0, 2.0], [3.0]], [], [[4.0], [5.0, 6.0, 7.0]]])
"""

EXTRAS = [
    ('lse_1', 'tf.reduce_logsumexp(f, axis=1)', [2.3132617473602295, -INF, 5.40760612487793]),
    ('lse_all', 'tf.reduce_logsumexp(f)', 5.451914310455322),
    ('lse_1_keep', 'tf.reduce_logsumexp(f, axis=1, keepdims=True)',
     [[2.3132617473602295], [-INF], [5.40760612487793]]),
    ('lse_12', 'tf.reduce_logsumexp(f3, axis=[1, 2])',
     [3.4076058864593506, -INF, 7.440189838409424]),
    ('err_lse_0', 'tf.reduce_logsumexp(f, axis=0)', 'InvalidArgumentError'),
    ('size', 'tf.size(r)', 5),
    ('size_r3', 'tf.size(r3, out_type=tf.int64)', 7),
    ('size_inner', 'tf.size(ri)', 6),
    ('rank', 'tf.rank(r)', 2),
    ('rank_inner', 'tf.rank(ri)', 3),
    ('where', 'tf.where(r > 1, r, r * 10)', [[10, 2], [], [3, 4, 5]]),
    ('where_rows', 'tf.where([True, False, True], r, r * 10)', [[1, 2], [], [3, 4, 5]]),
    ('where_coords', 'tf.where(r > 1)', [[0, 1], [2, 0], [2, 1], [2, 2]]),
    ('where_coords3', 'tf.where(r3 > 2)', [[0, 1, 0], [2, 0, 0], [2, 1, 0], [2, 1, 1], [2, 1, 2]]),
    ('err_where_splits', 'tf.where(r > 1, r, tf.ragged.constant([[1], [2, 3], [4, 5]]))',
     'InvalidArgumentError'),
    ('add_n', 'tf.add_n([r, r, r])', [[3, 6], [], [9, 12, 15]]),
]



@pytest.mark.parametrize("name,expr,expected", EXTRAS, ids=[c[0] for c in EXTRAS])
def test_logsumexp_size_rank_where_add_n(name, expr, expected):
    answer = ragged_cases.evaluate(tf, EXTRAS_SETUP, [(name, expr)])[name]
    ragged_cases.check(answer, expected, name)


@pytest.mark.oracle
def test_logsumexp_size_rank_where_add_n_against_tensorflow():
    ragged_cases.check_against_tensorflow(tf, EXTRAS_SETUP, EXTRAS)
