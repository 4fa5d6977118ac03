"""CPU kernels of the image ops (tensorflux/ops/image_ops.py).

Every resize is separable: per axis a matrix W (out x in) of interpolation weights, so
out[b] = W_y @ image[b] @ W_x^T per channel, and the gradient op is the transposed map
W_y^T @ grad @ W_x. The weights follow TensorFlow's kernels exactly, index arithmetic in
float32 as theirs is: the scale is in/out, or (in-1)/(out-1) with align_corners; half-pixel
centres sample at (x+0.5)*scale-0.5 (nearest neighbour at (x+0.5)*scale); bicubic uses Keys'
kernel from a 1024-entry table (a=-0.75, or a=-0.5 with zero weight outside the image and
renormalization under half-pixel centres); area integrates the input over each output pixel.
"""

from __future__ import annotations

import heapq

import numpy as np

from tensorflux.kernels import interrupt, intra_op
from tensorflux.kernels.cpu import _resize_nearest, native
from tensorflux.kernels.cpu.array_ops import _invalid
from tensorflux.kernels.cpu.random_ops import state_getter
from tensorflux.kernels.registry import kernel, kernel_factory
from tensorflux.lib import image_codecs, philox

_F32 = np.float32


def _scale(in_size: int, out_size: int, align: bool) -> np.float32:
    if align and out_size > 1:
        return _F32(in_size - 1) / _F32(out_size - 1)
    return _F32(in_size) / _F32(out_size)


def _bilinear_weights(in_size, out_size, align, half) -> np.ndarray:
    scale = _scale(in_size, out_size, align)
    x = np.arange(out_size, dtype=_F32)
    src = (x + _F32(0.5)) * scale - _F32(0.5) if half else x * scale
    floor = np.floor(src)
    lower = np.maximum(floor, 0).astype(np.int64)
    upper = np.minimum(np.ceil(src), in_size - 1).astype(np.int64)
    lerp = (src - floor).astype(np.float64)
    w = np.zeros((out_size, in_size))
    rows = np.arange(out_size)
    np.add.at(w, (rows, lower), 1.0 - lerp)
    np.add.at(w, (rows, upper), lerp)
    return w


def _nearest_index(in_size, out_size, align, half) -> np.ndarray:
    scale = _scale(in_size, out_size, align)
    x = np.arange(out_size, dtype=_F32)
    src = (x + _F32(0.5)) * scale if half else x * scale
    # roundf rounds halves away from zero; the sources are never negative.
    idx = np.floor(src + _F32(0.5)) if align else np.floor(src)
    idx = np.minimum(idx.astype(np.int64), in_size - 1)
    return np.maximum(idx, 0) if half else idx


def _one_hot(idx, in_size) -> np.ndarray:
    w = np.zeros((idx.size, in_size))
    w[np.arange(idx.size), idx] = 1.0
    return w


_TABLE_SIZE = 1024
_TABLES: dict[float, np.ndarray] = {}


def _cubic_table(a: float) -> np.ndarray:
    if a not in _TABLES:
        x = (np.arange(_TABLE_SIZE + 1) / _TABLE_SIZE).astype(_F32)
        a32 = _F32(a)
        t = np.empty((_TABLE_SIZE + 1, 2), _F32)
        t[:, 0] = ((a32 + 2) * x - (a32 + 3)) * x * x + 1
        x1 = x + _F32(1)
        t[:, 1] = ((a32 * x1 - 5 * a32) * x1 + 8 * a32) * x1 - 4 * a32
        _TABLES[a] = t
    return _TABLES[a]


def _bicubic_weights(in_size, out_size, align, half) -> np.ndarray:
    scale = _scale(in_size, out_size, align)
    table = _cubic_table(-0.5 if half else -0.75)
    w = np.zeros((out_size, in_size))
    for o in range(out_size):
        src = (_F32(o) + _F32(0.5)) * scale - _F32(0.5) if half else _F32(o) * scale
        loc = int(np.floor(src))
        off = int(np.rint(_F32(src - _F32(loc)) * _F32(_TABLE_SIZE)))
        weights = [table[off, 1], table[off, 0], table[_TABLE_SIZE - off, 0],
                   table[_TABLE_SIZE - off, 1]]
        taps = [loc - 1, loc, loc + 1, loc + 2]
        bounded = [min(in_size - 1, max(0, t)) for t in taps]
        if half:  # taps outside the image get no weight; the rest are renormalized
            weights = [wt if b == t else _F32(0) for wt, b, t in
                       zip(weights, bounded, taps, strict=True)]
            total = sum(float(v) for v in weights)
            if abs(total) >= 1000.0 * np.finfo(np.float32).tiny:
                weights = [float(v) / total for v in weights]
        for wt, b in zip(weights, bounded, strict=True):
            w[o, b] += float(wt)
    return w


def _area_weights(in_size, out_size, align) -> np.ndarray:
    scale = float(_scale(in_size, out_size, align))
    w = np.zeros((out_size, in_size))
    for o in range(out_size):
        lo, hi = o * scale, (o + 1) * scale
        for i in range(int(np.floor(lo)), int(np.ceil(hi))):
            w[o, min(max(i, 0), in_size - 1)] += min(i + 1, hi) - max(i, lo)
        w[o] /= scale
    return w


def _weights(op_type, in_size, out_size, align, half) -> np.ndarray:
    if op_type.startswith("ResizeBilinear"):
        return _bilinear_weights(in_size, out_size, align, half)
    if op_type.startswith("ResizeBicubic"):
        return _bicubic_weights(in_size, out_size, align, half)
    if op_type.startswith("ResizeArea"):
        return _area_weights(in_size, out_size, align)
    return _one_hot(_nearest_index(in_size, out_size, align, half), in_size)


