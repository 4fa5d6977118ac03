"""The ragged forms of expand_dims, gather, concat, stack and boolean_mask (TensorFlow's
semantics, shapes and messages), composed from gathers and segment sums on the row
partitions.

- gather: dense or ragged `indices` of any rank, any `axis` and `batch_dims`; out-of-range
  indices past axis 0 read other rows' values unchecked (as TF's ragged gather does).
- concat / stack: inputs brought to the highest ragged rank (dense ones cut by
  `from_tensor`); axis 0 joins rows, axis 1 joins row i with row i, deeper axes need
  identical row partitions above them ("Inputs must have identical ragged splits").
- boolean_mask: dense or ragged masks of any rank up to data's; a mask of rank k >= 2 gives
  a RaggedTensor of ragged_rank k - 1 (or data's).
"""

from __future__ import annotations

from tensorflux.debugging import check_ops
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    gather_ops,
    joining_ops,
    math_ops,
    reduction_ops,
    sequence_ops,
    slicing_ops,
)
from tensorflux.ragged.ragged_tensor import (
    RaggedTensor,
    _check_axis,
    as_ragged,
    gather_rows,
    outer_row_ids,
    splits_checks,
)
from tensorflux.ragged.ragged_tensor_value import RaggedTensorValue


def _convert(x, name, dtype=None):
    if isinstance(x, RaggedTensorValue):
        x = RaggedTensor._from_value(x)
    if isinstance(x, RaggedTensor):
        return x
    return convert_to_tensor(x, dtype=dtype, name=name)


def _rank(x, what="input") -> int:
    rank = x.shape.ndims
    if rank is None:
        raise ValueError(f"rank({what}) must be known statically")
    return rank


def _splits_dtype(values) -> dtypes.DType:
    """The row_splits dtype the ragged ones among `values` share."""
    found = {v.row_splits.dtype for v in values if isinstance(v, RaggedTensor)}
    if len(found) > 1:
        raise ValueError("Input RaggedTensors have mismatched row_splits dtypes; use "
                         "RaggedTensor.with_row_splits_dtype() to convert them to "
                         "compatible dtypes.")
    return found.pop() if found else dtypes.int64


def _unpartitioned(rt: RaggedTensor) -> RaggedTensor:
    """rt without the uniform_row_length of its outermost partition (TF's result shape)."""
    return RaggedTensor._make(rt.values, rt.row_splits, [])


# ---- expand_dims ---------------------------------------------------------------------------


def expand_dims(input, axis=None, name=None, dim=None):  # noqa: A002 - TF's name
    """`input` with a dimension of size 1 inserted at `axis` (`tf.expand_dims` on ragged):
    a uniform partition for axis 0 or 1, an expanded dimension of the values deeper down.

    Raises:
      ValueError: axis out of [-rank - 1, rank].
    """
    if dim is not None:
        axis = dim
    rt = _convert(input, "input")
    if not isinstance(rt, RaggedTensor):
        return array_ops.expand_dims(rt, axis, name=name)
    axis = _check_axis(axis, _rank(rt) + 1)
    with graph_lib.name_scope(name, "RaggedExpandDims", [rt]):
        dtype = rt.row_splits.dtype
        if axis == 0:
            return RaggedTensor.from_uniform_row_length(
                rt, rt.nrows(), nrows=math_ops.cast(1, dtype), validate=False)
        if axis == 1:
            return RaggedTensor.from_uniform_row_length(
                rt, math_ops.cast(1, dtype), nrows=rt.nrows(), validate=False)
        return rt.with_values(expand_dims(rt.values, axis - 1))


# ---- gather --------------------------------------------------------------------------------


