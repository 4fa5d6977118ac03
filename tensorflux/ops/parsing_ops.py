"""Parsing ops: decode_csv, decode_raw, parse_example, parse_single_example.

`parse_example` reads serialized `tf.train.Example` protos (tensorflux/protos/example.proto,
wire-compatible with TensorFlow's) through TensorFlow's `ParseExampleV2` op: keys are
sorted, FixedLenFeature gives a dense tensor (its `default_value` fills missing features;
without one the feature is required), FixedLenSequenceFeature a dense tensor padded along
its first dimension, VarLenFeature a SparseTensor. `parse_single_example` is the same op
on one scalar record, as in TF 2's compat.v1.

Kernels: tensorflux/kernels/cpu/parsing_ops.py. Errors are TensorFlow's (InvalidArgumentError
"Field 0 in record 0 is not a valid float: x1.5", "Name: <unknown>, Feature: a (data type:
float) is required but could not be found.").
"""

from __future__ import annotations

import collections
import re

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.sparse_tensor import SparseTensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, joining_ops, math_ops, slicing_ops, sparse_ops

# The TF1 public names of this module.
__all__ = ["decode_csv", "decode_raw", "parse_example", "parse_single_example",
           "FixedLenFeature", "FixedLenSequenceFeature", "VarLenFeature", "SparseFeature"]

TensorShape = tensor_shape.TensorShape
_CSV_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.string)
_EXAMPLE_TYPES = (dtypes.float32, dtypes.int64, dtypes.string)


# ---- DecodeCSV ---------------------------------------------------------------------------


def _decode_csv_shape(op):
    records = op.inputs[0].shape
    for d in op.inputs[1:]:
        s = d.shape
        if s.ndims is not None and (s.ndims > 1 or (s.ndims == 1 and s.as_list()[0] not in (
                None, 0, 1))):
            raise ValueError("Shape of a default must be a length-0 or length-1 vector, or a "
                             "scalar.")
    return [records] * (len(op.inputs) - 1)


define_op("DecodeCSV", inputs=["records: string", "record_defaults: OUT_TYPE"],
          outputs=["output: OUT_TYPE"],
          attrs=["OUT_TYPE: list(type) >= 1", "field_delim: string = ','",
                 "use_quote_delim: bool = true", "na_value: string = ''",
                 "select_cols: list(int) = []"],
          shape_fn=_decode_csv_shape)
not_differentiable("DecodeCSV")


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, name=None,
               na_value="", select_cols=None):
    """Converts CSV records to tensors, one per column (`tf.decode_csv`).

    Args:
      records: a string tensor; each string is one CSV line.
      record_defaults: one tensor (or list) per column giving its type and its default: a
        one-element value used for empty fields, or an empty one making the column required.
        Types: float32, float64, int32, int64, string.
      field_delim: the one-character separator.
      use_quote_delim: fields in double quotes may hold separators ("" is a quote).
      name: a name for the op.
      na_value: a field equal to this is treated as empty.
      select_cols: parse only these (increasing) columns.

    Returns:
      A list of tensors with the shape of `records`, one per column.

    Raises:
      ValueError: bad `select_cols` or defaults of the wrong shape.
    """
    if select_cols is not None:
        if any(select_cols[i] >= select_cols[i + 1] for i in range(len(select_cols) - 1)):
            raise ValueError("select_cols is not strictly increasing.")
        if select_cols and select_cols[0] < 0:
            raise ValueError("select_cols contains negative values.")
        if len(select_cols) != len(record_defaults):
            raise ValueError("Length of select_cols and record_defaults do not match.")
    with graph_lib.name_scope(name, "DecodeCSV", [records]) as scope:
        records = convert_to_tensor(records, dtype=dtypes.string)
        defaults = []
        for i, d in enumerate(record_defaults):
            t = convert_to_tensor(d, name=f"record_defaults_{i}")
            if t.dtype not in _CSV_TYPES:
                raise TypeError(f"Value for attr 'OUT_TYPE' of {t.dtype.name} is not in the "
                                "list of allowed values: float, double, int32, int64, string")
            defaults.append(t)
        out = apply_op("DecodeCSV", records=records, record_defaults=defaults,
                       field_delim=field_delim, use_quote_delim=use_quote_delim,
                       na_value=na_value, select_cols=list(select_cols or []), name=scope)
    return list(out) if isinstance(out, (list, tuple)) else [out]


# ---- DecodeRaw ---------------------------------------------------------------------------


def _decode_raw_shape(op):
    return [op.inputs[0].shape.concatenate(TensorShape([None]))]


