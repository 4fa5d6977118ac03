"""Ragged elementwise binary math (with broadcasting) and reductions.

Binary ops: two RaggedTensors of the same ragged rank and rank need identical row
partitions ("Inputs must have identical ragged splits") and combine their flat values; a
dense operand that only reaches the flat values' inner dimensions combines with them
directly. Everything else is broadcast dimension by dimension, as TF's ragged broadcasting
does: both operands are padded to one rank with leading size-1 dims and seen as a stack of
partitions (uniform: one size; ragged: row splits) over flat values. At each partition
level a uniform size of 1 stretches to the other side's lengths; otherwise the lengths must
be equal row by row (a ragged row never stretches). The result gets the broadcast
partitions, and each operand's flat values are gathered at the positions the walk found.

Reductions take axis None, an int or a list of ints (each reduced in turn, innermost
first); axis 0 combines rows position by position (rows of ragged values combine
elementwise, as TF's ragged segment reductions do), axis 1 combines each row's items, and
deeper axes reduce the values. Means divide a sum by a count reduced the same way.
"""

from __future__ import annotations

import numpy as np

from tensorflux.debugging import check_ops
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import constant_value
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    gather_ops,
    joining_ops,
    math_ops,
    reduction_ops,
    segment_ops,
    sequence_ops,
    string_ops,
    unary_ops,
)
from tensorflux.ragged.ragged_array_ops import expand_dims
from tensorflux.ragged.ragged_tensor import (
    RaggedTensor,
    _check_axis,
    _cumsum_splits,
    row_splits_to_segment_ids,
    splits_checks,
)
from tensorflux.ragged.ragged_tensor_value import RaggedTensorValue

# ---- binary elementwise ------------------------------------------------------------------


def _ragged_value(x):
    return RaggedTensor._from_value(x) if isinstance(x, RaggedTensorValue) else x


def _operand(x, dtype=None):
    x = _ragged_value(x)
    if isinstance(x, RaggedTensor):
        return x
    return convert_to_tensor(x, dtype=dtype, name="y")


def binary(fn):
    """The ragged form of the binary elementwise function `fn(x, y, name=None)`."""

    def apply(x, y, name=None):
        x, y = _ragged_value(x), _ragged_value(y)
        if isinstance(x, RaggedTensor):
            y = _operand(y, x.dtype)
        else:
            x = _operand(x, _operand(y).dtype)
        if isinstance(x, RaggedTensor) and isinstance(y, RaggedTensor) and \
                x.ragged_rank == y.ragged_rank and \
                x.flat_values.shape.ndims == y.flat_values.shape.ndims:
            with graph_lib.control_dependencies(
                    splits_checks(x.nested_row_splits, y.nested_row_splits)):
                return x.with_flat_values(fn(x.flat_values, y.flat_values, name=name))
        if _inner_only(x, y):
            return x.with_flat_values(fn(x.flat_values, y, name=name))
        if _inner_only(y, x):
            return y.with_flat_values(fn(x, y.flat_values, name=name))
        return _broadcast_apply(fn, x, y, name)
    return apply


def _inner_only(rt, t) -> bool:
    """rt ragged, t dense and of lower rank than rt's flat values (it broadcasts against
    their inner dims only)."""
    if not isinstance(rt, RaggedTensor) or isinstance(t, RaggedTensor):
        return False
    inner, rank = rt.flat_values.shape.ndims, t.shape.ndims
    return inner is not None and rank is not None and rank < inner


