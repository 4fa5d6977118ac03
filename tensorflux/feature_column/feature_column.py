"""tf.feature_column (TF1): how raw features become a model's input.

A column is either dense (`_dense(builder)`: a [batch, n] float tensor; numeric, bucketized,
indicator, embedding) or categorical (`_ids(builder)`: a SparseTensor of int64 ids in
[0, num_buckets) per example and optional weights; vocabulary, identity, hashed, crossed,
bucketized, weighted). `input_layer` concatenates dense columns and `linear_model` sums
per-column weights, both in the order of the columns' names and with TensorFlow's variable
names (`input_layer/<column>/embedding_weights`, `linear_model/<column>/weights`,
`linear_model/bias_weights`), so checkpoints carry over.

A `_Builder` turns each raw feature into what the columns need once per call: a dense
feature of rank 1 becomes [batch, 1]; a categorical column's dense input becomes a
SparseTensor without its ignored values (-1, or "" for strings).
"""

from __future__ import annotations

import collections
import math

import numpy as np

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework.operation import Tensor
from tensorflux.framework.sparse_tensor import SparseTensor, SparseTensorValue
from tensorflux.framework.tensor_conversion import convert_to_tensor

_FINGERPRINT_KEY = 0xDECAFCAFFE  # TensorFlow's default hash key of crossed columns


# ---- the raw features ---------------------------------------------------------------------

class _Builder:
    """The features dict, each raw feature and each column's transform made once."""

    def __init__(self, features):
        self._features = dict(features)
        self._cache: dict = {}

    def raw(self, key: str):
        if key not in self._features:
            raise ValueError(f"The following is not in features dict: {key}")
        if ("raw", key) not in self._cache:
            v = self._features[key]
            if isinstance(v, SparseTensorValue):
                v = SparseTensor.from_value(v)
            if not isinstance(v, SparseTensor):
                v = convert_to_tensor(v, name=key)
                if v.shape.ndims == 1:
                    from tensorflux.ops import array_ops

                    v = array_ops.expand_dims(v, -1)
            self._cache[("raw", key)] = v
        return self._cache[("raw", key)]

    def sparse(self, key: str) -> SparseTensor:
        """Feature `key` as a SparseTensor (dense input without its ignored values)."""
        if ("sparse", key) not in self._cache:
            v = self.raw(key)
            if not isinstance(v, SparseTensor):
                v = _dense_to_sparse(v)
            self._cache[("sparse", key)] = v
        return self._cache[("sparse", key)]

    def cached(self, column, make):
        if ("column", column) not in self._cache:
            self._cache[("column", column)] = make()
        return self._cache[("column", column)]


def _dense_to_sparse(t: Tensor) -> SparseTensor:
    from tensorflux.ops import array_ops, comparison_ops, gather_ops, math_ops

    ignore = "" if t.dtype == dtypes.string else -1
    keep = comparison_ops.not_equal(t, convert_to_tensor(ignore, dtype=t.dtype))
    indices = comparison_ops.where(keep)
    return SparseTensor(indices, gather_ops.gather_nd(t, indices),
                        math_ops.cast(array_ops.shape(t), dtypes.int64))


# ---- columns --------------------------------------------------------------------------------

class _DenseColumn:
    def _dense(self, builder: _Builder) -> Tensor:
        raise NotImplementedError

    @property
    def _variable_shape(self):
        raise NotImplementedError


class _CategoricalColumn:
    _is_sequence = False  # a sequence column's ids are per step (sequence_input_layer only)

    def _ids(self, builder: _Builder):
        """(ids SparseTensor int64, weights SparseTensor or None)."""
        raise NotImplementedError

    @property
    def _num_buckets(self) -> int:
        raise NotImplementedError


def _flat_float(t: Tensor, n: int) -> Tensor:
    from tensorflux.ops import array_ops, math_ops

    return array_ops.reshape(math_ops.cast(t, dtypes.float32), [-1, n])


