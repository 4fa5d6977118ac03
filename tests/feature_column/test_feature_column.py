"""tf.feature_column: columns, input_layer, linear_model and parse specs, checked against
the values, variable names and specs TensorFlow 2.21's tf.compat.v1.feature_column gives
(recorded below; compared live when the oracle is installed)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_both

DENSE_PROGRAM = r"""
fc = tf.feature_column
features = {"a": tf.constant([[1.], [2.], [0.5]]), "b": tf.constant(["x", "y", "q"]),
            "h": tf.constant(["x", "y", "q"]),
            "c": tf.constant([[3., 4.], [5., 6.], [7., 8.]]),
            "d": tf.constant([0, 2, 1], tf.int64),
            "e": tf.constant([[1.0], [4.0], [9.0]])}
a = fc.numeric_column("a")
bucket = fc.bucketized_column(a, [0.75, 1.5])
vocab = fc.categorical_column_with_vocabulary_list("b", ["x", "y", "z"], num_oov_buckets=1)
ident = fc.categorical_column_with_identity("d", 3)
hashed = fc.categorical_column_with_hash_bucket("h", 5)
cross = fc.crossed_column(["b", bucket], 7)
cols = [a, fc.numeric_column("c", shape=2), bucket, fc.indicator_column(vocab),
        fc.embedding_column(ident, 2, initializer=tf.ones_initializer()),
        fc.indicator_column(hashed), fc.indicator_column(cross),
        fc.numeric_column("e", normalizer_fn=lambda x: tf.sqrt(x))]
net = fc.input_layer(features, cols)
lin_cols = [a, bucket, vocab, ident, cross, fc.numeric_column("c", shape=2)]
lin = fc.linear_model(features, lin_cols, units=2)
spec = fc.make_parse_example_spec(cols)
assigns = []
for i, v in enumerate(sorted(tf.global_variables(), key=lambda v: v.name)):
    n = int(np.prod(v.shape.as_list()))
    assigns.append(tf.assign(v, np.arange(n, dtype=np.float32).reshape(v.shape.as_list())
                             * 0.1 + i))
result = {"vars": [[v.name, v.shape.as_list()] for v in sorted(tf.global_variables(),
                                                                key=lambda v: v.name)],
          "spec": sorted([k, type(v).__name__, list(getattr(v, "shape", []) or [])]
                         for k, v in spec.items()),
          "net_shape": net.shape.as_list(), "lin_shape": lin.shape.as_list(),
          "cols": sorted(c.name for c in cols)}
with tf.Session() as s:
    s.run([tf.global_variables_initializer(), tf.tables_initializer()])
    result["net0"] = s.run(net).tolist()
    s.run(assigns)
    result["net"] = s.run(net).tolist()
    result["lin"] = s.run(lin).tolist()
"""

SPARSE_PROGRAM = r"""
import os, tempfile
fc = tf.feature_column
vocab_file = os.path.join(tempfile.mkdtemp(), "vocab.txt")
with open(vocab_file, "w") as f:
    f.write("red\ngreen\nblue\n")
features = {
    "tags": tf.SparseTensor([[0, 0], [0, 1], [1, 0], [2, 0], [2, 1], [2, 2]],
                            tf.constant(["red", "blue", "green", "red", "red", "pink"]), [3, 3]),
    "ids": tf.SparseTensor([[0, 0], [1, 0], [1, 1], [2, 0]],
                           tf.constant([1, 3, 0, 7], tf.int64), [3, 2]),
    "w": tf.SparseTensor([[0, 0], [1, 0], [1, 1], [2, 0]],
                         tf.constant([0.5, 2.0, 1.0, 3.0]), [3, 2]),
    "n": tf.constant([3, -1, 2], tf.int64),
}
tags = fc.categorical_column_with_vocabulary_file("tags", vocab_file, num_oov_buckets=2)
ids = fc.categorical_column_with_identity("ids", 5, default_value=4)
weighted = fc.weighted_categorical_column(ids, "w")
n = fc.categorical_column_with_identity("n", 4)
cols = [fc.indicator_column(tags), fc.indicator_column(weighted),
        fc.embedding_column(tags, 3, combiner="sqrtn"),
        fc.embedding_column(weighted, 2, combiner="sum"),
        fc.indicator_column(n)]
net = fc.input_layer(features, cols)
lin = fc.linear_model(features, [tags, weighted, n], sparse_combiner="mean")
assigns = []
for i, v in enumerate(sorted(tf.global_variables(), key=lambda v: v.name)):
    k = int(np.prod(v.shape.as_list()))
    assigns.append(tf.assign(v, np.arange(k, dtype=np.float32).reshape(v.shape.as_list())
                             * 0.25 + i))
spec = fc.make_parse_example_spec(cols)
result = {"vars": [[v.name, v.shape.as_list()] for v in sorted(tf.global_variables(),
                                                                key=lambda v: v.name)],
          "spec": sorted([k, type(v).__name__, str(v.dtype.name)] for k, v in spec.items())}
