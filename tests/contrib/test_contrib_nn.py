"""tf.contrib.nn: alpha_dropout, scaled_softplus, sampled_sparse_softmax_loss and the
flipped cross entropies against NumPy and their tf.nn counterparts."""

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.contrib import nn as cnn

ALPHA = -1.7580993408473766


def test_alpha_dropout_matches_its_formula_and_keeps_moments():
    x = np.random.RandomState(0).randn(400, 50).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.set_random_seed(7)
        out = cnn.alpha_dropout(tf.constant(x), 0.8, seed=3)
        got = sess.run(out)
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.set_random_seed(7)
        u = sess.run(tf.random_uniform([400, 50], seed=3))
    kept = (u >= 1 - np.float32(0.8)).astype(np.float32)
    a = (0.8 + 0.8 * 0.2 * ALPHA ** 2) ** -0.5
    want = a * (x * kept + ALPHA * (1 - kept)) - a * ALPHA * 0.2
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert abs(got.mean()) < 0.05 and abs(got.var() - 1) < 0.1
    with tf.Graph().as_default():
        x_t = tf.constant(x)
        assert cnn.alpha_dropout(x_t, 1.0) is x_t
        with pytest.raises(ValueError, match=r"keep_prob must be a scalar tensor or a float "
                                             r"in the range \(0, 1\], got 1.5"):
            cnn.alpha_dropout(x_t, 1.5)


def test_scaled_softplus():
    x = np.linspace(-4, 4, 9).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        got, clipped = sess.run([cnn.scaled_softplus(x, 0.5),
                                 cnn.scaled_softplus(x, 2.0, clip=1.0)])
    np.testing.assert_allclose(got, 0.5 * np.log1p(np.exp(x / 0.5)), rtol=1e-5)
    np.testing.assert_allclose(clipped, np.minimum(2.0 * np.log1p(np.exp(x / 2.0)), 1.0),
                               rtol=1e-5)


def test_sampled_sparse_softmax_loss_equals_sampled_softmax_loss():
    rng = np.random.RandomState(1)
    w, b = rng.randn(10, 4).astype(np.float32), rng.randn(10).astype(np.float32)
    inputs, labels = rng.randn(3, 4).astype(np.float32), np.array([[1], [5], [9]])
    with tf.Graph().as_default(), tf.Session() as sess:
        sampled = tf.nn.log_uniform_candidate_sampler(tf.constant(labels, tf.int64), 1, 4,
                                                      True, 10, seed=2)
        ours = cnn.sampled_sparse_softmax_loss(w, b, labels, inputs, 4, 10,
                                               sampled_values=sampled)
        core = tf.nn.sampled_softmax_loss(w, b, labels, inputs, 4, 10, sampled_values=sampled,
                                          remove_accidental_hits=True)
        got, want = sess.run([ours, core])
    assert got.shape == (3,)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_flipped_cross_entropies():
    logits = np.array([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0]], np.float32)
    onehot = np.array([[0, 1, 0], [0, 0, 1]], np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        a = sess.run(cnn.deprecated_flipped_softmax_cross_entropy_with_logits(logits, onehot))
        b = sess.run(cnn.deprecated_flipped_sparse_softmax_cross_entropy_with_logits(
            logits, np.array([1, 2])))
        c = sess.run(cnn.deprecated_flipped_sigmoid_cross_entropy_with_logits(logits, onehot))
    want = -np.log(np.exp(logits) / np.exp(logits).sum(1, keepdims=True))[[0, 1], [1, 2]]
    np.testing.assert_allclose(a, want, rtol=1e-5)
    np.testing.assert_allclose(b, want, rtol=1e-5)
    np.testing.assert_allclose(c, np.maximum(logits, 0) - logits * onehot +
                               np.log1p(np.exp(-np.abs(logits))), rtol=1e-5)
