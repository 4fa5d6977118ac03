"""Ragged gather, gather_nd, concat, stack, boolean_mask and expand_dims
(tensorflux/ragged/ragged_array_ops.py).

Table-driven (tests/ragged/ragged_cases.py): each case's expected value is what TensorFlow
2.21 gives (tf.compat.v1, graph mode); the oracle tests ask it again and also compare
ragged ranks and static shapes."""

from __future__ import annotations

import pytest

import tensorflux as tf
from tests.ragged import ragged_cases

SETUP = ragged_cases.BASE_SETUP

CASES = [
    ('gather_rows', 'tf.gather(r, [2, 0, 2])', [[3, 4, 5], [1, 2], [3, 4, 5]]),
    ('gather_scalar', 'tf.gather(r, 2)', [3, 4, 5]),
    ('gather_2d', 'tf.gather(r, [[2, 0], [1, 1]])', [[[3, 4, 5], [1, 2]], [[], []]]),
    ('gather_ragged_idx', 'tf.gather(r, tf.ragged.constant([[2, 0], [], [1]]))',
     [[[3, 4, 5], [1, 2]], [], [[]]]),
    ('gather_dense_ragged_idx', 'tf.gather(d, tf.ragged.constant([[1, 0], [], [1]]))',
     [[[4, 5, 6], [1, 2, 3]], [], [[4, 5, 6]]]),
    ('gather_r3_2d', 'tf.gather(r3, [[2], [0]])', [[[[4], [5, 6, 7]]], [[[1, 2], [3]]]]),
    ('gather_ax1', 'tf.gather(tf.ragged.constant([[1, 2], [3, 4, 5]]), [1, 0], axis=1)',
     [[2, 1], [4, 3]]),
    ('gather_ax1_2d', 'tf.gather(tf.ragged.constant([[1, 2], [3, 4, 5]]), [[1], [0]], axis=1)',
     [[[2], [1]], [[4], [3]]]),
    ('gather_ax1_dense_ragged_idx', 'tf.gather(d, tf.ragged.constant([[1, 0], [2]]), axis=1)',
     [[[2, 1], [3]], [[5, 4], [6]]]),
    ('gather_ax2', 'tf.gather(r3, [0], axis=2)', [[[1], [3]], [], [[4], [5]]]),
    ('gather_ax2_dense', 'tf.gather(ri, [1, 0], axis=2)', [[[2, 1]], [[4, 3], [6, 5]]]),
    ('gather_ax_neg', 'tf.gather(ri, [1, 0], axis=-1)', [[[2, 1]], [[4, 3], [6, 5]]]),
    ('gather_bd1', 'tf.gather(r, [[1], [0], [2]], axis=1, batch_dims=1)', [[2], [3], [5]]),
    ('gather_bd1_ragged',
     'tf.gather(r, tf.ragged.constant([[1, 0], [], [2, 2, 0]]), axis=1, batch_dims=1)',
     [[2, 1], [], [5, 5, 3]]),
    ('gather_bd2',
     'tf.gather(r3, tf.ragged.constant([[[0], [0]], [], [[0], [2, 1]]]), axis=2, batch_dims=2)',
     [[[1], [3]], [], [[4], [7, 6]]]),
    ('gather_bd1_dense_params',
     'tf.gather(d, tf.ragged.constant([[1, 0], [2]]), axis=1, batch_dims=1)',
     [[2, 1], [6]]),
    ('gather_bd1_ax2', 'tf.gather(r3, [[0], [0], [0]], axis=2, batch_dims=1)',
     [[[1], [3]], [], [[4], [5]]]),
    ('gather_bd1_ax2_ragged',
     'tf.gather(r3, tf.ragged.constant([[0], [], [0, 0]]), axis=2, batch_dims=1)',
     [[[1], [3]], [], [[4, 4], [5, 5]]]),
    ('gather_bd1_ax2_inner', 'tf.gather(ri, [[0, 1], [1, 1]], axis=2, batch_dims=1)',
     [[[1, 2]], [[4, 4], [6, 6]]]),
    ('gather_bd_neg', 'tf.gather(r, [[1], [0], [0]], axis=-1, batch_dims=-1)', [[2], [3], [3]]),
    ('gather_bd1_3d', 'tf.gather(r, [[[1, 0]], [[0, 0]], [[2, 1]]], axis=1, batch_dims=1)',
     [[[2, 1]], [[3, 3]], [[5, 4]]]),
    ('err_gather_oob', 'tf.gather(r, [5])', 'InvalidArgumentError'),
    ('err_gather_axis', 'tf.gather(r, [0], axis=2)', 'ValueError'),
    ('err_gather_bd_axis', 'tf.gather(r, [[0], [0], [0]], batch_dims=1)', 'ValueError'),
    ('err_gather_bd_rank', 'tf.gather(r, [[1], [0], [0]], axis=1, batch_dims=2)', 'ValueError'),
    ('err_gather_bd_shape', 'tf.gather(r, [[1], [0]], axis=1, batch_dims=1)', 'ValueError'),
    ('err_gather_float', 'tf.gather(r, [0.0])', 'TypeError'),
    ('gnd_scalars', 'tf.gather_nd(r, [[0, 1], [2, 2]])', [2, 5]),
    ('gnd_rows', 'tf.gather_nd(r, [[0], [2]])', [[1, 2], [3, 4, 5]]),
    ('gnd_r3', 'tf.gather_nd(r3, [[2, 1]])', [[5, 6, 7]]),
    ('gnd_3d', 'tf.gather_nd(r, [[[0, 1]], [[2, 2]]])', [[2], [5]]),
    ('gnd_3d_rows', 'tf.gather_nd(r3, [[[2]], [[0]]])', [[[[4], [5, 6, 7]]], [[[1, 2], [3]]]]),
    ('gnd_vec', 'tf.gather_nd(r, [2, 1])', 4),
    ('gnd_vec_row', 'tf.gather_nd(r, [2])', [[3, 4, 5]]),
    ('gnd_inner', 'tf.gather_nd(ri, [[1, 1, 0], [0, 0, 1]])', [5, 2]),
    ('gnd_inner_rows', 'tf.gather_nd(ri, [[1, 1], [0, 0]])', [[5, 6], [1, 2]]),
    ('gnd_ragged_idx',
     'tf.gather_nd(r, tf.ragged.constant([[[0, 1], [2, 2]], []], ragged_rank=1))',
     [[2, 5], []]),
    ('err_gnd_deep', 'tf.gather_nd(r, [[0, 1, 2]])', 'ValueError'),
    ('err_gnd_bd', 'tf.gather_nd(r, [[0, 1]], batch_dims=1)', 'ValueError'),
    ('concat3_0', 'tf.concat([r3, q3], 0)',
     [[[1, 2], [3]], [], [[4], [5, 6, 7]], [[8], []], [[9]], [[10, 11]]]),
    ('concat3_1', 'tf.concat([r3, q3], 1)',
     [[[1, 2], [3], [8], []], [[9]], [[4], [5, 6, 7], [10, 11]]]),
    ('concat_inner_2', 'tf.concat([ri, ri], 2)', [[[1, 2, 1, 2]], [[3, 4, 3, 4], [5, 6, 5, 6]]]),
    ('concat_inner_1', 'tf.concat([ri, qi], 1)',
     [[[1, 2], [7, 8], [9, 10]], [[3, 4], [5, 6], [11, 12]]]),
    ('concat_dense_1', 'tf.concat([r, tf.constant([[1, 2], [3, 4], [5, 6]])], 1)',
     [[1, 2, 1, 2], [3, 4], [3, 4, 5, 5, 6]]),
    ('concat_dense_0', 'tf.concat([r, tf.constant([[1, 2], [3, 4], [5, 6]])], 0)',
     [[1, 2], [], [3, 4, 5], [1, 2], [3, 4], [5, 6]]),
    ('concat_mixed_rank', 'tf.concat([r3, ri], 0)',
     [[[1, 2], [3]], [], [[4], [5, 6, 7]], [[1, 2]], [[3, 4], [5, 6]]]),
    ('concat_mixed_rank_1',
     'tf.concat([r3, tf.ragged.constant([[[1, 2]], [[3, 4]], []], ragged_rank=1)], 1)',
     [[[1, 2], [3], [1, 2]], [[3, 4]], [[4], [5, 6, 7]]]),
    ('concat_one', 'tf.concat([r], 1)', [[1, 2], [], [3, 4, 5]]),
    ('concat_neg', 'tf.concat([r, q], -1)', [[1, 2, 6], [7, 8], [3, 4, 5]]),
    ('err_concat_splits', 'tf.concat([r3, q3], 2)', 'InvalidArgumentError'),
    ('err_concat_inner', 'tf.concat([ri, qi], 2)', 'InvalidArgumentError'),
    ('err_concat_axis', 'tf.concat([r3, q3], 3)', 'ValueError'),
    ('err_concat_rank', 'tf.concat([r, r3], 0)', 'ValueError'),
    ('err_concat_nrows', 'tf.concat([r, tf.ragged.constant([[1]])], 1)', 'InvalidArgumentError'),
    ('stack0', 'tf.stack([r, q], 0)', [[[1, 2], [], [3, 4, 5]], [[6], [7, 8], []]]),
    ('stack1', 'tf.stack([r, q], 1)', [[[1, 2], [6]], [[], [7, 8]], [[3, 4, 5], []]]),
    ('ragged_stack1', 'tf.ragged.stack([r, q], 1)',
     [[[1, 2], [6]], [[], [7, 8]], [[3, 4, 5], []]]),
    ('stack_neg', 'tf.ragged.stack([r, q], -3)', [[[1, 2], [], [3, 4, 5]], [[6], [7, 8], []]]),
    ('stack_dense', 'tf.ragged.stack([d, d], 1)',
     [[[1, 2, 3], [1, 2, 3]], [[4, 5, 6], [4, 5, 6]]]),
    ('stack_mixed', 'tf.ragged.stack([r, tf.constant([[1, 2], [3, 4], [5, 6]])], 1)',
     [[[1, 2], [1, 2]], [[], [3, 4]], [[3, 4, 5], [5, 6]]]),
    ('stack_one', 'tf.ragged.stack([r], 1)', [[[1, 2]], [[]], [[3, 4, 5]]]),
    ('stack_same_2', 'tf.stack([r, r], 2)', [[[1, 1], [2, 2]], [], [[3, 3], [4, 4], [5, 5]]]),
    ('err_stack_splits', 'tf.stack([r, q], 2)', 'InvalidArgumentError'),
    ('err_stack_axis', 'tf.ragged.stack([r, q], 3)', 'ValueError'),
    ('err_stack_empty', 'tf.ragged.stack([], 0)', 'ValueError'),
    ('mask_dense2', 'tf.ragged.boolean_mask(d, [[True, False, True], [False, False, False]])',
     [[1, 3], []]),
    ('mask_dense3',
     'tf.ragged.boolean_mask(d3, tf.constant([[[True, False, True], [False, True, False]], '
      '[[False] * 3, [True] * 3]]))',
     [[[1, 3], [5]], [[], [10, 11, 12]]]),
    ('mask_dense3_2', 'tf.ragged.boolean_mask(d3, tf.constant([[True, False], [True, True]]))',
     [[[1, 2, 3]], [[7, 8, 9], [10, 11, 12]]]),
    ('mask_rows', 'tf.ragged.boolean_mask(d, [True, False])', [[1, 2, 3]]),
    ('mask_r3_ragged',
     'tf.ragged.boolean_mask(r3, tf.ragged.constant([[True, False], [], [False, True]]))',
     [[[1, 2]], [], [[5, 6, 7]]]),
    ('mask_r3_ragged3',
     'tf.ragged.boolean_mask(r3, tf.ragged.constant([[[True, False], [True]], [], '
      '[[False], [True, False, True]]]))',
     [[[1], [3]], [], [[], [5, 7]]]),
    ('mask_inner_ragged',
     'tf.ragged.boolean_mask(ri, tf.ragged.constant([[False], [True, False]]))',
     [[], [[3, 4]]]),
    ('mask_inner_rows', 'tf.ragged.boolean_mask(ri, tf.constant([False, True]))',
     [[[3, 4], [5, 6]]]),
    ('mask_dense_ragged',
     'tf.ragged.boolean_mask(d, tf.ragged.constant([[True, False, True], [False, True, True]]))',
     [[1, 3], [5, 6]]),
    ('mask_ragged_dense2',
     'tf.ragged.boolean_mask(tf.ragged.constant([[1, 2], [3, 4]]), '
      'tf.constant([[True, False], [False, True]]))',
     [[1], [4]]),
    ('mask_r3_rows', 'tf.ragged.boolean_mask(r3, [True, False, True])',
     [[[1, 2], [3]], [[4], [5, 6, 7]]]),
    ('err_mask_splits',
     'tf.ragged.boolean_mask(r, tf.ragged.constant([[True], [], [True, True, False]]))',
     'InvalidArgumentError'),
    ('err_mask_dense_splits', 'tf.ragged.boolean_mask(ri, tf.constant([[False], [True]]))',
     'InvalidArgumentError'),
    ('err_mask_scalar', 'tf.ragged.boolean_mask(d, True)', 'ValueError'),
    ('err_mask_rank', 'tf.ragged.boolean_mask(d, [[[True]]])', 'ValueError'),
    ('expand0', 'tf.expand_dims(r, 0)', [[[1, 2], [], [3, 4, 5]]]),
    ('expand1', 'tf.expand_dims(r, 1)', [[[1, 2]], [[]], [[3, 4, 5]]]),
    ('expand2', 'tf.expand_dims(r, 2)', [[[1], [2]], [], [[3], [4], [5]]]),
    ('expand_neg', 'tf.expand_dims(r, -1)', [[[1], [2]], [], [[3], [4], [5]]]),
    ('expand_inner', 'tf.expand_dims(ri, 2)', [[[[1, 2]]], [[[3, 4]], [[5, 6]]]]),
    ('expand_r3', 'tf.expand_dims(r3, 2)', [[[[1, 2]], [[3]]], [], [[[4]], [[5, 6, 7]]]]),
    ('err_expand', 'tf.expand_dims(r, 3)', 'ValueError'),
]



@pytest.mark.parametrize("name,expr,expected", CASES, ids=[c[0] for c in CASES])
def test_array_ops(name, expr, expected):
    answer = ragged_cases.evaluate(tf, SETUP, [(name, expr)])[name]
    ragged_cases.check(answer, expected, name)


@pytest.mark.oracle
def test_array_ops_against_tensorflow():
    ragged_cases.check_against_tensorflow(tf, SETUP, CASES)
