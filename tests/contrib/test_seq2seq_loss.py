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
