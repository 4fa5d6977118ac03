"""Sequence feature columns (TF1's `tf.feature_column.sequence_*` and
`tf.contrib.feature_column.sequence_input_layer`): per-step dense values of features that
hold a variable number of steps per example.

A sequence feature is a SparseTensor [batch, max_steps] (or [batch, max_steps, n]) as
`tf.parse_single_sequence_example` / VarLenFeature give it; categorical ones may also be
dense (-1 or "" marking no value). A sequence column gives (dense [batch, max_steps, *shape],
sequence_length [batch] int64): a numeric column its values padded with `default_value`
(a rank-2 feature's values grouped `prod(shape)` per step), an embedding or indicator column
of a sequence categorical column the combined vectors (or multi-hots) of each step's ids.
The length of an example is the number of its steps up to its last value (its rows without
values after the last one count 0).

`sequence_input_layer` concatenates the columns' values on the last axis in the order of
their names, under TF1's variable scopes (`sequence_input_layer/<column>/embedding_weights`),
and returns one sequence length, checked equal across columns when the step runs.
"""

from __future__ import annotations

import collections
import math

from tensorflux.feature_column import feature_column as fc
from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework.sparse_tensor import SparseTensor
from tensorflux.framework.tensor_conversion import convert_to_tensor


def _sequence_length(sp: SparseTensor, num_elements: int):
    """Steps per example: (last column index + 1) / num_elements rounded up, 0 for rows
    with no value (segment_max leaves the rows between as 0; the rows after the last
    valued one are padded)."""
    from tensorflux.framework import graph as graph_lib
    from tensorflux.ops import array_ops, joining_ops, math_ops, segment_ops, unary_ops

    with graph_lib.name_scope(None, "sequence_length") as scope:
        rows = sp.indices[:, 0]
        last = segment_ops.segment_max(sp.indices[:, 1] + 1, rows)
        if num_elements != 1:
            last = math_ops.cast(unary_ops.ceil(
                math_ops.cast(last, dtypes.float64) / float(num_elements)), dtypes.int64)
        pad = array_ops.zeros(sp.dense_shape[:1] - array_ops.shape(
            last, out_type=dtypes.int64)[:1], dtype=dtypes.int64)
        return joining_ops.concat([last, pad], 0, name=scope)


# ---- columns --------------------------------------------------------------------------------

class SequenceNumericColumn(collections.namedtuple(
        "SequenceNumericColumn", ["key", "shape", "default_value", "dtype", "normalizer_fn"])):
    """Real values of `shape` per step."""

    @property
    def name(self) -> str:
        return self.key

    @property
    def _variable_shape(self):
        return tensor_shape.TensorShape(self.shape)

    @property
    def _parse_example_spec(self):
        from tensorflux.ops.parsing_ops import VarLenFeature

        return {self.key: VarLenFeature(self.dtype)}

    def _sequence_dense(self, builder, trainable):
        from tensorflux.ops import array_ops, joining_ops, sparse_ops

        sp = builder.raw(self.key)
        if not isinstance(sp, SparseTensor):
            raise TypeError("Input must be a SparseTensor.")
        if self.normalizer_fn is not None:
            sp = self.normalizer_fn(sp)
        dense = sparse_ops.sparse_tensor_to_dense(
            sp, default_value=convert_to_tensor(self.default_value, dtype=sp.dtype))
        dense = array_ops.reshape(dense, joining_ops.concat(
            [array_ops.shape(dense)[:1], [-1], list(self.shape)], 0))
        # A rank-2 feature holds a step's values one after another; a rank-3 one per step.
        per_step = math.prod(self.shape) if sp.indices.shape[1] == 2 else 1
        return dense, _sequence_length(sp, per_step)


def sequence_numeric_column(key, shape=(1,), default_value=0., dtype=dtypes.float32,
                            normalizer_fn=None):
    """A sequence of real values of `shape` per step; missing values read `default_value`.

    Args:
      key: the feature's name.
      shape: the shape of one step's value.
      default_value: the value of padded steps and elements.
      dtype: the values' type (integer or floating).
      normalizer_fn: applied to the feature's SparseTensor before padding.

    Raises:
      ValueError: a dimension of `shape` is not positive, or `dtype` is not numeric.
      TypeError: `normalizer_fn` is not callable.
    """
    column = fc.numeric_column(key, shape, None, dtype, normalizer_fn)
    return SequenceNumericColumn(column.key, column.shape, default_value, column.dtype,
                                 normalizer_fn)


