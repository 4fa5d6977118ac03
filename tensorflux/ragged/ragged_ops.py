"""The tf.ragged functions and the ragged forms of elementwise math, reductions along the
ragged axis, gather, concat and stack, all composed from ordinary ops on the row partition
(no ragged-specific kernels).
"""

from __future__ import annotations

import builtins
import collections

import numpy as np

from tensorflux.debugging import check_ops
from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    constant_op,
    gather_ops,
    joining_ops,
    math_ext_ops,
    math_ops,
    reduction_ops,
    segment_ops,
    sequence_ops,
    slicing_ops,
    sparse_ext_ops,
    unary_ops,
)
from tensorflux.ragged.ragged_tensor import (
    RaggedTensor,
    _cumsum_splits,
    _splits_dtype,
    row_splits_to_segment_ids,
)
from tensorflux.ragged.ragged_tensor_value import RaggedTensorValue

# ---- constants ---------------------------------------------------------------------------


def _depth(x) -> int | None:
    """Nesting depth of the scalars in `x` (None: no scalar in it); ValueError if mixed."""
    if not isinstance(x, (list, tuple)):
        return 0
    depths = {d for d in (_depth(item) for item in x) if d is not None}
    if len(depths) > 1:
        raise ValueError("all scalar values must have the same nesting depth")
    return depths.pop() + 1 if depths else None


def _list_depth(x) -> int:
    if not isinstance(x, (list, tuple)):
        return 0
    return 1 + max((_list_depth(i) for i in x), default=0)


def _default_numpy_dtype(flat: list):
    arr = np.array(flat, dtype=object) if not flat else np.array(flat)
    if arr.dtype.kind in "SUO" and arr.size:
        return object
    if arr.dtype.kind == "f":
        return np.float32
    if arr.dtype.kind in "iu":
        return np.int32
    if arr.dtype.kind == "b":
        return np.bool_
    return np.float32


def _split_levels(pylist, ragged_rank, splits_np):
    """Nested splits (one per ragged level) and the remaining items as a flat list."""
    nested, items = [], list(pylist)
    for _ in builtins.range(ragged_rank):
        splits, nxt = [0], []
        for item in items:
            if not isinstance(item, (list, tuple)):
                raise ValueError("pylist has scalar values at a ragged level")
            nxt.extend(item)
            splits.append(len(nxt))
        nested.append(np.asarray(splits, splits_np))
        items = nxt
    return nested, items


def _constant_parts(pylist, dtype, ragged_rank, inner_shape, splits_dtype):
    if isinstance(pylist, np.ndarray):
        pylist = pylist.tolist()
    depth = _depth(pylist)
    inner = () if inner_shape is None else tuple(inner_shape)
    if depth is None:  # no scalars: the depth of the nested lists
        depth = max(_list_depth(pylist), (ragged_rank or 0) + 1 + len(inner))
    if ragged_rank is None:
        ragged_rank = max(0, depth - 1 - len(inner))
    if ragged_rank < 0:
        raise ValueError(f"Invalid ragged_rank={ragged_rank}: must be nonnegative")
    if depth and ragged_rank >= depth and depth > 0:
        raise ValueError(f"Invalid pylist={pylist!r}: incompatible with ragged_rank="
                         f"{ragged_rank}")
    nested, flat = _split_levels(pylist, ragged_rank, splits_dtype.as_numpy_dtype)
    np_dtype = dtype.as_numpy_dtype if dtype is not None else _default_numpy_dtype(flat)
    if dtype is not None and dtype == dtypes.string:
        np_dtype = object
    try:
        values = np.array(flat, dtype=np_dtype)
    except ValueError as e:
        raise ValueError("inner values have inconsistent shape") from e
    if values.dtype == object and values.ndim != 1 + (depth - 1 - ragged_rank):
        raise ValueError("inner values have inconsistent shape")
    if not flat:
        values = values.reshape((0,) + inner)
    elif inner and tuple(values.shape[1:]) != inner:
        values = values.reshape((-1,) + inner)
    return nested, values


