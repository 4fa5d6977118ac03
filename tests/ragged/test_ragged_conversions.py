"""RaggedTensor.from_tensor / to_tensor / to_sparse / merge_dims, and tf.strings.split /
tf.string_split with ragged results (tensorflux/ragged/ragged_tensor.py,
ragged_string_ops.py).

Table-driven (tests/ragged/ragged_cases.py): each case's expected value is what TensorFlow
2.21 gives (tf.compat.v1, graph mode); the oracle tests ask it again and also compare
ragged ranks and static shapes."""

from __future__ import annotations

import pytest

import tensorflux as tf
from tests.ragged import ragged_cases

SETUP = ragged_cases.BASE_SETUP + """

dz = tf.constant([[[1, 0, 0], [2, 3, 0]], [[0, 0, 0], [4, 5, 6]]])
d4 = tf.reshape(tf.range(16), [2, 2, 2, 2])
"""

CASES = [
    ('ft2', 'RT.from_tensor(d3, ragged_rank=2)',
     [[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]]]),
    ('ft1', 'RT.from_tensor(d3)', [[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]]]),
    ('ft2_pad', 'RT.from_tensor(dz, ragged_rank=2, padding=0)', [[[1], [2, 3]], [[], [4, 5, 6]]]),
    ('ft2_len', 'RT.from_tensor(dz, ragged_rank=2, lengths=[1, 2, 0, 3])',
     [[[1], [2, 3]], [[], [4, 5, 6]]]),
    ('ft2_pad_rows', 'RT.from_tensor(d4, ragged_rank=2, padding=[2, 3])',
     [[[[0, 1]], [[4, 5], [6, 7]]], [[[8, 9], [10, 11]], [[12, 13], [14, 15]]]]),
    ('ft3_pad', 'RT.from_tensor(d4, ragged_rank=3, padding=0)',
     [[[[0, 1], [2, 3]], [[4, 5], [6, 7]]], [[[8, 9], [10, 11]], [[12, 13], [14, 15]]]]),
    ('ft_pad_rows', 'RT.from_tensor(dz, padding=[0, 0, 0])',
     [[[1, 0, 0], [2, 3, 0]], [[0, 0, 0], [4, 5, 6]]]),
    ('ft_neg_len', 'RT.from_tensor([[1, 2], [3, 4]], lengths=[-1, 5])', [[], [3, 4]]),
    ('ft_nested', 'RT.from_tensor(d3, lengths=([2, 1], [1, 2, 3]))', [[[1], [4, 5]], [[7, 8, 9]]]),
    ('ft_nested_full', 'RT.from_tensor(d3, lengths=([1, 2], [1, 2, 3]))',
     [[[1]], [[7, 8], [10, 11, 12]]]),
    ('ft_nested_one', 'RT.from_tensor(d3, lengths=([2, 0],))', [[[1, 2, 3], [4, 5, 6]], []]),
    ('ft_nested_list', 'RT.from_tensor(d3, lengths=[[1, 2]], ragged_rank=1)',
     [[[1, 2, 3]], [[7, 8, 9], [10, 11, 12]]]),
    ('ft_vec_len', 'RT.from_tensor(d3, lengths=[1, 2])', [[[1, 2, 3]], [[7, 8, 9], [10, 11, 12]]]),
    ('roundtrip', 'RT.from_tensor(RT.from_tensor(d3, ragged_rank=2).to_tensor(), ragged_rank=2)',
     [[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]]]),
    ('roundtrip_pad', 'RT.from_tensor(r3.to_tensor(default_value=-1), ragged_rank=2, padding=-1)',
     [[[1, 2], [3]], [[], []], [[4], [5, 6, 7]]]),
    ('roundtrip_inner', 'RT.from_tensor(ri.to_tensor(), lengths=ri.row_lengths())',
     [[[1, 2]], [[3, 4], [5, 6]]]),
    ('err_ft_rank', 'RT.from_tensor(d3, ragged_rank=3)', 'ValueError'),
    ('err_ft_zero', 'RT.from_tensor(d3, ragged_rank=0)', 'ValueError'),
    ('err_ft_vector', 'RT.from_tensor([1, 2])', 'ValueError'),
    ('err_ft_both', 'RT.from_tensor(d3, lengths=[1, 2], padding=0)', 'ValueError'),
    ('err_ft_nested_rank', 'RT.from_tensor(d3, lengths=[[2, 0]], ragged_rank=2)', 'ValueError'),
    ('err_ft_pad_shape', 'RT.from_tensor(d3, padding=[[0]])', 'ValueError'),
    ('err_ft_float_len', 'RT.from_tensor(d3, lengths=[[1.5, 2]])', 'ValueError'),
    ('tt_inner', 'ri.to_tensor()', [[[1, 2], [0, 0]], [[3, 4], [5, 6]]]),
    ('tt_r3_shape', 'r3.to_tensor(shape=[2, 1, 2])', [[[1, 2]], [[0, 0]]]),
    ('tt_r3_partial', 'r3.to_tensor(shape=[None, 3, None], default_value=-1)',
     [[[1, 2, -1], [3, -1, -1], [-1, -1, -1]], [[-1, -1, -1], [-1, -1, -1], [-1, -1, -1]],
      [[4, -1, -1], [5, 6, 7], [-1, -1, -1]]]),
    ('tt_inner_shape', 'ri.to_tensor(shape=[3, 3, 2])',
     [[[1, 2], [0, 0], [0, 0]], [[3, 4], [5, 6], [0, 0]], [[0, 0], [0, 0], [0, 0]]]),
    ('tt_default_vec', 'ri.to_tensor(default_value=[7, 8])', [[[1, 2], [7, 8]], [[3, 4], [5, 6]]]),
    ('err_tt_shape', 'ri.to_tensor(shape=[3, 3, 3])', 'ValueError'),
    ('sparse_inner_idx', 'ri.to_sparse().indices',
     [[0, 0, 0], [0, 0, 1], [1, 0, 0], [1, 0, 1], [1, 1, 0], [1, 1, 1]]),
    ('sparse_inner_vals', 'ri.to_sparse().values', [1, 2, 3, 4, 5, 6]),
    ('sparse_inner_shape', 'ri.to_sparse().dense_shape', [2, 2, 2]),
    ('sparse_r3_idx', 'r3.to_sparse().indices',
     [[0, 0, 0], [0, 0, 1], [0, 1, 0], [2, 0, 0], [2, 1, 0], [2, 1, 1], [2, 1, 2]]),
    ('sparse_u2_idx',
     'RT.from_tensor(tf.reshape(tf.range(8), [2, 2, 2]), ragged_rank=1).to_sparse().indices',
     [[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1], [1, 0, 0], [1, 0, 1], [1, 1, 0], [1, 1, 1]]),
    ('merge_12', 'r3.merge_dims(1, 2)', [[1, 2, 3], [], [4, 5, 6, 7]]),
    ('merge_02', 'r3.merge_dims(0, 2)', [1, 2, 3, 4, 5, 6, 7]),
    ('merge_neg', 'r3.merge_dims(-2, -1)', [[1, 2, 3], [], [4, 5, 6, 7]]),
    ('merge_inner_12', 'ri.merge_dims(1, 2)', [[1, 2], [3, 4, 5, 6]]),
    ('merge_inner_02', 'ri.merge_dims(0, 2)', [1, 2, 3, 4, 5, 6]),
    ('merge_inner_01', 'ri.merge_dims(0, 1)', [[1, 2], [3, 4], [5, 6]]),
    ('merge_same', 'ri.merge_dims(2, 2)', [[[1, 2]], [[3, 4], [5, 6]]]),
    ('merge_rank4',
     'tf.ragged.constant([[[[1, 2]], [[3, 4], [5, 6]]]], ragged_rank=2).merge_dims(2, 3)',
     [[[1, 2], [3, 4, 5, 6]]]),
    ('merge_rank4_13',
     'tf.ragged.constant([[[[1, 2]], [[3, 4], [5, 6]]], [[[7, 8]]]], ragged_rank=2)'
      '.merge_dims(1, 3)',
     [[1, 2, 3, 4, 5, 6], [7, 8]]),
    ('err_merge_order', 'ri.merge_dims(2, 1)', 'ValueError'),
    ('err_merge_axis', 'ri.merge_dims(0, 3)', 'ValueError'),
    ('split_scalar', "tf.strings.split('a b', result_type='RaggedTensor')", [[b'a', b'b']]),
    ('split_scalar_sparse', "tf.sparse.to_dense(tf.strings.split('a b'))", [[b'a', b'b']]),
    ('split_2d', "tf.strings.split([['a b'], ['c']], result_type='RaggedTensor')",
     [[[b'a', b'b']], [[b'c']]]),
    ('split_2d_sparse', "tf.strings.split([['a b'], ['c']]).indices",
     [[0, 0, 0], [0, 0, 1], [1, 0, 0]]),
    ('split_ragged',
     "tf.strings.split(tf.ragged.constant([['a b'], [], ['c']]), result_type='RaggedTensor')",
     [[[b'a', b'b']], [], [[b'c']]]),
    ('split_max',
     "tf.strings.split(['a b c', '', 'd  e'], sep=' ', maxsplit=1, result_type='RaggedTensor')",
     [[b'a', b'b c'], [b''], [b'd', b' e']]),
    ('split_source', "tf.strings.split(source=['x y'], result_type='RaggedTensor')",
     [[b'x', b'y']]),
    ('string_split', "tf.string_split(['a b c', '', 'd  e'], result_type='RaggedTensor')",
     [[b'a', b'b', b'c'], [], [b'd', b'e']]),
    ('string_split_skip',
     "tf.string_split(['a,,b'], ',', skip_empty=False, result_type='RaggedTensor')",
     [[b'a', b'', b'b']]),
    ('err_string_split_scalar', "tf.string_split('a b', result_type='RaggedTensor')",
     'ValueError'),
    ('err_split_type', "tf.strings.split(['a'], result_type='X')", 'ValueError'),
    ('err_string_split_type', "tf.string_split(['a'], result_type='X')", 'ValueError'),
    ('decode_2d', "tf.strings.unicode_decode([['ab'], ['c']], 'UTF-8')", [[[97, 98]], [[99]]]),
]



@pytest.mark.parametrize("name,expr,expected", CASES, ids=[c[0] for c in CASES])
def test_conversions(name, expr, expected):
    answer = ragged_cases.evaluate(tf, SETUP, [(name, expr)])[name]
    ragged_cases.check(answer, expected, name)


@pytest.mark.oracle
def test_conversions_against_tensorflow():
    ragged_cases.check_against_tensorflow(tf, SETUP, CASES)
