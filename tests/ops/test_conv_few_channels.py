"""3x3 convolutions with few channels (16-64, a small CIFAR ResNet's) through Winograd's
F(4x4, 3x3) at its real thresholds (kernels/cpu/_winograd4.py `FEW_CHANNELS`), and the
padded per-position buffers of every Winograd path (kernels/cpu/_winograd.py
`position_buffer`): Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter against the
explicit-loop references on odd sizes, batch 1, channel counts that are not a multiple of
a vector, and the strided convs that stay on im2col.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.op_test_util import conv2d_gradient_error, default_make
from tests.ops.nn_cases import _run, ref_conv, ref_conv_filter_grad, ref_conv_input_grad

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _scaled(rng, shape, dtype):
    return (0.2 * default_make(rng, shape, dtype)).astype(dtype)


# (c, f, output hw, batch, expected): the ResNet's three stages at batch 64, the edges of
# the channel range, and a batch of too few tiles
_APPLIES = [
    (16, 16, (32, 32), 64, True), (32, 32, (16, 16), 64, True), (64, 64, (8, 8), 64, True),
    (16, 64, (5, 7), 64, True), (15, 16, (32, 32), 64, False), (16, 65, (32, 32), 8, False),
    (64, 64, (8, 8), 8, False), (64, 64, (8, 8), 32, True), (16, 16, (48, 48), 1, True),
    (16, 16, (44, 44), 1, False),
]


@pytest.mark.parametrize("c, f, hw, n, expected", _APPLIES)
def test_few_channel_convs_take_winograd4(c, f, hw, n, expected):
    from tensorflux.kernels.cpu import _winograd4

    assert _winograd4.applies(3, 3, (1, 1), (1, 1), c, f, hw, n, np.float32) is expected
    assert not _winograd4.applies(3, 3, (2, 2), (1, 1), c, f, hw, n, np.float32)
    assert not _winograd4.applies(3, 3, (1, 1), (2, 2), c, f, hw, n, np.float32)
    assert not _winograd4.applies(3, 3, (1, 1), (1, 1), c, f, hw, n, np.float16)


def _count(monkeypatch):
    """Records _winograd4's conv3x3 (forward) and conv3x3_backprop_filter calls."""
    from tensorflux.kernels.cpu import _winograd4

    calls = []
    for name in ("conv3x3", "conv3x3_backprop_filter"):
        real = getattr(_winograd4, name)
        monkeypatch.setattr(_winograd4, name,
                            lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a))
    return calls


# (name, input shape, filter shape, strides, padding ("EXPLICIT": top 2, bottom 0, left
# and right 1), dtype, Winograd calls expected)
_CASES = [
    ("explicit", (2, 30, 33, 16), (3, 3, 16, 18), 1, "EXPLICIT", np.float32, 3),
    ("odd_sizes", (4, 23, 21, 17), (3, 3, 17, 20), 1, "SAME", np.float32, 3),
    ("batch_1", (1, 45, 47, 16), (3, 3, 16, 24), 1, "SAME", np.float32, 3),
    ("valid_odd", (3, 27, 30, 20), (3, 3, 20, 19), 1, "VALID", np.float32, 3),
    ("tails", (8, 18, 14, 33), (3, 3, 33, 41), 1, "SAME", np.float32, 3),
    ("float64", (2, 33, 29, 16), (3, 3, 16, 16), 1, "SAME", np.float64, 3),
    # (units of one tile row: the filter gradient split over the threads, the conv wide)
    ("many_units", (8, 16, 20, 16), (3, 3, 16, 16), 1, "SAME", np.float32, 3),
    ("stride_2", (8, 32, 32, 16), (3, 3, 16, 32), 2, "SAME", np.float32, 0),
    # (its input gradient by output phases: one phase a stride-1 3x3 conv of 200 tiles)
    ("phased_5x5_s2", (8, 40, 40, 16), (5, 5, 16, 16), 2, "SAME", np.float32, 1),
]


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("name, xs, ws, s, padding, dtype, expected", _CASES,
                         ids=[c[0] for c in _CASES])
