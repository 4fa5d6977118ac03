"""tf.shape of a RaggedTensor: a DynamicRaggedShape (tensorflux/ragged/dynamic_ragged_shape.py),
its static facts, uniform dims, prefixes, and tf.broadcast_to, tf.zeros, tf.ones, tf.fill and
tf.reshape to a ragged shape.

Table-driven (tests/ragged/ragged_cases.py): each case's expected value is what TensorFlow
2.21 gives (tf.compat.v1, graph mode; `text` shows a Python value as a string tensor); the
oracle test asks it again and also compares ragged ranks and static shapes."""

from __future__ import annotations

import pytest

import tensorflux as tf
from tests.ragged import ragged_cases

SETUP = ragged_cases.BASE_SETUP + """
def text(x):
    return tf.constant(str(x))
"""

CASES = [
    ('shape_0', 'tf.shape(r)[0]', 3),
    ('shape_neg', 'tf.shape(ri)[-1]', 2),
    ('shape_inner', 'tf.shape(ri)[2]', 2),
    ('shape_r3_0', 'tf.shape(r3)[0]', 3),
    ('shape_int64', 'tf.shape(r, out_type=tf.int64)[0]', 3),
    ('shape_uniform_1', 'tf.shape(u)[1]', 2),
    ('shape_uniform_2', 'tf.shape(u2)[2]', 3),
    ('shape_err_ragged', 'tf.shape(r)[1]', 'ValueError'),
    ('shape_err_ragged3', 'tf.shape(r3)[2]', 'ValueError'),
    ('shape_repr', 'text(tf.shape(r))',
     b'<DynamicRaggedShape lengths=[3, None] num_row_partitions=1>'),
    ('shape_repr_r3', 'text(tf.shape(r3))',
     b'<DynamicRaggedShape lengths=[3, None, None] num_row_partitions=2>'),
    ('shape_repr_ri', 'text(tf.shape(ri))',
     b'<DynamicRaggedShape lengths=[2, None, 2] num_row_partitions=1>'),
    ('shape_repr_u', 'text(tf.shape(u))',
     b'<DynamicRaggedShape lengths=[2, 2, 3] num_row_partitions=1>'),
    ('shape_rank', 'text(tf.shape(r3).rank)', b'3'),
    ('shape_partitions', 'text(tf.shape(ri).num_row_partitions)', b'1'),
    ('shape_dtype', 'text(tf.shape(r).dtype.name)', b'int32'),
    ('shape_dtype64', 'text(tf.shape(r, out_type=tf.int64).dtype.name)', b'int64'),
    ('shape_static', 'text(tf.shape(ri).static_lengths())', b'[2, None, 2]'),
    ('shape_static_u', 'text([v if v is None else int(v) for v in tf.shape(u2).static_lengths()])',
     b'[2, 2, 3]'),
    ('shape_uniform', 'text([tf.shape(ri).is_uniform(i) for i in range(3)])',
     b'[True, False, True]'),
    ('shape_uniform_u', 'text([tf.shape(u).is_uniform(i) for i in range(3)])',
     b'[True, True, True]'),
    ('shape_inner_rank', 'text(tf.shape(ri).inner_rank)', b'2'),
    ('shape_inner_shape', 'tf.shape(ri).inner_shape', [3, 2]),
    ('shape_prefix', 'text(tf.shape(r)[:1])',
     b'<DynamicRaggedShape lengths=[3] num_row_partitions=0>'),
    ('shape_prefix_all', 'text(tf.shape(ri)[:3])',
     b'<DynamicRaggedShape lengths=[2, None, 2] num_row_partitions=1>'),
    ('shape_prefix_inner', 'tf.shape(ri)[:3].inner_shape', [3, 2]),
    ('shape_tensor_shape', 'text(tf.shape(ri)._to_tensor_shape().as_list())', b'[2, None, 2]'),
    ('shape_fetch_err', 'tf.shape(r)', 'TypeError'),
    ('broadcast_to_rshape', 'tf.broadcast_to(tf.constant([[1], [2], [3]]), tf.shape(r))',
     [[1, 1], [], [3, 3, 3]]),
    ('broadcast_to_scalar', 'tf.broadcast_to(7, tf.shape(r3))',
     [[[7, 7], [7]], [], [[7], [7, 7, 7]]]),
    ('broadcast_to_inner', 'tf.broadcast_to(tf.constant([1, 2]), tf.shape(ri))',
     [[[1, 2]], [[1, 2], [1, 2]]]),
    ('broadcast_to_ragged', 'tf.broadcast_to(r, tf.shape(r, out_type=tf.int64))',
     [[1, 2], [], [3, 4, 5]]),
    ('broadcast_to_err', 'tf.broadcast_to(tf.ragged.constant([[1], [2]]), [2, 3])', 'TypeError'),
    ('zeros', 'tf.zeros(tf.shape(r))', [[0.0, 0.0], [], [0.0, 0.0, 0.0]]),
    ('ones', 'tf.ones(tf.shape(r3), tf.int64)', [[[1, 1], [1]], [], [[1], [1, 1, 1]]]),
    ('fill', 'tf.fill(tf.shape(ri), 3)', [[[3, 3]], [[3, 3], [3, 3]]]),
    ('reshape_to_ragged', 'tf.reshape(tf.range(5), tf.shape(r))', [[0, 1], [], [2, 3, 4]]),
    ('tile_by_shape', 'tf.tile(r, tf.shape(tf.ones([2, 1])))',
     [[1, 2], [], [3, 4, 5], [1, 2], [], [3, 4, 5]]),
]


@pytest.mark.parametrize("name,expr,expected", CASES, ids=[c[0] for c in CASES])
def test_shape(name, expr, expected):
    answer = ragged_cases.evaluate(tf, SETUP, [(name, expr)])[name]
    ragged_cases.check(answer, expected, name)


@pytest.mark.oracle
def test_shape_against_tensorflow():
    ragged_cases.check_against_tensorflow(tf, SETUP, CASES)


def test_nrows_of_a_fed_ragged_tensor():
    with tf.Graph().as_default():
        p = tf.ragged.placeholder(tf.float32, 1, [2])
        shape = tf.shape(p)
        assert repr(shape) == "<DynamicRaggedShape lengths=[None, None, 2] num_row_partitions=1>"
        rows = tf.ragged.constant_value([[[1.0, 2.0]], [], [[3.0, 4.0], [5.0, 6.0]]],
                                        ragged_rank=1, dtype=tf.float32)
        with tf.Session() as sess:
            assert sess.run([shape[0], shape[2], shape.inner_shape], {p: rows})[:2] == [3, 2]
