"""tf.contrib.metrics' streaming_covariance, streaming_pearson_correlation and
streaming_concat against NumPy over several batches (weighted and not)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.contrib import metrics

pytestmark = pytest.mark.timeout(60)
RNG = np.random.default_rng(1)
BATCHES = [RNG.normal(size=(n, 2)).astype(np.float32) @ np.array([[1.0, 0.8], [0.0, 0.6]],
                                                                   np.float32)
           for n in (4, 1, 7, 3)]
WEIGHTS = [RNG.uniform(0.5, 2.0, len(b)).astype(np.float32) for b in BATCHES]


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def _weighted_cov(x, y, w):
    mx, my = np.average(x, weights=w), np.average(y, weights=w)
    return (w * (x - mx) * (y - my)).sum() / (w.sum() - 1.0)


@pytest.mark.parametrize("weighted", [False, True])
def test_covariance_and_pearson_over_batches_equal_numpys(weighted):
    p = tf.placeholder(tf.float32, [None])
    lab = tf.placeholder(tf.float32, [None])
    w = tf.placeholder(tf.float32, [None]) if weighted else None
    cov, cov_update = metrics.streaming_covariance(p, lab, weights=w)
    r, r_update = metrics.streaming_pearson_correlation(p, lab, weights=w)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert np.isnan(sess.run(cov)) and np.isnan(sess.run(r))
        seen = []
        for batch, weights in zip(BATCHES, WEIGHTS, strict=True):
            feed = {p: batch[:, 0], lab: batch[:, 1]}
            if weighted:
                feed[w] = weights
            got_cov, got_r = sess.run([cov_update, r_update], feed)
            seen.append((batch, weights if weighted else np.ones(len(batch), np.float32)))
            x = np.concatenate([b[:, 0] for b, _ in seen]).astype(np.float64)
            y = np.concatenate([b[:, 1] for b, _ in seen]).astype(np.float64)
            ws = np.concatenate([v for _, v in seen]).astype(np.float64)
            want_cov = _weighted_cov(x, y, ws)
            want_r = want_cov / np.sqrt(_weighted_cov(x, x, ws) * _weighted_cov(y, y, ws))
            np.testing.assert_allclose(got_cov, want_cov, rtol=1e-5)
            np.testing.assert_allclose(got_r, want_r, rtol=1e-5)
            if not weighted:
                np.testing.assert_allclose(got_cov, np.cov(x, y)[0, 1], rtol=1e-5)
                np.testing.assert_allclose(got_r, np.corrcoef(x, y)[0, 1], rtol=1e-5)
        np.testing.assert_allclose(sess.run(cov), got_cov, rtol=1e-6)


def test_one_value_is_nan_and_collections_get_the_tensors():
    p = tf.placeholder(tf.float32, [None])
    value, update = metrics.streaming_covariance(p, p * 2.0, metrics_collections=["m"],
                                                 updates_collections=["u"], name="cv")
    assert tf.get_collection("m") == [value] and tf.get_collection("u") == [update]
    assert {v.op.name for v in tf.local_variables()} == {
        "cv/count", "cv/mean_prediction", "cv/mean_label", "cv/comoment"}
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert np.isnan(sess.run(update, {p: [3.0]}))
        assert sess.run(update, {p: [1.0]}) == pytest.approx(4.0)  # cov(x, 2x) = 2 var(x)


def test_concat_keeps_every_batch_up_to_max_size():
    x = tf.placeholder(tf.float32, [2, None])
    value, update = metrics.streaming_concat(x, axis=1, max_size=5)
    assert value.shape.as_list() == [2, None]
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(value).shape == (2, 0)
        batches = [np.arange(6, dtype=np.float32).reshape(2, 3) + 10 * i for i in range(3)]
        for b in batches:
            got = sess.run(update, {x: b})
        np.testing.assert_array_equal(got, np.concatenate(batches, axis=1)[:, :5])
        np.testing.assert_array_equal(sess.run(value), got)


def test_concat_needs_known_dimensions_off_the_axis():
    with pytest.raises(ValueError, match="known statically"):
        metrics.streaming_concat(tf.placeholder(tf.float32, [None, None]))
    with pytest.raises(ValueError, match="known rank"):
        metrics.streaming_concat(tf.placeholder(tf.float32))
