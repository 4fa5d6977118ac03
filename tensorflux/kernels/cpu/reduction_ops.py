"""CPU kernels of the reductions (tensorflux/ops/reduction_ops.py), in NumPy.

Floating-point exceptions give NaN/inf as in TensorFlow; NumPy's RuntimeWarnings for them are
silenced for this module only (see math_ops.py).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu._math_common import (
    _BLAS_FLOATS,
    _LOW_PRECISION,
    _invalid,
    _is_int,
    _shape_str,
)
from tensorflux.kernels.registry import kernel_factory

warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)
warnings.filterwarnings("ignore", category=np.exceptions.ComplexWarning, module=__name__)


def _axes(x, axes) -> tuple[int, ...]:
    """The reduction axes as a tuple of non-negative ints; TF's errors for bad ones."""
    rank = x.ndim
    out = []
    for a in (axes.tolist() if axes.ndim == 1 else np.reshape(axes, -1).tolist()):
        if not -rank <= a < rank:
            raise _invalid(f"Invalid reduction dimension ({a} for input with {rank} "
                           "dimension(s)")
        a %= rank
        if a in out:
            raise _invalid(f"Invalid reduction arguments: Axes contains duplicate "
                           f"dimension: {a}")
        out.append(a)
    return tuple(out)


def _reduction(reduce, forward_empty: bool = True):
    """A kernel factory for `reduce(x, axes, keepdims) -> array of x's dtype`. With
    `forward_empty`, reducing no axis returns the input itself (as TensorFlow forwards its
    buffer): gradients of broadcasting ops with an unknown batch size sum over an empty
    axis list, and a copy of a big activation costs ~1 ms."""

    def factory(node):
        keepdims = node.attrs["keep_dims"]

        def compute(ctx, x, axes):
            reduced = _axes(x, axes)
            if forward_empty and not reduced and x.ndim:
                return x
            if x.size > _CHUNK_ELEMENTS and x.shape[0] > 1 and 0 not in reduced:
                return _by_rows(ctx, reduce, x, reduced, keepdims)
            if x.size > _CHUNK_ELEMENTS:
                kept = [a for a in range(x.ndim) if a not in reduced and x.shape[a] > 1]
                if kept:
                    return _by_kept_axis(ctx, reduce, x, reduced, keepdims, kept[0])
            return reduce(x, reduced, keepdims)

        return compute

    return factory


# A reduction of more elements than this that keeps axis 0 runs in blocks of rows, checking
# its step between them (kernels/interrupt.py); each row's result is computed exactly as in
# one call. (One that reduces axis 0 is a single pass over an input some kernel already
# allocated under the resource guard: bounded.)
_CHUNK_ELEMENTS = 1 << 24


