"""Sequence feature columns (tf.feature_column.sequence_*, tf.contrib.feature_column):
per-step values, sequence lengths and variable names against NumPy and against TensorFlow
2.21 (whose contrib layer lives on as tf_keras' SequenceFeatures; compared live when the
oracle is installed)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_both

fc = tf.feature_column
cfc = tf.contrib.feature_column

# The programs run under both; TensorFlow 2.x has contrib's layer as tf_keras'
# SequenceFeatures.
LAYER = r"""
if hasattr(tf, "contrib"):
    sequence_input_layer = tf.contrib.feature_column.sequence_input_layer
else:
    import tf_keras

    def sequence_input_layer(features, columns):
        name = tf.get_default_graph().unique_name("sequence_input_layer", mark_as_used=False)
        return tf_keras.experimental.SequenceFeatures(columns, name=name)(features)
"""

SEQUENCE_PROGRAM = LAYER + r"""
import os, tempfile
fc = tf.feature_column
vocab_file = os.path.join(tempfile.mkdtemp(), "vocab.txt")
with open(vocab_file, "w") as f:
    f.write("red\ngreen\nblue\n")
steps2 = [[0, 0], [0, 1], [0, 2], [1, 0], [3, 0], [3, 1]]  # lengths 3, 1, 0, 2
ids3 = [[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 2, 0], [0, 2, 1], [0, 2, 2], [1, 0, 0],
        [3, 0, 0], [3, 1, 0], [3, 1, 1]]
ids = tf.constant([1, 2, 3, 0, 4, 4, 2, 3, 1, 1], tf.int64)
features = {
    "n": tf.SparseTensor(steps2, [1., 2., 3., 4., 5., 6.], [4, 3]),
    "pair": tf.SparseTensor([[0, 0], [0, 1], [0, 2], [0, 3], [0, 4], [1, 0], [1, 1],
                             [3, 0], [3, 1], [3, 2]],
                            [1., 2., 3., 4., 5., 6., 7., 8., 9., 10.], [4, 6]),
    "pair3": tf.SparseTensor([[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 2, 1], [1, 0, 0],
                              [3, 0, 0], [3, 1, 1]], [1., 2., 3., 4., 5., 6., 7.], [4, 3, 2]),
    "e_mean": tf.SparseTensor(ids3, ids, [4, 3, 3]),
    "e_sqrtn": tf.SparseTensor(ids3, ids, [4, 3, 3]),
    "e_sum": tf.SparseTensor(ids3, ids, [4, 3, 3]),
    "ind3": tf.SparseTensor(ids3, ids, [4, 3, 3]),
    "words": tf.SparseTensor(steps2, ["a", "b", "zz", "c", "b", "a"], [4, 3]),
    "hashed": tf.SparseTensor(steps2, ["a", "b", "zz", "c", "b", "a"], [4, 3]),
    "colors": tf.SparseTensor(steps2, ["red", "blue", "pink", "green", "red", "red"], [4, 3]),
    "dense_ids": tf.constant([[1, 0, 2], [3, -1, -1], [-1, -1, -1], [4, 4, -1]], tf.int64),
    "other": tf.SparseTensor([[0, 0], [0, 2], [1, 0], [3, 0], [3, 1]], [1., 2., 3., 4., 5.],
                             [4, 3]),
}
ident = lambda key: fc.sequence_categorical_column_with_identity(key, 5)
ones = tf.ones_initializer()
words = fc.sequence_categorical_column_with_vocabulary_list("words", ["a", "b", "c"],
                                                            num_oov_buckets=2)
colors = fc.sequence_categorical_column_with_vocabulary_file("colors", vocab_file, 3,
                                                             default_value=0)
columns = [
    fc.sequence_numeric_column("n", normalizer_fn=lambda x: x * 2.),
    fc.sequence_numeric_column("pair", shape=(2,), default_value=-1.),
    fc.sequence_numeric_column("pair3", shape=2, default_value=0.5),
    fc.embedding_column(ident("e_mean"), 3, initializer=ones),
    fc.embedding_column(ident("e_sqrtn"), 3, combiner="sqrtn", initializer=ones),
    fc.embedding_column(ident("e_sum"), 3, combiner="sum", initializer=ones),
    fc.indicator_column(ident("ind3")),
    fc.indicator_column(words),
    fc.indicator_column(fc.sequence_categorical_column_with_hash_bucket("hashed", 7)),
    fc.embedding_column(colors, 2, initializer=ones),
    fc.indicator_column(ident("dense_ids")),
]
outputs = {c.name: sequence_input_layer(features, [c]) for c in columns}
both = sequence_input_layer(features, [fc.sequence_numeric_column("other"),
                                       fc.embedding_column(ident("e_mean"), 2)])
