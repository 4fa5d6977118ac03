"""RaggedTensor indexing (tensorflux/ragged/ragged_getitem.py): rows, slices with steps and
tensor bounds, inner slices, `...`, tf.newaxis, uniform dims, and TF's errors.

Table-driven (tests/ragged/ragged_cases.py): each case's expected value is what TensorFlow
2.21 gives (tf.compat.v1, graph mode); the oracle tests ask it again and also compare
ragged ranks and static shapes."""

from __future__ import annotations

import pytest

import tensorflux as tf
from tests.ragged import ragged_cases

SETUP = ragged_cases.BASE_SETUP

CASES = [
    ('row', 'r[1]', []),
    ('row_neg', 'r[-1]', [3, 4, 5]),
    ('row_tensor', 'r[tf.constant(2)]', [3, 4, 5]),
    ('row3', 'r3[0]', [[1, 2], [3]]),
    ('row_inner', 'ri[0]', [[1, 2]]),
    ('rows_step', 'r[::2]', [[1, 2], [3, 4, 5]]),
    ('rows_rev', 'r[::-1]', [[3, 4, 5], [], [1, 2]]),
    ('rows_back', 'r[1::-1]', [[], [1, 2]]),
    ('rows_past_end', 'r[5:]', []),
    ('rows_clamped', 'r[-10:2]', [[1, 2], []]),
    ('rows_empty', 'r[2:0]', []),
    ('rows_back_bounds', 'r[2:0:-1]', [[3, 4, 5], []]),
    ('rows_tensor_stop', 'r[0:tf.constant(2)]', [[1, 2], []]),
    ('rows_tensor_step', 'r[::tf.constant(2)]', [[1, 2], [3, 4, 5]]),
    ('cols_from', 'r[:, 1:]', [[2], [], [4, 5]]),
    ('cols_to', 'r[:, :-1]', [[1], [], [3, 4]]),
    ('cols_step', 'r[:, ::2]', [[1], [], [3, 5]]),
    ('cols_rev', 'r[:, ::-1]', [[2, 1], [], [5, 4, 3]]),
    ('cols_window', 'r[:, 1:3]', [[2], [], [4, 5]]),
    ('cols_last2', 'r[:, -2:]', [[1, 2], [], [4, 5]]),
    ('cols_wide', 'r[:, -5:10]', [[1, 2], [], [3, 4, 5]]),
    ('cols_rev_wide', 'r[:, 10:-5:-1]', [[2, 1], [], [5, 4, 3]]),
    ('cols_back', 'r[:, 1::-1]', [[2, 1], [], [4, 3]]),
    ('cols_back_stop', 'r[:, :-2:-1]', [[2], [], [5]]),
    ('cols_tensor', 'r[:, tf.constant(1):]', [[2], [], [4, 5]]),
    ('cols_tensor_step', 'r[:, ::tf.constant(-1)]', [[2, 1], [], [5, 4, 3]]),
    ('elem', 'r[2, 1]', 4),
    ('elem_neg', 'r[2, -1]', 5),
    ('row_slice', 'r[2, 1:]', [4, 5]),
    ('elem3', 'r3[2, 1, 2]', 7),
    ('inner3', 'r3[:, :, 1:]', [[[2], []], [], [[], [6, 7]]]),
    ('inner3_ell', 'r3[..., 1:]', [[[2], []], [], [[], [6, 7]]]),
    ('inner3_window', 'r3[:, 1:, :1]', [[[3]], [], [[5]]]),
    ('inner3_rev', 'r3[:, ::-1, ::-1]', [[[3], [2, 1]], [], [[7, 6, 5], [4]]]),
    ('dense_inner', 'ri[:, :, 0]', [[1], [3, 5]]),
    ('dense_inner_slice', 'ri[:, :, 1:]', [[[2]], [[4], [6]]]),
    ('dense_elem', 'ri[1, 1, 0]', 5),
    ('dense_ell', 'ri[..., 0]', [[1], [3, 5]]),
    ('dense_mixed', 'ri[:, 1:, 0]', [[], [5]]),
    ('newaxis0', 'r[tf.newaxis]', [[[1, 2], [], [3, 4, 5]]]),
    ('newaxis1', 'r[:, tf.newaxis]', [[[1, 2]], [[]], [[3, 4, 5]]]),
    ('newaxis_last', 'r[..., tf.newaxis]', [[[1], [2]], [], [[3], [4], [5]]]),
    ('newaxis_mixed', 'r[1:, tf.newaxis, :1]', [[[]], [[3]]]),
    ('newaxis_two', 'r[tf.newaxis, :, tf.newaxis]', [[[[1, 2]], [[]], [[3, 4, 5]]]]),
    ('newaxis3', 'r3[:, :, tf.newaxis]', [[[[1, 2]], [[3]]], [], [[[4]], [[5, 6, 7]]]]),
    ('newaxis_then_row', 'r3[tf.newaxis, 0]', [[[1, 2], [3]]]),
    ('newaxis_dense', 'ri[:, :, tf.newaxis]', [[[[1, 2]]], [[[3, 4]], [[5, 6]]]]),
    ('ellipsis_row', 'r[1, ...]', []),
    ('ellipsis_mid', 'r[0, ..., 1]', 2),
    ('two_ellipses', 'r[..., ...]', [[1, 2], [], [3, 4, 5]]),
    ('empty_key', 'r[()]', [[1, 2], [], [3, 4, 5]]),
    ('list_key', 'r[[0, 1]]', 2),
    ('uniform_col', 'u[:, 1]', [[4, 5, 6], [10, 11, 12]]),
    ('uniform_col_neg', 'u[:, -1]', [[4, 5, 6], [10, 11, 12]]),
    ('uniform_inner', 'u2[:, :, 1]', [[2, 5], [8, 11]]),
    ('uniform_mid', 'u2[:, 1]', [[4, 5, 6], [10, 11, 12]]),
    ('uniform_slice', 'u[:, ::2]', [[[1, 2, 3]], [[7, 8, 9]]]),
    ('err_ragged_col', 'r[:, 0]', 'ValueError'),
    ('err_ragged_col3', 'r3[:, :, 0]', 'ValueError'),
    ('err_ragged_tensor_col', 'r[:, tf.constant(0)]', 'ValueError'),
    ('err_row_oob', 'r[5]', 'ValueError'),
    ('err_too_many', 'r[:, :, 0]', 'ValueError'),
    ('err_float', 'r[1.0]', 'TypeError'),
    ('err_vector', 'r[tf.constant([0, 1])]', 'TypeError'),
    ('err_uniform_oob', 'u[:, 5]', 'InvalidArgumentError'),
    ('err_step0', 'r[::0]', 'ValueError'),
]



@pytest.mark.parametrize("name,expr,expected", CASES, ids=[c[0] for c in CASES])
def test_indexing(name, expr, expected):
    answer = ragged_cases.evaluate(tf, SETUP, [(name, expr)])[name]
    ragged_cases.check(answer, expected, name)


@pytest.mark.oracle
def test_indexing_against_tensorflow():
    ragged_cases.check_against_tensorflow(tf, SETUP, CASES)
