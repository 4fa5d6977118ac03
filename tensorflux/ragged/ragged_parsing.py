"""tf.io.RaggedFeature and the parse_example / parse_single_example wrappers that accept it.

A RaggedFeature is parsed as a VarLenFeature of its `value_key` (plus one int64 VarLenFeature
per keyed partition: RowSplits, RowLengths, RowStarts, RowLimits, ValueRowIds), whose values
are then partitioned, innermost partition first. parse_single_example partitions the one
example's values. parse_example starts from one row of values per example and applies
each partition within each example: row starts, limits and splits are offset by where the
example's values begin, value row ids by the rows of the examples before it (as many per
example as its largest id + 1), and a UniformRowLength groups each example's items (the
first one a dense inner dimension, as TF's).
"""

from __future__ import annotations

import collections

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    gather_ops,
    joining_ops,
    math_ops,
    parsing_ops,
    reduction_ops,
    segment_ops,
    sequence_ops,
)
from tensorflux.ragged.ragged_tensor import RaggedTensor


class RaggedFeature(collections.namedtuple(
        "RaggedFeature", ["dtype", "value_key", "partitions", "row_splits_dtype",
                          "validate"])):
    """A feature parsed as a RaggedTensor (`tf.io.RaggedFeature`)."""

    RowSplits = collections.namedtuple("RowSplits", ["key"])
    RowLengths = collections.namedtuple("RowLengths", ["key"])
    RowStarts = collections.namedtuple("RowStarts", ["key"])
    RowLimits = collections.namedtuple("RowLimits", ["key"])
    ValueRowIds = collections.namedtuple("ValueRowIds", ["key"])
    UniformRowLength = collections.namedtuple("UniformRowLength", ["length"])

    def __new__(cls, dtype, value_key=None, partitions=(), row_splits_dtype=dtypes.int32,
                validate=False):
        dtype = dtypes.as_dtype(dtype)
        if dtype not in (dtypes.int64, dtypes.float32, dtypes.string):
            raise ValueError(f"dtype must be int64, float32 or string; got {dtype!r}")
        row_splits_dtype = dtypes.as_dtype(row_splits_dtype)
        if row_splits_dtype not in (dtypes.int32, dtypes.int64):
            raise ValueError("row_splits_dtype must be int32 or int64")
        if value_key is not None and (not isinstance(value_key, str) or not value_key):
            raise ValueError(f"value_key must be a non-empty string; got {value_key!r}")
        partitions = tuple(partitions)
        kinds = (cls.RowSplits, cls.RowLengths, cls.RowStarts, cls.RowLimits,
                 cls.ValueRowIds, cls.UniformRowLength)
        for p in partitions:
            if not isinstance(p, kinds):
                raise TypeError(f"partitions must be a list of partition objects; got "
                                f"{p!r}")
        return super().__new__(cls, dtype, value_key, partitions, row_splits_dtype, validate)


_KEYED = (RaggedFeature.RowSplits, RaggedFeature.RowLengths, RaggedFeature.RowStarts,
          RaggedFeature.RowLimits, RaggedFeature.ValueRowIds)


def _varlen_needs(key, feature: RaggedFeature) -> dict:
    needs = {feature.value_key or key: feature.dtype}
    for p in feature.partitions:
        if isinstance(p, _KEYED):
            needs[p.key] = dtypes.int64
    return needs


def _assemble(key, f: RaggedFeature, parsed: dict, batched: bool):
    sp = parsed[f.value_key or key]
    dtype = f.row_splits_dtype
    if not batched:
        result = sp.values
        for p in reversed(f.partitions):
            result = _partition_one(result, p, parsed, f.validate, dtype)
        return result
    result = RaggedTensor.from_sparse(sp, row_splits_dtype=dtype)  # a row per example
    for p in reversed(f.partitions):
        result = _partition_batch(result, p, parsed, f.validate, dtype)
    return result


def _uniform(values, length, validate):
    """values grouped `length` at a time: a dense inner dim, or a uniform partition of
    ragged values."""
    if isinstance(values, RaggedTensor):
        return RaggedTensor.from_uniform_row_length(values, length, validate=validate)
    shape = array_ops.shape(values)
    return array_ops.reshape(values, joining_ops.concat([[-1, length], shape[1:]], 0))