variables = sorted(tf.global_variables(), key=lambda v: v.name)
assigns = [tf.assign(v, np.arange(int(np.prod(v.shape.as_list())), dtype=np.float32).reshape(
    v.shape.as_list()) * 0.1 + i) for i, v in enumerate(variables)]
result = {"vars": [[v.name, v.shape.as_list()] for v in variables],
          "static": {k: [o.shape.as_list(), o.dtype.name, n.dtype.name]
                     for k, (o, n) in outputs.items()}}
with tf.Session() as s:
    s.run([tf.global_variables_initializer(), tf.tables_initializer()])
    s.run(assigns)
    values = s.run(outputs)
    result["values"] = {k: o.tolist() for k, (o, _) in values.items()}
    result["lengths"] = {k: n.tolist() for k, (_, n) in values.items()}
    result["both"] = [a.tolist() for a in s.run(both)]
"""

# Recorded from TensorFlow 2.21 (the program above; the embedding tables set to
# arange * 0.1 + their index in name order).
EXPECTED_VARS = [
    ["sequence_input_layer_11/e_mean_embedding/embedding_weights:0", [5, 2]],
    ["sequence_input_layer_3/e_mean_embedding/embedding_weights:0", [5, 3]],
    ["sequence_input_layer_4/e_sqrtn_embedding/embedding_weights:0", [5, 3]],
    ["sequence_input_layer_5/e_sum_embedding/embedding_weights:0", [5, 3]],
    ["sequence_input_layer_9/colors_embedding/embedding_weights:0", [3, 2]]]
EXPECTED_WIDTHS = {"n": 1, "pair": 2, "pair3": 2, "e_mean_embedding": 3,
                   "e_sqrtn_embedding": 3, "e_sum_embedding": 3, "ind3_indicator": 5,
                   "words_indicator": 5, "hashed_indicator": 7, "colors_embedding": 2,
                   "dense_ids_indicator": 5}
HASHED_BUCKETS = [[5, 2, 1], [5], [], [2, 5]]  # "a" -> 5, "b" -> 2, "zz" -> 1, "c" -> 5


def _run(program: str) -> dict:
    ns = {"tf": tf, "np": np}
    with tf.Graph().as_default():
        exec(program, ns)  # noqa: S102 - the shared test program
    return ns["result"]


def _steps(indices, values, shape, per_step=1, default=0.0):
    """NumPy: a rank-2 sparse feature's values grouped `per_step` per step."""
    dense = np.full(shape, default, np.float32)
    for (r, c), v in zip(indices, values, strict=True):
        dense[r, c] = v
    return dense.reshape(shape[0], -1, per_step)


def _multi_hot(per_step, n):
    """NumPy: [batch][step] lists of ids -> counts [batch, max_steps, n]."""
    steps = max(len(row) for row in per_step)
    out = np.zeros((len(per_step), steps, n), np.float32)
    for b, row in enumerate(per_step):
        for t, ids in enumerate(row):
            for i in ids:
                out[b, t, i] += 1
    return out


STEP_IDS = [[[1, 2], [3], [0, 4, 4]], [[2]], [], [[3], [1, 1]]]  # ids3 / ids per step