def constant_value(pylist, dtype=None, ragged_rank=None, inner_shape=None,
                   row_splits_dtype="int64") -> RaggedTensorValue | np.ndarray:
    """A nested Python list as a RaggedTensorValue of NumPy arrays
    (`tf.ragged.constant_value`); Python ints become int64 and floats float64 unless
    `dtype` says otherwise.

    Raises:
      ValueError: scalars at different depths, or inner values of different shapes.
    """
    splits_dtype = _splits_dtype(row_splits_dtype)
    np_dtype = None if dtype is None else dtypes.as_dtype(dtype)
    nested, values = _constant_parts(pylist, np_dtype, ragged_rank, inner_shape, splits_dtype)
    if dtype is None and values.dtype == np.int32:
        values = values.astype(np.int64)
    elif dtype is None and values.dtype == np.float32:
        values = values.astype(np.float64)
    result = values
    for splits in reversed(nested):
        result = RaggedTensorValue(result, splits)
    return result


def constant(pylist, dtype=None, ragged_rank=None, inner_shape=None, name=None,
             row_splits_dtype=dtypes.int64):
    """A nested Python list as a constant RaggedTensor (`tf.ragged.constant`); Python ints
    become int32 and floats float32, as with `tf.constant`.

    Raises:
      ValueError: scalars at different depths, or inner values of different shapes.
    """
    splits_dtype = _splits_dtype(row_splits_dtype)
    dtype = None if dtype is None else dtypes.as_dtype(dtype)
    with graph_lib.name_scope(name, "RaggedConstant", []):
        nested, values = _constant_parts(pylist, dtype, ragged_rank, inner_shape,
                                         splits_dtype)
        result = constant_op.constant(values, dtype=dtype or (
            dtypes.string if values.dtype == object else None), name="values")
        for splits in reversed(nested):
            result = RaggedTensor.from_row_splits(
                result, constant_op.constant(splits), validate=False)
        return result


def placeholder(dtype, ragged_rank, value_shape=None, name=None) -> RaggedTensor:
    """A RaggedTensor to be fed with a RaggedTensorValue (`tf.ragged.placeholder`): one
    placeholder for the flat values and one per row_splits."""
    if ragged_rank < 1:
        raise ValueError("ragged_rank must be at least 1")
    inner = tensor_shape.TensorShape(value_shape if value_shape is not None else [])
    with graph_lib.name_scope(name, "RaggedPlaceholder", []):
        result = array_ops.placeholder(dtype, tensor_shape.TensorShape([None]).concatenate(
            inner), name="flat_values")
        for i in reversed(builtins.range(ragged_rank)):
            splits = array_ops.placeholder(dtypes.int64, [None], name=f"row_splits_{i}")
            result = RaggedTensor.from_row_splits(result, splits, validate=False)
        return result


# ---- partitions --------------------------------------------------------------------------


def segment_ids_to_row_splits(segment_ids, num_segments=None, out_type=None, name=None):
    """row_splits from sorted segment ids (`tf.ragged.segment_ids_to_row_splits`)."""
    with graph_lib.name_scope(name, "SegmentIdsToRaggedSplits", [segment_ids]):
        ids = convert_to_tensor(segment_ids, name="segment_ids")
        out_type = ids.dtype if out_type is None else _splits_dtype(out_type)
        ids = math_ops.cast(ids, out_type)
        if num_segments is None:
            n = array_ops.size(ids, out_type=out_type)
            num_segments = comparison_ops.where(
                n > 0, reduction_ops.reduce_max(ids) + 1, math_ops.cast(0, out_type))
        num_segments = math_ops.cast(convert_to_tensor(num_segments), out_type)
        lengths = sequence_ops.unsorted_segment_sum(array_ops.ones_like(ids), ids,
                                                    num_segments)
        return _cumsum_splits(lengths)


