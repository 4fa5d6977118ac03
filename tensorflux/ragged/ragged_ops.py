"""The tf.ragged functions: constants, placeholders, partitions, ranges, map_flat_values,
crosses, stack_dynamic_partitions, ragged_fill_empty_rows; the operators of RaggedTensor;
and (re-exported) the ragged math of ragged_math_ops.py and the array functions of
ragged_array_ops.py. All composed from ordinary ops on the row partition (no
ragged-specific kernels).
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
    sequence_ops,
    sparse_ext_ops,
    unary_ops,
)
from tensorflux.ragged import ragged_math_ops
from tensorflux.ragged.ragged_array_ops import (  # noqa: F401 - tf.ragged names
    boolean_mask,
    concat,
    expand_dims,
    gather,
    gather_nd,
    rank,
    size,
    stack,
    where,
)
from tensorflux.ragged.ragged_math_ops import (  # noqa: F401 - dispatch targets
    add_n,
    reduce_all,
    reduce_any,
    reduce_join,
    reduce_logsumexp,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_std,
    reduce_sum,
    reduce_variance,
)
from tensorflux.ragged.ragged_tensor import (
    RaggedTensor,
    _cumsum_splits,
    _splits_dtype,
    as_ragged,
    row_splits_to_segment_ids,
    splits_checks,
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
      ValueError: the RaggedTensor arguments have different ragged ranks or numbers of
        flat values.
      InvalidArgumentError: their row splits differ (when run, or now if constant).
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
    sizes = {rt.flat_values.shape.as_list()[0] for rt in found
             if rt.flat_values.shape.ndims}
    sizes.discard(None)
    if len(sizes) > 1:
        raise ValueError("Input RaggedTensors' flat_values must all have the same "
                         f"outer-dimension size.  Got sizes: {sizes}")
    checks = [c for rt in found[1:] for c in splits_checks(found[0].nested_row_splits,
                                                           rt.nested_row_splits)]
    with graph_lib.control_dependencies(checks):
        return found[0].with_flat_values(op(*args, **kwargs))


binary = ragged_math_ops.binary  # the ragged form of a binary elementwise function
add = binary(math_ops.add)
subtract = binary(math_ops.subtract)
multiply = binary(math_ops.multiply)
truediv = binary(math_ops.truediv)
divide = truediv
floordiv = binary(math_ops.floordiv)
mod = binary(math_ops.floormod)
pow = binary(math_ops.pow)  # noqa: A001
maximum = binary(math_ops.maximum)
minimum = binary(math_ops.minimum)


def _install_operators():
    for op_name, fn in (("add", add), ("sub", subtract), ("mul", multiply),
                        ("truediv", truediv), ("floordiv", floordiv), ("mod", mod),
                        ("pow", pow)):
        setattr(RaggedTensor, f"__{op_name}__", lambda a, b, _fn=fn: _fn(a, b))
        setattr(RaggedTensor, f"__r{op_name}__", lambda a, b, _fn=fn: _fn(b, a))
    for op_name, fn in (("and", binary(comparison_ops.logical_and)),
                        ("or", binary(comparison_ops.logical_or)),
                        ("xor", binary(comparison_ops.logical_xor))):
        setattr(RaggedTensor, f"__{op_name}__", lambda a, b, _fn=fn: _fn(a, b))
        setattr(RaggedTensor, f"__r{op_name}__", lambda a, b, _fn=fn: _fn(b, a))
    for op_name, fn in (("lt", comparison_ops.less), ("le", comparison_ops.less_equal),
                        ("gt", comparison_ops.greater),
                        ("ge", comparison_ops.greater_equal)):
        setattr(RaggedTensor, f"__{op_name}__", lambda a, b, _fn=binary(fn): _fn(a, b))
    RaggedTensor.__neg__ = lambda a: map_flat_values(unary_ops.negative, a)
    RaggedTensor.__abs__ = lambda a: map_flat_values(unary_ops.abs, a)
    RaggedTensor.__invert__ = lambda a: map_flat_values(comparison_ops.logical_not, a)


_install_operators()


# ---- crosses, stack_dynamic_partitions ---------------------------------------------------


def _cross_sparse(inputs):
    out = []
    for x in inputs:
        rt = as_ragged(x)
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
