"""tf.contrib.crf against brute force: every tag sequence enumerated in NumPy for the
scores, the partition function, the best path (graph and NumPy Viterbi) and multi-tag
scores, including lengths 0 and 1 and inputs one position long; gradients by finite
differences; the `transitions` variable; a tiny CRF tagger that learns."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tensorflux as tf

crf = tf.contrib.crf


def _score(x, tr, y):
    return sum(x[t, y[t]] for t in range(len(y))) + \
        sum(tr[y[t - 1], y[t]] for t in range(1, len(y)))


def _paths(length, k):
    return list(itertools.product(range(k), repeat=length))


def _case(seed, b, t, k, lengths):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((b, t, k)), rng.standard_normal((k, k)),
            np.array(lengths), rng.integers(0, k, (b, t)))


@pytest.mark.parametrize("b, t, k, lengths", [
    (3, 4, 3, [4, 2, 1]),
    (2, 5, 2, [5, 0]),         # an empty sequence scores 0
    (2, 1, 4, [1, 1]),         # inputs one position long
    (1, 3, 5, [3]),
])
def test_against_brute_force(b, t, k, lengths):
    x, tr, lens, tags = _case(b * 10 + t, b, t, k, lengths)
    with tf.Graph().as_default():
        ll, _ = crf.crf_log_likelihood(tf.constant(x), tf.constant(tags), tf.constant(lens),
                                       tf.constant(tr))
        seq = crf.crf_sequence_score(tf.constant(x), tf.constant(tags), tf.constant(lens),
                                     tf.constant(tr))
        norm = crf.crf_log_norm(tf.constant(x), tf.constant(lens), tf.constant(tr))
        dec, best = crf.crf_decode(tf.constant(x), tf.constant(tr), tf.constant(lens))
        with tf.Session() as sess:
            got_ll, got_seq, got_norm, got_dec, got_best = sess.run(
                [ll, seq, norm, dec, best])
    for i in range(b):
        n = lens[i]
        if n == 0:
            assert got_seq[i] == 0 and got_norm[i] == 0
            continue
        want_seq = _score(x[i], tr, tags[i, :n])
        want_norm = np.log(sum(np.exp(_score(x[i], tr, y)) for y in _paths(n, k)))
        np.testing.assert_allclose([got_seq[i], got_norm[i], got_ll[i]],
                                   [want_seq, want_norm, want_seq - want_norm], rtol=1e-10)
        path = max(_paths(n, k), key=lambda y, i=i: _score(x[i], tr, y))
        assert tuple(got_dec[i, :n]) == path
        assert np.all(got_dec[i, n:] == 0)
        np.testing.assert_allclose(got_best[i], _score(x[i], tr, path), rtol=1e-10)
        vpath, vscore = crf.viterbi_decode(x[i, :n], tr)
        assert tuple(vpath) == path and vscore == pytest.approx(_score(x[i], tr, path))
    assert got_dec.dtype == np.int32


def test_multitag_sequence_score():
    x, tr, lens, _ = _case(5, 2, 3, 3, [3, 2])
    bitmap = np.array([[[1, 1, 0], [0, 1, 0], [1, 0, 1]],
                       [[0, 0, 1], [1, 1, 1], [1, 1, 1]]], bool)
    with tf.Graph().as_default():
        got = tf.Session().run(crf.crf_multitag_sequence_score(
            tf.constant(x), tf.constant(bitmap), tf.constant(lens), tf.constant(tr)))
    for i in range(2):
        allowed = [y for y in _paths(lens[i], 3) if all(bitmap[i, t, y[t]]
                                                        for t in range(lens[i]))]
        want = np.log(sum(np.exp(_score(x[i], tr, y)) for y in allowed))
        np.testing.assert_allclose(got[i], want, rtol=1e-10)


@pytest.mark.parametrize("wrt", ["inputs", "transitions"])
def test_log_likelihood_gradients(wrt):
    x, tr, lens, tags = _case(7, 2, 3, 3, [3, 2])
    with tf.Graph().as_default():
        xi = tf.placeholder(tf.float64, x.shape)
        ti = tf.placeholder(tf.float64, tr.shape)
        ll, _ = crf.crf_log_likelihood(xi, tf.constant(tags), tf.constant(lens), ti)
        loss = tf.reduce_sum(ll * [1.0, -0.5])
        target, value = (xi, x) if wrt == "inputs" else (ti, tr)
        grad = tf.gradients(loss, target)[0]
        feed = {xi: x, ti: tr}
        with tf.Session() as sess:
            got = sess.run(grad, feed)
            numeric = np.zeros_like(value)
            for idx in np.ndindex(value.shape):
                hi, lo = value.copy(), value.copy()
                hi[idx] += 1e-6
                lo[idx] -= 1e-6
                numeric[idx] = (sess.run(loss, {**feed, target: hi}) -
                                sess.run(loss, {**feed, target: lo})) / 2e-6
    np.testing.assert_allclose(got, numeric, rtol=1e-5, atol=1e-7)


def test_transitions_variable_and_errors():
    with tf.Graph().as_default():
        with tf.variable_scope("tagger"):
            _, trans = crf.crf_log_likelihood(tf.zeros([2, 3, 4]), tf.zeros([2, 3], tf.int32),
                                              tf.constant([3, 2]))
        assert trans.op.name == "tagger/transitions" and trans.shape.as_list() == [4, 4]
        with pytest.raises(ValueError, match="number of tags"):
            crf.crf_log_likelihood(tf.placeholder(tf.float32, [2, 3, None]),
                                   tf.zeros([2, 3], tf.int32), tf.constant([3, 2]))


def test_a_crf_tagger_learns_transitions():
    """Tags follow a fixed cycle 0 -> 1 -> 2 -> 0; the unary scores see only noise, so
    only the transitions can learn it: decoding from a given first tag must follow it."""
    rng = np.random.default_rng(0)
    b, t, k = 16, 6, 3
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        starts = tf.placeholder(tf.int32, [b])
        tags = tf.math.floormod(starts[:, None] + tf.range(t)[None, :], k)
        hint = tf.one_hot(starts, k) * 5.0
        unary = tf.concat([hint[:, None, :], tf.zeros([b, t - 1, k])], 1) + \
            tf.random_normal([b, t, k], stddev=0.1)
        lengths = tf.fill([b], t)
        ll, trans = crf.crf_log_likelihood(unary, tags, lengths)
        train = tf.train.AdamOptimizer(0.1).minimize(-tf.reduce_mean(ll))
        dec, _ = crf.crf_decode(unary, trans, lengths)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(100):
                sess.run(train, {starts: rng.integers(0, k, b)})
            s = rng.integers(0, k, b)
            got, want = sess.run([dec, tags], {starts: s})
    np.testing.assert_array_equal(got, want)
