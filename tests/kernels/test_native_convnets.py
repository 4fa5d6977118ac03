"""The C loops of the Table 1 convnets' kernels (`_native.c`'s convnets block, native.py):
GradientDescent's one-pass update and the channel-last batch norm's passes, each against
the NumPy path it stands in for (bit for bit where native.py promises it) and against a
float64 NumPy reference. No timing is asserted."""

from __future__ import annotations

import numpy as np
import pytest

from tensorflux.kernels.cpu import batch_norm_ops, native, training_ops

needs_native = pytest.mark.skipif(not native.available(),
                                  reason="the C extension is not built")

_SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0]


@needs_native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 7, 65536 * 2 + 7])
@pytest.mark.parametrize("parts", [1, 3])
def test_gradient_descent_equals_the_numpy_rule_bit_for_bit(dtype, n, parts):
    rng = np.random.default_rng(n)
    var, delta = (rng.standard_normal(n).astype(dtype) for _ in range(2))
    k = min(n - n // 2, len(_SPECIALS))
    delta[n // 2:n // 2 + k] = np.array(_SPECIALS, dtype)[:k]
    alpha = np.asarray(0.01, dtype)
    want = var.copy()
    training_ops._gradient_descent(want, alpha=alpha, delta=delta)
    assert training_ops._gradient_descent_native(var, alpha=alpha, delta=delta, parts=parts)
    np.testing.assert_array_equal(var.view(np.uint8), want.view(np.uint8))


@needs_native
def test_gradient_descent_refuses_what_it_does_not_take():
    x = np.zeros(8, np.float32)
    assert not native.gradient_descent(x, np.zeros(8, np.float64), 0.1, 1)
    assert not native.gradient_descent(x, np.zeros(9, np.float32), 0.1, 1)
    assert not native.gradient_descent(np.zeros((4, 4), np.float32).T, np.zeros((4, 4),
                                       np.float32), 0.1, 1)


# (rows, C): one chunk, many chunks, C above the 512 kept on the stack, C above 16384
_BN_SHAPES = [(5, 3), (3000, 64), (700, 600), (9, 20000)]


def _bn_operands(rng, rows, c, dtype):
    x = (rng.standard_normal((rows, c)) * 3 + 2).astype(dtype)
    y = rng.standard_normal((rows, c)).astype(dtype)
    vecs = [rng.standard_normal(c).astype(dtype) for _ in range(4)]
    return x, y, vecs


@needs_native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows, c", _BN_SHAPES)
@pytest.mark.parametrize("parts", [1, 2])
def test_bn_rows_equal_the_numpy_row_passes_bit_for_bit(dtype, rows, c, parts):
    rng = np.random.default_rng(rows + c)
    x, y, (m, k1, k2, k3) = _bn_operands(rng, rows, c, dtype)
    x[0, :min(c, 5)] = np.array(_SPECIALS, dtype)[:min(c, 5)]
    wants = [  # batch_norm_ops' NumPy row passes, operation for operation
        ((x - m) * k1) + k2,
        ((y * k1) - ((x - m) * k2)) - k3,
        y * k1,
    ]
    for kind, want in enumerate(wants):
        out = np.empty_like(x)
        with np.errstate(invalid="ignore"):
            assert native.bn_rows(kind, x, y, out, m, k1, k2, k3, parts)
        np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8))


@needs_native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows, c", _BN_SHAPES)
def test_bn_sums_match_float64_sums_on_any_number_of_threads(dtype, rows, c):
    rng = np.random.default_rng(rows * c)
    x, y, (v, *_) = _bn_operands(rng, rows, c, dtype)
    d = x.astype(np.float64) - v
    wants = [np.stack([d.sum(0), (d * d).sum(0)]),
             np.stack([y.astype(np.float64).sum(0), (d * y).sum(0)])]
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for kind, want in enumerate(wants):
        got = [native.bn_sums(kind, x, y, v, parts) for parts in (1, 2, 3)]
        scale = np.abs(want).max() + 1
        np.testing.assert_allclose(got[0], want, rtol=tol, atol=tol * scale)
        for other in got[1:]:  # summed per chunk, then in chunk order: the same bits
            np.testing.assert_array_equal(other, got[0])