def _separable(x: np.ndarray, wy: np.ndarray, wx: np.ndarray) -> np.ndarray:
    """wy @ x[b, :, :, c] @ wx^T for every batch entry and channel, as two BLAS products in
    float32 (TF's kernels compute in float32 too), in blocks of output rows of about
    interrupt.CHUNK_FLOPS that intra_op.parallel_for runs (and checks the step between)."""
    x = x.astype(np.float32, copy=False)
    b, h, w, c = x.shape
    o, p = wy.shape[0], wx.shape[0]
    wy, wx = wy.astype(np.float32), wx.astype(np.float32)
    flat = x.reshape(b, h, w * c)
    out = np.empty((b, o, p, c), np.float32)

    def work(r0, r1):
        rows = np.matmul(wy[r0:r1], flat)  # [b, r, w*c]
        rows = rows.reshape(b * (r1 - r0), w, c)
        out[:, r0:r1] = np.matmul(wx, rows).reshape(b, r1 - r0, p, c)  # [b*r, p, c]

    flops = 2.0 * b * o * w * c * (h + p)
    parts = intra_op.workers(interrupt.current()) if flops >= intra_op.MIN_FLOPS else 1
    intra_op.parallel_for(work, o, intra_op.grain_for(o, parts, flops), parts)
    return out


def _parts(ctx, elements: int) -> int:
    """The intra-op threads of a memory-bound pass over `elements` output elements."""
    return intra_op.workers(ctx) if elements >= intra_op.MIN_ELEMENTS else 1


def _check_size(images, size):
    if images.ndim != 4:
        raise _invalid(f"input must be 4-dimensional{list(images.shape)}")
    if size.shape != (2,):
        raise _invalid(f"shape_t must be 1-dimensional with 2 elements{list(size.shape)}")
    h, w = int(size[0]), int(size[1])
    if h <= 0 or w <= 0:
        raise _invalid("output dimensions must be positive")
    if images.shape[1] == 0 or images.shape[2] == 0:
        raise _invalid(f"input image must be of non-zero size, got {images.shape[1]}x"
                       f"{images.shape[2]}")
    return h, w


@kernel_factory("ResizeBilinear", "ResizeBicubic", "ResizeArea", "ResizeNearestNeighbor",
                expensive=True)
def _resize(node):
    op_type = node.op
    align = node.attrs["align_corners"]
    half = node.attrs.get("half_pixel_centers", False)

    def compute(ctx, images, size):
        h, w = _check_size(images, size)
        if op_type == "ResizeNearestNeighbor":
            iy = _nearest_index(images.shape[1], h, align, half)
            ix = _nearest_index(images.shape[2], w, align, half)
            parts = _parts(ctx, images.shape[0] * h * w * images.shape[3])
            out = native.resize_nearest(images, iy, ix, parts)
            return images[:, iy][:, :, ix] if out is None else out
        wy = _weights(op_type, images.shape[1], h, align, half)
        wx = _weights(op_type, images.shape[2], w, align, half)
        return _separable(images, wy, wx)

    return compute


@kernel_factory("ResizeBilinearGrad", "ResizeBicubicGrad", expensive=True)
def _resize_grad(node):
    op_type = node.op
    align, half = node.attrs["align_corners"], node.attrs["half_pixel_centers"]

    def compute(ctx, grads, original):
        wy = _weights(op_type, original.shape[1], grads.shape[1], align, half)
        wx = _weights(op_type, original.shape[2], grads.shape[2], align, half)
        return _separable(grads, wy.T, wx.T).astype(original.dtype)

    return compute


@kernel_factory("ResizeNearestNeighborGrad", expensive=True)
def _resize_nearest_grad(node):
    align, half = node.attrs["align_corners"], node.attrs["half_pixel_centers"]

    def compute(ctx, grads, size):
        h, w = int(size[0]), int(size[1])
        iy = _nearest_index(h, grads.shape[1], align, half)
        ix = _nearest_index(w, grads.shape[2], align, half)
        return _resize_nearest.grad(grads, iy, ix, h, w, _parts(ctx, grads.size))

    return compute


# ---- CropAndResize ---------------------------------------------------------------------------


def _crop_axis(lo, hi, size, crop):
    """Source coordinates (float32) of one box along one axis, and their validity."""
    lo, hi = _F32(lo), _F32(hi)
    if crop > 1:
        step = (hi - lo) * _F32(size - 1) / _F32(crop - 1)
        src = lo * _F32(size - 1) + np.arange(crop, dtype=_F32) * step
    else:
        src = np.full(crop, _F32(0.5) * (lo + hi) * _F32(size - 1), _F32)
    return src, (src >= 0) & (src <= size - 1)


def _crop_weights(src, valid, size, method):
    w = np.zeros((src.size, size))
    rows = np.flatnonzero(valid)
    s = src[valid]
    if method == "nearest":
        w[rows, np.floor(np.abs(s) + _F32(0.5)).astype(np.int64)] = 1.0
        return w
    top = np.floor(s).astype(np.int64)
    bottom = np.ceil(s).astype(np.int64)
    lerp = (s - np.floor(s)).astype(np.float64)
    np.add.at(w, (rows, top), 1.0 - lerp)
    np.add.at(w, (rows, bottom), lerp)
    return w


def _check_boxes(boxes, box_ind, batch):
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise _invalid(f"boxes must be 2-D [num_boxes, 4] {list(boxes.shape)}")
    if box_ind.shape != (boxes.shape[0],):
        raise _invalid("box_index has incompatible shape")
    if box_ind.size and (box_ind.min() < 0 or box_ind.max() >= batch):
        raise _invalid("box_index has values outside [0, batch_size)")


