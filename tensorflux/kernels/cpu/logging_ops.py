"""CPU kernel of Assert (tensorflux/ops/logging_ops.py), formatting data the way
TensorFlow's `Tensor::SummarizeValue` does: at most `summarize` entries, nested brackets for
ranks above 1, "..." where entries were left out."""

from __future__ import annotations

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels.registry import kernel_factory


def _element(x) -> str:
    if isinstance(x, bytes):
        return x.decode("utf-8", "replace")
    if isinstance(x, (np.floating, float)):
        return f"{float(x):.6g}"
    if isinstance(x, (np.bool_, bool)):
        return "1" if x else "0"
    return str(x)


def _print_dim(dim: int, shape, limit: int, flat, pos: list, out: list) -> None:
    """TensorFlow's PrintOneDim: entries of dimension `dim` onwards, stopping at `limit`."""
    if pos[0] >= limit:
        return
    if dim == len(shape) - 1:
        for i in range(shape[dim]):
            if pos[0] >= limit:
                if dim != 0:
                    out.append("...")
                return
            if i > 0:
                out.append(" ")
            out.append(_element(flat[pos[0]]))
            pos[0] += 1
        return
    for _ in range(shape[dim]):
        opened = pos[0] < limit
        if opened:
            out.append("[")
        _print_dim(dim + 1, shape, limit, flat, pos, out)
        if pos[0] < limit or opened:
            out.append("]")


def summarize(value, max_entries: int) -> str:
    """A tensor's value as TensorFlow prints it in messages (`SummarizeValue`)."""
    a = np.asarray(value)
    flat = a.reshape(-1)
    limit = min(max_entries, flat.size) if max_entries >= 0 else flat.size
    if a.ndim == 0:
        text = " ".join(_element(x) for x in flat[:limit])
    else:
        out: list[str] = []
        _print_dim(0, a.shape, limit, flat, [0], out)
        text = "".join(out)
    return text + ("..." if flat.size > limit else "")


@kernel_factory("Assert")
def _assert(node):
    n = node.attrs["summarize"]

    def compute(ctx, condition, *data):
        cond = np.asarray(condition)
        if cond.ndim != 0:
            raise errors.InvalidArgumentError(
                None, None, "In[0] should be a scalar: [" + ",".join(map(str, cond.shape)) + "]")
        if bool(cond):
            return None
        parts = " ".join(f"[{summarize(d, n)}]" for d in data)
        raise errors.InvalidArgumentError(None, None, f"assertion failed: {parts}")

    return compute