def _relu_operand(rng, rows, c, dtype):
    """A ReLU's output: zeros, positives, and the specials (NaN, -0.0, Inf) in row 0."""
    r = np.maximum(rng.standard_normal((rows, c)), 0).astype(dtype)
    r[0, :min(c, 5)] = np.array(_SPECIALS, dtype)[:min(c, 5)]
    return r


@needs_native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows, c", _BN_SHAPES)
@pytest.mark.parametrize("parts", [1, 2])
def test_bn_rows_with_a_fused_relu_equal_the_unfused_kernels_bit_for_bit(dtype, rows, c,
                                                                          parts):
    """Kinds 3-5: kind 0 then the relu kernel; kinds 1 and 2 of relu_grad(y, r); kind 6:
    kind 0 plus a side input (y here), then the relu kernel."""
    rng = np.random.default_rng(rows + 3 * c)
    x, y, (m, k1, k2, k3) = _bn_operands(rng, rows, c, dtype)
    x[0, :min(c, 5)] = np.array(_SPECIALS, dtype)[:min(c, 5)]
    y[-1, :min(c, 5)] = np.array(_SPECIALS, dtype)[:min(c, 5)]
    r = _relu_operand(rng, rows, c, dtype)
    with np.errstate(invalid="ignore"):
        plain = np.empty_like(x)
        assert native.bn_rows(0, x, y, plain, m, k1, k2, k3, parts)
        masked = native.relu_grad(y, r, 1)
        wants = {3: native.relu(plain, 1), 6: native.relu(plain + y, 1)}
        for kind in (1, 2):
            wants[kind + 3] = np.empty_like(x)
            assert native.bn_rows(kind, x, masked, wants[kind + 3], m, k1, k2, k3, parts)
        for kind, want in wants.items():
            out = np.empty_like(x)
            extra = {3: None, 6: y}.get(kind, r)
            assert native.bn_rows(kind, x, y, out, m, k1, k2, k3, parts, extra)
            np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8))
        got = [native.bn_sums(2, x, y, m, p, r) for p in (1, 2, 3)]
        want = native.bn_sums(1, x, masked, m, 1)
    for other in got:
        np.testing.assert_array_equal(other, want)


@needs_native
def test_bn_loops_refuse_what_they_do_not_take():
    x = np.zeros((6, 4), np.float32)
    v = np.zeros(4, np.float32)
    assert native.bn_sums(0, x, x, np.zeros(5, np.float32), 1) is None
    assert native.bn_sums(0, x, x, v.astype(np.float64), 1) is None
    assert native.bn_sums(0, np.zeros((0, 4), np.float32), np.zeros((0, 4), np.float32),
                          v, 1) is None
    assert not native.bn_rows(0, x, x, np.zeros((6, 4), np.float64), v, v, v, v, 1)
    assert not native.bn_rows(0, x, x, np.zeros((4, 6), np.float32).T, v, v, v, v, 1)
    out = np.zeros((6, 4), np.float32)
    # the ReLU's output with the masked kinds only, of the data's shape and type
    assert native.bn_sums(2, x, x, v, 1) is None
    assert native.bn_sums(1, x, x, v, 1, x) is None
    assert native.bn_sums(2, x, x, v, 1, np.zeros((6, 5), np.float32)) is None
    assert not native.bn_rows(4, x, x, out, v, v, v, v, 1)
    assert not native.bn_rows(3, x, x, out, v, v, v, v, 1, x)
    assert not native.bn_rows(5, x, x, out, v, v, v, v, 1, x.astype(np.float64))


def _reference(x, dy, scale, offset, eps):
    """Training-mode fused batch norm and its gradient in float64 NumPy, over (rows, C)."""
    x, dy = x.astype(np.float64), dy.astype(np.float64)
    m, v = x.mean(0), x.var(0)
    inv = 1 / np.sqrt(v + eps)
    xh = (x - m) * inv
    y = xh * scale + offset
    d_offset, d_scale = dy.sum(0), (dy * xh).sum(0)
    dx = scale * inv / len(x) * (len(x) * dy - d_offset - xh * d_scale)
    return y, m, v, dx, d_scale, d_offset


