"""nested_structure_coder: structures of specs as StructuredValue protos, byte for byte as
TensorFlow encodes them, and decoded back to equal values."""

from __future__ import annotations

import collections

import pytest

import tensorflux as tf
from tensorflux.framework import nested_structure_coder as coder
from tests.oracle import run_tf

STRUCTURES = [
    "None", "True", "3", "2.5", "'text'", "[1, (2, 3)]", "{'b': 1, 'a': [None]}",
    "tf.TensorShape([2, None])", "tf.TensorShape(None)", "tf.int64",
    "tf.TensorSpec([2, None], tf.int32, 'n')", "tf.TensorSpec(None)",
    "tf.SparseTensorSpec([None, 3], tf.int64)",
    "tf.RaggedTensorSpec([2, None, None], tf.int32, 2, tf.int32)",
    "tf.RaggedTensorSpec([None, None, 3], tf.int32, 1, "
    "flat_values_spec=tf.TensorSpec([None, 3], tf.int32))",
    "tf.IndexedSlicesSpec([5, 3], tf.float64, tf.int32, tf.int64, [None])",
    "tf.IndexedSlicesSpec()",
    "tf.TensorArraySpec([2], tf.int32, True, False)",
    "tf.data.DatasetSpec({'a': tf.TensorSpec([2]), 'b': (tf.SparseTensorSpec([3]),)}, [4])",
    "tf.OptionalSpec((tf.TensorSpec([2]), tf.RaggedTensorSpec([None, None], tf.int32)))",
    "Point(x=tf.TensorSpec([1]), y=[tf.int32])",
]

_PROGRAM = """
import collections
Point = collections.namedtuple("Point", ["x", "y"])
from tensorflow.python.saved_model import nested_structure_coder as coder
result = [coder.encode_structure(eval(e)).SerializeToString() for e in STRUCTURES]
"""

Point = collections.namedtuple("Point", ["x", "y"])


def _value(expr):
    return eval(expr)  # noqa: S307 - the table's own expressions


@pytest.mark.parametrize("expr", STRUCTURES)
def test_round_trip(expr):
    value = _value(expr)
    back = coder.decode_proto(coder.encode_structure(value))
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        assert type(back).__name__ == "Point" and back._fields == value._fields
        assert tuple(back) == tuple(value)
    else:
        assert back == value and type(back) is type(value)


def test_what_cannot_be_encoded():
    assert not coder.can_encode(object()) and not coder.can_encode({1: 2})
    assert not coder.can_encode(tf.NoneTensorSpec())
    assert coder.can_encode({"a": tf.TensorSpec([1])})
    with pytest.raises(NotImplementedError, match="No encoder for object"):
        coder.encode_structure(object())


@pytest.mark.oracle
def test_encodings_are_tensorflows():
    theirs = run_tf(f"STRUCTURES = {STRUCTURES!r}\n" + _PROGRAM)
    for expr, blob in zip(STRUCTURES, theirs, strict=True):
        ours = coder.encode_structure(_value(expr))
        expected = type(ours).FromString(blob)
        assert ours == expected, expr