define_op("DecodeRaw", inputs=["bytes: string"], outputs=["output: out_type"],
          attrs=["out_type: {half, float, double, int32, uint16, uint8, int16, int8, int64, "
                 "complex64, complex128, bool, bfloat16}", "little_endian: bool = true"],
          shape_fn=_decode_raw_shape)
not_differentiable("DecodeRaw")


def decode_raw(input_bytes=None, out_type=None, little_endian=True, name=None, bytes=None):  # noqa: A002
    """Reinterprets the bytes of each string as a vector of `out_type` (`tf.decode_raw`).

    All strings must have the same length, a multiple of the type's size; the output has
    shape `input_bytes.shape + [length / size]`.
    """
    if input_bytes is None:
        input_bytes = bytes
    elif bytes is not None:
        raise ValueError("Cannot specify both 'input_bytes' and 'bytes'")
    return apply_op("DecodeRaw", bytes=convert_to_tensor(input_bytes, dtype=dtypes.string),
                    out_type=dtypes.as_dtype(out_type), little_endian=little_endian,
                    name=name or "DecodeRaw")


# ---- features ----------------------------------------------------------------------------


class FixedLenFeature(collections.namedtuple("FixedLenFeature",
                                             ["shape", "dtype", "default_value"])):
    """A dense feature of fixed shape (`tf.FixedLenFeature(shape, dtype, default_value)`)."""

    __slots__ = ()

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class FixedLenSequenceFeature(collections.namedtuple(
        "FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"])):
    """A dense feature with a variable first dimension, padded per batch
    (`tf.FixedLenSequenceFeature`)."""

    __slots__ = ()

    def __new__(cls, shape, dtype, allow_missing=False, default_value=None):
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """A variable-length feature, parsed to a SparseTensor (`tf.VarLenFeature`)."""

    __slots__ = ()


class SparseFeature(collections.namedtuple(
        "SparseFeature", ["index_key", "value_key", "dtype", "size", "already_sorted"])):
    """A SparseTensor assembled from an index feature (or one per dimension) and a value
    feature of each Example (`tf.SparseFeature`); `size` is the dense shape."""

    __slots__ = ()

    def __new__(cls, index_key, value_key, dtype, size, already_sorted=False):
        return super().__new__(cls, index_key, value_key, dtype, size, already_sorted)


def _split_sparse_features(features: dict) -> tuple[dict, dict]:
    """The features with each SparseFeature replaced by VarLenFeatures of its keys, and the
    SparseFeatures by their keys."""
    plain = {k: f for k, f in features.items() if not isinstance(f, SparseFeature)}
    composite = {k: f for k, f in features.items() if isinstance(f, SparseFeature)}
    for key, f in composite.items():
        index_keys = [f.index_key] if isinstance(f.index_key, str) else list(f.index_key)
        sizes = [f.size] if isinstance(f.size, int) else list(f.size)
        if len(sizes) != len(index_keys):
            raise ValueError(f"SparseFeature {key!r}: index_key and size have different "
                             f"lengths: {len(index_keys)} vs {len(sizes)}")
        for ik in index_keys:
            plain.setdefault(ik, VarLenFeature(dtypes.int64))
        plain.setdefault(f.value_key, VarLenFeature(f.dtype))
    return plain, composite


def _assemble_sparse_features(parsed: dict, composite: dict, requested: dict) -> dict:
    """parsed VarLen keys -> the SparseTensors of the SparseFeatures; drops helper keys."""
    out = {k: v for k, v in parsed.items() if k in requested}
    for key, f in composite.items():
        index_keys = [f.index_key] if isinstance(f.index_key, str) else list(f.index_key)
        sizes = [f.size] if isinstance(f.size, int) else list(f.size)
        values = parsed[f.value_key]
        outer = slicing_ops.strided_slice(values.indices, [0, 0], [0, -1], end_mask=1)
        columns = [array_ops.reshape(math_ops.cast(parsed[ik].values, dtypes.int64), [-1, 1])
                   for ik in index_keys]
        indices = joining_ops.concat([outer] + columns, 1)
        shape = joining_ops.concat([values.dense_shape[:-1],
                                    convert_to_tensor(sizes, dtype=dtypes.int64)], 0)
        sp = SparseTensor(indices, values.values, shape)
        out[key] = sp if f.already_sorted else sparse_ops.sparse_reorder(sp)
    return out