@pytest.mark.parametrize("rows, c", [(3000, 64), (700, 600), (40, 3)])
@pytest.mark.parametrize("native_on", [True, False])
def test_channel_last_batch_norm_matches_float64_reference(monkeypatch, rows, c, native_on):
    """The channel-last rows paths, with the C loops and without (native's module off),
    give a float64 NumPy batch norm's values and gradients."""
    if not native_on:
        monkeypatch.setattr(native, "_mod", None)
    rng = np.random.default_rng(c)
    x = (rng.standard_normal((rows, c)) * 3 + 50).astype(np.float32)  # far from 0 mean
    dy = rng.standard_normal((rows, c)).astype(np.float32)
    scale = rng.uniform(0.5, 2, c).astype(np.float32)
    offset = rng.standard_normal(c).astype(np.float32)
    eps = 1e-3
    ctx = None  # the process's intra-op threads
    m, v = batch_norm_ops._rows_stats(ctx, x)
    inv = (1.0 / np.sqrt(v + eps)).astype(np.float32)
    y = batch_norm_ops._rows_normalize(ctx, x, m, (inv * scale).astype(np.float32), offset)
    dx, d_scale, d_offset = batch_norm_ops._rows_backward(ctx, dy, x, scale, m, inv, True)
    want = _reference(x, dy, scale, offset, eps)
    for got, w in zip((y, m, v, dx, d_scale, d_offset), want, strict=True):
        np.testing.assert_allclose(got, w, rtol=2e-4, atol=2e-4 * (np.abs(w).max() + 1))


# (k, t, tw, C): one tile, odd sizes, channels past one block of 128 and not a multiple
_WINO_SHAPES = [(1, 1, 1, 1), (2, 3, 5, 7), (3, 2, 4, 130), (1, 4, 3, 256)]


def _special_data(rng, dtype):
    """data(shape): standard normals of `dtype` whose first values are _SPECIALS (NaN,
    infinities, signed zeros)."""
    def data(shape):
        a = rng.standard_normal(shape).astype(dtype)
        flat = a.reshape(-1)
        flat[:len(_SPECIALS)] = np.array(_SPECIALS, dtype)[:flat.size]
        return a
    return data


def _destinations(dtype, strided: bool):
    """buffers(shape): a destination filled with 7s, or (strided) a slice of a bigger one,
    as the work units pass them."""
    def buffers(shape):
        if not strided:
            return np.full(shape, 7, dtype)
        big = np.full((shape[0], *(s + 2 for s in shape[1:-1]), shape[-1]), 7, dtype)
        return big[(slice(None),) + tuple(slice(1, 1 + s) for s in shape[1:-1])]
    return buffers


def _assert_native_equals_numpy(monkeypatch, calls, buffers, nan_sign: bool) -> None:
    """Each (fn(out), shape) of `calls` writes the same bits with the C extension as with
    native's module off; without `nan_sign` a NaN may carry either sign."""
    with np.errstate(invalid="ignore", over="ignore"):
        got = []
        for fn, shape in calls:
            out = buffers(shape)
            fn(out)
            got.append(out)
        monkeypatch.setattr(native, "_mod", None)
        for (fn, shape), g in zip(calls, got, strict=True):
            want = buffers(shape)
            fn(want)
            if not nan_sign:
                np.testing.assert_array_equal(np.isnan(g), np.isnan(want))
                g, want = np.where(np.isnan(g), 0, g), np.where(np.isnan(want), 0, want)
            np.testing.assert_array_equal(g.view(np.uint8), want.view(np.uint8))