class _Levels:
    """An operand as partitions over flat values: `sizes[0]` (the outermost dim), then per
    level either ("uniform", size) or ("ragged", row_splits); `flat` holds the rest."""

    def __init__(self, x, rank, depth, dtype):
        levels = [("uniform", math_ops.cast(1, dtype))] * (rank - x.shape.ndims)
        first = 0  # flat's first dim still to turn into a level
        if isinstance(x, RaggedTensor):
            x = x.with_row_splits_dtype(dtype)
            levels.append(("uniform", x.nrows()))
            rt = x
            while isinstance(rt, RaggedTensor):
                length = rt.uniform_row_length
                levels.append(("ragged", rt.row_splits) if length is None else
                              ("uniform", length))
                rt = rt.values
            x, first = rt, 1
        shape = array_ops.shape(x, out_type=dtype)
        more = depth + 1 - len(levels)
        if more <= 0 and not first:  # a dense operand reaching no partition: one item
            self.levels, self.flat = levels[:depth + 1], array_ops.expand_dims(x, 0)
            self.inner_rank = x.shape.ndims
            return
        levels.extend(("uniform", shape[i]) for i in range(first, first + more))
        self.levels = levels
        merged = more + first  # flat's dims 0..merged-1 make the deepest level's items
        self.flat = x if merged == 1 else array_ops.reshape(
            x, joining_ops.concat([[-1], shape[merged:]], 0))
        self.inner_rank = x.shape.ndims - merged

    def lengths_and_starts(self, level, index):
        """For the level's parents at `index`: their lengths and first child positions."""
        kind, part = self.levels[level]
        if kind == "uniform":
            return array_ops.zeros_like(index) + part, index * part
        lengths = part[1:] - part[:-1]
        return gather_ops.gather(lengths, index), gather_ops.gather(part[:-1], index)

    def stretches(self, level):
        """True (a bool scalar) where this level is uniform with size 1."""
        kind, part = self.levels[level]
        return comparison_ops.equal(part, 1) if kind == "uniform" else None


def _broadcast_apply(fn, x, y, name):
    if x.shape.ndims is None or y.shape.ndims is None:
        raise ValueError("ragged broadcasting needs operands of known rank")
    rank = max(x.shape.ndims, y.shape.ndims)
    depth = 0
    for z in (x, y):
        if isinstance(z, RaggedTensor):
            depth = max(depth, rank - z.shape.ndims + z.ragged_rank)
    dtype = _common_splits_dtype(x, y)
    a, b = _Levels(x, rank, depth, dtype), _Levels(y, rank, depth, dtype)
    static = _static_dims(x, y, rank)
    msg = "Unable to broadcast: dimension sizes do not match"
    na, nb = a.levels[0][1], b.levels[0][1]
    check = check_ops.assert_equal(
        comparison_ops.logical_or(comparison_ops.equal(na, nb), comparison_ops.logical_or(
            comparison_ops.equal(na, 1), comparison_ops.equal(nb, 1))), True, message=msg)
    with graph_lib.control_dependencies([check]):
        n = comparison_ops.where(comparison_ops.equal(na, 1), nb, na)
    pos = sequence_ops.range(0, n, dtype=dtype)
    ia = pos * math_ops.cast(comparison_ops.not_equal(na, 1), dtype)
    ib = pos * math_ops.cast(comparison_ops.not_equal(nb, 1), dtype)
    partitions = []
    for level in range(1, depth + 1):
        la, sa = a.lengths_and_starts(level, ia)
        lb, sb = b.lengths_and_starts(level, ib)
        fa, fb = a.stretches(level), b.stretches(level)
        ok = comparison_ops.equal(la, lb)
        for stretch in (fa, fb):
            if stretch is not None:
                ok = comparison_ops.logical_or(ok, stretch)
        check = check_ops.assert_equal(reduction_ops.reduce_all(ok), True, message=msg)
        with graph_lib.control_dependencies([check]):
            lengths = array_ops.identity(la) if fa is None else comparison_ops.where(
                comparison_ops.logical_or(array_ops.zeros_like(la, dtypes.bool), fa), lb, la)
        splits = _cumsum_splits(lengths)
        ids = row_splits_to_segment_ids(splits)
        inner = sequence_ops.range(0, splits[-1], dtype=dtype) - gather_ops.gather(splits,
                                                                                   ids)
        ia = gather_ops.gather(sa, ids) + (inner if fa is None else inner * math_ops.cast(
            comparison_ops.logical_not(fa), dtype))
        ib = gather_ops.gather(sb, ids) + (inner if fb is None else inner * math_ops.cast(
            comparison_ops.logical_not(fb), dtype))
        uniform = None
        if fa is not None and fb is not None:
            uniform = comparison_ops.where(fa, b.levels[level][1], a.levels[level][1])
            if static[level] is not None:
                uniform = convert_to_tensor(np.asarray(static[level],
                                                       dtype.as_numpy_dtype))
        partitions.append((splits, uniform))
    if static[0] is not None:
        partitions[0][0].set_shape([static[0] + 1])
    va, vb = _align_inner(gather_ops.gather(a.flat, ia), a.inner_rank,
                          gather_ops.gather(b.flat, ib), b.inner_rank)
    result = fn(va, vb, name=name)
    for splits, uniform in reversed(partitions):
        result = RaggedTensor._make(result, splits, [], uniform)
    return result