def _example_shapes(op):
    num_sparse = op.attrs["num_sparse"]
    rank = op.inputs[0].shape.ndims
    batch = op.inputs[0].shape if rank is not None else tensor_shape.unknown_shape()
    idx = TensorShape([None, None if rank is None else rank + 1])
    dense = []
    for s in op.attrs["dense_shapes"]:
        dims = s.as_list() if s.ndims is not None else None
        dense.append(batch.concatenate(TensorShape(dims)) if dims is not None else None)
    n_ragged = len(op.attrs["ragged_value_types"]) + len(op.attrs["ragged_split_types"])
    return ([idx] * num_sparse + [TensorShape([None])] * num_sparse
            + [TensorShape([None if rank is None else rank + 1])] * num_sparse + dense
            + [TensorShape([None])] * n_ragged)


define_op("ParseExampleV2",
          inputs=["serialized: string", "names: string", "sparse_keys: string",
                  "dense_keys: string", "ragged_keys: string", "dense_defaults: Tdense"],
          outputs=["sparse_indices: num_sparse * int64", "sparse_values: sparse_types",
                   "sparse_shapes: num_sparse * int64", "dense_values: Tdense",
                   "ragged_values: ragged_value_types",
                   "ragged_row_splits: ragged_split_types"],
          attrs=["Tdense: list(type) >= 0", "num_sparse: int >= 0",
                 "sparse_types: list(type) >= 0", "ragged_value_types: list(type) >= 0",
                 "ragged_split_types: list(type) >= 0", "dense_shapes: list(shape) >= 0"],
          shape_fn=_example_shapes)
not_differentiable("ParseExampleV2")


def _check_type(key, dtype):
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _EXAMPLE_TYPES:
        raise ValueError(f"Unsupported dtype {dtype.name} for feature {key!r}: expected "
                         "float32, int64 or string")
    return dtype


def _dense_default(key, feature, dtype, shape):
    """The `dense_defaults` input for one dense feature (empty: required)."""
    name = "key_" + re.sub(r"[^A-Za-z0-9_.\-/]", "_", key)
    if isinstance(feature, FixedLenSequenceFeature):
        if feature.default_value is None:
            return convert_to_tensor("" if dtype is dtypes.string else 0, dtype=dtype,
                                     name=name)
        value = convert_to_tensor(feature.default_value, dtype=dtype,
                                  name="padding_" + name[4:])
        return array_ops.reshape(value, [])
    if feature.default_value is None:
        return convert_to_tensor([], dtype=dtype, name=name)
    value = convert_to_tensor(feature.default_value, dtype=dtype, name=name)
    return array_ops.reshape(value, shape.as_list())


def parse_example(serialized, features, name=None, example_names=None):
    """Parses a batch of serialized Example protos (`tf.parse_example`).

    Args:
      serialized: a string vector of serialized `tf.train.Example`s (or a scalar).
      features: a dict from feature key to FixedLenFeature, FixedLenSequenceFeature or
        VarLenFeature.
      name: a name for the op.
      example_names: optional names of the examples, for error messages.

    Returns:
      A dict from key to a Tensor (dense features) or SparseTensor (VarLenFeature).

    Raises:
      ValueError: `features` is empty or holds an unsupported feature or dtype.
    """
    if not features:
        raise ValueError(f"Missing: features was {features}.")
    requested = features
    features, composite = _split_sparse_features(features)
    sparse_keys, sparse_types, dense_keys, dense_types, dense_shapes = [], [], [], [], []
    for key in sorted(features):
        f = features[key]
        if isinstance(f, VarLenFeature):
            sparse_keys.append(key)
            sparse_types.append(_check_type(key, f.dtype))
        elif isinstance(f, FixedLenSequenceFeature):
            dense_keys.append(key)
            dense_types.append(_check_type(key, f.dtype))
            dense_shapes.append(TensorShape([None]).concatenate(tensor_shape.as_shape(f.shape)))
            if not f.allow_missing:
                raise ValueError(f"Unsupported: FixedLenSequenceFeature requires "
                                 f"allow_missing to be True (feature {key!r}).")
        elif isinstance(f, FixedLenFeature):
            shape = tensor_shape.as_shape(f.shape)
            if not shape.is_fully_defined():
                raise ValueError(f"All dimensions of shape for feature {key} need to be "
                                 f"known but received {shape}.")
            dense_keys.append(key)
            dense_types.append(_check_type(key, f.dtype))
            dense_shapes.append(shape)
        else:
            raise ValueError(f"Invalid feature {key}:{f!r}.")
    with graph_lib.name_scope(name, "ParseExample", [serialized]):
        serialized = convert_to_tensor(serialized, dtype=dtypes.string, name="serialized")
        names = [] if example_names is None else example_names
        with graph_lib.name_scope("ParseExampleV2") as scope:
            defaults = [_dense_default(k, features[k], t, s)
                        for k, t, s in zip(dense_keys, dense_types, dense_shapes, strict=True)]
            outputs = apply_op(
                "ParseExampleV2", serialized=serialized,
                names=convert_to_tensor(names, dtype=dtypes.string, name="names"),
                sparse_keys=convert_to_tensor(sparse_keys, dtype=dtypes.string,
                                              name="sparse_keys"),
                dense_keys=convert_to_tensor(dense_keys, dtype=dtypes.string,
                                             name="dense_keys"),
                ragged_keys=convert_to_tensor([], dtype=dtypes.string, name="ragged_keys"),
                dense_defaults=defaults, Tdense=dense_types, num_sparse=len(sparse_keys),
                sparse_types=sparse_types, ragged_value_types=[], ragged_split_types=[],
                dense_shapes=dense_shapes, name=scope)
    indices, values, shapes, dense = outputs[0], outputs[1], outputs[2], outputs[3]
    result = {}
    for k, i, v, s in zip(sparse_keys, indices, values, shapes, strict=True):
        result[k] = SparseTensor(i, v, s)
    for k, d in zip(dense_keys, dense, strict=True):
        result[k] = d
    return _assemble_sparse_features(result, composite, requested) if composite else result


