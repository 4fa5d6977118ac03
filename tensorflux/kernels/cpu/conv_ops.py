"""CPU kernels of Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter (and their V2 forms).

Convolution (Conv2D and its two backprops) with stride 1, large windows and many
channels goes through the frequency domain (kernels/cpu/_fft_conv.py: DFTs as matrix
products, one product over the channels per frequency) when its flop count says so
(`_by_fft`): the 5x5 layers of a small CNN cost ~2x less that way. Everything else is
im2col + BLAS. For each batch chunk the
patches of the padded input are copied, through a zero-copy `as_strided` view of shape
(n, out_h, out_w, kh, kw, C), into one reused buffer laid out as the rows of a matrix
(n*out_h*out_w, kh*kw*C); one matrix product with the filter (kh*kw*C, F) writes the
chunk's rows of the output. Chunks are sized so the patch buffer stays in cache
(`_CHUNK_BYTES`).
  - Conv2DBackpropFilter: the same patch matrix, transposed, times out_backprop, summed
    over chunks (one running sum per group of chunks, added in a fixed order:
    intra_op.parallel_sum).
  - Conv2DBackpropInput, stride 1 and at least `_FLIP_MIN_CHANNELS` input channels (but
    the 5x5 ones `_conv_picks` scatters, ahead of the FFT too): the forward conv (im2col)
    of out_backprop, padded to the input's size, with the filter flipped in space and
    transposed in channels. Otherwise out_backprop (m, F) times the filter transposed, per
    tap (F, C) or all at once (F, kh*kw*C); each tap's columns are then added into the
    strided slice of the padded input gradient it read from ("col2im" by taps).
With OpenBLAS at one thread per call (the process-wide policy: kernels/cpu/_blas.py) the
gemm runs at ~90 GF/s per core on these shapes (about 90% of what OpenBLAS reaches on
large square products) and the copies cost ~7% more.

Intra-op parallelism (kernels/intra_op.py). The convolution, pooling, big elementwise and
matrix kernels cut their work into chunks (batch chunks here) that the calling thread and
the intra-op pool claim dynamically, so the patch copies, adds and pooling passes run in
parallel as well as the products, a thread that loses its core to another process just
claims fewer chunks, and nothing spin-waits. With a multi-threaded BLAS (set by the user)
they run on the calling thread and BLAS parallelizes each product; chunks are then capped
in number (`_MAX_CHUNKS`): fewer, larger BLAS calls degrade far less when other processes
compete for the cores.
3x3 stride-1 convolutions with enough channels and output pixels (forward, backprop-input
as the flipped forward conv, and backprop-filter) go through Winograd's F(2x2, 3x3) instead
of im2col (kernels/cpu/_winograd.py): 2.25x fewer multiply-adds, 1.2-1.4x less CPU time on
the 28x28 and 56x56 layers of GoogLeNet and ResNet-50; on >= 28x28 outputs (or 16-64
channels: a CIFAR ResNet's) through F(4x4, 3x3) (kernels/cpu/_winograd4.py: 4x fewer).
5x5 stride-1 convolutions with at least 64 channels on 10x10 outputs or more (forward, and
backprop-input as the flipped forward conv) go through F(2x2, 5x5)
(kernels/cpu/_winograd5.py) before the FFT is weighed:
2.8x fewer multiply-adds, 1.2-1.6x less CPU time on AlexNet's and Overfeat's 5x5 layers.
Every kernel works in NHWC; NCHW data is transposed in and out (shared: _nchw_shared.py).
Products with a narrow filter (at most 128-512 columns, by `native.ngemm_favours`) go
through the C extension's own float32 GEMM (`native.ngemm`, `_ng`), which reads the patch
or pixel matrix where it lies instead of packing it as every BLAS call does (the 1x1
convs of ResNet's first stage, the stems, Winograd's products with <= 256 filters, the
col2im taps); OpenBLAS keeps the rest. On CPUs with AVX2 but no AVX-512F its 6x16 tiles
take fewer shapes: long products with a short inner size (k <= 96; the CNN's first conv,
1x1 convs on 64 channels).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from tensorflux.framework import errors
from tensorflux.kernels import interrupt, intra_op
from tensorflux.kernels.cpu import (
    _conv_picks,
    _fft_conv,
    _spread_conv,
    _winograd,
    _winograd4,
    _winograd5,
    native,
)
from tensorflux.kernels.cpu._nchw_shared import nhwc as shared_nhwc
from tensorflux.kernels.cpu._nn_common import (
    _checked,
    _explicit_pairs,
    _from_nhwc,
    _invalid,
    _narrow,
    _pad,
    _sizes,
    _widen,
    _window,
)
from tensorflux.kernels.registry import kernel_factory

_CHUNK_BYTES = 2 << 20  # patch-buffer size per batch chunk (stays in cache with the product)
# ... but at most this many chunks: every BLAS call hands work to BLAS's threads, and when
# other processes hold the cores each hand-off can cost a scheduler time slice.
_MAX_CHUNKS = 8
# Backprop-input as a flipped forward conv needs this many input channels: its product has
# one column per input channel, and narrower products run far below BLAS's peak (3 input
# channels: 2x slower than products-and-scatter).
_FLIP_MIN_CHANNELS, _PHASED_MIN_CHANNELS = 16, 64  # (strided: 16 channels 1.5x slower)
# Backprop-input by products and scatter takes one product per filter tap (F, C) with this
# many input channels, else one with every tap's columns (F, kh*kw*C) (5x5/2, 64 filters,
# 28x28, batch 64, two threads: 1 channel 4.1 -> 0.6 ms, 3: 4.6 -> 1.3, 16: 5.8 -> 4.3;
# 32: 8.8 against 14).
_TAP_MIN_CHANNELS = 32


# ---- Conv2D ------------------------------------------------------------------------------


class _ConvGeometry:
    """Strides, dilations and padding of one Conv2D-family node, resolved per input size."""

    __slots__ = ("sh", "sw", "dh", "dw", "padding", "explicit", "data_format", "name")

    def __init__(self, node):
        a = node.attrs
        self.data_format = a.get("data_format", "NHWC")
        hw = (2, 3) if self.data_format == "NCHW" else (1, 2)
        strides, dilations = list(a["strides"]), list(a.get("dilations") or [1, 1, 1, 1])
        if len(strides) != 4 or len(dilations) != 4:
            raise _invalid("Sliding window strides and dilations must have 4 elements")
        other = [i for i in range(4) if i not in hw]
        self.name = node.op
        if any(strides[i] != 1 for i in other):
            raise errors.UnimplementedError(
                None, None, "Current implementation does not yet support strides in the "
                "batch and depth dimensions.")
        if any(dilations[i] != 1 for i in other):
            raise errors.UnimplementedError(
                None, None, "Current implementation does not yet support dilations in the "
                "batch and depth dimensions.")
        self.sh, self.sw = strides[hw[0]], strides[hw[1]]
        self.dh, self.dw = dilations[hw[0]], dilations[hw[1]]
        self.padding = a["padding"]
        self.explicit = _explicit_pairs(a, hw)

    def resolve(self, h, w, kh, kw):
        """((out_h, out_w), [(top, bottom), (left, right)])."""
        oh, pt, pb = _window(h, kh, self.sh, self.dh, self.padding, self.explicit[0])
        ow, pl, pr = _window(w, kw, self.sw, self.dw, self.padding, self.explicit[1])
        return (oh, ow), [(pt, pb), (pl, pr)]


def _patches(xp, kh, kw, oh, ow, strides, dilations):
    """Read-only view (N, oh, ow, kh, kw, C) of the windows of padded NHWC `xp`."""
    s0, s1, s2, s3 = xp.strides
    (sh, sw), (dh, dw) = strides, dilations
    return as_strided(xp, (xp.shape[0], oh, ow, kh, kw, xp.shape[3]),
                      (s0, s1 * sh, s2 * sw, s1 * dh, s2 * dw, s3), writeable=False)


def _copy_patches(buf, xp, patches, n0: int, strides, dilations) -> None:
    """`buf` (N', oh, ow, kh, kw, C) = `patches[n0:n0 + N']` (the windows of padded `xp`),
    through the C extension's copy when it takes the arrays."""
    if not native.im2col(xp, buf, n0, strides, dilations):
        np.copyto(buf, patches[n0:n0 + buf.shape[0]])


def _ng(a, b, out, accumulate: bool = False) -> bool:
    """`out` (=, or += when `accumulate`) `a @ b` on this thread through the C extension's
    own GEMM (native.ngemm: no operand packing) when it beats BLAS at these sizes; False
    (nothing written) when the caller is to multiply with NumPy."""
    return (native.ngemm_favours(out.shape[0], out.shape[1], a.shape[1], not a.flags.c_contiguous)
            and native.ngemm(a, b, out, accumulate) is not None)


def _chunk(n: int, rows_per_image: int, row_bytes: int) -> int:
    """Images per batch chunk: a cache-sized patch buffer, and with a multi-threaded BLAS
    at most _MAX_CHUNKS chunks."""
    by_cache = _CHUNK_BYTES // max(1, rows_per_image * row_bytes)
    few = -(-n // _MAX_CHUNKS) if intra_op.blas_threads() != 1 else 1
    return max(1, by_cache, few)


def _im2col_matmul(xp, w2, out, kh, kw, strides, dilations, parts, epilogue=None):
    """out (N, oh, ow, F) = the windows of padded NHWC `xp` times `w2` (kh*kw*C, F): per
    batch chunk, the patches are copied into one reused buffer (rows of the patch matrix)
    and multiplied by `w2` straight into the chunk's rows of `out`, then `epilogue` (a
    fused bias and activation, in place) runs on those rows while they are in cache."""
    n, oh, ow, f = out.shape
    k = w2.shape[0]
    if _winograd4.forward(xp, w2, (kh, kw), strides, dilations, ((0, 0), (0, 0)), out, parts):
        return _finish(out, epilogue, parts)
    if (xp.dtype == w2.dtype == out.dtype and
            _winograd.applies(kh, kw, strides, dilations, xp.shape[3], f, (oh, ow), out.dtype)):
        _winograd.conv3x3(xp, w2.reshape(kh, kw, xp.shape[3], f), out, parts)
        if _finite(out):  # (before the epilogue: a ReLU would hide a tile's infinities)
            return _finish(out, epilogue, parts)
    if (xp.dtype == w2.dtype == out.dtype and
            _winograd5.applies(kh, kw, strides, dilations, xp.shape[3], f, (oh, ow), n,
                               out.dtype)):
        _winograd5.conv5x5(xp, w2.reshape(kh, kw, xp.shape[3], f), out, parts)
        if _finite(out):
            return _finish(out, epilogue, parts)
    if oh > 1 and (_image_too_big(oh * ow, k, f, xp.itemsize)
                   or _blocks_of_rows_pay(oh, ow, k, f, xp.itemsize)):
        return _im2col_matmul_rows(xp, w2, out, kh, kw, strides, dilations, parts, epilogue)
    patches = _patches(xp, kh, kw, oh, ow, strides, dilations)

    nb = _chunk(n, oh * ow, k * xp.itemsize)
    if _whole_batch(n, oh * ow, k, f, nb, xp.itemsize):
        whole = _whole_patches(xp, patches, strides, dilations, parts)
        return _finish(_product(whole.reshape(-1, k), w2, parts).reshape(out.shape),
                       epilogue, parts)
    buffer, _ = intra_op.per_thread(
        lambda: np.empty((min(nb, n),) + patches.shape[1:], dtype=xp.dtype))

    def work(n0, n1):
        b = buffer()[:n1 - n0]
        _copy_patches(b, xp, patches, n0, strides, dilations)
        o2 = out[n0:n1].reshape(-1, f)
        if not _ng(b.reshape(-1, k), w2, o2):
            np.matmul(b.reshape(-1, k), w2, out=o2)
        if epilogue is not None:
            epilogue(out[n0:n1])

    intra_op.parallel_for(work, n, nb, _parts(parts, 2.0 * out.size * k))
    return out


# A batch whose patch matrix takes at most this may be copied whole (`_whole_batch`).
_WHOLE_BYTES = 24 << 20


def _whole_batch(n: int, pixels: int, k: int, f: int, nb: int, itemsize: int) -> bool:
    """Whether a conv's patch matrix is better copied whole and multiplied in one split
    product (`_product`) than per batch chunk: every chunk's product packs the whole (k, f)
    filter again, which costs more than the chunk's own rows when the filter has more
    columns than the chunk has rows (small images, many channels: ResNet-50's 3x3 convs at
    7x7 and the stride-2 ones, 4,608 x 512 filters against chunks of 98-196 rows)."""
    return (nb < n and f > nb * pixels and n * pixels * k * itemsize <= _WHOLE_BYTES)


def _whole_patches(xp, patches, strides, dilations, parts: int):
    """The patch matrix of every image of padded `xp` (N, oh, ow, kh, kw, C), copied
    image by image on the intra-op threads."""
    buf = np.empty(patches.shape, xp.dtype)
    intra_op.parallel_for(
        lambda n0, n1: _copy_patches(buf[n0:n1], xp, patches, n0, strides, dilations),
        buf.shape[0], 1, parts if buf.size >= intra_op.MIN_ELEMENTS else 1)
    return buf


def _finish(out, epilogue, parts: int):
    """`out` after `epilogue` (in place; None: nothing) over row blocks in parallel."""
    if epilogue is None:
        return out
    rows = out.reshape(-1, out.shape[-1])
    grain = max(1, (1 << 16) // max(1, rows.shape[1]))
    intra_op.parallel_for(lambda lo, hi: epilogue(rows[lo:hi]), rows.shape[0], grain,
                          parts if out.size >= intra_op.MIN_ELEMENTS else 1)
    return out


# An image whose patch rows take more than this is cut into blocks of output rows: one chunk
# (that the step's deadline and cancellation are checked between, kernels/interrupt.py)
# never holds more than this of patches, however large the image.
_IMAGE_ROWS_BYTES = 64 << 20
# ... or whose product alone would take more than this many interrupt.CHUNK_FLOPS (a
# backprop of one large image: a chunk of it should end within tens of milliseconds).
_IMAGE_CHUNK_FLOPS = 4


def _im2col_matmul_rows(xp, w2, out, kh, kw, strides, dilations, parts, epilogue=None):
    """`_im2col_matmul` for large images: per (image, block of output rows), the block's
    patches (read from the rows of padded `xp` it covers) times `w2`."""
    n, oh, ow, f = out.shape
    k = w2.shape[0]
    (sh, _), (dh, _) = strides, dilations
    rows = max(1, _CHUNK_BYTES // (ow * k * xp.itemsize))
    blocks = -(-oh // rows)
    buffer, _ = intra_op.per_thread(
        lambda: np.empty((1, rows, ow, kh, kw, xp.shape[3]), dtype=xp.dtype))

    def work(u0, u1):
        for u in range(u0, u1):
            b, r0 = u // blocks, (u % blocks) * rows
            r1 = min(oh, r0 + rows)
            sub = xp[b:b + 1, r0 * sh:(r1 - 1) * sh + (kh - 1) * dh + 1]
            buf = buffer()[:, :r1 - r0]
            _copy_patches(buf, sub, _patches(sub, kh, kw, r1 - r0, ow, strides, dilations), 0,
                          strides, dilations)
            o2 = out[b, r0:r1].reshape(-1, f)
            if not _ng(buf.reshape(-1, k), w2, o2):
                np.matmul(buf.reshape(-1, k), w2, out=o2)
            if epilogue is not None:
                epilogue(out[b, r0:r1])

    intra_op.parallel_for(work, n * blocks, 1, _parts(parts, 2.0 * out.size * k))
    return out


def _finite(result) -> bool:
    """Whether a Winograd result holds no infinity or NaN. A transform mixes the pixels of
    a tile (an infinity times a zero coefficient is a NaN), where the direct convolution
    keeps a non-finite value to the windows that read it (as TF does); any non-finite
    operand reaches the result, so a non-finite result sends the conv the direct way."""
    return bool(np.isfinite(np.add.reduce(result, axis=None)))


def _parts(parts: int, flops: float) -> int:
    """Threads for a kernel of `flops` work: 1 when too small to be worth a split."""
    return parts if flops >= intra_op.MIN_FLOPS else 1


def _by_fft(g: _ConvGeometry, n, hw, c, f, khw, out_hw, pads, *operands,
            forward: bool = False) -> bool:
    """Whether a convolution of these shapes goes through the frequency domain
    (kernels/cpu/_fft_conv.py): stride 1, fewer flops than im2col by its count, and
    finite operands. A transform spreads a NaN or an infinity over the whole image, where
    the direct convolution keeps it to the windows that read it (as TF does), so data with
    any goes the direct way (one sum of each operand tells)."""
    return (g.sh == g.sw == 1
            and _fft_conv.worthwhile(np.result_type(*operands), n, hw, c, f, khw,
                                     (g.dh, g.dw), out_hw, (pads[0][0], pads[1][0]),
                                     forward=forward)
            and all(np.isfinite(np.add.reduce(a, axis=None)) for a in operands))


# ---- 1x1 convolutions: plain matrix products, no patch copies ------------------------------


def _pointwise(kh, kw, pads) -> bool:
    """Whether a conv is a 1x1 window without padding: every output pixel is one input
    pixel (every `stride`-th), and the conv and its backprops are single products."""
    return kh == kw == 1 and not any(p for pr in pads for p in pr)


def _subsampled(x, g: _ConvGeometry, oh, ow):
    """The input pixels a 1x1 conv reads, contiguous (N, oh, ow, C): `x` itself at
    stride 1, every stride-th pixel otherwise."""
    if g.sh == g.sw == 1:
        return x
    return np.ascontiguousarray(x[:, :(oh - 1) * g.sh + 1:g.sh, :(ow - 1) * g.sw + 1:g.sw])


def _product(a2, b2, parts):
    """a2 @ b2 (either may be a transposed view): through the C extension's GIL-free split
    (one BLAS call per thread over the longer output dimension: every BLAS call packs the
    whole of the other operand again, so few calls beat many small row blocks; ResNet's
    7x7x512 -> 2048 products 13-16 ms -> 9-10 ms), else `_rows_matmul`."""
    m, k, n = a2.shape[0], a2.shape[1], b2.shape[1]
    out = None
    if native.ngemm_favours(m, n, k, not a2.flags.c_contiguous) and a2.dtype == b2.dtype:
        # (a transposed filter, the 1x1 input gradient's: copied, small beside the product)
        out = native.ngemm(a2, np.ascontiguousarray(b2), parts=parts)
    if out is None:
        out = native.gemm(a2, b2, parts)
    if out is None:
        out = np.empty((a2.shape[0], b2.shape[1]), np.result_type(a2, b2))
        _rows_matmul(np.ascontiguousarray(a2), b2, out, parts)
    return out


def _rows_matmul(a2, b2, o2, parts):
    """o2 = a2 @ b2, split over blocks of a2's rows between the intra-op threads."""
    work = 2.0 * o2.size * a2.shape[1]
    parts = _parts(parts, work)
    m = a2.shape[0]  # chunks of rows of at most about interrupt.CHUNK_FLOPS
    intra_op.parallel_for(lambda lo, hi: np.matmul(a2[lo:hi], b2, out=o2[lo:hi]),
                          m, intra_op.bounded_grain(-(-m // (4 * parts)), m, work), parts)


def _pointwise_backprop_filter(x, dy, g: _ConvGeometry, parts: int):
    """Backprop-filter of a 1x1 conv: the read input pixels (m, C) transposed times
    out_backprop (m, F), summed over row blocks (in a fixed order: intra_op.parallel_sum)."""
    n, oh, ow, f = dy.shape
    x2 = _subsampled(x, g, oh, ow).reshape(-1, x.shape[3])
    d2 = dy.reshape(-1, f)
    c = x2.shape[1]
    if x2.shape[0] <= 4 * (c + f):  # few pixels, many channels: one split product
        return _product(x2.T, d2, parts).reshape(1, 1, c, f)
    dtype = np.result_type(x2, d2)
    scratch = _product_scratch((c, f), dtype)

    def work(lo, hi, acc):
        if not _ng(x2[lo:hi].T, d2[lo:hi], acc, accumulate=True):
            acc += np.matmul(x2[lo:hi].T, d2[lo:hi], out=scratch())

    flops = 2.0 * x2.shape[0] * c * f
    p = _parts(parts, flops)
    m = x2.shape[0]  # chunks of at most about interrupt.CHUNK_FLOPS
    total = intra_op.parallel_sum(work, m, intra_op.bounded_grain(-(-m // (2 * p)), m, flops),
                                  p, lambda: np.zeros((c, f), dtype))
    return total.reshape(1, 1, c, f)


def _product_scratch(shape, dtype):
    """A getter of the calling thread's own product buffer of `shape` (made on its first
    call): where a summed chunk's product goes before it is added to its group's sum."""
    get, _ = intra_op.per_thread(lambda: np.empty(shape, dtype))
    return get


def _pointwise_backprop_input(shape, w, dy, g: _ConvGeometry, parts: int):
    """Backprop-input of a 1x1 conv: out_backprop (m, F) times the filter transposed,
    written to the input pixels the conv read (the others get zero)."""
    n, h, wd, c = shape
    _, oh, ow, f = dy.shape
    dtype = np.result_type(w, dy)
    sub = _product(dy.reshape(-1, f), w.reshape(c, f).T, parts).reshape(n, oh, ow, c)
    if g.sh == g.sw == 1:
        return sub
    out = np.zeros((n, h, wd, c), dtype)
    out[:, :(oh - 1) * g.sh + 1:g.sh, :(ow - 1) * g.sw + 1:g.sw] = sub
    return out


# ---- small convolutions: one patch matrix, one product, nothing else ----------------------
# A convolution below these sizes takes `_im2col_matmul`'s path with one batch chunk on one
# thread (below intra_op.MIN_FLOPS no split; below the FFT's and Winograd's thresholds
# neither applies), so its result is that path's product, computed here without the
# chunking machinery: a batch-of-one convnet (a served model) spends more time in that
# machinery than in its products.
_SMALL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _small_sizes(rows: int, k: int, f: int, itemsize: int) -> bool:
    """Whether a conv's patch matrix (rows, k) and its product with f filters are small
    enough for `_small_conv_forward` (one chunk on one thread, no FFT)."""
    # (the thresholds read per call: tests lower them to force a path)
    return (rows * k * itemsize <= _CHUNK_BYTES
            and 2.0 * rows * k * f < min(intra_op.MIN_FLOPS, _fft_conv._MIN_FLOPS))


def _small_conv_forward(x, w, g: _ConvGeometry):
    """NHWC Conv2D of `x` (N, H, W, C) with `w` (kh, kw, C, F) of one float dtype, equal
    to `_conv_forward`'s value, or None when the shapes are not small (or not plain)."""
    n, h, wd, c = x.shape
    kh, kw, _, f = w.shape
    (oh, ow), pads = g.resolve(h, wd, kh, kw)
    k = kh * kw * c
    rows = n * oh * ow
    if (not _small_sizes(rows, k, f, x.itemsize) or rows * f == 0 or _pointwise(kh, kw, pads)
            or _winograd.applies(kh, kw, (g.sh, g.sw), (g.dh, g.dw), c, f, (oh, ow),
                                 x.dtype)
            or _winograd4.applies(kh, kw, (g.sh, g.sw), (g.dh, g.dw), c, f, (oh, ow), n,
                                  x.dtype)
            or _winograd5.applies(kh, kw, (g.sh, g.sw), (g.dh, g.dw), c, f, (oh, ow), n,
                                  x.dtype)):
        return None
    strides, dilations = (g.sh, g.sw), (g.dh, g.dw)
    xp = _pad(x, pads)
    buf = np.empty((n, oh, ow, kh, kw, c), x.dtype)
    if not native.im2col(xp, buf, 0, strides, dilations):
        np.copyto(buf, _patches(xp, kh, kw, oh, ow, strides, dilations))
    out = np.empty((n, oh, ow, f), x.dtype)
    if not _ng(buf.reshape(rows, k), w.reshape(k, f), out.reshape(rows, f)):  # as the chunks
        np.matmul(buf.reshape(rows, k), w.reshape(k, f), out=out.reshape(rows, f))
    return out


def _conv_forward(x, w, g: _ConvGeometry, parts: int, ctx=None, epilogue=None):
    """NHWC conv of compute-precision `x` (N, H, W, C) with `w` (kh, kw, C, F), then
    `epilogue` in place on the output's rows (_FusedConv2D's bias and activation)."""
    n, h, wd, c = x.shape
    kh, kw, _, f = w.shape
    (oh, ow), pads = g.resolve(h, wd, kh, kw)
    k = kh * kw * c
    out = np.empty((n, oh, ow, f), dtype=np.result_type(x, w))
    if out.size == 0:
        return np.zeros(out.shape, out.dtype)
    if _pointwise(kh, kw, pads):
        return _finish(_product(_subsampled(x, g, oh, ow).reshape(-1, c), w.reshape(c, f),
                                parts).reshape(n, oh, ow, f), epilogue, parts)
    if (stem := _conv_picks.stem_forward(x, w, g, pads, parts)) is not None:
        return _finish(stem, epilogue, parts)
    # (a small conv keeps im2col's value: `_small_conv_forward` gives it bit for bit)
    padded = (h + sum(pads[0]), wd + sum(pads[1]))
    if _spread_conv.applies(kh, kw, f, (g.sh, g.sw), padded, out.itemsize) and \
            not _small_sizes(n * oh * ow, k, f, out.itemsize):
        return _spread_conv.conv(_pad(x, pads), w, out, (g.sh, g.sw), (g.dh, g.dw), parts,
                                 epilogue)
    if not _winograd5.applies(kh, kw, (g.sh, g.sw), (g.dh, g.dw), c, f, (oh, ow), n,
                              out.dtype) and \
            _by_fft(g, n, (h, wd), c, f, (kh, kw), (oh, ow), pads, x, w, forward=True):
        return _finish(_fft_conv.conv_forward(x, w, (pads[0][0], pads[1][0]), (oh, ow),
                                              (g.dh, g.dw), parts, ctx), epilogue, parts)
    if _winograd4.forward(x, w, (kh, kw), (g.sh, g.sw), (g.dh, g.dw), pads, out, parts):
        return _finish(out, epilogue, parts)
    return _im2col_matmul(_pad(x, pads), w.reshape(k, f), out, kh, kw, (g.sh, g.sw),
                          (g.dh, g.dw), parts, epilogue)


def _conv_backprop_filter(x, dy, kh, kw, g: _ConvGeometry, parts: int, ctx=None):
    """d(loss)/d(filter) (kh, kw, C, F) from NHWC input `x` and out_backprop `dy`: per
    batch chunk, the patch matrix transposed times the chunk's out_backprop rows, summed
    over chunks (and over the ranges of the intra-op split)."""
    n, h, wd, c = x.shape
    f = dy.shape[3]
    (oh, ow), pads = g.resolve(h, wd, kh, kw)
    if dy.shape[1:3] != (oh, ow):
        raise _invalid(f"{g.name}: Size of out_backprop doesn't match computed: actual = "
                       f"{dy.shape[1:3]}, computed = {(oh, ow)}")
    k = kh * kw * c
    dtype = np.result_type(x, dy)
    if n * oh * ow == 0:
        return np.zeros((kh, kw, c, f), dtype)
    if _pointwise(kh, kw, pads):
        return _pointwise_backprop_filter(x, dy, g, parts)
    padded = (h + sum(pads[0]), wd + sum(pads[1]))
    if _spread_conv.applies(kh, kw, f, (g.sh, g.sw), padded, x.itemsize) and \
            np.isfinite(np.add.reduce(x, None)):
        # (finite input only: the spread products also multiply pixels no window of a
        # tap reads, by zero, and an infinity there would give a NaN)
        return _spread_conv.backprop_filter(_pad(x, pads), dy, (kh, kw), (g.sh, g.sw),
                                            (g.dh, g.dw), parts, dtype)
    if _by_fft(g, n, (h, wd), c, f, (kh, kw), (oh, ow), pads, x, dy):
        return _fft_conv.conv_backprop_filter(x, dy, (kh, kw), (pads[0][0], pads[1][0]),
                                              (g.dh, g.dw), parts, ctx)
    if x.dtype == dy.dtype and _winograd4.applies(kh, kw, (g.sh, g.sw), (g.dh, g.dw), c, f,
                                                  (oh, ow), n, dtype):
        dw = _winograd4.conv3x3_backprop_filter(x, dy, parts, pads)
        if _finite(dw):
            return dw
    if x.dtype == dy.dtype and _winograd.applies(kh, kw, (g.sh, g.sw), (g.dh, g.dw), c, f,
                                                 (oh, ow), dtype):
        dw = _winograd.conv3x3_backprop_filter(_pad(x, pads), dy, parts)
        if _finite(dw):
            return dw
    xp = _pad(x, pads)
    if oh > 1 and (_image_too_big(oh * ow, k, f, x.itemsize)
                   or _blocks_of_rows_pay(oh, ow, k, f, x.itemsize)):
        return _backprop_filter_rows(xp, dy, kh, kw, g, parts, dtype)
    patches = _patches(xp, kh, kw, oh, ow, (g.sh, g.sw), (g.dh, g.dw))

    nb = _chunk(n, oh * ow, k * x.itemsize)
    if _whole_batch(n, oh * ow, k, f, nb, x.itemsize):
        whole = _whole_patches(xp, patches, (g.sh, g.sw), (g.dh, g.dw), parts)
        return _product(whole.reshape(-1, k).T, dy.reshape(-1, f), parts).reshape(kh, kw, c, f)
    # Per thread a patch buffer and a product buffer; the sums per group of batch chunks,
    # added in a fixed order (intra_op.parallel_sum).
    buffer, _ = intra_op.per_thread(
        lambda: np.empty((min(nb, n), oh, ow, kh, kw, c), dtype=x.dtype))
    scratch = _product_scratch((k, f), dtype)

    def work(n0, n1, acc):
        b = buffer()[:n1 - n0]
        _copy_patches(b, xp, patches, n0, (g.sh, g.sw), (g.dh, g.dw))
        if not _ng(b.reshape(-1, k).T, dy[n0:n1].reshape(-1, f), acc, accumulate=True):
            acc += np.matmul(b.reshape(-1, k).T, dy[n0:n1].reshape(-1, f), out=scratch())

    total = intra_op.parallel_sum(work, n, nb, _parts(parts, 2.0 * n * oh * ow * k * f),
                                  lambda: np.zeros((k, f), dtype))
    return total.reshape(kh, kw, c, f)


def _image_too_big(pixels: int, k: int, f: int, itemsize: int) -> bool:
    """Whether one image's patch rows (`pixels` of them, `k` wide, times `f` filters) are
    too much for one chunk: more than `_IMAGE_ROWS_BYTES` of patches or more than a few
    `interrupt.CHUNK_FLOPS` of products (a chunk is where the step is checked)."""
    return (pixels * k * itemsize > _IMAGE_ROWS_BYTES
            or 2.0 * pixels * k * f > _IMAGE_CHUNK_FLOPS * interrupt.CHUNK_FLOPS)


def _blocks_of_rows_pay(oh: int, ow: int, k: int, f: int, itemsize: int) -> bool:
    """Whether an image whose patches outgrow a chunk (`_CHUNK_BYTES`: it would be a chunk
    of its own, its patch buffer out of cache by the time the product reads it) is better
    cut into cache-sized blocks of output rows: when a block still has at least 8 patch
    rows per filter, so that re-packing the (k, f) filter for each block's product costs
    little (the 7x7/2 stem of GoogLeNet and ResNet-50, AlexNet's 11x11/4: 10-20% less CPU;
    not GoogLeNet's 28x28 3x3 layers, whose blocks would be thin)."""
    rows = _row_blocks(oh, ow, k, itemsize)
    return oh * ow * k * itemsize > _CHUNK_BYTES and rows < oh and rows * ow >= 8 * f


def _row_blocks(oh: int, ow: int, k: int, itemsize: int, least: int = 1) -> int:
    """Output rows per block of one image: a cache-sized patch buffer (at least `least`)."""
    return max(1, least, _CHUNK_BYTES // max(1, ow * k * itemsize))


def _backprop_filter_rows(xp, dy, kh, kw, g: _ConvGeometry, parts: int, dtype):
    """`_conv_backprop_filter` for large images: per (image, block of output rows), the
    block's patches transposed times its out_backprop rows, summed in a fixed order."""
    n, oh, ow, f = dy.shape
    c = xp.shape[3]
    k = kh * kw * c
    strides, dilations = (g.sh, g.sw), (g.dh, g.dw)
    rows = _row_blocks(oh, ow, k, xp.itemsize)
    blocks = -(-oh // rows)
    buffer, _ = intra_op.per_thread(lambda: np.empty((1, rows, ow, kh, kw, c), dtype=xp.dtype))
    scratch = _product_scratch((k, f), dtype)

    def work(u0, u1, acc):
        buf = buffer()
        for u in range(u0, u1):
            b, r0 = u // blocks, (u % blocks) * rows
            r1 = min(oh, r0 + rows)
            sub = xp[b:b + 1, r0 * g.sh:(r1 - 1) * g.sh + (kh - 1) * g.dh + 1]
            pb = buf[:, :r1 - r0]
            _copy_patches(pb, sub, _patches(sub, kh, kw, r1 - r0, ow, strides, dilations), 0,
                          strides, dilations)
            if not _ng(pb.reshape(-1, k).T, dy[b, r0:r1].reshape(-1, f), acc, accumulate=True):
                acc += np.matmul(pb.reshape(-1, k).T, dy[b, r0:r1].reshape(-1, f), out=scratch())

    total = intra_op.parallel_sum(work, n * blocks, 1,
                                  _parts(parts, 2.0 * n * oh * ow * k * f),
                                  lambda: np.zeros((k, f), dtype))
    return total.reshape(kh, kw, c, f)


def _flipped_pads(h, kh, dh, oh, before):
    """(before, after) padding of out_backprop along one axis that turns a stride-1
    backprop-input into a VALID forward conv with the flipped filter, or None when the
    forward padding exceeds the window (out_backprop would need cropping)."""
    extent = (kh - 1) * dh
    pads = (extent - before, h + before - oh)
    return pads if min(pads) >= 0 else None


def _conv_backprop_input(shape, w, dy, g: _ConvGeometry, parts: int, ctx=None):
    """d(loss)/d(input) of NHWC `shape` from filter `w` and out_backprop `dy`. One window on
    the whole unpadded input (1x1 output): dy (N, F) times the filter (kh*kw*C, F)^T. Stride
    1 with enough input channels: a forward conv (im2col) of the padded out_backprop with the
    filter flipped and transposed (no scatter). Otherwise `_col2im_backprop_input`."""
    n, h, wd, c = shape
    kh, kw, _, f = w.shape
    (oh, ow), pads = g.resolve(h, wd, kh, kw)
    if dy.shape[1:3] != (oh, ow) or dy.shape[0] != n:
        raise _invalid(f"{g.name}: Size of out_backprop doesn't match computed: actual = "
                       f"{dy.shape[1:3]}, computed = {(oh, ow)}")
    dtype = np.result_type(w, dy)
    if dy.size == 0 or n * h * wd * c == 0:
        return np.zeros((n, h, wd, c), dtype)
    if _pointwise(kh, kw, pads):
        return _pointwise_backprop_input(shape, w, dy, g, parts)
    if (kh, kw) == (h, wd) and g.dh == g.dw == 1 and not any(p for pr in pads for p in pr):
        return (dy.reshape(n, f) @ w.reshape(-1, f).T).reshape(n, h, wd, c)
    if _conv_picks.scatter_input_gradient(kh, kw, (g.sh, g.sw), (g.dh, g.dw), c, f):
        return _col2im_backprop_input(shape, w, dy, g, pads, (oh, ow), parts)
    flip5 = c >= _FLIP_MIN_CHANNELS and _winograd5.applies(kh, kw, (g.sh, g.sw), (g.dh, g.dw),
                                                           f, c, (h, wd), n, dtype)
    if not flip5 and _by_fft(g, n, (h, wd), c, f, (kh, kw), (oh, ow), pads, w, dy):
        return _fft_conv.conv_backprop_input(shape, w, dy, (pads[0][0], pads[1][0]),
                                             (g.dh, g.dw), parts, ctx)
    if g.sh == g.sw == 1 and c >= _FLIP_MIN_CHANNELS:
        ph = _flipped_pads(h, kh, g.dh, oh, pads[0][0])
        pw = _flipped_pads(wd, kw, g.dw, ow, pads[1][0])
        if ph is not None and pw is not None:
            wf = _flipped_filter(w, flip5 or _winograd.applies(
                kh, kw, (1, 1), (g.dh, g.dw), f, c, (h, wd), dtype), _chunk_rows(n, h * wd))
            out = np.empty((n, h, wd, c), dtype)
            if _winograd4.forward(dy, wf, (kh, kw), (1, 1), (g.dh, g.dw), [ph, pw], out, parts):
                return out
            return _im2col_matmul(_pad(dy, [ph, pw]), wf, out, kh, kw, (1, 1),
                                  (g.dh, g.dw), parts)
    if (g.sh > 1 or g.sw > 1) and g.dh == g.dw == 1 and c >= _PHASED_MIN_CHANNELS:
        return _phased_backprop_input(shape, w, dy, g, pads, parts)
    return _col2im_backprop_input(shape, w, dy, g, pads, (oh, ow), parts)


def _flipped_filter(w, winograd: bool, rows: int):
    """The filter (kh, kw, C, F) flipped and transposed, the (kh*kw*F, C) matrix of the
    input gradient's forward conv: C-contiguous for Winograd's filter transform and the C
    GEMM (`_ng`: products of `rows` rows), else the transposed view of a (C, kh*kw*F) copy
    (runs of F values, not single ones: 3x3x512x512 5.8 -> 0.9 ms; BLAS reads either)."""
    kh, kw, c, f = w.shape
    if winograd or native.ngemm_favours(rows, c, kh * kw * f):
        return np.ascontiguousarray(w[::-1, ::-1].transpose(0, 1, 3, 2)).reshape(-1, c)
    return np.ascontiguousarray(w[::-1, ::-1].transpose(2, 0, 1, 3)).reshape(c, -1).T


def _chunk_rows(n: int, pixels: int) -> int:
    """About how many rows the products of an im2col over `n` images of `pixels` output
    pixels have: a batch chunk's (`_chunk`, taken as at most 8 images)."""
    return min(n, 8) * pixels


def _phase_axis(a: int, size: int, k: int, s: int, before: int):
    """One axis of output phase `a` of a strided backprop-input: (rows of the phase,
    first filter tap, tap count, first out_backprop row of its window). Input row
    y = a + s*j reads out_backprop rows q0 + j - t through taps r + s*t (t < taps), with
    r = (a + before) % s, q0 = (a + before) // s."""
    rows = (size - a + s - 1) // s
    r, q0 = (a + before) % s, (a + before) // s
    taps = (k - r + s - 1) // s if k > r else 0
    return rows, r, taps, q0 - taps + 1


def _dy_window(dy, starts, lengths):
    """out_backprop rows/columns [start, start + length) along H and W, zero outside."""
    n, oh, ow, f = dy.shape
    (h0, w0), (lh, lw) = starts, lengths
    out = np.zeros((n, lh, lw, f), dy.dtype)
    sh0, sh1 = max(h0, 0), min(h0 + lh, oh)
    sw0, sw1 = max(w0, 0), min(w0 + lw, ow)
    if sh1 > sh0 and sw1 > sw0:
        out[:, sh0 - h0:sh1 - h0, sw0 - w0:sw1 - w0] = dy[:, sh0:sh1, sw0:sw1]
    return out


def _phased_backprop_input(shape, w, dy, g: _ConvGeometry, pads, parts: int):
    """Backprop-input of a strided conv (dilation 1) by output phases: the input pixels
    (a + sh*i, b + sw*j) of one phase (a, b) receive only the taps (r + sh*t, r' + sw*u) of
    the filter, each from a shifted out_backprop pixel: a stride-1 VALID forward conv of
    out_backprop's window (zero outside it) with that sub-filter flipped in space and
    transposed in channels (im2col, or Winograd where it applies). sh*sw products of the
    col2im scheme's total size, each input pixel written once: no scatter-adds, no zeroed
    padded gradient (ResNet-50's 3x3/2 layers: 9 tap products and 9 strided adds before)."""
    n, h, wd, c = shape
    kh, kw, _, f = w.shape
    dtype = np.result_type(w, dy)
    dyw = dy.astype(dtype, copy=False)
    dx = np.empty((n, h, wd, c), dtype)
    for a in range(min(g.sh, h)):
        rows, rh, th, h0 = _phase_axis(a, h, kh, g.sh, pads[0][0])
        for b in range(min(g.sw, wd)):
            cols, rw, tw, w0 = _phase_axis(b, wd, kw, g.sw, pads[1][0])
            target = dx[:, a::g.sh, b::g.sw]
            if th == 0 or tw == 0:
                target[...] = 0
                continue
            sub = w[rh::g.sh, rw::g.sw][:th, :tw].astype(dtype, copy=False)
            wf = _flipped_filter(sub, _winograd.applies(th, tw, (1, 1), (1, 1), f, c,
                                                        (rows, cols), dtype),
                                 _chunk_rows(n, rows * cols))
            window = _dy_window(dyw, (h0, w0), (rows + th - 1, cols + tw - 1))
            if th == tw == 1:  # one tap: a single product, no patches
                target[...] = _product(window.reshape(-1, f), wf, parts).reshape(n, rows, cols, c)
                continue
            target[...] = _im2col_matmul(window, wf, np.empty((n, rows, cols, c), dtype),
                                         th, tw, (1, 1), (1, 1), parts)  # (its result)
    return dx


def _col2im_backprop_input(shape, w, dy, g: _ConvGeometry, pads, out_hw, parts: int):
    """Backprop-input by products and scatter: per chunk, out_backprop (m, F) times the
    filter transposed gives every tap's contribution, and each tap's columns are added into
    the strided slice of the padded input gradient that the tap read from."""
    n, h, wd, c = shape
    kh, kw, _, f = w.shape
    oh, ow = out_hw
    dtype = np.result_type(w, dy)
    (pt, pb), (pl, pr) = pads
    dxp = np.zeros((n, h + pt + pb, wd + pl + pr, c), dtype)
    k = kh * kw * c
    # Single-threaded BLAS: one small product per tap (contiguous columns to add), but for
    # few input channels (_TAP_MIN_CHANNELS); multi-threaded BLAS: one product per chunk
    # (few BLAS calls, strided columns).
    by_tap = intra_op.blas_threads() == 1 and c >= _TAP_MIN_CHANNELS
    wt = np.ascontiguousarray(w.reshape(kh * kw, c, f).transpose(0, 2, 1) if by_tap
                              else w.reshape(k, f).T)

    if oh > 1 and _image_too_big(oh * ow, k, f, dy.itemsize):
        _col2im_rows(dxp, wt, dy, (kh, kw, c), g, by_tap, parts)
        return _cropped(dxp, shape, pads)
    nb = _chunk(n, oh * ow, k * dy.itemsize)
    rows = min(nb, n) * oh * ow
    buffer, _ = intra_op.per_thread(
        lambda: np.empty((kh * kw, rows, c) if by_tap else (rows, k), dtype))

    def work(n0, n1):
        m = (n1 - n0) * oh * ow
        d2 = dy[n0:n1].reshape(-1, f)
        cols = buffer()
        _tap_columns(d2, wt, cols, m, by_tap)
        _scatter_taps(cols, dxp[n0:n1], by_tap, (kh, kw), (oh, ow), g)

    intra_op.parallel_for(work, n, nb, _parts(parts, 2.0 * dy.size * k))
    return _cropped(dxp, shape, pads)


def _tap_columns(d2, wt, cols, m: int, by_tap: bool) -> None:
    """The first `m` rows of every tap's products of out_backprop rows `d2` (m, F) with the
    filter: by tap into `cols` (taps, rows, C) (`_tap_products`), else all at once into
    `cols` (rows, taps*C) with `wt` (F, taps*C)."""
    if by_tap:
        _tap_products(d2, wt, cols[:, :m])
    elif not _ng(d2, wt, cols[:m]):
        np.matmul(d2, wt, out=cols[:m])


def _scatter_taps(cols, target, by_tap: bool, khw, out_hw, g: _ConvGeometry) -> None:
    """`target` (N', Hp, Wp, C), a batch chunk of the padded input gradient, += every tap's
    products in `cols` (a thread's whole buffer of `_tap_columns`) at the strided slice the
    tap read from, tap by tap: in C (native.col2im, one pass per tap over the products
    rather than NumPy's over a strided view: 5x faster with few channels), else NumPy."""
    (kh, kw), (oh, ow) = khw, out_hw
    nb, c = target.shape[0], target.shape[3]
    strides = (cols.shape[1] * c, c) if by_tap else (c, cols.shape[1])
    if native.col2im(cols, target, khw, out_hw, (g.sh, g.sw), (g.dh, g.dw), *strides):
        return
    m = nb * oh * ow
    b = cols[:, :m] if by_tap else cols[:m].reshape(nb, oh, ow, kh * kw, c)
    hspan, wspan = (oh - 1) * g.sh + 1, (ow - 1) * g.sw + 1
    for i in range(kh):
        for j in range(kw):
            tap = b[i * kw + j] if by_tap else b[:, :, :, i * kw + j]
            target[:, i * g.dh:i * g.dh + hspan:g.sh, j * g.dw:j * g.dw + wspan:g.sw] \
                += tap.reshape(nb, oh, ow, c)


def _tap_products(d2, wt, out) -> None:
    """out[t] = d2 (m, F) @ wt[t] (F, C) for every filter tap t: the C extension's own GEMM
    where it beats BLAS at these sizes (`_ng`), else one batched np.matmul."""
    if not all(_ng(d2, wt[t], out[t]) for t in range(wt.shape[0])):
        np.matmul(d2[None], wt, out=out)


def _cropped(dxp, shape, pads):
    """The input gradient: padded `dxp` without its padding."""
    _, h, wd, _ = shape
    (pt, pb), (pl, pr) = pads
    if pt or pb or pl or pr:
        return np.ascontiguousarray(dxp[:, pt:pt + h, pl:pl + wd])
    return dxp


def _col2im_rows(dxp, wt, dy, khwc, g: _ConvGeometry, by_tap: bool, parts: int) -> None:
    """`_col2im_backprop_input` for large images: per (image, block of out_backprop
    rows), the block's product and its scatter into the padded input gradient `dxp`. The
    rows of `dxp` that neighbouring blocks add into overlap, so the blocks run in two
    passes, even blocks then odd ones: blocks of one pass never touch the same rows (a
    block is at least as tall as the window's extent)."""
    kh, kw, c = khwc
    n, oh, ow, f = dy.shape
    k = kh * kw * c
    extent = (kh - 1) * g.dh + 1
    rows = _row_blocks(oh, ow, k, dy.itemsize, least=-(-extent // g.sh))
    blocks = -(-oh // rows)
    buffer, _ = intra_op.per_thread(
        lambda: np.empty((kh * kw, rows * ow, c) if by_tap else (rows * ow, k), dxp.dtype))

    def block(b, r0):
        r1 = min(oh, r0 + rows)
        m = (r1 - r0) * ow
        d2 = dy[b, r0:r1].reshape(-1, f)
        cols = buffer()
        _tap_columns(d2, wt, cols, m, by_tap)
        _scatter_taps(cols, dxp[b:b + 1, r0 * g.sh:], by_tap, (kh, kw), (r1 - r0, ow), g)

    per_pass = -(-blocks // 2)
    for first in (0, 1):
        count = (blocks - first + 1) // 2  # blocks first, first + 2, ...

        def work(u0, u1, first=first, count=count):
            for u in range(u0, u1):
                b, q = u // count, u % count
                block(b, (first + 2 * q) * rows)

        if count:
            intra_op.parallel_for(work, n * count, 1,
                                  _parts(parts, 2.0 * n * per_pass * rows * ow * k * f))


def _groups(c_in: int, filter_depth: int) -> int:
    if filter_depth <= 0 or c_in % filter_depth:
        raise _invalid(f"input depth must be evenly divisible by filter depth: {c_in} vs "
                       f"{filter_depth}")
    return c_in // filter_depth


def _grouped(fn, groups, xs_axes, *arrays):
    """Applies `fn` per channel group: arrays[i] is split along xs_axes[i] (None: shared)."""
    if groups == 1:
        return fn(*arrays)
    outs = []
    for gi in range(groups):
        parts = []
        for a, axis in zip(arrays, xs_axes, strict=True):
            if axis is None:
                parts.append(a)
            else:
                size = a.shape[axis] // groups
                parts.append(np.take(a, range(gi * size, (gi + 1) * size), axis=axis))
        outs.append(fn(*parts))
    return np.concatenate(outs, axis=-1)


@kernel_factory("Conv2D", expensive=True)
@_checked
def _conv2d(node):
    geom = _ConvGeometry(node)
    nhwc = geom.data_format == "NHWC"

    def compute(ctx, x, w):
        if x.ndim != 4 or w.ndim != 4:
            raise _invalid("input and filter must be 4-dimensional")
        if (nhwc and x.dtype == w.dtype and x.dtype in _SMALL_DTYPES
                and x.shape[3] == w.shape[2]):
            out = _small_conv_forward(x, w, geom)
            if out is not None:
                return out
        xh = shared_nhwc(ctx, x, geom.data_format, "forward")
        groups = _groups(xh.shape[3], w.shape[2])
        if w.shape[3] % groups:
            raise _invalid(f"filter out depth {w.shape[3]} is not a multiple of the number of "
                           f"groups {groups}")
        parts = intra_op.workers(ctx)
        out = _grouped(lambda a, b: _conv_forward(a, b, geom, parts, ctx), groups, (3, 3),
                       _widen(xh), _widen(w))
        return _from_nhwc(_narrow(out, x.dtype), geom.data_format)

    return compute


def _bias_epilogue(bias, relu: bool):
    """In place on NHWC output rows: `+ bias`, then max(., 0) when `relu`: the operations
    of the BiasAdd and Relu kernels (kernels/cpu/nn_ops.py), so that a fused conv gives
    the unfused nodes' values bit for bit."""
    zero = np.zeros((), bias.dtype)

    def epilogue(o):
        if native.bias_relu(o, bias, relu):  # one pass in C, the same values
            return
        np.add(o, bias, out=o)
        if relu:
            np.maximum(o, zero, out=o)

    return epilogue


def _fused_ops(node) -> tuple[str, ...]:
    ops = tuple(op.decode() if isinstance(op, bytes) else op for op in node.attrs["fused_ops"])
    if ops not in (("BiasAdd",), ("BiasAdd", "Relu")) or node.attrs["num_args"] != 1:
        raise errors.UnimplementedError(
            None, None, f"_FusedConv2D on the CPU supports fused_ops [BiasAdd] and [BiasAdd, "
            f"Relu] with one argument, got {list(ops)} with {node.attrs['num_args']}")
    return ops


@kernel_factory("_FusedConv2D", expensive=True)
@_checked
def _fused_conv2d(node):
    """Conv2D, BiasAdd and Relu of the graph optimizer's fusion (fuse_conv_bias_relu): the
    bias and ReLU run on each chunk of the conv's output as the product writes it."""
    geom = _ConvGeometry(node)
    relu = _fused_ops(node) == ("BiasAdd", "Relu")

    def compute(ctx, x, w, bias):
        if x.ndim != 4 or w.ndim != 4:
            raise _invalid("input and filter must be 4-dimensional")
        if bias.ndim != 1 or bias.shape[0] != w.shape[3]:
            raise _invalid(f"Must provide as many biases as the last dimension of the input "
                           f"tensor: {list(bias.shape)} vs. {[w.shape[3]]}")
        xh = shared_nhwc(ctx, x, geom.data_format, "forward")
        epilogue = _bias_epilogue(bias, relu)
        if xh.shape[3] != w.shape[2] or _widen(x) is not x or x.dtype != w.dtype:
            # groups, or a low-precision type (the unfused nodes add in the narrow type)
            parts = intra_op.workers(ctx)
            out = _narrow(_grouped(lambda a, b: _conv_forward(a, b, geom, parts, ctx),
                                   _groups(xh.shape[3], w.shape[2]), (3, 3), _widen(xh),
                                   _widen(w)), x.dtype)
            epilogue(out.reshape(-1, out.shape[3]))
        else:
            small = _small_conv_forward(xh, w, geom) if xh is x else None  # as Conv2D's
            if small is not None:
                epilogue(small)
                return small
            out = _conv_forward(xh, w, geom, intra_op.workers(ctx), ctx, epilogue)
        return _from_nhwc(out, geom.data_format)

    return compute


@kernel_factory("Conv2DBackpropInput", expensive=True)
@_checked
def _conv2d_backprop_input(node):
    geom = _ConvGeometry(node)

    def compute(ctx, input_sizes, w, dy):
        sizes = _sizes(input_sizes, "input_sizes")
        if geom.data_format == "NCHW":
            sizes = [sizes[0], sizes[2], sizes[3], sizes[1]]
        dyh = shared_nhwc(ctx, dy, geom.data_format, "input", "dy")
        groups = _groups(sizes[3], w.shape[2])
        shape = sizes[:3] + [sizes[3] // groups]
        parts = intra_op.workers(ctx)
        out = _grouped(lambda ww, d: _conv_backprop_input(shape, ww, d, geom, parts, ctx), groups,
                       (3, 3), _widen(w), _widen(dyh))
        return _from_nhwc(_narrow(out, dy.dtype), geom.data_format)

    return compute


@kernel_factory("Conv2DBackpropFilter", expensive=True)
@_checked
def _conv2d_backprop_filter(node):
    geom = _ConvGeometry(node)

    def compute(ctx, x, filter_sizes, dy):
        kh, kw, ci, co = _sizes(filter_sizes, "filter_sizes")
        xh = shared_nhwc(ctx, x, geom.data_format, "filter")
        dyh = shared_nhwc(ctx, dy, geom.data_format, "filter", "dy")
        groups = _groups(xh.shape[3], ci)
        if dyh.shape[3] != co:
            raise _invalid(f"Computed out_backprop depth {dyh.shape[3]} does not match "
                           f"filter_sizes {co}")
        parts = intra_op.workers(ctx)
        out = _grouped(lambda a, d: _conv_backprop_filter(a, d, kh, kw, geom, parts, ctx), groups,
                       (3, 3), _widen(xh), _widen(dyh))
        return _narrow(out, dy.dtype)

    return compute


# The V2 backprops: V1's kernels, the sizes read off the input (filter) operand.


@kernel_factory("Conv2DBackpropInputV2", expensive=True)
def _conv2d_backprop_input_v2(node):
    by_sizes = _conv2d_backprop_input(node)
    return lambda ctx, x, w, dy: by_sizes(ctx, np.array(x.shape, np.int64), w, dy)


@kernel_factory("Conv2DBackpropFilterV2", expensive=True)
def _conv2d_backprop_filter_v2(node):
    by_sizes = _conv2d_backprop_filter(node)
    return lambda ctx, x, w, dy: by_sizes(ctx, x, np.array(w.shape, np.int64), dy)
