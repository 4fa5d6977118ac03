"""tf.strings.reduce_join, tf.strings.join, tf.strings.format and tf.print with
RaggedTensors (tensorflux/ragged/ragged_math_ops.py reduce_join, ragged_string_ops.py).

Table-driven (tests/ragged/ragged_cases.py): each case's expected value is what TensorFlow
2.21 gives (tf.compat.v1, graph mode); the oracle test asks it again and also compares
ragged ranks and static shapes."""

from __future__ import annotations

import pytest

import tensorflux as tf
from tests.ragged import ragged_cases

SETUP = ragged_cases.BASE_SETUP + """
s = tf.ragged.constant([["a", "Bc"], [], [" De ", "1", "2.5"]])
s3 = tf.ragged.constant([[["a", "b"], []], [["c"]]])
si = tf.ragged.constant([[["a", "b"]], [["c", "d"], ["e", "f"]]], ragged_rank=1)
long = tf.ragged.constant([list(range(10)), [1]])
other = RT.from_row_lengths(tf.range(5), [1, 1, 3])
fed = RT.from_row_lengths(tf.range(5), tf.placeholder_with_default(
    tf.constant([1, 1, 3], tf.int64), [None]))
"""

CASES = [
    ('reduce_join', "tf.strings.reduce_join(s, axis=1, separator='|')",
     [b'a|Bc', b'', b' De |1|2.5']),
    ('reduce_join_0', 'tf.strings.reduce_join(s, axis=0)', [b'a De ', b'Bc1', b'2.5']),
    ('reduce_join_all', 'tf.strings.reduce_join(s)', b'aBc De 12.5'),
    ('reduce_join_all_sep', "tf.strings.reduce_join(s, separator=',')", b'a,Bc, De ,1,2.5'),
    ('reduce_join_top', 'tf.reduce_join(s, 1)', [b'aBc', b'', b' De 12.5']),
    ('reduce_join_neg', "tf.strings.reduce_join(s, axis=-1, separator='+')",
     [b'a+Bc', b'', b' De +1+2.5']),
    ('reduce_join_keep', 'tf.strings.reduce_join(s, axis=1, keepdims=True)',
     [[b'aBc'], [b''], [b' De 12.5']]),
    ('reduce_join_keep0', 'tf.strings.reduce_join(s, axis=0, keepdims=True)',
     [[b'a De ', b'Bc1', b'2.5']]),
    ('reduce_join3_1', "tf.strings.reduce_join(s3, axis=1, separator='.')",
     [[b'a', b'b'], [b'c']]),
    ('reduce_join3_2', 'tf.strings.reduce_join(s3, axis=2)', [[b'ab', b''], [b'c']]),
    ('reduce_join3_01', 'tf.strings.reduce_join(s3, axis=[0, 1])', [b'ac', b'b']),
    ('reduce_join_inner', "tf.strings.reduce_join(si, axis=2, separator='-')",
     [[b'a-b'], [b'c-d', b'e-f']]),
    ('reduce_join_inner_1', 'tf.strings.reduce_join(si, axis=1)', [[b'a', b'b'], [b'ce', b'df']]),
    ('reduce_join_err_axis', 'tf.strings.reduce_join(s, axis=2)', 'ValueError'),
    ('join', "tf.strings.join([s, s], separator='-')",
     [[b'a-a', b'Bc-Bc'], [], [b' De - De ', b'1-1', b'2.5-2.5']]),
    ('join_scalar', "tf.strings.join([s, 'x'])",
     [[b'ax', b'Bcx'], [], [b' De x', b'1x', b'2.5x']]),
    ('string_join', 'tf.string_join([s, s])',
     [[b'aa', b'BcBc'], [], [b' De  De ', b'11', b'2.52.5']]),
    ('format', "tf.strings.format('{}', r)", b'[[1, 2], [], [3, 4, 5]]'),
    ('format_two', "tf.strings.format('x={} y={}', [r, tf.constant([1, 2])])",
     b'x=[[1, 2], [], [3, 4, 5]] y=[1 2]'),
    ('format_floats', "tf.strings.format('{}', tf.ragged.constant([[1.5, 2.25], [1e10]]))",
     b'[[1.500000, 2.250000], [10000000000.000000]]'),
    ('format_long', "tf.strings.format('{}', long)", b'[[0, 1, 2, ..., 7, 8, 9], [1]]'),
    ('format_summarize', "tf.strings.format('{}', long, summarize=2)",
     b'[[0, 1, ..., 8, 9], [1]]'),
    ('format_all', "tf.strings.format('{}', long, summarize=-1)",
     b'[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1]]'),
    ('format_rows', "tf.strings.format('{}', tf.ragged.constant([[[1], [2, 3]]] * 8))",
     (b'[[[1], [2, 3]], [[1], [2, 3]], [[1], [2, 3]], ..., [[1], [2, 3]], [[1], [2, 3]], [[1], ['
      b'2, 3]]]')),
    ('format_strings', "tf.strings.format('<{}>', s)",
     b"<[['a', 'Bc'], [], [' De ', '1', '2.5']]>"),
    ('format_inner', "tf.strings.format('{}', ri)", b'[[[1, 2]], [[3, 4], [5, 6]]]'),
    ('format_bool', "tf.strings.format('{}', tf.ragged.constant([[True], []]))", b'[[true], []]'),
    ('format_r3', "tf.strings.format('{}', r3)", b'[[[1, 2], [3]], [], [[4], [5, 6, 7]]]'),
    ('format_err_count', "tf.strings.format('{} {}', r)", 'ValueError'),
    ('join_err_rank', 'tf.strings.join([s, tf.strings.as_string(q3)])', 'ValueError'),
    ('join_err_sizes', 'tf.strings.join([s, tf.strings.as_string(q)])', 'ValueError'),
    ('join_err_splits', 'tf.strings.join([s, tf.strings.as_string(other)])',
     'InvalidArgumentError'),
    ('join_err_splits_fed', 'tf.strings.join([s, tf.strings.as_string(fed)])',
     'InvalidArgumentError'),
    ('map_flat_values_err', 'tf.ragged.map_flat_values(tf.add, r, q3)', 'ValueError'),
]


@pytest.mark.parametrize("name,expr,expected", CASES, ids=[c[0] for c in CASES])
def test_strings(name, expr, expected):
    answer = ragged_cases.evaluate(tf, SETUP, [(name, expr)])[name]
    ragged_cases.check(answer, expected, name)


@pytest.mark.oracle
def test_strings_against_tensorflow():
    ragged_cases.check_against_tensorflow(tf, SETUP, CASES)


def test_print_writes_nested_lists(tmp_path):
    # TF 2.21 prints "r: [[1, 2], [], [3, 4, 5]] [1 2] {'a': 1}" and "[[0, 1, ..., 8, 9]]"
    out = tmp_path / "printed.txt"
    with tf.Graph().as_default():
        r = tf.ragged.constant([[1, 2], [], [3, 4, 5]])
        first = tf.print("r:", r, tf.constant([1, 2]), {"a": 1},
                         output_stream=f"file://{out}")
        second = tf.print(tf.ragged.constant([list(range(10))]), summarize=2,
                          output_stream=f"file://{out}")
        with tf.Session() as sess:
            sess.run(first)
            sess.run(second)
    assert out.read_text() == "r: [[1, 2], [], [3, 4, 5]] [1 2] {'a': 1}\n[[0, 1, ..., 8, 9]]\n"
