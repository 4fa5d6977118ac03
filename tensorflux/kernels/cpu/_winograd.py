"""3x3 stride-1 convolution by Winograd's minimal filtering F(2x2, 3x3), for the Conv2D
kernels (kernels/cpu/conv_ops.py).

Each 2x2 block of outputs (a tile) reads a 4x4 block of the padded input. With the
transforms B (input), G (filter) and A (output) of F(2, 3),

    Y = A^T [ (G g G^T) ∘ (B^T d B) ] A,

the 9 multiply-adds per output pixel and channel pair of a direct 3x3 conv become 4: one
matrix product per position (p, q) of the 4x4 transformed tile, (tiles, C) x (C, F), over
16 positions. The transforms are adds and subtracts of strided views (the filter's also
halves, exact in binary floating point). Error: a few units in the last place times the
magnitudes involved, well inside float32's conv tolerances; float16/bfloat16 data is
computed in float32 by the caller.

The filter gradient uses the same tiles: per position, the transformed input tiles
(tiles, C) transposed times the out_backprop tiles transformed by A (tiles, F), summed
over tiles, then G^T X G back to 3x3 (`conv3x3_backprop_filter`).

Work is cut into units of tile rows or whole images (one transformed-input buffer, one
product buffer and one output-tile buffer per thread, about `_CHUNK_BYTES` together) that
the intra-op threads claim, as the im2col path does. When such a unit would hold fewer than
`_WIDE_TILES` tiles (many channels on a small image: AlexNet's, Overfeat's and VGG's later
layers), each of the 16 products would be a thin (tiles, C) x (C, F) that rereads the whole
transformed filter for a few rows, far below BLAS's peak; those convolutions go "wide"
instead: every tile of the batch is transformed first (in parallel over images), then the
16 products (tiles of the whole batch, C) x (C, F) are split over the threads by position
(and blocks of rows), then the output transform runs over images. The forward conv does
the same operations on the same values either way (bit-identical results); the filter
gradient sums over all tiles in one product per position instead of per unit. The wide
scheme holds the whole batch's transformed tiles (at most `_WIDE_BYTES`). Measured (CPU
time, batch 8): 12x12 outputs with 1024 channels 327 -> 199 ms, 14x14x512 88 -> 52 ms,
28x28x256 61 -> 50 ms.
"""

from __future__ import annotations

import threading

import numpy as np

from tensorflux.kernels import intra_op
from tensorflux.kernels.cpu import native

# Below this many input or output channels the products are too narrow for the 2.25x
# fewer flops to pay for the transforms (measured: C = F = 32 is about even).
MIN_CHANNELS = 48
MIN_PIXELS = 100  # output pixels per image (10x10; at 7x7 im2col is about as fast)
_MIN_TILES = 256  # tiles per work unit of the filter gradient
_CHUNK_BYTES = 2 << 20  # transformed input + products per work unit
_WIDE_TILES = 128  # a unit of fewer tiles than this makes the conv go wide ...
_WIDE_BYTES = 96 << 20  # ... when the batch's transformed tiles take at most this


def position_buffer(shape, dtype, buffer=None, offset: int = 0):
    """An uninitialized array of `shape` (positions first: 16 or 36 of them) whose
    positions lie an odd number of 64-byte cache lines apart, in flat `buffer` (of `dtype`,
    from element `offset`, `position_elements(shape, dtype)` long) or a new one. The
    transforms write (and read) one tile's values at every position in turn: positions a
    multiple of 4 KiB apart (a unit of 128 tiles of 16 channels is 8 KiB a position) land
    in one L1 set and alias in the store buffer, 4-5x slower (the F(4x4, 3x3) input
    transform of 32x32x16 images: 96 -> 18 us per 4 images)."""
    dtype = np.dtype(dtype)
    if buffer is None:
        buffer = np.empty(position_elements(shape, dtype), dtype)
    strides = [_position_step(shape, dtype) * dtype.itemsize]
    inner = dtype.itemsize
    for k in range(len(shape) - 1, 0, -1):
        strides.insert(1, inner)
        inner *= shape[k]
    return np.ndarray(tuple(shape), dtype, buffer, offset * dtype.itemsize, tuple(strides))