def gather(params, indices, validate_indices=None, name=None, axis=None, batch_dims=0):
    """`params` gathered at `indices` along `axis`, the first `batch_dims` dims of both being
    batch dims (`tf.gather` with a RaggedTensor params or indices).

    Raises:
      TypeError: indices that are not int32/int64.
      ValueError: unknown ranks, axis or batch_dims out of bounds, batch_dims > axis, or
        batch dims of indices that do not match params'.
    """
    del validate_indices
    with graph_lib.name_scope(name, "RaggedGather", [params, indices]):
        params = _convert(params, "params")
        indices = _convert(indices, "indices")
        if indices.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
            raise TypeError(f"Value passed to parameter 'indices' has DataType "
                            f"{indices.dtype.base_dtype.name} not in list of allowed "
                            f"values: int32, int64")
        params_rank, indices_rank = _rank(params, "params"), _rank(indices, "indices")
        if batch_dims < 0:
            batch_dims += indices_rank
        if batch_dims >= params_rank:
            raise ValueError("batch_dims must be less than rank(params)")
        axis = _check_axis(0 if axis is None else axis, params_rank)
        if batch_dims > axis:
            raise ValueError("axis must be greater than or equal to batch_dims")
        if batch_dims > 0 and not indices.shape[:batch_dims].is_compatible_with(
                params.shape[:batch_dims]):
            raise ValueError(f"batch shape from indices {indices.shape[:batch_dims]} does "
                             f"not match params shape {params.shape}")
        return _gather(params, indices, axis, batch_dims)


def _gather(params, indices, axis, batch_dims):
    if batch_dims > 0:
        return _batch_gather(params, indices, axis, batch_dims)
    if axis > 0:
        return _axis_gather(params, indices, axis)
    if isinstance(indices, RaggedTensor):
        return indices.with_values(_gather(params, indices.values, 0, 0))
    if not isinstance(params, RaggedTensor):
        return gather_ops.gather(params, indices)
    rank = _rank(indices, "indices")
    dtype = params.row_splits.dtype
    if rank == 0:
        return gather_rows(params, array_ops.reshape(indices, [1])).values
    rows = gather_rows(params, array_ops.reshape(indices, [-1]))
    shape = array_ops.shape(indices, out_type=dtype)
    for d in reversed(range(1, rank)):  # the outer dims of indices, as (ragged) partitions
        count = reduction_ops.reduce_prod(shape[:d])
        rows = _unpartitioned(RaggedTensor.from_uniform_row_length(
            rows, shape[d], nrows=count, validate=False))
    return _unpartitioned(rows) if rank == 1 else rows


def _axis_gather(params, indices, axis):
    """gather along axis >= 1 (no batch dims): every row of params takes the indices."""
    params = as_ragged(params, 1, _index_splits_dtype(indices))
    if axis > 1:
        return params.with_values(_gather(params.values, indices, axis - 1, 0))
    dtype = params.row_splits.dtype
    starts = params.row_splits[:-1]
    if isinstance(indices, RaggedTensor):
        tiled = gather_rows(expand_dims(indices, 0),
                            array_ops.zeros_like(starts))  # indices once per row
        offsets = gather_ops.gather(starts, outer_row_ids(tiled))
        adjusted = tiled.with_flat_values(
            math_ops.cast(tiled.flat_values, dtype) + offsets)
    else:
        rank = _rank(indices, "indices")
        adjusted = math_ops.cast(indices, dtype) + array_ops.reshape(
            starts, [-1] + [1] * rank)
    return _gather(params.values, adjusted, 0, 0)


def _index_splits_dtype(indices):
    return indices.row_splits.dtype if isinstance(indices, RaggedTensor) else dtypes.int64


def _batch_gather(params, indices, axis, batch_dims):
    """gather with batch dims: result[i] = gather(params[i], indices[i], axis - 1)."""
    dtype = _splits_dtype([params, indices])
    if batch_dims > 1:
        params, indices = as_ragged(params, 1, dtype), as_ragged(indices, 1, dtype)
        return indices.with_values(_batch_gather(params.values, indices.values, axis - 1,
                                                 batch_dims - 1))
    params = as_ragged(params, 1, dtype)
    if axis > 1:  # params' dim 1 becomes a batch dim: each of its rows takes indices[i]
        repeated = params.with_values(gather_rows(indices, params.value_rowids()))
        return _batch_gather(params, repeated, axis, 2)
    starts = params.row_splits[:-1]
    if isinstance(indices, RaggedTensor):
        offsets = gather_ops.gather(starts, outer_row_ids(indices))
        adjusted = indices.with_flat_values(math_ops.cast(indices.flat_values, dtype) +
                                            offsets)
    else:
        rank = _rank(indices, "indices")
        adjusted = math_ops.cast(indices, dtype) + array_ops.reshape(
            starts, [-1] + [1] * (rank - 1))
    return _gather(params.values, adjusted, 0, 0)