def _static_dims(x, y, rank) -> list:
    """The broadcast result's static dims (None where unknown)."""
    def padded(z):
        return [1] * (rank - z.shape.ndims) + z.shape.as_list()
    out = []
    for p, q in zip(padded(x), padded(y), strict=True):
        if p == 1 or p is None:
            out.append(q if p == 1 else (q if q not in (1, None) else None))
        else:
            out.append(p)
    return out


def _common_splits_dtype(x, y):
    found = [z.row_splits.dtype for z in (x, y) if isinstance(z, RaggedTensor)]
    return dtypes.int64 if len(set(found)) > 1 else found[0]


def _align_inner(a, rank_a, b, rank_b):
    """a [n, ...rank_a dims], b [n, ...rank_b dims] with size-1 dims after dim 0 added to
    the one of lower rank (so that their inner dims broadcast from the right)."""
    def lift(t, extra):
        if extra <= 0:
            return t
        shape = array_ops.shape(t)
        return array_ops.reshape(t, joining_ops.concat([shape[:1], [1] * extra, shape[1:]],
                                                       0))
    return lift(a, rank_b - rank_a), lift(b, rank_a - rank_b)


# ---- reductions ------------------------------------------------------------------------------


def _segment(kind, data, ids, n):
    """data's rows combined by segment id: dense data by the unsorted segment op; ragged
    data row by row, position by position (output row s as long as its longest input)."""
    if not isinstance(data, RaggedTensor):
        return _segment_fn(kind)(data, ids, n)
    lengths = data.row_lengths()
    out_lengths = math_ops.maximum(segment_ops.unsorted_segment_max(lengths, ids, n), 0)
    out_splits = _cumsum_splits(out_lengths)
    rowids = data.value_rowids()
    pos = sequence_ops.range(0, array_ops.size(rowids, out_type=rowids.dtype),
                             dtype=rowids.dtype) - gather_ops.gather(data.row_splits, rowids)
    value_ids = gather_ops.gather(out_splits, gather_ops.gather(ids, rowids)) + pos
    inner = _segment(kind, data.values, value_ids, out_splits[-1])
    return RaggedTensor.from_row_splits(inner, out_splits, validate=False)


def _segment_all(data, ids, n):
    missing = sequence_ops.unsorted_segment_sum(
        math_ops.cast(comparison_ops.logical_not(data), dtypes.int32), ids, n)
    return comparison_ops.equal(missing, 0)


def _segment_any(data, ids, n):
    found = sequence_ops.unsorted_segment_sum(math_ops.cast(data, dtypes.int32), ids, n)
    return comparison_ops.greater(found, 0)


_SEGMENT = {"sum": sequence_ops.unsorted_segment_sum,
            "prod": segment_ops.unsorted_segment_prod,
            "max": segment_ops.unsorted_segment_max,
            "min": segment_ops.unsorted_segment_min,
            "all": _segment_all, "any": _segment_any}
_DENSE = {"sum": reduction_ops.reduce_sum, "prod": reduction_ops.reduce_prod,
          "max": reduction_ops.reduce_max, "min": reduction_ops.reduce_min,
          "all": reduction_ops.reduce_all, "any": reduction_ops.reduce_any}


class Join:
    """The reduction kind of `tf.strings.reduce_join`: strings joined with `separator`."""

    def __init__(self, separator):
        self.separator = separator

    def segment(self, data, ids, n):
        return string_ops.unsorted_segment_join(data, ids, n, separator=self.separator)

    def dense(self, x, axis):
        return string_ops.reduce_join(x, axis=axis, separator=self.separator)


def _segment_fn(kind):
    return kind.segment if isinstance(kind, Join) else _SEGMENT[kind]


def _dense_fn(kind):
    return kind.dense if isinstance(kind, Join) else _DENSE[kind]


