"""The rest of TF 2.21's ragged dispatch list: reshape, one_hot, dynamic_partition,
batch_gather, unsorted segment reductions, log_softmax, embedding lookups, matmul,
sparse.bincount, image.resize_images and the debugging assertions on RaggedTensors
(tensorflux/ragged/ragged_nn_ops.py).

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
fi = tf.cast(ri, tf.float32)
ids = tf.ragged.constant([[0, 1], [], [1, 1, 0]])
ids3 = tf.ragged.constant([[[0, 1], [1]], [], [[0], [0, 1, 1]]])
table = tf.reshape(tf.range(12.0), [6, 2])
a = tf.ragged.constant([[[1.0, 2.0]], [[3.0, 4.0], [5.0, 6.0]]], ragged_rank=1)
b = tf.reshape(tf.range(12.0), [2, 2, 3])
cnt = tf.ragged.constant([[1, 1, 3], [2]])
br = tf.ragged.constant([[[1.0], [2.0]], [[3.0], [4.0]]], ragged_rank=1)
to_dense = tf.sparse.to_dense
imgs = RT.from_nested_row_lengths(tf.reshape(tf.range(1.0, 6.0), [5, 1]), [[2, 1], [2, 2, 1]])
"""

CASES = [
    ('reshape_flat', 'tf.reshape(r, [-1])', [1, 2, 3, 4, 5]),
    ('reshape_cols', 'tf.reshape(r, [5, 1])', [[1], [2], [3], [4], [5]]),
    ('reshape_inner', 'tf.reshape(ri, [2, 3])', [[1, 2, 3], [4, 5, 6]]),
    ('reshape_r3', 'tf.reshape(r3, [-1])', [1, 2, 3, 4, 5, 6, 7]),
    ('reshape_to_ragged', 'tf.reshape(tf.range(5), tf.shape(r))', [[0, 1], [], [2, 3, 4]]),
    ('reshape_ragged_to_ragged', 'tf.reshape(r * 2, tf.shape(q3))', 'ValueError'),
    ('reshape_err', 'tf.reshape(r, [2, 2])', 'ValueError'),
    ('one_hot', 'tf.one_hot(r, 6)',
     [[[0.0, 1.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]], [],
      [[0.0, 0.0, 0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 1.0, 0.0],
       [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]]]),
    ('one_hot_values', 'tf.one_hot(ids, 2, on_value=5, off_value=-1)',
     [[[5, -1], [-1, 5]], [], [[-1, 5], [-1, 5], [5, -1]]]),
    ('one_hot_axis', 'tf.one_hot(ids, 2, axis=-1)',
     [[[1.0, 0.0], [0.0, 1.0]], [], [[0.0, 1.0], [0.0, 1.0], [1.0, 0.0]]]),
    ('one_hot_r3', 'tf.one_hot(ids3, 2, dtype=tf.int32)',
     [[[[1, 0], [0, 1]], [[0, 1]]], [], [[[1, 0]], [[1, 0], [0, 1], [0, 1]]]]),
    ('one_hot_inner_axis', 'tf.one_hot(ri, 7, axis=2)',
     [[[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]],
      [[[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [0.0, 0.0]],
       [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]]]),
    ('one_hot_err_axis', 'tf.one_hot(ids, 2, axis=1)', 'ValueError'),
    ('dynamic_partition', 'tf.dynamic_partition(r, [0, 1, 0], 2)', [[[1, 2], [3, 4, 5]], [[]]]),
    ('dynamic_partition_ids', 'tf.dynamic_partition(r, ids, 2)', [[1, 5], [2, 3, 4]]),
    ('dynamic_partition_r3', 'tf.dynamic_partition(r3, [1, 1, 0], 3)',
     [[[[4], [5, 6, 7]]], [[[1, 2], [3]], []], []]),
    ('dynamic_partition_r3_ids', 'tf.dynamic_partition(r3, ids3, 2)', [[1, 4, 5], [2, 3, 6, 7]]),
    ('batch_gather', 'tf.batch_gather(r, tf.ragged.constant([[1, 0], [], [2]]))',
     [[2, 1], [], [5]]),
    ('batch_gather_dense', 'tf.batch_gather(r, [[1], [0], [2]])', [[2], [3], [5]]),
    ('useg_sum', 'tf.math.unsorted_segment_sum(r, ids, 2)', [6, 9]),
    ('useg_sum_rows', 'tf.math.unsorted_segment_sum(r, [0, 1, 0], 2)', [[4, 6, 5], []]),
    ('useg_mean_rows', 'tf.math.unsorted_segment_mean(f, [0, 0, 1], 3)',
     [[1.0, -2.0], [3.5, 4.0, -0.5], []]),
    ('useg_max', 'tf.math.unsorted_segment_max(r, ids, 2)', [5, 4]),
    ('useg_min', 'tf.math.unsorted_segment_min(r, ids, 2)', [1, 2]),
    ('useg_prod', 'tf.math.unsorted_segment_prod(r, ids, 2)', [5, 24]),
    ('useg_mean', 'tf.math.unsorted_segment_mean(f, ids, 2)', [0.25, 1.833333]),
    ('useg_sqrt_n', 'tf.math.unsorted_segment_sqrt_n(f, ids, 2)', [0.3535534, 3.175426]),
    ('useg_top', 'tf.unsorted_segment_sum(r, ids, 2)', [6, 9]),
    ('useg_r3_rows', 'tf.math.unsorted_segment_sum(r3, [1, 0, 1], 2)', [[], [[5, 2], [8, 6, 7]]]),
    ('useg_r3_ids', 'tf.math.unsorted_segment_sum(r3, ids, 2)', 'InvalidArgumentError'),
    ('useg_r3_ids3', 'tf.math.unsorted_segment_max(r3, ids3, 3)', [5, 7, -2147483648]),
    ('useg_inner', 'tf.math.unsorted_segment_sum(ri, [1, 1], 2)', [[], [[4, 6], [5, 6]]]),
    ('useg_err_splits', 'tf.math.unsorted_segment_sum(r, q, 2)', 'InvalidArgumentError'),
    ('log_softmax', 'tf.nn.log_softmax(f)',
     [[-3.512767, -6.512767], [], [-1.012767, -0.5127671, -5.012767]]),
    ('log_softmax_inner', 'tf.nn.log_softmax(fi)',
     [[[-1.313262, -0.3132617]], [[-1.313262, -0.3132617], [-1.313262, -0.3132617]]]),
    ('log_softmax_math', 'tf.math.log_softmax(f, axis=0)',
     [[-3.512767, -6.512767], [], [-1.012767, -0.5127671, -5.012767]]),
    ('embedding_lookup', 'tf.nn.embedding_lookup(table, r)',
     [[[2.0, 3.0], [4.0, 5.0]], [], [[6.0, 7.0], [8.0, 9.0], [10.0, 11.0]]]),
    ('embedding_lookup_r3', 'tf.nn.embedding_lookup(table, r3 - 1)', 'InvalidArgumentError'),
    ('embedding_lookup_sparse', 'tf.nn.embedding_lookup_sparse(table, r, None)',
     [[3.0, 4.0], [0.0, 0.0], [8.0, 9.0]]),
    ('embedding_lookup_sparse_w', "tf.nn.embedding_lookup_sparse(table, r, f, combiner='sum')",
     [[-6.0, -7.0], [0.0, 0.0], [48.0, 55.0]]),
    ('safe_embedding_lookup_sparse', 'tf.nn.safe_embedding_lookup_sparse(table, r)',
     [[3.0, 4.0], [0.0, 0.0], [8.0, 9.0]]),
    ('safe_embedding_lookup_sparse_w',
     "tf.nn.safe_embedding_lookup_sparse(table, r, tf.abs(f), combiner='sqrtn')",
     [[4.472136, 5.813776], [0.0, 0.0], [10.8644, 12.36293]]),
    ('matmul', 'tf.linalg.matmul(a, b)',
     [[[6.0, 9.0, 12.0]], [[54.0, 61.0, 68.0], [84.0, 95.0, 106.0]]]),
    ('matmul_top', 'tf.matmul(a, b)',
     [[[6.0, 9.0, 12.0]], [[54.0, 61.0, 68.0], [84.0, 95.0, 106.0]]]),
    ('matmul_ta', 'tf.matmul(a, tf.ones([2, 3, 2]), transpose_b=True)',
     [[[3.0, 3.0, 3.0]], [[7.0, 7.0, 7.0], [11.0, 11.0, 11.0]]]),
    ('matmul_dense_ragged', 'tf.matmul(tf.ones([2, 3, 2]), br)',
     [[[3.0], [3.0], [3.0]], [[7.0], [7.0], [7.0]]]),
    ('matmul_2d', 'tf.matmul(tf.ragged.constant([[1.0, 2.0], [3.0, 4.0]]), tf.ones([2, 3]))',
     [[3.0, 3.0, 3.0], [7.0, 7.0, 7.0]]),
    ('bincount', 'tf.sparse.to_dense(tf.sparse.bincount(r))', [0, 1, 1, 1, 1, 1]),
    ('bincount_rows', 'tf.reshape(to_dense(tf.sparse.bincount(r, axis=-1)), [3, 6])',
     [[0, 1, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1]]),
    ('bincount_w', 'tf.reshape(to_dense(tf.sparse.bincount(ids, weights=f, axis=-1)), [3, 2])',
     [[1.0, -2.0], [0.0, 0.0], [-0.5, 7.5]]),
    ('bincount_binary',
     'tf.reshape(to_dense(tf.sparse.bincount(cnt, binary_output=True, axis=-1)), [2, 4])',
     [[0, 1, 0, 1], [0, 0, 1, 0]]),
    ('assert_equal', 'tf.debugging.assert_equal(r, r)', None),
    ('assert_greater_equal', 'tf.debugging.assert_greater_equal(r, r)', None),
    ('assert_greater', 'tf.debugging.assert_greater(r + 1, r)', None),
    ('assert_less_equal', 'tf.debugging.assert_less_equal(r, r)', None),
    ('assert_less', 'tf.debugging.assert_less(r, r + 1)', None),
    ('assert_near', 'tf.debugging.assert_near(f, f)', None),
    ('assert_none_equal', 'tf.debugging.assert_none_equal(r, r + 1)', None),
    ('assert_type', 'tf.debugging.assert_type(r, tf.int32)', None),
    ('assert_scalar', 'tf.assert_less(r, 10)', None),
    ('assert_equal_fail', 'tf.debugging.assert_equal(r, r + 1)', 'InvalidArgumentError'),
    ('assert_less_fail', 'tf.assert_less(r, 3)', 'InvalidArgumentError'),
    ('assert_type_fail', 'tf.debugging.assert_type(r, tf.float32)', 'TypeError'),
    ('assert_splits_fail', 'tf.debugging.assert_equal(r, q)', 'InvalidArgumentError'),
    ('resize', 'tf.image.resize_images(imgs, [2, 2])',
     [[[[1.0], [2.0]], [[3.0], [4.0]]], [[[5.0], [5.0]], [[5.0], [5.0]]]]),
    ('resize_nearest', 'tf.image.resize_images(imgs, [3, 1], method=1)',
     [[[[1.0]], [[1.0]], [[3.0]]], [[[5.0]], [[5.0]], [[5.0]]]]),
    ('resize_uint8', 'tf.image.resize(tf.cast(imgs, tf.uint8), [1, 2])',
     [[[[1.0], [2.0]]], [[[5.0], [5.0]]]]),
    ('resize_err_rank', 'tf.image.resize_images(r3, [2, 2])', 'ValueError'),
]


@pytest.mark.parametrize("name,expr,expected", CASES, ids=[c[0] for c in CASES])
def test_ops(name, expr, expected):
    answer = ragged_cases.evaluate(tf, SETUP, [(name, expr)])[name]
    ragged_cases.check(answer, expected, name)


@pytest.mark.oracle
def test_ops_against_tensorflow():
    ragged_cases.check_against_tensorflow(tf, SETUP, CASES)


# Each builds a result from rows [[x0, x1], [], [x2, x3, x4], [x5, x6]] of a [7] float64 x
# and a [4, 2, 3] float64 w.
GRADIENT_CASES = [
    ("segment_sum_ids", lambda r, w: tf.math.unsorted_segment_sum(
        r, tf.ragged.constant([[0, 1], [], [1, 1, 0], [2, 0]]), 3)),
    ("segment_mean_rows", lambda r, w: tf.math.unsorted_segment_mean(r, [1, 0, 1, 1], 2)),
    ("segment_max_rows", lambda r, w: tf.math.unsorted_segment_max(r, [1, 0, 1, 1], 2)),
    ("log_softmax", lambda r, w: tf.nn.log_softmax(r)),
    ("reshape", lambda r, w: tf.reshape(r, [7, 1])),
    ("dynamic_partition", lambda r, w: tf.dynamic_partition(r, [1, 0, 1, 0], 2)[1]),
    ("embedding", lambda r, w: tf.nn.embedding_lookup(
        tf.reshape(w, [12, 2]), tf.ragged.constant([[0, 3], [], [11, 3]]))),
    ("matmul", lambda r, w: tf.matmul(tf.RaggedTensor.from_row_splits(
        tf.reshape(r.flat_values[:6], [3, 2]), [0, 1, 1, 3, 3]), w)),
    ("matmul_dense", lambda r, w: tf.matmul(w[:2, :, :2], tf.RaggedTensor.from_row_splits(
        tf.reshape(r.flat_values[:4], [4, 1]), [0, 2, 4]))),
]


@pytest.mark.parametrize("name,build", GRADIENT_CASES, ids=[c[0] for c in GRADIENT_CASES])
def test_gradients_match_finite_differences(name, build):
    xv = np.array([0.3, 0.9, 1.2, -0.4, 0.7, 0.6, 1.1])
    wv = np.linspace(-1.0, 1.3, 24).reshape([4, 2, 3])
    with tf.Graph().as_default():
        x, w = tf.constant(xv), tf.constant(wv)
        r = tf.RaggedTensor.from_row_splits(x, [0, 2, 2, 5, 7])
        out = build(r, w)
        flat = tf.reshape(out.flat_values if isinstance(out, tf.RaggedTensor) else out, [-1])
        weights = tf.cast(tf.range(1, 1 + tf.size(flat)), tf.float64)
        loss = tf.reduce_sum(flat * flat * weights)
        with tf.Session():
            err = tf.test.compute_gradient_error([x, w], [[7], [4, 2, 3]], loss, [],
                                                 x_init_value=[xv, wv])
    assert err < 1e-4, name
