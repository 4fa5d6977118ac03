"""tf.distributions beyond Normal/Categorical/Bernoulli/Uniform: one table of records
checked against SciPy (log_prob, cdf, moments, entropy, KL), sample statistics with fixed
seeds, gradients (finite differences through log_prob; the reparameterized samples'
pathwise derivatives against closed forms), validate_args errors, and one comparison with
TensorFlow (values, names and seeded samples)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest
from scipy import special, stats

import tensorflux as tf
from tests.oracle import run_both

D = tf.distributions
F64 = tf.float64


def _c(v):
    return tf.constant(np.asarray(v, np.float64), F64)


@pytest.fixture(autouse=True)
def _fresh_graph():
    with tf.Graph().as_default():
        yield


@dataclasses.dataclass
class Case:
    name: str
    build: Callable  # () -> distribution (float64 parameters)
    x: np.ndarray  # points for log_prob / cdf
    scipy: object  # frozen scipy distribution with the same batch (or None)
    log_prob: Callable | None = None  # numpy reference when scipy has no frozen one
    has_cdf: bool = True


_DIR_A = np.array([[1.5, 2., 3.], [2., 0.8, 4.]])
_COUNTS = np.array([[1., 2., 2.], [0., 4., 1.]])
_PROBS = np.array([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]])


def _dirichlet_log_prob(x):
    return np.array([stats.dirichlet(a).logpdf(xi) for a, xi in zip(_DIR_A, x, strict=True)])


def _multinomial_log_prob(x):
    return np.array([stats.multinomial(5, p).logpmf(xi) for p, xi in zip(_PROBS, x, strict=True)])


def _dm_log_prob(x):
    n, a = 5., _DIR_A
    return (special.gammaln(n + 1) - special.gammaln(x + 1).sum(-1)
            + special.gammaln(a.sum(-1)) - special.gammaln(n + a.sum(-1))
            + (special.gammaln(x + a) - special.gammaln(a)).sum(-1))


CASES = [
    Case("Gamma", lambda: D.Gamma(_c([2., 0.7, 3.]), _c([1., 0.5, 2.])),
         np.array([1.5, 0.3, 2.5]), stats.gamma([2., 0.7, 3.], scale=1 / np.array([1., 0.5, 2.]))),
    Case("Exponential", lambda: D.Exponential(_c([1., 2., 0.3])), np.array([1.5, 0.5, 4.]),
         stats.expon(scale=1 / np.array([1., 2., 0.3]))),
    Case("Beta", lambda: D.Beta(_c([2., 3., 0.5]), _c([1.5, 4., 0.7])),
         np.array([0.3, 0.7, 0.1]), stats.beta([2., 3., 0.5], [1.5, 4., 0.7])),
    Case("Laplace", lambda: D.Laplace(_c([0., 1., -2.]), _c([1., 2., 0.5])),
         np.array([0.5, -1., -2.2]), stats.laplace([0., 1., -2.], [1., 2., 0.5])),
    Case("StudentT", lambda: D.StudentT(_c([3., 5., 30.]), _c([0., 1., -1.]),
                                         _c([1., 2., 0.5])),
         np.array([0.5, -1., 3.]), stats.t([3., 5., 30.], [0., 1., -1.], [1., 2., 0.5])),
    Case("Dirichlet", lambda: D.Dirichlet(_c(_DIR_A)),
         np.array([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]]), None, _dirichlet_log_prob, False),
    Case("Multinomial", lambda: D.Multinomial(_c(5.), probs=_c(_PROBS)), _COUNTS, None,
         _multinomial_log_prob, False),
    Case("DirichletMultinomial", lambda: D.DirichletMultinomial(_c(5.), _c(_DIR_A)),
         _COUNTS, None, _dm_log_prob, False),
]
_IDS = [c.name for c in CASES]


def _moments(case):
    """NumPy reference mean/variance (and entropy where there is one)."""
    if case.scipy is not None:
        return case.scipy.mean(), case.scipy.var(), case.scipy.entropy()
    if case.name == "Dirichlet":
        a0 = _DIR_A.sum(-1, keepdims=True)
        m = _DIR_A / a0
        ent = np.array([stats.dirichlet(a).entropy() for a in _DIR_A])
        return m, m * (1 - m) / (a0 + 1), ent
    if case.name == "Multinomial":
        return 5 * _PROBS, 5 * _PROBS * (1 - _PROBS), None
    a0 = _DIR_A.sum(-1, keepdims=True)
    p = _DIR_A / a0
    return 5 * p, 5 * p * (1 - p) * (5 + a0) / (1 + a0), None


@pytest.mark.parametrize("case", CASES, ids=_IDS)
def test_statistics_match_scipy(case):
    d = case.build()
    ref_mean, ref_var, ref_ent = _moments(case)
    ts = {"log_prob": d.log_prob(case.x), "prob": d.prob(case.x), "mean": d.mean(),
          "variance": d.variance(), "stddev": d.stddev()}
    if case.has_cdf:
        ts["cdf"] = d.cdf(case.x)
    if ref_ent is not None:
        ts["entropy"] = d.entropy()
    with tf.Session() as sess:
        got = sess.run(ts)
    ref_lp = case.scipy.logpdf(case.x) if case.scipy is not None else case.log_prob(case.x)
    np.testing.assert_allclose(got["log_prob"], ref_lp, rtol=1e-6)
    np.testing.assert_allclose(got["prob"], np.exp(ref_lp), rtol=1e-6)
    np.testing.assert_allclose(got["mean"], ref_mean, rtol=1e-6)
    np.testing.assert_allclose(got["variance"], ref_var, rtol=1e-6)
    np.testing.assert_allclose(got["stddev"], np.sqrt(ref_var), rtol=1e-6)
    if case.has_cdf:
        np.testing.assert_allclose(got["cdf"], case.scipy.cdf(case.x), rtol=1e-6)
    if ref_ent is not None:
        np.testing.assert_allclose(got["entropy"], ref_ent, rtol=1e-6)
    assert d.batch_shape.as_list() == [np.shape(case.x)[0]]
    assert d.event_shape.as_list() == list(np.shape(case.x)[1:])


@pytest.mark.parametrize("case", CASES, ids=_IDS)
def test_sample_moments_and_shapes(case):
    n = 20000
    d = case.build()
    s = d.sample([n], seed=11)
    batch = np.shape(case.x)[0]
    assert s.shape.as_list() == [n] + list(np.shape(case.x))
    with tf.Session() as sess:
        draws = sess.run(s)
    ref_mean, ref_var, _ = _moments(case)
    if case.name == "StudentT":  # heavy tails: compare medians and quartiles instead
        np.testing.assert_allclose(np.median(draws, 0), case.scipy.median(), atol=0.06)
        return
    se = np.sqrt(ref_var / n)
    assert np.all(np.abs(draws.mean(0) - ref_mean) < 5 * se + 1e-12), case.name
    np.testing.assert_allclose(draws.var(0), ref_var, rtol=0.1)
    assert draws.shape[1] == batch


def test_cdf_extras():
    lap = D.Laplace(_c([0., 1.]), _c([1., 2.]))
    x = np.array([-30., 2.])
    exp = D.Exponential(_c([1., 2.]))
    with tf.Session() as sess:
        lc, ls, ec, el = sess.run([lap.log_cdf(x), lap.log_survival_function(x),
                                   exp.cdf([0.5, 1.]),
                                   exp.log_survival_function([0.5, 1.])])
    ref = stats.laplace([0., 1.], [1., 2.])
    np.testing.assert_allclose(lc, ref.logcdf(x), rtol=1e-9)
    np.testing.assert_allclose(ls, ref.logsf(x), rtol=1e-9)
    np.testing.assert_allclose(ec, 1 - np.exp(-np.array([0.5, 2.])), rtol=1e-9)
    np.testing.assert_allclose(el, -np.array([0.5, 2.]), rtol=1e-9)


def test_modes_and_undefined_statistics():
    g = D.Gamma(_c([0.5, 3.]), _c([1., 2.]))
    b = D.Beta(_c([2., 0.5]), _c([3., 2.]))
    dr = D.Dirichlet(_c([[2., 3., 4.], [0.5, 2., 2.]]))
    t = D.StudentT(_c([0.5, 1.5, 4.]), _c([1., 2., 3.]), _c(2.))
    with tf.Session() as sess:
        gm, bm, dm, tm, tv = sess.run([g.mode(), b.mode(), dr.mode(), t.mean(),
                                       t.variance()])
    np.testing.assert_allclose(gm, [np.nan, 1.], equal_nan=True)
    np.testing.assert_allclose(bm, [1 / 3., np.nan], equal_nan=True)
    np.testing.assert_allclose(dm, [[1 / 6., 2 / 6., 3 / 6.], [np.nan] * 3], equal_nan=True)
    np.testing.assert_allclose(tm, [np.nan, 2., 3.], equal_nan=True)
    np.testing.assert_allclose(tv, [np.nan, np.inf, 8.], equal_nan=True)


def _kl_gamma(a0, b0, a1, b1):
    return ((a0 - a1) * special.digamma(a0) + special.gammaln(a1) - special.gammaln(a0)
            + a1 * (np.log(b0) - np.log(b1)) + a0 * (b1 / b0 - 1))


def _kl_numeric(p, q, lo, hi):
    """KL by quadrature of p.pdf * (p.logpdf - q.logpdf) on (lo, hi)."""
    from scipy import integrate
    return integrate.quad(lambda x: p.pdf(x) * (p.logpdf(x) - q.logpdf(x)), lo, hi)[0]


def test_kl_divergences():
    a0, b0, a1, b1 = np.array([2., 0.7]), np.array([1., 3.]), np.array([1., 2.]), np.array(
        [2., 0.5])
    da, db = np.array([[1.5, 2., 3.]]), np.array([[1., 4., 0.5]])
    kls = [D.kl_divergence(D.Gamma(_c(a0), _c(b0)), D.Gamma(_c(a1), _c(b1))),
           D.kl_divergence(D.Exponential(_c(b0)), D.Exponential(_c(b1))),
           D.kl_divergence(D.Beta(_c(a0), _c(b0)), D.Beta(_c(a1), _c(b1))),
           D.kl_divergence(D.Dirichlet(_c(da)), D.Dirichlet(_c(db)))]
    with tf.Session() as sess:
        kg, ke, kb, kd = sess.run(kls)
    np.testing.assert_allclose(kg, _kl_gamma(a0, b0, a1, b1), rtol=1e-9)
    np.testing.assert_allclose(kg, [_kl_numeric(stats.gamma(a0[i], scale=1 / b0[i]),
                                                stats.gamma(a1[i], scale=1 / b1[i]), 0, np.inf)
                                    for i in range(2)], rtol=1e-5)
    np.testing.assert_allclose(ke, _kl_gamma(1., b0, 1., b1), rtol=1e-9)
    np.testing.assert_allclose(kb, [_kl_numeric(stats.beta(a0[i], b0[i]),
                                                stats.beta(a1[i], b1[i]), 0, 1)
                                    for i in range(2)], rtol=1e-5)

    def lbeta(a):
        return special.gammaln(a).sum(-1) - special.gammaln(a.sum(-1))
    ref_d = ((da - db) * (special.digamma(da) - special.digamma(da.sum(-1, keepdims=True)))
             ).sum(-1) - lbeta(da) + lbeta(db)
    np.testing.assert_allclose(kd, ref_d, rtol=1e-9)
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Laplace(0., 1.), D.Laplace(0., 2.))


@pytest.mark.parametrize("build, x", [
    (lambda p: D.Gamma(p[0], p[1]), [1.5, 0.4]),
    (lambda p: D.Beta(p[0], p[1]), [0.3, 0.8]),
    (lambda p: D.StudentT(p[0] + 2., p[1], p[0]), [0.5, -1.]),
    (lambda p: D.Laplace(p[1], p[0]), [0.3, 2.]),
    (lambda p: D.Dirichlet(tf.stack([p[0], p[1]], -1)), [[0.3, 0.7], [0.6, 0.4]]),
], ids=["Gamma", "Beta", "StudentT", "Laplace", "Dirichlet"])
def test_log_prob_gradients_by_finite_differences(build, x):
    p = tf.placeholder(F64, [2, 2])
    y = build(p).log_prob(np.asarray(x))
    with tf.Session():
        err = tf.test.compute_gradient_error(p, [2, 2], y, y.shape.as_list(),
                                             x_init_value=np.array([[1.5, 2.], [3., 0.8]]),
                                             delta=1e-6)
    assert err < 1e-6


@pytest.mark.parametrize("build", [
    lambda p: D.kl_divergence(D.Gamma(p[0], p[1]), D.Gamma(p[1], p[0])),
    lambda p: D.kl_divergence(D.Beta(p[0], p[1]), D.Beta(p[1], p[0])),
    lambda p: D.kl_divergence(D.Dirichlet(p), D.Dirichlet(p[::-1])),
    lambda p: D.Gamma(p[0], p[1]).entropy(),
    lambda p: D.Beta(p[0], p[1]).entropy(),
    lambda p: D.StudentT(p[0] + 1., 0., p[1]).entropy(),
    lambda p: D.Dirichlet(p).entropy(),
], ids=["kl_gamma", "kl_beta", "kl_dirichlet", "entropy_gamma", "entropy_beta",
        "entropy_student_t", "entropy_dirichlet"])
def test_kl_and_entropy_gradients_by_finite_differences(build):
    """Through digamma (its gradient is polygamma(1, x))."""
    p = tf.placeholder(F64, [2, 2])
    y = build(p)
    with tf.Session():
        err = tf.test.compute_gradient_error(p, [2, 2], y, y.shape.as_list(),
                                             x_init_value=np.array([[1.5, 2.], [3., 0.8]]),
                                             delta=1e-6)
    assert err < 1e-6


def test_reparameterized_sample_gradients():
    """Pathwise derivatives (samples and gradients from one run): Gamma's in the rate is
    -x / rate and in the concentration -(dF/dalpha) / pdf (implicit reparameterization);
    Laplace's are 1 in loc and (x - loc) / scale in scale."""
    alpha, rate, loc, scale = _c([0.7, 3.]), _c([2., 0.5]), _c(1.), _c(2.)
    xg = D.Gamma(alpha, rate).sample(5, seed=3)
    xl = D.Laplace(loc, scale).sample(5, seed=4)
    grads = tf.gradients(xg, [alpha, rate]) + tf.gradients(xl, [loc, scale])
    assert D.Gamma(1., 1.).reparameterization_type == D.FULLY_REPARAMETERIZED
    assert D.Multinomial(2., logits=[0., 1.]).reparameterization_type == D.NOT_REPARAMETERIZED
    with tf.Session() as sess:
        g, lx, (ga, gr, gl, gs) = sess.run([xg, xl, grads])
    a, r = np.array([0.7, 3.]), np.array([2., 0.5])
    np.testing.assert_allclose(gr, (-g / r).sum(0), rtol=1e-9)
    h = 1e-6
    dfda = (special.gammainc(a + h, g * r) - special.gammainc(a - h, g * r)) / (2 * h)
    dxda = -dfda / (stats.gamma(a).pdf(g * r) * r)
    np.testing.assert_allclose(ga, dxda.sum(0), rtol=1e-4)
    np.testing.assert_allclose(gl, 5.)
    np.testing.assert_allclose(gs, ((lx - 1.) / 2.).sum(), rtol=1e-9)


