"""Dimension and TensorShape: one table of expressions with their TF1 results.

Each record is (expression, expected). `expected` is the repr of the result, or
"ERR <ExceptionType>: <message>". The same table runs under TensorFlow in the oracle test,
so every expected value is TF's (records in TF_DIFFERS differ on purpose).
"""

import pickle

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import tensor_shape as ts
from tests import oracle

D = ts.Dimension
S = ts.TensorShape

TABLE = [
    # Dimension arithmetic: unknown in, unknown out.
    ("D(3)+D(4)", "Dimension(7)"), ("D(3)+4", "Dimension(7)"), ("4+D(3)", "Dimension(7)"),
    ("D(None)+3", "Dimension(None)"), ("3+D(None)", "Dimension(None)"),
    ("D(3)-D(None)", "Dimension(None)"), ("10-D(3)", "Dimension(7)"),
    ("D(3)*2", "Dimension(6)"), ("D(3)*D(None)", "Dimension(None)"),
    ("D(7)//2", "Dimension(3)"), ("7//D(2)", "Dimension(3)"), ("D(7)%3", "Dimension(1)"),
    ("D(None)//2", "Dimension(None)"),
    ("D(7)/2", "ERR TypeError: unsupported operand type(s) for /: 'Dimension' and 'int', "
               "please use // instead"),
    ("D(3)+'a'", "ERR TypeError: unsupported operand type(s) for +: 'Dimension' and 'str'"),
    ("D(3)+1.5", "ERR TypeError: unsupported operand type(s) for +: 'Dimension' and 'float'"),
    ("D(6)//D(0)", "ERR ZeroDivisionError: integer division or modulo by zero"),
    # Dimension comparisons: None when either side is unknown.
    ("D(3)==D(3)", "True"), ("D(3)==3", "True"), ("D(3)==D(None)", "None"),
    ("D(None)==D(None)", "None"), ("D(3)!=D(None)", "None"), ("D(3)!=4", "True"),
    ("D(3)<D(4)", "True"), ("D(3)<D(None)", "None"), ("D(3)<=3", "True"), ("D(3)>2", "True"),
    ("D(3)>=None", "None"), ("D(3)==None", "None"), ("D(3)=='3'", "False"),
    ("D(3)==np.int64(3)", "True"),
    # Dimension merging and compatibility.
    ("D(3).merge_with(3)", "Dimension(3)"), ("D(3).merge_with(None)", "Dimension(3)"),
    ("D(None).merge_with(D(4))", "Dimension(4)"),
    ("D(3).merge_with(4)", "ERR ValueError: Dimensions 3 and 4 are not compatible"),
    ("D(3).is_compatible_with(None)", "True"), ("D(3).is_compatible_with(4)", "False"),
    ("D(3).assert_is_compatible_with(4)",
     "ERR ValueError: Dimensions 3 and 4 are not compatible"),
    # Dimension construction and conversion.
    ("int(D(3))", "3"), ("D(None).value", "None"), ("D(np.int64(5))", "Dimension(5)"),
    ("D(D(5))", "Dimension(5)"), ("[1,2,3][D(1)]", "2"), ("bool(D(0))", "False"),
    ("str(D(3))", "'3'"), ("str(D(None))", "'?'"), ("repr(D(None))", "'Dimension(None)'"),
    ("D(-1)", "ERR ValueError: Dimension -1 must be >= 0"),
    ("D(2.5)", "ERR TypeError: Dimension value must be integer or None or have an __index__ "
               "method, got value '2.5' with type '<class 'float'>'"),
    ("D('3')", "ERR TypeError: Dimension value must be integer or None or have an __index__ "
               "method, got value ''3'' with type '<class 'str'>'"),
    ("hash(D(3))", "ERR TypeError: unhashable type: 'Dimension'"),
    ("ts.dimension_value(D(3))", "3"), ("ts.dimension_value(3)", "3"),
    ("ts.dimension_value(None)", "None"), ("ts.as_dimension(3)", "Dimension(3)"),
    ("ts.as_dimension(None)", "Dimension(None)"),
    # TensorShape construction and printing.
    ("S([None,3])", "TensorShape([Dimension(None), Dimension(3)])"),
    ("str(S([None,3]))", "'(?, 3)'"), ("str(S([3]))", "'(3,)'"), ("str(S([]))", "'()'"),
    ("str(S(None))", "'<unknown>'"), ("repr(S(None))", "'TensorShape(None)'"),
    ("repr(S([]))", "'TensorShape([])'"), ("S(3)", "TensorShape([Dimension(3)])"),
    ("S(D(3))", "TensorShape([Dimension(3)])"),
    ("S(np.array([2,3]))", "TensorShape([Dimension(2), Dimension(3)])"),
    ("S([np.int64(2)]).as_list()", "[2]"), ("S(S([1,2]))", "TensorShape([Dimension(1), "
                                                           "Dimension(2)])"),
    ("S('abc')", "ERR TypeError: Failed to convert ''abc'' to a shape: ''a''could not be "
                 "converted to a dimension. A shape should either be single dimension (e.g. "
                 "10), or an iterable of dimensions (e.g. [1, 10, None])."),
    ("S([1.5])", "ERR TypeError: Dimension value must be integer or None or have an "
                 "__index__ method, got value '1.5' with type '<class 'float'>'"),
    ("S([-1])", "ERR ValueError: Dimension -1 must be >= 0"),
    # Views.
    ("S((2,3)).dims", "[Dimension(2), Dimension(3)]"), ("S(None).dims", "None"),
    ("S(None).ndims", "None"), ("S([2,3]).rank", "2"), ("S([None,3]).as_list()", "[None, 3]"),
    ("S(None).as_list()", "ERR ValueError: as_list() is not defined on an unknown "
                          "TensorShape."),
    ("len(S(None))", "ERR ValueError: Cannot take the length of shape with unknown rank."),
    ("len(S([1,2]))", "2"), ("list(S([1,None]))", "[Dimension(1), Dimension(None)]"),
    ("list(S(None))", "ERR ValueError: Cannot iterate over a shape with unknown rank."),
    ("1 in S([1,2])", "True"), ("bool(S([]))", "True"), ("bool(S(None))", "False"),
    ("S([2,3]).num_elements()", "6"), ("S([2,None]).num_elements()", "None"),
    ("S(None).num_elements()", "None"), ("S([]).num_elements()", "1"),
    ("S([1,2]).is_fully_defined()", "True"), ("S([1,None]).is_fully_defined()", "False"),
    ("S(None).is_fully_defined()", "False"),
    # Indexing: ints give Dimensions (TF1), slices give shapes.
    ("S([1,2])[0]", "Dimension(1)"), ("S([1,2])[-1]", "Dimension(2)"),
    ("S([1,2,3])[1:]", "TensorShape([Dimension(2), Dimension(3)])"),
    ("S([1,2,3])[::2]", "TensorShape([Dimension(1), Dimension(3)])"),
    ("S(None)[1]", "Dimension(None)"), ("S(None)[-1]", "Dimension(None)"),
    ("S(None)[1:]", "TensorShape(None)"),
    ("S(None)[1:3]", "TensorShape([Dimension(None), Dimension(None)])"),
    ("S(None)[-2:]", "TensorShape(None)"), ("S(None)[:-2]", "TensorShape(None)"),
    ("S(None)[::2]", "ERR ValueError: Steps are not yet handled"),
    # Equality.
    ("S([1,2])=='x'", "False"), ("S([1,2])==[1,2]", "True"), ("S([1,2])==(1,2)", "True"),
    ("S([1,None])==[1,None]", "True"), ("S([1,None])==S([1,None])", "True"),
    ("S(None)==S(None)", "True"), ("S(None)!=S(None)", "False"), ("S([1])!=S([2])", "True"),
    ("S([1,2])==S([1,2,3])", "False"), ("S([1,2])==S(None)", "False"),
    # Merging, compatibility, concatenation.
    ("S([1,2]).merge_with([1,None])", "TensorShape([Dimension(1), Dimension(2)])"),
    ("S([None,2]).merge_with([1,None])", "TensorShape([Dimension(1), Dimension(2)])"),
    ("S([1,2]).merge_with([3,None])",
     "ERR ValueError: Shapes (1, 2) and (3, ?) are not compatible"),
    ("S([1,2]).merge_with([3])", "ERR ValueError: Shapes (1, 2) and (3,) are not compatible"),
    ("S([1,2]).merge_with(None)", "TensorShape([Dimension(1), Dimension(2)])"),
    ("S(None).merge_with([1])", "TensorShape([Dimension(1)])"),
    ("S([1,2]).is_compatible_with([1,None])", "True"),
    ("S([1,2]).is_compatible_with(None)", "True"),
    ("S([1,2]).is_compatible_with([1])", "False"),
    ("S([1,2]).is_compatible_with([1,3])", "False"),
    ("S([1,2]).assert_is_compatible_with([3,2])",
     "ERR ValueError: Shapes (1, 2) and [3, 2] are incompatible"),
    ("S([1,2]).concatenate([3])", "TensorShape([Dimension(1), Dimension(2), Dimension(3)])"),
    ("S(None).concatenate([3])", "TensorShape(None)"),
    ("S([1,2]) + [3]", "TensorShape([Dimension(1), Dimension(2), Dimension(3)])"),
    ("[3] + S([1,2])", "TensorShape([Dimension(3), Dimension(1), Dimension(2)])"),
    ("S([1,2]).most_specific_compatible_shape([1,3])",
     "TensorShape([Dimension(1), Dimension(None)])"),
    ("S([1,2]).most_specific_compatible_shape([1,3,4])", "TensorShape(None)"),
    # Rank checks.
    ("S([1,2]).with_rank(3)", "ERR ValueError: Shape (1, 2) must have rank 3"),
    ("S([1,2]).with_rank(2)", "TensorShape([Dimension(1), Dimension(2)])"),
    ("S(None).with_rank(2)", "TensorShape([Dimension(None), Dimension(None)])"),
    ("S([1,2]).with_rank_at_least(3)",
     "ERR ValueError: Shape (1, 2) must have rank at least 3"),
    ("S(None).with_rank_at_least(3)", "TensorShape(None)"),
    ("S([1,2]).with_rank_at_most(1)", "ERR ValueError: Shape (1, 2) must have rank at most 1"),
    ("S([1,2]).assert_has_rank(3)", "ERR ValueError: Shape (1, 2) must have rank 3"),
    ("S([1,2]).assert_same_rank([3])",
     "ERR ValueError: Shapes (1, 2) and (3,) must have the same rank"),
    ("S([1,None]).assert_is_fully_defined()", "ERR ValueError: Shape (1, ?) is not fully "
                                             "defined"),
    # Module functions.
    ("ts.unknown_shape()", "TensorShape(None)"),
    ("ts.unknown_shape(rank=2)", "TensorShape([Dimension(None), Dimension(None)])"),
    ("ts.as_shape([1,2])", "TensorShape([Dimension(1), Dimension(2)])"),
    ("ts.dimension_at_index(S([1,2]),1)", "Dimension(2)"),
    ("ts.dimension_at_index(S(None),1)", "Dimension(None)"),
    ("str(S(None).as_proto())", "'unknown_rank: true\\n'"),
    ("[d.size for d in S([1,None]).as_proto().dim]", "[1, -1]"),
]

