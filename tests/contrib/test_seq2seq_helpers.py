"""tf.contrib.seq2seq's sampling and custom helpers, each against what it must reduce to
(TrainingHelper at probability 0, the embeddings of its own samples at probability 1,
argmax at a tiny temperature) and against the sampling distribution it states."""

import numpy as np
import pytest

import tensorflux as tf

B, T, D, V = 4, 5, 3, 6


def _decode(make_helper, cell_units=V, steps=None, output_layer=None):
    """Runs a BasicDecoder over the helper; returns (rnn_output, sample_id, lengths) and
    the helper."""
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        cell = tf.nn.rnn_cell.BasicRNNCell(cell_units)
        helper = make_helper()
        decoder = tf.contrib.seq2seq.BasicDecoder(cell, helper, cell.zero_state(B, tf.float32),
                                                  output_layer=output_layer)
        out, _, lengths = tf.contrib.seq2seq.dynamic_decode(decoder, maximum_iterations=steps)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            return s.run([out.rnn_output, out.sample_id, lengths])


X = np.random.default_rng(0).normal(size=(B, T, D)).astype(np.float32)
EMB = np.random.default_rng(1).normal(size=(V, D)).astype(np.float32)
LENS = np.array([5, 3, 4, 1], np.int32)


def _scheduled(p):
    return lambda: tf.contrib.seq2seq.ScheduledEmbeddingTrainingHelper(
        tf.constant(X), LENS, tf.constant(EMB), p, seed=5, scheduling_seed=7)


def test_scheduled_embedding_at_probability_zero_is_teacher_forcing():
    ref = _decode(lambda: tf.contrib.seq2seq.TrainingHelper(tf.constant(X), LENS))
    got = _decode(_scheduled(0.0))
    np.testing.assert_allclose(got[0], ref[0], atol=1e-6)
    np.testing.assert_array_equal(got[2], LENS)
    assert (got[1] == -1).all()  # nothing sampled: the id is -1


def test_scheduled_embedding_at_probability_one_feeds_its_samples():
    """Every step after the first reads the embedding of the previous step's sample: the
    outputs can be recomputed by a plain RNN over those embeddings."""
    out, ids, lengths = _decode(_scheduled(1.0))
    assert ((ids >= 0) & (ids < V)).all()
    inputs = np.concatenate([X[:, :1], EMB[ids[:, :-1]]], axis=1)
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        cell = tf.nn.rnn_cell.BasicRNNCell(V)
        with tf.variable_scope("decoder"):
            ref, _ = tf.nn.dynamic_rnn(cell, tf.constant(inputs), sequence_length=lengths,
                                       dtype=tf.float32)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            want = s.run(ref)
    for b in range(B):
        np.testing.assert_allclose(out[b, :lengths[b]], want[b, :lengths[b]], atol=1e-5)


def test_scheduled_embedding_samples_a_row_with_the_probability_given():
    """A per-row probability vector: rows 0 and 2 always sample, rows 1 and 3 never."""
    lens = np.full([B], T, np.int32)
    _, ids, _ = _decode(lambda: tf.contrib.seq2seq.ScheduledEmbeddingTrainingHelper(
        tf.constant(X), lens, tf.constant(EMB), tf.constant([1.0, 0.0, 1.0, 0.0]), seed=1))
    assert (ids[[0, 2]] >= 0).all() and (ids[[1, 3]] == -1).all()


def test_scheduled_embedding_rejects_a_matrix_of_probabilities():
    with tf.Graph().as_default(), pytest.raises(ValueError, match="scalar or a vector"):
        tf.contrib.seq2seq.ScheduledEmbeddingTrainingHelper(
            tf.constant(X), LENS, tf.constant(EMB), tf.zeros([2, 2]))


def test_scheduled_output_feeds_outputs_and_auxiliary_inputs():
    aux = np.random.default_rng(2).normal(size=(B, T, 2)).astype(np.float32)
    lens = np.full([B], T, np.int32)
    units = D  # outputs (through next_inputs_fn) + aux must have the inputs' width + 2

    def make(p):
        return lambda: tf.contrib.seq2seq.ScheduledOutputTrainingHelper(
            tf.constant(X), lens, p, next_inputs_fn=lambda o: o * 2.0,
            auxiliary_inputs=tf.constant(aux), seed=4)

    out0, ids0, _ = _decode(make(0.0), cell_units=units)
    out1, ids1, _ = _decode(make(1.0), cell_units=units)
    assert ids0.dtype == bool and not ids0.any() and ids1.all()
    # probability 0: teacher forcing on [x, aux]
    teacher = np.concatenate([X, aux], -1)
    # probability 1: step t > 0 reads [2 * output(t-1), aux(t)]
    fed = np.concatenate([np.concatenate([X[:, :1], 2.0 * out1[:, :-1]], 1), aux], -1)
    for inputs, got in ((teacher, out0), (fed, out1)):
        with tf.Graph().as_default():
            tf.set_random_seed(3)
            with tf.variable_scope("decoder"):
                ref, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicRNNCell(units),
                                           tf.constant(inputs), dtype=tf.float32)
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                np.testing.assert_allclose(got, s.run(ref), atol=1e-5)


