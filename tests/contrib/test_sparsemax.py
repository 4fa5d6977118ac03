"""tf.contrib.sparsemax against the paper's definitions (Martins & Astudillo 2016) in
NumPy: the projection onto the simplex, its loss (eq. 18) and the loss's gradient
-q + sparsemax(z) (eq. 19); finite-difference gradients."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf


def _sparsemax_np(z):
    """Row by row: the threshold tau from the sorted logits, then max(z - tau, 0)."""
    out = np.zeros_like(z)
    taus = []
    for i, row in enumerate(z):
        s = np.sort(row)[::-1]
        cums = np.cumsum(s)
        k = max(j for j in range(1, len(s) + 1) if 1 + j * s[j - 1] > cums[j - 1])
        tau = (cums[k - 1] - 1) / k
        out[i] = np.maximum(row - tau, 0)
        taus.append(tau)
    return out, np.array(taus)


def _loss_np(z, q):
    """Eq. 18: -q.z + 1/2 sum over the support of (z_j^2 - tau^2) + 1/2 |q|^2."""
    p, tau = _sparsemax_np(z)
    support = p > 0
    return (-(q * z).sum(1) + 0.5 * ((z ** 2 - tau[:, None] ** 2) * support).sum(1)
            + 0.5 * (q ** 2).sum(1))


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_sparsemax_and_its_loss_equal_the_papers(dtype, tol):
    rng = np.random.RandomState(0)
    z = (rng.randn(20, 7) * rng.choice([0.1, 1.0, 5.0], (20, 1))).astype(dtype)
    q = np.eye(7, dtype=dtype)[rng.randint(0, 7, 20)]
    q[::3] = rng.dirichlet(np.ones(7), len(q[::3])).astype(dtype)  # soft labels too
    p = tf.contrib.sparsemax.sparsemax(z)
    loss = tf.contrib.sparsemax.sparsemax_loss(z, p, q)
    with tf.Session() as s:
        got_p, got_loss = s.run([p, loss])
    want_p, _ = _sparsemax_np(z.astype(np.float64))
    np.testing.assert_allclose(got_p, want_p, atol=tol)
    np.testing.assert_allclose(got_p.sum(1), 1.0, rtol=tol)
    assert (got_p >= 0).all() and (got_p == 0).any()
    # the loss is taken on centred logits: shift-invariant, as sparsemax is
    np.testing.assert_allclose(got_loss, _loss_np(z - z.mean(1, keepdims=True), q),
                               rtol=1e-4 if dtype == np.float32 else 1e-10, atol=tol)


def test_sparsemax_gradients():
    rng = np.random.RandomState(1)
    zv = rng.randn(4, 5)
    q = np.eye(5)[[0, 3, 3, 1]]
    z = tf.placeholder(tf.float64, [4, 5])
    p = tf.contrib.sparsemax.sparsemax(z)
    loss = tf.contrib.sparsemax.sparsemax_loss(z, p, q)
    (grad,) = tf.gradients(tf.reduce_sum(loss), [z])
    with tf.Session() as s:
        # eq. 19: d loss / d z = -q + sparsemax(z) (p's dependence on z cancels)
        got, pv = s.run([grad, p], {z: zv})
        np.testing.assert_allclose(got, pv - q, atol=1e-10)
        err = tf.test.compute_gradient_error(z, [4, 5], p, [4, 5], x_init_value=zv)
    assert err < 1e-6
    with pytest.raises(ValueError):
        tf.contrib.sparsemax.sparsemax(np.zeros(3))