class NumericColumn(_DenseColumn, collections.namedtuple(
        "NumericColumn", ["key", "shape", "default_value", "dtype", "normalizer_fn"])):
    @property
    def name(self) -> str:
        return self.key

    @property
    def _variable_shape(self):
        return tensor_shape.TensorShape(self.shape)

    @property
    def _parse_example_spec(self):
        from tensorflux.ops.parsing_ops import FixedLenFeature

        return {self.key: FixedLenFeature(self.shape, self.dtype, self.default_value)}

    def _value(self, builder: _Builder) -> Tensor:
        def make():
            v = builder.raw(self.key)
            if isinstance(v, SparseTensor):
                raise ValueError(f"The corresponding Tensor of numerical column must be a "
                                 f"Tensor. SparseTensor is not supported. key: {self.key}")
            if self.normalizer_fn is not None:
                v = self.normalizer_fn(v)
            return v
        return builder.cached(self, make)

    def _dense(self, builder):
        return _flat_float(self._value(builder), math.prod(self.shape))


def numeric_column(key, shape=(1,), default_value=None, dtype=dtypes.float32,
                   normalizer_fn=None):
    """A dense column of real values of `shape` per example."""
    shape = tuple(int(d) for d in ([shape] if isinstance(shape, int) else shape))
    if any(d <= 0 for d in shape):
        raise ValueError(f"shape dimensions must be greater than 0. shape: {shape}, key: "
                         f"{key}")
    dtype = dtypes.as_dtype(dtype)
    if not (dtype.is_integer or dtype.is_floating):
        raise ValueError(f"dtype must be convertible to float. dtype: {dtype}, key: {key}")
    if normalizer_fn is not None and not callable(normalizer_fn):
        raise TypeError(f"normalizer_fn must be a callable. Given: {normalizer_fn}")
    if default_value is not None:
        default_value = tuple(np.broadcast_to(np.asarray(default_value), shape).reshape(
            -1).tolist())
    return NumericColumn(_key(key), shape, default_value, dtype, normalizer_fn)


def _key(key) -> str:
    if not isinstance(key, str):
        raise ValueError(f"key must be a string. Given: {key}")
    return key


class BucketizedColumn(_DenseColumn, _CategoricalColumn, collections.namedtuple(
        "BucketizedColumn", ["source_column", "boundaries"])):
    @property
    def name(self) -> str:
        return self.source_column.name + "_bucketized"

    @property
    def _parse_example_spec(self):
        return self.source_column._parse_example_spec

    @property
    def _per_element(self) -> int:
        return len(self.boundaries) + 1

    @property
    def _variable_shape(self):
        return tensor_shape.TensorShape(tuple(self.source_column.shape) + (
            self._per_element,))

    @property
    def _num_buckets(self) -> int:
        return math.prod(self.source_column.shape) * self._per_element

    def _buckets(self, builder) -> Tensor:
        from tensorflux.ops import math_ext_ops

        return builder.cached(self, lambda: math_ext_ops.bucketize(
            self.source_column._value(builder), self.boundaries))

    def _dense(self, builder):
        from tensorflux.ops import gather_ops

        one_hot = gather_ops.one_hot(self._buckets(builder), self._per_element, 1.0, 0.0)
        return _flat_float(one_hot, self._num_buckets)

    def _ids(self, builder):
        from tensorflux.ops import array_ops, comparison_ops, math_ops

        n = math.prod(self.source_column.shape)
        b = math_ops.cast(array_ops.reshape(self._buckets(builder), [-1, n]), dtypes.int64)
        # Element j's buckets come after those of the elements before it.
        ids = b + convert_to_tensor(np.arange(n, dtype=np.int64) * self._per_element)
        every = comparison_ops.where(comparison_ops.greater_equal(ids, 0))
        return SparseTensor(every, array_ops.reshape(ids, [-1]),
                            array_ops.shape(ids, out_type=dtypes.int64)), None