def test_validate_args_errors_at_run_time():
    c = tf.placeholder(tf.float32, [2])
    lp = D.Gamma(c, 1., validate_args=True).log_prob([1., 1.])
    bx = tf.placeholder(tf.float32, [])
    blp = D.Beta(2., 3., validate_args=True).log_prob(bx)
    mode = D.Gamma(c, 1., allow_nan_stats=False).mode()
    t = D.StudentT(c, 0., 1., validate_args=True).log_prob(0.)
    with tf.Session() as sess:
        assert sess.run(lp, {c: [1., 2.]}).shape == (2,)
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(lp, {c: [-1., 2.]})
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(blp, {bx: 1.5})
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(mode, {c: [0.5, 2.]})
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(t, {c: [0., 2.]})
    with pytest.raises(ValueError):
        D.Multinomial(3., logits=[0., 1.], probs=[0.5, 0.5])


def test_names_shapes_and_parameters():
    e = D.Exponential([1., 2.])
    assert e.name == "Exponential/" and e.batch_shape.as_list() == [2]
    assert set(e.parameters) == {"rate", "validate_args", "allow_nan_stats", "name"}
    b = D.Beta([1., 2.], 3.)
    assert b.log_prob(0.5).name.startswith("Beta/log_prob/")
    dm = D.DirichletMultinomial(4., [[1., 2., 3.]])
    assert dm.event_shape.as_list() == [3] and dm.batch_shape.as_list() == [1]
    assert dm.sample(2, seed=1).shape.as_list() == [2, 1, 3]
    assert tf.contrib.distributions.StudentT is D.StudentT


