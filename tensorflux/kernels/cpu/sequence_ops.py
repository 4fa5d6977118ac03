"""CPU kernels of the sequence ops (tensorflux/ops/sequence_ops.py), in NumPy: Range,
Cumsum, Cumprod, UnsortedSegmentSum, BroadcastGradientArgs.

Floating-point exceptions give NaN/inf as in TensorFlow; NumPy's RuntimeWarnings for them are
silenced for this module only (see math_ops.py).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from tensorflux.framework import resource_guard
from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu._math_common import _LOW_PRECISION, _invalid, _shape_str
from tensorflux.kernels.registry import kernel, kernel_factory

warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)
warnings.filterwarnings("ignore", category=np.exceptions.ComplexWarning, module=__name__)


@kernel_factory("Range")
def _range(node):
    dt = node.attrs["Tidx"].as_numpy_dtype

    def compute(ctx, start, limit, delta):
        for name, v in (("start", start), ("limit", limit), ("delta", delta)):
            if np.ndim(v) != 0:
                raise _invalid(f"{name} must be a scalar, not shape {_shape_str(np.shape(v))}")
        s, l, d = start.item(), limit.item(), delta.item()
        if d == 0:
            raise _invalid(f"Requires delta != 0: {d}")
        if d > 0 and s > l:
            raise _invalid(f"Requires start <= limit when delta > 0: {s}/{l}")
        if d < 0 and s < l:
            raise _invalid(f"Requires start >= limit when delta < 0: {s}/{l}")
        if isinstance(s, int):
            size = -(-abs(l - s) // abs(d))
            resource_guard.check_elements(size, dt, ctx)
            if not interrupt.blocked(size * np.dtype(dt).itemsize):
                return np.arange(s, l, d, dtype=dt)
            out = np.empty(size, dt)  # in blocks that check the step between them
            for lo, hi in interrupt.flat_spans(ctx, size, out.itemsize):
                out[lo:hi] = np.arange(s + lo * d, l if hi == size else s + hi * d, d,
                                       dtype=dt)
            return out
        # The size is computed in T, as TF does: in float32 (0.3 - 0) / 0.1 is exactly 3.
        work = np.float32 if np.dtype(dt) in _LOW_PRECISION else dt
        size = abs(float((limit.astype(work) - start.astype(work)) / delta.astype(work)))
        if not size <= 2**63 - 1:
            raise _invalid(f"Requires ((limit - start) / delta) <= {2**63 - 1}")
        size = int(math.ceil(size))
        resource_guard.check_elements(size, dt, ctx)
        first, step = np.asarray(s, work), np.asarray(d, work)
        if not interrupt.blocked(size * np.dtype(work).itemsize):
            return (first + np.arange(size, dtype=work) * step).astype(dt, copy=False)
        out = np.empty(size, dt)  # in blocks: arange's i in `work` is i rounded once
        for lo, hi in interrupt.flat_spans(ctx, size, np.dtype(work).itemsize):
            out[lo:hi] = first + np.arange(lo, hi, dtype=np.int64).astype(work) * step
        return out

    return compute


def _cumulative(ufunc, identity):
    def factory(node):
        exclusive, reverse = node.attrs["exclusive"], node.attrs["reverse"]

        def compute(ctx, x, axis):
            if np.ndim(axis) != 0:
                raise _invalid(f"axis must be a scalar, but received tensor of shape: "
                               f"{_shape_str(np.shape(axis))}")
            a = int(axis)
            if not -x.ndim <= a < x.ndim:
                raise _invalid(f"axis must be in range [{-x.ndim}, {x.ndim}), but got {a}")
            a %= x.ndim
            work = x.astype(np.float32) if x.dtype in _LOW_PRECISION else x
            if reverse:
                work = np.flip(work, a)
            out = _accumulate(ctx, ufunc, work, a)
            if exclusive and out.shape[a]:  # nothing to shift along an empty axis
                out = np.roll(out, 1, axis=a)
                index = [slice(None)] * x.ndim
                index[a] = 0
                out[tuple(index)] = identity
            if reverse:
                out = np.flip(out, a)
            return np.ascontiguousarray(out).astype(x.dtype, copy=False)

        return compute

    return factory


def _accumulate(ctx, ufunc, work, a):
    """ufunc.accumulate(work, axis=a) in blocks of axis 0, the step checked between them
    (kernels/interrupt.py). Along another axis the blocks are independent; along axis 0
    each block after the first starts from the previous block's last row, combined with
    its own first row as the one call combines them, so the values are the same."""
    if work.ndim == 0 or work.size <= interrupt.SPAN_ELEMENTS:
        return ufunc.accumulate(work, axis=a, dtype=work.dtype)
    out = np.empty(work.shape, work.dtype)
    for lo, hi in interrupt.spans(work.shape[0], work.size // max(1, work.shape[0]), ctx):
        if a or not lo:
            ufunc.accumulate(work[lo:hi], axis=a, dtype=work.dtype, out=out[lo:hi])
            continue
        block = work[lo:hi].copy()
        ufunc(out[lo - 1], block[0], out=block[0])
        ufunc.accumulate(block, axis=0, dtype=work.dtype, out=out[lo:hi])
    return out


kernel_factory("Cumsum")(_cumulative(np.add, 0))
kernel_factory("Cumprod")(_cumulative(np.multiply, 1))


@kernel("UnsortedSegmentSum")
def _unsorted_segment_sum(ctx, data, ids, num_segments):
    n = int(num_segments)
    if ids.shape != data.shape[:ids.ndim]:
        raise _invalid(f"data.shape = {_shape_str(data.shape)} does not start with "
                       f"segment_ids.shape = {_shape_str(ids.shape)}")
    flat_ids = ids.reshape(-1)
    bad = flat_ids >= n
    if np.any(bad):
        i = int(np.argmax(bad))
        index = np.unravel_index(i, ids.shape) if ids.ndim > 1 else (i,)
        where = ",".join(str(int(k)) for k in index)
        raise _invalid(f"segment_ids[{where}] = {int(flat_ids[i])} is out of range "
                       f"[0, {n})")
    inner = data.shape[ids.ndim:]
    work = np.float32 if data.dtype in _LOW_PRECISION else data.dtype
    out = np.zeros((n,) + inner, work)
    rows = data.reshape((flat_ids.size,) + inner)
    keep = flat_ids >= 0
    if not np.all(keep):
        rows, flat_ids = rows[keep], flat_ids[keep]
    # In blocks, in order (the step is checked between them): the values of one np.add.at.
    for lo, hi in interrupt.spans(flat_ids.size, max(1, math.prod(inner)), ctx):
        np.add.at(out, flat_ids[lo:hi], rows[lo:hi])
    return out.astype(data.dtype, copy=False)


@kernel("BroadcastGradientArgs")
def _broadcast_gradient_args(ctx, s0, s1):
    x, y = s0.tolist(), s1.tolist()
    dt = s0.dtype
    if x == y:
        empty = np.zeros([0], dt)
        return empty, empty.copy()
    n = max(len(x), len(y))
    px = [1] * (n - len(x)) + x
    py = [1] * (n - len(y)) + y
    for a, b in zip(px, py, strict=True):
        if a != b and a != 1 and b != 1:
            raise _invalid(f"Incompatible shapes: {_shape_str(x)} vs. {_shape_str(y)}")
    r0 = [i for i, d in enumerate(px) if d == 1]
    r1 = [i for i, d in enumerate(py) if d == 1]
    return np.asarray(r0, dt), np.asarray(r1, dt)