def test_sequence_columns_match_numpy():
    got = _run(SEQUENCE_PROGRAM)
    assert got["vars"] == EXPECTED_VARS
    assert got["static"] == {k: [[4, 3, w], "float32", "int64"]
                             for k, w in EXPECTED_WIDTHS.items()}
    assert got["lengths"] == {k: [3, 1, 0, 2] for k in EXPECTED_WIDTHS}
    v = {k: np.array(a) for k, a in got["values"].items()}
    steps2 = [[0, 0], [0, 1], [0, 2], [1, 0], [3, 0], [3, 1]]
    np.testing.assert_allclose(v["n"], _steps(steps2, [2., 4., 6., 8., 10., 12.], (4, 3)))
    pair_idx = [[0, 0], [0, 1], [0, 2], [0, 3], [0, 4], [1, 0], [1, 1], [3, 0], [3, 1],
                [3, 2]]
    np.testing.assert_allclose(v["pair"], _steps(pair_idx, np.arange(1., 11.), (4, 6), 2,
                                                 default=-1.0))
    pair3 = np.full((4, 3, 2), 0.5, np.float32)
    for (b, t, j), x in zip([[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 2, 1], [1, 0, 0],
                             [3, 0, 0], [3, 1, 1]], range(1, 8), strict=True):
        pair3[b, t, j] = x
    np.testing.assert_allclose(v["pair3"], pair3)
    # Embeddings combine each step's ids: table i (name order) = arange * 0.1 + i.
    for name, index, combine in [("e_mean", 1, lambda e: e.mean(0)),
                                 ("e_sqrtn", 2, lambda e: e.sum(0) / np.sqrt(len(e))),
                                 ("e_sum", 3, lambda e: e.sum(0))]:
        table = np.arange(15, dtype=np.float32).reshape(5, 3) * 0.1 + index
        want = np.zeros((4, 3, 3), np.float32)
        for b, row in enumerate(STEP_IDS):
            for t, ids in enumerate(row):
                want[b, t] = combine(table[ids])
        np.testing.assert_allclose(v[f"{name}_embedding"], want, rtol=1e-6, err_msg=name)
    np.testing.assert_allclose(v["ind3_indicator"], _multi_hot(STEP_IDS, 5))
    # "a", "b", "zz" (an OOV bucket), "c", "b", "a"
    np.testing.assert_allclose(v["words_indicator"][:, :, :3], _multi_hot(
        [[[0], [1], []], [[2]], [], [[1], [0]]], 3))
    assert v["words_indicator"][0, 2, 3:].sum() == 1
    np.testing.assert_allclose(v["hashed_indicator"], _multi_hot(
        [[[i] for i in row] for row in HASHED_BUCKETS], 7))
    colors = np.arange(6, dtype=np.float32).reshape(3, 2) * 0.1 + 4  # pink -> default 0
    want = np.zeros((4, 3, 2), np.float32)
    for b, row in enumerate([[0, 2, 0], [1], [], [0, 0]]):
        want[b, :len(row)] = colors[row]
    np.testing.assert_allclose(v["colors_embedding"], want, rtol=1e-6)
    np.testing.assert_allclose(v["dense_ids_indicator"], _multi_hot(
        [[[1], [0], [2]], [[3]], [], [[4], [4]]], 5))
    # Two columns: concatenated in name order (e_mean_embedding, other), one length.
    table = np.arange(10, dtype=np.float32).reshape(5, 2) * 0.1
    emb = np.zeros((4, 3, 2), np.float32)
    for b, row in enumerate(STEP_IDS):
        for t, ids in enumerate(row):
            emb[b, t] = table[ids].mean(0)
    other = _steps([[0, 0], [0, 2], [1, 0], [3, 0], [3, 1]], [1., 2., 3., 4., 5.], (4, 3))
    np.testing.assert_allclose(got["both"][0], np.concatenate([emb, other], -1), rtol=1e-6)
    assert got["both"][1] == [3, 1, 0, 2]


@pytest.mark.oracle
def test_sequence_columns_match_tensorflow_live():
    ours, theirs = run_both(SEQUENCE_PROGRAM, tf, timeout=180)
    assert set(ours) == set(theirs)
    for key in ("vars", "static", "lengths"):
        assert ours[key] == theirs[key], key
    for name in theirs["values"]:
        np.testing.assert_allclose(ours["values"][name], theirs["values"][name], rtol=1e-6,
                                   atol=1e-6, err_msg=name)
    np.testing.assert_allclose(ours["both"][0], theirs["both"][0], rtol=1e-6)
    assert ours["both"][1] == theirs["both"][1]


