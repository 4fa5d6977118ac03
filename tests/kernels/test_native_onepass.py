"""One-pass C loops of _native.c for memory-bound kernels: `elementwise` split over the pool
(the large float32 TanhGrad and SigmoidGrad of unary_ops.py), `resize_nearest` and
`resize_nearest_grad` (image_ops.py's ResizeNearestNeighbor and _resize_nearest.py's
gradient of an integer upsampling), each bit for bit the NumPy paths' values, on any number
of threads."""

from __future__ import annotations

import types

import numpy as np
import pytest

from tensorflux.kernels.cpu import _resize_nearest, image_ops, native, unary_ops
from tensorflux.kernels.cpu.fused_elementwise_ops import one_instruction

needs_native = pytest.mark.skipif(not native.available(),
                                  reason="the C extension is not built")


def _blocks(block, y, dy):
    """unary_ops' NumPy block loop (the values the C loop must give)."""
    out = np.empty_like(y)
    t1, t2 = np.empty(y.size, y.dtype), np.empty(y.size, y.dtype)
    block(y.reshape(-1), dy.reshape(-1), out.reshape(-1), t1, t2)
    return out


@needs_native
@pytest.mark.parametrize("op, block", [("TanhGrad", unary_ops._tanh_grad_block),
                                       ("SigmoidGrad", unary_ops._sigmoid_grad_block)])
@pytest.mark.parametrize("n", [1, 65535, 65537, 300001])
@pytest.mark.parametrize("parts", [1, 2, 3])
def test_split_elementwise_equals_the_numpy_blocks(op, block, n, parts):
    rng = np.random.default_rng(n)
    y = rng.uniform(-1.5, 1.5, n).astype(np.float32)
    dy = rng.standard_normal(n).astype(np.float32)
    y[:3] = [np.nan, np.inf, -0.0][:min(3, n)]
    want = _blocks(block, y, dy)
    out = np.empty_like(y)
    assert native.elementwise(out, (y, dy), one_instruction(op), parts)
    assert out.tobytes() == want.tobytes()
    for which in (0, 1):  # a donated input as the output
        ins = [y.copy(), dy.copy()]
        assert native.elementwise(ins[which], tuple(ins), one_instruction(op), parts)
        assert ins[which].tobytes() == want.tobytes()


def _nearest(images, h, w, ac, hp):
    iy = image_ops._nearest_index(images.shape[1], h, ac, hp)
    ix = image_ops._nearest_index(images.shape[2], w, ac, hp)
    return iy, ix, images[:, iy][:, :, ix]


RESIZES = [((2, 3, 5, 4), (6, 10)), ((1, 7, 7, 3), (21, 14)), ((3, 4, 4, 130), (8, 8)),
           ((2, 5, 3, 2), (7, 4)), ((2, 6, 6, 1), (3, 2)), ((1, 1, 1, 5), (4, 3)),
           ((0, 2, 2, 3), (4, 4)), ((2, 2, 2, 0), (4, 4))]
FLAGS = [(False, False), (True, False), (False, True)]


@needs_native
@pytest.mark.parametrize("shape, size", RESIZES)
@pytest.mark.parametrize("ac, hp", FLAGS)
@pytest.mark.parametrize("parts", [1, 2])
def test_resize_nearest_copies_the_pixels_fancy_indexing_picks(shape, size, ac, hp, parts):
    rng = np.random.default_rng(1)
    for dtype in (np.float32, np.float64, np.float16, np.int32, np.uint8, np.complex64,
                  np.bool_):
        images = (rng.standard_normal(shape) * 50).astype(dtype)
        iy, ix, want = _nearest(images, *size, ac, hp)
        got = native.resize_nearest(images, iy, ix, parts)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes(), dtype
    strided = np.zeros((2, 4, 4, 6), np.float32)[..., ::2]  # not C-contiguous: NumPy's
    assert native.resize_nearest(strided, np.arange(4), np.arange(4), parts) is None


@needs_native
def test_resize_nearest_refuses_indices_outside_the_image():
    images = np.zeros((1, 2, 2, 1), np.float32)
    out = np.empty((1, 2, 2, 1), np.float32)
    for iy, ix in [([0, 2], [0, 1]), ([0, 1], [-1, 0]), ([0], [0, 1])]:
        with pytest.raises(ValueError, match="resize_nearest"):
            native._mod.resize_nearest(out, images, np.array(iy, np.int64),
                                       np.array(ix, np.int64), 1)


def _grad_kernel(ac, hp):
    node = types.SimpleNamespace(op="ResizeNearestNeighborGrad",
                                 attrs={"align_corners": ac, "half_pixel_centers": hp})
    return image_ops._resize_nearest_grad(node)