def range(starts, limits=None, deltas=1, dtype=None, name=None,  # noqa: A001 - TF's name
          row_splits_dtype=dtypes.int64) -> RaggedTensor:
    """Row i is `tf.range(starts[i], limits[i], deltas[i])`, broadcasting the three
    (`tf.ragged.range`)."""
    splits_dtype = _splits_dtype(row_splits_dtype)
    if limits is None:
        starts, limits = 0, starts
    with graph_lib.name_scope(name, "RaggedRange", [starts, limits, deltas]):
        parts = [convert_to_tensor(v, dtype=dtype) for v in (starts, limits, deltas)]
        if dtype is None:
            order = [dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64]
            dtype = max((p.dtype.base_dtype for p in parts), key=order.index)
        parts = [math_ops.cast(p, dtype) for p in parts]
        if all(p.shape.ndims == 0 for p in parts):
            parts = [array_ops.reshape(p, [1]) for p in parts]
        shape = joining_ops.broadcast_dynamic_shape(
            joining_ops.broadcast_dynamic_shape(array_ops.shape(parts[0]),
                                                array_ops.shape(parts[1])),
            array_ops.shape(parts[2]))
        start, limit, delta = [joining_ops.broadcast_to(p, shape) for p in parts]
        span = math_ops.cast(limit - start, dtypes.float64) / math_ops.cast(delta,
                                                                            dtypes.float64)
        lengths = math_ops.cast(math_ops.maximum(unary_ops.ceil(span), 0.0), splits_dtype)
        splits = _cumsum_splits(lengths)
        ids = row_splits_to_segment_ids(splits)
        pos = sequence_ops.range(0, splits[-1], dtype=splits_dtype) - \
            gather_ops.gather(splits, ids)
        values = gather_ops.gather(start, ids) + math_ops.cast(pos, dtype) * \
            gather_ops.gather(delta, ids)
        return RaggedTensor.from_row_splits(values, splits, validate=False)


# ---- elementwise -------------------------------------------------------------------------


def map_flat_values(op, *args, **kwargs):
    """`op` applied to the flat values of the RaggedTensor arguments, the result given their
    (shared) nested row splits (`tf.ragged.map_flat_values`).

    Without a RaggedTensor argument `op` is simply called.

    Raises:
      ValueError: the RaggedTensor arguments have different ragged ranks.
    """
    found = []

    def flat(x):
        if isinstance(x, RaggedTensor):
            found.append(x)
            return x.flat_values
        if isinstance(x, (list, tuple)):
            items = [flat(i) for i in x]
            return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
        if isinstance(x, dict):
            return {k: flat(v) for k, v in x.items()}
        return x

    args = flat(list(args))
    kwargs = flat(kwargs)
    if not found:
        return op(*args, **kwargs)
    ranks = {rt.ragged_rank for rt in found}
    if len(ranks) > 1:
        raise ValueError("All ragged inputs must have the same ragged_rank.")
    return found[0].with_flat_values(op(*args, **kwargs))


def _dense_operand(rt: RaggedTensor, t):
    """Dense `t` as an operand for `rt`'s flat values (broadcasting as TF does where cheap:
    over the inner dense dims, or a [nrows, 1, ...] tensor against a ragged_rank 1 tensor).
    """
    t = convert_to_tensor(t, dtype=rt.dtype, name="y")
    rank = t.shape.ndims
    inner = rt.flat_values.shape.ndims
    if rank is not None and inner is not None and rank <= inner - 1:
        return t
    if rank is not None and inner is not None and rt.ragged_rank == 1 and rank == inner + 1 \
            and t.shape[1].value == 1:
        per_row = array_ops.squeeze(t, [1])
        if t.shape[0].value == 1:
            return per_row[0]
        return gather_ops.gather(per_row, rt.value_rowids())
    raise NotImplementedError(f"ragged math: cannot broadcast a dense {t.shape} tensor "
                              f"against a RaggedTensor of shape {rt.shape}")


