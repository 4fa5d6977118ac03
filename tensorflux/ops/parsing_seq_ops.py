"""SequenceExample parsing: parse_sequence_example, parse_single_sequence_example.

A `tf.train.SequenceExample` has `context` features (one Features map, parsed exactly like
an Example's: FixedLenFeature to a dense tensor, VarLenFeature or SparseFeature to a
SparseTensor) and `feature_lists` (per key, one Feature per time step). Sequence features
are FixedLenSequenceFeature (a dense [steps] + shape tensor, padded with zeros across a
batch, plus its length per example) or VarLenFeature (a SparseTensor indexed by
[example,] step, value).

Both wrappers build TensorFlow's `ParseSequenceExampleV2` op, as TensorFlow 2's compat.v1
does (the single form on a scalar record). Ragged features are not supported (tensorflux
has no RaggedTensor): the op's ragged key inputs must be empty.

Kernels: tensorflux/kernels/cpu/parsing_seq_ops.py, which share the feature decoding of
ParseExampleV2 (tensorflux/kernels/cpu/parsing_ops.py).
"""

from __future__ import annotations

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.sparse_tensor import SparseTensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops.parsing_ops import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    VarLenFeature,
    _assemble_sparse_features,
    _check_type,
    _dense_default,
    _split_sparse_features,
)

__all__ = ["parse_sequence_example", "parse_single_sequence_example"]

TensorShape = tensor_shape.TensorShape


def _seq_example_shapes(op):
    a = op.attrs
    rank = op.inputs[0].shape.ndims
    batch = op.inputs[0].shape if rank is not None else tensor_shape.unknown_shape()
    nc, nf = a["Ncontext_sparse"], a["Nfeature_list_sparse"]

    def sparse(n, extra):
        width = None if rank is None else rank + extra
        return ([TensorShape([None, width])] * n + [TensorShape([None])] * n
                + [TensorShape([width])] * n)

    def dense(shapes, steps):
        out = []
        for s in shapes:
            inner = TensorShape([None]) if steps else TensorShape([])
            out.append(batch.concatenate(inner).concatenate(s) if s.ndims is not None
                       else None)
        return out

    n_ragged_ctx = len(a["context_ragged_value_types"]) + len(a["context_ragged_split_types"])
    n_ragged_fl = (len(a["feature_list_ragged_value_types"])
                   + 2 * len(a["feature_list_ragged_split_types"]))
    return (sparse(nc, 1) + dense(a["context_dense_shapes"], False)
            + [TensorShape([None])] * n_ragged_ctx
            + sparse(nf, 2) + dense(a["feature_list_dense_shapes"], True)
            + [batch] * a["Nfeature_list_dense"] + [TensorShape([None])] * n_ragged_fl)


define_op(
    "ParseSequenceExampleV2",
    inputs=["serialized: string", "debug_name: string", "context_sparse_keys: string",
            "context_dense_keys: string", "context_ragged_keys: string",
            "feature_list_sparse_keys: string", "feature_list_dense_keys: string",
            "feature_list_ragged_keys: string",
            "feature_list_dense_missing_assumed_empty: bool",
            "context_dense_defaults: Tcontext_dense"],
    outputs=["context_sparse_indices: Ncontext_sparse * int64",
             "context_sparse_values: context_sparse_types",
             "context_sparse_shapes: Ncontext_sparse * int64",
             "context_dense_values: Tcontext_dense",
             "context_ragged_values: context_ragged_value_types",
             "context_ragged_row_splits: context_ragged_split_types",
             "feature_list_sparse_indices: Nfeature_list_sparse * int64",
             "feature_list_sparse_values: feature_list_sparse_types",
             "feature_list_sparse_shapes: Nfeature_list_sparse * int64",
             "feature_list_dense_values: feature_list_dense_types",
             "feature_list_dense_lengths: Nfeature_list_dense * int64",
             "feature_list_ragged_values: feature_list_ragged_value_types",
             "feature_list_ragged_outer_splits: feature_list_ragged_split_types",
             "feature_list_ragged_inner_splits: feature_list_ragged_split_types"],
    attrs=["Ncontext_sparse: int >= 0 = 0", "Tcontext_dense: list(type) >= 0 = []",
           "context_sparse_types: list(type) >= 0 = []",
           "context_ragged_value_types: list(type) >= 0 = []",
           "context_ragged_split_types: list(type) >= 0 = []",
           "context_dense_shapes: list(shape) >= 0 = []",
           "Nfeature_list_sparse: int >= 0 = 0", "Nfeature_list_dense: int >= 0 = 0",
           "feature_list_dense_types: list(type) >= 0 = []",
           "feature_list_sparse_types: list(type) >= 0 = []",
           "feature_list_ragged_value_types: list(type) >= 0 = []",
           "feature_list_ragged_split_types: list(type) >= 0 = []",
           "feature_list_dense_shapes: list(shape) >= 0 = []"],
    shape_fn=_seq_example_shapes)