def parse_single_example(serialized, features, name=None, example_names=None):
    """Parses one serialized Example (`tf.parse_single_example`): like `parse_example` on a
    scalar, so dense outputs have the feature's shape and sparse ones rank 1."""
    with graph_lib.name_scope(name, "ParseSingleExample", [serialized]):
        serialized = convert_to_tensor(serialized, dtype=dtypes.string, name="serialized")
        serialized.shape.assert_has_rank(0)
        return parse_example(serialized, features, example_names=example_names)


# ---- SerializeTensor, ParseTensor --------------------------------------------------------

__all__ += ["serialize_tensor", "parse_tensor"]

define_op("SerializeTensor", inputs=["tensor: T"], outputs=["serialized: string"],
          attrs=["T: type"], shape_fn=lambda op: [TensorShape([])])
define_op("ParseTensor", inputs=["serialized: string"], outputs=["output: out_type"],
          attrs=["out_type: type"], shape_fn=lambda op: [None])
not_differentiable("SerializeTensor")
not_differentiable("ParseTensor")


def serialize_tensor(tensor, name=None):
    """The TensorProto of `tensor`, serialized (`tf.io.serialize_tensor`)."""
    return apply_op("SerializeTensor", tensor=convert_to_tensor(tensor),
                    name=name or "SerializeTensor")


def parse_tensor(serialized, out_type, name=None):
    """The tensor of a serialized TensorProto of type `out_type` (`tf.io.parse_tensor`)."""
    return apply_op("ParseTensor", serialized=convert_to_tensor(serialized, dtypes.string),
                    out_type=dtypes.as_dtype(out_type), name=name or "ParseTensor")


# ---- DecodeCompressed --------------------------------------------------------------------

__all__ += ["decode_compressed"]

define_op("DecodeCompressed", inputs=["bytes: string"], outputs=["output: string"],
          attrs=["compression_type: string = ''"], shape_fn=lambda op: [op.inputs[0].shape])
not_differentiable("DecodeCompressed")


def decode_compressed(bytes, compression_type="", name=None):  # noqa: A002
    """Decompresses each string: '' (none), 'ZLIB' or 'GZIP' (`tf.io.decode_compressed`)."""
    return apply_op("DecodeCompressed", bytes=convert_to_tensor(bytes, dtype=dtypes.string),
                    compression_type=compression_type, name=name or "DecodeCompressed")


# ---- SerializeSparse, SerializeManySparse, DeserializeSparse, DeserializeManySparse --------

__all__ += ["serialize_sparse", "serialize_many_sparse", "deserialize_many_sparse"]

_SPARSE_IN = ["sparse_indices: int64", "sparse_values: T", "sparse_shape: int64"]
# out_type=variant (what tf.data carries a SparseTensor component as) holds the three arrays
# themselves, as TensorFlow's variant holds the three Tensors.
define_op("SerializeSparse", inputs=_SPARSE_IN, outputs=["serialized_sparse: out_type"],
          attrs=["T: type", "out_type: {string, variant} = DT_STRING"],
          shape_fn=lambda op: [TensorShape([3])])
