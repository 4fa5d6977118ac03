"""CPU kernels of the comparisons, logical ops and selection (tensorflux/ops/comparison_ops.py),
in NumPy.
"""

from __future__ import annotations

import warnings

import numpy as np

from tensorflux.kernels import interrupt, intra_op
from tensorflux.kernels.cpu import native
from tensorflux.kernels.cpu._math_common import (
    _binary,
    _broadcastable,
    _incompatible,
    _invalid,
    _shape_str,
    _unary,
)
from tensorflux.kernels.registry import kernel, kernel_factory

warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)

_COMPARISONS = {
    "Less": np.less, "LessEqual": np.less_equal, "Greater": np.greater,
    "GreaterEqual": np.greater_equal, "LogicalAnd": np.logical_and,
    "LogicalOr": np.logical_or,
}

for _op_type, _fn in _COMPARISONS.items():
    kernel(_op_type)(_binary(_fn))
kernel("LogicalNot")(_unary(np.logical_not))


@kernel_factory("Equal", "NotEqual")
def _equality(node):
    fn = np.equal if node.op == "Equal" else np.not_equal
    strict = node.attrs.get("incompatible_shape_error", True)

    def compute(ctx, x, y):
        if not _broadcastable(x, y):
            if strict:
                raise _incompatible(x, y)
            return np.asarray(node.op != "Equal")
        if x.dtype == object:
            return np.asarray(fn(x, y), dtype=bool)
        return fn(x, y)

    return compute


# np.where branches per element: on a random mask (dropout's keep mask, its gradient)
# [128, 25, 512] float32 took 6.7 ms. Picking bits instead, e ^ ((t ^ e) & mask) with the
# mask all ones where c holds, is branch-free (1.2 ms; 0.5 ms as t & mask when e is a
# scalar 0) and gives np.where's values bit for bit (NaN payloads and signed zeros too).
_BITS_MIN_ELEMENTS = 1 << 12
_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


_NATIVE_MIN_ELEMENTS = 64  # below, np.where costs no more than the C call's checks


def _select_values(c: np.ndarray, t: np.ndarray, e: np.ndarray, parts: int = 1) -> np.ndarray:
    """np.where(c, t, e) for t, e of one dtype, broadcast against c and each other
    (ValueError when they do not broadcast); in C (`native.select`, `parts` workers) when
    t and e are of c's shape or single elements."""
    c, t, e = np.asarray(c), np.asarray(t), np.asarray(e)
    if c.size >= _NATIVE_MIN_ELEMENTS:
        out = native.select(c, t, e, parts)
        if out is not None:
            return out
    unsigned = _UNSIGNED.get(t.dtype.itemsize)
    if unsigned is None or c.dtype != np.bool_ or e.dtype != t.dtype or \
            t.dtype.kind not in "biuf" or max(c.size, t.size, e.size) < _BITS_MIN_ELEMENTS:
        return np.where(c, t, e)
    shape = np.broadcast_shapes(c.shape, t.shape, e.shape)
    mask = np.negative(c.view(np.uint8), dtype=unsigned)  # 0 or all ones
    tb, eb = t.view(unsigned), e.view(unsigned)
    if eb.ndim == 0 and not eb:  # where(c, x, 0): dropout's select and its gradient
        out = np.bitwise_and(tb, mask)
    elif tb.ndim == 0 and not tb:
        out = np.bitwise_and(eb, np.invert(mask))
    else:
        out = np.bitwise_xor(tb, eb)
        if out.shape == shape:
            np.bitwise_and(out, mask, out=out)
        else:
            out = np.bitwise_and(out, mask)
        np.bitwise_xor(out, eb, out=out)
    return out.view(t.dtype)


@kernel("Select")
def _select(ctx, c, t, e):
    if t.shape != e.shape:
        raise _invalid("'then' and 'else' must have the same size.  but received: "
                       f"{_shape_str(t.shape)} vs. {_shape_str(e.shape)}")
    if c.ndim == 0:
        return np.where(c, t, e)
    if c.ndim == 1 and t.ndim > 1:
        if c.shape[0] != t.shape[0]:
            raise _invalid("Number of batches of 'then' must match size of 'cond', but saw: "
                           f"{t.shape[0]} vs. {c.shape[0]}")
        return _select_values(c.reshape(c.shape + (1,) * (t.ndim - 1)), t, e)
    if c.shape != t.shape:
        raise _invalid("Inputs to operation Select of type Select must have the same size and "
                       f"shape.  Input 0: {_shape_str(c.shape)} != input 1: "
                       f"{_shape_str(t.shape)}")
    return _select_values(c, t, e, _parts(ctx, c))


def _parts(ctx, c: np.ndarray) -> int:
    return intra_op.workers(ctx) if c.size >= intra_op.MIN_ELEMENTS else 1


@kernel("SelectV2")
def _select_v2(ctx, c, t, e):
    try:
        return _select_values(c, t, e, _parts(ctx, np.asarray(c)))
    except ValueError:
        raise _invalid(f"condition {_shape_str(c.shape)}, then {_shape_str(t.shape)}, and "
                       f"else {_shape_str(e.shape)} must be broadcastable") from None


@kernel("Where")
def _where(ctx, x):
    if x.ndim == 0:  # TF's kernel takes ranks 1 to 8 only
        raise _invalid("WhereOp : Unhandled input dimensions: 0")
    if x.size <= interrupt.SPAN_ELEMENTS or x.shape[0] <= 1:
        return np.argwhere(x).astype(np.int64, copy=False)
    # In blocks of axis 0 (the step checked between them): row-major order, as one call.
    parts = []
    for lo, hi in interrupt.spans(x.shape[0], x.size // x.shape[0], ctx):
        part = np.argwhere(x[lo:hi]).astype(np.int64, copy=False)
        part[:, 0] += lo
        parts.append(part)
    return np.concatenate(parts)