# Deliberate differences from TF 2.21 (tensorflux value; TF's differs as noted).
TF_DIFFERS = [
    ("int(D(None))", "ERR TypeError: Cannot convert an unknown Dimension to an int"),
    # TF 2.x dropped these TF1 helpers.
    ("ts.scalar()", "TensorShape([])"), ("ts.vector(3)", "TensorShape([Dimension(3)])"),
    ("ts.matrix(2,None)", "TensorShape([Dimension(2), Dimension(None)])"),
    # TF 1.x took integral floats as dimensions (Python 3 programs' `n / 2`, research/
    # slim's `160.0` depths); TF 2.x raises TypeError.
    ("D(2.0)", "Dimension(2)"), ("S([None, 160.0]).as_list()", "[None, 160]"),
    ("D(-2.0)", "ERR ValueError: Dimension -2 must be >= 0"),
]


def _evaluate(expr):
    try:
        return repr(eval(expr, {"D": D, "S": S, "ts": ts, "np": np}))
    except Exception as e:  # the table records errors as values
        return f"ERR {type(e).__name__}: {e}"


@pytest.mark.parametrize("expr,expected", TABLE + TF_DIFFERS,
                         ids=[e for e, _ in TABLE + TF_DIFFERS])
def test_table(expr, expected):
    assert _evaluate(expr) == expected