@needs_native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k, t, tw, c", _WINO_SHAPES)
@pytest.mark.parametrize("strided", [False, True])
def test_winograd_transforms_equal_the_numpy_ones_bit_for_bit(monkeypatch, dtype, k, t, tw,
                                                              c, strided):
    """Input, output and gradient transforms of F(2x2, 3x3) in C against _winograd's NumPy
    functions (native's module off), on contiguous arrays and on the strided slices of
    larger buffers that the work units pass, with NaN, infinities and signed zeros."""
    from tensorflux.kernels.cpu import _winograd

    rng = np.random.default_rng(k * 100 + c)

    data = _special_data(rng, dtype)

    buffers = _destinations(dtype, strided)

    d = data((k, 2 * t + 2 + strided, 2 * tw + 2, c))
    m = data((16, k, t, tw, c))
    e = data((k, 2 * t, 2 * tw, c))
    if strided:
        d, m = d[:, :2 * t + 2], data((16, k + 1, t, tw, c))[:, 1:]
    calls = [  # (function, its arguments but the destination, destination shape)
        (lambda out: _winograd._input_transform(d, out, t, tw), (16, k, t, tw, c)),
        (lambda out: _winograd._output_transform(
            m, out, np.empty((2, 4, k, t, tw, c), dtype)), (k, 2 * t, 2 * tw, c)),
        (lambda out: _winograd._gradient_transform(e, out, t, tw), (16, k, t, tw, c)),
    ]
    _assert_native_equals_numpy(monkeypatch, calls, buffers, nan_sign=True)


@needs_native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k, t, tw, c", _WINO_SHAPES)
@pytest.mark.parametrize("strided", [False, True])
def test_winograd5_transforms_equal_the_numpy_ones_bit_for_bit(monkeypatch, dtype, k, t, tw,
                                                               c, strided):
    """Input and output transforms of F(2x2, 5x5) in C (wino_transform kinds 3 and 4)
    against _winograd5's NumPy functions, contiguous and on strided slices, with NaN,
    infinities and signed zeros: the same bits, except that a NaN may carry another sign
    (which NaN an operation returns depends on its operands' order, which the compiler may
    swap in an addition)."""
    from tensorflux.kernels.cpu import _winograd5

    rng = np.random.default_rng(k * 100 + c + 1)

    data = _special_data(rng, dtype)

    buffers = _destinations(dtype, strided)

    d = data((k, 2 * t + 4 + strided, 2 * tw + 4, c))
    m = data((36, k, t, tw, c))
    if strided:
        d, m = d[:, :2 * t + 4], data((36, k + 1, t, tw, c))[:, 1:]
    calls = [(lambda out: _winograd5._input_transform(d, out, t, tw), (36, k, t, tw, c)),
             (lambda out: _winograd5._output_transform(m, out), (k, 2 * t, 2 * tw, c))]
    _assert_native_equals_numpy(monkeypatch, calls, buffers, nan_sign=False)


@needs_native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k, t, tw, c", _WINO_SHAPES)
@pytest.mark.parametrize("strided", [False, True])
def test_winograd4_transforms_equal_the_numpy_ones_bit_for_bit(monkeypatch, dtype, k, t, tw,
                                                               c, strided):
    """Input, output and gradient transforms of F(4x4, 3x3) in C (wino_transform kinds 5,
    6 and 7: 6x6 tiles four pixels apart, 4x4 outputs, A e A^T of out_backprop's 4x4
    tiles) against _winograd4's NumPy functions,
    contiguous and on strided slices, with NaN, infinities and signed zeros: the same bits,
    but for a NaN's sign (as F(2x2, 5x5)'s)."""
    from tensorflux.kernels.cpu import _winograd4

    rng = np.random.default_rng(k * 100 + c + 2)

    data = _special_data(rng, dtype)

    buffers = _destinations(dtype, strided)

    d = data((k, 4 * t + 2 + strided, 4 * tw + 2 + strided, c))
    m = data((36, k, t, tw, c))
    e = data((k, 4 * t + strided, 4 * tw, c))
    if strided:
        d, m = d[:, :4 * t + 2, 1:], data((36, k + 1, t, tw, c))[:, 1:]
        e = e[:, 1:]
    calls = [(lambda out: _winograd4._input_transform(d, out, t, tw), (36, k, t, tw, c)),
             (lambda out: _winograd4._output_transform(m, out), (k, 4 * t, 4 * tw, c)),
             (lambda out: _winograd4._gradient_transform(e, out, t, tw), (36, k, t, tw, c))]
    _assert_native_equals_numpy(monkeypatch, calls, buffers, nan_sign=False)