def _box_maps(boxes, image_shape, crop, method):
    _, h, w, _ = image_shape
    for box in boxes:
        sy, vy = _crop_axis(box[0], box[2], h, crop[0])
        sx, vx = _crop_axis(box[1], box[3], w, crop[1])
        yield (_crop_weights(sy, vy, h, method), vy, sy,
               _crop_weights(sx, vx, w, method), vx, sx)


@kernel_factory("CropAndResize", expensive=True)
def _crop_and_resize(node):
    method, extrapolation = node.attrs["method"], node.attrs["extrapolation_value"]

    def compute(ctx, image, boxes, box_ind, crop_size):
        if image.ndim != 4:
            raise _invalid(f"input image must be 4-D{list(image.shape)}")
        _check_boxes(boxes, box_ind, image.shape[0])
        ch, cw = int(crop_size[0]), int(crop_size[1])
        if ch <= 0 or cw <= 0:
            raise _invalid("crop dimensions must be positive")
        out = np.empty((boxes.shape[0], ch, cw, image.shape[3]), np.float32)
        maps = _box_maps(boxes, image.shape, (ch, cw), method)
        for n, (wy, vy, _, wx, vx, _) in enumerate(maps):
            crop = np.einsum("oh,hwc,pw->opc", wy, image[box_ind[n]].astype(np.float64), wx)
            crop[~(vy[:, None] & vx[None, :])] = extrapolation
            out[n] = crop
        return out

    return compute


@kernel_factory("CropAndResizeGradImage", expensive=True)
def _crop_and_resize_grad_image(node):
    method, dtype = node.attrs["method"], node.attrs["T"].as_numpy_dtype

    def compute(ctx, grads, boxes, box_ind, image_size):
        shape = tuple(int(v) for v in image_size)
        _check_boxes(boxes, box_ind, shape[0])
        out = np.zeros(shape)
        for n, (wy, vy, _, wx, vx, _) in enumerate(
                _box_maps(boxes, shape, grads.shape[1:3], method)):
            g = np.where((vy[:, None] & vx[None, :])[:, :, None], grads[n], 0.0)
            out[box_ind[n]] += np.einsum("oh,opc,pw->hwc", wy, g, wx)
        return out.astype(dtype)

    return compute


@kernel_factory("CropAndResizeGradBoxes", expensive=True)
def _crop_and_resize_grad_boxes(node):
    def compute(ctx, grads, image, boxes, box_ind):
        _check_boxes(boxes, box_ind, image.shape[0])
        _, h, w, _ = image.shape
        ch, cw = grads.shape[1:3]
        out = np.zeros(boxes.shape, np.float32)
        for n, (_, vy, sy, _, vx, sx) in enumerate(
                _box_maps(boxes, image.shape, (ch, cw), "bilinear")):
            img = image[box_ind[n]].astype(np.float64)
            ty, by = np.floor(sy).astype(np.int64), np.ceil(sy).astype(np.int64)
            tx, bx = np.floor(sx).astype(np.int64), np.ceil(sx).astype(np.int64)
            ly, lx = (sy - np.floor(sy))[:, None, None], (sx - np.floor(sx))[None, :, None]
            ty, by = np.clip(ty, 0, h - 1), np.clip(by, 0, h - 1)
            tx, bx = np.clip(tx, 0, w - 1), np.clip(bx, 0, w - 1)
            tl, tr = img[ty][:, tx], img[ty][:, bx]
            bl, br = img[by][:, tx], img[by][:, bx]
            ygrad = (1 - lx) * (bl - tl) + lx * (br - tr)
            xgrad = (1 - ly) * (tr - tl) + ly * (br - bl)
            mask = (vy[:, None] & vx[None, :])[:, :, None]
            gy = np.where(mask, ygrad * grads[n], 0.0).sum(axis=(1, 2))
            gx = np.where(mask, xgrad * grads[n], 0.0).sum(axis=(0, 2))
            ry = (h - 1) / (ch - 1) if ch > 1 else 0.0
            rx = (w - 1) / (cw - 1) if cw > 1 else 0.0
            yy, xx = np.arange(ch), np.arange(cw)
            dy1 = (h - 1 - yy * ry) if ch > 1 else np.full(ch, 0.5 * (h - 1))
            dy2 = yy * ry if ch > 1 else np.full(ch, 0.5 * (h - 1))
            dx1 = (w - 1 - xx * rx) if cw > 1 else np.full(cw, 0.5 * (w - 1))
            dx2 = xx * rx if cw > 1 else np.full(cw, 0.5 * (w - 1))
            out[n] = [gy @ dy1, gx @ dx1, gy @ dy2, gx @ dx2]
        return out

    return compute


# ---- colour ---------------------------------------------------------------------------------


def rgb_to_hsv(x: np.ndarray) -> np.ndarray:
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    v = np.max(x, axis=-1)
    m = np.min(x, axis=-1)
    rng = v - m
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(v > 0, rng / v, 0)
        norm = 1 / (6 * rng)
        h = np.where(r == v, norm * (g - b),
                     np.where(g == v, norm * (b - r) + 2 / 6, norm * (r - g) + 4 / 6))
    h = np.where(rng > 0, h, 0)
    h = np.where(h < 0, h + 1, h)
    return np.stack([h, s, v], axis=-1).astype(x.dtype)