def _same_partitions(x: RaggedTensor, y: RaggedTensor):
    """Assertions that x and y have the same nested row splits (none where shared)."""
    if x.ragged_rank != y.ragged_rank:
        raise ValueError("the RaggedTensors must have the same ragged_rank")
    checks = []
    for a, b in zip(x.nested_row_splits, y.nested_row_splits, strict=True):
        if a is not b:
            b = math_ops.cast(b, a.dtype)
            same_size = comparison_ops.equal(array_ops.size(a), array_ops.size(b))
            checks.append(check_ops.assert_equal(
                same_size, True, message="Inputs must have identical ragged splits"))
            with graph_lib.control_dependencies(checks[-1:]):
                checks.append(check_ops.assert_equal(
                    a, b, message="Inputs must have identical ragged splits"))
    return checks


def _binary(fn):
    def apply(x, y, name=None):
        if isinstance(x, RaggedTensorValue):
            x = RaggedTensor._from_value(x)
        if isinstance(y, RaggedTensorValue):
            y = RaggedTensor._from_value(y)
        if isinstance(x, RaggedTensor) and isinstance(y, RaggedTensor):
            checks = _same_partitions(x, y)
            with graph_lib.control_dependencies(checks):
                return x.with_flat_values(fn(x.flat_values, y.flat_values, name=name))
        if isinstance(x, RaggedTensor):
            return x.with_flat_values(fn(x.flat_values, _dense_operand(x, y), name=name))
        return y.with_flat_values(fn(_dense_operand(y, x), y.flat_values, name=name))
    return apply


binary = _binary  # the ragged form of a binary elementwise function
add = _binary(math_ops.add)
subtract = _binary(math_ops.subtract)
multiply = _binary(math_ops.multiply)
truediv = _binary(math_ops.truediv)
divide = truediv
floordiv = _binary(math_ops.floordiv)
mod = _binary(math_ops.floormod)
pow = _binary(math_ops.pow)  # noqa: A001
maximum = _binary(math_ops.maximum)
minimum = _binary(math_ops.minimum)


def _install_operators():
    for op_name, fn in (("add", add), ("sub", subtract), ("mul", multiply),
                        ("truediv", truediv), ("floordiv", floordiv), ("mod", mod),
                        ("pow", pow)):
        setattr(RaggedTensor, f"__{op_name}__", lambda a, b, _fn=fn: _fn(a, b))
        setattr(RaggedTensor, f"__r{op_name}__", lambda a, b, _fn=fn: _fn(b, a))
    RaggedTensor.__neg__ = lambda a: map_flat_values(unary_ops.negative, a)
    RaggedTensor.__abs__ = lambda a: map_flat_values(unary_ops.abs, a)


_install_operators()


# ---- reductions, gather, concat, stack, boolean_mask -------------------------------------


def _reduce(segment_fn, rt: RaggedTensor, axis, keepdims=False, name=None, mean=False):
    """`rt` reduced along `axis`: None (everything), the innermost ragged axis (within each
    row), an inner dense axis, or axis 0 of a 2-D ragged tensor (over rows)."""
    if axis is None:
        return segment_fn(rt.flat_values, None)
    if axis < 0:
        axis += rt.shape.ndims
    if axis > rt.ragged_rank:
        return rt.with_flat_values(segment_fn(rt.flat_values, ("dense", axis - rt.ragged_rank,
                                                               keepdims)))
    if axis > 1:
        return rt.with_values(_reduce(segment_fn, rt.values, axis - 1, keepdims))
    if axis == 1 and rt.ragged_rank == 1:
        ids = rt.value_rowids()
        out = segment_fn(rt.values, (ids, rt.nrows()))
        return array_ops.expand_dims(out, 1) if keepdims else out
    if axis == 0 and rt.ragged_rank == 1 and rt.flat_values.shape.ndims == 1:
        splits = rt.row_splits
        n = array_ops.size(rt.values, out_type=splits.dtype)
        cols = sequence_ops.range(0, n, dtype=splits.dtype) - gather_ops.gather(
            splits, rt.value_rowids())
        width = reduction_ops.reduce_max(joining_ops.concat(
            [array_ops.zeros([1], splits.dtype), rt.row_lengths()], 0))
        out = segment_fn(rt.values, (cols, width))
        return array_ops.expand_dims(out, 0) if keepdims else out
    raise NotImplementedError("ragged reductions support axis=None, the innermost ragged "
                              "axis, the dense inner axes, and axis=0 of a 2-D ragged "
                              "tensor")