@needs_native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("origin", [(-1, -1), (0, 0), (-2, 3), (5, -4), (-9, -9)])
@pytest.mark.parametrize("k, t, tw, c", [(2, 3, 2, 7), (1, 2, 3, 130)])
def test_6x6_input_transforms_read_unpadded_sources_as_padded(monkeypatch, dtype, origin, k,
                                                             t, tw, c):
    """F(4x4, 3x3)'s and F(2x2, 5x5)'s input transforms (kinds 5 and 3) with an origin:
    the unpadded source read as zero-padded around it (windows that start before it, run
    past it, or miss it entirely), the bits of the NumPy transform of the padded window
    (`_winograd.zero_window`), with NaN, infinities and signed zeros."""
    from tensorflux.kernels.cpu import _winograd, _winograd4, _winograd5

    rng = np.random.default_rng(k * 10 + c)
    data = _special_data(rng, dtype)
    d = data((k, 7, 9, c))  # (smaller than some of the windows read)
    calls = [(lambda out: _winograd4._input_transform(d, out, t, tw, origin),
              (36, k, t, tw, c)),
             (lambda out: _winograd5._input_transform(d, out, t, tw, origin),
              (36, k, t, tw, c))]
    _assert_native_equals_numpy(monkeypatch, calls, _destinations(dtype, False),
                                nan_sign=False)
    padded = _winograd.zero_window(d, origin, 4 * t + 2, 4 * tw + 2)
    want = np.empty((36, k, t, tw, c), dtype)
    _winograd4._input_transform(padded, want, t, tw)
    got = np.empty_like(want)
    _winograd4._input_transform(d, got, t, tw, origin)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.nan_to_num(got), np.nan_to_num(want))


@needs_native
def test_winograd4_transforms_refuse_shapes_that_do_not_match():
    """Kinds 5 to 7 check the tile geometry: an input too small for its tiles, an output
    or out_backprop not four pixels a tile, and a kind past 7 are errors, not reads or
    writes out of bounds."""
    v = np.empty((36, 1, 2, 2, 4), np.float32)
    with pytest.raises(ValueError, match="shapes do not match"):
        native._mod.wino_transform(5, np.zeros((1, 9, 10, 4), np.float32), v)
    with pytest.raises(ValueError, match="shapes do not match"):
        native._mod.wino_transform(6, v, np.empty((1, 8, 6, 4), np.float32))
    with pytest.raises(ValueError, match="shapes do not match"):
        native._mod.wino_transform(7, np.zeros((1, 8, 7, 4), np.float32), v)
    with pytest.raises(ValueError, match="kind 0 to 7"):
        native._mod.wino_transform(8, v, np.empty((1, 8, 8, 4), np.float32))
    with pytest.raises(ValueError, match="origin for kinds 3 and 5"):
        native._mod.wino_transform(6, v, np.empty((1, 8, 8, 4), np.float32), (0, 0))
    with pytest.raises(ValueError, match="shapes do not match"):  # (channels, images)
        native._mod.wino_transform(5, np.zeros((1, 3, 3, 5), np.float32), v, (-1, -1))


@needs_native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1), (3, 5, 7), (2, 9, 9, 130)])
@pytest.mark.parametrize("relu", [False, True])
def test_bias_relu_equals_the_fused_conv_numpy_epilogue_bit_for_bit(monkeypatch, dtype,
                                                                    shape, relu):
    """_FusedConv2D's epilogue (bias, then ReLU) in C against its NumPy operations, with
    NaN, infinities and signed zeros (np.maximum keeps NaN and -0.0)."""
    from tensorflux.kernels.cpu import conv_ops

    rng = np.random.default_rng(shape[-1])
    out = rng.standard_normal(shape).astype(dtype)
    flat = out.reshape(-1)
    flat[:len(_SPECIALS)] = np.array(_SPECIALS, dtype)[:flat.size]
    bias = rng.standard_normal(shape[-1]).astype(dtype)
    bias[0] = -0.0
    got, want = out.copy(), out.copy()
    with np.errstate(invalid="ignore"):
        assert native.bias_relu(got, bias, relu)
        monkeypatch.setattr(native, "_mod", None)
        conv_ops._bias_epilogue(bias, relu)(want)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@needs_native