def bucketized_column(source_column, boundaries):
    """The bucket of each value of a numeric column: dense as one-hots, or ids."""
    if not isinstance(source_column, NumericColumn):
        raise ValueError(f"source_column must be a column generated with numeric_column(). "
                         f"Given: {source_column}")
    if len(source_column.shape) > 1:
        raise ValueError(f"source_column must be one-dimensional column. Given: "
                         f"{source_column}")
    boundaries = tuple(float(b) for b in boundaries)
    if not boundaries:
        raise ValueError(f"boundaries must not be empty. Given: {boundaries}")
    if any(b >= c for b, c in zip(boundaries[:-1], boundaries[1:], strict=True)):
        raise ValueError(f"boundaries must be a sorted list. Given: {boundaries}")
    return BucketizedColumn(source_column, boundaries)


class _KeyedCategorical(_CategoricalColumn):
    """A categorical column of one raw feature."""

    @property
    def name(self) -> str:
        return self.key

    @property
    def _parse_example_spec(self):
        from tensorflux.ops.parsing_ops import VarLenFeature

        return {self.key: VarLenFeature(self.dtype)}

    def _ids(self, builder):
        return builder.cached(self, lambda: (self._lookup(builder.sparse(self.key)), None))


def _map_values(sp: SparseTensor, values) -> SparseTensor:
    return SparseTensor(sp.indices, values, sp.dense_shape)


class VocabularyListCategoricalColumn(_KeyedCategorical, collections.namedtuple(
        "VocabularyListCategoricalColumn",
        ["key", "vocabulary_list", "dtype", "default_value", "num_oov_buckets"])):
    @property
    def _num_buckets(self) -> int:
        return len(self.vocabulary_list) + self.num_oov_buckets

    def _lookup(self, sp):
        from tensorflux.lookup import lookup_ops
        from tensorflux.ops import math_ops

        table = lookup_ops.index_table_from_tensor(
            list(self.vocabulary_list), num_oov_buckets=self.num_oov_buckets,
            default_value=self.default_value,
            dtype=dtypes.int64 if self.dtype.is_integer else self.dtype,
            name=f"{self.key}_lookup")
        values = sp.values
        if self.dtype.is_integer and values.dtype != dtypes.int64:
            values = math_ops.cast(values, dtypes.int64)
        return _map_values(sp, table.lookup(values))


def categorical_column_with_vocabulary_list(key, vocabulary_list, dtype=None,
                                            default_value=-1, num_oov_buckets=0):
    """Ids of the values' positions in `vocabulary_list`; values not in it take
    `default_value` or, with `num_oov_buckets`, a bucket after the list by hash."""
    vocab = tuple(vocabulary_list)
    if not vocab:
        raise ValueError(f"vocabulary_list {vocabulary_list} must be non-empty, column_name: "
                         f"{key}")
    if len(set(vocab)) != len(vocab):
        raise ValueError(f"Duplicate keys in vocabulary_list {vocabulary_list}, "
                         f"column_name: {key}")
    if num_oov_buckets and default_value != -1:
        raise ValueError(f"Can't specify both num_oov_buckets and default_value in {key}.")
    if dtype is None:
        dtype = dtypes.string if isinstance(vocab[0], (str, bytes)) else dtypes.int64
    dtype = dtypes.as_dtype(dtype)
    return VocabularyListCategoricalColumn(_key(key), vocab, dtype, default_value,
                                           int(num_oov_buckets))


class VocabularyFileCategoricalColumn(_KeyedCategorical, collections.namedtuple(
        "VocabularyFileCategoricalColumn",
        ["key", "vocabulary_file", "vocabulary_size", "num_oov_buckets", "dtype",
         "default_value"])):
    @property
    def _num_buckets(self) -> int:
        return self.vocabulary_size + self.num_oov_buckets

    def _lookup(self, sp):
        from tensorflux.lookup import lookup_ops

        table = lookup_ops.index_table_from_file(
            self.vocabulary_file, num_oov_buckets=self.num_oov_buckets,
            vocab_size=self.vocabulary_size,
            default_value=-1 if self.default_value is None else self.default_value,
            key_dtype=self.dtype, name=f"{self.key}_lookup")
        return _map_values(sp, table.lookup(sp.values))