def hsv_to_rgb(x: np.ndarray) -> np.ndarray:
    h, s, v = x[..., 0], x[..., 1], x[..., 2]
    dh = h * 6
    dr = np.clip(np.abs(dh - 3) - 1, 0, 1)
    dg = np.clip(2 - np.abs(dh - 2), 0, 1)
    db = np.clip(2 - np.abs(dh - 4), 0, 1)
    one_minus_s = 1 - s
    return np.stack([(one_minus_s + s * c) * v for c in (dr, dg, db)],
                    axis=-1).astype(x.dtype)


def _check_rgb(images):
    if images.ndim < 1 or images.shape[-1] != 3:
        raise _invalid(f"input must have 3 channels but input only has "
                       f"{images.shape[-1] if images.ndim else 0} channels.")


# The colour-space kernels spend ~100 ns a pixel (temporaries of every step): a large
# batch is converted in blocks of pixels that check the step between them.
_PIXEL_COST = 16


def _per_pixel(ctx, images, fn):
    """fn over the pixels (rows of 3 channels) of `images`, in blocks when large; each pixel
    is converted on its own, so blocks give the values of one call."""
    pixels = images.reshape(-1, 3)
    if not interrupt.blocked(pixels.nbytes, _PIXEL_COST):
        return fn(images)
    out = np.empty(pixels.shape, images.dtype)
    for lo, hi in interrupt.flat_spans(ctx, pixels.shape[0], 3 * images.itemsize,
                                       cost=_PIXEL_COST):
        out[lo:hi] = fn(pixels[lo:hi])
    return out.reshape(images.shape)


@kernel("RGBToHSV")
def _rgb_to_hsv(ctx, images):
    _check_rgb(images)
    return _per_pixel(ctx, images, lambda x: rgb_to_hsv(
        x.astype(np.float32) if x.dtype != np.float64 else x).astype(x.dtype))


@kernel("HSVToRGB")
def _hsv_to_rgb(ctx, images):
    _check_rgb(images)
    return _per_pixel(ctx, images, lambda x: hsv_to_rgb(
        x.astype(np.float32) if x.dtype != np.float64 else x).astype(x.dtype))


@kernel("AdjustContrastv2")
def _adjust_contrast(ctx, images, factor):
    if images.ndim < 3:
        raise _invalid(f"input must be at least 3-D, got shape{list(images.shape)}")
    x = images.astype(np.float32)
    mean = x.mean(axis=(-3, -2), keepdims=True, dtype=np.float32)
    return ((x - mean) * _F32(factor) + mean).astype(images.dtype)


@kernel("AdjustSaturation")
def _adjust_saturation(ctx, images, scale):
    _check_rgb(images)

    def adjust(x):
        hsv = rgb_to_hsv(x.astype(np.float32))
        hsv[..., 1] = np.clip(hsv[..., 1] * _F32(scale), 0, 1)
        return hsv_to_rgb(hsv).astype(x.dtype)

    return _per_pixel(ctx, images, adjust)


@kernel("AdjustHue")
def _adjust_hue(ctx, images, delta):
    _check_rgb(images)

    def adjust(x):
        hsv = rgb_to_hsv(x.astype(np.float32))
        h = np.fmod(hsv[..., 0] + _F32(delta), _F32(1))
        hsv[..., 0] = np.where(h < 0, h + 1, h)
        return hsv_to_rgb(hsv).astype(x.dtype)

    return _per_pixel(ctx, images, adjust)


# ---- boxes ----------------------------------------------------------------------------------


def _greedy_nms(similarity, scores, max_out, threshold, score_threshold, sigma=0.0,
                ctx=None):
    """TF's DoNonMaxSuppressionOp: pick the best candidate; it is suppressed by an earlier
    pick whose similarity exceeds `threshold` (hard), or its score decays by
    exp(-sim^2 / (2 sigma)) per earlier pick (soft, sigma > 0) and it competes again.
    Ties go to the lower index. Returns (indices, scores). Quadratic in the boxes at
    worst: step `ctx` (default: the current one) is checked every few thousand
    similarities."""
    scale = -0.5 / sigma if sigma > 0 else 0.0
    step = interrupt.current() if ctx is None else ctx
    budget = interrupt.EACH_EVERY
    heap = [(-float(sc), int(i), 0) for i, sc in enumerate(scores) if sc > score_threshold]
    heapq.heapify(heap)
    selected: list[int] = []
    selected_scores: list[float] = []
    while len(selected) < max_out and heap:
        neg, index, begin = heapq.heappop(heap)
        score = original = np.float32(-neg)
        hard = False
        budget -= len(selected) - begin
        if budget < 0 and step is not None:
            interrupt.check(step)
            budget = interrupt.EACH_EVERY
        for j in range(len(selected) - 1, begin - 1, -1):
            sim = similarity(index, selected[j])
            score = np.float32(score * (np.exp(np.float32(scale * sim * sim))
                                        if sim <= threshold else 0.0))
            if sigma <= 0 and sim > threshold:
                hard = True
                break
            if score <= score_threshold:
                break
        if hard:
            continue
        if score == original:
            selected.append(index)
            selected_scores.append(float(score))
        elif score > score_threshold:
            heapq.heappush(heap, (-float(score), index, len(selected)))
    return np.array(selected, np.int32), np.array(selected_scores, np.float32)


def _box_similarity(boxes):
    b = boxes.astype(np.float32)
    y0, y1 = np.minimum(b[:, 0], b[:, 2]), np.maximum(b[:, 0], b[:, 2])
    x0, x1 = np.minimum(b[:, 1], b[:, 3]), np.maximum(b[:, 1], b[:, 3])
    area = (y1 - y0) * (x1 - x0)

    def iou(i, j):
        if area[i] <= 0 or area[j] <= 0:
            return 0.0
        inter = max(np.float32(0), min(y1[i], y1[j]) - max(y0[i], y0[j])) * \
            max(np.float32(0), min(x1[i], x1[j]) - max(x0[i], x0[j]))
        return float(inter / (area[i] + area[j] - inter))
    return iou


