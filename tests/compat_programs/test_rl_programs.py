"""Gaps found by running MorvanZhou's TF1 reinforcement-learning programs
(MorvanZhou/Reinforcement-learning-with-tensorflow) under tensorflux. Each test rebuilds, in a
few lines of our own, the pattern a program used, checked against NumPy formulas or values
TensorFlow 2.21's tf.compat.v1 gave (the oracle tests rerun them there)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_both


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def _np_normal_log_prob(x, mu, s):
    return -0.5 * ((x - mu) / s) ** 2 - np.log(s) - 0.5 * math.log(2 * math.pi)


def _np_ndtr(z):
    return np.array([0.5 * math.erfc(-v / math.sqrt(2.)) for v in np.ravel(z)]).reshape(
        np.shape(z))


# ---- Gaussian policies (A3C continuous, AC_continue_Pendulum, PPO): tf.distributions.Normal


def test_normal_statistics_match_the_formulas():
    mu = tf.placeholder(tf.float32, [None, 1])
    d = tf.distributions.Normal(mu, tf.constant([[0.5]]))
    x = np.array([[0.3], [-1.2]], np.float32)
    mu_v = np.array([[0.1], [-0.4]], np.float32)
    fetches = [d.log_prob(x), d.prob(x), d.entropy(), d.cdf(x), d.survival_function(x),
               d.quantile(0.3), d.mean(), d.stddev(), d.variance(), d.mode()]
    with tf.Session() as sess:
        lp, p, ent, cdf, sf, q, mean, std, var, mode = sess.run(fetches, {mu: mu_v})
    np.testing.assert_allclose(lp, _np_normal_log_prob(x, mu_v, 0.5), rtol=1e-5)
    np.testing.assert_allclose(p, np.exp(_np_normal_log_prob(x, mu_v, 0.5)), rtol=1e-5)
    np.testing.assert_allclose(ent, np.full((2, 1), 0.5 + 0.5 * math.log(2 * math.pi)
                                            + math.log(0.5)), rtol=1e-6)
    np.testing.assert_allclose(cdf, _np_ndtr((x - mu_v) / 0.5), rtol=1e-5)
    np.testing.assert_allclose(sf, 1 - _np_ndtr((x - mu_v) / 0.5), rtol=1e-5)
    np.testing.assert_allclose(q, mu_v + 0.5 * -0.5244005, rtol=1e-5)  # ndtri(0.3)
    np.testing.assert_allclose(mean, mu_v)
    np.testing.assert_allclose(mode, mu_v)
    np.testing.assert_allclose(std, np.full((2, 1), 0.5))
    np.testing.assert_allclose(var, np.full((2, 1), 0.25))


def test_normal_log_cdf_is_finite_far_in_both_tails():
    d = tf.distributions.Normal(0., 1.)
    z = np.array([-30., -20., -9., -3., 0., 3., 6., 12.], np.float32)
    want = [math.log(0.5 * math.erfc(-v / math.sqrt(2.))) for v in z.astype(np.float64)]
    want_sf = [math.log(0.5 * math.erfc(v / math.sqrt(2.))) for v in z.astype(np.float64)]
    with tf.Session() as sess:
        got, got_sf = sess.run([d.log_cdf(z), d.log_survival_function(z)])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(got_sf, want_sf, rtol=1e-4, atol=1e-7)


def test_normal_names_shapes_and_parameters():
    mu = tf.placeholder(tf.float32, [None, 1])
    d = tf.distributions.Normal(mu, 0.5)
    assert d.name == "Normal/"
    assert d.batch_shape.as_list() == [None, 1] and d.event_shape.as_list() == []
    assert d.dtype == tf.float32 and d.loc.dtype == tf.float32
    assert d.reparameterization_type is tf.distributions.FULLY_REPARAMETERIZED
    assert sorted(d.parameters) == ["allow_nan_stats", "loc", "name", "scale",
                                    "validate_args"]
    assert d.sample(1).shape.as_list() == [1, None, 1]
    assert d.sample([2, 3]).shape.as_list() == [2, 3, None, 1]
    assert d.log_prob(0.).op.name.startswith("Normal/log_prob/")
    assert tf.distributions.Normal(loc=0., scale=1.).name == "Normal_1/"
    scalar = tf.distributions.Normal(loc=0., scale=1.)
    assert scalar.sample().shape.as_list() == [] and scalar.sample(3).shape.as_list() == [3]
    # A3C_continuous_action.py: tf.squeeze(normal_dist.sample(1), axis=[0, 1])
    a = tf.squeeze(d.sample(1), axis=[0, 1])
    with tf.Session() as sess:
        assert sess.run(a, {mu: [[0.2]]}).shape == (1,)
        assert sess.run(d.batch_shape_tensor(), {mu: np.zeros((4, 1))}).tolist() == [4, 1]


def test_normal_samples_follow_loc_and_scale_and_are_reparameterized():
    loc, scale = tf.constant([1.0, -2.0]), tf.constant([0.5, 2.0])
    d = tf.distributions.Normal(loc, scale)
    s = d.sample(20000, seed=7)
    g_loc, g_scale = tf.gradients(tf.reduce_sum(s), [loc, scale])
    with tf.Session() as sess:
        v, gl, gs = sess.run([s, g_loc, g_scale])
    assert v.shape == (20000, 2)
    np.testing.assert_allclose(v.mean(0), [1.0, -2.0], atol=0.05)
    np.testing.assert_allclose(v.std(0), [0.5, 2.0], rtol=0.03)
    np.testing.assert_allclose(gl, [20000., 20000.])  # d(loc + scale * eps)/d loc
    np.testing.assert_allclose(gs, ((v - [1.0, -2.0]) / [0.5, 2.0]).sum(0), rtol=1e-3)


def test_normal_log_prob_gradient_is_the_score():
    # The actor losses: log_prob(a) * td_error, trained through mu and sigma.
    mu, sigma = tf.Variable([0.2, -0.1]), tf.Variable([0.7, 1.3])
    a = np.array([0.5, 0.4], np.float32)
    lp = tf.distributions.Normal(mu, sigma).log_prob(a)
    g_mu, g_sigma = tf.gradients(tf.reduce_sum(lp), [mu, sigma])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        gm, gsig = sess.run([g_mu, g_sigma])
    m, s = np.array([0.2, -0.1]), np.array([0.7, 1.3])
    np.testing.assert_allclose(gm, (a - m) / s ** 2, rtol=1e-5)
    np.testing.assert_allclose(gsig, -1 / s + (a - m) ** 2 / s ** 3, rtol=1e-5)


def test_kl_divergence_between_normals_and_cross_entropy():
    # simply_PPO.py's KL penalty: tf.distributions.kl_divergence(oldpi, pi).
    p = tf.distributions.Normal([0.0, 1.0], [1.0, 0.5])
    q = tf.distributions.Normal(0.5, 2.0)
    kl = tf.distributions.kl_divergence(p, q)
    assert kl.op.name.startswith("KullbackLeibler/kl_normal_normal/")
    with tf.Session() as sess:
        kl_v, same, ce, method = sess.run([kl, tf.distributions.kl_divergence(p, p),
                                           p.cross_entropy(q), p.kl_divergence(q)])
    ma, sa = np.array([0.0, 1.0]), np.array([1.0, 0.5])
    want = np.log(2.0 / sa) + (sa ** 2 + (ma - 0.5) ** 2) / (2 * 4.0) - 0.5
    np.testing.assert_allclose(kl_v, want, rtol=1e-5)
    np.testing.assert_allclose(method, want, rtol=1e-5)
    np.testing.assert_allclose(same, [0.0, 0.0], atol=1e-7)
    np.testing.assert_allclose(ce, want + 0.5 + 0.5 * np.log(2 * np.pi) + np.log(sa),
                               rtol=1e-5)


def test_kl_registry_errors():
    with pytest.raises(NotImplementedError, match="No KL"):
        tf.distributions.kl_divergence(tf.distributions.Uniform(),
                                       tf.distributions.Normal(0., 1.))
    with pytest.raises(ValueError, match="already been registered"):
        tf.distributions.RegisterKL(tf.distributions.Normal,
                                    tf.distributions.Normal)(lambda a, b, name=None: a)


def test_contrib_distributions_is_tf_distributions():
    # experiments/Robot_arm: tf.contrib.distributions.Normal and
    # `from tensorflow.contrib.distributions import Normal`.
    from tensorflux.contrib.distributions import Normal
    assert Normal is tf.distributions.Normal is tf.contrib.distributions.Normal
    import tensorflux.compat.v1 as v1
    assert v1.distributions.Categorical is tf.distributions.Categorical


# ---- discrete policies: Categorical and Bernoulli --------------------------------------


def test_categorical_log_prob_entropy_mode_and_kl():
    logits = np.array([[1., 2., 3.], [0., 0., 1.]], np.float32)
    c = tf.distributions.Categorical(logits=logits)
    assert c.batch_shape.as_list() == [2] and c.event_shape.as_list() == []
    assert c.dtype == tf.int32 and c.sample(4).shape.as_list() == [4, 2]
    other = tf.distributions.Categorical(probs=[0.2, 0.3, 0.5])
    fetches = [c.log_prob([0, 2]), c.log_prob(1), c.entropy(), c.mode(), c.probs,
               c.event_size, tf.distributions.kl_divergence(c, other)]
    with tf.Session() as sess:
        lp, lp1, ent, mode, probs, k, kl = sess.run(fetches)
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    np.testing.assert_allclose(lp, [logp[0, 0], logp[1, 2]], rtol=1e-5)
    np.testing.assert_allclose(lp1, logp[:, 1], rtol=1e-5)
    np.testing.assert_allclose(ent, -(np.exp(logp) * logp).sum(1), rtol=1e-5)
    assert mode.tolist() == [2, 2] and k == 3
    np.testing.assert_allclose(probs, np.exp(logp), rtol=1e-5)
    np.testing.assert_allclose(
        kl, (np.exp(logp) * (logp - np.log([0.2, 0.3, 0.5]))).sum(1), rtol=1e-4)


def test_categorical_samples_follow_probs():
    c = tf.distributions.Categorical(probs=[[0.1, 0.6, 0.3]])
    s = c.sample(20000, seed=3)
    with tf.Session() as sess:
        v = sess.run(s)
    assert v.shape == (20000, 1) and v.dtype == np.int32
    np.testing.assert_allclose(np.bincount(v.ravel(), minlength=3) / 20000,
                               [0.1, 0.6, 0.3], atol=0.015)


def test_bernoulli_statistics_and_kl():
    b = tf.distributions.Bernoulli(probs=[0.2, 0.7])
    assert b.batch_shape.as_list() == [2] and b.sample(5).shape.as_list() == [5, 2]
    q = tf.distributions.Bernoulli(logits=0.3)
    fetches = [b.log_prob([1, 0]), b.log_prob(1), b.entropy(), b.mean(), b.variance(),
               b.mode(), b.prob([1, 0]), tf.distributions.kl_divergence(b, q),
               b.sample(20000, seed=1)]
    with tf.Session() as sess:
        lp, lp1, ent, mean, var, mode, prob, kl, s = sess.run(fetches)
    p = np.array([0.2, 0.7])
    np.testing.assert_allclose(lp, np.log([0.2, 0.3]), rtol=1e-5)
    np.testing.assert_allclose(lp1, np.log(p), rtol=1e-5)
    np.testing.assert_allclose(ent, -(p * np.log(p) + (1 - p) * np.log(1 - p)), rtol=1e-5)
    np.testing.assert_allclose(mean, p, rtol=1e-6)
    np.testing.assert_allclose(var, p * (1 - p), rtol=1e-5)
    assert mode.tolist() == [0, 1]
    np.testing.assert_allclose(prob, [0.2, 0.3], rtol=1e-5)
    pq = 1 / (1 + math.exp(-0.3))
    np.testing.assert_allclose(
        kl, p * np.log(p / pq) + (1 - p) * np.log((1 - p) / (1 - pq)), rtol=1e-4)
    np.testing.assert_allclose(s.mean(0), p, atol=0.015)


def test_uniform_statistics_and_samples():
    u = tf.distributions.Uniform(low=[0., 1.], high=3.)
    assert u.batch_shape.as_list() == [2] and u.sample(2).shape.as_list() == [2, 2]
    fetches = [u.prob([0.5, 0.5]), u.log_prob([2., 4.]), u.entropy(), u.mean(),
               u.variance(), u.stddev(), u.cdf([1.5, 1.5]), u.sample(10000, seed=5)]
    with tf.Session() as sess:
        prob, lp, ent, mean, var, std, cdf, s = sess.run(fetches)
    np.testing.assert_allclose(prob, [1 / 3, 0.0], rtol=1e-6)
    np.testing.assert_allclose(lp, [np.log(1 / 3), -np.inf], rtol=1e-6)
    np.testing.assert_allclose(ent, np.log([3., 2.]), rtol=1e-6)
    np.testing.assert_allclose(mean, [1.5, 2.0])
    np.testing.assert_allclose(var, [9 / 12, 4 / 12], rtol=1e-6)
    np.testing.assert_allclose(std, np.sqrt([9 / 12, 4 / 12]), rtol=1e-6)
    np.testing.assert_allclose(cdf, [0.5, 0.25], rtol=1e-6)
    assert s.min(0)[0] >= 0.0 and s.min(0)[1] >= 1.0 and (s.max(0) < 3.0).all()


_ORACLE_PROGRAM = """
mu = tf.placeholder(tf.float32, [None, 1])
d = tf.distributions.Normal(mu, tf.constant([[0.5]]))
p = tf.distributions.Normal([0.0, 1.0], [1.0, 0.5])
c = tf.distributions.Categorical(logits=[[1., 2., 3.], [0., 0., 1.]])
b = tf.distributions.Bernoulli(probs=[0.2, 0.7])
u = tf.distributions.Uniform(low=[0., 1.], high=3.)
fetches = [d.log_prob([[0.3]]), d.entropy(), d.log_cdf(-3.), d.quantile(0.3),
           tf.distributions.kl_divergence(p, tf.distributions.Normal(0.5, 2.0)),
           c.log_prob([0, 2]), c.entropy(), c.mode(),
           tf.distributions.kl_divergence(c, tf.distributions.Categorical(probs=[.2, .3, .5])),
           b.log_prob([1, 0]), b.entropy(),
           tf.distributions.kl_divergence(b, tf.distributions.Bernoulli(logits=0.3)),
           u.prob([0.5, 0.5]), u.cdf([1.5, 1.5])]
