"""CPU kernels of tensorflux/ops/math_ext_ops.py, in NumPy: Einsum, CumulativeLogsumexp,
LinSpace, Bincount, HistogramFixedWidth, LowerBound/UpperBound, LeftShift/RightShift,
Bucketize."""

from __future__ import annotations

import math
import warnings

import numpy as np

from tensorflux.framework import resource_guard
from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu._math_common import (
    _LOW_PRECISION,
    _binary,
    _invalid,
    _shape_str,
)
from tensorflux.kernels.registry import kernel, kernel_factory

warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)


def _work(x):
    return x.astype(np.float32) if x.dtype in _LOW_PRECISION else x


def _einsum_work(equation: str, xs) -> float:
    """Multiply-adds of a naive einsum (the product of the sizes of its labels and of the
    broadcast `...`): above interrupt.CHUNK_FLOPS it runs as interrupt.abandonable."""
    sizes: dict = {}
    ellipsis = 1
    for term, x in zip(equation.split("->")[0].split(","), xs, strict=False):
        term = term.strip()
        if "..." in term:
            pre, post = term.split("...", 1)
            ellipsis = max(ellipsis, math.prod(x.shape[len(pre):x.ndim - len(post)]))
            dims = list(zip(pre, x.shape, strict=False)) + \
                list(zip(post, x.shape[x.ndim - len(post):], strict=False))
        else:
            dims = list(zip(term, x.shape, strict=False))
        for label, dim in dims:
            sizes[label] = max(sizes.get(label, 1), dim)
    return float(math.prod(sizes.values())) * ellipsis


@kernel_factory("Einsum", expensive=True)
def _einsum(node):
    equation = node.attrs["equation"]

    def compute(ctx, *xs):
        try:
            out = interrupt.abandonable(np.einsum, equation, *[_work(x) for x in xs],
                                        optimize=len(xs) > 2, work=_einsum_work(equation, xs))
        except ValueError as e:
            raise _invalid(f"Einsum {equation!r} on shapes "
                           f"{', '.join(_shape_str(x.shape) for x in xs)}: {e}") from None
        return np.asarray(out).astype(xs[0].dtype, copy=False)

    return compute


@kernel_factory("CumulativeLogsumexp")
def _cumulative_logsumexp(node):
    exclusive, reverse = node.attrs["exclusive"], node.attrs["reverse"]

    def compute(ctx, x, axis):
        if np.ndim(axis) != 0:
            raise _invalid(f"axis must be a scalar, but received tensor of shape: "
                           f"{_shape_str(np.shape(axis))}")
        a = int(axis)
        if not -x.ndim <= a < x.ndim:
            raise _invalid(f"axis must be in range [{-x.ndim}, {x.ndim}), but got {a}")
        a %= x.ndim
        work = _work(x)
        if reverse:
            work = np.flip(work, a)
        out = np.logaddexp.accumulate(work, axis=a)
        if exclusive and out.shape[a]:
            out = np.roll(out, 1, axis=a)
            index = [slice(None)] * x.ndim
            index[a] = 0
            out[tuple(index)] = -np.inf
        if reverse:
            out = np.flip(out, a)
        return np.ascontiguousarray(out).astype(x.dtype, copy=False)

    return compute


@kernel("LinSpace")
def _lin_space(ctx, start, stop, num):
    for name, v in (("start", start), ("stop", stop), ("num", num)):
        if np.ndim(v) != 0:
            raise _invalid(f"{name} must be a scalar, not shape {_shape_str(np.shape(v))}")
    n = int(num)
    if n <= 0:
        raise _invalid(f"Requires num > 0: {n}")
    work = np.float32 if start.dtype in _LOW_PRECISION else start.dtype
    resource_guard.check_elements(n, work, ctx)
    first, last = start.astype(work), stop.astype(work)
    if not interrupt.blocked(n * np.dtype(work).itemsize):
        out = np.linspace(first, last, n, dtype=work)
        return out.astype(start.dtype, copy=False)
    # In blocks that check the step: np.linspace's arithmetic (i * step + first in the
    # result type, or i / (n - 1) * delta when the step underflows; the last value exact).
    dt = np.result_type(first, last, float(n))
    delta = np.subtract(last, first, dtype=dt)
    step = delta / (n - 1)
    out = np.empty(n, start.dtype)
    for lo, hi in interrupt.flat_spans(ctx, n, np.dtype(dt).itemsize):
        i = np.arange(lo, hi, dtype=np.int64).astype(dt)  # arange's values, rounded once
        y = i * step if step != 0 else i / (n - 1) * delta
        y += first
        out[lo:hi] = y
    out[-1] = last
    return out