_ORACLE_PROGRAM = """
d = tf.distributions
counts = tf.constant([[1., 2., 2.], [0., 4., 1.]])
dists = [
    (d.Gamma([2., 3.], [1., 0.5]), [1.5, 2.5]),
    (d.Exponential([1., 2.]), [1.5, 0.5]),
    (d.Beta([2., 3.], [1.5, 4.]), [0.3, 0.7]),
    (d.Laplace([0., 1.], [1., 2.]), [0.5, -1.]),
    (d.StudentT([3., 5.], [0., 1.], [1., 2.]), [0.5, -1.]),
    (d.Dirichlet([[1.5, 2., 3.], [2., 2., 2.]]), [[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]]),
    (d.Multinomial(5., probs=[[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]]), counts),
    (d.DirichletMultinomial(5., [[1.5, 2., 3.], [2., 2., 2.]]), counts),
]
ts, names = [], []
for i, (dist, x) in enumerate(dists):
    lp, mean, var = dist.log_prob(x), dist.mean(), dist.variance()
    ts += [lp, mean, var]
    names += [dist.name, lp.name, mean.name, str(dist.reparameterization_type)]
    if i != 6:  # batched Multinomial draws: see the test's docstring
        ts.append(dist.sample(4, seed=7))
    if i < 5:
        ts += [dist.cdf(x), dist.entropy(), dist.mode()]
ts.append(d.Multinomial(5., probs=[0.2, 0.3, 0.5]).sample(4, seed=7))
ts += [d.kl_divergence(dists[0][0], d.Gamma([1., 2.], [2., 1.])),
       d.kl_divergence(dists[2][0], d.Beta([1., 2.], [2., 1.])),
       d.kl_divergence(dists[5][0], d.Dirichlet([[1., 2., 3.], [3., 2., 1.]]))]
with tf.Session() as sess:
    result = {"names": names, "values": [v.tolist() for v in sess.run(ts)]}
"""


@pytest.mark.oracle
def test_distributions_match_tensorflow():
    """Statistics, names and seeded samples (Gamma, Beta, Dirichlet, StudentT and
    DirichletMultinomial through RandomGamma's TF-exact draws). A batched Multinomial's
    samples are compared only for one batch member: TF draws them in map_fn's while loop,
    one Multinomial run per member, with parallel iterations sharing the op's random
    stream, so TF's own draws change from run to run (seen on 2.21) once there are two."""
    ours, theirs = run_both(_ORACLE_PROGRAM, tf)
    assert ours["names"] == theirs["names"]
    for a, b in zip(ours["values"], theirs["values"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
