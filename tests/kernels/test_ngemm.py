"""The C extension's own float32 GEMM (`native.ngemm`, `_native.c`'s ngemm block), which
the convolution kernels take for products with narrow filters: values against NumPy in
float64 (every tile shape: rows not a multiple of its 6, columns not of 16 or 64, k over
several of its blocks), a^T b, accumulation, strided rows, the same bits on any number
of threads, the calls it declines, and the convolution kernels' values with it on and
off."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tensorflux.kernels.cpu import conv_ops, native

_PROBE = np.ones((6, 4), np.float32)
pytestmark = pytest.mark.skipif(
    native.ngemm(_PROBE, np.ones((4, 16), np.float32)) is None,
    reason="no C extension or no AVX-512F on this CPU")

# (m, k, n, transpose_a, accumulate, a's extra columns (a strided view))
CASES = [
    (1, 1, 1, False, False, 0),
    (6, 128, 64, False, False, 0),
    (7, 3, 17, False, False, 0),
    (97, 129, 65, False, True, 0),
    (200, 300, 130, False, False, 5),
    (50, 257, 255, False, True, 3),
    (13, 40, 48, True, False, 0),
    (147, 1000, 64, True, True, 0),
    (64, 520, 200, True, False, 7),
    (500, 31, 1, False, False, 0),
]


def _operands(m, k, n, transpose_a, extra, seed=0):
    rng = np.random.default_rng(seed)
    if transpose_a:
        base = rng.standard_normal((k, m + extra)).astype(np.float32)
        a = base[:, :m].T
    else:
        base = rng.standard_normal((m, k + extra)).astype(np.float32)
        a = base[:, :k]
    return a, rng.standard_normal((k, n)).astype(np.float32), \
        rng.standard_normal((m, n)).astype(np.float32)


@pytest.mark.parametrize("case", CASES, ids=lambda c: "m{}k{}n{}{}{}{}".format(
    *c[:3], "T" if c[3] else "", "+" if c[4] else "", f"s{c[5]}" if c[5] else ""))
def test_values_against_numpy(case):
    m, k, n, transpose_a, accumulate, extra = case
    a, b, c0 = _operands(m, k, n, transpose_a, extra)
    want = a.astype(np.float64) @ b + (c0 if accumulate else 0)
    results = []
    for parts in (1, 2, 3):
        out = c0.copy()
        assert native.ngemm(a, b, out, accumulate, parts) is out
        scale = np.abs(a).astype(np.float64) @ np.abs(b) + (np.abs(c0) if accumulate else 0)
        assert np.all(np.abs(out - want) <= 1e-5 * scale + 1e-6)
        results.append(out)
    for r in results[1:]:  # a tile is summed by one thread: the same bits on any split
        np.testing.assert_array_equal(r, results[0], strict=True)


def test_new_output_and_empty_operands():
    a, b, _ = _operands(30, 20, 10, False, 0)
    np.testing.assert_allclose(native.ngemm(a, b), a @ b, rtol=1e-5, atol=1e-5)
    out = np.full((30, 10), 7.0, np.float32)
    native.ngemm(np.ones((30, 0), np.float32), np.ones((0, 10), np.float32), out)
    np.testing.assert_array_equal(out, np.zeros((30, 10), np.float32))
    native.ngemm(np.ones((30, 0), np.float32), np.ones((0, 10), np.float32), out, True)
    np.testing.assert_array_equal(out, np.zeros((30, 10), np.float32))


def test_declines_what_it_does_not_take():
    a, b, c = _operands(30, 20, 10, False, 0)
    assert native.ngemm(a.astype(np.float64), b.astype(np.float64)) is None
    assert native.ngemm(a, np.asfortranarray(b)) is None  # b must be C-contiguous
    assert native.ngemm(a[::2], b) is not None  # (a row stride is fine) ...
    assert native.ngemm(a[:, ::2], b[::2].copy()) is None  # ... a column stride is not
    assert native.ngemm(a, b, np.empty((30, 10), np.float64)) is None
    assert native.ngemm(a, b, np.empty((10, 30), np.float32).T) is None
    assert native.ngemm(a, b, None, accumulate=True) is None
    assert not native.ngemm_favours(8, 64, 64)  # tiny products stay with BLAS


def _node(strides, padding):
    return SimpleNamespace(attrs={"strides": [1, *strides, 1], "dilations": [1, 1, 1, 1],
                                  "padding": padding, "data_format": "NHWC"},
                           name="conv", op="Conv2D")


# (input NHWC, filter HWIO, strides, padding): a 1x1 conv, an im2col conv, a stride-2 3x3
# (col2im input gradient), a Winograd 3x3
CONVS = [
    ((2, 10, 10, 32), (1, 1, 32, 48), (1, 1), "SAME"),
    ((2, 11, 9, 5), (5, 5, 5, 24), (1, 1), "SAME"),
    ((2, 12, 12, 16), (3, 3, 16, 40), (2, 2), "SAME"),
    ((2, 16, 16, 32), (3, 3, 32, 32), (1, 1), "SAME"),
]


@pytest.mark.parametrize("case", CONVS, ids=lambda c: "x".join(map(str, c[1])))
def test_conv_kernels_with_and_without_ngemm(monkeypatch, case):
    xs, ws, strides, padding = case
    rng = np.random.default_rng(1)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    g = conv_ops._ConvGeometry(_node(strides, padding))

    def run():
        y = conv_ops._conv_forward(x, w, g, 2)
        dy = rng.standard_normal(y.shape).astype(np.float32)
        return (y, conv_ops._conv_backprop_input(x.shape, w, dy, g, 2),
                conv_ops._conv_backprop_filter(x, dy, ws[0], ws[1], g, 2))

    rng = np.random.default_rng(2)
    with_ngemm = run()
    monkeypatch.setattr(native, "ngemm_favours", lambda *a, **k: False)
    rng = np.random.default_rng(2)
    without = run()
    for got, want in zip(with_ngemm, without, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("m, k, n, accumulate, spare", [
    (196, 64, 128, False, 0), (49, 128, 64, True, 0), (7, 3, 17, False, 5),
    (300, 257, 130, True, 2), (1, 1, 1, False, 0), (32, 700, 32, True, 1)])
def test_batch_equals_one_call_per_position_bit_for_bit(m, k, n, accumulate, spare,
                                                        transposed):
    """ngemm_batch (a Winograd unit's per-position products in one call) gives each
    position the bits of one ngemm call, from rows at any stride (or a^T: the filter
    gradient's transformed input tiles) and a sliced batch, into positions at any stride
    (each position's block C-contiguous: _winograd.position_buffer)."""
    rng = np.random.default_rng(m + k + n)
    if transposed:
        whole = rng.standard_normal((6, k + spare, m + spare)).astype(np.float32)
        a = whole[:5, :k, :m].transpose(0, 2, 1)  # (columns contiguous)
    else:
        whole = rng.standard_normal((6, m + spare, k + spare)).astype(np.float32)
        a = whole[:5, :m, :k]  # (strided rows and positions)
    b = rng.standard_normal((5, k, n)).astype(np.float32)
    start = rng.standard_normal((5, m + spare, n)).astype(np.float32)[:, :m]
    got, want = start.copy(), start.copy()
    if spare:  # (positions farther apart than their size)
        got = np.zeros((5, m + spare, n), np.float32)[:, :m]
        got[...] = start
    assert native.ngemm_batch(a, b, got, accumulate)
    for p in range(5):
        assert native.ngemm(a[p], b[p], want[p], accumulate) is not None
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_batch_declines_what_it_does_not_take():
    a = np.ones((3, 8, 4), np.float32)
    b, out = np.ones((3, 4, 5), np.float32), np.empty((3, 8, 5), np.float32)
    assert not native.ngemm_batch(a.astype(np.float64), b, out)
    assert not native.ngemm_batch(a[:, :, ::2], b[:, :2], out)  # neither rows nor columns
    assert not native.ngemm_batch(a, b, np.empty((3, 10, 5), np.float32)[:, ::2, :])
    assert not native.ngemm_batch(a, b[:2], out)
    assert not native.ngemm_batch(a, b, out[:, :, :4])
    assert not native.ngemm_batch(a[:, :, :0], b[:, :0], out)  # (empty: per position)
    with pytest.raises(ValueError, match="ngemm_batch"):
        native._mod.ngemm_batch(a, np.ones((3, 5, 5), np.float32), out, False)
