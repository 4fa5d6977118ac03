"""The ops under tf.contrib.factorization: KMC2ChainInitialization and
KmeansPlusPlusInitialization against TensorFlow's kernels (recorded values, and the oracle's
tf.raw_ops), NearestNeighbors, MaskedMatmul and WALSComputePartialLhsAndRhs against NumPy,
and their typed errors."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import errors
from tests.oracle import run_tf

pytestmark = pytest.mark.timeout(60)


def _run(fn):
    with tf.Graph().as_default(), tf.Session() as sess:
        return sess.run(fn())


def _skewed(s):
    d = (np.random.RandomState(s).rand(25) ** 6).astype(np.float32)
    d[::5] = 0
    return d


# TensorFlow 2.21's KMC2ChainInitialization on _skewed(s) with seed 1000 s + 7.
KMC2_RECORDED = [23, 21, 18, 4, 21, 14, 24, 24, 21, 24]


def test_kmc2_chain_equals_recorded_tensorflow_values():
    got = [_run(lambda s=s: tf.raw_ops.KMC2ChainInitialization(
        distances=_skewed(s), seed=np.int64(1000 * s + 7))) for s in range(10)]
    assert got == KMC2_RECORDED


@pytest.mark.oracle
def test_kmc2_chain_equals_tensorflows():
    rng = np.random.RandomState(3)
    cases = []
    for _ in range(30):
        n = rng.randint(1, 80)
        d = (rng.rand(n) ** rng.randint(1, 5) * (rng.rand(n) > 0.2)).astype(np.float32)
        cases.append((d.tolist(), int(rng.randint(0, 2 ** 40))))
    want = run_tf(f"""
result = []
with tf.Session() as sess:
    for d, seed in {cases!r}:
        result.append(int(sess.run(tf.raw_ops.KMC2ChainInitialization(
            distances=np.array(d, np.float32), seed=np.int64(seed)))))
""")
    with tf.Graph().as_default(), tf.Session() as sess:
        d = tf.placeholder(tf.float32, [None])
        seed = tf.placeholder(tf.int64, [])
        index = tf.raw_ops.KMC2ChainInitialization(distances=d, seed=seed)
        got = [int(sess.run(index, {d: dist, seed: s})) for dist, s in cases]
    assert got == want


# TensorFlow 2.21's KmeansPlusPlusInitialization: the rows it picks from _kpp_points(s)
# (5 of them, seed 11 s + 1, retries s % 3 - 1).
KPP_RECORDED = [[7, 20, 19, 22, 3], [25, 6, 2, 29, 13], [7, 13, 1, 4, 18],
                [5, 0, 7, 15, 29], [0, 16, 17, 20, 18], [27, 2, 10, 0, 19]]


def _kpp_points(s):
    return (np.random.RandomState(s).randn(30, 3) * (1 + s)).astype(np.float32)


def test_kmeans_plus_plus_equals_recorded_tensorflow_values():
    for s, rows in enumerate(KPP_RECORDED):
        got = _run(lambda s=s: tf.raw_ops.KmeansPlusPlusInitialization(
            points=_kpp_points(s), num_to_sample=np.int64(5), seed=np.int64(11 * s + 1),
            num_retries_per_sample=np.int64(s % 3 - 1)))
        np.testing.assert_array_equal(got, _kpp_points(s)[rows])


@pytest.mark.oracle
def test_kmeans_plus_plus_equals_tensorflows():
    rng = np.random.RandomState(8)
    cases = []
    for _ in range(25):
        n, d = rng.randint(2, 60), rng.randint(1, 12)
        pts = (rng.randn(n, d) * rng.randint(1, 5)).astype(np.float32)
        cases.append((pts.tolist(), int(rng.randint(1, n + 1)), int(rng.randint(0, 2 ** 40)),
                      int(rng.randint(-1, 4))))
    want = run_tf(f"""
result = []
with tf.Session() as sess:
    for p, k, seed, retries in {cases!r}:
        result.append(sess.run(tf.raw_ops.KmeansPlusPlusInitialization(
            points=np.array(p, np.float32), num_to_sample=np.int64(k),
            seed=np.int64(seed), num_retries_per_sample=np.int64(retries))).tolist())