def _check_nms(boxes, scores, max_out, iou_threshold):
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise _invalid(f"boxes must be 2-D{list(boxes.shape)}")
    if scores.shape != (boxes.shape[0],):
        raise _invalid("scores has incompatible shape")
    if not 0 <= iou_threshold <= 1:
        raise _invalid("iou_threshold must be in [0, 1]")
    if max_out < 0:
        raise _invalid("max_output_size must be non-negative")


def non_max_suppression(boxes, scores, max_out, iou_threshold, score_threshold, sigma=0.0,
                        ctx=None):
    _check_nms(boxes, scores, max_out, iou_threshold)
    return _greedy_nms(_box_similarity(boxes), scores, max_out, iou_threshold,
                       score_threshold, sigma, ctx)


@kernel_factory("NonMaxSuppression")
def _nms_v1(node):
    threshold = node.attrs["iou_threshold"]
    return lambda ctx, boxes, scores, max_out: non_max_suppression(
        boxes, scores, int(max_out), threshold, -np.inf, ctx=ctx)[0]


@kernel("NonMaxSuppressionV2")
def _nms_v2(ctx, boxes, scores, max_out, iou_threshold):
    return non_max_suppression(boxes, scores, int(max_out), float(iou_threshold), -np.inf,
                               ctx=ctx)[0]


@kernel("NonMaxSuppressionV3")
def _nms_v3(ctx, boxes, scores, max_out, iou_threshold, score_threshold):
    return non_max_suppression(boxes, scores, int(max_out), float(iou_threshold),
                               float(score_threshold), ctx=ctx)[0]


def _pad(values, size, pad):
    if not pad or len(values) >= size:
        return values
    return np.concatenate([values, np.zeros(size - len(values), values.dtype)])


@kernel_factory("NonMaxSuppressionV4")
def _nms_v4(node):
    pad = node.attrs["pad_to_max_output_size"]

    def compute(ctx, boxes, scores, max_out, iou_threshold, score_threshold):
        idx, _ = non_max_suppression(boxes, scores, int(max_out), float(iou_threshold),
                                     float(score_threshold), ctx=ctx)
        return _pad(idx, int(max_out), pad), np.int32(len(idx))

    return compute


@kernel_factory("NonMaxSuppressionV5")
def _nms_v5(node):
    pad = node.attrs["pad_to_max_output_size"]

    def compute(ctx, boxes, scores, max_out, iou_threshold, score_threshold, sigma):
        if float(sigma) < 0:
            raise _invalid("soft_nms_sigma must be non-negative")
        idx, sc = non_max_suppression(boxes, scores, int(max_out), float(iou_threshold),
                                      float(score_threshold), float(sigma), ctx=ctx)
        return (_pad(idx, int(max_out), pad), _pad(sc.astype(scores.dtype), int(max_out), pad),
                np.int32(len(idx)))

    return compute


@kernel("NonMaxSuppressionWithOverlaps")
def _nms_overlaps(ctx, overlaps, scores, max_out, overlap_threshold, score_threshold):
    if overlaps.ndim != 2 or overlaps.shape[0] != overlaps.shape[1]:
        raise _invalid(f"overlaps must be square, got {list(overlaps.shape)}")
    if scores.shape != (overlaps.shape[0],):
        raise _invalid("scores has incompatible shape")
    return _greedy_nms(lambda i, j: float(overlaps[i, j]), scores, int(max_out),
                       float(overlap_threshold), float(score_threshold), ctx=ctx)[0]


@kernel_factory("CombinedNonMaxSuppression", expensive=True)
def _combined_nms(node):
    pad_per_class, clip = node.attrs["pad_per_class"], node.attrs["clip_boxes"]

    def compute(ctx, boxes, scores, per_class, total, iou_threshold, score_threshold):
        if boxes.ndim != 4 or boxes.shape[-1] != 4 or scores.ndim != 3 or \
                scores.shape[:2] != boxes.shape[:2]:
            raise _invalid("boxes must be [batch, num_boxes, q, 4] and scores [batch, "
                           "num_boxes, num_classes]")
        q, classes = boxes.shape[2], scores.shape[2]
        if q not in (1, classes):
            raise _invalid("third dimension of boxes must be either 1 or num classes")
        if not 0 <= float(iou_threshold) <= 1:
            raise _invalid("iou_threshold must be in [0, 1]")
        per_class, total = int(per_class), int(total)
        n = min(total, per_class * classes) if pad_per_class else total
        batch = boxes.shape[0]
        out_boxes = np.zeros((batch, n, 4), np.float32)
        out_scores = np.zeros((batch, n), np.float32)
        out_classes = np.zeros((batch, n), np.float32)
        valid = np.zeros(batch, np.int32)
        for b in range(batch):
            found = []
            for c in range(classes):
                class_boxes = boxes[b, :, c if q > 1 else 0]
                idx, sc = _greedy_nms(_box_similarity(class_boxes), scores[b, :, c],
                                      per_class, float(iou_threshold), float(score_threshold),
                                      ctx=ctx)
                found += [(float(v), int(i), c) for i, v in zip(idx, sc, strict=True)]
            found.sort(key=lambda r: -r[0])
            found = found[:n]
            for k, (score, i, c) in enumerate(found):
                box = boxes[b, i, c if q > 1 else 0]
                out_boxes[b, k] = np.clip(box, 0, 1) if clip else box
                out_scores[b, k], out_classes[b, k] = score, c
            valid[b] = len(found)
        return out_boxes, out_scores, out_classes, valid

    return compute


