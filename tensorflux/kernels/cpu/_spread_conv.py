"""Convolutions with few filters (a generator's last layer: 5x5, 64 -> 1 or 3 channels), for
the Conv2D kernels (kernels/cpu/conv_ops.py): the forward conv and the filter gradient by
"spreading" over the filter taps instead of copying patches.

im2col copies kh*kw*C values per output pixel into the patch matrix and multiplies it by a
(kh*kw*C, F) filter: with F = 1 that product is a matrix-vector product, and the patch copy
(321 MB for a 28x28x64 batch of 64 with a 5x5 window) is nearly all of the time. Here:
  - forward: every padded input pixel's channels times the filter laid out as
    (C, kh*kw*F) gives each pixel's contribution to every tap, Z (pixels, kh*kw, F), one
    product with kh*kw*F columns; output pixel (r, q) is then the sum over taps (i, j) of
    Z[r*sh + i*dh, q*sw + j*dw, (i, j)] (native.col2im with `gather`, tap by tap);
  - filter gradient: out_backprop spread over the taps, D[y, x, (i, j)] = dy[r, q] at
    y = r*sh + i*dh, x = q*sw + j*dw (native.col2im, a scatter; each slot written at most
    once), then the padded input's pixels transposed times D: (C, kh*kw*F), summed over
    batch chunks in a fixed order (intra_op.parallel_sum).
Both read each input value once and do the flops of a product kh*kw*F wide. Per batch
chunk the spread matrix stays about `_CHUNK_BYTES`. The sums run in another order than
im2col's (float rounding apart, the same values); a chunk's result depends on the sizes
only, never on the threads.
"""

from __future__ import annotations

import numpy as np

from tensorflux.kernels import intra_op
from tensorflux.kernels.cpu import native

# At most this many filters (output channels): beyond, im2col's product is wide enough
# (5x5 on 28x28x64, batch 64, quiet, two threads, forward / filter gradient in ms: 1 filter
# 16.9 / 13.9 by im2col against 2.9 / 3.8 spread, 4: 12.9 / 14.3 against 4.3 / 5.5, 8:
# 12.7 / 14.6 against 6.3 / 10.6, 16: 11.2 / 10.3 against 10.5 / 19.4).
MAX_FILTERS = 8
_CHUNK_BYTES = 2 << 20  # the spread matrix of a batch chunk
# ... but a chunk is one image at least: larger images than this (their spread matrix)
# take im2col's blocks of rows (bounded memory, and a step is checked between chunks).
_IMAGE_BYTES = 16 << 20


def applies(kh: int, kw: int, f: int, strides, padded_hw, itemsize: int) -> bool:
    """Whether a conv goes through the spread paths: a window of more than one tap, at most
    MAX_FILTERS filters, stride 1 (at stride s the spread products would cover s*s times
    the pixels the conv reads), and one padded image's spread matrix within
    `_IMAGE_BYTES`."""
    return (kh * kw > 1 and f <= MAX_FILTERS and tuple(strides) == (1, 1)
            and padded_hw[0] * padded_hw[1] * kh * kw * f * itemsize <= _IMAGE_BYTES)


def _images(n: int, pixels: int, width: int, itemsize: int) -> int:
    """Images per batch chunk: a spread matrix of about `_CHUNK_BYTES`."""
    return max(1, min(n, _CHUNK_BYTES // max(1, pixels * width * itemsize)))


def _multiply(a, b, out, accumulate: bool = False) -> None:
    """out (=, or += when `accumulate`) a @ b: the C extension's GEMM where it takes the
    operands and beats BLAS, else NumPy."""
    if native.ngemm_favours(out.shape[0], out.shape[1], a.shape[1],
                            not a.flags.c_contiguous) and \
            native.ngemm(a, b, out, accumulate) is not None:
        return
    if accumulate:
        out += a @ b
    else:
        np.matmul(a, b, out=out)


def _tap_slices(img, taps, out_hw, strides, dilations, f: int):
    """Tap t's (N', oh, ow, F) slice of the spread image `img` (N', Hp, Wp, taps*F), in tap
    order."""
    (kh, kw), (oh, ow), (sh, sw), (dh, dw) = taps, out_hw, strides, dilations
    for i in range(kh):
        for j in range(kw):
            t = i * kw + j
            yield img[:, i * dh:i * dh + (oh - 1) * sh + 1:sh,
                      j * dw:j * dw + (ow - 1) * sw + 1:sw, t * f:(t + 1) * f]


def conv(xp, w, out, strides, dilations, parts: int, epilogue=None):
    """out (N, oh, ow, F) = the VALID conv of padded NHWC `xp` with `w` (kh, kw, C, F), then
    `epilogue` in place on each batch chunk's output. Returns `out`."""
    n, oh, ow, f = out.shape
    kh, kw, c, _ = w.shape
    hp, wp = xp.shape[1:3]
    width = kh * kw * f
    wr = np.ascontiguousarray(w.reshape(kh * kw, c, f).transpose(1, 0, 2)).reshape(c, width)
    nb = _images(n, hp * wp, width, out.itemsize)
    buffer, _ = intra_op.per_thread(lambda: np.empty((nb, hp, wp, width), out.dtype))

    def work(n0, n1):
        z = buffer()[:n1 - n0]
        _multiply(xp[n0:n1].reshape(-1, c), wr, z.reshape(-1, width))
        o = out[n0:n1]
        o[...] = 0
        if not native.col2im(o, z, (kh, kw), (oh, ow), strides, dilations, 0, f, f,
                             gather=True, length=f):
            for tap in _tap_slices(z, (kh, kw), (oh, ow), strides, dilations, f):
                o += tap
        if epilogue is not None:
            epilogue(o)

    flops = 2.0 * n * hp * wp * c * width
    intra_op.parallel_for(work, n, nb, parts if flops >= intra_op.MIN_FLOPS else 1)
    return out


def backprop_filter(xp, dy, taps, strides, dilations, parts: int, dtype):
    """d(loss)/d(filter) (kh, kw, C, F) from padded NHWC input `xp` and out_backprop `dy`
    (N, oh, ow, F) of a VALID conv with `taps` = (kh, kw)."""
    n, oh, ow, f = dy.shape
    (kh, kw), c = taps, xp.shape[3]
    hp, wp = xp.shape[1:3]
    width = kh * kw * f
    dy = np.ascontiguousarray(dy, dtype)
    nb = _images(n, hp * wp, width, np.dtype(dtype).itemsize)
    buffer, _ = intra_op.per_thread(lambda: np.empty((nb, hp, wp, width), dtype))

    def work(n0, n1, acc):
        d = buffer()[:n1 - n0]
        d[...] = 0
        part = dy[n0:n1]
        if not native.col2im(part, d, taps, (oh, ow), strides, dilations, 0, f, f,
                             length=f):
            for tap in _tap_slices(d, taps, (oh, ow), strides, dilations, f):
                tap += part
        _multiply(xp[n0:n1].reshape(-1, c).T, d.reshape(-1, width), acc, accumulate=True)

    flops = 2.0 * n * hp * wp * c * width
    total = intra_op.parallel_sum(work, n, nb, parts if flops >= intra_op.MIN_FLOPS else 1,
                                  lambda: np.zeros((c, width), dtype))
    return np.ascontiguousarray(total.reshape(c, kh, kw, f).transpose(1, 2, 0, 3))