not_differentiable("ParseSequenceExampleV2")


# The TF1 forms of the op, for graphs that hold them (TF 2's wrappers build the V2 op): the
# keys are attrs (ParseSequenceExample, batched) or scalar string inputs
# (ParseSingleSequenceExample), and missing dense feature lists are allowed by key.
_V1_ATTRS = ["Ncontext_sparse: int >= 0 = 0", "Ncontext_dense: int >= 0 = 0",
             "Nfeature_list_sparse: int >= 0 = 0", "Nfeature_list_dense: int >= 0 = 0",
             "context_sparse_types: list(type) >= 0 = []",
             "Tcontext_dense: list(type) >= 0 = []",
             "feature_list_dense_types: list(type) >= 0 = []",
             "context_dense_shapes: list(shape) >= 0 = []",
             "feature_list_sparse_types: list(type) >= 0 = []",
             "feature_list_dense_shapes: list(shape) >= 0 = []"]
_V1_OUTPUTS = ["context_sparse_indices: Ncontext_sparse * int64",
               "context_sparse_values: context_sparse_types",
               "context_sparse_shapes: Ncontext_sparse * int64",
               "context_dense_values: Tcontext_dense",
               "feature_list_sparse_indices: Nfeature_list_sparse * int64",
               "feature_list_sparse_values: feature_list_sparse_types",
               "feature_list_sparse_shapes: Nfeature_list_sparse * int64",
               "feature_list_dense_values: feature_list_dense_types"]


def _v1_shapes(op):
    """The V2 shape function's answer without the ragged outputs (and lengths)."""
    a = op.attrs
    shaped = {k: a[k] for k in ("Ncontext_sparse", "Nfeature_list_sparse",
                                "Nfeature_list_dense", "context_dense_shapes",
                                "feature_list_dense_shapes")}
    shaped.update(context_ragged_value_types=[], context_ragged_split_types=[],
                  feature_list_ragged_value_types=[], feature_list_ragged_split_types=[])
    shapes = _seq_example_shapes(_ShapeView(op.inputs[0], shaped))
    if op.type == "ParseSingleSequenceExample":
        shapes = shapes[:len(shapes) - a["Nfeature_list_dense"]]
    return shapes


class _ShapeView:
    """An op-like view (inputs[0] and attrs) for reusing the V2 shape function."""

    __slots__ = ("inputs", "attrs")

    def __init__(self, serialized, attrs):
        self.inputs, self.attrs = [serialized], attrs


define_op("ParseSequenceExample",
          inputs=["serialized: string", "debug_name: string",
                  "context_dense_defaults: Tcontext_dense"],
          outputs=_V1_OUTPUTS + ["feature_list_dense_lengths: Nfeature_list_dense * int64"],
          attrs=["feature_list_dense_missing_assumed_empty: list(string) >= 0",
                 "context_sparse_keys: list(string) >= 0",
                 "context_dense_keys: list(string) >= 0",
                 "feature_list_sparse_keys: list(string) >= 0",
                 "feature_list_dense_keys: list(string) >= 0"] + _V1_ATTRS,
          shape_fn=_v1_shapes)