_COLOR_TABLE = np.array([[1, 1, 0, 1], [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 0, 1],
                         [0.5, 0, 0.5, 1], [0.5, 0.5, 0, 1], [0.5, 0, 0, 1], [0, 0, 0.5, 1],
                         [0, 1, 1, 1], [1, 0, 1, 1]], np.float32)


def _draw(images, boxes, colors):
    if images.ndim != 4 or boxes.ndim != 3 or boxes.shape[-1] != 4:
        raise _invalid("images must be 4-D and boxes 3-D [batch, num_boxes, 4]")
    if boxes.shape[0] != images.shape[0]:
        raise _invalid("boxes and images must have the same batch size")
    out = images.copy()
    _, h, w, depth = images.shape
    for b in range(images.shape[0]):
        for k, box in enumerate(boxes[b]):
            color = colors[k % len(colors)][:depth]
            y0, y1 = int(_F32(box[0]) * _F32(h - 1)), int(_F32(box[2]) * _F32(h - 1))
            x0, x1 = int(_F32(box[1]) * _F32(w - 1)), int(_F32(box[3]) * _F32(w - 1))
            if y0 > y1 or x0 > x1 or y0 >= h or y1 < 0 or x0 >= w or x1 < 0:
                continue
            cy0, cy1, cx0, cx1 = max(y0, 0), min(y1, h - 1), max(x0, 0), min(x1, w - 1)
            if y0 >= 0:
                out[b, y0, cx0:cx1 + 1] = color
            if y1 < h:
                out[b, y1, cx0:cx1 + 1] = color
            if x0 >= 0:
                out[b, cy0:cy1 + 1, x0] = color
            if x1 < w:
                out[b, cy0:cy1 + 1, x1] = color
    return out


@kernel("DrawBoundingBoxes")
def _draw_boxes(ctx, images, boxes):
    return _draw(images, boxes, _COLOR_TABLE)


@kernel("DrawBoundingBoxesV2")
def _draw_boxes_v2(ctx, images, boxes, colors):
    if colors.ndim != 2 or colors.shape[0] == 0:
        return _draw(images, boxes, _COLOR_TABLE)
    if colors.shape[1] < images.shape[-1]:
        raise _invalid("Color must have at least as many channels as the image")
    return _draw(images, boxes, colors)


# ---- ExtractGlimpse -----------------------------------------------------------------------

_NOISES = ("uniform", "gaussian", "zero")


def _dims(x) -> str:
    return "[" + ",".join(map(str, x.shape)) + "]"


def _glimpse_corner(y, x, height, width, h, w, centered, normalized, v2):
    """The top-left pixel (row, column) of a glimpse of h x w at offsets (y, x), in float32
    arithmetic truncated toward zero, as TF's kernels: ExtractGlimpse reads the offsets as
    the window's centre; ExtractGlimpseV2 as its centre only when normalized and centred,
    else as its corner (pixels from the image's centre when centred)."""
    f = np.float32
    y, x = f(y), f(x)
    if normalized:
        y, x = y * f(height), x * f(width)
    if not v2:
        if centered:
            y = y / f(2) + f(height) / f(2)
            x = x / f(2) + f(width) / f(2)
        y, x = y - f(h) / f(2), x - f(w) / f(2)
    elif centered:
        if normalized:
            y = y / f(2) + f(height) / f(2) - f(h) / f(2)
            x = x / f(2) + f(width) / f(2) - f(w) / f(2)
        else:
            y, x = y + f(height) / f(2), x + f(width) / f(2)
    return int(y), int(x)


def _glimpse_kernel(v2: bool):
    def factory(node):
        a = node.attrs
        centered, normalized = a["centered"], a["normalized"]
        noise = a["noise"].decode() if isinstance(a["noise"], bytes) else a["noise"]
        if a["uniform_noise"] and noise not in ("", "uniform"):
            raise _invalid("The uniform_noise and noise could not be specified at the same "
                           "time")
        if noise == "":
            noise = "uniform" if a["uniform_noise"] else "gaussian"
        if noise not in _NOISES:
            raise _invalid(f"The noise could only be uniform, gaussian, or zero, got{noise}")
        rng = np.random.default_rng()

        def compute(ctx, images, size, offsets):
            if images.ndim != 4:
                raise _invalid(f"input must be 4-dimensional{_dims(images)}")
            if size.shape != (2,):
                raise _invalid(f"input must be a vector of size 2 (height, width){_dims(size)}")
            batch, height, width, channels = images.shape
            if offsets.ndim != 2 or offsets.shape[0] != batch:
                raise _invalid(f"first dimension should be batch{_dims(offsets)}")
            if offsets.shape[1] != 2:
                raise _invalid(f"second dimension should be of size 2 (y,x){_dims(offsets)}")
            h, w = int(size[0]), int(size[1])
            if h < 0 or w < 0:
                raise _invalid(f"glimpse size must be non-negative, got {[h, w]}")
            out = np.zeros((batch, h, w, channels), np.float32)
            for b in range(batch):
                top, left = _glimpse_corner(offsets[b, 0], offsets[b, 1], height, width,
                                            h, w, centered, normalized, v2)
                y0, y1 = max(top, 0), min(top + h, height)
                x0, x1 = max(left, 0), min(left + w, width)
                inside = y0 < y1 and x0 < x1
                if not (inside and y1 - y0 == h and x1 - x0 == w) and noise != "zero" \
                        and images[b].size:
                    image = images[b]
                    if noise == "uniform":  # the image's range, over all its channels
                        out[b] = rng.uniform(image.min(), image.max(), out[b].shape)
                    else:  # each channel's mean and standard deviation
                        flat = image.reshape(-1, channels).astype(np.float64)
                        out[b] = rng.normal(flat.mean(0), flat.std(0), out[b].shape)
                if inside:
                    out[b, y0 - top:y1 - top, x0 - left:x1 - left] = images[b, y0:y1, x0:x1]
            return out

        return compute

    return factory