with tf.Session() as sess:
    values = sess.run(fetches, {mu: [[0.1], [-0.4]]})
result = {"values": [np.asarray(v).tolist() for v in values],
          "names": [d.name, d.sample(1).shape.as_list(), c.batch_shape.as_list(),
                    str(d.reparameterization_type)]}
"""


@pytest.mark.oracle
def test_distributions_match_tensorflow():
    ours, theirs = run_both(_ORACLE_PROGRAM, tf)
    assert ours["names"] == theirs["names"]
    for a, b in zip(ours["values"], theirs["values"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# ---- the DQNs' RMSPropOptimizer: TF's float32 arithmetic, step for step ----------------


def _tf_rms_prop_steps(w, grads, lr=0.01, rho=0.9, momentum=0.0, eps=1e-10):
    """TF's ApplyRMSProp in float32: ms += (g^2 - ms)(1 - rho); mom = mom * momentum +
    g * lr / sqrt(ms + eps); w -= mom (ms starts at ones, as TF1's optimizer makes it)."""
    f = np.float32
    w, ms, mom = w.copy(), np.ones_like(w), np.zeros_like(w)
    for g in grads:
        ms += (np.square(g) - ms) * (f(1) - f(rho))
        mom = mom * f(momentum) + g * f(lr) / np.sqrt(ms + f(eps))
        w -= mom
    return w


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_rms_prop_update_is_bit_identical_to_tensorflows_arithmetic(momentum):
    # rho * ms + (1 - rho) * g^2 is the same number in exact arithmetic but not in float32;
    # a DQN that picks argmax actions from the weights then follows another trajectory.
    rng = np.random.RandomState(0)
    w0 = rng.randn(64).astype(np.float32)
    grads = rng.randn(30, 64).astype(np.float32)
    g = tf.placeholder(tf.float32, [64])
    w = tf.Variable(w0)
    step = tf.train.RMSPropOptimizer(0.01, momentum=momentum).apply_gradients([(g, w)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for row in grads:
            sess.run(step, {g: row})
        got = sess.run(w)
    np.testing.assert_array_equal(got, _tf_rms_prop_steps(w0, grads, momentum=momentum))


@pytest.mark.oracle
def test_rms_prop_matches_tensorflow_bit_for_bit():
    program = """
rng = np.random.RandomState(0)
w = tf.Variable(rng.randn(64).astype(np.float32))
g = tf.placeholder(tf.float32, [64])
step = tf.train.RMSPropOptimizer(0.01).apply_gradients([(g, w)])
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for row in rng.randn(100, 64).astype(np.float32):
        sess.run(step, {g: row})
    result = sess.run(w).tolist()
"""
    ours, theirs = run_both(program, tf)
    np.testing.assert_array_equal(np.float32(ours), np.float32(theirs))