define_op("ParseSingleSequenceExample",
          inputs=["serialized: string", "feature_list_dense_missing_assumed_empty: string",
                  "context_sparse_keys: Ncontext_sparse * string",
                  "context_dense_keys: Ncontext_dense * string",
                  "feature_list_sparse_keys: Nfeature_list_sparse * string",
                  "feature_list_dense_keys: Nfeature_list_dense * string",
                  "context_dense_defaults: Tcontext_dense", "debug_name: string"],
          outputs=_V1_OUTPUTS, attrs=_V1_ATTRS, shape_fn=_v1_shapes)
not_differentiable("ParseSequenceExample")
not_differentiable("ParseSingleSequenceExample")


def _context_params(features: dict):
    """(sparse keys, sparse types, dense keys, dense types, dense shapes) of the context."""
    sk, st, dk, dt, ds = [], [], [], [], []
    for key in sorted(features):
        f = features[key]
        if isinstance(f, VarLenFeature):
            sk.append(key)
            st.append(_check_type(key, f.dtype))
        elif isinstance(f, FixedLenFeature):
            shape = tensor_shape.as_shape(f.shape)
            if shape.ndims and shape.dims[0].value is None:
                raise ValueError(f"First dimension of shape for feature {key} unknown. "
                                 f"Consider using FixedLenSequenceFeature. Received "
                                 f"feature={f}.")
            if not shape.is_fully_defined():
                raise ValueError(f"All dimensions of shape for feature {key} need to be "
                                 f"known but received {shape}.")
            dk.append(key)
            dt.append(_check_type(key, f.dtype))
            ds.append(shape)
        else:
            raise ValueError(f"Unsupported {type(f).__name__} {f} for key '{key}'")
    return sk, st, dk, dt, ds


def _sequence_params(features: dict):
    """(sparse keys, sparse types, dense keys, dense types, dense shapes, missing ok) of the
    feature lists."""
    sk, st, dk, dt, ds, missing = [], [], [], [], [], []
    for key in sorted(features):
        f = features[key]
        if isinstance(f, VarLenFeature):
            sk.append(key)
            st.append(_check_type(key, f.dtype))
        elif isinstance(f, FixedLenSequenceFeature):
            if f.default_value is not None:
                raise ValueError(f"Value feature_list.dense_defaults[{key}] must be None")
            shape = tensor_shape.as_shape(f.shape)
            if not shape.is_fully_defined():
                raise ValueError(f"All dimensions of shape for feature {key} need to be "
                                 f"known but received {shape}.")
            dk.append(key)
            dt.append(_check_type(key, f.dtype))
            ds.append(shape)
            missing.append(bool(f.allow_missing))
        else:
            raise ValueError(f"Unsupported {type(f).__name__} {f} for key '{key}'")
    return sk, st, dk, dt, ds, missing


def _keys(values, name):
    return convert_to_tensor(values, dtype=dtypes.string, name=name)


