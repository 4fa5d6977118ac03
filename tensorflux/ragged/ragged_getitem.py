"""`RaggedTensor.__getitem__`: TensorFlow's ragged indexing.

A key is a tuple of integers, slices (any step), `...`, `tf.newaxis` and scalar int32/int64
tensors (a list is read as a tuple). The outermost dimension takes all of them: an index
picks a row, a slice a subset of rows. The inner dimensions take slices (applied to each row,
Python's rules per row length), `tf.newaxis`, and indices only where the dimension is
uniform (TF: "Cannot index into an inner ragged dimension."); dense inner dimensions take
what a dense tensor takes. Everything is built from gathers on the row partitions.
"""

from __future__ import annotations

import numpy as np

from tensorflux.debugging import check_ops
from tensorflux.framework import dtypes, errors
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import constant_value
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import comparison_ops, math_ops, sequence_ops
from tensorflux.ragged.ragged_array_ops import expand_dims
from tensorflux.ragged.ragged_ops import range as ragged_range
from tensorflux.ragged.ragged_tensor import RaggedTensor, gather_rows

_BAD_KEY = ("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar "
            "tf.int32/tf.int64 tensors are valid indices, got {!r}")


def _check_key(k):
    if k is None or k is Ellipsis or isinstance(k, (int, np.integer)) and not isinstance(
            k, bool):
        return
    if isinstance(k, slice):
        for part in (k.start, k.stop, k.step):
            if part is not None:
                _check_key(part)
        return
    if isinstance(k, Tensor) and k.dtype.base_dtype in (dtypes.int32, dtypes.int64) and \
            k.shape.ndims == 0:
        return
    raise TypeError(_BAD_KEY.format(k))


def ragged_getitem(rt: RaggedTensor, key):
    """`rt[key]` with TensorFlow's ragged indexing rules (see the module docstring).

    Raises:
      TypeError: a key of another kind.
      ValueError: an index into a ragged inner dimension, a step of zero, or more indices
        than dimensions.
      InvalidArgumentError: an index out of a uniform dimension's bounds.
    """
    if isinstance(key, list):
        key = tuple(key)
    if not isinstance(key, tuple):
        key = (key,)
    for k in key:
        _check_key(k)
    if rt.shape.ndims is None:
        raise ValueError("indexing needs a RaggedTensor of known rank")
    with graph_lib.name_scope(None, "RaggedGetItem", [rt]):
        return _outer(rt, list(key))


def _expand_ellipsis(keys, rank):
    """keys[0] is `...`: it stands for the dims the other keys leave (TF counts a later
    `...` as one of those keys, so a second one takes what remains at its level)."""
    used = sum(1 for k in keys[1:] if k is not None)
    return [slice(None)] * max(rank - used, 0) + keys[1:]


def _outer(rt, keys):
    """keys applied to rt from its outermost dimension."""
    if not keys:
        return rt
    k = keys[0]
    if k is Ellipsis:
        return _outer(rt, _expand_ellipsis(keys, rt.shape.ndims))
    if k is None:
        return expand_dims(_outer(rt, keys[1:]), 0)
    if isinstance(k, slice):
        return _inner(_slice_outer(rt, k), keys[1:])
    row = _row(rt, k)
    if isinstance(row, RaggedTensor):
        return _outer(row, keys[1:])
    return row[tuple(keys[1:])] if keys[1:] else row


def _row(rt, k):
    """Row k of rt: a Tensor for ragged_rank 1, else a RaggedTensor."""
    splits = rt.row_splits
    if isinstance(k, (int, np.integer)) and k < 0:
        start, limit = splits[k - 1], splits[k]
    else:
        start, limit = splits[k], splits[k + 1]
    if isinstance(rt.values, RaggedTensor):
        return _slice_rows(rt.values, rt.values.row_splits[start:limit + 1])
    return rt.values[start:limit]


def _slice_rows(rt, splits):
    """The RaggedTensor of the values of `rt` between splits[0] and splits[-1], cut by the
    contiguous window `splits` of rt's row_splits."""
    first = splits[0]
    values = rt.values
    if isinstance(values, RaggedTensor):
        values = _slice_rows(values, values.row_splits[first:splits[-1] + 1])
    else:
        values = values[first:splits[-1]]
    out = RaggedTensor.from_row_splits(values, splits - first, validate=False)
    return RaggedTensor._make(out.values, out.row_splits, [], rt.uniform_row_length)