def reduce_join(inputs, axis=None, keepdims=None, separator="", name=None,
                keep_dims=None, reduction_indices=None):
    """The strings of `inputs` joined with `separator` over `axis` (None: all)
    (`tf.strings.reduce_join` on ragged), innermost axis first.

    Raises:
      ValueError: an axis out of bounds, or a non-constant axis.
    """
    if axis is None and reduction_indices is not None:
        axis = reduction_indices
    keep = bool(keepdims or keep_dims)
    with graph_lib.name_scope(name, "RaggedSegmentJoin", [inputs]):
        x = _operand(inputs)
        if axis is None and not keep and isinstance(x, RaggedTensor):
            # all axes: the flat values in order (an empty row adds no separator)
            return string_ops.reduce_join(x.flat_values, separator=separator)
        return _reduce(Join(separator), x, _axes(x, axis), keep)


def _reduce_axis(kind, x, axis):
    """x reduced over one axis (no kept dim)."""
    if not isinstance(x, RaggedTensor):
        return _dense_fn(kind)(x, axis=axis)
    if axis == 0:
        rowids = x.value_rowids()
        cols = sequence_ops.range(0, array_ops.size(rowids, out_type=rowids.dtype),
                                  dtype=rowids.dtype) - gather_ops.gather(x.row_splits,
                                                                          rowids)
        width = math_ops.maximum(reduction_ops.reduce_max(joining_ops.concat(
            [array_ops.zeros([1], rowids.dtype), x.row_lengths()], 0)), 0)
        return _segment(kind, x.values, cols, width)
    if axis == 1:
        return _segment(kind, x.values, x.value_rowids(), x.nrows())
    return x.with_values(_reduce_axis(kind, x.values, axis - 1))


def _axes(x, axis) -> list:
    rank = x.shape.ndims
    if rank is None:
        raise ValueError("ragged reductions need a RaggedTensor of known rank")
    if axis is None:
        return list(range(rank))
    if isinstance(axis, Tensor):
        value = constant_value(axis)
        if value is None:
            raise ValueError("ragged reductions need a constant axis")
        axis = value.tolist()
    if isinstance(axis, np.ndarray):
        axis = axis.tolist()
    axes = axis if isinstance(axis, (list, tuple)) else [axis]
    return sorted({_check_axis(a, rank) for a in axes})


def _reduce(kind, x, axes, keepdims):
    """x reduced over `axes` (sorted), innermost first; with keepdims each reduced axis is
    put back (size 1) before the next is reduced, as TF does (ragged dims below stay)."""
    result = x
    for a in reversed(axes):
        result = _reduce_axis(kind, result, a)
        if keepdims:
            result = expand_dims(result, a) if isinstance(result, RaggedTensor) else \
                array_ops.expand_dims(result, a)
    return result