@kernel_factory("Bucketize")
def _bucketize(node):
    bounds = np.asarray(node.attrs["boundaries"], dtype=np.float64)
    if np.any(np.diff(bounds) < 0):
        raise _invalid("Expected sorted boundaries")

    def compute(ctx, x):
        return np.searchsorted(bounds, np.asarray(x, np.float64), side="right").astype(
            np.int32)
    return compute


@kernel("Bincount")
def _bincount(ctx, arr, size, weights):
    n = int(size)
    if n < 0:
        raise _invalid(f"size ({n}) must be non-negative")
    if arr.size and arr.min() < 0:
        raise _invalid("Input arr must be non-negative!")
    flat = arr.reshape(-1)
    keep = flat < n
    if weights.size:
        if weights.shape != arr.shape:
            raise _invalid(f"weights must have the same shape as arr: "
                           f"{_shape_str(weights.shape)} vs. {_shape_str(arr.shape)}")
        w = weights.reshape(-1)[keep]
        return np.bincount(flat[keep], w.astype(np.float64), minlength=n)[:n] \
            .astype(weights.dtype)
    return np.bincount(flat[keep], minlength=n)[:n].astype(weights.dtype)


@kernel_factory("HistogramFixedWidth")
def _histogram_fixed_width(node):
    out_dtype = node.attrs["dtype"].as_numpy_dtype

    def compute(ctx, values, value_range, nbins):
        n = int(nbins)
        if n <= 0:
            raise _invalid(f"nbins should be a positive number, but got '{n}'")
        lo, hi = (float(v) for v in value_range.reshape(-1)[:2])
        if not lo < hi:
            raise _invalid(f"value_range should satisfy value_range[0] < value_range[1], "
                           f"but got '[{lo}, {hi}]'")
        v = values.reshape(-1).astype(np.float64)
        idx = np.clip(np.floor((v - lo) / (hi - lo) * n), 0, n - 1).astype(np.int64)
        return np.bincount(idx, minlength=n).astype(out_dtype)

    return compute


def _bound(side):
    def factory(node):
        out_type = node.attrs["out_type"].as_numpy_dtype

        def compute(ctx, sorted_inputs, values):
            if sorted_inputs.ndim != 2 or values.ndim != 2 or \
                    sorted_inputs.shape[0] != values.shape[0]:
                raise _invalid(f"Leading dim_size of both tensors must match: "
                               f"{_shape_str(sorted_inputs.shape)} vs. "
                               f"{_shape_str(values.shape)}")
            out = np.empty(values.shape, out_type)
            for i in range(values.shape[0]):
                out[i] = np.searchsorted(sorted_inputs[i], values[i], side=side)
            return out

        return compute

    return factory


kernel_factory("LowerBound")(_bound("left"))
kernel_factory("UpperBound")(_bound("right"))


def _shift(fn):
    def shift(x, y):
        bits = np.dtype(x.dtype).itemsize * 8
        return fn(x, np.clip(y, 0, bits - 1).astype(x.dtype)).astype(x.dtype, copy=False)

    return shift


kernel("LeftShift")(_binary(_shift(np.left_shift)))
kernel("RightShift")(_binary(_shift(np.right_shift)))


@kernel("Roll")
def _roll(ctx, x, shift, axis):
    shifts, axes = np.reshape(shift, [-1]), np.reshape(axis, [-1])
    if shifts.shape != axes.shape:
        raise _invalid(f"shift and axis must have the same size: {shifts.size} vs. "
                       f"{axes.size}")
    for a in axes:
        if not -x.ndim <= a < x.ndim:
            raise _invalid(f"axis {int(a)} is out of range for a tensor of rank {x.ndim}")
    if not shifts.size:
        return x
    return np.roll(x, tuple(int(s) for s in shifts), tuple(int(a) for a in axes))