EDGE_PROGRAM = LAYER + r"""
fc = tf.feature_column
empty = tf.SparseTensor(np.zeros((0, 2), np.int64), np.zeros(0, np.float32), [2, 3])
empty_ids = tf.SparseTensor(np.zeros((0, 2), np.int64), np.zeros(0, np.int64), [2, 3])
ints = tf.SparseTensor([[0, 0], [1, 1]], tf.constant([3, 4], tf.int64), [2, 2])
feats = {"e": empty, "ei": empty_ids, "k": ints, "kv": ints}
ident = fc.sequence_categorical_column_with_identity("ei", 3)
kv = fc.sequence_categorical_column_with_vocabulary_list("kv", [4, 3, 9])
k = fc.sequence_numeric_column("k", dtype=tf.int64, default_value=-7)
outs = {
    "e": sequence_input_layer(feats, [fc.sequence_numeric_column("e")]),
    "ei": sequence_input_layer(feats, [fc.indicator_column(ident)]),
    "ee": sequence_input_layer(feats, [fc.embedding_column(ident, 2)]),
    "k": sequence_input_layer(feats, [k]),
    "kv": sequence_input_layer(feats, [fc.indicator_column(kv)]),
}
result = {}
with tf.Session() as s:
    s.run([tf.global_variables_initializer(), tf.tables_initializer()])
    for k, (o, n) in outs.items():
        a, b = s.run([o, n])
        result[k] = [a.tolist(), b.tolist(), str(a.dtype), list(a.shape)]
"""
EDGE_EXPECTED = {  # recorded from TensorFlow 2.21
    "e": [[[[0.0]] * 3] * 2, [0, 0], "float32", [2, 3, 1]],
    "ei": [[[[0.0] * 3] * 3] * 2, [0, 0], "float32", [2, 3, 3]],
    "ee": [[[[0.0] * 2] * 3] * 2, [0, 0], "float32", [2, 3, 2]],
    "k": [[[[3], [-7]], [[-7], [4]]], [1, 2], "int64", [2, 2, 1]],
    "kv": [[[[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]], [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]], [1, 2],
           "float32", [2, 2, 3]]}


def test_empty_features_and_integer_values():
    assert _run(EDGE_PROGRAM) == EDGE_EXPECTED


@pytest.mark.oracle
def test_empty_features_and_integer_values_live():
    ours, theirs = run_both(EDGE_PROGRAM, tf, timeout=180)
    assert ours == theirs


def _ids(key, n=4):
    return fc.sequence_categorical_column_with_identity(key, n)


FEATURES = {"a": tf.SparseTensorValue([[0, 0], [0, 1], [1, 0]], np.array([1, 2, 3], np.int64),
                                      [2, 2]),
            "b": tf.SparseTensorValue([[0, 1], [1, 0]], np.array([0, 1], np.int64), [2, 2]),
            "c": tf.SparseTensorValue([[0, 0], [1, 0], [1, 1]], np.array([0, 1, 2], np.int64),
                                      [2, 2]),
            "x": tf.SparseTensorValue([[0, 0], [0, 1], [1, 0]], [1., 2., 3.], [2, 2])}


def test_variable_names_collections_and_trainable():
    with tf.Graph().as_default():
        cols = [fc.embedding_column(_ids("b"), 2), fc.embedding_column(_ids("a"), 3)]
        out, length = cfc.sequence_input_layer(FEATURES, cols, weight_collections=["mine"])
        assert [v.op.name for v in tf.global_variables()] == [
            "sequence_input_layer/a_embedding/embedding_weights",
            "sequence_input_layer/b_embedding/embedding_weights"]
        assert tf.get_collection("mine") == tf.global_variables()
        assert out.shape.as_list()[-1] == 5 and length.dtype == tf.int64
        cfc.sequence_input_layer(FEATURES, cols, trainable=False)
        assert [v.op.name for v in tf.global_variables()][2:] == [
            "sequence_input_layer_1/a_embedding/embedding_weights",
            "sequence_input_layer_1/b_embedding/embedding_weights"]
        assert len(tf.trainable_variables()) == 2


