"""tf.contrib.factorization.WALSModel against NumPy: one row (column) sweep is the weighted
least-squares solution of the dense objective, its loss, regularization and weight sums;
sweeps decrease the loss and recover a low-rank matrix; shards, caches, projections, the
WALS tutorial's loop and typed errors."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.contrib.factorization import WALSModel

pytestmark = pytest.mark.timeout(60)
ROWS, COLS, K = 13, 8, 3
SWEEPS = 60


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def _problem(seed=0, density=0.5):
    rng = np.random.RandomState(seed)
    a = (rng.randn(ROWS, K) @ rng.randn(K, COLS)).astype(np.float32)
    mask = rng.rand(ROWS, COLS) < density
    mask[0, :] = False  # an empty row: never updated
    mask[1, 0] = True
    return a, mask


def _sparse(a, mask, rows=None, transpose=False):
    r, c = np.nonzero(mask)
    if rows is not None:
        keep = np.isin(r, rows)
        r, c = r[keep], c[keep]
    order = np.random.RandomState(1).permutation(len(r))  # entries in no particular order
    r, c = r[order], c[order]
    idx = np.stack([c, r] if transpose else [r, c], 1)
    shape = [COLS, ROWS] if transpose else [ROWS, COLS]
    return tf.SparseTensor(idx.astype(np.int64), a[r, c], shape), r, c


def _weights(spec, size, shards):
    """The model's weights argument and the dense vector it stands for."""
    if spec is None:
        return None, None
    if spec == "scalar":
        return 0.7, np.full(size, 0.7)
    rng = np.random.RandomState(size)
    dense = rng.rand(size).astype(np.float32) + 0.2
    sizes = [size // shards + (i < size % shards) for i in range(shards)]
    bounds = np.cumsum([0] + sizes)
    return [dense[bounds[i]:bounds[i + 1]].tolist() for i in range(shards)], dense


def _dense_w(mask, w0, r, c):
    return w0 + (mask * np.outer(r, c) if r is not None else np.zeros(mask.shape))


def _solve_rows(a, mask, fixed, w, lam, rows):
    """The closed-form least-squares factors of `rows` with `fixed` the other factors."""
    out = []
    for i in rows:
        lhs = (fixed.T * w[i]) @ fixed + lam * np.eye(fixed.shape[1])
        out.append(np.linalg.solve(lhs, (fixed.T * w[i]) @ (a[i] * mask[i])))
    return np.array(out)


def _objective(a, mask, u, v, w, lam, rows, n):
    """(loss, regularization, sum of weights) of `rows` scaled by n / len(rows)."""
    s = n / len(rows)
    err = (w[rows] * (a[rows] * mask[rows] - u[rows] @ v.T) ** 2).sum()
    return err * s, lam * ((u[rows] ** 2).sum() * s + (v ** 2).sum()), w[rows].sum() * s


def _sweep(model, update, sess):
    prep, init = ((model.row_update_prep_gramian_op, model.initialize_row_update_op)
                  if update == "row" else
                  (model.col_update_prep_gramian_op, model.initialize_col_update_op))
    sess.run(prep)
    sess.run(init)


CASES = [
    # (update, weights, row shards, col shards, w0, lambda, transpose_input)
    ("row", None, 1, 1, 0.5, None, False),
    ("row", "scalar", 2, 1, 0.1, 0.05, False),
    ("row", "lists", 3, 2, 0.3, 0.2, False),
    ("row", "lists", 1, 3, 0.0, 0.1, True),
    ("col", None, 2, 2, 0.4, 0.01, False),
    ("col", "scalar", 1, 1, 0.1, None, False),
    ("col", "lists", 3, 3, 0.2, 0.3, True),
]


@pytest.mark.parametrize("update, weights, row_shards, col_shards, w0, lam, transpose", CASES)
def test_one_sweep_is_the_weighted_least_squares_solution(update, weights, row_shards,
                                                          col_shards, w0, lam, transpose):
    a, mask = _problem()
    rng = np.random.RandomState(2)
    u0, v0 = rng.randn(ROWS, K).astype(np.float32), rng.randn(COLS, K).astype(np.float32)
    row_w, r = _weights(weights, ROWS, row_shards)
    col_w, c = _weights(weights, COLS, col_shards)

    def split(x, n):
        return np.array_split(x, n) if n > 1 else x

    model = WALSModel(ROWS, COLS, K, unobserved_weight=w0, regularization=lam,
                      row_init=split(u0, row_shards), col_init=split(v0, col_shards),
                      num_row_shards=row_shards, num_col_shards=col_shards,
                      row_weights=row_w, col_weights=col_w)
    w = _dense_w(mask, w0, r, c)
    lam = lam or 0.0
    sp, r_ids, c_ids = _sparse(a, mask, transpose=transpose)
    if update == "row":
        new, op, loss, reg, sum_w = model.update_row_factors(sp, transpose_input=transpose)
        factors, order = model.row_factors, r_ids
    else:
        new, op, loss, reg, sum_w = model.update_col_factors(sp, transpose_input=transpose)
        factors, order = model.col_factors, c_ids
    ids = list(dict.fromkeys(order.tolist()))  # first appearance
    assert [f.shape.as_list()[0] for f in factors] == [
        len(x) for x in np.array_split(np.zeros(ROWS if update == "row" else COLS),
                                       len(factors))]
    with tf.Session() as sess:
        sess.run(model.initialize_op)
        sess.run(model.worker_init)
        _sweep(model, update, sess)
        got_new, _, got = sess.run(new), sess.run(op), sess.run(factors)
        got = np.concatenate(got)
        if update == "row":
            want = _solve_rows(a, mask, v0.astype(np.float64), w, lam, ids)
            u, v, start, n = u0.copy().astype(np.float64), v0, u0, ROWS
            u[ids] = want
            objective = _objective(a, mask, u, v, w, lam, ids, n)
        else:
            want = _solve_rows(a.T, mask.T, u0.astype(np.float64), w.T, lam, ids)
            v, start, n = v0.copy().astype(np.float64), v0, COLS
            v[ids] = want
            objective = _objective(a.T, mask.T, v, u0, w.T, lam, ids, n)
        np.testing.assert_allclose(got_new, want, rtol=2e-3, atol=2e-3)
        np.testing.assert_allclose(got[ids], want, rtol=2e-3, atol=2e-3)
        untouched = sorted(set(range(len(start))) - set(ids))
        np.testing.assert_array_equal(got[untouched], start[untouched])
        np.testing.assert_allclose(sess.run([loss, reg, sum_w]), objective, rtol=2e-3,
                                   atol=2e-3)


@pytest.mark.parametrize("weights, w0, lam", [(None, 0.05, 0.01), ("scalar", 0.0, 1e-3)])
def test_sweeps_decrease_the_loss_and_recover_a_low_rank_matrix(weights, w0, lam):
    a, mask = _problem(seed=3, density=0.7)
    mask[0, :3] = True
    row_w, _ = _weights(weights, ROWS, 2)
    col_w, _ = _weights(weights, COLS, 1)
    rng = np.random.RandomState(0)
    u0, v0 = rng.randn(ROWS, K).astype(np.float32), rng.randn(COLS, K).astype(np.float32)
    model = WALSModel(ROWS, COLS, K, unobserved_weight=w0, regularization=lam,
                      row_init=np.array_split(u0, 2), col_init=v0, num_row_shards=2,
                      row_weights=row_w, col_weights=col_w)
    sp = _sparse(a, mask)[0]
    _, row_op, row_loss, row_reg, _ = model.update_row_factors(sp)
    _, col_op, col_loss, col_reg, _ = model.update_col_factors(sp)
    losses = []
    with tf.Session() as sess:
        sess.run(model.initialize_op)
        sess.run(model.worker_init)
        for _ in range(SWEEPS):
            _sweep(model, "row", sess)
            losses.append(sum(sess.run([row_op, row_loss, row_reg])[1:]))
            _sweep(model, "col", sess)
            losses.append(sum(sess.run([col_op, col_loss, col_reg])[1:]))
        u = np.concatenate(sess.run(model.row_factors))
        v = np.concatenate(sess.run(model.col_factors))
    assert all(b <= a_ * (1 + 1e-4) + 1e-5 for a_, b in zip(losses[1:], losses[2:], strict=False))
    if weights is not None:  # observed entries only: the low-rank matrix comes back
        assert np.abs(u @ v.T - a)[mask].max() < 0.05


@pytest.mark.parametrize("factors_cache, gramian_cache", [(False, False), (True, False),
                                                          (False, True)])
def test_caches_change_nothing_but_where_values_are_read(factors_cache, gramian_cache):
    a, mask = _problem()
    results = []
    for cached in (True, False):
        with tf.Graph().as_default():
            tf.set_random_seed(1)
            kwargs = ({} if cached else {"use_factors_weights_cache": factors_cache,
                                         "use_gramian_cache": gramian_cache})
            model = WALSModel(ROWS, COLS, K, regularization=0.1, **kwargs)
            sp = _sparse(a, mask)[0]
            row, col = model.update_row_factors(sp), model.update_col_factors(sp)
            with tf.Session() as sess:
                sess.run(model.initialize_op)
                sess.run(model.worker_init)
                for _ in range(2):
                    _sweep(model, "row", sess)
                    sess.run(row[1])
                    _sweep(model, "col", sess)
                    sess.run(col[1])
                results.append(sess.run(model.row_factors + model.col_factors))
    for x, y in zip(*results, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)


def test_caches_are_worker_local_variables():
    model = WALSModel(ROWS, COLS, K, num_row_shards=2)
    names = sorted(v.op.name for v in tf.local_variables())
    # factors and weights of 2 row shards and 1 column shard, and the two gramians
    assert len(names) == (2 + 1) * 2 + 2
    assert not set(names) & {v.op.name for v in tf.global_variables()}
    assert {v.op.name for v in model.row_factors} == {"row_factors_shard_0",
                                                      "row_factors_shard_1"}


def test_project_row_factors_solves_for_new_rows_without_updating():
    a, mask = _problem()
    rng = np.random.RandomState(4)
    v0 = rng.randn(COLS, K).astype(np.float32)
    model = WALSModel(ROWS, COLS, K, unobserved_weight=0.2, regularization=0.1,
                      col_init=v0, col_weights=0.5, row_weights=1.0)
    new_rows = np.array([[1.0, 0, 2.0, 0, 0, 0, 0, 3.0], [0, 0, 0, 1.5, 0, 0, 0, 0]],
                        np.float32)
    new_mask = new_rows != 0
    r, c = np.nonzero(new_mask)
    sp = tf.SparseTensor(np.stack([r, c], 1).astype(np.int64), new_rows[r, c], [2, COLS])
    projected = model.project_row_factors(sp, projection_weights=[2.0, 0.5])
    one_weight = model.project_row_factors(sp, projection_weights=3.0)
    with tf.Session() as sess:
        sess.run(model.initialize_op)
        sess.run(model.worker_init)
        _sweep(model, "row", sess)
        before = sess.run(model.row_factors)
        got, got_one = sess.run([projected, one_weight])
        after = sess.run(model.row_factors)
    for weights, value in (([2.0, 0.5], got), ([3.0, 3.0], got_one)):
        w = _dense_w(new_mask, 0.2, np.array(weights), np.full(COLS, 0.5))
        want = _solve_rows(new_rows, new_mask, v0.astype(np.float64), w, 0.1, [0, 1])
        np.testing.assert_allclose(value, want, rtol=2e-3, atol=2e-3)
    np.testing.assert_array_equal(before[0], after[0])


def test_the_wals_tutorials_loop():
    """The loop of the Cloud ML Engine WALS recommendation tutorial (wals.py simple_train),
    written as it is: factorization_ops.WALSModel over a SparseTensor of ratings."""
    factorization_ops = importlib.import_module(
        "tensorflux.contrib.factorization.python.ops.factorization_ops")
    a, mask = _problem(seed=7, density=0.6)
    r, c = np.nonzero(mask)
    input_tensor = tf.SparseTensor(indices=list(zip(r, c, strict=True)),
                                   values=a[r, c].astype(np.float32),
                                   dense_shape=[ROWS, COLS])
    model = factorization_ops.WALSModel(ROWS, COLS, K, unobserved_weight=0.01,
                                        regularization=0.01, row_weights=None,
                                        col_weights=None)
    row_factor, col_factor = model.row_factors[0], model.col_factors[0]
    sess = tf.Session(graph=input_tensor.graph)
    row_update_op = model.update_row_factors(sp_input=input_tensor)[1]
    col_update_op = model.update_col_factors(sp_input=input_tensor)[1]
    sess.run(model.initialize_op)
    sess.run(model.worker_init)
    for _ in range(20):
        sess.run(model.row_update_prep_gramian_op)
        sess.run(model.initialize_row_update_op)
        sess.run(row_update_op)
        sess.run(model.col_update_prep_gramian_op)
        sess.run(model.initialize_col_update_op)
        sess.run(col_update_op)
    u, v = row_factor.eval(session=sess), col_factor.eval(session=sess)
    assert u.shape == (ROWS, K) and v.shape == (COLS, K)
    rmse = np.sqrt(((u @ v.T - a)[mask] ** 2).mean())
    assert rmse < 0.5 * np.sqrt((a[mask] ** 2).mean())


@pytest.mark.parametrize("kwargs, error", [
    ({"input_rows": 0}, ValueError),
    ({"n_components": 2.5}, ValueError),
    ({"num_row_shards": ROWS + 1}, ValueError),
    ({"row_weights": None}, ValueError),
    ({"row_weights": [[1.0] * 5]}, ValueError),
    ({"row_init": "zeros"}, ValueError),
    ({"row_init": np.zeros((ROWS, K + 1), np.float32)}, ValueError),
    ({"num_col_shards": 2, "col_init": [np.zeros((COLS, K), np.float32)]}, ValueError),
    ({"unobserved_weight": -1.0}, ValueError),
])
def test_bad_arguments_are_typed_errors(kwargs, error):
    args = {"input_rows": ROWS, "input_cols": COLS, "n_components": K, **kwargs}
    with pytest.raises(error):
        WALSModel(**args)


def test_a_dense_input_is_a_type_error():
    model = WALSModel(ROWS, COLS, K)
    with pytest.raises(TypeError, match="SparseTensor"):
        model.update_row_factors(np.zeros((ROWS, COLS), np.float32))


def test_running_an_update_before_filling_the_caches_fails():
    a, mask = _problem()
    model = WALSModel(ROWS, COLS, K)
    sp = _sparse(a, mask)[0]
    op = model.update_row_factors(sp)[1]
    with tf.Session() as sess:
        sess.run(model.initialize_op)
        sess.run(model.worker_init)
        with pytest.raises(tf.errors.OpError):
            sess.run(op)
