"""CPU kernels of the pools (MaxPool, AvgPool and their gradients, MaxPoolGradGrad).

Pooling reads the padded input through one strided slice per window tap (i, j): the slice
holds that tap's element of every window, so a k x k pool is k*k elementwise ops on arrays
of the output's size, whatever the strides. MaxPool ignores NaN (TF compares with `>`);
MaxPoolGrad routes each window's gradient to the first maximum in row-major window order
(TF's CPU kernel, re-deriving the argmax from `orig_input`); AvgPool divides by the number
of window elements inside the unpadded input. Pools run in cache-sized batch chunks
(several passes over a chunk stay in cache), split over the intra-op threads when big.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels import interrupt, intra_op
from tensorflux.kernels.cpu import native
from tensorflux.kernels.cpu._nn_common import (
    _LOW_PRECISION,
    _checked,
    _explicit_pairs,
    _from_nhwc,
    _invalid,
    _narrow,
    _pad,
    _sizes,
    _to_nhwc,
    _widen,
    _window,
)
from tensorflux.kernels.registry import kernel_factory

# ---- pooling -----------------------------------------------------------------------------


class _PoolGeometry:
    """ksize/strides/padding of a pooling node over the H, W and C axes of NHWC data."""

    __slots__ = ("k", "s", "padding", "explicit", "data_format", "_resolved")

    def __init__(self, node):
        a = node.attrs
        self.data_format = a.get("data_format", "NHWC")
        order = (0, 2, 3, 1) if self.data_format == "NCHW" else (0, 1, 2, 3)
        ksize, strides = list(a["ksize"]), list(a["strides"])
        if len(ksize) != 4 or len(strides) != 4:
            raise _invalid("Sliding window ksize and strides fields must specify 4 dimensions")
        for name, values in (("ksize", ksize), ("strides", strides)):
            for v in values:  # a GraphDef's attrs skip the wrapper's and shape fn's checks
                if v >= 2**31:
                    raise _invalid(f"Attr {name} has value {v} out of range for an int32")
        if any(k <= 0 for k in ksize):
            raise _invalid("Sliding window ksize must be positive. The specified or inferred "
                           f"ksize is: {','.join(str(k) for k in ksize)}")
        if ksize[order[0]] != 1 or strides[order[0]] != 1:
            raise errors.UnimplementedError(
                None, None, "Pooling is not yet supported on the batch dimension.")
        self.k = [ksize[i] for i in order[1:]]
        self.s = [strides[i] for i in order[1:]]
        self.padding = a["padding"]
        self.explicit = _explicit_pairs(a, order[1:]) + [(0, 0)]
        self._resolved: dict[tuple, tuple] = {}  # input shape -> `_resolve`'s answer

    def resolve(self, shape):
        """`_resolve(shape)`, computed once per input shape (a served model's pools see the
        same few shapes on every request). Callers must not change the lists it returns."""
        key = tuple(shape)
        got = self._resolved.get(key)
        if got is None:
            got = self._resolve(key)
            if len(self._resolved) >= 64:
                self._resolved.clear()
            self._resolved[key] = got
        return got

    def _resolve(self, shape):
        """(output shape, [(before, after)] and window sizes for H, W, C) of an NHWC input
        `shape`, the window cut to the taps that ever read the input.

        A tap i (0 <= i < k) of the window at output o reads padded position o*s + i; taps
        that read padding for every o (i < before - (out-1)*s, or i >= before + size)
        change no result (max ignores padding, average counts only input elements, the
        gradients route nothing there), so they are dropped and the padding shrunk to
        match: a window larger than its input costs the input's size, not the window's
        (TF takes 10^6 x 10^6 windows on a 4 x 4 input in milliseconds)."""
        outs, pads, ks = [shape[0]], [], []
        for axis in range(3):
            n, k, s = shape[axis + 1], self.k[axis], self.s[axis]
            o, b, a = _window(n, k, s, 1, self.padding, self.explicit[axis])
            lo = max(0, b - (o - 1) * s) if o > 0 else 0
            hi = max(min(k, b + n), lo + 1)
            if (lo, hi) != (0, k):
                k, b = hi - lo, b - lo
                a = max(0, (o - 1) * s + k - b - n)
            outs.append(o)
            pads.append((b, a))
            ks.append(k)
        return tuple(outs), pads, ks

    def taps(self, out_shape, ks):
        """Per tap of windows of sizes `ks` (from `resolve`): the index of its strided
        slice into the padded input. (Polls the running step every few taps: a window may
        be as large as the input, kernels/interrupt.py.)"""
        return interrupt.polled(self._taps(out_shape, ks))

    def _taps(self, out_shape, ks):
        strides = self.s
        spans = [(o - 1) * s + 1 for o, s in zip(out_shape[1:], strides, strict=True)]
        for i in range(ks[0]):
            for j in range(ks[1]):
                for d in range(ks[2]):
                    yield (slice(None), slice(i, i + spans[0], strides[0]),
                           slice(j, j + spans[1], strides[1]), slice(d, d + spans[2], strides[2]))


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" or dtype in _LOW_PRECISION else np.iinfo(dtype).min


def _window_max(xp, geom: _PoolGeometry, ks, out):
    """Writes into `out` the max (NaN ignored) of each window (sizes `ks`) of padded `xp`."""
    reduce = np.fmax if xp.dtype.kind == "f" else np.maximum
    for t, index in enumerate(geom.taps(out.shape, ks)):
        if t == 0:
            np.copyto(out, xp[index])
        else:
            reduce(out, xp[index], out=out)


def _max_pool_nhwc(x, geom: _PoolGeometry, parts: int = 1):
    """(max of each window, paddings, output shape, window sizes) of NHWC `x` (see
    `_PoolGeometry.resolve`), batch-parallel when big."""
    out_shape, pads, ks = geom.resolve(x.shape)
    if 0 in out_shape:
        return np.empty(out_shape, x.dtype), pads, out_shape, ks
    out = native.max_pool(x, out_shape, ks, geom.s, pads, parts)
    if out is not None:
        return out, pads, out_shape, ks
    out = np.empty(out_shape, x.dtype)
    xp = _pad(x, pads, _lowest(x.dtype))

    def work(lo, hi):
        _window_max(xp[lo:hi], geom, ks, out[lo:hi])

    intra_op.parallel_rows(work, x.shape[0], x.size, parts)
    return out, pads, out_shape, ks


@kernel_factory("MaxPool", expensive=True)
@_checked
def _max_pool(node):
    geom = _PoolGeometry(node)

    def compute(ctx, x):
        if x.ndim != 4:
            raise _invalid(f"input must be 4-dimensional, got {list(x.shape)}")
        xf = _widen(_to_nhwc(x, geom.data_format))
        # (A pool's value does not depend on its split: tiny ones skip asking for threads.)
        parts = intra_op.workers(ctx) if x.size >= intra_op.MIN_ELEMENTS else 1
        out = _max_pool_nhwc(xf, geom, parts)[0]
        return _from_nhwc(_narrow(out, x.dtype), geom.data_format)

    return compute


@kernel_factory("MaxPoolGrad", expensive=True)
@_checked
def _max_pool_grad(node):
    geom = _PoolGeometry(node)

    def compute(ctx, orig_input, orig_output, grad):
        # TF re-derives each window's argmax from orig_input; orig_output is not trusted.
        x = _widen(_to_nhwc(orig_input, geom.data_format))
        g = _widen(_to_nhwc(grad, geom.data_format))
        out_shape, pads, ks = geom.resolve(x.shape)
        if g.shape != out_shape:
            raise _invalid(f"Expected grad shape to be {list(out_shape)}, but got "
                           f"{list(g.shape)}")
        tiles = all(k == s for k, s in zip(ks, geom.s, strict=True))
        parts = intra_op.workers(ctx)
        if g.size:
            dx = native.max_pool_grad(x, g, ks, geom.s, pads, tiles, parts)
            if dx is not None:
                return _from_nhwc(_narrow(dx, grad.dtype), geom.data_format)
        xp = _pad(x, pads, _lowest(x.dtype))
        covered = tiles and all(o * k == n for o, k, n in
                                zip(out_shape[1:], ks, xp.shape[1:], strict=True))
        if covered and g.size:
            dxp = _tiled_max_pool_grad(xp, g, ks, parts)
        else:
            dxp = np.zeros(xp.shape, g.dtype)
            if g.size:
                def work(lo, hi):
                    _route_to_first_max(xp[lo:hi], g[lo:hi], geom, ks, dxp[lo:hi], tiles)

                intra_op.parallel_rows(work, x.shape[0], x.size, parts)
        crop = (slice(None),) + tuple(slice(b, b + n) for (b, _), n in
                                      zip(pads, x.shape[1:], strict=True))
        dx = np.ascontiguousarray(dxp[crop]) if any(b or a for b, a in pads) else dxp
        return _from_nhwc(_narrow(dx, grad.dtype), geom.data_format)

    return compute


def _first_max_index(taps, m, idx, gt, step):
    """Writes into `idx` the number of each window's first maximum among `taps` (arrays
    of the windows' elements, in TF's row-major window order), as TF's CPU argmax scan
    picks it: the first tap, replaced by a later one only when strictly greater, so a
    later NaN never takes the gradient and a NaN first tap keeps it. `m`, `gt` and `step`
    (of idx's dtype) are scratch arrays of the windows' shape. No masked (`where=`)
    assignments: NumPy runs those element by element."""
    first = None
    for t, tap in enumerate(interrupt.polled(taps)):
        if t == 0:
            first = tap
            np.copyto(m, tap)
            idx.fill(0)
            continue
        np.greater(tap, m, out=gt)
        np.fmax(m, tap, out=m)  # == where(gt, tap, m) while m is not NaN
        # idx = where(gt, t, idx) as max(idx, t * gt): taps come in increasing order.
        np.multiply(gt, step.dtype.type(t), out=step)
        np.maximum(idx, step, out=idx)
    if m.dtype.kind == "f" and idx.size:
        np.equal(first, first, out=gt)  # a NaN first tap keeps the gradient
        np.multiply(idx, gt, out=idx)


def _index_dtype(count: int):
    return np.uint8 if count <= 256 else np.int32


def _bits(a: np.ndarray) -> np.ndarray:
    """`a` viewed as unsigned integers: `bits * mask` routes a value or writes exact zeros,
    where `a * mask` would turn an unrouted inf or NaN gradient into NaN."""
    return a.view(f"u{a.dtype.itemsize}")


def _tiled_max_pool_grad(xp, g, k, parts: int):
    """MaxPoolGrad for windows that tile padded `xp` exactly (ksize == strides, no partial
    windows). Per batch chunk, the input is copied once into tap-major order (one
    contiguous row per window tap), so the argmax scan and the routing of `g` run on
    contiguous arrays (NHWC taps are strided slices whose contiguous runs are only the
    channels long, and NumPy pays per run); the routed taps are copied back in one pass."""
    n, hp, wp, cp = xp.shape
    kh, kw, kc = k
    _, oh, ow, oc = g.shape
    count = kh * kw * kc
    dxp = np.empty(xp.shape, g.dtype)
    rows = max(1, min(n, intra_op.CHUNK_ELEMENTS // max(1, hp * wp * cp)))
    index_dtype = _index_dtype(count)

    def make():
        size = rows * oh * ow * oc
        return (np.empty((count, size), xp.dtype), np.empty((count, size), g.dtype),
                np.empty(size, xp.dtype), np.empty(size, index_dtype),
                np.empty(size, index_dtype), np.empty(size, bool))

    state, _ = intra_op.per_thread(make)

    def tap_major(a, lo, hi):
        """(kh, kw, kc, rows, oh, ow, oc) view of NHWC rows lo:hi of padded-shaped `a`."""
        return a[lo:hi].reshape(hi - lo, oh, kh, ow, kw, oc, kc).transpose(2, 4, 6, 0, 1, 3, 5)

    def work(lo, hi):
        xbuf, dbuf, m, idx, step, hit = state()
        size = (hi - lo) * oh * ow * oc
        taps, routed = xbuf[:, :size], _bits(dbuf[:, :size])
        np.copyto(taps.reshape(kh, kw, kc, hi - lo, oh, ow, oc), tap_major(xp, lo, hi))
        m, idx, step, hit = m[:size], idx[:size], step[:size], hit[:size]
        _first_max_index(taps, m, idx, hit, step)
        gbits = _bits(g[lo:hi].reshape(-1))
        for t in interrupt.polled(range(count)):
            np.equal(idx, t, out=hit)
            np.multiply(gbits, hit, out=routed[t])
        np.copyto(tap_major(dxp, lo, hi), dbuf[:, :size].reshape(kh, kw, kc, hi - lo, oh,
                                                                   ow, oc))

    if xp.size < intra_op.MIN_ELEMENTS:
        parts = 1
    intra_op.parallel_for(work, n, rows, parts)
    return dxp


def _route_to_first_max(xp, g, geom: _PoolGeometry, ks, dxp, tiles: bool):
    """Adds to zeroed `dxp` (padded-input-shaped) each window's `g` at the window's first
    maximum (`_first_max_index`). Windows that tile the input without overlap write their
    taps directly; overlapping ones accumulate."""
    taps = list(geom.taps(g.shape, ks))
    index_dtype = _index_dtype(len(taps))
    m = np.empty(g.shape, xp.dtype)
    idx, step = np.empty(g.shape, index_dtype), np.empty(g.shape, index_dtype)
    hit = np.empty(g.shape, bool)
    _first_max_index([xp[index] for index in taps], m, idx, hit, step)
    gbits, routed = _bits(g), np.empty(g.shape, g.dtype)
    for t, index in enumerate(interrupt.polled(taps)):
        np.equal(idx, t, out=hit)
        np.multiply(gbits, hit, out=_bits(routed))
        if tiles:
            dxp[index] = routed
        else:
            dxp[index] += routed


def _avg_counts(geom: _PoolGeometry, ks, in_shape, out_shape, pads):
    """Number of unpadded input elements in each window, broadcastable to out_shape."""
    counts = []
    for axis in range(3):
        o, s, k = out_shape[axis + 1], geom.s[axis], ks[axis]
        start = np.arange(o) * s - pads[axis][0]
        c = np.minimum(start + k, in_shape[axis + 1]) - np.maximum(start, 0)
        counts.append(c)
    return counts[0][:, None, None] * counts[1][None, :, None] * counts[2][None, None, :]


@kernel_factory("AvgPool", expensive=True)
@_checked
def _avg_pool(node):
    geom = _PoolGeometry(node)

    def compute(ctx, x):
        if x.ndim != 4:
            raise _invalid(f"input must be 4-dimensional, got {list(x.shape)}")
        xf = _widen(_to_nhwc(x, geom.data_format))
        out_shape, pads, ks = geom.resolve(xf.shape)
        if 0 in out_shape:
            return _from_nhwc(np.zeros(out_shape, x.dtype), geom.data_format)
        xp = _pad(xf, pads)
        acc = None
        for index in geom.taps(out_shape, ks):
            acc = xp[index].copy() if acc is None else np.add(acc, xp[index], out=acc)
        acc /= _avg_counts(geom, ks, xf.shape, out_shape, pads).astype(acc.dtype)
        return _from_nhwc(_narrow(acc, x.dtype), geom.data_format)

    return compute


@kernel_factory("AvgPoolGrad", expensive=True)
@_checked
def _avg_pool_grad(node):
    geom = _PoolGeometry(node)

    def compute(ctx, orig_input_shape, grad):
        shape = _sizes(orig_input_shape, "orig_input_shape")
        if geom.data_format == "NCHW":
            shape = [shape[0], shape[2], shape[3], shape[1]]
        g = _widen(_to_nhwc(grad, geom.data_format))
        out_shape, pads, ks = geom.resolve(shape)
        if g.shape != out_shape:
            raise _invalid(f"Expected grad shape to be {list(out_shape)}, but got "
                           f"{list(g.shape)}")
        padded = [shape[0]] + [n + b + a for n, (b, a) in zip(shape[1:], pads, strict=True)]
        dxp = np.zeros(padded, g.dtype)
        share = g / _avg_counts(geom, ks, shape, out_shape, pads).astype(g.dtype)
        for index in geom.taps(out_shape, ks):
            dxp[index] += share
        crop = (slice(None),) + tuple(slice(b, b + n) for (b, _), n in
                                      zip(pads, shape[1:], strict=True))
        dx = np.ascontiguousarray(dxp[crop]) if any(b or a for b, a in pads) else dxp
        return _from_nhwc(_narrow(dx, grad.dtype), geom.data_format)

    return compute


@kernel_factory("MaxPoolGradGrad", expensive=True)
@_checked
def _max_pool_grad_grad(node):
    geom = _PoolGeometry(node)

    def compute(ctx, orig_input, orig_output, grad):
        x = _widen(_to_nhwc(orig_input, geom.data_format))
        g = _widen(_to_nhwc(grad, geom.data_format))
        if g.shape != x.shape:
            raise _invalid(f"grad must have the shape of orig_input {list(x.shape)}, got "
                           f"{list(g.shape)}")
        m, pads, out_shape, ks = _max_pool_nhwc(x, geom)
        xp = _pad(x, pads, _lowest(x.dtype))
        gp = _pad(g, pads)
        out = np.zeros(out_shape, g.dtype)
        taken = np.zeros(out_shape, bool)
        for index in geom.taps(out_shape, ks):
            hit = xp[index] == m
            hit &= ~taken
            taken |= hit
            np.add(out, gp[index], out=out, where=hit)
        return _from_nhwc(_narrow(out, grad.dtype), geom.data_format)

    return compute


# ---- MaxPoolWithArgmax and its gradients -------------------------------------------------


def _full_index(argmax, shape, include_batch: bool) -> np.ndarray:
    """Flat indices into the whole input (`shape`) of an argmax output."""
    idx = np.asarray(argmax).astype(np.int64, copy=False)
    if include_batch:
        return idx.reshape(-1)
    per_image = int(np.prod(shape[1:]))
    batch = np.arange(idx.shape[0], dtype=np.int64).reshape((-1,) + (1,) * (idx.ndim - 1))
    return (idx + batch * per_image).reshape(-1)


def _checked_index(full, size: int) -> np.ndarray:
    if full.size and (full.min() < 0 or full.max() >= size):
        raise _invalid(f"Invalid argmax index: values must be in [0, {size})")
    return full


@kernel_factory("MaxPoolWithArgmax", expensive=True)
@_checked
def _max_pool_with_argmax(node):
    geom = _PoolGeometry(node)
    include_batch = node.attrs["include_batch_in_index"]
    index_dtype = node.attrs["Targmax"].as_numpy_dtype

    def compute(ctx, x):
        if x.ndim != 4:
            raise _invalid(f"input must be 4-dimensional, got {list(x.shape)}")
        n, h, w, c = x.shape
        out_shape, pads, ks = geom.resolve(x.shape)
        best = np.full(out_shape, _lowest(x.dtype), dtype=x.dtype)
        arg = np.zeros(out_shape, dtype=np.int64)
        if 0 in out_shape:
            return best, arg.astype(index_dtype)
        xp = _pad(x, pads, _lowest(x.dtype))
        (pt, _), (pl, _) = pads[0], pads[1]
        oh, ow = out_shape[1], out_shape[2]
        sh, sw = geom.s[0], geom.s[1]
        for i in range(ks[0]):
            rows = np.arange(oh) * sh + i - pt
            for j in range(ks[1]):
                interrupt.check()
                cols = np.arange(ow) * sw + j - pl
                tap = xp[:, i:i + (oh - 1) * sh + 1:sh, j:j + (ow - 1) * sw + 1:sw, :]
                inside = ((rows >= 0) & (rows < h))[:, None] & ((cols >= 0) & (cols < w))[None]
                better = (tap > best) & inside[None, :, :, None]
                idx = (rows[:, None] * w + cols[None, :])[None, :, :, None] * c + \
                    np.arange(c)[None, None, None, :]
                if include_batch:
                    idx = idx + (np.arange(n) * (h * w * c))[:, None, None, None]
                best = np.where(better, tap, best)
                arg = np.where(better, idx, arg)
        return best, arg.astype(index_dtype)

    return compute


@kernel_factory("MaxPoolGradWithArgmax", expensive=True)
def _max_pool_grad_with_argmax(node):
    include_batch = node.attrs["include_batch_in_index"]

    def compute(ctx, x, grad, argmax):
        if np.shape(grad) != np.shape(argmax):
            raise _invalid(f"grad and argmax must have the same shape, got "
                           f"{list(np.shape(grad))} and {list(np.shape(argmax))}")
        full = _checked_index(_full_index(argmax, x.shape, include_batch), x.size)
        out = np.zeros(x.size, dtype=grad.dtype)
        np.add.at(out, full, np.asarray(grad).reshape(-1))
        return out.reshape(x.shape)

    return compute


@kernel_factory("MaxPoolGradGradWithArgmax", expensive=True)
def _max_pool_grad_grad_with_argmax(node):
    include_batch = node.attrs["include_batch_in_index"]

    def compute(ctx, x, grad, argmax):
        if np.shape(grad) != np.shape(x):
            raise _invalid(f"grad must have the input's shape {list(np.shape(x))}, got "
                           f"{list(np.shape(grad))}")
        full = _checked_index(_full_index(argmax, x.shape, include_batch), x.size)
        return np.asarray(grad).reshape(-1)[full].reshape(np.shape(argmax))

    return compute