@needs_native
@pytest.mark.parametrize("grads_shape, size", [
    ((2, 8, 10, 3), (4, 5)), ((1, 12, 10, 300), (4, 5)), ((3, 9, 4, 7), (3, 4)),
    ((2, 5, 15, 1), (5, 5)), ((64, 28, 28, 64), (14, 14)), ((1, 7, 3, 2), (4, 5)),
    ((2, 6, 6, 3), (4, 5)), ((0, 4, 4, 3), (2, 2))])
@pytest.mark.parametrize("ac, hp", FLAGS)
@pytest.mark.parametrize("parts", [1, 2])
def test_resize_nearest_grad_equals_the_strided_sums(grads_shape, size, ac, hp, parts,
                                                     monkeypatch):
    """The C loop (integer upsamplings without align_corners) sums each block as
    _sum_into's strided adds do: the same float32 values; other index maps keep NumPy."""
    grads = np.random.default_rng(2).standard_normal(grads_shape).astype(np.float32)
    iy = image_ops._nearest_index(size[0], grads_shape[1], ac, hp)
    ix = image_ops._nearest_index(size[1], grads_shape[2], ac, hp)
    nearest = _resize_nearest
    want = nearest._sum_into(nearest._sum_into(grads, iy, size[0], 1), ix, size[1], 2)
    ky, kx = nearest._factor(iy, size[0]), nearest._factor(ix, size[1])
    integer = all(len(i) % s == 0 and np.array_equal(i, np.arange(len(i)) // (len(i) // s))
                  for i, s in ((iy, size[0]), (ix, size[1])))  # idx[i] == i // k
    assert bool(ky and kx) == integer
    if integer:
        got = native.resize_nearest_grad(grads, ky, kx, parts)
        assert got.shape == want.shape and got.tobytes() == want.tobytes()
    calls = []
    monkeypatch.setattr(native, "resize_nearest_grad",
                        lambda *a: calls.append(a) or None)  # the kernel's NumPy fallback
    got = _grad_kernel(ac, hp)(None, grads, np.array(size, np.int32))
    assert got.tobytes() == want.tobytes() and bool(calls) == integer
    assert native.resize_nearest_grad(grads.astype(np.float64), 1, 1, parts) is None


@needs_native
def test_resize_nearest_grad_refuses_shapes_that_do_not_divide():
    grads = np.zeros((1, 4, 4, 2), np.float32)
    with pytest.raises(ValueError, match="resize_nearest_grad"):
        native._mod.resize_nearest_grad(np.empty((1, 3, 2, 2), np.float32), grads, 2, 2, 1)
    with pytest.raises(ValueError, match="resize_nearest_grad"):
        native._mod.resize_nearest_grad(np.empty((1, 2, 2, 2), np.float32), grads, 0, 2, 1)
    assert native.resize_nearest_grad(grads, 3, 2, 1) is None


@pytest.mark.oracle
def test_resize_nearest_and_its_gradient_match_tensorflow():
    """Integer upsamplings (the C loops' cases) and one uneven map, every flag combination
    TF takes, values and gradients against TensorFlow 2.21 (TF adds a block's gradients in
    another order: a few float32 roundings apart)."""
    import tensorflux as tf
    from tests import oracle

    cases = [((2, 5, 4, 3), (10, 8)), ((1, 3, 4, 300), (9, 8)), ((2, 4, 6, 2), (7, 9))]
    program = f"""
outs = []
for shape, size in {cases!r}:
    for ac, hp in {FLAGS!r}:
        rng = np.random.default_rng(shape[-1])
        x = tf.constant(rng.standard_normal(shape).astype(np.float32))
        gy = tf.constant(rng.standard_normal((shape[0], *size, shape[3])).astype(np.float32))
        y = tf.image.resize_nearest_neighbor(x, size, align_corners=ac, half_pixel_centers=hp)
        outs += [y, tf.gradients(y, x, grad_ys=gy)[0]]
with tf.Session() as s:
    result = s.run(outs)
"""
    ours, theirs = oracle.run_both(program, tf)
    for k, (got, want) in enumerate(zip(ours, theirs, strict=True)):
        if k % 2 == 0:
            np.testing.assert_array_equal(got, np.asarray(want, np.float32))
        else:
            np.testing.assert_allclose(got, np.asarray(want, np.float32), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("native_on", [True, False])
def test_resize_nearest_kernel_with_and_without_the_c_loop(monkeypatch, native_on):
    """The kernel's values are the same whether the C loop or NumPy's indexing copies."""
    if not native_on:
        monkeypatch.setattr(native, "resize_nearest", lambda *a: None)
    elif not native.available():
        pytest.skip("the C extension is not built")
    node = types.SimpleNamespace(op="ResizeNearestNeighbor",
                                 attrs={"align_corners": False, "half_pixel_centers": True})
    images = np.random.default_rng(3).standard_normal((2, 3, 5, 4)).astype(np.float32)
    got = image_ops._resize(node)(None, images, np.array([7, 10], np.int32))
    iy, ix, want = _nearest(images, 7, 10, False, True)
    assert got.tobytes() == want.tobytes()
