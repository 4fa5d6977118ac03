"""tf.contrib.estimator.RNNClassifier / RNNEstimator over sequence feature columns: they
learn to read variable-length sequences (the sign of the sum of a sequence; a regression of
its last value plus a context feature), keep TF1's "rnn/" variable names, and check their
arguments."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf

fc = tf.feature_column
RNG = np.random.default_rng(0)
N, T = 400, 6
X = RNG.normal(size=(N, T)).astype(np.float32)
LENGTHS = RNG.integers(2, T + 1, size=N)
CONTEXT = RNG.normal(size=(N, 1)).astype(np.float32)
Y_SIGN = np.array([X[i, :n].sum() > 0 for i, n in enumerate(LENGTHS)], np.int64)
Y_LAST = np.array([[X[i, n - 1]] for i, n in enumerate(LENGTHS)], np.float32) + CONTEXT


def _input(y, lo, hi, epochs, shuffle):
    def input_fn():
        def gen():
            for i in range(lo, hi):
                yield {"tok": X[i, :LENGTHS[i]], "ctx": CONTEXT[i]}, y[i]

        shapes = ({"tok": tf.TensorShape([None]), "ctx": tf.TensorShape([1])},
                  tf.TensorShape(y.shape[1:]))
        ds = tf.data.Dataset.from_generator(
            gen, ({"tok": tf.float32, "ctx": tf.float32}, tf.as_dtype(y.dtype)), shapes)
        if shuffle:
            ds = ds.shuffle(N, seed=1)
        ds = ds.repeat(epochs).padded_batch(40, ({"tok": [None], "ctx": [1]}, list(y.shape[1:])))

        def to_sparse(features, label):
            t = features["tok"]
            mask = tf.sequence_mask(tf.reduce_sum(tf.cast(tf.not_equal(t, 0.0), tf.int32), 1),
                                    tf.shape(t)[1])
            idx = tf.where(mask)
            seq = tf.SparseTensor(idx, tf.gather_nd(t, idx), tf.shape(t, out_type=tf.int64))
            return {"tok": seq, "ctx": features["ctx"]}, label
        return ds.map(to_sparse)
    return input_fn


def test_rnn_classifier_learns_the_sign_of_a_sum(tmp_path):
    est = tf.contrib.estimator.RNNClassifier(
        [fc.sequence_numeric_column("tok")], num_units=[16], cell_type="gru",
        model_dir=str(tmp_path), optimizer=tf.train.AdamOptimizer(0.02))
    est.train(_input(Y_SIGN, 0, 300, None, True), steps=300)
    result = est.evaluate(_input(Y_SIGN, 300, N, 1, False))
    assert result["accuracy"] > 0.9, result
    names = set(est.get_variable_names())
    assert {"rnn/logits/kernel", "rnn/rnn/gru_cell/candidate/kernel"} <= names
    rows = list(est.predict(_input(Y_SIGN, 300, 305, 1, False)))
    assert len(rows) == 5 and {"class_ids", "probabilities", "logistic"} <= set(rows[0])


def test_rnn_estimator_regression_head_with_context(tmp_path):
    est = tf.contrib.estimator.RNNEstimator(
        tf.estimator.RegressionHead(), [fc.sequence_numeric_column("tok")],
        context_feature_columns=[fc.numeric_column("ctx")], num_units=[16, 8],
        cell_type="lstm", model_dir=str(tmp_path), optimizer=tf.train.AdamOptimizer(0.02))
    est.train(_input(Y_LAST, 0, 300, None, True), steps=400)
    loss = est.evaluate(_input(Y_LAST, 300, N, 1, False))["average_loss"]
    assert loss < 0.2 * float(np.var(Y_LAST)), loss
    assert any(n.startswith("rnn/rnn/multi_rnn_cell/cell_1/") for n in
               est.get_variable_names())


def test_rnn_estimator_argument_errors():
    col = [fc.sequence_numeric_column("tok")]
    head = tf.estimator.BinaryClassHead()
    with pytest.raises(ValueError, match="must not be empty"):
        tf.contrib.estimator.RNNEstimator(head, [], num_units=[4])
    with pytest.raises(ValueError, match="must not be specified"):
        tf.contrib.estimator.RNNEstimator(head, col, num_units=[4],
                                          rnn_cell_fn=lambda mode: None)
    with pytest.raises(ValueError, match="cell_type"):
        tf.contrib.estimator.RNNClassifier(col, num_units=[4], cell_type="nope")
    with pytest.raises(ValueError, match="num_units"):
        tf.contrib.estimator.RNNClassifier(col)
    with pytest.raises(TypeError, match="head must be a Head"):
        tf.contrib.estimator.RNNEstimator("head", col, num_units=[4])


def test_rnn_variable_names_with_embedding_columns():
    from tensorflux.estimator import rnn_estimator

    seq = fc.embedding_column(fc.sequence_categorical_column_with_identity("t", 5), 3)
    ctx = fc.embedding_column(fc.categorical_column_with_identity("c", 4), 2)
    logits_fn = rnn_estimator._rnn_logits_fn(
        [seq], [ctx], rnn_estimator._cell_fn([4], "lstm"), 2)
    with tf.Graph().as_default():
        tokens = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], tf.constant([1, 2, 3], tf.int64),
                                 [2, 2])
        logits = logits_fn({"t": tokens, "c": tf.constant([[1], [2]], tf.int64)}, "infer")
        assert logits.shape.as_list()[-1] == 2
        names = {v.op.name for v in tf.global_variables()}
    assert names == {"rnn/sequence_input_layer/t_embedding/embedding_weights",
                     "rnn/input_layer/c_embedding/embedding_weights",
                     "rnn/rnn/basic_lstm_cell/kernel", "rnn/rnn/basic_lstm_cell/bias",
                     "rnn/logits/kernel", "rnn/logits/bias"}