def test_few_channel_convs_match_the_loop_references(monkeypatch, workers, name, xs, ws, s,
                                                     padding, dtype, expected):
    """Conv2D, its input gradient (the flipped forward conv) and its filter gradient of
    few-channel 3x3 convs at the real thresholds: F(4x4, 3x3) for the stride-1 ones, im2col
    for a stride-2 one (and F(4x4, 3x3) for a 3x3 phase of a strided input gradient),
    within the float tolerances of the other Winograd paths, on one or two threads."""
    from tensorflux.kernels import intra_op

    monkeypatch.setattr(intra_op, "workers", lambda ctx=None: workers)
    monkeypatch.setattr(intra_op, "MIN_FLOPS", 0)  # (split where the units allow)
    if name == "many_units":
        monkeypatch.setattr("tensorflux.kernels.cpu._winograd4._CHUNK_BYTES", 1 << 14)
    if name.startswith("phased"):  # (16 channels take products and scatter by default)
        monkeypatch.setattr("tensorflux.kernels.cpu.conv_ops._PHASED_MIN_CHANNELS", 16)
    calls = _count(monkeypatch)
    rng = np.random.default_rng(len(name))
    x, w = _scaled(rng, xs, dtype), _scaled(rng, ws, dtype)
    strides, st = (s, s), [1, s, s, 1]
    ref = dict(padding=padding)
    if padding == "EXPLICIT":
        padding, ref["pads"] = [[0, 0], [2, 0], [1, 1], [0, 0]], ((2, 0), (1, 1))
    y_ref = ref_conv(x, w, strides, **ref)
    dy = _scaled(rng, y_ref.shape, dtype)
    got_y, got_x, got_w = _run([
        tf.nn.conv2d(x, w, st, padding),
        tf.nn.conv2d_backprop_input(list(xs), w, dy, st, padding),
        tf.nn.conv2d_backprop_filter(x, list(ws), dy, st, padding)])
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got_y, y_ref, **tol)
    np.testing.assert_allclose(got_x, ref_conv_input_grad(xs, w, dy, strides, **ref), **tol)
    np.testing.assert_allclose(got_w, ref_conv_filter_grad(x, ws, dy, strides, **ref),
                               **tol)
    assert len(calls) == expected


@pytest.mark.parametrize("scheme", ["chunked", "wide"])
def test_few_channel_non_finite_values_stay_in_their_windows(monkeypatch, scheme):
    """An infinity and a NaN in a few-channel conv's input (F(4x4, 3x3) reading it
    unpadded, in work units that check their outputs, or wide over a padded copy) give
    the direct convolution's infinities and NaNs (the caller's fallback), forward and for
    the input gradient's out_backprop; finite data gives the loop reference."""
    from tensorflux.kernels.cpu import _winograd4

    if scheme == "wide":
        monkeypatch.setattr(_winograd4, "_UNIT_TILES", 1 << 30)
    calls = _count(monkeypatch)
    rng = np.random.default_rng(9)
    x = _scaled(rng, (2, 34, 30, 16), np.float32)
    w = _scaled(rng, (3, 3, 16, 16), np.float32)
    dy = _scaled(rng, (2, 34, 30, 16), np.float32)
    ops = lambda: [tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"),  # noqa: E731
                   tf.nn.conv2d_backprop_input(list(x.shape), w, dy, [1, 1, 1, 1], "SAME")]
    got, got_x = _run(ops())
    np.testing.assert_allclose(got, ref_conv(x, w), rtol=1e-4, atol=1e-4)
    assert calls == ["conv3x3", "conv3x3"]
    x[0, 0, 0, 0], x[1, 17, 21, 3] = np.inf, np.nan
    dy[1, 33, 29, 15] = -np.inf
    got, got_x = _run(ops())
    for g, want in ((got, ref_conv(x, w)), (got_x, ref_conv_input_grad(x.shape, w, dy))):
        np.testing.assert_array_equal(np.isfinite(g), np.isfinite(want))
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-4)


def test_few_channel_gradients_by_finite_differences(monkeypatch):
    """tf.gradients of a few-channel conv through F(4x4, 3x3) (its tile minimum lowered to
    this small conv: the input gradient by the flipped forward conv, and the filter
    gradient) agree with finite differences (float64)."""
    from tensorflux.kernels.cpu import _winograd4

    monkeypatch.setattr(_winograd4, "FEW_MIN_TILES", 1)
    calls = _count(monkeypatch)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 5, 6, 16))
    w = rng.standard_normal((3, 3, 16, 16))
    err = conv2d_gradient_error(x, w, [1, 1, 1, 1], "SAME")
    assert err < 1e-6
    assert {"conv3x3", "conv3x3_backprop_filter"} <= set(calls)


@pytest.mark.parametrize("shape, dtype", [
    ((16, 2, 3, 4, 5), np.float32), ((36, 7, 16), np.float32), ((36, 1, 1024), np.float64),
    ((16, 3), np.float64)])
def test_position_buffers_lie_an_odd_number_of_cache_lines_apart(shape, dtype):
    """The Winograd paths' per-position buffers: each position C-contiguous, the positions
    an odd number of 64-byte lines apart (never a multiple of 4 KiB), no two overlapping;
    carved from a given flat buffer at an offset, or new."""
    from tensorflux.kernels.cpu import _winograd

    a = _winograd.position_buffer(shape, dtype)
    assert a.shape == shape and a.dtype == dtype
    assert all(a[p].flags.c_contiguous for p in range(shape[0]))
    step = a.strides[0]
    assert step % 64 == 0 and (step // 64) % 2 == 1
    assert step >= a[0].nbytes
    a[...] = np.arange(a.size).reshape(shape)
    np.testing.assert_array_equal(a, np.arange(a.size).reshape(shape))
    size = _winograd.position_elements(shape, dtype)
    flat = np.zeros(size + 10, dtype)
    b = _winograd.position_buffer(shape, dtype, flat, 10)
    b[...] = 1
    assert np.shares_memory(b, flat) and flat[:10].sum() == 0 and flat.sum() == b.size