kernel_factory("ExtractGlimpse")(_glimpse_kernel(False))
kernel_factory("ExtractGlimpseV2")(_glimpse_kernel(True))


# ---- SampleDistortedBoundingBox ------------------------------------------------------------


# TensorFlow's crop sampler, value for value: float32 arithmetic where TF's is float (the
# areas, the aspect ratio, lrintf of float products, sqrtf), double where a double constant
# promotes it, and its draws from TF's SimplePhilox over the run's reservation of the node's
# stream (one block per attempt: ReserveSamples32(4 * max_attempts)).

_F32 = np.float32


def _lrintf(x) -> int:
    return int(np.rint(_F32(x)))  # round half to even, as lrintf in the default mode


def _random_crop(words, width, height, min_area, max_area, ratio):
    """TF's GenerateRandomCrop: a crop (y, x, h, w) of area in [min_area, max_area] and
    aspect ratio `ratio` (float32 values), or None."""
    if max_area <= 0 or ratio <= 0 or width <= 0 or height <= 0 or min_area > max_area:
        return None
    h = _lrintf(np.sqrt(_F32(min_area / ratio)))
    max_h = _lrintf(np.sqrt(_F32(max_area / ratio)))
    if _lrintf(_F32(max_h) * ratio) > width:
        max_h = int((width + 0.5 - float(_F32(1e-7))) / float(ratio))
        if _lrintf(_F32(max_h) * ratio) > width:
            max_h -= 1
    max_h = min(max_h, height)
    h = min(h, max_h)
    if h < max_h:
        h += int(words.uniform(1, max_h - h + 1)[0])
    w = _lrintf(_F32(h) * ratio)
    area = _F32(w * h)
    if area < min_area:
        h += 1
        w = _lrintf(_F32(h) * ratio)
        area = _F32(w * h)
    if area > max_area:
        h -= 1
        w = _lrintf(_F32(h) * ratio)
        area = _F32(w * h)
    if area < min_area or area > max_area or w > width or h > height or w <= 0 or h <= 0:
        return None
    y = int(words.uniform(1, height - h)[0]) if h < height else 0
    x = int(words.uniform(1, width - w)[0]) if w < width else 0
    return y, x, h, w


def _pixel_boxes(boxes, height, width) -> list[tuple[int, int, int, int]]:
    """Normalized boxes to TF's integer rectangles (y0, x0, y1, x1): float32 products,
    truncated."""
    b = boxes.astype(np.float32)
    sizes = np.array([height, width, height, width], np.float32)
    return [tuple(int(v) for v in row) for row in (b * sizes).tolist()]


def _covers(crop, rects, min_covered) -> bool:
    """TF's SatisfiesOverlapConstraints: the crop has an area of at least 1 and covers at
    least `min_covered` of some rectangle of area at least 1."""
    y, x, h, w = crop
    if h * w < 1:
        return False
    for by0, bx0, by1, bx1 in rects:
        area = _F32((by1 - by0) * (bx1 - bx0))
        if area < 1:
            continue
        iy = min(y + h, by1) - max(y, by0)
        ix = min(x + w, bx1) - max(x, bx0)
        inter = _F32(iy * ix) if iy >= 0 and ix >= 0 else _F32(0)
        if inter / area >= min_covered:
            return True
    return False


def _sample_box(words, height, width, rects, min_covered, ratios, areas, attempts):
    """TF's sampling loop: a random aspect ratio per attempt, the first crop meeting the
    overlap constraint, else the whole image."""
    r0, r1 = _F32(ratios[0]), _F32(ratios[1])
    min_area = _F32(_F32(_F32(areas[0]) * _F32(width)) * _F32(height))
    max_area = _F32(_F32(_F32(areas[1]) * _F32(width)) * _F32(height))
    for _ in range(attempts):
        ratio = _F32(words.rand_float() * (r1 - r0)) + r0
        crop = _random_crop(words, width, height, min_area, max_area, ratio)
        if crop is not None and _covers(crop, rects, _F32(min_covered)):
            return crop
    return 0, 0, height, width


def _check_sdbb(boxes, ratios, areas, attempts):
    bad = boxes[~((boxes >= 0.0) & (boxes <= 1.0))]
    if bad.size:
        raise _invalid(f"All bounding box coordinates must be in [0.0, 1.0]: {bad[0]:g}")
    if ratios[0] <= 0 or ratios[1] <= 0:
        raise _invalid(f"Aspect ratio range must be non-negative: [{ratios[0]:g}, "
                       f"{ratios[1]:g}]")
    if areas[0] <= 0 or areas[1] <= 0:
        raise _invalid(f"Area range must be non-negative: [{areas[0]:g}, {areas[1]:g}]")
    if areas[0] > 1 or areas[1] > 1:
        raise _invalid(f"Area range must be less then or equal to 1.0: [{areas[0]:g}, "
                       f"{areas[1]:g}]")
    if attempts <= 0:
        raise _invalid(f"Max attempts must be non-negative: {attempts}")


