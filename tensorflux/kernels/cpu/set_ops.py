"""CPU kernels of the set ops (tensorflux/ops/set_ops.py), in NumPy."""

from __future__ import annotations

import numpy as np

from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu._math_common import _invalid, _shape_str
from tensorflux.kernels.registry import kernel, kernel_factory

_SET_FUNCTIONS = {
    "a-b": lambda a, b: np.setdiff1d(a, b),
    "b-a": lambda a, b: np.setdiff1d(b, a),
    "intersection": np.intersect1d,
    "union": np.union1d,
}


@kernel_factory("DenseToDenseSetOperation")
def _dense_to_dense_set_operation(node):
    operation = node.attrs["set_operation"]
    if operation not in _SET_FUNCTIONS:
        raise _invalid(f"Invalid set_operation {operation}.")
    fn = _SET_FUNCTIONS[operation]

    def compute(ctx, a, b):
        if a.ndim < 2 or a.shape[:-1] != b.shape[:-1]:
            raise _invalid(f"Shapes {_shape_str(a.shape)} and {_shape_str(b.shape)} must "
                           f"have rank >= 2 and match but for the last dimension")
        batch = a.shape[:-1]
        rows_a = a.reshape(-1, a.shape[-1])
        rows_b = b.reshape(-1, b.shape[-1])
        every = max(1, interrupt.EACH_EVERY // max(1, a.shape[-1] + b.shape[-1]))
        results = [fn(x, y) for x, y in interrupt.each(ctx, zip(rows_a, rows_b, strict=True),
                                                        every, count=len(rows_a))]
        lengths = np.array([len(r) for r in results], np.int64)
        width = int(lengths.max(initial=0))
        # Row r's j-th value sits at (r's batch index..., j).
        row = np.repeat(np.arange(len(results)), lengths)
        starts = np.cumsum(lengths) - lengths
        column = np.arange(row.size, dtype=np.int64) - np.repeat(starts, lengths)
        idx = np.stack([*np.unravel_index(row, batch), column], 1).astype(np.int64) \
            .reshape(-1, a.ndim)
        vals = np.concatenate(results).astype(a.dtype) if results else np.zeros([0], a.dtype)
        return idx, vals, np.asarray(list(batch) + [width], np.int64)

    return compute


@kernel("SetSize")
def _set_size(ctx, indices, values, shape):
    if shape.size < 2:
        raise _invalid(f"Invalid set shape {_shape_str(shape)}: rank must be >= 2")
    batch = tuple(int(d) for d in shape[:-1])
    out = np.zeros(batch, np.int32)
    rows: dict[tuple, set] = {}
    for index, value in zip(indices.tolist(), values.tolist(), strict=True):
        rows.setdefault(tuple(index[:-1]), set()).add(value)
    for row, members in rows.items():
        out[row] = len(members)
    return out
