"""5x5 stride-1 convolution by Winograd's minimal filtering F(2x2, 5x5), for the Conv2D
kernels (kernels/cpu/conv_ops.py): the forward conv, and the input gradient as the forward
conv of out_backprop with the flipped filter.

Each 2x2 block of outputs (a tile) reads a 6x6 block of the padded input; with the
transforms B (input, 6x6), G (filter, 6x5) and A (output, 6x2) of F(2, 5) on the points
0, 1, -1, 2, -2 and infinity (B is that of F(4, 3) on the same points),

    Y = A^T [ (G g G^T) ∘ (B^T d B) ] A,

the 25 multiply-adds per output pixel and channel pair of a direct 5x5 conv become 9: one
matrix product (tiles, C) x (C, F) per position of the 6x6 transformed tile, 36 of them.
The tile transforms run in C (`native.wino_transform` kinds 3 and 4, one pass per tile;
the NumPy functions below do the same operations in the same order: identical bits, but
for which NaN a NaN result is); the filter transform is computed in float64 and rounded
once. Error: the transforms' integer
coefficients (up to 5) and G's sixths and twenty-fourths cost float32 a few more units in
the last place than F(2x2, 3x3) (tests compare with the direct conv at f32 tolerances).

Work is cut into units of whole images (several at a time) or of bands of tile rows of
one image, about `_UNIT_TILES` tiles each (fewer when the channels are many: at most
`_UNIT_BYTES` of transformed tiles and products): each unit's input transform, 36 products
(unit tiles, C) x (C, F) and output transform run while its buffers are in cache, the
units claimed by the intra-op threads (`chunked36`, shared with F(4x4, 3x3)). Units of
about 200 tiles keep the products near the GEMM's peak (the 36 transformed filters are
read once per unit) while the unit's 5-8 MB stay in the L3 cache; the "wide" scheme
(`wide36`: every tile of the batch transformed first, then the 36 products over the whole
batch, then the output transform), which this module took before, streams the batch's
transformed tiles through memory three times: 2x slower on every shape measured (a DCGAN's
14x14x64 -> 128 at batch 64: 15 -> 7.5 ms; AlexNet's 27x27x64 -> 192 at batch 8: 9 ->
5.5 ms; both quiet, two threads). The results are the same bits either way (the same
operations on the same values per tile).
"""

from __future__ import annotations

import numpy as np

from tensorflux.kernels import intra_op
from tensorflux.kernels.cpu import _winograd, native

# Input and output channels, and output pixels per image: below them the transforms cost
# what the products save (measured, batch 8: GoogLeNet's 5x5 layers, 28x28 with 32 -> 96
# channels and 14x14 with 32-48 -> 64-128, no faster; 7x7 slower).
MIN_CHANNELS = 64
MIN_PIXELS = 100
_WIDE_BYTES = 96 << 20  # the batch's transformed tiles and products take at most this
_UNIT_TILES = 196  # tiles per work unit (`_unit`) ...
_UNIT_BYTES = 8 << 20  # ... whose transformed tiles and products take at most this

_G = np.array([[1 / 4, 0, 0, 0, 0],
               [-1 / 6, -1 / 6, -1 / 6, -1 / 6, -1 / 6],
               [-1 / 6, 1 / 6, -1 / 6, 1 / 6, -1 / 6],
               [1 / 24, 1 / 12, 1 / 6, 1 / 3, 2 / 3],
               [1 / 24, -1 / 12, 1 / 6, -1 / 3, 2 / 3],
               [0, 0, 0, 0, 1]])


