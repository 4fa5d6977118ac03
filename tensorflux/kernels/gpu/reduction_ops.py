"""GPU kernels of the reductions (ops/reduction_ops.py). The axes input stays on the host
(TensorFlow's HostMemory("reduction_indices")); the data reduce on the device."""

from __future__ import annotations

import numpy as np

from tensorflux.kernels.cpu._nn_common import _invalid
from tensorflux.kernels.gpu import _fused, backend
from tensorflux.kernels.gpu._common import FLOATS, NUMERIC, host, hybrid


def _axes(axis, rank: int) -> tuple:
    axes = [int(a) for a in np.reshape(host(axis), -1)]
    for a in axes:
        if not -rank <= a < max(rank, 1):
            raise _invalid(f"Invalid reduction dimension ({a} for input with {rank} "
                           "dimension(s)")
    return tuple(sorted({a % rank for a in axes})) if rank else ()


def _reduction(fn):
    def factory(node):
        keep = node.attrs.get("keep_dims", False)

        def compute(ctx, x, axis):
            x = backend.to_device(x)
            return fn(backend.xp(), x, _axes(axis, x.ndim), keep)

        return compute

    return factory


def _mean(xp, x, axes, keep):
    if x.dtype == np.float16:
        return xp.mean(x, axis=axes, dtype=np.float32, keepdims=keep).astype(x.dtype)
    if x.dtype.kind in "iu":
        count = int(np.prod([x.shape[a] for a in axes])) if axes else 1
        total = xp.sum(x, axis=axes, dtype=x.dtype, keepdims=keep)
        return (total // max(count, 1)).astype(x.dtype)
    return xp.mean(x, axis=axes, keepdims=keep)


def _sum(xp, x, axes, keep):
    if axes and axes == tuple(range(len(axes))) and len(axes) < x.ndim and \
            x.dtype in (np.float32, np.float64) and x.size:
        # Leading axes (bias gradients, broadcast reductions): column sums in one pass,
        # far faster on a GPU than the array module's reduction over a non-last axis.
        rest = x.shape[len(axes):]
        x2 = xp.ascontiguousarray(x).reshape(-1, int(np.prod(rest)))
        out = _fused.column_sum(x2)
        if out is not None:
            out = out.reshape(rest)
            return out.reshape((1,) * len(axes) + rest) if keep else out
    acc = np.float32 if x.dtype == np.float16 else x.dtype
    return xp.sum(x, axis=axes, dtype=acc, keepdims=keep).astype(x.dtype, copy=False)


def _prod(xp, x, axes, keep):
    return xp.prod(x, axis=axes, dtype=x.dtype, keepdims=keep)


def _max(xp, x, axes, keep):
    return xp.max(x, axis=axes, keepdims=keep) if x.size else \
        xp.full([1 if i in axes else d for i, d in enumerate(x.shape)] if keep else
                [d for i, d in enumerate(x.shape) if i not in axes], -np.inf, x.dtype)


def _min(xp, x, axes, keep):
    return xp.min(x, axis=axes, keepdims=keep) if x.size else \
        xp.full([1 if i in axes else d for i, d in enumerate(x.shape)] if keep else
                [d for i, d in enumerate(x.shape) if i not in axes], np.inf, x.dtype)


for _op, _fn, _types in (("Sum", _sum, NUMERIC), ("Mean", _mean, NUMERIC),
                         ("Prod", _prod, NUMERIC), ("Max", _max, FLOATS),
                         ("Min", _min, FLOATS)):
    hybrid(_op, _reduction(_fn), {"T": _types})

hybrid("All", _reduction(lambda xp, x, axes, keep: xp.all(x, axis=axes, keepdims=keep)))
hybrid("Any", _reduction(lambda xp, x, axes, keep: xp.any(x, axis=axes, keepdims=keep)))


def _arg(node):
    is_max = node.op == "ArgMax"
    out = node.attrs["output_type"].as_numpy_dtype

    def compute(ctx, x, dim):
        x = backend.to_device(x)
        d = int(np.reshape(host(dim), -1)[0])
        if not -x.ndim <= d < x.ndim:
            raise _invalid(f"Expected dimension in the range [{-x.ndim}, {x.ndim}), but got "
                           f"{d}")
        if x.shape[d] == 0:
            raise _invalid(f"Reduction axis {d % x.ndim} is empty in shape {list(x.shape)}")
        xp = backend.xp()
        if x.dtype.kind == "f":  # NaN never wins (see the CPU kernel)
            x = xp.where(xp.isnan(x), x.dtype.type(-np.inf if is_max else np.inf), x)
        return (xp.argmax if is_max else xp.argmin)(x, axis=d).astype(out)

    return compute


hybrid("ArgMax", _arg, {"T": NUMERIC})
hybrid("ArgMin", _arg, {"T": NUMERIC})
