"""3x3 stride-1 convolution by Winograd's minimal filtering F(4x4, 3x3), for the Conv2D
kernels (kernels/cpu/conv_ops.py): the forward conv, the input gradient as the forward
conv of out_backprop with the flipped filter, and the filter gradient.

Each 4x4 block of outputs (a tile) reads a 6x6 block of the padded input; with the
transforms B (input, 6x6), G (filter, 6x3) and A (output, 6x4) of F(4, 3) on the points
0, 1, -1, 2, -2 and infinity (B is that of F(2x2, 5x5) on the same points,
kernels/cpu/_winograd5.py),

    Y = A^T [ (G g G^T) ∘ (B^T d B) ] A,

the 9 multiply-adds per output pixel and channel pair of a direct 3x3 conv become 2.25
(F(2x2, 3x3): 4): one matrix product (tiles, C) x (C, F) per position of the 6x6
transformed tile, 36 of them over a quarter of F(2x2, 3x3)'s tiles. The transformed input
and output tiles are also 2.25 values per pixel instead of 4: less memory traffic in the
transforms. The tile transforms run in C (`native.wino_transform` kinds 5 and 6, one pass
per tile; the NumPy functions below do the same operations in the same order: identical
bits, but for which NaN a NaN result is); the filter transform is computed in float64 and
rounded once. Error: A's coefficients up to 8 and G's sixths and twenty-fourths cost
float32 a few more units in the last place than F(2x2, 3x3) (tests compare with the direct
conv at the f32 tolerances of the other Winograd paths).

The schemes of kernels/cpu/_winograd.py: work units of a few tile rows (or whole images)
whose transforms and 36 products run in cache, or, when a unit would hold fewer than
`_UNIT_TILES` tiles, "wide": every tile of the batch transformed first, then the 36
products over the batch's tiles, then the output transform (taken while the batch's
transformed tiles fit in `_WIDE_BYTES`).

The filter gradient uses the same tiles: with X the sum over tiles of the 36 products
(B^T d B)^T (A e A^T) of the transformed input tiles and out_backprop's 4x4 tiles `e`
transformed by A (6x4; `native.wino_transform` kind 7), the gradient is G^T X G (in
chunked work units, one running (36, C, F) sum per group of units: intra_op.parallel_sum).
"""

from __future__ import annotations

import numpy as np

from tensorflux.kernels import intra_op
from tensorflux.kernels.cpu import _winograd, _winograd5, native

# Input and output channels, and output pixels per image, below which F(2x2, 3x3) (or
# im2col) stays: measured on the Table 1 nets' 3x3 layers at batch 8 (BENCHMARKS.md).
MIN_CHANNELS = 48
MIN_PIXELS = 784  # 28x28 (at 14x14 a quarter of the tiles is too few rows per product)
# ... or few channels (both within FEW_CHANNELS) and at least FEW_MIN_TILES tiles in the
# batch, whatever the image size: the small ResNets' 3x3 convs (16-64 channels at 32x32 to
# 8x8, batch 64: 2-2.5x less CPU time than im2col, 1.4-1.7x less than F(2x2, 3x3); at 64
# channels and batch 8 on 8x8, 32 tiles, the filter transform outweighs the products).
FEW_CHANNELS = (16, 64)
FEW_MIN_TILES = 128
_SPLIT_UNITS = 4  # work units per thread for a split filter gradient
_WIDE_BYTES = 96 << 20  # the batch's transformed tiles and products take at most this
_CHUNK_BYTES = 2 << 20  # transformed input + products per work unit (chunked scheme)
_UNIT_TILES = 48  # fewer tiles than this per unit: the wide scheme

_G = np.array([[1 / 4, 0, 0],
               [-1 / 6, -1 / 6, -1 / 6],
               [-1 / 6, 1 / 6, -1 / 6],
               [1 / 24, 1 / 12, 1 / 6],
               [1 / 24, -1 / 12, 1 / 6],
               [0, 0, 1]])