def parse_sequence_example(serialized, context_features=None, sequence_features=None,
                           example_names=None, name=None):
    """Parses a batch of serialized SequenceExample protos (`tf.io.parse_sequence_example`).

    Args:
      serialized: a string vector of serialized `tf.train.SequenceExample`s.
      context_features: a dict from key to FixedLenFeature, VarLenFeature or SparseFeature,
        parsed from each example's `context`.
      sequence_features: a dict from key to FixedLenSequenceFeature or VarLenFeature,
        parsed from each example's `feature_lists`.
      example_names: optional names of the examples, for error messages.
      name: a name for the op.

    Returns:
      A tuple of three dicts: the context features, the sequence features (dense ones
      [batch, max steps] + shape, padded with zeros; VarLenFeatures as SparseTensors of
      rank 3), and the length (steps) of each dense sequence feature per example.

    Raises:
      ValueError: no features, or an unsupported feature, shape or dtype.
    """
    context_features = dict(context_features or {})
    sequence_features = dict(sequence_features or {})
    if not context_features and not sequence_features:
        raise ValueError("Both `context_features` and `sequence_features` argument are "
                         "None, but at least one should have values.")
    requested = context_features
    context_plain, composite = _split_sparse_features(context_features)
    csk, cst, cdk, cdt, cds = _context_params(context_plain)
    fsk, fst, fdk, fdt, fds, missing = _sequence_params(sequence_features)
    with graph_lib.name_scope(name, "ParseSequenceExample", [serialized, example_names]):
        serialized = convert_to_tensor(serialized, dtype=dtypes.string, name="serialized")
        names = [] if example_names is None else example_names
        with graph_lib.name_scope("ParseSequenceExample"), \
                graph_lib.name_scope("ParseSequenceExampleV2") as scope:
            defaults = [_dense_default(k, context_plain[k], t, s)
                        for k, t, s in zip(cdk, cdt, cds, strict=True)]
            out = apply_op(
                "ParseSequenceExampleV2", serialized=serialized,
                debug_name=_keys(names, "debug_name"),
                context_sparse_keys=_keys(csk, "context_sparse_keys"),
                context_dense_keys=_keys(cdk, "context_dense_keys"),
                context_ragged_keys=_keys([], "context_ragged_keys"),
                feature_list_sparse_keys=_keys(fsk, "feature_list_sparse_keys"),
                feature_list_dense_keys=_keys(fdk, "feature_list_dense_keys"),
                feature_list_ragged_keys=_keys([], "feature_list_ragged_keys"),
                feature_list_dense_missing_assumed_empty=convert_to_tensor(
                    missing, dtype=dtypes.bool,
                    name="feature_list_dense_missing_assumed_empty"),
                context_dense_defaults=defaults, Ncontext_sparse=len(csk),
                Tcontext_dense=cdt, context_sparse_types=cst, context_ragged_value_types=[],
                context_ragged_split_types=[], context_dense_shapes=cds,
                Nfeature_list_sparse=len(fsk), Nfeature_list_dense=len(fdk),
                feature_list_dense_types=fdt, feature_list_sparse_types=fst,
                feature_list_ragged_value_types=[], feature_list_ragged_split_types=[],
                feature_list_dense_shapes=fds, name=scope)
    (c_idx, c_val, c_shape, c_dense, _, _,
     f_idx, f_val, f_shape, f_dense, f_len, _, _, _) = out
    context = {k: SparseTensor(i, v, s)
               for k, i, v, s in zip(csk, c_idx, c_val, c_shape, strict=True)}
    context.update(zip(cdk, c_dense, strict=True))
    if composite:
        context = _assemble_sparse_features(context, composite, requested)
    sequence = {k: SparseTensor(i, v, s)
                for k, i, v, s in zip(fsk, f_idx, f_val, f_shape, strict=True)}
    sequence.update(zip(fdk, f_dense, strict=True))
    lengths = dict(zip(fdk, f_len, strict=True))
    return context, sequence, lengths


def parse_single_sequence_example(serialized, context_features=None, sequence_features=None,
                                  example_name=None, name=None):
    """Parses one serialized SequenceExample (`tf.io.parse_single_sequence_example`).

    Like `parse_sequence_example` on a scalar record: dense context features have their
    feature's shape, dense sequence features [steps] + shape, sparse ones one dimension less.

    Returns:
      A tuple of two dicts: the context features and the sequence features.
    """
    with graph_lib.name_scope(name, "ParseSingleSequenceExample", [serialized]):
        serialized = convert_to_tensor(serialized, dtype=dtypes.string, name="serialized")
        serialized.shape.assert_has_rank(0)
        context, sequence, _ = parse_sequence_example(
            serialized, context_features, sequence_features,
            example_names=None if example_name is None else example_name)
    return context, sequence
