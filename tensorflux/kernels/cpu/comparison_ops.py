"""CPU kernels of the comparisons, logical ops and selection (tensorflux/ops/comparison_ops.py),
in NumPy.
"""

from __future__ import annotations

import warnings

import numpy as np

from tensorflux.kernels import interrupt
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
        return np.where(c.reshape(c.shape + (1,) * (t.ndim - 1)), t, e)
    if c.shape != t.shape:
        raise _invalid("Inputs to operation Select of type Select must have the same size and "
                       f"shape.  Input 0: {_shape_str(c.shape)} != input 1: "
                       f"{_shape_str(t.shape)}")
    return np.where(c, t, e)


@kernel("SelectV2")
def _select_v2(ctx, c, t, e):
    try:
        return np.where(c, t, e)
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
