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


@pytest.mark.parametrize("kind", ["luong", "luong_scaled", "bahdanau", "bahdanau_norm"])
def test_attention_mechanisms_against_numpy(kind):
    rng = np.random.default_rng(4)
    memory = rng.normal(size=(2, 4, 3)).astype(np.float32)
    query = rng.normal(size=(2, 5)).astype(np.float32)
    lengths = [4, 2]
    with tf.Graph().as_default():
        s2s = tf.contrib.seq2seq
        if kind.startswith("luong"):
            mech = s2s.LuongAttention(5, tf.constant(memory), lengths,
                                      scale=kind.endswith("scaled"))
        else:
            mech = s2s.BahdanauAttention(5, tf.constant(memory), lengths,
                                         normalize=kind.endswith("norm"))
        align, _ = mech(tf.constant(query), mech.initial_state(2, tf.float32))
        variables = {v.op.name.split("/")[-2 if "kernel" in v.op.name else -1]: v
                     for v in tf.global_variables()}
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got, values = s.run([align, {k: v for k, v in variables.items()}])
    mask = np.arange(4)[None, :] < np.array(lengths)[:, None]
    keys = (memory * mask[..., None]) @ values["memory_layer"]
    if kind.startswith("luong"):
        score = np.einsum("bd,btd->bt", query, keys)
        if kind.endswith("scaled"):
            score = score * values["attention_g"]
    else:
        q = query @ values["query_layer"]
        v = values["attention_v"]
        if kind.endswith("norm"):
            v = values["attention_g"] * v / np.sqrt((v * v).sum())
            score = (v * np.tanh(keys + q[:, None] + values["attention_b"])).sum(-1)
        else:
            score = (v * np.tanh(keys + q[:, None])).sum(-1)
    score = np.where(mask, score, -np.inf)
    want = np.exp(score - score.max(-1, keepdims=True))
    want /= want.sum(-1, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_attention_wrapper_decodes_with_history():
    rng = np.random.default_rng(0)
    memory = rng.normal(size=(2, 4, 3)).astype(np.float32)
    x = rng.normal(size=(2, 5, 2)).astype(np.float32)
    with tf.Graph().as_default():
        s2s = tf.contrib.seq2seq
        mech = s2s.BahdanauAttention(6, tf.constant(memory), [4, 2])
        cell = s2s.AttentionWrapper(tf.nn.rnn_cell.BasicLSTMCell(5), mech,
                                    attention_layer_size=7, alignment_history=True)
        decoder = s2s.BasicDecoder(cell, s2s.TrainingHelper(tf.constant(x), [5, 3]),
                                   cell.zero_state(2, tf.float32))
        out, state, lengths = s2s.dynamic_decode(decoder)
        history = state.alignment_history.stack()
        names = sorted(v.op.name for v in tf.global_variables())
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            o, h, n = s.run([out.rnn_output, history, lengths])
    assert names == ["decoder/attention_wrapper/attention_layer/kernel",
                     "decoder/attention_wrapper/bahdanau_attention/attention_v",
                     "decoder/attention_wrapper/bahdanau_attention/query_layer/kernel",
                     "decoder/attention_wrapper/basic_lstm_cell/bias",
                     "decoder/attention_wrapper/basic_lstm_cell/kernel",
                     "memory_layer/kernel"]
    assert o.shape == (2, 5, 7) and h.shape == (5, 2, 4)
    np.testing.assert_array_equal(n, [5, 3])
    np.testing.assert_allclose(h.sum(-1), 1.0, rtol=1e-5)
    assert np.all(h[:, 1, 2:] == 0)  # beyond the second memory's length


def _beam_model(vocab):
    tf.set_random_seed(7)  # the weights too: greedy and beam search compare exactly
    embedding = tf.get_variable("embedding", [vocab, 4])
    cell = tf.nn.rnn_cell.GRUCell(5)
    layer = tf.layers.Dense(vocab, name="proj")
    init = tf.random_normal([2, 5], seed=1)
    return embedding, cell, layer, init


def test_beam_search_of_width_one_is_greedy_decoding():
    vocab, end = 6, 2
    with tf.Graph().as_default():
        embedding, cell, layer, init = _beam_model(vocab)
        s2s = tf.contrib.seq2seq
        with tf.variable_scope("dec") as sc:
            greedy = s2s.BasicDecoder(cell, s2s.GreedyEmbeddingHelper(embedding,
                                                                      tf.fill([2], 1), end),
                                      init, output_layer=layer)
            g_out, _, g_len = s2s.dynamic_decode(greedy, maximum_iterations=6)
        with tf.variable_scope(sc, reuse=True):
            beam = s2s.BeamSearchDecoder(cell, embedding, tf.fill([2], 1), end,
                                         s2s.tile_batch(init, 1), 1, output_layer=layer)
            b_out, _, b_len = s2s.dynamic_decode(beam, maximum_iterations=6)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            g_ids, g_n, b_ids, b_n = s.run([g_out.sample_id, g_len, b_out.predicted_ids,
                                            b_len])
    np.testing.assert_array_equal(b_n[:, 0], g_n)
    # Within each row's length; past it greedy decoding's ids are whatever the finished
    # row's step gave, while beam search writes the end token (gather_tree), as in TF.
    for row, n in enumerate(g_n):
        np.testing.assert_array_equal(b_ids[row, :n, 0], g_ids[row, :n])
        assert (b_ids[row, n:, 0] == end).all()


def test_beam_scores_are_the_paths_log_likelihoods():
    vocab, end, width, steps = 5, 2, 3, 4
    with tf.Graph().as_default():
        embedding, cell, layer, init = _beam_model(vocab)
        s2s = tf.contrib.seq2seq
        with tf.variable_scope("dec") as sc:
            beam = s2s.BeamSearchDecoder(cell, embedding, tf.fill([2], 1), end,
                                         s2s.tile_batch(init, width), width,
                                         output_layer=layer)
            out, state, _ = s2s.dynamic_decode(beam, maximum_iterations=steps)
        ids = out.predicted_ids  # [batch, time, beam]
        # Teacher-force each returned path through the same model.
        paths = tf.reshape(tf.transpose(ids, [0, 2, 1]), [2 * width, -1])
        inputs = tf.nn.embedding_lookup(embedding, tf.concat(
            [tf.fill([2 * width, 1], 1), paths[:, :-1]], 1))
        with tf.variable_scope(sc, reuse=True):
            helper = s2s.TrainingHelper(inputs, tf.fill([2 * width], tf.shape(paths)[1]))
            forced = s2s.BasicDecoder(cell, helper, s2s.tile_batch(init, width),
                                      output_layer=layer)
            f_out, _, _ = s2s.dynamic_decode(forced)
        logp = tf.nn.log_softmax(f_out.rnn_output)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got_ids, lp, final = s.run([paths, logp, state.log_probs])
    for row in range(2 * width):
        total = 0.0
        for t, word in enumerate(got_ids[row]):
            total += lp[row, t, word]
            if word == end:
                break
        np.testing.assert_allclose(final.reshape(-1)[row], total, rtol=1e-4, atol=1e-4)
    assert np.all(np.diff(final, axis=1) <= 1e-6)  # beams sorted best first


def test_gather_tree_backtracks_and_fills_after_the_end():
    step = np.array([[[1, 2, 3]], [[4, 5, 6]], [[7, 8, 9]]], np.int32)
    parents = np.array([[[0, 0, 0]], [[2, 1, 0]], [[2, 1, 0]]], np.int32)
    ended = np.array([[[1, 2, 3]], [[10, 5, 6]], [[7, 8, 9]]], np.int32)
    with tf.Graph().as_default():
        full = tf.raw_ops.GatherTree(step_ids=step, parent_ids=parents,
                                     max_sequence_lengths=[3], end_token=10)
        short = tf.raw_ops.GatherTree(step_ids=ended, parent_ids=parents,
                                      max_sequence_lengths=[2], end_token=10)
        with tf.Session() as s:
            a, b = s.run([full, short])
    assert a[:, 0, :].T.tolist() == [[1, 6, 7], [2, 5, 8], [3, 4, 9]]
    assert b[:, 0, :].T.tolist() == [[3, 10, 10], [2, 5, 10], [1, 6, 10]]