def categorical_column_with_vocabulary_file(key, vocabulary_file, vocabulary_size=None,
                                            num_oov_buckets=0, default_value=None,
                                            dtype=dtypes.string):
    """Ids of the values' lines in `vocabulary_file` (one entry per line)."""
    if vocabulary_size is None:
        with open(vocabulary_file, "rb") as f:
            vocabulary_size = sum(1 for _ in f)
    if vocabulary_size <= 0:
        raise ValueError(f"Invalid vocabulary_size in {key}.")
    if num_oov_buckets and default_value is not None:
        raise ValueError(f"Can't specify both num_oov_buckets and default_value in {key}.")
    return VocabularyFileCategoricalColumn(_key(key), vocabulary_file, int(vocabulary_size),
                                           int(num_oov_buckets), dtypes.as_dtype(dtype),
                                           default_value)


class IdentityCategoricalColumn(_KeyedCategorical, collections.namedtuple(
        "IdentityCategoricalColumn", ["key", "number_buckets", "default_value"])):
    dtype = dtypes.int64

    @property
    def _num_buckets(self) -> int:
        return self.number_buckets

    def _lookup(self, sp):
        from tensorflux.debugging import check_ops
        from tensorflux.ops import comparison_ops, math_ops

        values = math_ops.cast(sp.values, dtypes.int64)
        n = convert_to_tensor(self.number_buckets, dtypes.int64)
        if self.default_value is None:
            checks = [check_ops.assert_less(values, n, message="Bucket index for categorical "
                                            "column exceeds number of buckets"),
                      check_ops.assert_greater_equal(
                          values, convert_to_tensor(0, dtypes.int64),
                          message="Negative bucket index for categorical column")]
            from tensorflux.framework import graph as graph_lib
            from tensorflux.ops import array_ops

            with graph_lib.get_default_graph().control_dependencies(checks):
                values = array_ops.identity(values)
        else:
            inside = comparison_ops.logical_and(
                comparison_ops.greater_equal(values, 0), comparison_ops.less(values, n))
            values = comparison_ops.where(
                inside, values, values * 0 + convert_to_tensor(self.default_value,
                                                               dtypes.int64))
        return _map_values(sp, values)


def categorical_column_with_identity(key, num_buckets, default_value=None):
    """Integer values used as ids in [0, num_buckets)."""
    if num_buckets < 1:
        raise ValueError(f"num_buckets {num_buckets} < 1, column_name {key}")
    if default_value is not None and not 0 <= default_value < num_buckets:
        raise ValueError(f"default_value {default_value} not in range [0, {num_buckets}), "
                         f"column_name {key}")
    return IdentityCategoricalColumn(_key(key), int(num_buckets), default_value)


class HashedCategoricalColumn(_KeyedCategorical, collections.namedtuple(
        "HashedCategoricalColumn", ["key", "hash_bucket_size", "dtype"])):
    @property
    def _num_buckets(self) -> int:
        return self.hash_bucket_size

    def _lookup(self, sp):
        from tensorflux.ops import math_ops, string_ops

        values = sp.values if sp.values.dtype == dtypes.string else \
            string_ops.as_string(sp.values)
        return _map_values(sp, math_ops.cast(string_ops.string_to_hash_bucket_fast(
            values, self.hash_bucket_size), dtypes.int64))


def categorical_column_with_hash_bucket(key, hash_bucket_size, dtype=dtypes.string):
    """Ids by hashing the values (strings, or integers as their decimal strings)."""
    if hash_bucket_size is None or hash_bucket_size < 1:
        raise ValueError(f"hash_bucket_size must be at least 1. hash_bucket_size: "
                         f"{hash_bucket_size}, key: {key}")
    dtype = dtypes.as_dtype(dtype)
    if dtype != dtypes.string and not dtype.is_integer:
        raise ValueError(f"dtype must be string or integer. dtype: {dtype}, column_name: "
                         f"{key}")
    return HashedCategoricalColumn(_key(key), int(hash_bucket_size), dtype)