def _partition_one(values, p, parsed, validate, dtype):
    """One example's values cut by the partition p."""
    if isinstance(p, RaggedFeature.UniformRowLength):
        return _uniform(values, math_ops.cast(p.length, dtype), validate)
    t = math_ops.cast(parsed[p.key].values, dtype)
    make = {RaggedFeature.RowSplits: RaggedTensor.from_row_splits,
            RaggedFeature.RowLengths: RaggedTensor.from_row_lengths,
            RaggedFeature.RowStarts: RaggedTensor.from_row_starts,
            RaggedFeature.RowLimits: RaggedTensor.from_row_limits,
            RaggedFeature.ValueRowIds: RaggedTensor.from_value_rowids}[type(p)]
    return make(values, t, validate=validate)


def _partition_batch(rt, p, parsed, validate, dtype):
    """rt ([examples, (items), ...]) with each example's items cut by the partition p."""
    if isinstance(p, RaggedFeature.UniformRowLength):
        length = math_ops.cast(p.length, dtype)
        return RaggedTensor.from_row_splits(_uniform(rt.values, length, validate),
                                            math_ops.floordiv(rt.row_splits, length),
                                            validate=validate)
    part = RaggedTensor.from_sparse(parsed[p.key], row_splits_dtype=dtype)
    part = part.with_flat_values(math_ops.cast(part.values, dtype))  # [examples, (k)]
    first_item = gather_ops.gather(rt.row_splits[:-1], part.value_rowids())
    if isinstance(p, RaggedFeature.RowLengths):
        inner = RaggedTensor.from_row_lengths(rt.values, part.values, validate=validate)
    elif isinstance(p, RaggedFeature.RowStarts):
        inner = RaggedTensor.from_row_starts(rt.values, part.values + first_item,
                                             validate=validate)
    elif isinstance(p, (RaggedFeature.RowLimits, RaggedFeature.RowSplits)):
        if isinstance(p, RaggedFeature.RowSplits):  # an example's splits less its 0
            part = part[:, 1:]
            first_item = gather_ops.gather(rt.row_splits[:-1], part.value_rowids())
        inner = RaggedTensor.from_row_limits(rt.values, part.values + first_item,
                                             validate=validate)
    else:  # ValueRowIds: each example has (its largest id + 1) rows
        nrows = _rows_per_example(part)
        before = sequence_ops.cumsum(nrows, exclusive=True)
        ids = part.values + gather_ops.gather(before, part.value_rowids())
        inner = RaggedTensor.from_value_rowids(rt.values, ids,
                                               nrows=reduction_ops.reduce_sum(nrows),
                                               validate=validate)
        return RaggedTensor.from_row_lengths(inner, nrows, validate=validate)
    return part.with_values(inner)


def _rows_per_example(part: RaggedTensor):
    """max(ids) + 1 per example of the value row ids `part` (0 for none)."""
    top = segment_ops.unsorted_segment_max(part.values + 1, part.value_rowids(),
                                           part.nrows())
    return math_ops.maximum(top, 0)


def parse_example(serialized, features, name=None, example_names=None):
    """`tf.io.parse_example`, with RaggedFeature entries giving RaggedTensors."""
    ragged = {k: f for k, f in (features or {}).items() if isinstance(f, RaggedFeature)}
    if not ragged:
        return parsing_ops.parse_example(serialized, features, name, example_names)
    plain = {k: f for k, f in features.items() if k not in ragged}
    merged = dict(plain)
    needs = {}
    for key, f in ragged.items():
        for k, dtype in _varlen_needs(key, f).items():
            if needs.setdefault(k, dtype) != dtype:
                raise ValueError(f"feature key {k!r} is read with two dtypes")
    common = sorted(set(needs) & set(plain))
    if common:
        raise ValueError(f"Ragged and sparse/dense keys must not intersect; intersection: "
                         f"{common}")
    merged.update({k: parsing_ops.VarLenFeature(dtype) for k, dtype in needs.items()})
    with graph_lib.name_scope(name, "ParseExample", [serialized]):
        serialized = convert_to_tensor(serialized, dtype=dtypes.string, name="serialized")
        parsed = parsing_ops.parse_example(serialized, merged, example_names=example_names)
        batched = serialized.shape.ndims != 0
        result = {k: parsed[k] for k in plain}
        examples = serialized.shape.num_elements() if batched else None
        for key, f in ragged.items():
            result[key] = _assemble(key, f, parsed, batched)
            if examples is not None:  # as many rows as examples
                result[key].row_splits.set_shape([examples + 1])
        return result


def parse_single_example(serialized, features, name=None, example_names=None):
    """`tf.io.parse_single_example`, with RaggedFeature entries giving RaggedTensors (a
    dense vector when there are no partitions)."""
    with graph_lib.name_scope(name, "ParseSingleExample", [serialized]):
        serialized = convert_to_tensor(serialized, dtype=dtypes.string, name="serialized")
        serialized.shape.assert_has_rank(0)
        return parse_example(serialized, features, example_names=example_names)