def test_shared_embeddings_over_sequence_columns():
    with tf.Graph().as_default():
        cols = fc.shared_embedding_columns([_ids("a"), _ids("b")], 2,
                                           initializer=tf.ones_initializer())
        out, length = cfc.sequence_input_layer(FEATURES, cols)
        assert [v.op.name for v in tf.global_variables()] == [
            "sequence_input_layer/a_b_shared_embedding/embedding_weights"]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got, n = s.run([out, length])
    np.testing.assert_allclose(got, [[[1, 1, 0, 0], [1, 1, 1, 1]], [[1, 1, 1, 1], [0, 0, 0, 0]]])
    assert n.tolist() == [2, 1]


def test_embedding_gradient_counts_each_steps_ids():
    with tf.Graph().as_default():
        col = fc.embedding_column(_ids("a"), 2, combiner="sum")
        out, _ = cfc.sequence_input_layer(FEATURES, [col])
        (table,) = tf.global_variables()
        (grad,) = tf.gradients(tf.reduce_sum(out), [table])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            g = s.run(tf.convert_to_tensor(grad))
    np.testing.assert_allclose(g, [[0, 0], [1, 1], [1, 1], [1, 1]])


def test_parse_spec_and_parsed_sequence_examples():
    num = fc.sequence_numeric_column("x", shape=2)
    word = fc.sequence_categorical_column_with_vocabulary_list("w", ["a", "b"])
    cols = [num, fc.indicator_column(word)]
    spec = fc.make_parse_example_spec(cols)
    assert spec == {"x": tf.VarLenFeature(tf.float32), "w": tf.VarLenFeature(tf.string)}
    lists = {"x": tf.train.FeatureList(feature=[
                 tf.train.Feature(float_list=tf.train.FloatList(value=v))
                 for v in ([1., 2.], [3., 4.], [5., 6.])]),
             "w": tf.train.FeatureList(feature=[
                 tf.train.Feature(bytes_list=tf.train.BytesList(value=[w]))
                 for w in (b"b", b"a", b"zz")])}
    example = tf.train.SequenceExample(
        feature_lists=tf.train.FeatureLists(feature_list=lists)).SerializeToString()
    with tf.Graph().as_default():
        _, seq = tf.parse_single_sequence_example(tf.constant(example),
                                                  sequence_features=spec)
        batch = {k: tf.sparse_reshape(v, tf.concat([[1], tf.shape(v, out_type=tf.int64)], 0))
                 for k, v in seq.items()}
        # A parsed [steps, n] feature, batched: [1, steps, n].
        out, length = cfc.sequence_input_layer(batch, cols)
        with tf.Session() as s:
            s.run(tf.tables_initializer())
            got, n = s.run([out, length])
    np.testing.assert_allclose(got, [[[0, 1, 1, 2], [1, 0, 3, 4], [0, 0, 5, 6]]])
    assert n.tolist() == [3]


def test_concatenate_context_input():
    ctx = np.array([[1., 2.], [3., 4.]], np.float32)
    seq = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    with tf.Graph().as_default():
        out = cfc.concatenate_context_input(tf.constant(ctx), tf.constant(seq))
        assert out.shape.as_list() == [2, 3, 4]
        with tf.Session() as s:
            got = s.run(out)
    np.testing.assert_array_equal(got, np.concatenate(
        [seq, np.repeat(ctx[:, None], 3, axis=1)], -1))


def test_contrib_namespace():
    for name in ("sequence_numeric_column", "sequence_categorical_column_with_identity",
                 "sequence_categorical_column_with_hash_bucket",
                 "sequence_categorical_column_with_vocabulary_list",
                 "sequence_categorical_column_with_vocabulary_file"):
        assert getattr(cfc, name) is getattr(fc, name)
    assert tf.compat.v1.feature_column.sequence_numeric_column is fc.sequence_numeric_column


SEQ_MESSAGE = ("All feature_columns must be of type _SequenceDenseColumn. You can wrap a "
               "sequence_categorical_column with an embedding_column or indicator_column.")