with tf.Session() as s:
    s.run([tf.global_variables_initializer(), tf.tables_initializer()])
    s.run(assigns)
    result["net"] = np.round(s.run(net), 5).tolist()
    result["lin"] = np.round(s.run(lin), 5).tolist()
"""

# What TensorFlow 2.21 gives for the two programs.
DENSE_EXPECTED = {
 'cols': ['a', 'a_bucketized', 'a_bucketized_X_b_indicator', 'b_indicator', 'c',
          'd_embedding', 'e', 'h_indicator'],
 'lin': [[66.0, 67.29999542236328], [92.4000015258789, 94.20000457763672],
         [114.29999542236328, 116.35000610351562]],
 'lin_shape': [3, 2],
 'net': [[1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 3.0, 4.0,
          0.0, 0.10000000149011612, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0],
         [2.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 5.0, 6.0,
          0.4000000059604645, 0.5, 2.0, 1.0, 0.0, 0.0, 0.0, 0.0],
         [0.5, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 7.0, 8.0,
          0.20000000298023224, 0.30000001192092896, 3.0, 0.0, 0.0, 0.0, 1.0, 0.0]],
 'net0': [[1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 3.0, 4.0,
           1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0],
          [2.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 5.0, 6.0,
           1.0, 1.0, 2.0, 1.0, 0.0, 0.0, 0.0, 0.0],
          [0.5, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 7.0, 8.0,
           1.0, 1.0, 3.0, 0.0, 0.0, 0.0, 1.0, 0.0]],
 'net_shape': [3, 25],
 'spec': [['a', 'FixedLenFeature', [1]], ['b', 'VarLenFeature', []],
          ['c', 'FixedLenFeature', [2]], ['d', 'VarLenFeature', []],
          ['e', 'FixedLenFeature', [1]], ['h', 'VarLenFeature', []]],
 'vars': [['input_layer/d_embedding/embedding_weights:0', [3, 2]],
          ['linear_model/a/weights:0', [1, 2]],
          ['linear_model/a_bucketized/weights:0', [3, 2]],
          ['linear_model/a_bucketized_X_b/weights:0', [7, 2]],
          ['linear_model/b/weights:0', [4, 2]], ['linear_model/bias_weights:0', [2]],
          ['linear_model/c/weights:0', [2, 2]], ['linear_model/d/weights:0', [3, 2]]]}

SPARSE_EXPECTED = {'lin': [[15.25], [10.75], [15.75]],
 'net': [[0.25, 0.375, 0.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.474869966506958,
          2.828429937362671, 3.1819798946380615, 1.0, 0.0, 1.0, 0.0, 0.0],
         [3.0, 3.75, 1.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.75, 2.0, 2.25, 0.0, 1.0,
          0.0, 0.0, 0.0],
         [6.0, 6.75, 0.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0, 1.0, 0.0, 3.031090021133423,
          3.464099884033203, 3.8971099853515625, 2.0, 0.0, 0.0, 1.0, 0.0]],
 'spec': [['ids', 'VarLenFeature', 'int64'], ['n', 'VarLenFeature', 'int64'],
          ['tags', 'VarLenFeature', 'string'], ['w', 'VarLenFeature', 'float32']],
 'vars': [['input_layer/ids_weighted_by_w_embedding/embedding_weights:0', [5, 2]],
          ['input_layer/tags_embedding/embedding_weights:0', [5, 3]],
          ['linear_model/bias_weights:0', [1]],
          ['linear_model/ids_weighted_by_w/weights:0', [5, 1]],
          ['linear_model/n/weights:0', [4, 1]], ['linear_model/tags/weights:0', [5, 1]]]}


def _run(program: str) -> dict:
    ns = {"tf": tf, "np": np}
    with tf.Graph().as_default():
        exec(program, ns)  # noqa: S102 - the shared test program
    return ns["result"]


@pytest.mark.parametrize("program, expected", [(DENSE_PROGRAM, DENSE_EXPECTED),
                                               (SPARSE_PROGRAM, SPARSE_EXPECTED)],
                         ids=["dense", "sparse"])
def test_columns_match_tensorflow_values(program, expected):
    got = _run(program)
    assert set(got) == set(expected)
    for key in expected:
        if key in ("net", "net0", "lin"):
            np.testing.assert_allclose(got[key], expected[key], rtol=1e-5, atol=1e-5)
        else:
            assert got[key] == expected[key], key


@pytest.mark.oracle
@pytest.mark.parametrize("program", [DENSE_PROGRAM, SPARSE_PROGRAM], ids=["dense", "sparse"])
def test_columns_match_tensorflow_live(program):
    ours, theirs = run_both(program, tf, timeout=180)
    assert set(ours) == set(theirs)
    for key in theirs:
        if key in ("net", "net0", "lin"):
            np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-5, atol=1e-5)
        else:
            assert ours[key] == theirs[key], key


fc = tf.feature_column


@pytest.mark.parametrize("build, error, match", [
    (lambda: fc.numeric_column("a", shape=(0,)), ValueError, "greater than 0"),
    (lambda: fc.numeric_column("a", dtype=tf.string), ValueError, "convertible to float"),
    (lambda: fc.numeric_column(3), ValueError, "key must be a string"),
    (lambda: fc.bucketized_column(fc.numeric_column("a"), [2.0, 1.0]), ValueError, "sorted"),
    (lambda: fc.bucketized_column("a", [1.0]), ValueError, "numeric_column"),
    (lambda: fc.categorical_column_with_vocabulary_list("k", ["a", "a"]), ValueError,
     "Duplicate keys"),
    (lambda: fc.categorical_column_with_vocabulary_list("k", ["a"], default_value=0,
                                                        num_oov_buckets=1), ValueError,
     "both num_oov_buckets and default_value"),
    (lambda: fc.categorical_column_with_identity("k", 0), ValueError, "num_buckets"),
    (lambda: fc.categorical_column_with_hash_bucket("k", 0), ValueError, "at least 1"),
    (lambda: fc.crossed_column(["a"], 5), ValueError, "length > 1"),
    (lambda: fc.crossed_column(["a", fc.categorical_column_with_hash_bucket("b", 3)], 5),
     ValueError, "not supported for crossing"),
    (lambda: fc.indicator_column(fc.numeric_column("a")), ValueError, "CategoricalColumn"),
    (lambda: fc.embedding_column(fc.categorical_column_with_identity("k", 3), 0), ValueError,
     "Invalid dimension"),
    (lambda: fc.input_layer({"k": [[1]]}, [fc.categorical_column_with_identity("k", 3)]),
     ValueError, "embedding_column or indicator_column"),
    (lambda: fc.input_layer({"a": [[1.0]]}, [fc.numeric_column("a"), fc.numeric_column("a")]),
     ValueError, "Duplicate feature column name"),
    (lambda: fc.input_layer({"a": [[1.0]]}, [fc.numeric_column("b")]), ValueError,
     "not in features dict: b"),
    (lambda: fc.make_parse_example_spec([fc.numeric_column("a"),
                                         fc.numeric_column("a", shape=2)]), ValueError,
     "different parse_spec"),
])
def test_column_errors(build, error, match):
    with tf.Graph().as_default():
        with pytest.raises(error, match=match):
            build()


def test_identity_out_of_range_fails_at_run_time():
    with tf.Graph().as_default():
        net = fc.input_layer({"k": tf.constant([1, 5], tf.int64)},
                             [fc.indicator_column(fc.categorical_column_with_identity("k", 3))])
        with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError,
                                              match="exceeds number of buckets"):
            s.run(net)


def test_parsed_examples_train_a_linear_and_an_embedding_model():
    rng = np.random.default_rng(1)
    colors = ["red", "green", "blue"]
    rows = [(float(rng.normal()), colors[i % 3]) for i in range(60)]
    target = {"red": 1.0, "green": -1.0, "blue": 0.0}
    serialized = [tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[x])),
        "color": tf.train.Feature(bytes_list=tf.train.BytesList(value=[c.encode()]))}))
        .SerializeToString() for x, c in rows]
    y = np.array([[2.0 * x + target[c]] for x, c in rows], np.float32)
    color = fc.categorical_column_with_vocabulary_list("color", colors)
    cols = [fc.numeric_column("x"), color]
    with tf.Graph().as_default():
        feats = tf.parse_example(tf.constant(serialized), fc.make_parse_example_spec(
            cols + [fc.embedding_column(color, 2)]))
        pred = fc.linear_model(feats, cols)
        emb = fc.input_layer(feats, [fc.embedding_column(color, 2)])
        loss = tf.reduce_mean(tf.square(pred - y)) + 0.0 * tf.reduce_sum(emb)
        step = tf.train.GradientDescentOptimizer(0.3).minimize(loss)
        with tf.Session() as s:
            s.run([tf.global_variables_initializer(), tf.tables_initializer()])
            first = s.run(loss)
            for _ in range(200):
                s.run(step)
            last = s.run(loss)
    assert first > 1.0 and last < 1e-3


def test_shared_embedding_columns_share_one_table():
    with tf.Graph().as_default():
        features = {"q": tf.constant([[0, 1], [2, -1]], tf.int64),
                    "d": tf.constant([1, 2], tf.int64)}
        q = fc.categorical_column_with_identity("q", 3)
        d = fc.categorical_column_with_identity("d", 3)
        cols = fc.shared_embedding_columns([q, d], 2, initializer=tf.ones_initializer())
        net = fc.input_layer(features, cols)
        names = [v.name for v in tf.global_variables()]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(tf.assign(tf.global_variables()[0],
                            np.arange(6, dtype=np.float32).reshape(3, 2)))
            got = s.run(net)
        with pytest.raises(ValueError, match="same number of buckets"):
            fc.shared_embedding_columns([q, fc.categorical_column_with_identity("e", 4)], 2)
    # TensorFlow 2.21's values, names and variable for the same program.
    assert [c.name for c in cols] == ["q_shared_embedding", "d_shared_embedding"]
    assert names == ["input_layer/d_q_shared_embedding/embedding_weights:0"]
    np.testing.assert_allclose(got, [[2.0, 3.0, 1.0, 2.0], [4.0, 5.0, 4.0, 5.0]])
