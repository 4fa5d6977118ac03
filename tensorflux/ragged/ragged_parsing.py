"""tf.io.RaggedFeature and the parse_example / parse_single_example wrappers that accept it.

A RaggedFeature is parsed as a VarLenFeature of its `value_key` (plus one int64 VarLenFeature
per RowLengths partition key), whose per-example values are then partitioned: innermost
partition first, then one row per example (parse_example) or none (parse_single_example).
Supported partitions: RowLengths and UniformRowLength; the other TF partition kinds raise
NotImplementedError.
"""

from __future__ import annotations

import collections

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import math_ops, parsing_ops
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


def _varlen_needs(key, feature: RaggedFeature) -> dict:
    needs = {feature.value_key or key: feature.dtype}
    for p in feature.partitions:
        if isinstance(p, RaggedFeature.RowLengths):
            needs[p.key] = dtypes.int64
        elif not isinstance(p, RaggedFeature.UniformRowLength):
            raise NotImplementedError(f"RaggedFeature partition {type(p).__name__} is not "
                                      "supported by tensorflux (RowLengths and "
                                      "UniformRowLength are)")
    return needs


def _assemble(key, f: RaggedFeature, parsed: dict, batched: bool):
    sp = parsed[f.value_key or key]
    result = sp.values
    for p in reversed(f.partitions):
        if isinstance(p, RaggedFeature.RowLengths):
            result = RaggedTensor.from_row_lengths(result, parsed[p.key].values,
                                                   validate=f.validate)
        else:
            result = RaggedTensor.from_uniform_row_length(
                result, math_ops.cast(p.length, dtypes.int64), validate=f.validate)
    if batched:
        if f.partitions and isinstance(f.partitions[0], RaggedFeature.RowLengths):
            outer = parsed[f.partitions[0].key]
        elif f.partitions:
            raise NotImplementedError("parse_example: an outermost UniformRowLength "
                                      "partition is not supported by tensorflux")
        else:
            outer = sp
        counts = RaggedTensor.from_sparse(outer).row_lengths()
        result = RaggedTensor.from_row_lengths(result, counts, validate=f.validate)
    if isinstance(result, RaggedTensor):
        result = result.with_row_splits_dtype(f.row_splits_dtype)
    return result


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
        for key, f in ragged.items():
            result[key] = _assemble(key, f, parsed, batched)
        return result


def parse_single_example(serialized, features, name=None, example_names=None):
    """`tf.io.parse_single_example`, with RaggedFeature entries giving RaggedTensors (a
    dense vector when there are no partitions)."""
    with graph_lib.name_scope(name, "ParseSingleExample", [serialized]):
        serialized = convert_to_tensor(serialized, dtype=dtypes.string, name="serialized")
        serialized.shape.assert_has_rank(0)
        return parse_example(serialized, features, example_names=example_names)