def gather_nd(params, indices, name=None, batch_dims=0):
    """The slices of ragged `params` at the index tuples in the last dimension of
    `indices` (`tf.gather_nd` with a RaggedTensor): each tuple of k indices picks
    params[i0, ..., ik-1] (a scalar, a row or a ragged slice).

    Raises:
      ValueError: batch_dims != 0, an unknown rank or index depth, or (from GatherNd) a
        depth above params' rank.
    """
    if batch_dims != 0:
        raise ValueError("batch_dims != 0 is not supported for ragged gather yet.")
    with graph_lib.name_scope(name, "RaggedGatherNd", [params, indices]):
        params = _convert(params, "params")
        indices = _convert(indices, "indices")
        if isinstance(indices, RaggedTensor):
            return indices.with_values(gather_nd(params, indices.values))
        rank, depth = _rank(indices, "indices"), indices.shape[-1].value
        if rank == 0 or depth is None:
            raise ValueError("indices must have a known rank >= 1 and a known last "
                             "dimension")
        if not isinstance(params, RaggedTensor):
            return gather_ops.gather_nd(params, indices)
        dtype = params.row_splits.dtype
        flat = math_ops.cast(array_ops.reshape(indices, [-1, depth]), dtype)
        found = _gather_nd_rows(params, flat, depth)
        if rank == 1:  # TF keeps a ragged slice as a RaggedTensor of one row
            return found if isinstance(found, RaggedTensor) else \
                array_ops.reshape(found, array_ops.shape(found)[1:])
        if rank == 2:
            return found
        shape = array_ops.shape(indices, out_type=dtype)[:-1]
        if not isinstance(found, RaggedTensor):
            return array_ops.reshape(found, joining_ops.concat(
                [math_ops.cast(shape, dtypes.int32), array_ops.shape(found)[1:]], 0))
        static = indices.shape[:-1]
        for d in reversed(range(1, rank - 1)):
            found = RaggedTensor.from_uniform_row_length(
                found, static[d].value if static[d].value is not None else shape[d],
                nrows=reduction_ops.reduce_prod(shape[:d]), validate=False)
        return found


def _gather_nd_rows(params, index, depth):
    """params[index[j, 0], ..., index[j, depth - 1]] for each row j of `index`, stacked."""
    position, current, used = index[:, 0], params, 1
    while used < depth and isinstance(current, RaggedTensor):
        position = gather_ops.gather(current.row_splits, position) + index[:, used]
        current, used = current.values, used + 1
    if used < depth:  # the rest index current's dense dims
        return gather_ops.gather_nd(current, joining_ops.concat(
            [array_ops.expand_dims(position, 1), index[:, used:]], 1))
    return gather_rows(current, position)


# ---- concat, stack ---------------------------------------------------------------------------


def concat(values, axis, name=None):
    """The inputs joined along `axis` (`tf.concat` with RaggedTensors; dense inputs are cut
    into rows).

    Raises:
      ValueError: inputs of different ranks, axis out of bounds, mixed row_splits dtypes.
      InvalidArgumentError: different numbers of rows (axis 1) or different row partitions
        above axis (axis >= 2).
    """
    values = list(values)
    with graph_lib.name_scope(name, "RaggedConcat", values):
        return _concat([_convert(v, "values") for v in values], axis)


def _concat(inputs, axis):
    rank = _rank(inputs[0])
    for x in inputs[1:]:
        x.shape.assert_has_rank(rank)
    axis = _check_axis(axis, rank)
    if len(inputs) == 1:
        return inputs[0]
    dtype = _splits_dtype(inputs)
    depth = max((x.ragged_rank for x in inputs if isinstance(x, RaggedTensor)), default=0)
    if depth == 0:
        return joining_ops.concat(inputs, axis)
    rts = [as_ragged(x, depth, dtype) for x in inputs]
    if axis == 0:
        vals = _concat([rt.values for rt in rts], 0)
        lengths = joining_ops.concat([rt.row_lengths() for rt in rts], 0)
        return RaggedTensor.from_row_lengths(vals, lengths, validate=False)
    checks = _nrows_checks(rts)
    if axis == 1:
        with graph_lib.control_dependencies(checks):
            stacked = _concat(rts, 0)
        n, k = rts[0].nrows(), len(rts)
        # Row i of input j sits at j * n + i; interleave to i * k + j.
        order = array_ops.reshape(array_ops.transpose(array_ops.reshape(
            sequence_ops.range(0, n * k, dtype=n.dtype), [k, -1])), [-1])
        inter = gather_rows(stacked, order)
        lengths = reduction_ops.reduce_sum(
            array_ops.reshape(inter.row_lengths(), [-1, k]), axis=1)
        return RaggedTensor.from_row_lengths(inter.values, lengths, validate=False)
    for rt in rts[1:]:
        checks += splits_checks([rts[0].row_splits], [rt.row_splits])
    with graph_lib.control_dependencies(checks):
        inner = _concat([rt.values for rt in rts], axis - 1)
    return rts[0].with_values(inner)