def _by_rows(ctx, reduce, x, axes, keepdims):
    rows = max(1, _CHUNK_ELEMENTS // max(1, x.size // x.shape[0]))
    parts = []
    for lo in range(0, x.shape[0], rows):
        interrupt.check(ctx)
        parts.append(reduce(x[lo:lo + rows], axes, keepdims))
    return np.concatenate(parts, axis=0)


def _by_kept_axis(ctx, reduce, x, axes, keepdims, k):
    """A reduction over axis 0 (and maybe others) that keeps axis `k`: in blocks of axis
    `k`, the step checked between them. Each output element reduces the same elements as
    in one call (NumPy may add them in another order when the block changes the layout)."""
    index = [slice(None)] * x.ndim
    at = k if keepdims else k - sum(1 for a in axes if a < k)
    per = max(1, _CHUNK_ELEMENTS // max(1, x.size // x.shape[k]))
    parts = []
    for lo in range(0, x.shape[k], per):
        interrupt.check(ctx)
        index[k] = slice(lo, lo + per)
        parts.append(reduce(x[tuple(index)], axes, keepdims))
    return np.concatenate(parts, axis=at)


_ONES: dict = {}  # (length, dtype) -> a read-only vector of ones, for _sum
_ONES_MAX = 1 << 16  # elements of a kept vector, at most
_ONES_KEPT = 64  # vectors kept, at most


def _ones(n: int, dtype) -> np.ndarray:
    """np.ones(n, dtype), kept (read-only) for lengths up to _ONES_MAX: a bias gradient's
    sum runs right after a big kernel, where NumPy's Python-level `ones` costs more than
    the product it feeds."""
    key = (n, dtype)
    v = _ONES.get(key)
    if v is None:
        v = np.ones(n, dtype)
        if n <= _ONES_MAX and len(_ONES) < _ONES_KEPT:
            v.flags.writeable = False
            _ONES[key] = v
    return v


def _sum(x, axes, keepdims):
    lead = len(axes)
    if 0 < lead < x.ndim and x.size >= 1024 and x.dtype in _BLAS_FLOATS and \
            x.flags.c_contiguous:
        total = _sum_by_product(x, axes, keepdims)
        if total is not None:
            return total
    if x.dtype in _LOW_PRECISION:
        return np.add.reduce(x, axes, np.float32, keepdims=keepdims).astype(x.dtype)
    return np.add.reduce(x, axes, x.dtype, keepdims=keepdims)


def _sum_by_product(x, axes, keepdims):
    """A float sum over adjacent axes as a product with a vector of ones (None for other
    axes): x viewed as (outer, reduced, inner), `ones @ rows` over the leading axes (a bias
    gradient: one BLAS gemv, ~7x faster than NumPy's row-by-row reduction over axis 0),
    `rows @ ones` over the trailing axes (many short rows: ~3 us against NumPy's ~12 for
    320 rows of 64), and one stacked product over middle axes (a context vector's weighted
    sum over time: ~4 us against ~10 for 32 blocks of 10 x 64). Over the trailing or middle
    axes only up to _GEMV_ROW_MAX reduced elements: longer rows keep NumPy's pairwise sum,
    whose error grows with log n where a dot product's grows with n."""
    shape = x.shape
    if len(shape) == 2:  # a bias gradient or a row sum: the common case, without the views
        if axes[0] == 0:
            total = _ones(shape[0], x.dtype) @ x
            return total.reshape(1, shape[1]) if keepdims else total
        if shape[1] > _GEMV_ROW_MAX:
            return None
        total = x @ _ones(shape[1], x.dtype)
        return total.reshape(shape[0], 1) if keepdims else total
    first, last = min(axes), max(axes)
    if last - first + 1 != len(axes):
        return None
    outer = math.prod(shape[:first])
    reduced = math.prod(shape[first:last + 1])
    kept = shape[:first] + ((1,) * len(axes) if keepdims else ()) + shape[last + 1:]
    if first == 0:
        return (_ones(reduced, x.dtype) @ x.reshape(reduced, -1)).reshape(kept)
    if reduced > _GEMV_ROW_MAX:
        return None
    if last == x.ndim - 1:
        return (x.reshape(outer, reduced) @ _ones(reduced, x.dtype)).reshape(kept)
    return np.matmul(_ones(reduced, x.dtype), x.reshape(outer, reduced, -1)).reshape(kept)


_GEMV_ROW_MAX = 1024  # elements of a row summed by a gemv, at most


def _prod(x, axes, keepdims):
    if x.dtype in _LOW_PRECISION:
        return np.multiply.reduce(x, axes, np.float32, keepdims=keepdims).astype(x.dtype)
    return np.multiply.reduce(x, axes, x.dtype, keepdims=keepdims)


def _mean(x, axes, keepdims):
    count = 1
    for a in axes:
        count *= x.shape[a]
    if _is_int(x) or x.dtype.kind == "c":
        total = np.add.reduce(x, axes, x.dtype, keepdims=keepdims)
        if count == 0:  # TF: 0 for integers and complex numbers, NaN for real floats
            return np.zeros_like(total)
        if x.dtype.kind == "c":
            return total / x.dtype.type(count)
            return np.zeros_like(total)
        q = np.floor_divide(np.abs(total), x.dtype.type(count))
        return np.asarray(np.where(total < 0, -q, q).astype(x.dtype))
    if x.dtype in _LOW_PRECISION:
        return (np.add.reduce(x, axes, np.float32, keepdims=keepdims) /
                np.float32(count)).astype(x.dtype)
    total = np.add.reduce(x, axes, x.dtype, keepdims=keepdims)
    return total / x.dtype.type(count) if count else total * x.dtype.type(np.nan)


def _extreme(fn, lowest: bool):
    """Max or Min: empty reductions give -inf/inf (floats) or the type's lowest/highest
    value (integers), as TensorFlow's do."""

    def reduce(x, axes, keepdims):
        if x.dtype.kind == "f" or x.dtype in _LOW_PRECISION:
            initial = -np.inf if lowest else np.inf
        elif x.dtype.kind == "b":
            initial = not lowest
        else:
            info = np.iinfo(x.dtype)
            initial = info.min if lowest else info.max
        return fn.reduce(x, axes, keepdims=keepdims, initial=initial)

    return reduce


def _all(x, axes, keepdims):
    return np.logical_and.reduce(x, axes, keepdims=keepdims)


def _any(x, axes, keepdims):
    return np.logical_or.reduce(x, axes, keepdims=keepdims)


def _euclidean_norm(x, axes, keepdims):
    work = x.astype(np.float32) if x.dtype in _LOW_PRECISION else x
    if work.dtype.kind == "c":
        sq = np.sum(np.real(work * np.conj(work)), axis=axes, keepdims=keepdims)
        return np.asarray(np.sqrt(sq).astype(x.dtype))
    sq = np.sum(np.multiply(work, work), axis=axes, keepdims=keepdims, dtype=work.dtype)
    return np.asarray(np.sqrt(sq).astype(x.dtype))


for _op_type, _reduce in (("Sum", _sum), ("Prod", _prod), ("Mean", _mean),
                          ("Max", _extreme(np.maximum, lowest=True)),
                          ("Min", _extreme(np.minimum, lowest=False)), ("All", _all),
                          ("Any", _any)):
    kernel_factory(_op_type, forwards_input=True)(_reduction(_reduce))
kernel_factory("EuclideanNorm")(_reduction(_euclidean_norm, forward_empty=False))  # |x|


def _skip_nan(fn, is_max: bool):
    """TensorFlow's (Eigen's) arg reduction for floats: it keeps the first index whose value
    beats the running best, starting from (0, lowest) for ArgMax ((0, highest) for ArgMin).
    NaN never beats it, so NaN entries are skipped; where nothing beats the start (all NaN,
    or NaN and -inf for ArgMax) the answer is 0. NaN is replaced by -inf (inf), which
    NumPy's first-index argmax then never picks unless every entry is -inf (index 0)."""

    def compute(x, axis):
        if x.dtype.kind != "f" and x.dtype not in _LOW_PRECISION:
            return fn(x, axis=axis)
        nan = np.isnan(x)
        if not nan.any():
            return fn(x, axis=axis)
        inf = np.asarray(-np.inf if is_max else np.inf, x.dtype)
        return fn(np.where(nan, inf, x), axis=axis)

    return compute


@kernel_factory("ArgMax", "ArgMin")
def _arg_reduce(node):
    is_max = node.op == "ArgMax"
    fn = _skip_nan(np.argmax if is_max else np.argmin, is_max)
    out = node.attrs["output_type"].as_numpy_dtype

    def compute(ctx, x, dim):
        if type(dim) is np.ndarray and dim.ndim == 0:
            d = int(dim)
        else:
            d = int(np.reshape(dim, -1)[0]) if np.size(dim) else 0
        rank = x.ndim
        if np.ndim(dim) != 0:
            raise _invalid(f"dim must be a scalar, but received tensor of shape: "
                           f"{_shape_str(np.shape(dim))}")
        if not -rank <= d < rank:
            raise _invalid(f"Expected dimension in the range [{-rank}, {rank}), but got {d}")
        if x.shape[d] == 0:
            raise _invalid(f"Reduction axis {d % rank} is empty in shape "
                           f"{_shape_str(x.shape)}")
        d %= rank
        if x.size <= _CHUNK_ELEMENTS or rank < 2:
            return np.asarray(fn(x, axis=d)).astype(out)
        # In blocks of another axis (the step checked between them): exact, as one call.
        a = 1 if d == 0 else 0  # its blocks are blocks of the output's axis 0
        index = [slice(None)] * rank
        per = max(1, _CHUNK_ELEMENTS // max(1, x.size // x.shape[a]))
        parts = []
        for lo in range(0, x.shape[a], per):
            interrupt.check(ctx)
            index[a] = slice(lo, lo + per)
            parts.append(np.asarray(fn(x[tuple(index)], axis=d)).astype(out))
        return np.concatenate(parts, axis=0)

    return compute