define_op("SerializeManySparse", inputs=_SPARSE_IN, outputs=["serialized_sparse: out_type"],
          attrs=["T: type", "out_type: {string, variant} = DT_STRING"],
          shape_fn=lambda op: [TensorShape([None, 3])])


def _deserialize_shape(op):
    """[?, rank], [?], [rank]: rank = the leading dimensions of [..., 3] plus the rank of the
    serialized tensors (unknown here)."""
    return [TensorShape([None, None]), TensorShape([None]), TensorShape([None])]


# DeserializeSparse: [d1, ..., dk, 3] serialized SparseTensors of one rank r -> one of rank
# k + r: indices prefixed by each one's position, dense shape [d1, ..., dk] + the largest of
# their dense shapes (tf.data batches SparseTensor components this way).
define_op("DeserializeSparse", inputs=["serialized_sparse: Tserialized"],
          outputs=["sparse_indices: int64", "sparse_values: dtype", "sparse_shape: int64"],
          attrs=["dtype: type", "Tserialized: {string, variant} = DT_STRING"],
          shape_fn=_deserialize_shape)
define_op("DeserializeManySparse", inputs=["serialized_sparse: string"],
          outputs=["sparse_indices: int64", "sparse_values: dtype", "sparse_shape: int64"],
          attrs=["dtype: type"],
          shape_fn=lambda op: [TensorShape([None, None]), TensorShape([None]),
                               TensorShape([None])])
for _op in ("SerializeSparse", "SerializeManySparse", "DeserializeSparse",
            "DeserializeManySparse"):
    not_differentiable(_op)


def _sparse_parts(sp_input):
    if not hasattr(sp_input, "_is_sparse_tensor"):
        raise TypeError(f"Input must be a SparseTensor, got {type(sp_input).__name__}")
    return dict(sparse_indices=sp_input.indices, sparse_values=sp_input.values,
                sparse_shape=sp_input.dense_shape)


def serialize_sparse(sp_input, name=None, out_type=dtypes.string):
    """A SparseTensor as 3 serialized TensorProtos (`tf.io.serialize_sparse`)."""
    return apply_op("SerializeSparse", out_type=out_type, name=name or "SerializeSparse",
                    **_sparse_parts(sp_input))


def serialize_many_sparse(sp_input, name=None, out_type=dtypes.string):
    """Each minibatch entry (first dimension) of a SparseTensor serialized, [N, 3]
    (`tf.io.serialize_many_sparse`)."""
    return apply_op("SerializeManySparse", out_type=out_type,
                    name=name or "SerializeManySparse", **_sparse_parts(sp_input))


def deserialize_sparse(serialized_sparse, dtype, rank=None, name=None):
    """The SparseTensors of [..., 3] serialized (string or variant) triples combined into one,
    their positions as its leading dimensions (TF's sparse_ops.deserialize_sparse; `rank`:
    the result's, when known)."""
    serialized_sparse = convert_to_tensor(serialized_sparse)
    indices, values, shape = apply_op("DeserializeSparse", serialized_sparse=serialized_sparse,
                                      dtype=dtypes.as_dtype(dtype),
                                      name=name or "DeserializeSparse")
    if rank is not None:
        indices.set_shape([None, rank])
        shape.set_shape([rank])
    return SparseTensor(indices, values, shape)


def deserialize_many_sparse(serialized_sparse, dtype, rank=None, name=None):
    """The SparseTensors of [N, 3] serialized rows stacked along a new first dimension
    (`tf.io.deserialize_many_sparse`)."""
    indices, values, shape = apply_op(
        "DeserializeManySparse", serialized_sparse=convert_to_tensor(serialized_sparse,
                                                                     dtypes.string),
        dtype=dtypes.as_dtype(dtype), name=name or "DeserializeManySparse")
    if rank is not None:
        indices.set_shape([None, rank])
        shape.set_shape([rank])
    return SparseTensor(indices, values, shape)



# ---- DecodeJSONExample -------------------------------------------------------------------

__all__ += ["decode_json_example"]

define_op("DecodeJSONExample", inputs=["json_examples: string"],
          outputs=["binary_examples: string"], shape_fn=lambda op: [op.inputs[0].shape])
not_differentiable("DecodeJSONExample")


def decode_json_example(json_examples, name=None):
    """Example protos in JSON (proto3 mapping) to their binary form
    (`tf.io.decode_json_example`)."""
    return apply_op("DecodeJSONExample",
                    json_examples=convert_to_tensor(json_examples, dtype=dtypes.string),
                    name=name or "DecodeJSONExample")
