"""The ragged forms of tile, reverse, squeeze, split and cumsum (TensorFlow's semantics,
shapes and messages), composed from gathers over the row partitions.

- tile / reverse rebuild the row partitions level by level (`_relayout`): at each ragged
  level every output row names the input row it copies, and each of its positions the
  input position it reads; the flat values are then gathered once (so gradients flow
  through the gather); dims inside the flat values use the dense op.
- squeeze drops a row partition whose rows all have length 1 (checked when run), or the
  outermost one when there is one row; inner dims use the dense squeeze.
- split cuts the rows (axis 0) or the flat values (uniform inner dims); ragged dims cannot
  be split, as in TF.
- cumsum sums through the zero-padded dense form and cuts the result back to the input's
  row lengths (padding adds nothing to any running sum).
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
    gather_ops,
    joining_ops,
    math_ops,
    reduction_ops,
    sequence_ops,
)
from tensorflux.ragged.ragged_tensor import (
    RaggedTensor,
    _check_axis,
    _cumsum_splits,
    row_splits_to_segment_ids,
)
from tensorflux.ragged.ragged_tensor_value import RaggedTensorValue


def _ragged(x, name="input") -> RaggedTensor:
    if isinstance(x, RaggedTensorValue):
        return RaggedTensor._from_value(x)
    if not isinstance(x, RaggedTensor):
        raise TypeError(f"{name} must be a RaggedTensor, got {type(x).__name__}")
    return x


def _rank(rt: RaggedTensor) -> int:
    rank = rt.shape.ndims
    if rank is None:
        raise ValueError("the rank of a RaggedTensor argument must be known statically")
    return rank


def _relayout(rt: RaggedTensor, outer_index, level_fn) -> RaggedTensor:
    """rt rebuilt from `outer_index` (for each output row, the input row it copies) and
    `level_fn(level, lengths)`, which for each ragged level gives the output rows'
    lengths (from the copied input rows' `lengths`) and a function `(starts, lengths,
    offsets) -> input positions` for each output position."""
    index = outer_index
    new_splits = []
    for level, splits in enumerate(rt.nested_row_splits):
        starts = gather_ops.gather(splits[:-1], index)
        lengths = gather_ops.gather(splits[1:], index) - starts
        out_lengths, position = level_fn(level + 1, lengths)
        out_splits = _cumsum_splits(out_lengths)
        parent = row_splits_to_segment_ids(out_splits)
        offsets = sequence_ops.range(0, out_splits[-1], dtype=splits.dtype) - \
            gather_ops.gather(out_splits, parent)
        index = position(gather_ops.gather(starts, parent),
                         gather_ops.gather(lengths, parent), offsets)
        new_splits.append(out_splits)
    values = gather_ops.gather(rt.flat_values, index)
    return RaggedTensor.from_nested_row_splits(values, new_splits, validate=False)


# ---- tile ------------------------------------------------------------------------------------


def tile(input, multiples, name=None):  # noqa: A002 - TF's name
    """`input` repeated `multiples[d]` times along each dim d (`tf.tile` on ragged): rows
    along axis 0, each row's items along a ragged dim, the flat values' own dims densely.

    Raises:
      TypeError: non-integer multiples.
      ValueError: multiples whose length is not rank(input).
    """
    rt = _ragged(input)
    with graph_lib.name_scope(name, "RaggedTile", [rt, multiples]):
        multiples = convert_to_tensor(multiples, name="multiples")
        if not multiples.dtype.is_integer:
            raise TypeError(f"Argument `tensor` (name: multiples) must be of type integer. "
                            f"Received `tensor` = {multiples} of dtype: {multiples.dtype}")
        rank = _rank(rt)
        multiples.shape.with_rank(1)
        length = multiples.shape[0]
        if length is not None and length != rank:
            raise ValueError(f"multiples must have {rank} elements (the rank of input), "
                             f"got {length}")
        dtype = rt.row_splits.dtype
        m = math_ops.cast(multiples, dtype)
        nrows = rt.nrows()
        outer = math_ops.floormod(sequence_ops.range(0, nrows * m[0], dtype=dtype), nrows)

        def level_fn(level, lengths):
            return lengths * m[level], lambda starts, lengths, offsets: \
                starts + math_ops.floormod(offsets, lengths)
        result = _relayout(rt, outer, level_fn)
        k = rt.ragged_rank
        if rank > k + 1:
            inner = joining_ops.concat([[1], math_ops.cast(multiples[k + 1:], dtypes.int32)], 0)
            result = result.with_flat_values(joining_ops.tile(result.flat_values, inner))
        return result


# ---- reverse ---------------------------------------------------------------------------------


def _constant_axes(axis, rank) -> list:
    if isinstance(axis, Tensor):
        # TF takes Python ints only (a constant tensor's elements are NumPy ints)
        if constant_value(axis) is None:
            raise TypeError("`axis` must be a list of int or a constant tensor"
                            "when reversing axes in a ragged tensor")
        raise TypeError(f"axis[0] must be an int; got {axis.dtype.name}")
    if isinstance(axis, np.ndarray):
        axis = axis.tolist()
    axes = axis if isinstance(axis, (list, tuple)) else [axis]
    return sorted({_check_axis(a, rank, f"axis[{i}]") for i, a in enumerate(axes)})


def reverse(tensor, axis, name=None):
    """`tensor` with the order of its items along each of `axis` reversed (`tf.reverse`
    on ragged): the rows for axis 0, each row's items for a ragged dim.

    Raises:
      TypeError: an axis tensor whose value is not known when the graph is built.
      ValueError: an axis out of [-rank, rank).
    """
    rt = _ragged(tensor, "tensor")
    with graph_lib.name_scope(name, "Reverse", [rt]):
        rank = _rank(rt)
        axes = _constant_axes(axis, rank)
        dtype = rt.row_splits.dtype
        nrows = rt.nrows()
        outer = sequence_ops.range(0, nrows, dtype=dtype)
        if 0 in axes:
            outer = nrows - 1 - outer

        def level_fn(level, lengths):
            if level in axes:
                return lengths, lambda starts, lengths, offsets: \
                    starts + lengths - 1 - offsets
            return lengths, lambda starts, lengths, offsets: starts + offsets
        result = _relayout(rt, outer, level_fn)
        k = rt.ragged_rank
        inner = [a - k for a in axes if a > k]
        if inner:
            result = result.with_flat_values(joining_ops.reverse(result.flat_values, inner))
        return result


# ---- squeeze ---------------------------------------------------------------------------------


def squeeze(input, axis=None, name=None, squeeze_dims=None):  # noqa: A002 - TF's name
    """`input` without the dims of size 1 listed in `axis` (`tf.squeeze` on ragged): a
    ragged dim goes when all its rows have length 1, axis 0 when there is one row (both
    checked when run); a result with no ragged dim left is a dense Tensor.

    Raises:
      ValueError: no axis, an axis out of bounds, or an inner dim that is not 1.
      InvalidArgumentError (when run): a squeezed ragged dim or axis 0 whose size is not 1.
    """
    if squeeze_dims is not None:
        axis = squeeze_dims
    rt = _ragged(input)
    if axis is None:
        raise ValueError("Ragged.squeeze must have an axis argument.")
    with graph_lib.name_scope(name, "RaggedSqueeze", [rt]):
        rank = _rank(rt)
        axes = _constant_axes(axis, rank)
        k = rt.ragged_rank
        values = rt.flat_values
        inner = [a - k for a in axes if a > k]
        if inner:
            values = array_ops.squeeze(values, inner)
        splits = list(rt.nested_row_splits)
        checks = []
        for a in sorted((a for a in axes if a <= k), reverse=True):
            part = splits[max(a - 1, 0)]
            sizes = part[1:] - part[:-1] if a > 0 else array_ops.size(part)[None] - 1
            checks.append(check_ops.assert_equal(
                sizes, math_ops.cast(1, sizes.dtype),
                message="Can only squeeze a dimension of size 1"))
            del splits[max(a - 1, 0)]
        with graph_lib.control_dependencies(checks):
            values = array_ops.identity(values)
        if not splits:
            return values
        return RaggedTensor.from_nested_row_splits(values, splits, validate=False)


# ---- split -----------------------------------------------------------------------------------


def _split_sizes(num_or_size_splits, num, nrows):
    """The piece sizes along axis 0 (a list of scalar tensors) and their checks."""
    dtype = nrows.dtype
    if isinstance(num_or_size_splits, (int, np.integer)):
        n = int(num_or_size_splits)
        size = nrows // n
        check = check_ops.assert_equal(
            math_ops.floormod(nrows, n), math_ops.cast(0, dtype),
            message=f"Cannot exactly split the rows into {n} pieces")
        return [size] * n, [check]
    sizes = math_ops.cast(convert_to_tensor(num_or_size_splits, name="num_or_size_splits"),
                          dtype)
    count = sizes.shape.as_list()[0] if sizes.shape.ndims == 1 else None
    if count is None:
        if num is None:
            raise ValueError(
                "`num` must be specified as an `int` when the size of `num_or_size_split` "
                f"is statically unknown. Received `num`: {num} and `num_or_size_split`: "
                f"{num_or_size_splits}.")
        count = int(num)
    checks = [check_ops.assert_non_negative(
        sizes, message="`num_or_size_splits` must be non-negative."),
        check_ops.assert_equal(reduction_ops.reduce_sum(sizes), nrows,
                               message="`num_or_size_splits` must sum to the dimension of "
                               "value along axis")]
    return [sizes[i] for i in range(count)], checks


def split(value, num_or_size_splits, axis=0, num=None, name=None):
    """`value` cut into pieces along `axis` (`tf.split` on ragged): a list of
    RaggedTensors. Axis 0 cuts the rows; uniform inner dims cut the flat values.

    Raises:
      ValueError: axis on a ragged dim, out of bounds, or unknown piece count.
      InvalidArgumentError (when run): sizes that are negative or do not add up.
    """
    rt = _ragged(value, "value")
    with graph_lib.name_scope(name, "RaggedSplit", [rt]):
        rank = _rank(rt)
        axis = _check_axis(axis, rank)
        k = rt.ragged_rank
        if 0 < axis <= k:
            raise ValueError(f"Cannot split a ragged dimension. Got `value` with shape "
                             f"{_shape_text(rt)} and `axis` {axis}.")
        if axis > k:
            pieces = joining_ops.split(rt.flat_values, num_or_size_splits, axis - k, num=num)
            return [rt.with_flat_values(p) for p in pieces]
        nrows = rt.nrows()
        sizes, checks = _split_sizes(num_or_size_splits, num, nrows)
        with graph_lib.control_dependencies(checks):
            start = array_ops.identity(math_ops.cast(0, nrows.dtype))
        pieces = []
        for size in sizes:
            stop = start + size
            pieces.append(rt[start:stop])
            start = stop
        return pieces


def _shape_text(rt: RaggedTensor) -> str:
    lengths = ["None" if d is None else str(d) for d in rt.shape.as_list()]
    return (f"<DynamicRaggedShape lengths=[{', '.join(lengths)}] "
            f"num_row_partitions={rt.ragged_rank}>")


# ---- cumsum ----------------------------------------------------------------------------------


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Running sums of `x` along `axis` (`tf.math.cumsum` on ragged), each row's items for
    a ragged dim, column by column across rows for axis 0.

    Raises:
      TypeError: a Tensor axis (TF takes an int only).
      ValueError: an axis out of bounds.
    """
    rt = _ragged(x, "x")
    if isinstance(axis, Tensor):
        raise TypeError(f"Failed to convert elements of {rt} to Tensor. Consider casting "
                        "elements to a supported type.")
    with graph_lib.name_scope(name, "RaggedCumSum", [rt]):
        axis = _check_axis(axis, _rank(rt))
        k = rt.ragged_rank
        if axis > k:
            return rt.with_flat_values(sequence_ops.cumsum(
                rt.flat_values, axis - k, exclusive=exclusive, reverse=reverse))
        dense = rt.to_tensor()
        sums = sequence_ops.cumsum(dense, axis, exclusive=exclusive, reverse=reverse)
        lengths = rt.nested_row_lengths()
        return RaggedTensor.from_tensor(sums, lengths=lengths if k > 1 else lengths[0],
                                        row_splits_dtype=rt.row_splits.dtype)