def _sample_helper(temperature, seed=None):
    return lambda: tf.contrib.seq2seq.SampleEmbeddingHelper(
        tf.constant(EMB), tf.fill([B], 1), 0, softmax_temperature=temperature, seed=seed)


def test_sample_embedding_at_a_tiny_temperature_is_greedy():
    logits, ids, _ = _decode(_sample_helper(1e-4, seed=2), steps=4)
    np.testing.assert_array_equal(ids, logits.argmax(-1))


def test_sample_embedding_draws_from_the_softmax():
    """Fixed logits (a bias-only output layer): the first step's ids follow their
    softmax, checked by a chi-square bound over many rows."""
    bias = np.array([0.0, 1.0, 2.0, 0.5, -1.0, 1.5], np.float32)
    rows = 4000
    with tf.Graph().as_default():
        tf.set_random_seed(11)
        helper = tf.contrib.seq2seq.SampleEmbeddingHelper(
            tf.constant(EMB), tf.fill([rows], 1), 0, softmax_temperature=2.0)
        cell = tf.nn.rnn_cell.BasicRNNCell(4)
        layer = tf.layers.Dense(V, kernel_initializer=tf.zeros_initializer(),
                                bias_initializer=tf.constant_initializer(bias))
        decoder = tf.contrib.seq2seq.BasicDecoder(cell, helper,
                                                  cell.zero_state(rows, tf.float32),
                                                  output_layer=layer)
        out, _, _ = tf.contrib.seq2seq.dynamic_decode(decoder, maximum_iterations=1)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            ids = s.run(out.sample_id)[:, 0]
    p = np.exp(bias / 2.0) / np.exp(bias / 2.0).sum()
    counts = np.bincount(ids, minlength=V)
    chi2 = ((counts - rows * p) ** 2 / (rows * p)).sum()
    assert chi2 < 25.0, (counts, rows * p)  # 5 degrees of freedom: p < 1e-3 above 20.5


def test_inference_helper_regresses_until_end_fn():
    """Continuous outputs fed back as inputs; a row ends when its output's first value is
    above a threshold (or at the limit)."""
    start = np.random.default_rng(3).normal(size=(B, D)).astype(np.float32)
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        cell = tf.nn.rnn_cell.BasicRNNCell(D)
        helper = tf.contrib.seq2seq.InferenceHelper(
            sample_fn=lambda o: o, sample_shape=[D], sample_dtype=tf.float32,
            start_inputs=tf.constant(start), end_fn=lambda s: s[:, 0] > 0.5)
        decoder = tf.contrib.seq2seq.BasicDecoder(cell, helper, cell.zero_state(B, tf.float32))
        out, _, lengths = tf.contrib.seq2seq.dynamic_decode(decoder, maximum_iterations=6)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            outputs, samples, n = s.run([out.rnn_output, out.sample_id, lengths])
    np.testing.assert_array_equal(samples, outputs)
    for b in range(B):
        above = np.flatnonzero(outputs[b, :, 0] > 0.5)
        want = above[0] + 1 if above.size and above[0] < 6 else 6
        assert n[b] == want


def test_custom_helper_is_the_training_helper_rebuilt():
    ref = _decode(lambda: tf.contrib.seq2seq.TrainingHelper(tf.constant(X), LENS))

    def make():
        xs = tf.constant(X.transpose(1, 0, 2))
        lens = tf.constant(LENS)

        def read(t):
            return tf.cond(t < T, lambda: xs[tf.minimum(t, T - 1)], lambda: tf.zeros([B, D]))

        return tf.contrib.seq2seq.CustomHelper(
            initialize_fn=lambda: (tf.equal(lens, 0), xs[0]),
            sample_fn=lambda time, outputs, state: tf.argmax(outputs, -1, output_type=tf.int32),
            next_inputs_fn=lambda time, outputs, state, sample_ids: (
                time + 1 >= lens, read(time + 1), state))

    got = _decode(make)
    np.testing.assert_allclose(got[0], ref[0], atol=1e-6)
    np.testing.assert_array_equal(got[1], ref[1])
    np.testing.assert_array_equal(got[2], LENS)


def test_custom_helper_batch_size_before_initialize():
    helper = tf.contrib.seq2seq.CustomHelper(lambda: None, None, None)
    with pytest.raises(ValueError, match="before initialize"):
        helper.batch_size  # noqa: B018


def test_decoders_share_the_base_class():
    assert issubclass(tf.contrib.seq2seq.BasicDecoder, tf.contrib.seq2seq.Decoder)
    assert issubclass(tf.contrib.seq2seq.BeamSearchDecoder, tf.contrib.seq2seq.Decoder)
    for name in ("ScheduledEmbeddingTrainingHelper", "ScheduledOutputTrainingHelper",
                 "SampleEmbeddingHelper", "InferenceHelper", "CustomHelper"):
        assert issubclass(getattr(tf.contrib.seq2seq, name), tf.contrib.seq2seq.Helper)
