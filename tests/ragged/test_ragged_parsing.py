"""tf.io.RaggedFeature in tf.io.parse_example / parse_single_example
(tensorflux/ragged/ragged_parsing.py), against TensorFlow's recorded answers and the oracle."""

from __future__ import annotations

import json

import pytest

import tensorflux as tf
from tests import oracle

PROGRAM = '''
def ex(d):
    feats = {}
    for k, v in d.items():
        if isinstance(v[0], bytes):
            feats[k] = tf.train.Feature(bytes_list=tf.train.BytesList(value=v))
        elif isinstance(v[0], float):
            feats[k] = tf.train.Feature(float_list=tf.train.FloatList(value=v))
        else:
            feats[k] = tf.train.Feature(int64_list=tf.train.Int64List(value=v))
    return tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString()
e1 = ex({"v": [1, 2, 3], "len": [2, 1], "s": [b"a"], "f": [1.5]})
e2 = ex({"v": [4], "len": [0, 1], "s": [b"b", b"c"], "f": [2.5, 3.5]})
RF = tf.io.RaggedFeature
feats = {
    "plain": RF(tf.int64, value_key="v"),
    "nested": RF(tf.int64, value_key="v", partitions=[RF.RowLengths("len")]),
    "s": RF(tf.string),
    "uniform": RF(tf.int64, value_key="v",
                  partitions=[RF.RowLengths("len"), RF.UniformRowLength(1)]),
    "dense": tf.io.FixedLenFeature([], tf.int64, default_value=0),
}
batch = tf.io.parse_example([e1, e2], feats)
single = tf.io.parse_single_example(e1, feats)
with tf.Session() as sess:
    out = sess.run({"batch": batch, "single": single})
def norm(v):
    v = v.to_list() if hasattr(v, "to_list") else v.tolist()
    return json.loads(json.dumps(v, default=lambda b: b.decode()))
result = {f"{a}.{k}": norm(v) for a, d in out.items() for k, v in d.items()}
result["splits_dtype"] = str(batch["nested"].row_splits.dtype.name)
'''

# TensorFlow 2.21's answers to PROGRAM.
WANT = {
    "batch.dense": [0, 0], "batch.s": [["a"], ["b", "c"]],
    "batch.nested": [[[1, 2], [3]], [[], [4]]], "batch.plain": [[1, 2, 3], [4]],
    "batch.uniform": [[[[1], [2]], [[3]]], [[], [[4]]]],
    "single.dense": 0, "single.s": ["a"], "single.nested": [[1, 2], [3]],
    "single.plain": [1, 2, 3], "single.uniform": [[[1], [2]], [[3]]],
    "splits_dtype": "int32",
}


def test_ragged_features():
    scope = {"tf": tf, "json": json}
    with tf.Graph().as_default():
        exec(PROGRAM, scope)  # noqa: S102 - the program the oracle test runs too
    assert scope["result"] == WANT


def test_ragged_feature_errors():
    RF = tf.io.RaggedFeature
    with pytest.raises(ValueError):
        RF(tf.int32)
    with pytest.raises(TypeError):
        RF(tf.int64, partitions=["x"])
    with tf.Graph().as_default():
        with pytest.raises(ValueError):
            tf.io.parse_example([b""], {"a": RF(tf.int64, partitions=[RF.RowLengths("b")]),
                                        "b": tf.io.VarLenFeature(tf.int64)})
        with pytest.raises(ValueError):  # a partition key read as a sparse feature too
            tf.io.parse_example([b""], {"a": RF(tf.int64, partitions=[RF.RowSplits("b")]),
                                        "b": tf.io.VarLenFeature(tf.int64)})


@pytest.mark.oracle
def test_against_tensorflow():
    ours, theirs = oracle.run_both(PROGRAM, tf)
    assert ours == theirs == WANT