def test_bias_relu_refuses_what_it_does_not_take():
    out = np.zeros((4, 3), np.float32)
    assert not native.bias_relu(out, np.zeros(3, np.float64), True)
    assert not native.bias_relu(out, np.zeros(4, np.float32), True)
    assert not native.bias_relu(np.zeros((3, 4), np.float32).T, np.zeros(3, np.float32), True)


# (taps (kh, kw), out_hw, strides, dilations, channels, images, by_tap)
_COL2IM_CASES = [
    ((5, 5), (14, 14), (2, 2), (1, 1), 1, 3, False),
    ((3, 2), (5, 7), (1, 3), (2, 1), 3, 2, False),
    ((3, 3), (4, 4), (2, 2), (1, 1), 33, 2, True),
    ((2, 3), (3, 5), (3, 1), (1, 2), 5, 1, True),
]


@needs_native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", _COL2IM_CASES, ids=[str(i) for i in range(len(_COL2IM_CASES))])
def test_col2im_equals_the_numpy_scatter_bit_for_bit(monkeypatch, dtype, case):
    """native.col2im (the scatter of backprop-input's tap products) adds what
    conv_ops._scatter_taps's NumPy adds do, in the same order (the same bits), from both
    product layouts (by tap: (taps, rows, C); all taps: (rows, taps*C)) with spare rows."""
    from tensorflux.kernels.cpu import conv_ops

    (kh, kw), (oh, ow), strides, dilations, c, nb, by_tap = case
    geom = conv_ops._ConvGeometry.__new__(conv_ops._ConvGeometry)
    (geom.sh, geom.sw), (geom.dh, geom.dw) = strides, dilations
    rng = np.random.default_rng(c)
    rows = nb * oh * ow + 5  # a thread's buffer is sized for the largest chunk
    cols = rng.standard_normal((kh * kw, rows, c) if by_tap else (rows, kh * kw * c))
    cols = cols.astype(dtype)
    hp = (oh - 1) * strides[0] + (kh - 1) * dilations[0] + 2
    wp = (ow - 1) * strides[1] + (kw - 1) * dilations[1] + 1
    start = rng.standard_normal((nb, hp, wp, c)).astype(dtype)
    got, want = start.copy(), start.copy()
    conv_ops._scatter_taps(cols, got, by_tap, (kh, kw), (oh, ow), geom)
    monkeypatch.setattr(native, "_mod", None)
    conv_ops._scatter_taps(cols, want, by_tap, (kh, kw), (oh, ow), geom)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    assert not np.array_equal(got, start)


@needs_native
def test_col2im_refuses_what_it_does_not_take():
    dxp = np.zeros((1, 6, 6, 2), np.float32)
    cols = np.zeros((9, 16, 2), np.float32)
    assert not native.col2im(cols.astype(np.float64), dxp, (3, 3), (4, 4), (1, 1), (1, 1),
                             32, 2)
    assert not native.col2im(cols, dxp[:, :, :5], (3, 3), (4, 4), (1, 1), (1, 1), 32, 2)
    with pytest.raises(ValueError, match="col2im"):  # a window past the padded gradient
        native._mod.col2im(cols, dxp, 4, 4, 3, 3, 2, 2, 1, 1, 32, 2, 0, 2, False)
    with pytest.raises(ValueError, match="col2im"):  # products past the buffer
        native._mod.col2im(cols, dxp, 4, 4, 3, 3, 1, 1, 1, 1, 33, 2, 0, 2, False)