def _position_step(shape, dtype) -> int:
    """Elements between the positions of a `position_buffer`."""
    size = dtype.itemsize
    for d in shape[1:]:
        size *= d
    return (-(-size // 64) | 1) * 64 // dtype.itemsize


def position_elements(shape, dtype) -> int:
    """Elements a `position_buffer` of `shape` takes."""
    return shape[0] * _position_step(shape, np.dtype(dtype))


# Each thread's unit buffers, kept from call to call (a few MB a thread: a work unit's
# transformed tiles, products and output block): buffers made anew per call are fresh
# pages the kernel faults in at
# every call once other kernels' allocations come between (a 14x14x64 -> 128 5x5 conv in a
# DCGAN step: ~1,000 page faults a call, 2-4 ms). Safe because a work unit runs start to
# end on one thread and calls nothing that takes the buffers again.
_SCRATCH = threading.local()
_CARVED = 32  # sets of views kept per thread and dtype (one per unit shape of a conv)


def unit_buffers(shapes, dtype):
    """Arrays of `shapes` (of `dtype`; `position_buffer`s: positions first)
    carved from the calling thread's scratch buffer, grown as needed; valid until the
    thread's next call."""
    dtype = np.dtype(dtype)
    cache = getattr(_SCRATCH, "buffers", None)
    if cache is None:
        cache = _SCRATCH.buffers = {}
    buf, carved = cache.get(dtype, (None, {}))
    views = carved.get(shapes)  # (the views of an earlier call with these shapes)
    if views is not None:
        return views
    sizes = [position_elements(s, dtype) for s in shapes]
    if buf is None or buf.size < sum(sizes):
        buf, carved = np.empty(sum(sizes), dtype), {}
    if len(carved) >= _CARVED:
        carved.clear()
    bounds = np.cumsum([0] + sizes)
    views = carved[shapes] = [position_buffer(shape, dtype, buf, int(lo))
                              for lo, shape in zip(bounds[:-1], shapes, strict=True)]
    cache[dtype] = (buf, carved)
    return views


def applies(kh, kw, strides, dilations, c, f, out_hw, dtype) -> bool:
    """Whether a conv of this geometry goes through `conv3x3`: a 3x3 window at stride 1,
    enough channels, and enough tiles per image for the 16 products to run near BLAS's
    peak (at 7x7 outputs im2col measured faster)."""
    return (kh == kw == 3 and tuple(strides) == (1, 1) and tuple(dilations) == (1, 1)
            and min(c, f) >= MIN_CHANNELS and out_hw[0] * out_hw[1] >= MIN_PIXELS
            and np.dtype(dtype) in (np.float32, np.float64))


def _filter_transform(w):
    """G g G^T for every (C, F) pair: (16, C, F) from `w` (3, 3, C, F)."""
    def rows(g):  # along axis 0: (3, ...) -> (4, ...)
        return np.stack([g[0], (g[0] + g[1] + g[2]) * 0.5, (g[0] - g[1] + g[2]) * 0.5, g[2]])
    u = rows(rows(w).swapaxes(0, 1)).swapaxes(0, 1)  # (4, 4, C, F)
    return np.ascontiguousarray(u).reshape(16, w.shape[2], w.shape[3])


def _input_transform(d, v, th, tw):
    """v (16, nb, th, tw, C) = B^T d B of every 4x4 tile of padded `d` (nb, 2th+2, 2tw+2, C)."""
    if native.wino_transform(0, d, v):  # one pass in C, the same operations
        return
    rows = [d[:, a:a + 2 * th:2] for a in range(4)]
    r = [rows[0] - rows[2], rows[1] + rows[2], rows[2] - rows[1], rows[1] - rows[3]]
    for p in range(4):
        cols = [r[p][:, :, b:b + 2 * tw:2] for b in range(4)]
        np.subtract(cols[0], cols[2], out=v[4 * p])
        np.add(cols[1], cols[2], out=v[4 * p + 1])
        np.subtract(cols[2], cols[1], out=v[4 * p + 2])
        np.subtract(cols[1], cols[3], out=v[4 * p + 3])


def _output_transform(m, y, tmp):
    """y (nb, 2th, 2tw, F) = A^T m A of every tile's products `m` (16, nb, th, tw, F);
    `tmp` (2, 4, nb, th, tw, F) scratch."""
    if native.wino_transform(1, m, y):  # one pass in C, the same operations
        return
    for q in range(4):
        s0, s1 = tmp[0, q], tmp[1, q]
        np.add(m[q], m[4 + q], out=s0)
        np.subtract(m[4 + q], m[8 + q], out=s1)
        s0 += m[8 + q]
        s1 -= m[12 + q]
    for a in range(2):
        s = tmp[a]
        y0, y1 = y[:, a::2, 0::2], y[:, a::2, 1::2]
        np.add(s[0], s[1], out=y0)
        y0 += s[2]
        np.subtract(s[1], s[2], out=y1)
        y1 -= s[3]


def zero_window(d, origin, height: int, width: int):
    """d[:, oy:oy + height, ox:ox + width] (origin (oy, ox), either may be negative) with
    zeros where the window leaves `d`: a new array (the NumPy transforms' view of an
    unpadded input that the C ones read in place)."""
    oy, ox = origin
    out = np.zeros((d.shape[0], height, width) + d.shape[3:], d.dtype)
    y0, y1 = max(oy, 0), min(oy + height, d.shape[1])
    x0, x1 = max(ox, 0), min(ox + width, d.shape[2])
    if y1 > y0 and x1 > x0:
        out[:, y0 - oy:y1 - oy, x0 - ox:x1 - ox] = d[:, y0:y1, x0:x1]
    return out


def _unit_span(u0, u1, images, n, th, rows, blocks):
    """The images [b0, b1) and tile rows [r0, r1) of work units [u0, u1): `images` whole
    images a unit, or (one image) bands of `rows` tile rows, `blocks` bands an image."""
    if images > 1:
        return u0 * images, min(n, u1 * images), 0, th
    b0, r0 = u0 // blocks, (u0 % blocks) * rows
    return b0, b0 + 1, r0, min(th, r0 + rows)


def conv3x3(xp, w, out, parts: int):
    """out (N, oh, ow, F) = the VALID 3x3 stride-1 conv of padded NHWC `xp` with `w`
    (3, 3, C, F), oh = xp's height - 2 (and the same for the width). Returns `out`.

    Work units are blocks of tile rows of one image, or whole images several at a time,
    so that one unit's transformed input and products stay about `_CHUNK_BYTES`."""
    n, oh, ow, f = out.shape
    c = xp.shape[3]
    th, tw = -(-oh // 2), -(-ow // 2)
    hp, wp = 2 * th + 2, 2 * tw + 2
    if xp.shape[1] < hp or xp.shape[2] < wp:  # an odd output size: one more row/column
        xp = np.pad(xp, [(0, 0), (0, hp - xp.shape[1]), (0, wp - xp.shape[2]), (0, 0)])
    u = _filter_transform(w.astype(out.dtype, copy=False))
    row_bytes = 16 * tw * (c + f) * out.itemsize  # one tile row's buffers
    rows = max(1, min(th, _CHUNK_BYTES // row_bytes))
    images = max(1, min(n, _CHUNK_BYTES // (row_bytes * th))) if rows == th else 1
    if _wide(n, th, tw, c, f, rows * images, out.itemsize):
        return _conv3x3_wide(xp, u, out, parts)
    blocks = -(-th // rows)
    shapes = ((16, images, rows, tw, c), (16, images * rows * tw, f),
              (2, 4, images, rows, tw, f), (images, 2 * rows, 2 * tw, f))

    def work(u0, u1):
        v, m, tmp, ybuf = unit_buffers(shapes, out.dtype)
        b0, b1, r0, r1 = _unit_span(u0, u1, images, n, th, rows, blocks)
        k, t = b1 - b0, r1 - r0
        v, tmp = v[:, :k, :t], tmp[:, :, :k, :t]
        m = m[:, :k * t * tw]
        _input_transform(xp[b0:b1, 2 * r0:2 * r1 + 2], v, t, tw)
        _products(v.reshape(16, -1, c), u, m)
        rows_out = min(oh, 2 * r1) - 2 * r0
        direct = rows_out == 2 * t and ow == 2 * tw
        y = out[b0:b1, 2 * r0:2 * r1] if direct else ybuf[:k, :2 * t]
        _output_transform(m.reshape(16, k, t, tw, f), y, tmp)
        if not direct:
            out[b0:b1, 2 * r0:2 * r0 + rows_out] = y[:, :rows_out, :ow]

    units = -(-n // images) if images > 1 else n * blocks
    flops = 2.0 * 16 * n * th * tw * c * f
    intra_op.parallel_for(work, units, 1, parts if flops >= intra_op.MIN_FLOPS else 1)
    return out


def _products(a, b, out, acc=None) -> None:
    """Per position p: out[p] = a[p] @ b[p], or with `acc`, acc[p] += a[p] @ b[p] (`out`
    then a scratch buffer): the C extension's own GEMM where it beats BLAS at these sizes
    (native.ngemm_batch: one call for every position), else one batched np.matmul."""
    m, k, n = a.shape[1], a.shape[2], b.shape[2]
    dest = out if acc is None else acc
    if native.ngemm_favours(m, n, k, a.strides[1] == a.itemsize) and (
            native.ngemm_batch(a, b, dest, acc is not None) or all(
                native.ngemm(a[p], b[p], dest[p], acc is not None) is not None
                for p in range(a.shape[0]))):
        return
    np.matmul(a, b, out=out)
    if acc is not None:
        acc += out


def _wide(n, th, tw, c, f, unit_rows, itemsize) -> bool:
    """Whether a conv whose chunked units hold `unit_rows` tile rows goes wide."""
    return (unit_rows * tw < _WIDE_TILES and n * th * tw > unit_rows * tw
            and 16 * n * th * tw * (c + f) * itemsize <= _WIDE_BYTES)


def _over_images(fn, n: int, work: float, parts: int) -> None:
    """`fn(b0, b1)` over the batch's images, split between threads when `work` elements."""
    intra_op.parallel_for(fn, n, 1, parts if work >= intra_op.MIN_ELEMENTS else 1)


def _per_position(product, tiles: int, flops: float, parts: int, positions: int = 16) -> None:
    """`product(p, r0, r1)` for the 16 positions (36 for F(2x2, 5x5)) and blocks of rows
    [r0, r1) of each (rows of a block: at least 64, fewer than about interrupt.CHUNK_FLOPS
    per block), claimed by the intra-op threads."""
    rows = intra_op.bounded_grain(tiles, tiles, flops / positions, floor=64)
    blocks = -(-tiles // rows)

    def work(u0, u1):
        for k in range(u0, u1):
            p, b = divmod(k, blocks)
            product(p, b * rows, min(tiles, (b + 1) * rows))

    intra_op.parallel_for(work, positions * blocks, 1,
                          parts if flops >= intra_op.MIN_FLOPS else 1)


def _conv3x3_wide(xp, u, out, parts: int):
    """`conv3x3` for small images with many channels: all tiles transformed, then the 16
    products over the whole batch, then the output transform (module docstring)."""
    n, oh, ow, f = out.shape
    c = xp.shape[3]
    th, tw = -(-oh // 2), -(-ow // 2)
    tiles = n * th * tw
    v = position_buffer((16, n, th, tw, c), out.dtype)
    m = position_buffer((16, tiles, f), out.dtype)
    _over_images(lambda b0, b1: _input_transform(xp[b0:b1, :2 * th + 2], v[:, b0:b1], th, tw),
                 n, 16.0 * tiles * c, parts)
    v2 = v.reshape(16, tiles, c)

    def product(p, r0, r1):
        if not native.ngemm_favours(r1 - r0, f, c) or \
                native.ngemm(v2[p, r0:r1], u[p], m[p, r0:r1]) is None:
            np.matmul(v2[p, r0:r1], u[p], out=m[p, r0:r1])

    _per_position(product, tiles, 2.0 * 16 * tiles * c * f, parts)
    m5 = m.reshape(16, n, th, tw, f)
    direct = (oh, ow) == (2 * th, 2 * tw)
    state, _ = intra_op.per_thread(lambda: (np.empty((2, 4, 1, th, tw, f), out.dtype),
                                            np.empty((1, 2 * th, 2 * tw, f), out.dtype)))

    def output(b0, b1):
        tmp, ybuf = state()
        for b in range(b0, b1):
            y = out[b:b + 1] if direct else ybuf
            _output_transform(m5[:, b:b + 1], y, tmp)
            if not direct:
                out[b:b + 1] = y[:, :oh, :ow]

    _over_images(output, n, 16.0 * tiles * f, parts)
    return out


def _gradient_transform(e, out, th, tw):
    """out (16, nb, th, tw, F) = A e A^T of every 2x2 tile of out_backprop `e`
    (nb, 2th, 2tw, F), A = [[1, 0], [1, 1], [1, -1], [0, -1]]: the transform that makes
    the filter gradient a sum of products."""
    if native.wino_transform(2, e, out):  # one pass in C, the same operations
        return
    e0, e1 = e[:, 0::2], e[:, 1::2]
    r = [e0, e0 + e1, e0 - e1, -e1]
    for p in range(4):
        c0, c1 = r[p][:, :, 0::2], r[p][:, :, 1::2]
        np.copyto(out[4 * p], c0)
        np.add(c0, c1, out=out[4 * p + 1])
        np.subtract(c0, c1, out=out[4 * p + 2])
        np.negative(c1, out=out[4 * p + 3])


def conv3x3_backprop_filter(xp, dy, parts: int):
    """d(loss)/d(filter) (3, 3, C, F) of the VALID 3x3 stride-1 conv of padded NHWC `xp`
    with out_backprop `dy` (N, oh, ow, F): with X the sum over tiles of the 16 products
    (B^T d B)^T (A dy A^T), the gradient is G^T X G."""
    n, oh, ow, f = dy.shape
    c = xp.shape[3]
    th, tw = -(-oh // 2), -(-ow // 2)
    hp, wp = 2 * th + 2, 2 * tw + 2
    if xp.shape[1] < hp or xp.shape[2] < wp:
        xp = np.pad(xp, [(0, 0), (0, hp - xp.shape[1]), (0, wp - xp.shape[2]), (0, 0)])
    if (oh, ow) != (2 * th, 2 * tw):  # zero out_backprop where the padded tiles overhang
        dy = np.pad(dy, [(0, 0), (0, 2 * th - oh), (0, 2 * tw - ow), (0, 0)])
    dtype = np.result_type(xp, dy)
    row_bytes = 16 * tw * (c + f) * dtype.itemsize
    rows = max(1, min(th, _CHUNK_BYTES // row_bytes))
    images = max(1, min(n, _CHUNK_BYTES // (row_bytes * th))) if rows == th else 1
    if _wide(n, th, tw, c, f, rows * images, dtype.itemsize):
        return _backprop_filter_wide(xp, dy, parts)
    if rows == th:  # at least _MIN_TILES tiles per unit: each unit adds a (16, C, F) product
        images = min(n, max(images, -(-_MIN_TILES // (th * tw))))
    blocks = -(-th // rows)
    shapes = ((16, images, rows, tw, c), (16, images, rows, tw, f), (16, c, f))

    def work(u0, u1, acc):  # acc: the sum of the unit's group (intra_op.parallel_sum)
        v, e, part = unit_buffers(shapes, dtype)
        b0, b1, r0, r1 = _unit_span(u0, u1, images, n, th, rows, blocks)
        k, t = b1 - b0, r1 - r0
        v, e = v[:, :k, :t], e[:, :k, :t]
        _input_transform(xp[b0:b1, 2 * r0:2 * r1 + 2], v, t, tw)
        _gradient_transform(dy[b0:b1, 2 * r0:2 * r1], e, t, tw)
        _products(v.reshape(16, -1, c).transpose(0, 2, 1), e.reshape(16, -1, f), part, acc)

    units = -(-n // images) if images > 1 else n * blocks
    flops = 2.0 * 16 * n * th * tw * c * f
    x = intra_op.parallel_sum(work, units, 1, parts if flops >= intra_op.MIN_FLOPS else 1,
                              lambda: np.zeros((16, c, f), dtype))
    return _filter_gradient(x.reshape(4, 4, c, f))


def _backprop_filter_wide(xp, dy, parts: int):
    """`conv3x3_backprop_filter` for small images with many channels: every tile's
    transforms first, then per position one product over the batch's tiles (module
    docstring). `xp` and `dy` already cover whole tiles."""
    n, oh, ow, f = dy.shape
    c = xp.shape[3]
    th, tw = oh // 2, ow // 2
    tiles = n * th * tw
    dtype = np.result_type(xp, dy)
    v = position_buffer((16, n, th, tw, c), dtype)
    e = position_buffer((16, n, th, tw, f), dtype)

    def transforms(b0, b1):
        _input_transform(xp[b0:b1, :2 * th + 2], v[:, b0:b1], th, tw)
        _gradient_transform(dy[b0:b1], e[:, b0:b1], th, tw)

    _over_images(transforms, n, 16.0 * tiles * (c + f), parts)
    v2, e2 = v.reshape(16, tiles, c), e.reshape(16, tiles, f)
    x = np.empty((16, c, f), dtype)
    # Blocks of rows of x (input channels); each product sums over all tiles.
    def product(p, c0, c1):
        if not native.ngemm_favours(c1 - c0, f, tiles, True) or \
                native.ngemm(v2[p, :, c0:c1].T, e2[p], x[p, c0:c1]) is None:
            np.matmul(v2[p, :, c0:c1].T, e2[p], out=x[p, c0:c1])

    _per_position(product, c, 2.0 * 16 * tiles * c * f, parts)
    return _filter_gradient(x.reshape(4, 4, c, f))


def _filter_gradient(x):
    """G^T x G: the (3, 3, C, F) filter gradient from the summed products `x` (4, 4, C, F)."""
    def back(z):  # G^T z along axis 0: (4, ...) -> (3, ...)
        return np.stack([z[0] + (z[1] + z[2]) * 0.5, (z[1] - z[2]) * 0.5,
                         (z[1] + z[2]) * 0.5 + z[3]])
    return np.ascontiguousarray(back(back(x).swapaxes(0, 1)).swapaxes(0, 1))