PARTITIONS_PROGRAM = '''
def ex(d):
    return tf.train.Example(features=tf.train.Features(feature={
        k: tf.train.Feature(int64_list=tf.train.Int64List(value=v))
        for k, v in d.items()})).SerializeToString()
e1 = ex({"v": [1, 2, 3, 4], "splits": [0, 3, 4], "starts": [0, 1], "limits": [1, 4],
         "ids": [0, 0, 2, 2], "len": [2, 0, 2], "len2": [1, 2]})
e2 = ex({"v": [5, 6], "splits": [0, 0, 2], "starts": [0, 0], "limits": [1, 2],
         "ids": [1, 1], "len": [2], "len2": [1]})
e3 = ex({"v": [7], "splits": [0], "starts": [0], "limits": [0], "ids": [0], "len": [1],
         "len2": [1]})
RF = tf.io.RaggedFeature
feats = {
    "splits": RF(tf.int64, value_key="v", partitions=[RF.RowSplits("splits")]),
    "starts": RF(tf.int64, value_key="v", partitions=[RF.RowStarts("starts")]),
    "limits": RF(tf.int64, value_key="v", partitions=[RF.RowLimits("limits")]),
    "ids": RF(tf.int64, value_key="v", partitions=[RF.ValueRowIds("ids")]),
    "uniform": RF(tf.int64, value_key="v", partitions=[RF.UniformRowLength(2)]),
    "uniform_outer": RF(tf.int64, value_key="v",
                        partitions=[RF.UniformRowLength(1), RF.RowLengths("len")]),
    "nested": RF(tf.int64, value_key="v",
                 partitions=[RF.RowLengths("len2"), RF.RowLengths("len")]),
}
batch = tf.io.parse_example([e1, e2, e3], {k: f for k, f in feats.items() if k != "uniform"})
pair = tf.io.parse_example([e1, e2], {"uniform": feats["uniform"]})
single = tf.io.parse_single_example(e1, feats)
with tf.Session() as sess:
    out = sess.run({"batch": batch, "pair": pair, "single": single})
result = {f"{a}.{k}": (v.to_list() if hasattr(v, "to_list") else v.tolist())
          for a, d in out.items() for k, v in d.items()}
result["ranks"] = {k: v.ragged_rank for k, v in batch.items()}
'''

# TensorFlow 2.21's answers to PARTITIONS_PROGRAM.
PARTITIONS_WANT = {
    "batch.splits": [[[1, 2, 3], [4]], [[], [5, 6]], []],
    "batch.starts": [[[1], [2, 3, 4]], [[], [5, 6]], [[7]]],
    "batch.limits": [[[1], [2, 3, 4]], [[5], [6]], [[]]],
    "batch.ids": [[[1, 2], [], [3, 4]], [[], [5, 6]], [[7]]],
    "batch.uniform_outer": [[[[1, 2]], [[]], [[3, 4]]], [[[5, 6]]], [[[7]]]],
    "batch.nested": [[[[1, 2]], [[], [3, 4]]], [[[5, 6]]], [[[7]]]],
    "pair.uniform": [[[1, 2], [3, 4]], [[5, 6]]],
    "single.splits": [[1, 2, 3], [4]], "single.starts": [[1], [2, 3, 4]],
    "single.limits": [[1], [2, 3, 4]], "single.ids": [[1, 2], [], [3, 4]],
    "single.uniform": [[1, 2], [3, 4]], "single.uniform_outer": [[[1, 2]], [[]], [[3, 4]]],
    "single.nested": [[[1, 2]], [[], [3, 4]]],
    "ranks": {"splits": 2, "starts": 2, "limits": 2, "ids": 2, "uniform_outer": 3,
              "nested": 3},
}


def test_row_partitions():
    scope = {"tf": tf}
    with tf.Graph().as_default():
        exec(PARTITIONS_PROGRAM, scope)  # noqa: S102 - the program the oracle test runs too
    assert scope["result"] == PARTITIONS_WANT


@pytest.mark.oracle
def test_row_partitions_against_tensorflow():
    ours, theirs = oracle.run_both(PARTITIONS_PROGRAM, tf)
    assert ours == theirs == PARTITIONS_WANT