def _reduction(kind, scope):
    def reduce(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
        if axis is None and reduction_indices is not None:
            axis = reduction_indices
        keep = bool(keepdims or keep_dims)
        with graph_lib.name_scope(name, scope, [input_tensor]):
            x = _operand(input_tensor)
            if kind == "mean":
                return _mean(x, _axes(x, axis), keep)
            return _reduce(kind, x, _axes(x, axis), keep)
    reduce.__name__ = reduce.__qualname__ = f"reduce_{kind}"
    reduce.__doc__ = f"""The ragged form of `tf.reduce_{kind}`: `input_tensor` reduced over
    `axis` (None: all; an int or a list of ints).

    Raises:
      ValueError: an axis out of bounds, or a non-constant axis.
    """
    return reduce


def _mean(x, axes, keepdims):
    total = _reduce("sum", x, axes, keepdims)
    ones = x.with_flat_values(array_ops.ones_like(x.flat_values)) if isinstance(
        x, RaggedTensor) else array_ops.ones_like(x)
    count = _reduce("sum", ones, axes, keepdims)  # the same partitions as total's
    if isinstance(total, RaggedTensor):
        return total.with_flat_values(math_ops.truediv(total.flat_values, count.flat_values))
    return math_ops.truediv(total, count)


reduce_sum = _reduction("sum", "RaggedReduceSum")
reduce_prod = _reduction("prod", "RaggedReduceProd")
reduce_max = _reduction("max", "RaggedReduceMax")
reduce_min = _reduction("min", "RaggedReduceMin")
reduce_all = _reduction("all", "RaggedReduceAll")
reduce_any = _reduction("any", "RaggedReduceAny")
reduce_mean = _reduction("mean", "RaggedReduceMean")


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """The ragged form of `tf.math.reduce_variance`: mean(x^2) - mean(x)^2 over `axis`,
    clipped at 0."""
    with graph_lib.name_scope(name, "RaggedReduceVariance", [input_tensor]):
        x = _operand(input_tensor)
        if x.dtype.is_complex:
            raise ValueError("reduce_variance is not supported for RaggedTensors with "
                             "complex dtypes.")
        square = x.with_flat_values(unary_ops.square(x.flat_values)) if isinstance(
            x, RaggedTensor) else unary_ops.square(x)
        axes = _axes(x, axis)
        mean_of_square = _mean(square, axes, keepdims)
        mean = _mean(x, axes, keepdims)
        sub, maximum = binary(math_ops.subtract), binary(math_ops.maximum)
        square_of_mean = mean.with_flat_values(unary_ops.square(mean.flat_values)) if \
            isinstance(mean, RaggedTensor) else unary_ops.square(mean)
        diff = sub(mean_of_square, square_of_mean) if isinstance(mean, RaggedTensor) else \
            mean_of_square - square_of_mean
        return maximum(diff, 0) if isinstance(diff, RaggedTensor) else \
            math_ops.maximum(diff, math_ops.cast(0, diff.dtype))


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """The ragged form of `tf.math.reduce_std`: the square root of `reduce_variance`."""
    with graph_lib.name_scope(name, "RaggedReduceStd", [input_tensor]):
        variance = reduce_variance(input_tensor, axis, keepdims)
        if isinstance(variance, RaggedTensor):
            return variance.with_flat_values(unary_ops.sqrt(variance.flat_values))
        return unary_ops.sqrt(variance)


def reduce_logsumexp(input_tensor, axis=None, keepdims=None, name=None,
                     reduction_indices=None, keep_dims=None):
    """The ragged form of `tf.reduce_logsumexp`: log(sum(exp(x - m))) + m, m the (finite)
    max over the same axes, broadcast back against x.

    Raises:
      ValueError: an axis out of bounds, or a non-constant axis.
      InvalidArgumentError: (as TF) an axis whose kept max cannot broadcast against x's
        ragged rows (axis 0 of ragged rows of different lengths).
    """
    if axis is None and reduction_indices is not None:
        axis = reduction_indices
    keep = bool(keepdims or keep_dims)
    with graph_lib.name_scope(name, "ReduceLogSumExp", [input_tensor]):
        x = _operand(input_tensor)
        axes = _axes(x, axis)
        top = _reduce("max", x, axes, True)
        top = _map(top, lambda v: array_ops.stop_gradient(comparison_ops.where(
            unary_ops.is_finite(v), v, array_ops.zeros_like(v))))
        shifted = binary(math_ops.subtract)(x, top) if isinstance(x, RaggedTensor) else \
            x - top
        total = _reduce("sum", _map(shifted, unary_ops.exp), axes, keep)
        logs = _map(total, unary_ops.log)
        if not keep:
            top = _reduce("max", top, axes, False)  # size-1 dims: the same values
        return binary(math_ops.add)(logs, top) if isinstance(logs, RaggedTensor) or \
            isinstance(top, RaggedTensor) else logs + top


def _map(x, fn):
    """fn applied to x's (flat) values."""
    return x.with_flat_values(fn(x.flat_values)) if isinstance(x, RaggedTensor) else fn(x)


def add_n(inputs, name=None):
    """The ragged form of `tf.add_n`: the sum of RaggedTensors with identical partitions
    (dense inputs broadcast against them).

    Raises:
      ValueError: no inputs.
      InvalidArgumentError: different row partitions.
    """
    inputs = list(inputs)
    if not inputs:
        raise ValueError("inputs must be a non-empty list")
    with graph_lib.name_scope(name, "RaggedAddN", inputs):
        total = inputs[0]
        add = binary(math_ops.add)
        for x in inputs[1:]:
            total = add(total, x)
        return total