@pytest.mark.parametrize("build, error, match", [
    (lambda: cfc.sequence_input_layer(FEATURES, [fc.numeric_column("x")]), ValueError,
     SEQ_MESSAGE),
    (lambda: cfc.sequence_input_layer(FEATURES, [_ids("a")]), ValueError, SEQ_MESSAGE),
    (lambda: cfc.sequence_input_layer(FEATURES, [fc.embedding_column(
        fc.categorical_column_with_identity("a", 4), 2)]), ValueError,
     "In embedding_column: a_embedding. categorical_column must be of type "
     "_SequenceCategoricalColumn to use sequence_input_layer"),
    (lambda: cfc.sequence_input_layer(FEATURES, [fc.indicator_column(
        fc.categorical_column_with_identity("a", 4))]), ValueError,
     "In indicator_column: a_indicator. categorical_column must be of type "
     "_SequenceCategoricalColumn"),
    (lambda: fc.input_layer(FEATURES, [fc.embedding_column(_ids("a"), 2)]), ValueError,
     "In embedding_column: a_embedding. categorical_column must not be of type "
     "_SequenceCategoricalColumn. Suggested fix A: If you wish to use input_layer"),
    (lambda: fc.input_layer(FEATURES, [fc.indicator_column(_ids("a"))]), ValueError,
     "In indicator_column: a_indicator. categorical_column must not be"),
    (lambda: fc.input_layer(FEATURES, [fc.sequence_numeric_column("x")]), ValueError,
     "Items of feature_columns must be a _DenseColumn"),
    (lambda: cfc.sequence_input_layer({"x": [[1., 2.]]}, [fc.sequence_numeric_column("x")]),
     TypeError, "Input must be a SparseTensor"),
    (lambda: cfc.sequence_input_layer(
        {"x": FEATURES["x"], "y": tf.SparseTensorValue([[0, 0]], [1.], [3, 2])},
        [fc.sequence_numeric_column("x"), fc.sequence_numeric_column("y")]), ValueError,
     r"Batch size \(first dimension\) of each feature must be same. Batch size of columns "
     r"\(x, y\): \(2, 3\)"),
    (lambda: fc.sequence_numeric_column("x", shape=(0,)), ValueError, "greater than 0"),
    (lambda: fc.sequence_numeric_column("x", normalizer_fn=3), TypeError, "callable"),
    (lambda: fc.sequence_categorical_column_with_identity("a", 0), ValueError, "num_buckets"),
    (lambda: fc.sequence_categorical_column_with_hash_bucket("a", 0), ValueError,
     "at least 1"),
    (lambda: fc.sequence_categorical_column_with_vocabulary_list("a", ["x", "x"]),
     ValueError, "Duplicate keys"),
    (lambda: cfc.concatenate_context_input(tf.constant([1., 2.]), tf.zeros([2, 3, 2])),
     ValueError, "context_input must have rank 2"),
    (lambda: cfc.concatenate_context_input(tf.zeros([2, 2]), tf.zeros([2, 3])), ValueError,
     "sequence_input must have rank 3"),
    (lambda: cfc.concatenate_context_input(tf.constant([[1, 2]]), tf.zeros([1, 3, 2])),
     TypeError, "context_input must have dtype float32; got <dtype: 'int32'>"),
])
def test_errors(build, error, match):
    with tf.Graph().as_default():
        with pytest.raises(error, match=match):
            build()


def test_unequal_sequence_lengths_fail_at_run_time():
    with tf.Graph().as_default():
        out, length = cfc.sequence_input_layer(FEATURES, [
            fc.sequence_numeric_column("x"), fc.indicator_column(_ids("c"))])
        with tf.Session() as s:
            s.run(out)  # the values do not wait for the check
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                s.run(length)
    assert "sequence_input_layer/assert_all_equal/assert_equal_1/Assert" in str(info.value)
    assert "Condition x == y did not hold element-wise" in str(info.value)
    assert "sequence_input_layer/c_indicator/sequence_length:0" in str(info.value)


def test_feeds_dynamic_rnn_with_its_sequence_length():
    with tf.Graph().as_default():
        cols = [fc.embedding_column(_ids("a"), 3), fc.sequence_numeric_column("x")]
        out, length = cfc.sequence_input_layer(FEATURES, cols)
        ctx = cfc.concatenate_context_input(tf.constant([[1.], [2.]]), out)
        rnn, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.GRUCell(4), ctx, sequence_length=length,
                                   dtype=tf.float32)
        assert rnn.shape.as_list() == [2, 2, 4]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got = s.run(rnn)
    assert np.abs(got[0]).sum() > 0 and np.abs(got[1, 0]).sum() > 0
    np.testing.assert_array_equal(got[1, 1], 0)  # past example 1's one step
