"""tf.contrib.layers' feature columns (TF 1.0-1.2's spellings), as the core tf.feature_column
columns they became: `real_valued_column` -> numeric_column, `sparse_column_with_keys` ->
categorical_column_with_vocabulary_list, `sparse_column_with_hash_bucket`,
`sparse_column_with_integerized_feature` -> categorical_column_with_identity, `one_hot_column`
-> indicator_column, `embedding_column`, `bucketized_column`, `crossed_column`, and
`input_from_feature_columns` -> input_layer."""

from __future__ import annotations

from tensorflux.feature_column import feature_column as fc
from tensorflux.framework import dtypes

__all__ = ["real_valued_column", "sparse_column_with_keys", "sparse_column_with_hash_bucket",
           "sparse_column_with_integerized_feature", "one_hot_column", "embedding_column",
           "bucketized_column", "crossed_column", "input_from_feature_columns"]


def real_valued_column(column_name, dimension=1, default_value=None, dtype=dtypes.float32,
                       normalizer=None):
    """A dense column of `dimension` values (`numeric_column` of shape [dimension]).

    Raises:
      TypeError: a dimension that is not a positive int.
    """
    if not isinstance(dimension, int) or dimension < 1:
        raise TypeError(f"dimension must be an integer >= 1. Given: {dimension}")
    return fc.numeric_column(column_name, shape=(dimension,), default_value=default_value,
                             dtype=dtype, normalizer_fn=normalizer)


def sparse_column_with_keys(column_name, keys, default_value=-1, combiner="sum",
                            dtype=dtypes.string):
    """Ids from a fixed list of keys (`categorical_column_with_vocabulary_list`)."""
    del combiner  # the combining column (embedding, linear model) chooses it now
    return fc.categorical_column_with_vocabulary_list(column_name, list(keys), dtype=dtype,
                                                      default_value=default_value)


def sparse_column_with_hash_bucket(column_name, hash_bucket_size, combiner="sum",
                                   dtype=dtypes.string):
    """Ids from hashing (`categorical_column_with_hash_bucket`)."""
    del combiner
    return fc.categorical_column_with_hash_bucket(column_name, hash_bucket_size, dtype=dtype)


def sparse_column_with_integerized_feature(column_name, bucket_size, combiner="sum",
                                           dtype=dtypes.int64):
    """Integer ids in [0, bucket_size) (`categorical_column_with_identity`)."""
    del combiner, dtype
    return fc.categorical_column_with_identity(column_name, bucket_size)


def one_hot_column(sparse_id_column):
    """The ids one-hot (multi-hot) as a dense column (`indicator_column`)."""
    return fc.indicator_column(sparse_id_column)


def embedding_column(sparse_id_column, dimension, combiner="mean", initializer=None,
                     ckpt_to_load_from=None, tensor_name_in_ckpt=None, max_norm=None,
                     trainable=True):
    """Embeddings of the ids (`tf.feature_column.embedding_column`)."""
    return fc.embedding_column(sparse_id_column, dimension, combiner=combiner,
                               initializer=initializer, ckpt_to_load_from=ckpt_to_load_from,
                               tensor_name_in_ckpt=tensor_name_in_ckpt, max_norm=max_norm,
                               trainable=trainable)


def bucketized_column(source_column, boundaries):
    """`tf.feature_column.bucketized_column`."""
    return fc.bucketized_column(source_column, boundaries)


def crossed_column(columns, hash_bucket_size, combiner="sum", ckpt_to_load_from=None,
                   tensor_name_in_ckpt=None, hash_key=None):
    """`tf.feature_column.crossed_column` of the columns (or keys)."""
    del combiner, ckpt_to_load_from, tensor_name_in_ckpt
    return fc.crossed_column(list(columns), hash_bucket_size, hash_key=hash_key)


def input_from_feature_columns(columns_to_tensors, feature_columns, weight_collections=None,
                               trainable=True, scope=None, cols_to_outs=None):
    """The dense columns' values concatenated (`tf.feature_column.input_layer`;
    `cols_to_outs` gets each column's output)."""
    del scope
    return fc.input_layer(columns_to_tensors, feature_columns,
                          weight_collections=weight_collections, trainable=trainable,
                          cols_to_output_tensors=cols_to_outs)
