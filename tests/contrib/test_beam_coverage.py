"""BeamSearchDecoder's coverage penalty (`coverage_penalty_weight`, GNMT's, in TF's form):
a cell whose logits and attention depend only on the step and the previous word, decoded
by the graph and by a NumPy beam search written from TF's rules (scores of finished beams
get weight * sum_t log(min(accumulated attention, 1)), unattended steps left out; the
attention of running beams accumulates and follows the chosen parents)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.contrib.seq2seq_attention import AttentionWrapperState

VOCAB, END, START, SOURCE = 5, 2, 1, 4


def _tables(seed):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(8, VOCAB)).astype(np.float32),       # logits by step
            rng.normal(size=(VOCAB, VOCAB)).astype(np.float32),   # by previous word
            rng.normal(size=(VOCAB, SOURCE)).astype(np.float32) * 2)  # attention scores


class _TableCell(tf.nn.rnn_cell.RNNCell):
    """Logits = by_step[t] + by_word[previous word]; attention = softmax(att[previous
    word]) with the last source step masked (never attended)."""

    def __init__(self, by_step, by_word, att):
        super().__init__()
        self._tables = [tf.constant(by_step), tf.constant(by_word), tf.constant(att)]

    @property
    def state_size(self):
        return 1

    @property
    def output_size(self):
        return VOCAB

    def __call__(self, inputs, state, scope=None):
        by_step, by_word, att = self._tables
        t = tf.cast(state.cell_state[:, 0], tf.int32)
        logits = tf.gather(by_step, t) + tf.matmul(inputs, by_word)
        scores = tf.matmul(inputs, att)
        mask = tf.constant([0.0] * (SOURCE - 1) + [-np.inf], tf.float32)
        align = tf.nn.softmax(scores + mask)
        return logits, state._replace(cell_state=state.cell_state + 1.0, alignments=align,
                                      time=state.time + 1)


def _decode(coverage, length_penalty, width, seed):
    by_step, by_word, att = _tables(seed)
    with tf.Graph().as_default():
        n = 2 * width
        state = AttentionWrapperState(
            cell_state=tf.zeros([n, 1]), attention=tf.zeros([n, 1]), time=tf.constant(0),
            alignments=tf.zeros([n, SOURCE]), alignment_history=(),
            attention_state=tf.zeros([n, SOURCE]))
        decoder = tf.contrib.seq2seq.BeamSearchDecoder(
            _TableCell(by_step, by_word, att), np.eye(VOCAB, dtype=np.float32),
            tf.fill([2], START), END, state, width, length_penalty_weight=length_penalty,
            coverage_penalty_weight=coverage)
        out, final, _ = tf.contrib.seq2seq.dynamic_decode(decoder, maximum_iterations=6)
        raw = out.beam_search_decoder_output
        with tf.Session() as s:
            return s.run([raw.scores, raw.predicted_ids, raw.parent_ids,
                          final.accumulated_attention_probs])


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _reference(coverage, length_penalty, width, seed, steps):
    """The same search in NumPy, one batch entry at a time."""
    by_step, by_word, att = _tables(seed)
    mask = np.array([0.0] * (SOURCE - 1) + [-np.inf])
    outs = []
    for _ in range(2):
        log_probs = np.array([0.0] + [-np.inf] * (width - 1))
        finished = np.zeros(width, bool)
        lengths = np.zeros(width, np.int64)
        acc = np.zeros((width, SOURCE))
        words = np.full(width, START)
        rows = []
        for t in range(steps):
            step = _log_softmax(by_step[t] + by_word[words])
            end_only = np.full(VOCAB, -np.inf)
            end_only[END] = 0.0
            step[finished] = end_only
            total = log_probs[:, None] + step
            add = (np.arange(VOCAB) != END)[None, :] & ~finished[:, None]
            new_lengths = lengths[:, None] + add
            e = np.exp(att[words] + mask - (att[words] + mask).max(-1, keepdims=True))
            acc_now = acc + (e / e.sum(-1, keepdims=True)) * (~finished)[:, None]
            scores = total
            if length_penalty:
                scores = total / ((5.0 + new_lengths) / 6.0) ** length_penalty
            if coverage:
                attended = np.where(acc_now == 0, 1.0, acc_now)
                pen = np.log(np.minimum(attended, 1.0)).sum(-1) * finished
                scores = scores + (coverage * pen)[:, None]
            flat = scores.reshape(-1)
            best = np.argsort(-flat, kind="stable")[:width]
            parents, words = best // VOCAB, best % VOCAB
            rows.append((flat[best], words.copy(), parents))
            log_probs = total.reshape(-1)[best]
            lengths = new_lengths.reshape(-1)[best]
            finished = finished[parents] | (words == END)
            acc = acc_now[parents]
            if finished.all():
                break
        outs.append((rows, acc))
    return outs


@pytest.mark.parametrize("coverage,length_penalty,width,seed", [
    (0.0, 0.0, 3, 0), (0.4, 0.0, 3, 0), (1.5, 0.6, 3, 1), (0.8, 0.0, 2, 5), (2.0, 1.0, 4, 3),
])
def test_coverage_penalty_follows_tensorflows_rule(coverage, length_penalty, width, seed):
    scores, ids, parents, acc = _decode(coverage, length_penalty, width, seed)
    ref = _reference(coverage, length_penalty, width, seed, scores.shape[1])
    for b, (rows, ref_acc) in enumerate(ref):
        assert len(rows) <= scores.shape[1]
        for t, (want_scores, want_ids, want_parents) in enumerate(rows):
            np.testing.assert_array_equal(ids[b, t], want_ids, err_msg=f"batch {b} step {t}")
            np.testing.assert_array_equal(parents[b, t], want_parents)
            np.testing.assert_allclose(scores[b, t], want_scores, rtol=1e-5, atol=1e-5)
        if coverage:
            np.testing.assert_allclose(acc[b], ref_acc, rtol=1e-5, atol=1e-6)
    if not coverage:
        assert acc == ()


def test_coverage_needs_an_attentional_cell():
    with tf.Graph().as_default():
        cell = tf.nn.rnn_cell.GRUCell(4)
        with pytest.raises(ValueError, match="no cell is attentional"):
            tf.contrib.seq2seq.BeamSearchDecoder(
                cell, np.eye(VOCAB, dtype=np.float32), tf.fill([2], START), END,
                tf.zeros([6, 4]), 3, coverage_penalty_weight=0.5)
