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


def _set_function(node):
    operation = node.attrs["set_operation"]
    if operation not in _SET_FUNCTIONS:
        raise _invalid(f"Invalid set_operation {operation}.")
    return _SET_FUNCTIONS[operation]


def _dense_rows(x) -> tuple[tuple, list]:
    """(batch shape, one array of members per row) of a dense set operand."""
    if x.ndim < 2:
        raise _invalid(f"Invalid set rank {x.ndim}: rank must be >= 2")
    return x.shape[:-1], list(x.reshape(-1, x.shape[-1]))


def _sparse_rows(indices, values, shape, validate: bool) -> tuple[tuple, list]:
    """(batch shape, one array of members per row) of a sparse set operand: its indices in
    bounds and, with `validate`, in row-major order without repeats (TF's messages)."""
    if shape.ndim != 1 or shape.size < 2:
        raise _invalid(f"Invalid set shape {_shape_str(shape)}: rank must be >= 2")
    if indices.ndim != 2 or indices.shape != (values.size, shape.size):
        raise _invalid(f"Invalid indices {_shape_str(indices.shape)} for values "
                       f"{_shape_str(values.shape)} and shape {_shape_str(shape.shape)}")
    dims = shape.tolist()
    bad = np.flatnonzero(((indices < 0) | (indices >= shape)).any(axis=1))
    if bad.size:
        i = int(bad[0])
        raise _invalid(f"indices[{i}] = [{','.join(map(str, indices[i].tolist()))}] is out "
                       f"of bounds: need 0 <= index < [{','.join(map(str, dims))}]")
    if validate and len(indices) > 1:
        _check_order(indices, dims)
    batch = tuple(dims[:-1])
    flat = np.ravel_multi_index(indices[:, :-1].T, batch) if len(indices) else \
        np.zeros(0, np.int64)
    order = np.argsort(flat, kind="stable")
    bounds = np.searchsorted(flat[order], np.arange(int(np.prod(batch)) + 1))
    members = values[order]
    return batch, [members[bounds[r]:bounds[r + 1]] for r in range(len(bounds) - 1)]


def _check_order(indices, dims) -> None:
    keys = np.ravel_multi_index(indices.T, dims)
    step = np.diff(keys)
    bad = np.flatnonzero(step <= 0)
    if bad.size:
        i = int(bad[0]) + 1
        at = ",".join(map(str, indices[i].tolist()))
        if step[i - 1] == 0:
            raise _invalid(f"indices[{i}] = [{at}] is repeated")
        raise _invalid(f"indices[{i}] = [{at}] is out of order. Many sparse ops require "
                       f"sorted indices.\n    Use `tf.sparse.reorder` to create a correctly "
                       f"ordered copy.\n\n")


def _set_result(ctx, fn, batch_a, rows_a, batch_b, rows_b, dtype):
    """The SparseTensor parts of `fn` applied row by row: each row's sorted results at
    (the row's batch index..., 0, 1, ...), the last dimension the longest row's."""
    if tuple(batch_a) != tuple(batch_b):
        raise _invalid(f"Mismatched shapes {_shape_str(batch_a)} vs {_shape_str(batch_b)}")
    every = max(1, interrupt.EACH_EVERY // max(1, max((len(r) for r in rows_a), default=1)))
    results = [fn(x, y) for x, y in interrupt.each(ctx, zip(rows_a, rows_b, strict=True),
                                                    every, count=len(rows_a))]
    lengths = np.array([len(r) for r in results], np.int64)
    width = int(lengths.max(initial=0))
    row = np.repeat(np.arange(len(results)), lengths)
    starts = np.cumsum(lengths) - lengths
    column = np.arange(row.size, dtype=np.int64) - np.repeat(starts, lengths)
    idx = np.stack([*np.unravel_index(row, batch_a), column], 1).astype(np.int64) \
        .reshape(-1, len(batch_a) + 1)
    vals = np.concatenate(results).astype(dtype) if results else np.zeros([0], dtype)
    return idx, vals, np.asarray(list(batch_a) + [width], np.int64)


@kernel_factory("DenseToDenseSetOperation")
def _dense_to_dense_set_operation(node):
    fn = _set_function(node)

    def compute(ctx, a, b):
        if a.ndim < 2 or a.shape[:-1] != b.shape[:-1]:
            raise _invalid(f"Shapes {_shape_str(a.shape)} and {_shape_str(b.shape)} must "
                           f"have rank >= 2 and match but for the last dimension")
        return _set_result(ctx, fn, *_dense_rows(a), *_dense_rows(b), a.dtype)

    return compute


@kernel_factory("DenseToSparseSetOperation")
def _dense_to_sparse_set_operation(node):
    fn, validate = _set_function(node), node.attrs["validate_indices"]

    def compute(ctx, a, b_indices, b_values, b_shape):
        batch_a, rows_a = _dense_rows(a)
        batch_b, rows_b = _sparse_rows(b_indices, b_values, b_shape, validate)
        if len(batch_a) + 1 != b_shape.size:
            raise _invalid(f"Shapes must be equal rank, but are {a.ndim} and {b_shape.size}")
        return _set_result(ctx, fn, batch_a, rows_a, batch_b, rows_b, a.dtype)

    return compute


@kernel_factory("SparseToSparseSetOperation")
def _sparse_to_sparse_set_operation(node):
    fn, validate = _set_function(node), node.attrs["validate_indices"]

    def compute(ctx, a_indices, a_values, a_shape, b_indices, b_values, b_shape):
        a = _sparse_rows(a_indices, a_values, a_shape, validate)
        b = _sparse_rows(b_indices, b_values, b_shape, validate)
        if a_shape.size != b_shape.size:
            raise _invalid(f"Shapes must be equal rank, but are {a_shape.size} and "
                           f"{b_shape.size}")
        return _set_result(ctx, fn, *a, *b, a_values.dtype)

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