def _step(k: slice):
    if isinstance(k.step, (int, np.integer)) and k.step == 0:
        raise ValueError("slice step cannot be zero")
    return 1 if k.step is None else k.step


def _slice_outer(rt, k: slice):
    """The rows of rt that the slice k selects (Python's rules)."""
    rows = sequence_ops.range(0, rt.nrows(), dtype=rt.row_splits.dtype)
    return gather_rows(rt, rows[k])


def _inner(rt, keys):
    """keys applied to the dimensions of rt after its outermost one."""
    if not keys:
        return rt
    if not isinstance(rt, RaggedTensor):
        return rt[(slice(None),) + tuple(keys)]
    k = keys[0]
    if k is Ellipsis:
        return _inner(rt, _expand_ellipsis(keys, rt.shape.ndims - 1))
    if k is None:
        return expand_dims(_inner(rt, keys[1:]), 1)
    if isinstance(k, slice):
        if k.start is None and k.stop is None and k.step is None:
            return rt.with_values(_inner(rt.values, keys[1:]))
        sliced = _slice_inner(rt, k)
        return sliced.with_values(_inner(sliced.values, keys[1:]))
    return _inner(_column(rt, k), keys[1:])


def _column(rt, k):
    """Element k of every row of rt (a uniform dimension: its rows all have one length)."""
    length = rt.uniform_row_length
    if length is None:
        raise ValueError("Cannot index into an inner ragged dimension.")
    static = constant_value(length)
    if isinstance(k, (int, np.integer)) and static is not None and not \
            -int(static) <= k < int(static):
        raise errors.InvalidArgumentError(
            None, None, "Index out of bounds when indexing into a ragged tensor")
    dtype = rt.row_splits.dtype
    k = math_ops.cast(convert_to_tensor(k, name="index"), dtype)
    check = check_ops.assert_equal(
        comparison_ops.logical_and(k >= -length, k < length), True,
        message="Index out of bounds when indexing into a ragged tensor")
    with graph_lib.control_dependencies([check]):
        k = comparison_ops.where(k < 0, k + length, k)
    return gather_rows(rt.values, rt.row_splits[:-1] + k)


def _slice_inner(rt, k: slice):
    """Each row of rt sliced by k (Python's rules, per row length)."""
    dtype = rt.row_splits.dtype
    step = math_ops.cast(convert_to_tensor(_step(k), name="step"), dtype)
    lengths = rt.row_lengths()
    forward = step > 0
    zero = math_ops.cast(0, dtype)

    def bound(value, default_forward, default_backward):
        if value is None:
            return comparison_ops.where(forward, default_forward, default_backward)
        value = math_ops.cast(convert_to_tensor(value), dtype)
        value = comparison_ops.where(value < 0, value + lengths, value + zero * lengths)
        return comparison_ops.where(
            forward, math_ops.minimum(math_ops.maximum(value, 0), lengths),
            math_ops.minimum(math_ops.maximum(value, -1), lengths - 1))

    start = bound(k.start, zero * lengths, lengths - 1)
    stop = bound(k.stop, lengths, zero * lengths - 1)
    offsets = rt.row_splits[:-1]
    positions = ragged_range(offsets + start, offsets + stop, step,
                             row_splits_dtype=dtype)
    out = RaggedTensor.from_row_splits(gather_rows(rt.values, positions.values),
                                       positions.row_splits, validate=False)
    uniform = _sliced_length(rt.uniform_row_length, k)
    return out if uniform is None else RaggedTensor._make(out.values, out.row_splits, [],
                                                          uniform)


def _sliced_length(length, k: slice):
    """The row length after slicing uniform rows of `length` by k, when both are known."""
    if length is None:
        return None
    static = constant_value(length)
    parts = (k.start, k.stop, k.step)
    if static is None or not all(p is None or isinstance(p, (int, np.integer))
                                 for p in parts):
        return None
    n = len(range(*k.indices(int(static))))
    return convert_to_tensor(np.asarray(n, length.dtype.as_numpy_dtype))


RaggedTensor.__getitem__ = ragged_getitem