def _nrows_checks(rts):
    n = rts[0].nrows()
    return [check_ops.assert_equal(
        n, rt.nrows(), message=f"Input tensors at index 0 (=x) and {i} (=y) have "
        "incompatible shapes.") for i, rt in enumerate(rts[1:], 1)]


def stack(values, axis=0, name=None):
    """The inputs stacked along a new dimension `axis` (`tf.ragged.stack`, `tf.stack` with
    RaggedTensors): each expanded at axis, then concatenated there. All-dense inputs give a
    dense tensor.

    Raises:
      ValueError: no inputs, or axis out of [-rank - 1, rank].
    """
    values = list(values)
    if not values:
        raise ValueError("rt_inputs may not be empty.")
    with graph_lib.name_scope(name, "RaggedStack", values):
        inputs = [_convert(v, "values") for v in values]
        if not any(isinstance(x, RaggedTensor) for x in inputs):
            return joining_ops.stack(inputs, axis)
        rank = _rank(inputs[0])
        for x in inputs[1:]:
            x.shape.assert_has_rank(rank)
        axis = _check_axis(axis, rank + 1)
        expanded = [expand_dims(as_ragged(x, 1, _splits_dtype(inputs)), axis)
                    for x in inputs]
        if len(expanded) == 1:  # TF's result (a concat of one) has no uniform partition
            return _without_uniform(expanded[0], max(axis, 1))
        return _concat(expanded, axis)


def _without_uniform(rt, level):
    """rt with the partition of dimension `level` (>= 1) marked ragged."""
    if not isinstance(rt, RaggedTensor):
        return rt
    if level == 1:
        return _unpartitioned(rt)
    return RaggedTensor._make(_without_uniform(rt.values, level - 1), rt.row_splits, [],
                              rt.uniform_row_length)


# ---- boolean_mask --------------------------------------------------------------------------


def boolean_mask(data, mask, name=None):
    """The parts of `data` where `mask` is true (`tf.ragged.boolean_mask`): mask's shape is
    a prefix of data's; a dense vector mask keeps rows, a mask of rank k >= 2 keeps items
    within the rows of dimension k - 1 (a RaggedTensor result).

    Raises:
      ValueError: a scalar mask, or a mask whose shape is not a prefix of data's.
      TypeError: a mask that is not bool.
      InvalidArgumentError: a ragged mask whose partitions are not data's.
    """
    with graph_lib.name_scope(name, "RaggedMask", [data, mask]):
        data = _convert(data, "data")
        mask = _convert(mask, "mask", dtypes.bool)
        if mask.dtype.base_dtype != dtypes.bool:
            raise TypeError(f"mask must be a bool tensor, got {mask.dtype.name}")
        mask_rank = _rank(mask, "mask")
        if mask_rank == 0:
            raise ValueError("mask cannot be scalar.")
        data.shape[:mask_rank].assert_is_compatible_with(mask.shape)
        return _mask(data, mask)


