"""tf.contrib.seq2seq.sequence_loss and legacy_seq2seq's losses against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf

RNG = np.random.default_rng(2)
B, T, C = 3, 4, 5
LOGITS = RNG.normal(size=(B, T, C)).astype(np.float32)
TARGETS = RNG.integers(0, C, size=(B, T)).astype(np.int32)
WEIGHTS = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0.5, 1, 1]], np.float32)


def _xent():
    shifted = LOGITS - LOGITS.max(-1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return -np.take_along_axis(logp, TARGETS[..., None], -1)[..., 0] * WEIGHTS


X = _xent()
NZ = (WEIGHTS != 0).astype(np.float32)


@pytest.mark.parametrize("flags, want", [
    ({}, X.sum() / WEIGHTS.sum()),
    ({"average_across_batch": False}, X.sum(1) / WEIGHTS.sum(1)),
    ({"average_across_timesteps": False}, X.sum(0) / WEIGHTS.sum(0)),
    ({"average_across_timesteps": False, "average_across_batch": False}, X),
    ({"average_across_timesteps": False, "average_across_batch": False,
      "sum_over_timesteps": True, "sum_over_batch": True}, X.sum() / NZ.sum()),
    ({"average_across_timesteps": False, "average_across_batch": False,
      "sum_over_timesteps": True}, X.sum(1) / NZ.sum(1)),
    ({"average_across_timesteps": False, "average_across_batch": False,
      "sum_over_batch": True}, X.sum(0) / NZ.sum(0)),
])
def test_sequence_loss(flags, want):
    with tf.Graph().as_default():
        loss = tf.contrib.seq2seq.sequence_loss(tf.constant(LOGITS), tf.constant(TARGETS),
                                                tf.constant(WEIGHTS), **flags)
        with tf.Session() as s:
            got = s.run(loss)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_sequence_loss_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="cannot be set to True at same time"):
            tf.contrib.seq2seq.sequence_loss(LOGITS, TARGETS, WEIGHTS,
                                             sum_over_timesteps=True)
        with pytest.raises(ValueError, match="Logits must be"):
            tf.contrib.seq2seq.sequence_loss(LOGITS[0], TARGETS, WEIGHTS)


def test_legacy_sequence_losses():
    with tf.Graph().as_default():
        logits = [tf.constant(LOGITS[:, t]) for t in range(T)]
        targets = [tf.constant(TARGETS[:, t]) for t in range(T)]
        weights = [tf.constant(WEIGHTS[:, t]) for t in range(T)]
        by_example = tf.contrib.legacy_seq2seq.sequence_loss_by_example(logits, targets,
                                                                        weights)
        total = tf.contrib.legacy_seq2seq.sequence_loss(logits, targets, weights)
        with tf.Session() as s:
            got, cost = s.run([by_example, total])
    np.testing.assert_allclose(got, X.sum(1) / WEIGHTS.sum(1), rtol=1e-5)
    np.testing.assert_allclose(cost, (X.sum(1) / WEIGHTS.sum(1)).sum() / B, rtol=1e-5)


def test_training_decoder_equals_dynamic_rnn():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 5, 4)).astype(np.float32)
    lens = np.array([5, 3, 0], np.int32)
    with tf.Graph().as_default():
        cell = tf.nn.rnn_cell.BasicLSTMCell(6)
        with tf.variable_scope("shared") as sc:
            ref, ref_state = tf.nn.dynamic_rnn(cell, tf.constant(x), sequence_length=lens,
                                               dtype=tf.float32)
        with tf.variable_scope(sc, reuse=True):
            helper = tf.contrib.seq2seq.TrainingHelper(tf.constant(x), lens)
            decoder = tf.contrib.seq2seq.BasicDecoder(cell, helper,
                                                      cell.zero_state(3, tf.float32))
            out, state, lengths = tf.contrib.seq2seq.dynamic_decode(
                decoder, impute_finished=True, scope="rnn")
        names = [v.op.name for v in tf.global_variables()]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            a, b, n, sa, sb = s.run([ref, out.rnn_output, lengths, ref_state, state])
    assert names == ["shared/rnn/basic_lstm_cell/kernel", "shared/rnn/basic_lstm_cell/bias"]
    np.testing.assert_allclose(b, a, atol=1e-6)
    np.testing.assert_allclose(sb.h, sa.h, atol=1e-6)
    np.testing.assert_allclose(sb.c, sa.c, atol=1e-6)
    np.testing.assert_array_equal(n, lens)


def test_greedy_decoder_stops_at_the_end_token_or_the_limit():
    vocab, end = 7, 2
    with tf.Graph().as_default():
        embedding = tf.get_variable("embedding", [vocab, 4])
        cell = tf.nn.rnn_cell.GRUCell(5)
        helper = tf.contrib.seq2seq.GreedyEmbeddingHelper(embedding, tf.fill([4], 1), end)
        decoder = tf.contrib.seq2seq.BasicDecoder(cell, helper, cell.zero_state(4, tf.float32),
                                                  output_layer=tf.layers.Dense(vocab))
        out, _, lengths = tf.contrib.seq2seq.dynamic_decode(decoder, maximum_iterations=6)
        names = sorted(v.op.name for v in tf.global_variables())
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            logits, ids, n = s.run([out.rnn_output, out.sample_id, lengths])
    assert logits.shape[:2] == ids.shape and logits.shape[2] == vocab and ids.shape[1] <= 6
    np.testing.assert_array_equal(ids, logits.argmax(-1))
    for row, length in zip(ids, n, strict=True):
        hits = np.flatnonzero(row == end)
        want = hits[0] + 1 if hits.size else ids.shape[1]
        assert length == min(want, 6)
    assert "decoder/dense/kernel" in names and "decoder/gru_cell/gates/kernel" in names