class CrossedColumn(_CategoricalColumn, collections.namedtuple(
        "CrossedColumn", ["keys", "hash_bucket_size", "hash_key"])):
    @property
    def name(self) -> str:
        return "_X_".join(sorted(k if isinstance(k, str) else k.name for k in self.keys))

    @property
    def _num_buckets(self) -> int:
        return self.hash_bucket_size

    @property
    def _parse_example_spec(self):
        from tensorflux.ops.parsing_ops import VarLenFeature

        spec = {}
        for k in self.keys:
            spec.update({k: VarLenFeature(dtypes.string)} if isinstance(k, str)
                        else k._parse_example_spec)
        return spec

    def _ids(self, builder):
        from tensorflux.ops import sparse_ext_ops

        def make():
            parts = [builder.raw(k) if isinstance(k, str) else k._ids(builder)[0]
                     for k in self.keys]
            return sparse_ext_ops.sparse_cross_hashed(
                parts, num_buckets=self.hash_bucket_size,
                hash_key=self.hash_key or _FINGERPRINT_KEY), None
        return builder.cached(self, make)


def crossed_column(keys, hash_bucket_size, hash_key=None):
    """Hashed crosses of the values of `keys` (feature names or categorical columns)."""
    if not hash_bucket_size or hash_bucket_size < 1:
        raise ValueError(f"hash_bucket_size must be > 1. hash_bucket_size: "
                         f"{hash_bucket_size}")
    if len(keys) < 2:
        raise ValueError(f"keys must be a list with length > 1. Given: {keys}")
    for k in keys:
        if not isinstance(k, (str, _CategoricalColumn)):
            raise ValueError(f"Unsupported key type. All keys must be either string, or "
                             f"categorical column except HashedCategoricalColumn. Given: {k}")
        if isinstance(k, HashedCategoricalColumn):
            raise ValueError("categorical_column_with_hash_bucket is not supported for "
                             "crossing. Hashing before crossing will increase probability "
                             "of collision. Instead, use the feature name as a string. "
                             f"Given: {k}")
    return CrossedColumn(tuple(keys), int(hash_bucket_size), hash_key)


class WeightedCategoricalColumn(_CategoricalColumn, collections.namedtuple(
        "WeightedCategoricalColumn", ["categorical_column", "weight_feature_key", "dtype"])):
    @property
    def name(self) -> str:
        return f"{self.categorical_column.name}_weighted_by_{self.weight_feature_key}"

    @property
    def _num_buckets(self) -> int:
        return self.categorical_column._num_buckets

    @property
    def _parse_example_spec(self):
        from tensorflux.ops.parsing_ops import VarLenFeature

        spec = dict(self.categorical_column._parse_example_spec)
        spec[self.weight_feature_key] = VarLenFeature(self.dtype)
        return spec

    def _ids(self, builder):
        from tensorflux.ops import math_ops

        ids, _ = self.categorical_column._ids(builder)
        w = builder.sparse(self.weight_feature_key)
        return ids, SparseTensor(w.indices, math_ops.cast(w.values, dtypes.float32),
                                 w.dense_shape)


def weighted_categorical_column(categorical_column, weight_feature_key, dtype=dtypes.float32):
    """`categorical_column`'s ids, each weighted by feature `weight_feature_key`."""
    dtype = dtypes.as_dtype(dtype)
    if not (dtype.is_integer or dtype.is_floating):
        raise ValueError(f"dtype {dtype} is not convertible to float.")
    return WeightedCategoricalColumn(categorical_column, weight_feature_key, dtype)


class IndicatorColumn(_DenseColumn, collections.namedtuple(
        "IndicatorColumn", ["categorical_column"])):
    @property
    def name(self) -> str:
        return self.categorical_column.name + "_indicator"

    @property
    def _variable_shape(self):
        return tensor_shape.TensorShape([self.categorical_column._num_buckets])

    @property
    def _parse_example_spec(self):
        return self.categorical_column._parse_example_spec

    def _dense(self, builder):
        from tensorflux.ops import gather_ops, reduction_ops, sparse_ops

        def make():
            ids, weights = self.categorical_column._ids(builder)
            n = self.categorical_column._num_buckets
            if weights is not None:  # the weights summed per (example, id)
                return gather_ops.scatter_nd(_row_and_id(ids), weights.values,
                                             _batch_by(ids, n))
            dense_ids = sparse_ops.sparse_tensor_to_dense(ids, default_value=-1)
            return reduction_ops.reduce_sum(gather_ops.one_hot(dense_ids, n, 1.0, 0.0),
                                            axis=-2)
        return builder.cached(self, make)