@kernel_factory("SampleDistortedBoundingBox", "SampleDistortedBoundingBoxV2")
def _sample_distorted(node):
    get_state = state_getter(node)
    attrs = node.attrs
    dtype = attrs["T"].as_numpy_dtype
    attempts = int(attrs["max_attempts"])

    def compute(ctx, image_size, bounding_boxes, min_covered=None):
        if min_covered is None:
            min_covered = attrs["min_object_covered"]
        elif np.ndim(min_covered) != 0:
            raise _invalid(f"min_object_covered must be 0-D, got shape "
                           f"{list(np.shape(min_covered))}")
        if float(min_covered) < 0:
            raise _invalid(f"Min object covered must be non-negative: {float(min_covered):g}")
        if image_size.shape != (3,):
            raise _invalid(f"image_size must be 1-dimensional with 3 elements, got "
                           f"{list(image_size.shape)}")
        height, width = int(image_size[0]), int(image_size[1])
        boxes = np.asarray(bounding_boxes)
        if boxes.ndim != 3 or boxes.shape[-1] != 4:
            raise _invalid(f"input boxes must be 3-dimensional [batch, num_boxes, coords] "
                           f"with 4 coordinates, got shape {list(boxes.shape)}")
        boxes = boxes.astype(np.float32).reshape(-1, 4)
        _check_sdbb(boxes, attrs["aspect_ratio_range"], attrs["area_range"], attempts)
        if height <= 0 or width <= 0:
            raise _invalid(f"image height and width must be positive, got {height}x{width}")
        rects = _pixel_boxes(boxes, height, width)
        if not rects:
            if not attrs["use_image_if_no_bounding_boxes"]:
                raise _invalid("No bounding boxes provided as input. One must enable "
                               "use_image_if_no_bounding_boxes if you wish to not provide "
                               "any bounding boxes.")
            rects = [(0, 0, height, width)]
        state = get_state(ctx)
        with state.lock:
            key, counter = state.reserve(attempts, 1)  # 4 words an attempt
        y, x, h, w = _sample_box(philox.WordStream(key, counter), height, width, rects,
                                 min_covered, attrs["aspect_ratio_range"],
                                 attrs["area_range"], attempts)
        bbox = np.array([[[_F32(y) / _F32(height), _F32(x) / _F32(width),
                           _F32(y + h) / _F32(height), _F32(x + w) / _F32(width)]]],
                        np.float32)
        return (np.array([y, x, 0], dtype), np.array([h, w, -1], dtype), bbox)

    return compute


# ---- codecs --------------------------------------------------------------------------------


def _decoder(fn):
    def compute(ctx, contents):
        try:
            return fn(bytes(contents.item() if isinstance(contents, np.ndarray) else contents))
        except ValueError as e:
            raise _invalid(str(e)) from None
    return compute


@kernel_factory("DecodePng")
def _decode_png(node):
    channels, dtype = node.attrs["channels"], node.attrs["dtype"].name
    return _decoder(lambda data: image_codecs.decode_png(data, channels, dtype))


@kernel_factory("DecodeJpeg")
def _decode_jpeg(node):
    channels, ratio = node.attrs["channels"], node.attrs["ratio"]
    return _decoder(lambda data: image_codecs.decode_jpeg(data, channels, ratio))


@kernel_factory("DecodeAndCropJpeg")
def _decode_and_crop_jpeg(node):
    channels = node.attrs["channels"]

    def compute(ctx, contents, window):
        if np.shape(window) != (4,):
            raise _invalid(f"crop_window must be 1-D with 4 elements, got "
                           f"{list(np.shape(window))}")
        return _decoder(lambda data: image_codecs.decode_and_crop_jpeg(
            data, window, channels))(ctx, contents)

    return compute


@kernel_factory("ExtractJpegShape")
def _extract_jpeg_shape(node):
    dtype = node.attrs["output_type"].as_numpy_dtype
    return _decoder(lambda data: np.array(image_codecs.jpeg_shape(data), dtype))


@kernel_factory("DecodeBmp")
def _decode_bmp(node):
    channels = node.attrs["channels"]
    return _decoder(lambda data: image_codecs.decode_bmp(data, channels))


@kernel("DecodeGif")
def _decode_gif(ctx, contents):
    return _decoder(image_codecs.decode_gif)(ctx, contents)


@kernel_factory("DecodeImage")
def _decode_image(node):
    channels, dtype = node.attrs["channels"], node.attrs["dtype"].name
    expand = node.attrs["expand_animations"]
    return _decoder(lambda data: image_codecs.decode_any(data, channels, dtype, expand))


def _encoder(fn):
    def compute(ctx, image):
        try:
            return np.array(fn(np.ascontiguousarray(image)), dtype=object)
        except ValueError as e:
            raise _invalid(str(e)) from None
    return compute


@kernel_factory("EncodePng")
def _encode_png(node):
    compression = node.attrs["compression"]

    def compute(ctx, image):  # a large image is compressed in blocks, the step checked
        return _encoder(lambda im: image_codecs.encode_png(
            im, compression, between=lambda: interrupt.check(ctx)))(ctx, image)

    return compute


@kernel_factory("EncodeJpeg")
def _encode_jpeg(node):
    a = node.attrs
    return _encoder(lambda image: image_codecs.encode_jpeg(
        image, a["format"], a["quality"], a["progressive"], a["optimize_size"],
        a["chroma_downsampling"], a["density_unit"], a["x_density"], a["y_density"]))


@kernel("EncodeJpegVariableQuality")
def _encode_jpeg_variable_quality(ctx, images, quality):
    return _encoder(lambda image: image_codecs.encode_jpeg(image, "", int(quality)))(ctx,
                                                                                     images)