def test_proto_round_trip():
    for dims in (None, [], [1, None, 3]):
        proto = S(dims).as_proto()
        assert type(proto).__name__ == "TensorShapeProto"
        assert S(proto)._dims_tuple == S(dims)._dims_tuple
        assert ts.as_shape(proto) == S(dims)


def test_hash_pickle_and_immutability():
    a, b = S([1, None]), S([1, None])
    assert hash(a) == hash(b) and {a: 1}[b] == 1
    assert pickle.loads(pickle.dumps(a)) == a
    assert pickle.loads(pickle.dumps(S(None))) == S(None)
    assert pickle.loads(pickle.dumps(D(None))).value is None
    a.dims[0] = D(7)  # dims is a fresh list: the shape does not change
    assert a.as_list() == [1, None]


def test_dims_tuple_and_fast_helpers():
    assert S([1, None])._dims_tuple == (1, None) and S(None)._dims_tuple is None
    assert ts.from_dims_tuple((2, 3)) == S([2, 3])
    table = [
        (S(None), (5, 6), True), (S([None, 3]), (7, 3), True), (S([None, 3]), (7, 4), False),
        (S([2]), (2, 1), False), (S([]), (), True), (S([]), (1,), False),
    ]
    for shape, np_shape, expected in table:
        assert ts.is_compatible_with_numpy_shape(shape, np_shape) is expected
        assert shape.is_compatible_with(np_shape) is expected


