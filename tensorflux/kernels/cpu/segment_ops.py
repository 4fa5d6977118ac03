"""CPU kernels of the segment reductions (tensorflux/ops/segment_ops.py), in NumPy: each
is one unbuffered `ufunc.at` into an output that starts at the reduction's identity."""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np

from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu._math_common import _LOW_PRECISION, _invalid, _shape_str
from tensorflux.kernels.registry import kernel_factory

warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)


def _work_dtype(dtype):
    return np.dtype(np.float32) if dtype in _LOW_PRECISION else dtype


def _lowest(dtype):
    """The lowest finite value of dtype (TF's numeric_limits<T>::lowest())."""
    dtype = np.dtype(dtype)
    return np.iinfo(dtype).min if dtype.kind in "iu" else ml_dtypes.finfo(dtype).min


def _highest(dtype):
    dtype = np.dtype(dtype)
    return np.iinfo(dtype).max if dtype.kind in "iu" else ml_dtypes.finfo(dtype).max


# reduction -> (ufunc, identity of an empty unsorted segment as fn(dtype))
_REDUCTIONS = {
    "Sum": (np.add, lambda dt: 0),
    "Mean": (np.add, lambda dt: 0),
    "Prod": (np.multiply, lambda dt: 1),
    "Max": (np.maximum, _lowest),
    "Min": (np.minimum, _highest),
}


def _reduce(reduction, data, ids, n, empty_value=None, ctx=None):
    """[n, inner...] reductions of the rows of `data` (flattened to match the flat `ids`,
    all in [0, n)); empty segments give `empty_value` (default: the identity). The rows go
    into `out` in blocks, in order (`interrupt.spans`: the step is checked between them):
    an unbuffered ufunc.at applies them one by one in that order anyway, so the values are
    those of one call."""
    ufunc, identity = _REDUCTIONS[reduction]
    inner = data.shape[ids.ndim:]
    work = _work_dtype(data.dtype)
    rows = data.reshape((ids.size,) + inner).astype(work, copy=False)
    out = np.full((n,) + inner, identity(data.dtype), work)
    flat = ids.reshape(-1)
    for lo, hi in interrupt.spans(flat.size, max(1, rows[0].size) if rows.size else 1, ctx):
        ufunc.at(out, flat[lo:hi], rows[lo:hi])
    if reduction == "Mean" or empty_value is not None:
        counts = np.bincount(flat, minlength=n).reshape((n,) + (1,) * len(inner))
        if reduction == "Mean":
            if work.kind in "iu":  # integer division truncates, as in TensorFlow
                q = np.abs(out) // np.maximum(counts, 1)
                out = np.where(counts > 0, np.where(out < 0, -q, q), 0)
            else:
                out = out / np.maximum(counts, 1)
        if empty_value is not None:
            out = np.where(counts > 0, out, empty_value)
    return out.astype(data.dtype)


def _sorted_segment(reduction):
    def factory(node):
        def compute(ctx, data, ids):
            if ids.ndim != 1:
                raise _invalid(f"segment_ids should be a vector but received shape "
                               f"{_shape_str(ids.shape)}")
            if data.ndim < 1 or data.shape[0] != ids.size:
                raise _invalid(f"segment_ids should be the same size as dimension 0 of input."
                               f" data.shape = {_shape_str(data.shape)}, segment_ids.shape = "
                               f"{_shape_str(ids.shape)}")
            if ids.size and (ids[0] < 0 or np.any(np.diff(ids) < 0)):
                k = int(np.argmax(np.diff(ids) < 0)) + 1 if ids[0] >= 0 else 0
                raise _invalid(f"segment ids are not increasing or are negative: "
                               f"segment_ids[{k}] = {int(ids[k])}")
            n = int(ids[-1]) + 1 if ids.size else 0
            empty = None if reduction in ("Sum", "Mean", "Prod") else 0
            return _reduce(reduction, data, ids, n, empty, ctx)

        return compute

    return factory


def _unsorted_segment(reduction):
    def factory(node):
        def compute(ctx, data, ids, num_segments):
            n = int(num_segments)
            if n < 0:
                raise _invalid(f"num_segments must be non-negative, got {n}")
            if ids.shape != data.shape[:ids.ndim]:
                raise _invalid(f"data.shape = {_shape_str(data.shape)} does not start with "
                               f"segment_ids.shape = {_shape_str(ids.shape)}")
            flat = ids.reshape(-1)
            if np.any(flat >= n):
                i = int(np.argmax(flat >= n))
                raise _invalid(f"segment_ids[{i}] = {int(flat[i])} is out of range [0, {n})")
            keep = flat >= 0
            inner = data.shape[ids.ndim:]
            rows = data.reshape((flat.size,) + inner)
            if not np.all(keep):
                rows, flat = rows[keep], flat[keep]
            return _reduce(reduction, rows, flat, n, ctx=ctx)

        return compute

    return factory


for _r in ("Sum", "Mean", "Max", "Min", "Prod"):
    kernel_factory(f"Segment{_r}")(_sorted_segment(_r))
for _r in ("Max", "Min", "Prod"):
    kernel_factory(f"UnsortedSegment{_r}")(_unsorted_segment(_r))