def _row_and_id(ids: SparseTensor) -> Tensor:
    from tensorflux.ops import joining_ops

    return joining_ops.stack([ids.indices[:, 0], ids.values], axis=1)


def _batch_by(ids: SparseTensor, n: int) -> Tensor:
    from tensorflux.ops import joining_ops

    return joining_ops.stack([ids.dense_shape[0], convert_to_tensor(n, dtypes.int64)])


def indicator_column(categorical_column):
    """A categorical column as multi-hot (or per-id weight sums) of num_buckets."""
    if not isinstance(categorical_column, _CategoricalColumn):
        raise ValueError(f"Unsupported input type. Input must be a CategoricalColumn. "
                         f"Given: {categorical_column}")
    return IndicatorColumn(categorical_column)


class _Embedded(_DenseColumn):
    """A categorical column's ids looked up in a table of `dimension`-vectors and combined
    per example (`_table` makes or finds the table)."""

    @property
    def _variable_shape(self):
        return tensor_shape.TensorShape([self.dimension])

    @property
    def _parse_example_spec(self):
        return self.categorical_column._parse_example_spec

    def _new_table(self, trainable):
        from tensorflux.variables import variable_scope

        return variable_scope.get_variable(
            "embedding_weights", [self.categorical_column._num_buckets, self.dimension],
            dtype=dtypes.float32, initializer=_initial(self),
            trainable=self.trainable and trainable)

    def _table(self, trainable):
        return self._new_table(trainable)

    def _dense(self, builder, trainable=True):
        from tensorflux.nn import nn_extra

        ids, weights = self.categorical_column._ids(builder)
        return nn_extra.safe_embedding_lookup_sparse(
            self._table(trainable), ids, weights, combiner=self.combiner,
            max_norm=self.max_norm)


class EmbeddingColumn(_Embedded, collections.namedtuple(
        "EmbeddingColumn", ["categorical_column", "dimension", "combiner", "initializer",
                            "ckpt_to_load_from", "tensor_name_in_ckpt", "max_norm",
                            "trainable"])):
    @property
    def name(self) -> str:
        return self.categorical_column.name + "_embedding"


def embedding_column(categorical_column, dimension, combiner="mean", initializer=None,
                     ckpt_to_load_from=None, tensor_name_in_ckpt=None, max_norm=None,
                     trainable=True):
    """A categorical column as the `combiner` of learned `dimension`-vectors of its ids."""
    if dimension is None or dimension < 1:
        raise ValueError(f"Invalid dimension {dimension}.")
    if (ckpt_to_load_from is None) != (tensor_name_in_ckpt is None):
        raise ValueError("Must specify both `ckpt_to_load_from` and `tensor_name_in_ckpt` "
                         "or none of them.")
    if initializer is not None and not callable(initializer):
        raise ValueError(f"initializer must be callable if specified. Embedding of column_"
                         f"name: {categorical_column.name}")
    if initializer is None:
        from tensorflux.variables import init_ops

        initializer = init_ops.truncated_normal_initializer(
            mean=0.0, stddev=1 / math.sqrt(dimension))
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner}")
    return EmbeddingColumn(categorical_column, int(dimension), combiner, initializer,
                           ckpt_to_load_from, tensor_name_in_ckpt, max_norm, trainable)