class SequenceCategoricalColumn(fc._CategoricalColumn, collections.namedtuple(
        "SequenceCategoricalColumn", ["categorical_column"])):
    """A categorical column's ids per step: [batch, max_steps, ids of the step]."""

    _is_sequence = True

    @property
    def name(self) -> str:
        return self.categorical_column.name

    @property
    def _num_buckets(self) -> int:
        return self.categorical_column._num_buckets

    @property
    def _parse_example_spec(self):
        return self.categorical_column._parse_example_spec

    def _ids(self, builder):
        from tensorflux.ops import joining_ops, reduction_ops
        from tensorflux.sparse import sparse_extra

        def make():
            ids, weights = self.categorical_column._ids(builder)
            # A step's ids are one row, so that embeddings combine per step.
            d, known = ids.dense_shape, ids.shape
            steps = joining_ops.stack([d[0], d[1], reduction_ops.reduce_prod(d[2:])])
            ids = sparse_extra.sparse_reshape(ids, steps)
            if known.ndims is not None:
                ids.set_shape([known[0], known[1], known[2:].num_elements()])
            if weights is not None:
                weights = sparse_extra.sparse_reshape(weights, steps)
            return ids, weights
        return builder.cached(self, make)


def _sequence(categorical_column):
    return SequenceCategoricalColumn(categorical_column)


def sequence_categorical_column_with_identity(key, num_buckets, default_value=None):
    """Per-step integer ids in [0, num_buckets) (see categorical_column_with_identity)."""
    return _sequence(fc.categorical_column_with_identity(key, num_buckets, default_value))


def sequence_categorical_column_with_hash_bucket(key, hash_bucket_size, dtype=dtypes.string):
    """Per-step ids by hashing (see categorical_column_with_hash_bucket)."""
    return _sequence(fc.categorical_column_with_hash_bucket(key, hash_bucket_size, dtype))


def sequence_categorical_column_with_vocabulary_list(key, vocabulary_list, dtype=None,
                                                     default_value=-1, num_oov_buckets=0):
    """Per-step ids of positions in `vocabulary_list` (see
    categorical_column_with_vocabulary_list)."""
    return _sequence(fc.categorical_column_with_vocabulary_list(
        key, vocabulary_list, dtype, default_value, num_oov_buckets))


def sequence_categorical_column_with_vocabulary_file(key, vocabulary_file,
                                                     vocabulary_size=None, num_oov_buckets=0,
                                                     default_value=None, dtype=dtypes.string):
    """Per-step ids of lines of `vocabulary_file` (see
    categorical_column_with_vocabulary_file)."""
    return _sequence(fc.categorical_column_with_vocabulary_file(
        key, vocabulary_file, vocabulary_size, num_oov_buckets, default_value, dtype))


# ---- the layer ------------------------------------------------------------------------------

_SEQUENCE_DENSE = (SequenceNumericColumn, fc.IndicatorColumn, fc._Embedded)


def _check_sequence_columns(feature_columns) -> list:
    if isinstance(feature_columns, (*_SEQUENCE_DENSE, fc._DenseColumn, fc._CategoricalColumn)):
        feature_columns = [feature_columns]
    columns = list(feature_columns)
    for c in columns:
        if not isinstance(c, _SEQUENCE_DENSE):
            raise ValueError(f"All feature_columns must be of type _SequenceDenseColumn. You "
                             f"can wrap a sequence_categorical_column with an "
                             f"embedding_column or indicator_column. Given (type {type(c)}): "
                             f"{c}")
        if not isinstance(c, SequenceNumericColumn) and not getattr(
                c.categorical_column, "_is_sequence", False):
            kind = "indicator_column" if isinstance(c, fc.IndicatorColumn) else \
                "embedding_column"
            raise ValueError(f"In {kind}: {c.name}. categorical_column must be of type "
                             f"_SequenceCategoricalColumn to use sequence_input_layer. "
                             f"Suggested fix: Use one of sequence_categorical_column_with_*. "
                             f"Given (type {type(c.categorical_column)}): "
                             f"{c.categorical_column}")
    return fc._sorted_columns(columns, _SEQUENCE_DENSE, "_SequenceDenseColumn")


