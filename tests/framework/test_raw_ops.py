"""tf.raw_ops: registered ops called by their op def's argument names."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_both

PROGRAM = """
x = tf.constant([[1., 2.], [3., 4.]])
outs = {
    "matmul": tf.raw_ops.MatMul(a=x, b=x, transpose_b=True),
    "concat": tf.raw_ops.ConcatV2(values=[x, x], axis=1),
    "topk": tf.raw_ops.TopKV2(input=x, k=1).indices,
    "unique": tf.raw_ops.Unique(x=tf.constant([3, 1, 3])).idx,
    "cast": tf.raw_ops.Cast(x=x, DstT=tf.int32),
    "fill": tf.raw_ops.Fill(dims=[2, 3], value=7.0),
    "slice": tf.raw_ops.Slice(input=x, begin=[0, 1], size=[2, 1]),
    "split": tf.raw_ops.Split(axis=1, value=x, num_split=2)[1],
    "sum": tf.raw_ops.Sum(input=x, axis=[0], keep_dims=True),
    "squeeze": tf.raw_ops.Squeeze(input=tf.zeros([1, 2, 1]), axis=[0]),
    "select": tf.raw_ops.Select(condition=[True, False], x=[1, 2], y=[3, 4]),
    "igamma": tf.raw_ops.Round(x=tf.raw_ops.Igamma(a=[2.0], x=[1.0]) * 1e4),
}
with tf.Session() as s:
    result = {k: v.tolist() for k, v in s.run(outs).items()}
"""

EXPECTED = {"matmul": [[5.0, 11.0], [11.0, 25.0]],
            "concat": [[1.0, 2.0, 1.0, 2.0], [3.0, 4.0, 3.0, 4.0]],
            "topk": [[1], [1]], "unique": [0, 1, 0], "cast": [[1, 2], [3, 4]],
            "fill": [[7.0] * 3] * 2, "slice": [[2.0], [4.0]], "split": [[2.0], [4.0]],
            "sum": [[4.0, 6.0]], "squeeze": [[0.0], [0.0]], "select": [1, 4],
            "igamma": [2642.0]}


def test_raw_ops_compute_as_the_ops():
    ns = {"tf": tf, "np": np}
    with tf.Graph().as_default():
        exec(PROGRAM, ns)  # noqa: S102 - the shared test program
    assert ns["result"] == EXPECTED


@pytest.mark.oracle
def test_raw_ops_match_tensorflow():
    ours, theirs = run_both(PROGRAM, tf)
    assert ours == theirs == EXPECTED


def test_raw_ops_names_errors_and_results():
    names = dir(tf.raw_ops)
    assert {"MatMul", "ConcatV2", "IteratorGetNext", "ResourceApplyAdam"} <= set(names)
    assert not [n for n in names if n.startswith("_")]
    assert tf.raw_ops.MatMul is tf.raw_ops.MatMul
    with tf.Graph().as_default():
        x = tf.constant([[1.0]])
        with pytest.raises(TypeError, match="only takes keyword arguments"):
            tf.raw_ops.MatMul(x, x)
        with pytest.raises(TypeError, match="missing required argument 'b'"):
            tf.raw_ops.MatMul(a=x)
        with pytest.raises(TypeError, match="unexpected keyword argument 'c'"):
            tf.raw_ops.MatMul(a=x, b=x, c=x)
        assert isinstance(tf.raw_ops.NoOp(name="nothing"), tf.Operation)
        assert tf.raw_ops.Identity(input=x, name="ident").op.name == "ident"
    with pytest.raises(AttributeError, match="NotAnOp"):
        tf.raw_ops.NotAnOp  # noqa: B018 - the lookup is what is tested
    with pytest.raises(AttributeError):
        tf.raw_ops._Send  # noqa: B018