class SharedEmbeddingColumn(_Embedded, collections.namedtuple(
        "SharedEmbeddingColumn", ["categorical_column", "dimension", "combiner", "initializer",
                                  "shared_embedding_collection_name", "ckpt_to_load_from",
                                  "tensor_name_in_ckpt", "max_norm", "trainable"])):
    """An embedding whose table is shared with other columns: the first column built
    creates it (in a scope named after the collection) and the others take it from the
    graph collection `shared_embedding_collection_name`."""

    @property
    def name(self) -> str:
        return self.categorical_column.name + "_shared_embedding"

    @property
    def _var_scope_name(self) -> str:
        return self.shared_embedding_collection_name

    def _table(self, trainable):
        from tensorflux.framework import graph as graph_lib

        shared = graph_lib.get_collection(self.shared_embedding_collection_name)
        if shared:
            return shared[0]
        table = self._new_table(trainable)
        graph_lib.add_to_collection(self.shared_embedding_collection_name, table)
        return table


def _initial(column):
    """The column's initializer, or its checkpoint's values when it has one."""
    if column.ckpt_to_load_from is None:
        return column.initializer
    from tensorflux.train import checkpoint_utils
    from tensorflux.variables import init_ops

    return init_ops.constant_initializer(checkpoint_utils.load_variable(
        column.ckpt_to_load_from, column.tensor_name_in_ckpt))


def shared_embedding_columns(categorical_columns, dimension, combiner="mean",
                             initializer=None, shared_embedding_collection_name=None,
                             ckpt_to_load_from=None, tensor_name_in_ckpt=None,
                             max_norm=None, trainable=True):
    """Embedding columns of `categorical_columns` (all of one number of buckets) sharing
    one table."""
    columns = list(categorical_columns)
    if not columns:
        raise ValueError("categorical_columns must not be empty.")
    sizes = {c._num_buckets for c in columns}
    if len(sizes) != 1:
        raise ValueError(f"To use shared_embedding_column, all categorical_columns must "
                         f"have the same number of buckets. Given column: {columns[0]} "
                         f"with buckets: {columns[0]._num_buckets}.")
    first = embedding_column(columns[0], dimension, combiner, initializer, ckpt_to_load_from,
                             tensor_name_in_ckpt, max_norm, trainable)
    name = shared_embedding_collection_name or \
        "_".join(sorted(c.name for c in columns)) + "_shared_embedding"
    return [SharedEmbeddingColumn(c, first.dimension, combiner, first.initializer, name,
                                  ckpt_to_load_from, tensor_name_in_ckpt, max_norm,
                                  trainable) for c in columns]


# ---- layers ---------------------------------------------------------------------------------

def _sorted_columns(feature_columns, kind, what: str) -> list:
    if isinstance(feature_columns, (_DenseColumn, _CategoricalColumn)):
        feature_columns = [feature_columns]
    columns = list(feature_columns)
    if not columns:
        raise ValueError("feature_columns must not be empty.")
    for c in columns:
        if not isinstance(c, kind):
            raise ValueError(f"Items of feature_columns must be a {what}. Given (type "
                             f"{type(c)}): {c}.")
    names = collections.Counter(c.name for c in columns)
    dup = [n for n, k in names.items() if k > 1]
    if dup:
        raise ValueError(f"Duplicate feature column name found for columns: {dup}.")
    return sorted(columns, key=lambda c: c.name)


def input_layer(features, feature_columns, weight_collections=None, trainable=True,
                cols_to_vars=None, cols_to_output_tensors=None):
    """The dense columns' values concatenated per example, in the order of their names:
    a [batch, sum of their sizes] float32 tensor."""
    from tensorflux.ops import array_ops, joining_ops
    from tensorflux.variables import variable_scope

    columns = _sorted_columns(feature_columns, _DenseColumn, "_DenseColumn. You can wrap "
                              "a categorical column with an embedding_column or "
                              "indicator_column")
    for column in columns:
        _check_not_sequence(column)
    builder = _Builder(features)
    outputs = []
    with variable_scope.variable_scope(None, default_name="input_layer"):
        for column in columns:
            scope = getattr(column, "_var_scope_name", column.name)
            with variable_scope.variable_scope(None, default_name=scope):
                if isinstance(column, _Embedded):
                    t = column._dense(builder, trainable)
                else:
                    t = column._dense(builder)
                n = math.prod(column._variable_shape.as_list())
                t = array_ops.reshape(t, [-1, n], name="Reshape")
                outputs.append(t)
                if cols_to_output_tensors is not None:
                    cols_to_output_tensors[column] = t
                if cols_to_vars is not None:
                    cols_to_vars[column] = _scope_variables()
                _add_to(weight_collections)
        return joining_ops.concat(outputs, 1)