def _mask(data, mask):
    mask_rank = mask.shape.ndims
    if isinstance(mask, RaggedTensor):
        data = as_ragged(data, mask.ragged_rank, mask.row_splits.dtype)
        checks = splits_checks(mask.nested_row_splits,
                               data.nested_row_splits[:mask.ragged_rank])
        with graph_lib.control_dependencies(checks):
            return _mask_rows(data, mask)
    if isinstance(data, RaggedTensor):
        if mask_rank == 1:
            rows = slicing_ops.boolean_mask(
                sequence_ops.range(0, data.nrows(), dtype=data.row_splits.dtype), mask)
            return _unpartitioned(gather_rows(data, rows))
        mask = RaggedTensor.from_tensor(mask, ragged_rank=min(data.ragged_rank,
                                                              mask_rank - 1),
                                        row_splits_dtype=data.row_splits.dtype)
        return _mask(data, mask)
    kept = slicing_ops.boolean_mask(data, mask)
    if mask_rank == 1:
        return kept
    counts = reduction_ops.reduce_sum(math_ops.cast(mask, dtypes.int64), axis=-1)
    result = RaggedTensor.from_row_lengths(kept, array_ops.reshape(counts, [-1]),
                                           validate=False)
    shape = array_ops.shape(mask, out_type=dtypes.int64)
    for d in reversed(range(1, mask_rank - 1)):
        result = _unpartitioned(RaggedTensor.from_uniform_row_length(
            result, shape[d], nrows=reduction_ops.reduce_prod(shape[:d]), validate=False))
    return result


def _mask_rows(data: RaggedTensor, mask: RaggedTensor):
    """data masked by a ragged mask with the same outer partitions."""
    if isinstance(mask.values, RaggedTensor):
        inner = _mask_rows(data.values, mask.values)
        return RaggedTensor.from_row_splits(inner, mask.row_splits, validate=False)
    kept = _mask(data.values, mask.values)
    if mask.shape.ndims > 2:
        splits = mask.row_splits
    else:
        counts = sequence_ops.unsorted_segment_sum(
            math_ops.cast(mask.values, mask.row_splits.dtype), mask.value_rowids(),
            mask.nrows())
        splits = joining_ops.concat([array_ops.zeros([1], counts.dtype),
                                     sequence_ops.cumsum(counts)], 0)
    return RaggedTensor.from_row_splits(kept, splits, validate=False)


# ---- size, rank, where -------------------------------------------------------------------


def size(input, name=None, out_type=dtypes.int32):  # noqa: A002 - TF's name
    """The number of scalars in `input` (`tf.size` of a RaggedTensor)."""
    rt = _convert(input, "input")
    if not isinstance(rt, RaggedTensor):
        return array_ops.size(rt, name=name, out_type=out_type)
    with graph_lib.name_scope(name, "RaggedSize", [rt]):
        return array_ops.size(rt.flat_values, out_type=out_type)


def rank(input, name=None):  # noqa: A002 - TF's name
    """The number of dimensions of `input` (`tf.rank` of a RaggedTensor)."""
    rt = _convert(input, "input")
    if not isinstance(rt, RaggedTensor):
        return array_ops.rank(rt, name=name)
    with graph_lib.name_scope(name, "RaggedRank", [rt]):
        return array_ops.rank(rt.flat_values) + rt.ragged_rank


def where(condition, x=None, y=None, name=None):
    """`tf.where` (TF1) with RaggedTensors: with x and y, x's items where `condition` is true
    and y's elsewhere (a vector condition picks whole rows); alone, the coordinates of the
    true items ([n, rank] int64).

    Raises:
      ValueError: only one of x and y.
      InvalidArgumentError: operands whose row partitions differ.
    """
    if (x is None) != (y is None):
        raise ValueError("x and y must be either both None or both non-None")
    with graph_lib.name_scope(name, "RaggedWhere", [condition, x, y]):
        cond = _convert(condition, "condition", dtypes.bool)
        if x is None:
            sparse = as_ragged(cond).to_sparse()
            return slicing_ops.boolean_mask(sparse.indices, sparse.values)
        x, y = _convert(x, "x"), _convert(y, "y")
        if not isinstance(cond, RaggedTensor) and cond.shape.ndims == 1:
            n = array_ops.shape(cond, out_type=dtypes.int64)[0]
            rows = sequence_ops.range(0, n, dtype=dtypes.int64)
            pick = comparison_ops.where(cond, rows, rows + n)
            both = _concat([x, y], 0)
            return _unpartitioned(gather_rows(both, pick))
        parts = [as_ragged(v) for v in (cond, x, y)]
        checks = splits_checks(parts[0].nested_row_splits, parts[1].nested_row_splits) + \
            splits_checks(parts[0].nested_row_splits, parts[2].nested_row_splits)
        with graph_lib.control_dependencies(checks):
            values = comparison_ops.where(*(p.flat_values for p in parts))
        return parts[1].with_flat_values(values)
