"""tf.contrib.factorization's Gaussian mixtures against EM by hand in NumPy: the
initialization, one and several EM steps for full and diagonal covariances and subsets of
the updated parameters, assignments, scores and the loss; shards; the GMM estimator; typed
errors."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.contrib.factorization import GMM, gmm_ops

pytestmark = pytest.mark.timeout(120)
RNG = np.random.RandomState(0)
X = RNG.permutation(np.concatenate(
    [RNG.multivariate_normal(m, c, 30) for m, c in (
        ((0, 0), [[0.5, 0.2], [0.2, 0.3]]), ((4, 0), [[0.3, 0], [0, 0.6]]),
        ((0, 4), [[0.4, -0.1], [-0.1, 0.4]]))])).astype(np.float32)
START = X[[0, 1, 2]]
EPS = np.finfo(float).eps


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


class _EM:
    """EM by hand: the same model in float64."""

    def __init__(self, x, means, diag, first_shard=None):
        self.x, self.diag, k = x.astype(np.float64), diag, len(means)
        # The initial covariance is the first shard's.
        c = np.cov((x if first_shard is None else first_shard).T.astype(np.float64)) \
            + 1e-3 * np.eye(x.shape[1])
        self.means = means.astype(np.float64)
        self.covs = np.stack([np.diag(c) if diag else c] * k)
        self.alpha = np.full(k, 1.0 / k)

    def log_p(self):
        out = []
        for mu, cov, a in zip(self.means, self.covs, self.alpha, strict=True):
            s = np.diag(cov + 1e-3) if self.diag else cov + 1e-3 * np.eye(len(mu))
            diff = self.x - mu
            maha = np.einsum("ni,ij,nj->n", diff, np.linalg.inv(s), diff)
            out.append(np.log(a) - 0.5 * (maha + np.linalg.slogdet(s)[1]
                                          + len(mu) * np.log(2 * np.pi)))
        return np.stack(out, 1)

    def scores(self):
        lp = self.log_p()
        top = lp.max(1, keepdims=True)
        return top + np.log(np.exp(lp - top).sum(1, keepdims=True))

    def step(self, params):
        w = np.exp(self.log_p() - self.scores())
        mass = w.sum(0)
        if "w" in params:
            self.alpha = mass / (mass.sum() + EPS)
        if "m" in params:
            self.means = (w.T @ self.x) / (mass[:, None] + EPS)
        if "c" in params:
            second = np.einsum("nk,ni,nj->kij", w, self.x, self.x) / (mass[:, None, None] + EPS)
            covs = second - np.einsum("ki,kj->kij", self.means, self.means) \
                + 1e-3 * np.eye(self.x.shape[1])
            self.covs = np.stack([np.diag(c) for c in covs]) if self.diag else covs


def _fit(cov_type, params, steps, shards=1, initial=START):
    x = [tf.placeholder(tf.float32, [None, 2]) for _ in range(shards)]
    parts = np.array_split(X, shards)
    feed = dict(zip(x, parts, strict=True))
    loss, scores, assign, train, init, done = gmm_ops.gmm(
        x if shards > 1 else x[0], initial, 3, 0, cov_type, params)
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    sess.run(init, feed)
    for _ in range(steps):
        sess.run(train, feed)
    var = {v.op.name: v for v in tf.global_variables()}
    return sess, feed, (loss, scores, assign, done), var


@pytest.mark.parametrize("cov_type, params, steps", [
    ("full", "wmc", 0), ("full", "wmc", 1), ("full", "wmc", 4), ("diag", "wmc", 1),
    ("diag", "wmc", 4), ("full", "mc", 2), ("full", "w", 2), ("diag", "wm", 2)])
def test_em_steps_equal_em_by_hand(cov_type, params, steps):
    sess, feed, (loss, scores, assign, done), var = _fit(cov_type, params, steps)
    em = _EM(X, START, cov_type == "diag")
    for _ in range(steps):
        em.step(params)
    assert sess.run(done)
    np.testing.assert_allclose(sess.run(var["alpha"]), em.alpha, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(sess.run(var["clusters"])[:, 0], em.means, rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(sess.run(var["clusters_covs"]), em.covs, rtol=1e-3,
                               atol=1e-4)
    got_scores, got_assign, got_loss = sess.run([scores, assign[0][0], loss], feed)
    want = em.scores()
    np.testing.assert_allclose(got_scores, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(got_assign, em.log_p().argmax(1))
    top = want.max()
    assert got_loss == pytest.approx(top + np.log(np.exp(want - top).sum()), rel=1e-4)


def test_shards_make_the_same_em_step():
    sess1, feed1, (_, scores1, assign1, _), var1 = _fit("full", "wmc", 2, shards=3)
    em = _EM(X, START, False, first_shard=np.array_split(X, 3)[0])
    for _ in range(2):
        em.step("wmc")
    np.testing.assert_allclose(sess1.run(var1["clusters"])[:, 0], em.means, rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(sess1.run(scores1, feed1), em.scores(), rtol=1e-4, atol=1e-4)
    assert len(assign1[0]) == 3


def test_random_initial_means_are_input_rows_and_the_likelihood_grows():
    sess, feed, (loss, _, _, _), var = _fit("full", "wmc", 0, initial="random")
    means = sess.run(var["clusters"])[:, 0]
    assert {tuple(m) for m in means} <= {tuple(r) for r in X}
    train = [op for op in tf.get_default_graph().get_operations()
             if op.name.endswith("gmm_train")][0]
    losses = []
    for _ in range(8):
        losses.append(sess.run(loss, feed))
        sess.run(train, feed)
    assert all(b >= a - 1e-4 for a, b in zip(losses, losses[1:], strict=False))


@pytest.mark.parametrize("kwargs", [{"covariance_type": "spherical"}, {"params": "wx"},
                                    {"num_clusters": 0}])
def test_bad_arguments_are_value_errors(kwargs):
    args = {"inp": tf.placeholder(tf.float32, [None, 2]), "initial_clusters": "random",
            "num_clusters": 3, "random_seed": 0, **kwargs}
    with pytest.raises(ValueError):
        gmm_ops.gmm(**args)


def test_too_few_rows_for_random_means_is_an_invalid_argument():
    x = tf.placeholder(tf.float32, [None, 2])
    init_op = gmm_ops.gmm(x, "random", 5, 0)[4]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError, match="num_clusters=5"):
            sess.run(init_op, {x: X[:3]})


def test_the_gmm_estimator(tmp_path):
    def input_fn():
        return tf.train.limit_epochs(tf.constant(X), num_epochs=None)

    def one_pass():
        return tf.train.limit_epochs(tf.constant(X), num_epochs=1)

    est = GMM(3, model_dir=str(tmp_path), initial_clusters=START, covariance_type="full")
    est.train(input_fn, steps=2)
    est.fit(input_fn=input_fn, steps=1)  # contrib.learn's name
    em = _EM(X, START, False)
    for _ in range(3):
        em.step("wmc")
    np.testing.assert_allclose(est.clusters(), em.means, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(est.covariances(), em.covs, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(est.weights(), em.alpha, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(list(est.predict_assignments(one_pass)),
                                  em.log_p().argmax(1))
    assert est.score(one_pass, steps=1) == pytest.approx(em.scores().sum(), rel=1e-4)
    assert est.get_variable_value("global_step") == 3
