"""The C extension's product for a fully connected layer's forward pass at a small batch
(`native.thin_nn`, `_thin_gemm.h`: a (m <= 16, k) @ b (k, n), b read once where it lies,
its columns split over threads): values against NumPy in float64 for every tile shape
(rows 1-16, beyond 8 a second pass; columns not a multiple of its 48-column strips or of
16, over several 384-column chunks; k over several of its 128-row blocks), strided rows,
the same bits on any number of threads, the calls it declines, and the MatMul and
_FusedMatMul kernels and tf.matmul's gradients through it."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels.cpu import matrix_ops, native

pytestmark = pytest.mark.skipif(
    native.thin_nn(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32), 1) is None,
    reason="no C extension or no AVX-512F on this CPU")

# (m, k, n, a's extra columns (a strided view))
CASES = [
    (1, 1, 1, 0),
    (1, 300, 1000, 0),
    (3, 5, 17, 2),
    (7, 129, 48, 0),
    (8, 256, 770, 0),
    (8, 1000, 1537, 5),
    (9, 131, 95, 0),
    (13, 257, 49, 1),
    (16, 400, 800, 0),
    (5, 128, 15, 0),
]


def _operands(m, k, n, extra, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k + extra)).astype(np.float32)[:, extra:]
    return a, rng.standard_normal((k, n)).astype(np.float32)


@pytest.mark.parametrize("case", CASES, ids=lambda c: "m{}k{}n{}s{}".format(*c))
def test_values_against_numpy_and_the_same_bits_on_any_split(case):
    m, k, n, extra = case
    a, b = _operands(m, k, n, extra, seed=m + k + n)
    want = a.astype(np.float64) @ b
    scale = np.abs(a).astype(np.float64) @ np.abs(b)
    results = []
    for parts in (1, 2, 3):
        got = native.thin_nn(a, b, parts)
        assert got.shape == (m, n) and got.dtype == np.float32
        assert np.all(np.abs(got - want) <= 2e-6 * scale + 1e-6)
        results.append(got)
    for r in results[1:]:  # each output one FMA chain on one thread
        np.testing.assert_array_equal(r, results[0], strict=True)


def test_empty_inner_size_gives_zeros():
    got = native.thin_nn(np.ones((4, 0), np.float32), np.ones((0, 9), np.float32), 2)
    np.testing.assert_array_equal(got, np.zeros((4, 9), np.float32))


def test_declines_what_it_does_not_take():
    a, b = _operands(8, 20, 10, 0)
    assert native.thin_nn(a.astype(np.float64), b.astype(np.float64), 1) is None
    assert native.thin_nn(np.ones((17, 20), np.float32), b, 1) is None  # m > 16
    assert native.thin_nn(a, np.asfortranarray(b), 1) is None  # b must be C-contiguous
    assert native.thin_nn(a[:, ::2], b[::2].copy(), 1) is None  # a's columns strided
    assert native.thin_nn(np.ones((0, 20), np.float32), b, 1) is None
    with pytest.raises(ValueError, match="thin_nn"):
        native._mod.thin_nn(a, b, np.empty((8, 11), np.float32), 1)


def _node(op="MatMul", ta=False, tb=False):
    attrs = {"transpose_a": ta, "transpose_b": tb}
    if op == "_FusedMatMul":
        attrs.update(num_args=1, fused_ops=["BiasAdd", "Relu"])
    return SimpleNamespace(name="mm", op=op, attrs=attrs)


def _ctx(parts: int):
    return SimpleNamespace(session=SimpleNamespace(
        _intra_op_threads=parts, _config=SimpleNamespace(intra_op_parallelism_threads=parts)))


@pytest.mark.parametrize("m, k, n", [(1, 8192, 1300), (8, 1200, 1500), (16, 3000, 700)])
@pytest.mark.parametrize("parts", [1, 2])
def test_matmul_kernels_take_it_at_small_batches(monkeypatch, m, k, n, parts):
    """MatMul (no transposes, float32, at most 16 rows, above the split threshold) and
    _FusedMatMul (the same product, then bias and ReLU) through thin_nn, against NumPy."""
    calls = []
    real = native.thin_nn
    monkeypatch.setattr(native, "thin_nn", lambda *args: calls.append(1) or real(*args))
    a, b = _operands(m, k, n, 0, seed=3)
    bias = np.random.default_rng(4).standard_normal(n).astype(np.float32)
    got = matrix_ops._matmul(_node())(_ctx(parts), a, b)
    want = a.astype(np.float64) @ b
    assert np.all(np.abs(got - want) <= 2e-6 * (np.abs(a).astype(np.float64) @ np.abs(b)))
    fused = matrix_ops._fused_matmul(_node("_FusedMatMul"))(_ctx(parts), a, b, bias)
    np.testing.assert_array_equal(fused, np.maximum(got + bias, 0))
    assert len(calls) == 2


def test_matmul_keeps_blas_for_transposes_and_float64(monkeypatch):
    calls = []
    monkeypatch.setattr(native, "thin_nn", lambda *args: calls.append(1))
    a, b = _operands(8, 1200, 1500, 0)
    np.testing.assert_allclose(matrix_ops._matmul(_node(ta=True))(_ctx(2), a.T.copy(), b),
                               a @ b, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(matrix_ops._matmul(_node(tb=True))(_ctx(2), a, b.T.copy()),
                               a @ b, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(matrix_ops._matmul(_node())(_ctx(2), a.astype(np.float64),
                                                           b.astype(np.float64)),
                               a.astype(np.float64) @ b, rtol=1e-12)
    assert calls == []


def test_dense_layer_and_its_gradients_by_finite_differences():
    """A batch-8 dense layer (the forward product through thin_nn) under a quadratic loss:
    its value and tf.gradients against NumPy, and the gradient against central finite
    differences of the graph's own forward pass at a few coordinates (exact for a quadratic
    but for float32 rounding)."""
    rng = np.random.default_rng(5)
    xv = rng.standard_normal((8, 1024)).astype(np.float32)
    wv = (rng.standard_normal((1024, 1300)) / 32).astype(np.float32)
    rv = rng.standard_normal((8, 1300)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [8, 1024])
        w = tf.placeholder(tf.float32, [1024, 1300])
        loss = 0.5 * tf.reduce_sum(tf.square(tf.matmul(x, w)) * rv)
        gx, gw = tf.gradients(loss, [x, w])
    with tf.Session(graph=g) as sess:
        lv, gxv, gwv = sess.run([loss, gx, gw], {x: xv, w: wv})
        h = xv.astype(np.float64) @ wv
        mask = h * rv
        np.testing.assert_allclose(lv, 0.5 * (h * h * rv).sum(), rtol=1e-4, atol=1e-2)
        np.testing.assert_allclose(gxv, mask @ wv.T, rtol=1e-4, atol=1e-3)
        np.testing.assert_allclose(gwv, xv.T.astype(np.float64) @ mask, rtol=1e-4, atol=1e-3)
        eps = 0.1
        for i, j in [(0, 0), (3, 511), (7, 1023)]:
            up, down = xv.copy(), xv.copy()
            up[i, j] += eps
            down[i, j] -= eps
            fd = (sess.run(loss, {x: up, w: wv}) - sess.run(loss, {x: down, w: wv})) / (2 * eps)
            assert abs(fd - gxv[i, j]) <= 2e-2 * max(1.0, abs(gxv[i, j]))