def test_unknown_shape_accepts_ndims():
    assert ts.unknown_shape(ndims=3).as_list() == [None, None, None]


@pytest.mark.oracle
def test_table_matches_tensorflow():
    code = f"""
from tensorflow.python.framework import tensor_shape as ts
D, S = ts.Dimension, ts.TensorShape
def ev(expr):
    try:
        return repr(eval(expr))
    except Exception as e:
        return f"ERR {{type(e).__name__}}: {{e}}"
result = [ev(e) for e in {[e for e, _ in TABLE]!r}]
"""
    got = oracle.run_tf(code)
    mismatches = [(e, want, tf) for (e, want), tf in zip(TABLE, got, strict=True) if want != tf]
    assert not mismatches


# TF1's `x.shape[i]` is a Dimension: lists holding known ones convert wherever an integer
# dtype is wanted or preferred (BERT's `tf.reshape(x, [-1, x.shape[-1]])`), and fail where
# the dtype is inferred, as in TensorFlow 2.21 with v2 behaviour off (its results below).
DIMENSION_CASES = {
    "reshape": (lambda x, d: tf.reshape(x, [-1, d]), ("float32", [6, 4])),
    "zeros": (lambda x, d: tf.zeros([d, 2]), ("float32", [4, 2])),
    "tile": (lambda x, d: tf.tile(x, [1, 1, d]), ("float32", [2, 3, 16])),
    "fill": (lambda x, d: tf.fill([d], 1.0), ("float32", [4])),
    "slice": (lambda x, d: tf.slice(x, [0, 0, 0], [-1, -1, d]), ("float32", [2, 3, 4])),
    "constant": (lambda x, d: tf.constant([1, d]), TypeError),
    "convert": (lambda x, d: tf.convert_to_tensor([-1, d]), TypeError),
    "float": (lambda x, d: tf.constant([1.5, d]), TypeError),
    "unknown": (lambda x, d: tf.reshape(x, [tf.placeholder(tf.float32, [None]).shape[0], -1]),
                TypeError),
}


@pytest.mark.parametrize("case", sorted(DIMENSION_CASES))
def test_lists_of_dimensions(case):
    build, want = DIMENSION_CASES[case]
    with tf.Graph().as_default():
        x = tf.zeros([2, 3, 4])
        d = x.shape[-1]
        assert isinstance(d, tf.Dimension)
        if want is TypeError:
            with pytest.raises(TypeError, match="Failed to convert elements"):
                build(x, d)
        else:
            t = build(x, d)
            assert (t.dtype.name, t.shape.as_list()) == want