def _reduction(unsorted_fn, dense_fn, mean=False):
    def segment(values, seg):
        if seg is None:
            return dense_fn(values)
        if seg[0] == "dense":
            return dense_fn(values, axis=seg[1], keepdims=seg[2])
        ids, n = seg
        if mean:
            total = sequence_ops.unsorted_segment_sum(values, ids, n)
            count = sequence_ops.unsorted_segment_sum(array_ops.ones_like(values), ids, n)
            return math_ops.truediv(total, count)
        return unsorted_fn(values, ids, n)

    def reduce(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
        if axis is None and reduction_indices is not None:
            axis = reduction_indices
        if isinstance(axis, (list, tuple)):
            if len(axis) != 1:
                raise NotImplementedError("ragged reductions take a single axis")
            axis = axis[0]
        keep = bool(keepdims or keep_dims)
        with graph_lib.name_scope(name, "RaggedReduce", [input_tensor]):
            return _reduce(segment, input_tensor, axis, keep)
    return reduce


reduce_sum = _reduction(sequence_ops.unsorted_segment_sum, reduction_ops.reduce_sum)
reduce_max = _reduction(segment_ops.unsorted_segment_max, reduction_ops.reduce_max)
reduce_min = _reduction(segment_ops.unsorted_segment_min, reduction_ops.reduce_min)
reduce_prod = _reduction(segment_ops.unsorted_segment_prod, reduction_ops.reduce_prod)
reduce_mean = _reduction(None, reduction_ops.reduce_mean, mean=True)


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """The rows of ragged `params` at dense `indices` (axis 0; `tf.gather` on ragged)."""
    if axis not in (None, 0) or batch_dims != 0:
        raise NotImplementedError("ragged gather supports axis=0, batch_dims=0")
    with graph_lib.name_scope(name, "RaggedGather", [params, indices]):
        idx = convert_to_tensor(indices, name="indices")
        if idx.shape.ndims != 1:
            raise NotImplementedError("ragged gather takes a vector of indices")
        return _gather_rows(params, math_ops.cast(idx, params.row_splits.dtype))


def _gather_rows(rt: RaggedTensor, idx):
    splits = rt.row_splits
    starts = gather_ops.gather(splits[:-1], idx)
    lengths = gather_ops.gather(rt.row_lengths(), idx)
    new_splits = _cumsum_splits(lengths)
    ids = row_splits_to_segment_ids(new_splits)
    total = new_splits[-1]
    pos = sequence_ops.range(0, total, dtype=splits.dtype) - gather_ops.gather(new_splits, ids)
    value_idx = gather_ops.gather(starts, ids) + pos
    if isinstance(rt.values, RaggedTensor):
        values = _gather_rows(rt.values, value_idx)
    else:
        values = gather_ops.gather(rt.values, value_idx)
    return RaggedTensor.from_row_splits(values, new_splits, validate=False)


def _as_ragged(x, splits_dtype=dtypes.int64):
    if isinstance(x, RaggedTensor):
        return x
    if isinstance(x, RaggedTensorValue):
        return RaggedTensor._from_value(x)
    return RaggedTensor.from_tensor(x, row_splits_dtype=splits_dtype)


def concat(values, axis, name=None):
    """Ragged concatenation along axis 0 (rows after rows) or 1 (row i joined with row i)
    (`tf.concat` on ragged, ragged_rank 1)."""
    with graph_lib.name_scope(name, "RaggedConcat", values):
        rts = [_as_ragged(v) for v in values]
        if any(rt.ragged_rank != 1 for rt in rts):
            raise NotImplementedError("ragged concat supports ragged_rank 1")
        if axis < 0:
            axis += rts[0].shape.ndims
        if axis == 0:
            vals = joining_ops.concat([rt.values for rt in rts], 0)
            lengths = joining_ops.concat([rt.row_lengths() for rt in rts], 0)
            return RaggedTensor.from_row_lengths(vals, lengths, validate=False)
        if axis == 1:
            stacked = concat(rts, 0)
            n = rts[0].nrows()
            k = len(rts)
            # Row i of input j sits at j * n + i; interleave to i * k + j.
            order = array_ops.reshape(array_ops.transpose(array_ops.reshape(
                sequence_ops.range(0, n * k, dtype=n.dtype), [k, -1])), [-1])
            inter = _gather_rows(stacked, order)
            lengths = reduction_ops.reduce_sum(
                array_ops.reshape(inter.row_lengths(), [-1, k]), axis=1)
            return RaggedTensor.from_row_lengths(inter.values, lengths, validate=False)
        raise NotImplementedError("ragged concat supports axis 0 and 1")


def stack(values, axis=0, name=None):
    """The inputs as the rows of a new outer ragged dimension (`tf.ragged.stack`, axis 0)."""
    if axis != 0:
        raise NotImplementedError("ragged stack supports axis=0")
    with graph_lib.name_scope(name, "RaggedStack", values):
        rts = [_as_ragged(v) for v in values]
        inner = concat(rts, 0)
        outer = joining_ops.stack([rt.nrows() for rt in rts])
        return RaggedTensor.from_row_lengths(inner, outer, validate=False)


def boolean_mask(data, mask, name=None):
    """The elements (or rows) of `data` where `mask` is true; a ragged mask filters the
    values within each row (`tf.ragged.boolean_mask`, ragged_rank 1 or dense)."""
    with graph_lib.name_scope(name, "RaggedMask", [data, mask]):
        if isinstance(mask, RaggedTensor):
            rt = _as_ragged(data)
            keep = mask.values
            vals = slicing_ops.boolean_mask(rt.values, keep)
            ids = slicing_ops.boolean_mask(rt.value_rowids(), keep)
            return RaggedTensor.from_value_rowids(vals, ids, rt.nrows(), validate=False)
        mask = convert_to_tensor(mask, dtype=dtypes.bool, name="mask")
        if isinstance(data, RaggedTensor):
            if mask.shape.ndims != 1:
                raise NotImplementedError("a dense mask of a RaggedTensor must be a vector")
            rows = slicing_ops.boolean_mask(
                sequence_ops.range(0, data.nrows(), dtype=data.row_splits.dtype), mask)
            return _gather_rows(data, rows)
        return slicing_ops.boolean_mask(data, mask)


# ---- crosses, stack_dynamic_partitions ---------------------------------------------------


def _cross_sparse(inputs):
    out = []
    for x in inputs:
        rt = _as_ragged(x)
        if rt.ragged_rank != 1 or rt.flat_values.shape.ndims != 1:
            raise ValueError("tf.ragged.cross takes 2-D ragged or dense inputs")
        out.append(rt.to_sparse())
    return out


def cross(inputs, name=None):
    """The string crosses of the rows of 2-D ragged or dense features
    (`tf.ragged.cross`): row i holds every combination of one value of row i of each
    input, joined with "_X_"."""
    with graph_lib.name_scope(name, "RaggedCross", inputs):
        return RaggedTensor.from_sparse(sparse_ext_ops.sparse_cross(_cross_sparse(inputs)))


def cross_hashed(inputs, num_buckets=0, hash_key=None, name=None):
    """`cross` with each combination as its int64 fingerprint (modulo `num_buckets` when
    positive) (`tf.ragged.cross_hashed`)."""
    with graph_lib.name_scope(name, "RaggedCross", inputs):
        return RaggedTensor.from_sparse(sparse_ext_ops.sparse_cross_hashed(
            _cross_sparse(inputs), num_buckets, hash_key))


def stack_dynamic_partitions(data, partitions, num_partitions, name=None):
    """Row p holds, in order, the elements of `data` whose partition is p
    (`tf.ragged.stack_dynamic_partitions`)."""
    with graph_lib.name_scope(name, "SegmentStack", [data, partitions, num_partitions]):
        data = convert_to_tensor(data, name="data")
        parts = convert_to_tensor(partitions, name="partitions")
        if parts.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
            raise TypeError("partitions must be int32 or int64")
        if parts.shape.ndims == 0:
            raise ValueError("partitions must have rank > 0")
        if parts.shape.ndims is not None and parts.shape.ndims > 1:
            data = array_ops.reshape(data, joining_ops.concat(
                [[-1], array_ops.shape(data)[parts.shape.ndims:]], 0))
            parts = array_ops.reshape(parts, [-1])
        parts = math_ops.cast(parts, dtypes.int64)
        n = math_ops.cast(convert_to_tensor(num_partitions, name="num_partitions"),
                          dtypes.int64)
        check = check_ops.assert_less(parts, n, message="partitions must be less than "
                                      "num_partitions")
        check2 = check_ops.assert_non_negative(parts, message="partitions must be "
                                               "non-negative")
        with graph_lib.control_dependencies([check, check2]):
            order = math_ext_ops.argsort(parts, stable=True)
        lengths = sequence_ops.unsorted_segment_sum(array_ops.ones_like(parts), parts, n)
        return RaggedTensor.from_row_lengths(gather_ops.gather(data, order), lengths,
                                             validate=False)


# ---- ragged_fill_empty_rows --------------------------------------------------------------

RaggedFillEmptyRows = collections.namedtuple(
    "RaggedFillEmptyRows",
    ["output_value_rowids", "output_values", "empty_row_indicator", "reverse_index_map"])
RaggedFillEmptyRowsGrad = collections.namedtuple("RaggedFillEmptyRowsGrad",
                                                 ["d_values", "d_default_value"])


def ragged_fill_empty_rows(value_rowids, values, nrows, default_value, name=None):
    """Gives each empty row one `default_value` (`tf.ragged_fill_empty_rows`): the new value
    row ids and values, which rows were empty, and where each old value went."""
    with graph_lib.name_scope(name, "RaggedFillEmptyRows", [value_rowids, values]):
        ids = convert_to_tensor(value_rowids, dtype=dtypes.int64, name="value_rowids")
        vals = convert_to_tensor(values, name="values")
        n = convert_to_tensor(nrows, dtype=dtypes.int64, name="nrows")
        default = convert_to_tensor(default_value, dtype=vals.dtype, name="default_value")
        lengths = sequence_ops.unsorted_segment_sum(array_ops.ones_like(ids), ids, n)
        empty = comparison_ops.equal(lengths, 0)
        splits = _cumsum_splits(lengths)
        new_splits = _cumsum_splits(math_ops.maximum(lengths, 1))
        out_ids = row_splits_to_segment_ids(new_splits)
        count = array_ops.size(ids, out_type=dtypes.int64)
        reverse = gather_ops.gather(new_splits, ids) + sequence_ops.range(
            0, count, dtype=dtypes.int64) - gather_ops.gather(splits, ids)
        total = new_splits[-1]
        pos = sequence_ops.range(0, total, dtype=dtypes.int64) - gather_ops.gather(
            new_splits, out_ids)
        src = gather_ops.gather(splits, out_ids) + pos
        padded = joining_ops.concat([vals, array_ops.expand_dims(default, 0)], 0)
        src = comparison_ops.where(gather_ops.gather(empty, out_ids),
                                   array_ops.zeros_like(src) + count, src)
        return RaggedFillEmptyRows(out_ids, gather_ops.gather(padded, src), empty, reverse)


def ragged_fill_empty_rows_grad(reverse_index_map, grad_values, name=None):
    """The gradients of ragged_fill_empty_rows for `values` and `default_value`
    (`tf.ragged_fill_empty_rows_grad`)."""
    with graph_lib.name_scope(name, "RaggedFillEmptyRowsGrad", [reverse_index_map]):
        grad = convert_to_tensor(grad_values, name="grad_values")
        d_values = gather_ops.gather(grad, reverse_index_map)
        d_default = reduction_ops.reduce_sum(grad) - reduction_ops.reduce_sum(d_values)
        return RaggedFillEmptyRowsGrad(d_values, d_default)