def _sequence_dense(column, builder, trainable):
    """(dense [batch, max_steps, *variable_shape], sequence_length [batch])."""
    if isinstance(column, SequenceNumericColumn):
        return column._sequence_dense(builder, trainable)
    ids, _ = column.categorical_column._ids(builder)
    if isinstance(column, fc._Embedded):
        dense = column._dense(builder, trainable)
    else:
        dense = column._dense(builder)
    dense.set_shape(ids.shape[:2].concatenate(column._variable_shape))
    return dense, _sequence_length(ids, 1)


def _check_batch_sizes(tensors, columns) -> None:
    """TF's graph-time check: the static batch sizes that are known agree."""
    first = None
    for t, c in zip(tensors, columns, strict=True):
        size = t.shape[0] if t.shape.ndims else None
        if size is None:
            continue
        if first is None:
            first = (c.name, size)
        elif size != first[1]:
            raise ValueError(f"Batch size (first dimension) of each feature must be same. "
                             f"Batch size of columns ({first[0]}, {c.name}): "
                             f"({first[1]}, {size})")


def _assert_all_equal(tensors):
    """The first of `tensors`, after run-time checks that the others equal it."""
    from tensorflux.debugging import check_ops
    from tensorflux.framework import graph as graph_lib
    from tensorflux.ops import array_ops

    with graph_lib.name_scope(None, "assert_all_equal"):
        if len(tensors) == 1:
            return tensors[0]
        checks = [check_ops.assert_equal(tensors[0], t) for t in tensors[1:]]
        with graph_lib.get_default_graph().control_dependencies(checks):
            return array_ops.identity(tensors[0])


def sequence_input_layer(features, feature_columns, weight_collections=None, trainable=True):
    """The sequence columns' per-step values, concatenated in the order of their names.

    Args:
      features: a dict from feature names to SparseTensors [batch, max_steps(, n)] (or
        dense tensors for categorical features).
      feature_columns: sequence numeric columns, and embedding or indicator columns of
        sequence categorical columns.
      weight_collections: collections the embedding tables are added to.
      trainable: whether the embedding tables are trainable.

    Returns:
      (input_layer: float [batch, max_steps, sum of the columns' sizes],
       sequence_length: int64 [batch]).

    Raises:
      ValueError: a column is not a sequence column, names repeat, or the static batch
        sizes differ. The sequence lengths of the columns are compared when the step runs
        (InvalidArgumentError from the check).
    """
    from tensorflux.ops import array_ops, joining_ops
    from tensorflux.variables import variable_scope

    columns = _check_sequence_columns(feature_columns)
    builder = fc._Builder(features)
    outputs, lengths = [], []
    with variable_scope.variable_scope(None, default_name="sequence_input_layer"):
        for column in columns:
            scope = getattr(column, "_var_scope_name", column.name)
            with variable_scope.variable_scope(None, default_name=scope):
                dense, length = _sequence_dense(column, builder, trainable)
                shape = array_ops.shape(dense)
                n = column._variable_shape.num_elements()
                outputs.append(array_ops.reshape(dense, joining_ops.stack(
                    [shape[0], shape[1], n])))
                lengths.append(length)
                fc._add_to(weight_collections)
        _check_batch_sizes(outputs, columns)
        _check_batch_sizes(lengths, columns)
        return joining_ops.concat(outputs, -1), _assert_all_equal(lengths)


def concatenate_context_input(context_input, sequence_input):
    """`context_input` [batch, d] repeated for every step and appended to `sequence_input`
    [batch, max_steps, e]: [batch, max_steps, e + d].

    Raises:
      ValueError: a rank is not 3 (sequence_input) or 2 (context_input).
      TypeError: an input is not float32.
    """
    from tensorflux.debugging import check_ops
    from tensorflux.framework import graph as graph_lib
    from tensorflux.ops import array_ops, joining_ops

    sequence_input = convert_to_tensor(sequence_input)
    context_input = convert_to_tensor(context_input)
    checks = []
    for t, what, rank in ((sequence_input, "sequence_input", 3),
                          (context_input, "context_input", 2)):
        checks.append(check_ops.assert_rank(t, rank, message=f"{what} must have rank {rank}",
                                            data=[array_ops.shape(t)]))
        checks.append(check_ops.assert_type(
            t, dtypes.float32, message=f"{what} must have dtype float32; got {t.dtype}."))
    with graph_lib.get_default_graph().control_dependencies(checks):
        steps = array_ops.shape(sequence_input)[1:2]
    tiled = joining_ops.tile(array_ops.expand_dims(context_input, 1),
                           joining_ops.concat([[1], steps, [1]], 0))
    return joining_ops.concat([sequence_input, tiled], 2)
