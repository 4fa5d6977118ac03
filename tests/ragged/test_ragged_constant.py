"""tf.ragged.constant edge cases (empty lists, inner_shape, ragged_rank, dtypes), against
TensorFlow's recorded answers and the oracle."""

from __future__ import annotations

import json

import pytest

import tensorflux as tf
from tests import oracle

PROGRAM = '''
cases = {
    "empty": lambda: tf.ragged.constant([]),
    "empties": lambda: tf.ragged.constant([[], []]),
    "inner": lambda: tf.ragged.constant([[[1, 2]], []], inner_shape=(2,)),
    "rr2": lambda: tf.ragged.constant([[[1], [2, 3]], []], ragged_rank=2),
    "deep_empty": lambda: tf.ragged.constant([[[]], []]),
    "str": lambda: tf.ragged.constant([["a"], []]),
    "i32": lambda: tf.ragged.constant([[1], []], row_splits_dtype=tf.int32),
}
result = {}
for k, f in cases.items():
    try:
        t = f()
        with tf.Session() as sess:
            v = sess.run(t)
        v = v.to_list() if hasattr(v, "to_list") else v.tolist()
        result[k] = json.loads(json.dumps([v, str(t.shape), t.dtype.name],
                                          default=lambda b: b.decode()))
    except Exception as e:
        result[k] = type(e).__name__
'''

# TensorFlow 2.21's answers: [value, str(static shape), dtype].
WANT = {
    "empty": [[], "(0,)", "float32"],
    "empties": [[[], []], "(2, ?)", "float32"],
    "inner": [[[[1, 2]], []], "(2, ?, 2)", "int32"],
    "rr2": [[[[1], [2, 3]], []], "(2, ?, ?)", "int32"],
    "deep_empty": [[[[]], []], "(2, ?, ?)", "float32"],
    "str": [[["a"], []], "(2, ?)", "string"],
    "i32": [[[1], []], "(2, ?)", "int32"],
}


def test_constants():
    scope = {"tf": tf, "json": json}
    with tf.Graph().as_default():
        exec(PROGRAM, scope)  # noqa: S102 - the program the oracle test runs too
    assert scope["result"] == WANT


@pytest.mark.oracle
def test_against_tensorflow():
    ours, theirs = oracle.run_both(PROGRAM, tf)
    assert ours == theirs == WANT