def applies(kh, kw, strides, dilations, c, f, out_hw, n, dtype) -> bool:
    """Whether a conv of this geometry goes through `conv5x5`: a 5x5 window at stride 1,
    enough channels and pixels, and the batch's transformed tiles within `_WIDE_BYTES`."""
    if not (kh == kw == 5 and tuple(strides) == (1, 1) and tuple(dilations) == (1, 1)
            and min(c, f) >= MIN_CHANNELS and out_hw[0] * out_hw[1] >= MIN_PIXELS
            and np.dtype(dtype) in (np.float32, np.float64)):
        return False
    tiles = n * -(-out_hw[0] // 2) * -(-out_hw[1] // 2)
    return 36 * tiles * (c + f) * np.dtype(dtype).itemsize <= _WIDE_BYTES


def _filter_transform(w, dtype):
    """G g G^T for every (C, F) pair: (36, C, F) of `dtype` from `w` (5, 5, C, F),
    computed in float64."""
    g = np.tensordot(_G, np.asarray(w, np.float64), axes=(1, 0))  # (6, 5, C, F)
    u = np.tensordot(_G, g, axes=(1, 1))  # (6 q, 6 p, C, F)
    return np.ascontiguousarray(u.swapaxes(0, 1), dtype=dtype).reshape(36, *w.shape[2:])


def _b6(x):
    """B^T over six values (arrays): the six transformed ones, in _native.c's order."""
    s1, u1 = x[3] + x[4], x[1] + x[2]
    s2, u2 = x[4] - x[3], x[1] - x[2]
    s3, u3 = x[4] - x[2], x[3] - x[1]
    return [4 * x[0] - 5 * x[2] + x[4], s1 - 4 * u1, s2 + 4 * u2, s3 + 2 * u3, s3 - 2 * u3,
            4 * x[1] - 5 * x[3] + x[5]]


def _a6(m):
    """A^T over six values (arrays): the two outputs, in _native.c's order."""
    s12, s34 = m[1] + m[2], m[3] + m[4]
    d12, d34 = m[1] - m[2], m[3] - m[4]
    return m[0] + s12 + s34, d12 + 2 * d34 + m[5]


def _input_transform(d, v, th, tw, origin=None):
    """v (36, nb, th, tw, C) = B^T d B of every 6x6 tile of padded `d`
    (nb, >= 2th+4, >= 2tw+4, C), or with `origin` (oy, ox) of unpadded `d` read as padded
    with zeros (tile (i, j) at row oy + 2i, column ox + 2j)."""
    if native.wino_transform(3, d, v, origin):  # one pass in C, the same operations
        return
    if origin is not None:
        d = _winograd.zero_window(d, origin, 2 * th + 4, 2 * tw + 4)
    r = _b6([d[:, a:a + 2 * th:2] for a in range(6)])
    for p in range(6):
        out = _b6([r[p][:, :, q:q + 2 * tw:2] for q in range(6)])
        for q in range(6):
            v[6 * p + q] = out[q]


def _output_transform(m, y):
    """y (nb, 2th, 2tw, F) = A^T m A of every tile's products `m` (36, nb, th, tw, F)."""
    if native.wino_transform(4, m, y):  # one pass in C, the same operations
        return
    cols = [_a6([m[6 * a + q] for a in range(6)]) for q in range(6)]
    for a in range(2):
        y0, y1 = _a6([cols[q][a] for q in range(6)])
        y[:, a::2, 0::2] = y0
        y[:, a::2, 1::2] = y1


def conv5x5(xp, w, out, parts: int):
    """out (N, oh, ow, F) = the VALID 5x5 stride-1 conv of padded NHWC `xp` with `w`
    (5, 5, C, F), oh = xp's height - 4 (and the same for the width). Returns `out`."""
    oh, ow = out.shape[1:3]
    th, tw = -(-oh // 2), -(-ow // 2)
    hp, wp = 2 * th + 4, 2 * tw + 4
    if xp.shape[1] < hp or xp.shape[2] < wp:  # an odd output size: one more row/column
        xp = np.pad(xp, [(0, 0), (0, hp - xp.shape[1]), (0, wp - xp.shape[2]), (0, 0)])
    u = _filter_transform(w, out.dtype)
    unit = _unit(out.shape[0], th, tw, xp.shape[3] + out.shape[3], out.itemsize, parts)
    return chunked36(xp, u, out, parts, th, tw, 2, unit, _input_transform, _output_transform)


def _unit(n: int, th: int, tw: int, channels: int, itemsize: int, parts: int):
    """(tile rows, images) of a work unit: about `_UNIT_TILES` tiles, at most `_UNIT_BYTES`
    of transformed tiles and products (36 * `channels` values a tile), and whole images
    while one fits (else bands of equal height), but at least two units per thread where
    the batch allows."""
    tiles = max(1, min(_UNIT_TILES, _UNIT_BYTES // (36 * channels * itemsize)))
    if th * tw > tiles:
        bands = -(-th // max(1, tiles // tw))
        return -(-th // bands), 1
    return th, max(1, min(tiles // (th * tw), -(-n // (2 * parts))))


# (kept here under its old name: tests and callers of the 5x5 path)
_unit_buffers = _winograd.unit_buffers


def chunked36(xp, u, out, parts: int, th: int, tw: int, tile: int, unit, input_transform,
              output_transform, pads=None):
    """A Winograd conv over 6x6 input tiles (36 positions) of `tile` x `tile` outputs each,
    in work units of `unit` = (rows, images): `rows` tile rows of one image, or (rows ==
    `th`) `images` whole images. Each unit's input transform, 36 products and output
    transform run while its buffers are in cache. Returns `out`; with `pads` (top, left),
    `xp` is the unpadded input (read as padded by the transform) and the result None when
    any output is not finite (each unit sums its outputs while they are in cache)."""
    n, oh, ow, f = out.shape
    c = xp.shape[3]
    rows, images = unit
    blocks = -(-th // rows)
    shapes = ((36, images, rows, tw, c), (36, images * rows * tw, f),
              (images, tile * rows, tile * tw, f))

    def work(u0, u1):
        v, m, ybuf = _winograd.unit_buffers(shapes, out.dtype)
        b0, b1, r0, r1 = _winograd._unit_span(u0, u1, images, n, th, rows, blocks)
        k, t = b1 - b0, r1 - r0
        v = v[:, :k, :t]
        m = m[:, :k * t * tw]
        if pads is None:
            input_transform(xp[b0:b1, tile * r0:tile * r1 + 6 - tile], v, t, tw)
        else:
            input_transform(xp[b0:b1], v, t, tw, (tile * r0 - pads[0], -pads[1]))
        _winograd._products(v.reshape(36, -1, c), u, m)
        rows_out = min(oh, tile * r1) - tile * r0
        direct = rows_out == tile * t and ow == tile * tw
        y = out[b0:b1, tile * r0:tile * r1] if direct else ybuf[:k, :tile * t]
        output_transform(m.reshape(36, k, t, tw, f), y)
        if sums is not None:
            sums[u0] = np.add.reduce(y, axis=None)  # (units of one: grain 1)
        if not direct:
            out[b0:b1, tile * r0:tile * r0 + rows_out] = y[:, :rows_out, :ow]

    units = -(-n // images) if images > 1 else n * blocks
    sums = None if pads is None else np.zeros(units, out.dtype)
    flops = 2.0 * 36 * n * th * tw * c * f
    intra_op.parallel_for(work, units, 1, parts if flops >= intra_op.MIN_FLOPS else 1)
    return out if sums is None or np.isfinite(np.add.reduce(sums)) else None


def wide36(xp, u, out, parts: int, th: int, tw: int, tile: int, input_transform,
           output_transform):
    """A Winograd conv over 6x6 input tiles (36 positions; F(2x2, 5x5) here, F(4x4, 3x3) in
    _winograd4.py) of `tile` x `tile` outputs each: every tile of the batch transformed
    first (`input_transform`), then the 36 products over the whole batch's tiles split by
    position and blocks of rows, then `output_transform`. Returns `out`."""
    n, oh, ow, f = out.shape
    c = xp.shape[3]
    hp, wp = tile * th + 6 - tile, tile * tw + 6 - tile
    tiles = n * th * tw
    v = _winograd.position_buffer((36, n, th, tw, c), out.dtype)
    m = _winograd.position_buffer((36, tiles, f), out.dtype)
    intra_op.parallel_for(
        lambda b0, b1: input_transform(xp[b0:b1, :hp, :wp], v[:, b0:b1], th, tw), n, 1,
        parts if 36 * tiles * c >= intra_op.MIN_ELEMENTS else 1)
    v2 = v.reshape(36, tiles, c)

    def product(p, r0, r1):
        if not native.ngemm_favours(r1 - r0, f, c) or \
                native.ngemm(v2[p, r0:r1], u[p], m[p, r0:r1]) is None:
            np.matmul(v2[p, r0:r1], u[p], out=m[p, r0:r1])

    _winograd._per_position(product, tiles, 2.0 * 36 * tiles * c * f, parts, positions=36)
    m5 = m.reshape(36, n, th, tw, f)
    direct = (oh, ow) == (tile * th, tile * tw)
    ybuf, _ = intra_op.per_thread(lambda: np.empty((1, tile * th, tile * tw, f), out.dtype))

    def output(b0, b1):
        for b in range(b0, b1):
            y = out[b:b + 1] if direct else ybuf()
            output_transform(m5[:, b:b + 1], y)
            if not direct:
                out[b:b + 1] = y[:, :oh, :ow]

    intra_op.parallel_for(output, n, 1, parts if 36 * tiles * f >= intra_op.MIN_ELEMENTS
                          else 1)
    return out