def _check_not_sequence(column) -> None:
    categorical = getattr(column, "categorical_column", None)
    if getattr(categorical, "_is_sequence", False):
        kind = "indicator_column" if isinstance(column, IndicatorColumn) else \
            "embedding_column"
        raise ValueError(f"In {kind}: {column.name}. categorical_column must not be of type "
                         f"_SequenceCategoricalColumn. Suggested fix A: If you wish to use "
                         f"input_layer, use a non-sequence categorical_column_with_*. "
                         f"Suggested fix B: If you wish to create sequence input, use "
                         f"sequence_input_layer instead of input_layer. Given (type "
                         f"{type(categorical)}): {categorical}")


def _scope_variables() -> list:
    from tensorflux.framework import graph as graph_lib
    from tensorflux.variables import variable_scope

    scope = variable_scope.get_variable_scope().name
    return [v for v in graph_lib.get_collection(graph_lib.GraphKeys.GLOBAL_VARIABLES)
            if v.op.name.startswith(scope + "/")]


def _add_to(collections_) -> None:
    if not collections_:
        return
    from tensorflux.framework import graph as graph_lib

    for v in _scope_variables():
        for name in collections_:
            if v not in graph_lib.get_collection(name):
                graph_lib.add_to_collection(name, v)


def linear_model(features, feature_columns, units=1, sparse_combiner="sum",
                 weight_collections=None, trainable=True, cols_to_vars=None):
    """A linear model: per column a weight matrix (categorical columns: one row per
    bucket, combined by `sparse_combiner`), summed with `bias_weights`; [batch, units]."""
    from tensorflux.nn import nn_extra
    from tensorflux.ops import array_ops, math_ops, matrix_ops
    from tensorflux.variables import init_ops, variable_scope

    columns = _sorted_columns(feature_columns, (_DenseColumn, _CategoricalColumn),
                              "_FeatureColumn")
    builder = _Builder(features)
    total = None
    with variable_scope.variable_scope(None, default_name="linear_model"):
        for column in columns:
            with variable_scope.variable_scope(None, default_name=column.name):
                if isinstance(column, _CategoricalColumn):
                    ids, weights = column._ids(builder)
                    w = variable_scope.get_variable(
                        "weights", [column._num_buckets, units],
                        initializer=init_ops.zeros_initializer(), trainable=trainable)
                    part = nn_extra.safe_embedding_lookup_sparse(
                        w, ids, weights, combiner=sparse_combiner, name="weighted_sum")
                else:
                    n = math.prod(column._variable_shape.as_list())
                    w = variable_scope.get_variable(
                        "weights", [n, units], initializer=init_ops.zeros_initializer(),
                        trainable=trainable)
                    part = matrix_ops.matmul(array_ops.reshape(column._dense(builder), [-1, n]),
                                           w, name="weighted_sum")
                if cols_to_vars is not None:
                    cols_to_vars[column] = [w]
                _add_to(weight_collections)
            total = part if total is None else math_ops.add(total, part)
        bias = variable_scope.get_variable("bias_weights", [units],
                                           initializer=init_ops.zeros_initializer(),
                                           trainable=trainable)
        if cols_to_vars is not None:
            cols_to_vars["bias"] = [bias]
        return math_ops.add(total, bias, name="weighted_sum")


def make_parse_example_spec(feature_columns) -> dict:
    """The tf.parse_example feature spec the columns need."""
    spec: dict = {}
    for column in feature_columns:
        for key, value in column._parse_example_spec.items():
            if key in spec and spec[key] != value:
                raise ValueError(f"feature_columns contain different parse_spec for key "
                                 f"{key}. Given {value} and {spec[key]}")
            spec[key] = value
    return spec
