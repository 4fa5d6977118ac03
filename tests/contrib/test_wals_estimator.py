"""tf.contrib.factorization.WALSMatrixFactorization: sweeps over row and column batches
equal the closed-form WALS updates (NumPy), sweeps are counted and max_sweeps stops
training, projections and evaluation losses against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.contrib.factorization import WALSMatrixFactorization

pytestmark = pytest.mark.timeout(120)
ROWS, COLS, K, W0, LAM = 10, 7, 2, 0.2, 0.1
RNG = np.random.RandomState(0)
A = (RNG.randn(ROWS, K) @ RNG.randn(K, COLS)).astype(np.float32)
MASK = RNG.rand(ROWS, COLS) < 0.7
MASK[:, 0] = MASK[0, :] = True
U0 = RNG.randn(ROWS, K).astype(np.float32)
V0 = RNG.randn(COLS, K).astype(np.float32)


def _solve(a, mask, fixed, lam=LAM, w0=W0, row_weight=1.0):
    """Closed-form factors of every row of `a` (weights: w0 + row_weight observed, w0
    otherwise)."""
    out = []
    for i in range(a.shape[0]):
        w = w0 + row_weight * mask[i]
        lhs = (fixed.T * w) @ fixed + lam * np.eye(fixed.shape[1])
        out.append(np.linalg.solve(lhs, (fixed.T * w) @ (a[i] * mask[i])))
    return np.array(out)


def _entries(ids, transpose=False):
    m = MASK.T if transpose else MASK
    a = A.T if transpose else A
    rows, cols = np.nonzero(m[ids])
    rows = np.asarray(ids)[rows]
    return np.stack([rows, cols], 1).astype(np.int64), a[rows, cols]


def _batched_input_fn():
    """Two row batches and two column batches, alternating with the global step."""
    row_batches = [_entries(range(0, 5)), _entries(range(5, ROWS))]
    col_batches = [_entries(range(0, 3), True), _entries(range(3, COLS), True)]

    def input_fn():
        odd = tf.equal(tf.train.get_global_step() % 2, 1)

        def pick(batches):
            return tf.cond(odd, lambda: [tf.constant(batches[1][0]), tf.constant(batches[1][1])],
                           lambda: [tf.constant(batches[0][0]), tf.constant(batches[0][1])])

        (ri, rv), (ci, cv) = pick(row_batches), pick(col_batches)
        return {WALSMatrixFactorization.INPUT_ROWS: tf.SparseTensor(ri, rv, [ROWS, COLS]),
                WALSMatrixFactorization.INPUT_COLS: tf.SparseTensor(ci, cv, [COLS, ROWS])}
    return input_fn


def _one_pass_fn(project_row, weights=None):
    def input_fn():
        idx, vals = _entries(range(ROWS))
        idx = tf.train.limit_epochs(idx, num_epochs=1)
        features = {WALSMatrixFactorization.INPUT_ROWS: tf.SparseTensor(idx, vals,
                                                                         [ROWS, COLS]),
                    WALSMatrixFactorization.INPUT_COLS: tf.SparseTensor(
                        tf.reverse(idx, [1]), vals, [COLS, ROWS]),
                    WALSMatrixFactorization.PROJECT_ROW: tf.constant(project_row)}
        if weights is not None:
            features[WALSMatrixFactorization.PROJECTION_WEIGHTS] = tf.constant(weights)
        return features
    return input_fn


def _estimator(tmp_path, **kwargs):
    kwargs.setdefault("row_init", U0)
    return WALSMatrixFactorization(ROWS, COLS, K, unobserved_weight=W0,
                                   regularization_coeff=LAM, col_init=V0,
                                   model_dir=str(tmp_path), **kwargs)


def test_batched_sweeps_equal_closed_form_updates(tmp_path):
    est = _estimator(tmp_path)
    est.train(_batched_input_fn(), steps=2)  # the row sweep: both row batches
    u = _solve(A, MASK, V0.astype(np.float64))
    np.testing.assert_allclose(np.concatenate(est.get_row_factors()), u, rtol=1e-3,
                               atol=1e-3)
    np.testing.assert_array_equal(np.concatenate(est.get_col_factors()), V0)
    assert est.get_variable_value("completed_sweeps") == 1
    est.train(_batched_input_fn(), steps=2)  # the column sweep
    v = _solve(A.T, MASK.T, u)
    np.testing.assert_allclose(np.concatenate(est.get_col_factors()), v, rtol=1e-3,
                               atol=1e-3)
    assert est.get_variable_value("completed_sweeps") == 2
    assert est.get_variable_value("global_step") == 4


def test_max_sweeps_stops_training_and_shards(tmp_path):
    est = _estimator(tmp_path, max_sweeps=3, num_row_shards=2,
                     row_init=np.array_split(U0, 2))
    est.fit(input_fn=_batched_input_fn(), steps=50)  # contrib.learn's name
    assert est.get_variable_value("completed_sweeps") == 3
    assert est.get_variable_value("global_step") == 6
    assert [f.shape for f in est.get_row_factors()] == [(5, K), (5, K)]


def test_projections_and_evaluation_losses(tmp_path):
    est = _estimator(tmp_path)
    est.train(_batched_input_fn(), steps=2)
    u = np.concatenate(est.get_row_factors()).astype(np.float64)
    rows = np.stack(list(est.get_projections(_one_pass_fn(True))))
    np.testing.assert_allclose(rows, _solve(A, MASK, V0.astype(np.float64)), rtol=1e-3,
                               atol=1e-3)
    cols = np.stack(list(est.get_projections(_one_pass_fn(False))))
    np.testing.assert_allclose(cols, _solve(A.T, MASK.T, u), rtol=1e-3, atol=1e-3)
    weighted = np.stack(list(est.get_projections(
        _one_pass_fn(True, weights=np.full(ROWS, 2.5, np.float32)))))
    np.testing.assert_allclose(weighted, _solve(A, MASK, V0.astype(np.float64),
                                                row_weight=2.5), rtol=1e-3, atol=1e-3)
    v = _solve(A.T, MASK.T, u)
    w = W0 + MASK.T
    want = (w * (A.T * MASK.T - v @ u.T) ** 2).sum() + LAM * ((v ** 2).sum() + (u ** 2).sum())
    loss = est.evaluate(_one_pass_fn(False), steps=1)["loss"]
    assert loss == pytest.approx(want, rel=1e-3)