""")
    for (p, k, seed, retries), rows in zip(cases, want, strict=True):
        got = _run(lambda p=p, k=k, seed=seed, retries=retries:
                   tf.raw_ops.KmeansPlusPlusInitialization(
                       points=np.array(p, np.float32), num_to_sample=np.int64(k),
                       seed=np.int64(seed), num_retries_per_sample=np.int64(retries)))
        np.testing.assert_array_equal(got, np.array(rows, np.float32))


@pytest.mark.parametrize("k, message", [(0, "num_to_sample > 0"), (4, "<= points.rows")])
def test_kmeans_plus_plus_bad_counts(k, message):
    with pytest.raises(errors.InvalidArgumentError, match=message):
        _run(lambda: tf.raw_ops.KmeansPlusPlusInitialization(
            points=np.zeros((3, 2), np.float32), num_to_sample=np.int64(k),
            seed=np.int64(0), num_retries_per_sample=np.int64(0)))


def test_kmeans_plus_plus_rows_are_distinct_even_when_duplicated():
    points = np.repeat(np.arange(4, dtype=np.float32)[:, None], 3, axis=0)  # 12 rows, 4 values
    got = _run(lambda: tf.raw_ops.KmeansPlusPlusInitialization(
        points=points, num_to_sample=np.int64(4), seed=np.int64(3),
        num_retries_per_sample=np.int64(-1)))
    assert sorted(got[:, 0].tolist()) == [0.0, 1.0, 2.0, 3.0]


def test_kmc2_chain_all_zero_distances_stays_at_the_first_candidate():
    assert _run(lambda: tf.raw_ops.KMC2ChainInitialization(
        distances=np.zeros(9, np.float32), seed=np.int64(4))) == 0


@pytest.mark.parametrize("distances, message", [
    (np.zeros(0, np.float32), "size"), (np.zeros((2, 2), np.float32), "vector")])
def test_kmc2_chain_bad_distances(distances, message):
    with tf.Graph().as_default(), tf.Session() as sess:
        d = tf.placeholder(tf.float32)
        index = tf.raw_ops.KMC2ChainInitialization(distances=d, seed=np.int64(1))
        with pytest.raises(errors.InvalidArgumentError, match=message):
            sess.run(index, {d: distances})


@pytest.mark.parametrize("k", [0, 1, 3, 10])
def test_nearest_neighbors_against_numpy(k):
    rng = np.random.RandomState(k)
    points = rng.randn(7, 3).astype(np.float32)
    centers = np.concatenate([points[[2, 2]], rng.randn(3, 3)]).astype(np.float32)
    idx, dist = _run(lambda: tf.raw_ops.NearestNeighbors(points=points, centers=centers,
                                                          k=np.int64(k)))
    full = ((points[:, None].astype(np.float64) - centers[None]) ** 2).sum(-1)
    order = np.argsort(full, axis=1, kind="stable")[:, :min(k, 5)]
    np.testing.assert_array_equal(idx, order)
    np.testing.assert_allclose(dist, np.take_along_axis(full, order, 1), atol=1e-5)
    assert idx.shape == (7, min(k, 5))


def test_nearest_neighbors_static_shape_and_bad_k():
    with tf.Graph().as_default(), tf.Session() as sess:
        idx, dist = tf.raw_ops.NearestNeighbors(points=np.zeros((4, 2), np.float32),
                                                centers=np.zeros((3, 2), np.float32),
                                                k=np.int64(5))
        assert idx.shape.as_list() == [4, 3] and dist.shape.as_list() == [4, 3]
        k = tf.placeholder(tf.int64, [])
        bad = tf.raw_ops.NearestNeighbors(points=np.zeros((4, 2), np.float32),
                                          centers=np.zeros((3, 2), np.float32), k=k)
        with pytest.raises(errors.InvalidArgumentError, match="non-negative"):
            sess.run(bad, {k: -1})
        with pytest.raises(errors.InvalidArgumentError, match="rows"):
            sess.run(tf.raw_ops.NearestNeighbors(points=np.zeros((0, 2), np.float32),
                                                 centers=np.zeros((3, 2), np.float32),
                                                 k=np.int64(1)))


@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True),
                                    (True, True)])
def test_masked_matmul_picks_the_products_entries(ta, tb):
    rng = np.random.RandomState(0)
    a, b = rng.randn(4, 3).astype(np.float32), rng.randn(3, 5).astype(np.float32)
    mask = np.array([[0, 0], [3, 4], [1, 2], [3, 4], [2, 1]], np.int64)
    got = _run(lambda: tf.raw_ops.MaskedMatmul(
        a=a.T if ta else a, b=b.T if tb else b, mask_indices=mask,
        transpose_a=ta, transpose_b=tb))
    np.testing.assert_allclose(got, (a @ b)[mask[:, 0], mask[:, 1]], rtol=1e-5, atol=1e-6)


def test_masked_matmul_index_out_of_range():
    with pytest.raises(errors.InvalidArgumentError, match="out of range"):
        _run(lambda: tf.raw_ops.MaskedMatmul(
            a=np.ones((2, 2), np.float32), b=np.ones((2, 2), np.float32),
            mask_indices=np.array([[2, 0]], np.int64), transpose_a=False,
            transpose_b=False))


def _partial_reference(factors, fw, w0, iw, indices, values, entry_w, block):
    k = factors.shape[1]
    lhs, rhs = np.zeros((block, k, k)), np.zeros((block, k))
    for e, (i, j) in enumerate(indices):
        w = entry_w[e] if entry_w.size else iw[i] * fw[j]
        lhs[i] += w * np.outer(factors[j], factors[j])
        rhs[i] += (w0 + w) * values[e] * factors[j]
    return lhs, rhs


@pytest.mark.parametrize("transpose, entry_weights", [(False, False), (True, False),
                                                      (False, True)])
def test_wals_partial_lhs_and_rhs_against_numpy(transpose, entry_weights):
    rng = np.random.RandomState(1)
    factors = rng.randn(6, 3).astype(np.float32)
    fw = rng.rand(6).astype(np.float32)
    iw = rng.rand(4).astype(np.float32)
    indices = np.array([[0, 1], [0, 5], [2, 2], [3, 0], [3, 1], [0, 1]], np.int64)
    values = rng.randn(6).astype(np.float32)
    ew = rng.rand(6).astype(np.float32) if entry_weights else np.zeros(0, np.float32)
    lhs, rhs = _run(lambda: tf.raw_ops.WALSComputePartialLhsAndRhs(
        factors=factors, factor_weights=fw, unobserved_weights=0.3, input_weights=iw,
        input_indices=indices[:, ::-1].copy() if transpose else indices,
        input_values=values, entry_weights=ew, input_block_size=np.int64(4),
        input_is_transpose=transpose))
    want_lhs, want_rhs = _partial_reference(factors, fw, 0.3, iw, indices, values, ew, 4)
    np.testing.assert_allclose(lhs, want_lhs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rhs, want_rhs, rtol=1e-5, atol=1e-5)


def test_wals_partial_lhs_and_rhs_row_out_of_block():
    with pytest.raises(errors.InvalidArgumentError, match="out of range"):
        _run(lambda: tf.raw_ops.WALSComputePartialLhsAndRhs(
            factors=np.ones((3, 2), np.float32), factor_weights=np.ones(3, np.float32),
            unobserved_weights=0.1, input_weights=np.ones(2, np.float32),
            input_indices=np.array([[2, 0]], np.int64), input_values=np.ones(1, np.float32),
            entry_weights=np.zeros(0, np.float32), input_block_size=np.int64(2),
            input_is_transpose=False))


def test_wals_partial_lhs_and_rhs_weights_of_the_wrong_length():
    with pytest.raises(errors.InvalidArgumentError, match="one entry per row"):
        _run(lambda: tf.raw_ops.WALSComputePartialLhsAndRhs(
            factors=np.ones((3, 2), np.float32), factor_weights=np.ones(2, np.float32),
            unobserved_weights=0.1, input_weights=np.ones(2, np.float32),
            input_indices=np.array([[1, 2]], np.int64), input_values=np.ones(1, np.float32),
            entry_weights=np.zeros(0, np.float32), input_block_size=np.int64(2),
            input_is_transpose=False))
