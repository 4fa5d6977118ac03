"""Plain NumPy references for windowed ops over any number of spatial axes (channels
last): direct per-output-position loops, and adjoints by linearity (each input unit
vector pushed through the reference), slow and obviously right on small shapes."""

from __future__ import annotations

import itertools

import numpy as np


def same_pads(n, k, s, d=1):
    eff = (k - 1) * d + 1
    out = -(-n // s)
    need = max(0, (out - 1) * s + eff - n)
    return out, need // 2, need - need // 2


def geometry(spatial, ksize, strides, dilations, padding):
    outs, pads = [], []
    for n, k, s, d in zip(spatial, ksize, strides, dilations, strict=True):
        if padding == "SAME":
            o, b, a = same_pads(n, k, s, d)
        else:
            o, b, a = (n - ((k - 1) * d + 1)) // s + 1, 0, 0
        outs.append(o)
        pads.append((b, a))
    return outs, pads


def windows(x, ksize, strides, dilations, padding):
    """Yields (output index, list of (tap, input index or None for padding))."""
    outs, pads = geometry(x.shape[1:-1], ksize, strides, dilations, padding)
    for o in itertools.product(*(range(n) for n in outs)):
        taps = []
        for tap in itertools.product(*(range(k) for k in ksize)):
            pos = [oi * s + t * d - p[0] for oi, s, t, d, p in
                   zip(o, strides, tap, dilations, pads, strict=True)]
            inside = all(0 <= q < n for q, n in zip(pos, x.shape[1:-1], strict=True))
            taps.append((tap, tuple(pos) if inside else None))
        yield o, outs, taps


def conv(x, w, strides, padding, dilations=None):
    """x (N, *S, C), w (*K, C, F)."""
    k = w.ndim - 2
    dilations = dilations or (1,) * k
    out = None
    for o, outs, taps in windows(x, w.shape[:k], strides, dilations, padding):
        if out is None:
            out = np.zeros((x.shape[0], *outs, w.shape[-1]), np.float64)
        for tap, pos in taps:
            if pos is not None:
                out[(slice(None), *o)] += x[(slice(None), *pos)] @ w[tap]
    return out


def depthwise(x, w, strides, padding, dilations=None):
    """x (N, H, W, C), w (kh, kw, C, M) -> (N, oh, ow, C*M)."""
    dilations = dilations or (1, 1)
    out = None
    for o, outs, taps in windows(x, w.shape[:2], strides, dilations, padding):
        if out is None:
            out = np.zeros((x.shape[0], *outs, w.shape[2], w.shape[3]), np.float64)
        for tap, pos in taps:
            if pos is not None:
                out[(slice(None), *o)] += x[(slice(None), *pos)][..., None] * w[tap]
    return out.reshape(*out.shape[:-2], -1)


def pool(x, ksize, strides, padding, kind):
    out = None
    for o, outs, taps in windows(x, ksize, strides, (1,) * len(ksize), padding):
        if out is None:
            out = np.zeros((x.shape[0], *outs, x.shape[-1]), np.float64)
        vals = np.stack([x[(slice(None), *pos)] for _, pos in taps if pos is not None])
        out[(slice(None), *o)] = vals.max(0) if kind == "max" else vals.mean(0)
    return out


def adjoint(f, in_shape, dy):
    """J^T dy for a linear f: the input gradient of sum(f(x) * dy)."""
    grad = np.zeros(int(np.prod(in_shape)))
    for i in range(grad.size):
        e = np.zeros(grad.size)
        e[i] = 1.0
        grad[i] = np.sum(f(e.reshape(in_shape)) * dy)
    return grad.reshape(in_shape)