def applies(kh, kw, strides, dilations, c, f, out_hw, n, dtype) -> bool:
    """Whether a conv of this geometry goes through `conv3x3`: a 3x3 window at stride 1,
    enough channels and pixels (or few channels and enough tiles), and the batch's
    transformed tiles within `_WIDE_BYTES`."""
    if not (kh == kw == 3 and tuple(strides) == (1, 1) and tuple(dilations) == (1, 1)
            and np.dtype(dtype) in (np.float32, np.float64)):
        return False
    tiles = n * -(-out_hw[0] // 4) * -(-out_hw[1] // 4)
    few = (FEW_CHANNELS[0] <= min(c, f) and max(c, f) <= FEW_CHANNELS[1]
           and tiles >= FEW_MIN_TILES)
    if not few and (min(c, f) < MIN_CHANNELS or out_hw[0] * out_hw[1] < MIN_PIXELS):
        return False
    return 36 * tiles * (c + f) * np.dtype(dtype).itemsize <= _WIDE_BYTES


# G g G^T as one (36, 9) matrix on the filter's 9 taps: (G ⊗ G)[6p + q, 3i + j].
_GG = np.kron(_G, _G)


def _filter_transform(w, dtype):
    """G g G^T for every (C, F) pair: (36, C, F) of `dtype` from `w` (3, 3, C, F),
    computed in float64 (one product with the 36 x 9 matrix G ⊗ G: the two tensordots and
    copies this took cost a 64 -> 64 channel conv on 8x8 images as much as its products)."""
    c, f = w.shape[2:]
    u = _GG @ np.asarray(w, np.float64).reshape(9, c * f)
    return u.astype(dtype, copy=False).reshape(36, c, f)


def _a4(m):
    """A^T over six values (arrays): the four outputs, in _native.c's order."""
    s12, s34 = m[1] + m[2], m[3] + m[4]
    d12, d34 = m[1] - m[2], m[3] - m[4]
    return m[0] + s12 + s34, d12 + 2 * d34, s12 + 4 * s34, d12 + 8 * d34 + m[5]


def _input_transform(d, v, th, tw, origin=None):
    """v (36, nb, th, tw, C) = B^T d B of every 6x6 tile, four pixels apart, of padded `d`
    (nb, >= 4th+2, >= 4tw+2, C), or with `origin` (oy, ox) of unpadded `d` read as
    padded with zeros (tile (i, j) at row oy + 4i, column ox + 4j)."""
    if native.wino_transform(5, d, v, origin):  # one pass in C, the same operations
        return
    if origin is not None:
        d = _winograd.zero_window(d, origin, 4 * th + 2, 4 * tw + 2)
    r = _winograd5._b6([d[:, a:a + 4 * th:4] for a in range(6)])
    for p in range(6):
        out = _winograd5._b6([r[p][:, :, q:q + 4 * tw:4] for q in range(6)])
        for q in range(6):
            v[6 * p + q] = out[q]


def _output_transform(m, y):
    """y (nb, 4th, 4tw, F) = A^T m A of every tile's products `m` (36, nb, th, tw, F)."""
    if native.wino_transform(6, m, y):  # one pass in C, the same operations
        return
    cols = [_a4([m[6 * a + q] for a in range(6)]) for q in range(6)]
    for a in range(4):
        ys = _a4([cols[q][a] for q in range(6)])
        for q in range(4):
            y[:, a::4, q::4] = ys[q]


def forward(x, w, window, strides, dilations, pads, out, parts: int) -> bool:
    """Whether `out` (N, oh, ow, F) now holds the conv of unpadded NHWC `x` with `w` (a
    `window` (kh, kw) of C x F taps, any shape) at these strides, dilations and padding
    ((top, bottom), (left, right)): when it goes through F(4x4, 3x3) (`applies`) and every
    output is finite (else the caller convolves the direct way, where a non-finite value
    stays in its windows)."""
    n, oh, ow, f = out.shape
    if not (x.dtype == w.dtype == out.dtype and applies(*window, strides, dilations,
                                                        x.shape[3], f, (oh, ow), n, out.dtype)):
        return False
    w = w.reshape(3, 3, x.shape[3], f)
    return conv3x3(x, w, out, parts, (pads[0][0], pads[1][0])) is not None


def conv3x3(x, w, out, parts: int, pads=(0, 0)):
    """out (N, oh, ow, F) = the 3x3 stride-1 conv of NHWC `x` with `w` (3, 3, C, F) and
    `pads` (top, left) rows and columns of zeros before `x` (and as many after as the
    output size needs): no padded copy of `x`, the input transform reads around its edges
    as zeros. Returns `out`, or None when an output is not finite (each work unit sums its
    outputs while they are in cache)."""
    n, oh, ow, f = out.shape
    c = x.shape[3]
    th, tw = -(-oh // 4), -(-ow // 4)
    u = _filter_transform(w, out.dtype)
    row_bytes = 36 * tw * (c + f) * out.itemsize  # one tile row's buffers
    rows = max(1, min(th, _CHUNK_BYTES // row_bytes))
    images = max(1, min(n, _CHUNK_BYTES // (row_bytes * th))) if rows == th else 1
    if rows * images * tw >= _UNIT_TILES:
        return _winograd5.chunked36(x, u, out, parts, th, tw, 4, (rows, images),
                                    _input_transform, _output_transform, pads)
    xp = _winograd.zero_window(x, (-pads[0], -pads[1]), 4 * th + 2, 4 * tw + 2)
    out = _winograd5.wide36(xp, u, out, parts, th, tw, 4, _input_transform,
                            _output_transform)
    return out if np.isfinite(np.add.reduce(out, axis=None)) else None


def _split(parts: int, products: int) -> int:
    """The threads a conv of `products` tile-channel-filter triples (its 36 products'
    multiply-adds / 36) runs on: `parts`, or 1 below intra_op.MIN_FLOPS (as chunked36)."""
    return parts if 2.0 * 36 * products >= intra_op.MIN_FLOPS else 1


def _g4(x):
    """A over four values (arrays): the six transformed ones, in _native.c's order."""
    s02, s13 = x[0] + x[2], x[1] + x[3]
    t02, t13 = x[0] + 4 * x[2], 2 * x[1] + 8 * x[3]
    return [x[0], s02 + s13, s02 - s13, t02 + t13, t02 - t13, x[3]]


def _gradient_transform(e, out, th, tw):
    """out (36, nb, th, tw, F) = A e A^T of every 4x4 tile of out_backprop `e`
    (nb, 4th, 4tw, F): the transform that makes the filter gradient a sum of products."""
    if native.wino_transform(7, e, out):  # one pass in C, the same operations
        return
    r = _g4([e[:, a:4 * th:4] for a in range(4)])
    for p in range(6):
        cols = _g4([r[p][:, :, q:4 * tw:4] for q in range(4)])
        for q in range(6):
            out[6 * p + q] = cols[q]


def _filter_gradient(x):
    """G^T x G: the (3, 3, C, F) filter gradient from the summed products `x` (6, 6, C, F),
    in x's dtype."""
    g = _G.astype(x.dtype)
    with np.errstate(invalid="ignore", over="ignore"):  # (non-finite sums: the caller falls back)
        t = np.tensordot(g, x, axes=(0, 0))  # (3 i, 6 q, C, F)
        return np.ascontiguousarray(np.tensordot(g, t, axes=(0, 1)).swapaxes(0, 1))


def conv3x3_backprop_filter(x, dy, parts: int, pads=((0, 0), (0, 0))):
    """d(loss)/d(filter) (3, 3, C, F) of the 3x3 stride-1 conv of NHWC `x` with `pads`
    ((top, bottom), (left, right)) and out_backprop `dy` (N, oh, ow, F): G^T X G, X the sum
    over tiles of the 36 products (B^T d B)^T (A e A^T); the input transform reads `x`
    unpadded (zeros around its edges)."""
    n, oh, ow, f = dy.shape
    c = x.shape[3]
    th, tw = -(-oh // 4), -(-ow // 4)
    top, left = pads[0][0], pads[1][0]
    if (oh, ow) != (4 * th, 4 * tw):  # zero out_backprop where the padded tiles overhang
        dy = np.pad(dy, [(0, 0), (0, 4 * th - oh), (0, 4 * tw - ow), (0, 0)])
    dtype = np.result_type(x, dy)
    row_bytes = 36 * tw * (c + f) * dtype.itemsize
    rows = max(1, min(th, _CHUNK_BYTES // row_bytes))
    images = max(1, min(n, _CHUNK_BYTES // (row_bytes * th))) if rows == th else 1
    if rows == th:  # at least _MIN_TILES tiles per unit: each unit adds a (36, C, F) product
        images = min(n, max(images, -(-_winograd._MIN_TILES // (th * tw))))
    blocks = -(-th // rows)
    shapes = ((36, images, rows, tw, c), (36, images, rows, tw, f), (36, c, f))

    def work(u0, u1, acc):
        v, e, part = _winograd.unit_buffers(shapes, dtype)
        b0, b1, r0, r1 = _winograd._unit_span(u0, u1, images, n, th, rows, blocks)
        k, t = b1 - b0, r1 - r0
        v, e = v[:, :k, :t], e[:, :k, :t]
        _input_transform(x[b0:b1], v, t, tw, (4 * r0 - top, -left))
        _gradient_transform(dy[b0:b1, 4 * r0:4 * r1], e, t, tw)
        _winograd._products(v.reshape(36, -1, c).transpose(0, 2, 1), e.reshape(36, -1, f),
                            part, acc)

    units = -(-n // images) if images > 1 else n * blocks
    # (split, each group of units adds into an accumulator of its own, zeroed and then
    # added: over fewer than 4 units a thread that cost more than it saved, 0.55 -> 0.87 ms
    # at 8x8x64 and 0.93 -> 1.06 at 16x16x32, batch 64, two threads)
    split = _split(parts, n * th * tw * c * f) if units >= _SPLIT_UNITS * parts else 1
    x = intra_op.parallel_sum(work, units, 1, split, lambda: np.zeros((36, c, f), dtype))
    return _filter_gradient(x.reshape(6, 6, c, f))
