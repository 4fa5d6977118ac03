"""tf.contrib.legacy_seq2seq and contrib.rnn's wrappers that own variables.

TensorFlow 2.21 has no contrib, so there is no oracle: the models' outputs are checked
against a NumPy forward pass written from the models' definitions (attention over the
encoder's outputs, several heads, initial-state attention, argmax fed back), variable names
against the names TF1 checkpoints of these models carry, variable sharing across buckets,
the cond form of `feed_previous`, and one small translation-style model that learns to
reverse sequences. Also: nested tuple keys in feed_dict (an RNN's state fed back in).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import tensorflux as tf

legacy = tf.contrib.legacy_seq2seq
B, T, V, E, H = 2, 3, 7, 4, 5


def _ids(seed, n=T, vocab=V):
    rng = np.random.default_rng(seed)
    return [tf.constant(rng.integers(0, vocab, B).astype(np.int32)) for _ in range(n)]


def _set_variables(sess):
    """Every variable to a fixed pattern (sorted by name), returned by name."""
    values = {}
    for k, v in enumerate(sorted(tf.global_variables(), key=lambda v: v.name)):
        shape = v.shape.as_list()
        val = (np.sin(np.arange(int(np.prod(shape))) * 0.7 + k) * 0.5).reshape(shape)
        sess.run(v.assign(val.astype(np.float32)))
        values[v.op.name] = val
    return values


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _reference(p, enc, dec, heads, initial_state_attention, feed_previous):
    """NumPy embedding_attention_seq2seq over BasicRNNCell (p: variables by name)."""
    pre = "embedding_attention_seq2seq/"
    enc_p = pre + "rnn/embedding_wrapper/"
    h = np.zeros((B, H))
    states = []
    for x in enc:
        e = p[enc_p + "embedding"][x]
        h = np.tanh(np.concatenate([e, h], 1) @ p[enc_p + "basic_rnn_cell/kernel"] +
                    p[enc_p + "basic_rnn_cell/bias"])
        states.append(h)
    hidden = np.stack(states, 1)                                     # [B, T, H]
    d = pre + "embedding_attention_decoder/"
    a = d + "attention_decoder/"
    feats = [hidden @ p[a + f"AttnW_{i}"][0, 0] for i in range(heads)]

    def attention(query):
        reads = []
        for i in range(heads):
            y = query @ p[a + f"Attention_{i}/kernel"] + p[a + f"Attention_{i}/bias"]
            s = (p[a + f"AttnV_{i}"] * np.tanh(feats[i] + y[:, None, :])).sum(2)
            reads.append((_softmax(s)[:, :, None] * hidden).sum(1))
        return reads

    attns = attention(h) if initial_state_attention else [np.zeros((B, H))] * heads
    outputs, prev = [], None
    for x in dec:
        inp = p[d + "embedding"][x if prev is None or not feed_previous else prev.argmax(1)]
        z = np.concatenate([inp] + attns, 1) @ p[a + "kernel"] + p[a + "bias"]
        w = a + "output_projection_wrapper/"
        h = np.tanh(np.concatenate([z, h], 1) @ p[w + "basic_rnn_cell/kernel"] +
                    p[w + "basic_rnn_cell/bias"])
        cell_out = h @ p[w + "kernel"] + p[w + "bias"]
        attns = attention(h)
        out = np.concatenate([cell_out] + attns, 1) @ p[a + "AttnOutputProjection/kernel"] + \
            p[a + "AttnOutputProjection/bias"]
        outputs.append(out)
        prev = out
    return outputs, h


@pytest.mark.parametrize("heads, isa, feed_previous", [
    (1, False, False), (2, False, False), (1, True, False), (2, True, True), (1, False, True),
    (1, False, "tensor"),
])
def test_embedding_attention_seq2seq_against_numpy(heads, isa, feed_previous):
    enc_np = [np.array([1, 4]), np.array([6, 0]), np.array([3, 3])]
    dec_np = [np.array([2, 5]), np.array([0, 1]), np.array([4, 6])]
    with tf.Graph().as_default():
        fp = feed_previous
        if fp == "tensor":
            fp = tf.placeholder_with_default(False, ())
        outs, state = legacy.embedding_attention_seq2seq(
            [tf.constant(x, tf.int32) for x in enc_np], [tf.constant(x, tf.int32)
                                                         for x in dec_np],
            tf.nn.rnn_cell.BasicRNNCell(H), V, V, E, num_heads=heads, feed_previous=fp,
            initial_state_attention=isa)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            p = _set_variables(sess)
            got, got_state = sess.run([outs, state])
            if feed_previous == "tensor":
                got_fp = sess.run(outs, {fp: True})
    want, want_state = _reference(p, enc_np, dec_np, heads, isa, feed_previous is True)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(got_state, want_state, rtol=2e-5, atol=2e-6)
    if feed_previous == "tensor":
        want_fp, _ = _reference(p, enc_np, dec_np, heads, isa, True)
        for g, w in zip(got_fp, want_fp, strict=True):
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)


def _names(build):
    with tf.Graph().as_default():
        build()
        return sorted(v.op.name for v in tf.trainable_variables())


LSTM = "basic_lstm_cell/"


@pytest.mark.parametrize("build, want", [
    (lambda: legacy.basic_rnn_seq2seq([tf.ones([B, E])] * T, [tf.ones([B, E])] * T,
                                      tf.nn.rnn_cell.BasicLSTMCell(H)),
     [f"basic_rnn_seq2seq/rnn/{LSTM}bias", f"basic_rnn_seq2seq/rnn/{LSTM}kernel",
      f"basic_rnn_seq2seq/rnn_decoder/{LSTM}bias",
      f"basic_rnn_seq2seq/rnn_decoder/{LSTM}kernel"]),
    (lambda: legacy.tied_rnn_seq2seq([tf.ones([B, E])] * T, [tf.ones([B, E])] * T,
                                     tf.nn.rnn_cell.BasicLSTMCell(H)),
     [f"combined_tied_rnn_seq2seq/tied_rnn_seq2seq/{LSTM}bias",
      f"combined_tied_rnn_seq2seq/tied_rnn_seq2seq/{LSTM}kernel"]),
    (lambda: legacy.embedding_rnn_seq2seq(_ids(0), _ids(1), tf.nn.rnn_cell.BasicLSTMCell(H),
                                          V, V, E),
     ["embedding_rnn_seq2seq/embedding_rnn_decoder/embedding",
      f"embedding_rnn_seq2seq/embedding_rnn_decoder/rnn_decoder/output_projection_wrapper/"
      f"{LSTM}bias",
      f"embedding_rnn_seq2seq/embedding_rnn_decoder/rnn_decoder/output_projection_wrapper/"
      f"{LSTM}kernel",
      "embedding_rnn_seq2seq/embedding_rnn_decoder/rnn_decoder/output_projection_wrapper/"
      "bias",
      "embedding_rnn_seq2seq/embedding_rnn_decoder/rnn_decoder/output_projection_wrapper/"
      "kernel",
      f"embedding_rnn_seq2seq/rnn/embedding_wrapper/{LSTM}bias",
      f"embedding_rnn_seq2seq/rnn/embedding_wrapper/{LSTM}kernel",
      "embedding_rnn_seq2seq/rnn/embedding_wrapper/embedding"]),
    (lambda: legacy.embedding_tied_rnn_seq2seq(_ids(0), _ids(1),
                                               tf.nn.rnn_cell.BasicLSTMCell(H), V, E),
     [f"embedding_tied_rnn_seq2seq/combined_tied_rnn_seq2seq/tied_rnn_seq2seq/"
      f"output_projection_wrapper/{LSTM}bias",
      f"embedding_tied_rnn_seq2seq/combined_tied_rnn_seq2seq/tied_rnn_seq2seq/"
      f"output_projection_wrapper/{LSTM}kernel",
      "embedding_tied_rnn_seq2seq/combined_tied_rnn_seq2seq/tied_rnn_seq2seq/"
      "output_projection_wrapper/bias",
      "embedding_tied_rnn_seq2seq/combined_tied_rnn_seq2seq/tied_rnn_seq2seq/"
      "output_projection_wrapper/kernel",
      "embedding_tied_rnn_seq2seq/embedding"]),
])
def test_variable_names(build, want):
    assert _names(build) == want


def test_attention_variable_names_with_a_multi_cell():
    cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.GRUCell(H) for _ in range(2)])
    names = _names(lambda: legacy.embedding_attention_seq2seq(_ids(0), _ids(1), cell, V, V,
                                                              E))
    a = "embedding_attention_seq2seq/embedding_attention_decoder/attention_decoder/"
    enc = "embedding_attention_seq2seq/rnn/embedding_wrapper/"
    for name in [a + "AttnW_0", a + "AttnV_0", a + "kernel", a + "bias",
                 a + "Attention_0/kernel", a + "AttnOutputProjection/kernel",
                 a + "output_projection_wrapper/kernel",
                 a + "output_projection_wrapper/multi_rnn_cell/cell_1/gru_cell/gates/kernel",
                 "embedding_attention_seq2seq/embedding_attention_decoder/embedding",
                 enc + "embedding", enc + "multi_rnn_cell/cell_0/gru_cell/candidate/bias"]:
        assert name in names, name
    # decoder: AttnW, AttnV, the input, query and output projections, the wrapper (2 each
    # but AttnW/AttnV), 2 GRU cells (4 each), its embedding; encoder: embedding, 2 GRU cells
    assert len(names) == 2 + 4 * 2 + 8 + 1 + 1 + 8


def test_buckets_share_variables_and_losses_match_sequence_loss():
    with tf.Graph().as_default():
        enc, dec = _ids(0), _ids(1)
        targets = dec[1:] + [dec[0]]
        weights = [tf.ones([B]) for _ in range(T)]
        cell = tf.nn.rnn_cell.BasicLSTMCell(H)
        outputs, losses = legacy.model_with_buckets(
            enc, dec, targets, weights, [(2, 2), (3, 3)],
            lambda x, y: legacy.embedding_attention_seq2seq(x, y, cell, V, V, E))
        assert len(tf.trainable_variables()) == 16  # one model's, shared by both buckets
        by_hand = legacy.sequence_loss(outputs[1], targets, weights)
        per_example = legacy.sequence_loss_by_example(outputs[0], targets[:2], weights[:2])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            l0, l1, want1, pe = sess.run([losses[0], losses[1], by_hand, per_example])
    assert len(outputs) == 2 and len(outputs[0]) == 2 and len(outputs[1]) == 3
    assert l1 == pytest.approx(want1)
    assert l0 == pytest.approx(pe.mean(), rel=1e-6)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="encoder inputs \\(2\\) must be at least"):
            legacy.model_with_buckets(_ids(0, 2), _ids(1), _ids(1), [tf.ones([B])] * T,
                                      [(3, 3)], lambda x, y: None)


def _run_embedding_seq2seq(feed_previous, fp_value=None):
    with tf.Graph().as_default():
        fp = tf.placeholder(tf.bool, ()) if feed_previous == "tensor" else feed_previous
        cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicLSTMCell(H) for _ in range(2)])
        outs, state = legacy.embedding_rnn_seq2seq(_ids(0), _ids(1), cell, V, V, E,
                                                   feed_previous=fp)
        count = len(tf.trainable_variables())
        assert isinstance(state, tuple) and isinstance(state[0], tf.nn.rnn_cell.LSTMStateTuple)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            _set_variables(sess)
            got = sess.run([outs, state], {fp: fp_value} if feed_previous == "tensor" else {})
    return count, got


@pytest.mark.parametrize("flag", [True, False])
def test_feed_previous_as_a_tensor_matches_the_boolean_model(flag):
    count, (outs, state) = _run_embedding_seq2seq("tensor", flag)
    want_count, (want_outs, want_state) = _run_embedding_seq2seq(flag)
    assert count == want_count == 12  # both decoders share one set of variables
    for got, want in zip(outs + list(tf.nest.flatten(state)),
                         want_outs + list(tf.nest.flatten(want_state)), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_errors():
    cell = tf.nn.rnn_cell.BasicRNNCell(H)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="at least 1 input"):
            legacy.attention_decoder([], None, tf.ones([B, T, H]), cell)
        with pytest.raises(ValueError, match="less than 1 heads"):
            legacy.attention_decoder([tf.ones([B, E])], None, tf.ones([B, T, H]), cell,
                                     num_heads=0)
        with pytest.raises(ValueError, match="Shape\\[2\\] of attention_states"):
            legacy.attention_decoder([tf.ones([B, E])], None,
                                     tf.placeholder(tf.float32, [B, T, None]), cell)
        with pytest.raises(ValueError, match="keys of dec_cells_dict"):
            legacy.one2many_rnn_seq2seq(_ids(0), {"a": _ids(1)}, cell, {"b": cell}, V,
                                        {"a": V}, E)
        with pytest.raises(TypeError, match="enc_cell is not an RNNCell"):
            legacy.one2many_rnn_seq2seq(_ids(0), {"a": _ids(1)}, object(), {"a": cell}, V,
                                        {"a": V}, E)
        with pytest.raises(ValueError, match="must be > 0"):
            tf.contrib.rnn.EmbeddingWrapper(cell, 0, 3)
        with pytest.raises(ValueError, match="output_size must be > 0"):
            tf.contrib.rnn.OutputProjectionWrapper(cell, 0)


def test_wrappers_against_numpy():
    x_ids = np.array([3, 1])
    with tf.Graph().as_default():
        inner = tf.nn.rnn_cell.BasicRNNCell(H)
        cell = tf.contrib.rnn.OutputProjectionWrapper(
            tf.contrib.rnn.InputProjectionWrapper(inner, 3, activation=tf.nn.relu), V,
            activation=tf.tanh)
        emb_cell = tf.contrib.rnn.EmbeddingWrapper(cell, V, E)
        out, state = emb_cell(tf.constant(x_ids), tf.ones([B, H]))
        assert emb_cell.output_size == V and emb_cell.state_size == H
        names = sorted(v.op.name for v in tf.global_variables())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            p = _set_variables(sess)
            got_out, got_state = sess.run([out, state])
    e, o, i = ("embedding_wrapper/", "embedding_wrapper/output_projection_wrapper/",
               "embedding_wrapper/output_projection_wrapper/input_projection_wrapper/")
    assert names == sorted([e + "embedding", i + "basic_rnn_cell/bias",
                            i + "basic_rnn_cell/kernel", i + "bias", i + "kernel", o + "bias",
                            o + "kernel"])
    z = np.maximum(p[e + "embedding"][x_ids] @ p[i + "kernel"] + p[i + "bias"], 0)
    h = np.tanh(np.concatenate([z, np.ones((B, H))], 1) @ p[i + "basic_rnn_cell/kernel"] +
                p[i + "basic_rnn_cell/bias"])
    np.testing.assert_allclose(got_state, h, rtol=1e-5)
    np.testing.assert_allclose(got_out, np.tanh(h @ p[o + "kernel"] + p[o + "bias"]),
                               rtol=1e-5, atol=1e-6)


def test_deepcopy_of_a_used_cell_is_unbuilt_with_its_configuration():
    with tf.Graph().as_default():
        cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.LSTMCell(H, forget_bias=0.5),
                                            tf.nn.rnn_cell.GRUCell(H)])
        cell(tf.ones([B, E]), cell.zero_state(B, tf.float32))
        clone = copy.deepcopy(cell)
        assert not clone.built and clone.variables == []
        assert clone._cells[0]._forget_bias == 0.5 and clone._cells[0] is not cell._cells[0]
        with tf.variable_scope("other"):
            clone(tf.ones([B, E]), clone.zero_state(B, tf.float32))
        assert len(clone.variables) == len(cell.variables)
        assert all(v.name.startswith("other/") for v in clone.variables)


def test_nested_tuple_feed_keys():
    with tf.Graph().as_default():
        cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicLSTMCell(H) for _ in range(2)])
        init = cell.zero_state(B, tf.float32)
        out, final = cell(tf.ones([B, E]), init)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            state = sess.run(final)
            fed = sess.run(out, {init: state})
            chained = sess.run(cell(tf.ones([B, E]), final)[0])
            np.testing.assert_allclose(fed, chained, rtol=1e-6)
            with pytest.raises(ValueError, match="is a tuple; its value must be a tuple"):
                sess.run(out, {init: state[:1]})


def test_learns_to_reverse_short_sequences():
    """A translation-style model (buckets, attention, sampled feeds) learns a toy task."""
    rng = np.random.default_rng(0)
    n, vocab, go = 4, 6, 0
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        enc = [tf.placeholder(tf.int32, [None]) for _ in range(n)]
        dec = [tf.placeholder(tf.int32, [None]) for _ in range(n + 1)]
        targets = dec[1:] + [tf.zeros_like(dec[0])]
        weights = [tf.ones_like(tf.cast(d, tf.float32)) for d in dec[:n]] + \
            [tf.zeros_like(tf.cast(dec[0], tf.float32))]
        cell = tf.nn.rnn_cell.GRUCell(24)
        outputs, losses = legacy.model_with_buckets(
            enc, dec, targets, weights, [(n, n + 1)],
            lambda x, y: legacy.embedding_attention_seq2seq(x, y, cell, vocab, vocab, 8))
        train = tf.train.AdamOptimizer(0.02).minimize(losses[0])

        def batch(size):
            seqs = rng.integers(1, vocab, (size, n))
            feed = {e: seqs[:, i] for i, e in enumerate(enc)}
            rev = seqs[:, ::-1]
            feed.update({d: (np.full(size, go) if i == 0 else rev[:, i - 1])
                         for i, d in enumerate(dec)})
            return feed, rev

        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(300):
                sess.run(train, batch(32)[0])
            feed, rev = batch(200)
            preds = np.stack([p.argmax(1) for p in sess.run(outputs[0][:n], feed)], 1)
    assert (preds == rev).mean() > 0.9
