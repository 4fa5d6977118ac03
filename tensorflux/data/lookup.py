"""Lookup tables filled from datasets (TF's `tf.data.experimental` DatasetInitializer,
table_from_dataset, index_table_from_dataset).

A DatasetInitializer fills a table with the (key, value) scalar pairs of a dataset: its
InitializeTableFromDataset op (in TABLE_INITIALIZERS, so `tf.tables_initializer()` runs it)
iterates the dataset when it runs. Duplicate keys with different values fail as for any
table initializer (FailedPreconditionError). `table_from_dataset` builds a StaticHashTable
(TF1's StaticHashTableV1) in "string_to_index/hash_table", wrapped in hashed
out-of-vocabulary buckets when `num_oov_buckets` > 0 (TF1's IdTableWithHashBuckets);
`index_table_from_dataset` maps each key of a dataset of keys to its position.
"""

from __future__ import annotations

from tensorflux.data import structure as st
from tensorflux.data.dataset_ops import DatasetV1
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.framework.tensor_spec import TensorSpec
from tensorflux.lookup.lookup_ops import (
    FastHashSpec,
    IdTableWithHashBuckets,
    StaticHashTable,
    TableInitializerBase,
)
from tensorflux.ops import math_ops

__all__ = ["DatasetInitializer", "table_from_dataset", "index_table_from_dataset"]


_BASE_ERROR = ("Datasets used to initialize lookup tables must produce elements in the form "
               "(key, value), where the keys and values are scalar tensors. ")


def _check_pair_structure(dataset: DatasetV1) -> tuple[TensorSpec, TensorSpec]:
    """The (key, value) specs of `dataset`'s elements; ValueError unless two scalars."""
    s = dataset._structure
    specs = list(s) if isinstance(s, tuple) else [s]
    if len(specs) != 2:
        raise ValueError(_BASE_ERROR + f"However, the given dataset produces {len(specs)} "
                         "components instead of two (key, value) components. Full dataset "
                         f"element spec: {s}.")
    for what, spec in zip(("keys", "values"), specs, strict=True):
        if type(spec) is not TensorSpec:
            raise ValueError(_BASE_ERROR + f"However, the given dataset produces non-Tensor "
                             f"{what} of type {type(spec)}.")
    for what, spec in zip(("key", "value"), specs, strict=True):
        if spec.shape.ndims not in (None, 0):
            raise ValueError(_BASE_ERROR + "However, the given dataset produces non-scalar "
                             f"{what} Tensors of rank {spec.shape.ndims}.")
    return specs[0], specs[1]


class DatasetInitializer(TableInitializerBase):
    """Fills a table with the (key, value) pairs of `dataset`
    (`tf.data.experimental.DatasetInitializer`).

    Args:
      dataset: a dataset of (key, value) pairs of scalars.

    Raises:
      ValueError: the elements are not pairs of scalar tensors.
    """

    def __init__(self, dataset):
        self.dataset = dataset
        key, value = _check_pair_structure(dataset)
        super().__init__(key.dtype, value.dtype)

    def initialize(self, table):
        """The op filling `table` (added to TABLE_INITIALIZERS).

        Raises:
          TypeError: the table's key or value dtype is not the dataset's.
        """
        if table.key_dtype != self._key_dtype:
            raise TypeError(f"Invalid key dtype for table, expected {table.key_dtype} but got "
                            f"{self._key_dtype}.")
        if table.value_dtype != self._value_dtype:
            raise TypeError(f"Invalid value dtype for table, expected {table.value_dtype} but "
                            f"got {self._value_dtype}.")
        op = apply_op("InitializeTableFromDataset", table_handle=table.resource_handle,
                      dataset=self.dataset._variant_tensor)
        graph_lib.add_to_collection(GraphKeys.TABLE_INITIALIZERS, op)
        return op


def table_from_dataset(dataset=None, num_oov_buckets=0, vocab_size=None, default_value=None,
                       hasher_spec=FastHashSpec, key_dtype=dtypes.string, name=None):
    """A lookup table of the (key, value) pairs of `dataset`
    (`tf.data.experimental.table_from_dataset`).

    Keys not in the dataset get `default_value` (default -1), or with `num_oov_buckets` >
    0 one of the ids [size, size + num_oov_buckets) by the hash of the key's string.

    Args:
      dataset: a dataset of (key, value) scalar pairs.
      num_oov_buckets: how many hashed ids for other keys.
      vocab_size: how many pairs to take; the dataset must have at least that many
        (FailedPreconditionError when the table is initialized).
      default_value: the value of other keys (required unless values are numbers).
      hasher_spec: the hash of the buckets (a HasherSpec; fasthash by default).
      key_dtype: the dtype of the keys looked up (integer or string), with buckets.
      name: the name scope (default "string_to_index").

    Returns:
      The table (its `initializer` is in TABLE_INITIALIZERS).

    Raises:
      ValueError: elements that are not scalar pairs, no default value for non-numeric
        values, `num_oov_buckets` < 0 or `vocab_size` < 1.
      TypeError: a `key_dtype` that is neither integer nor string.
    """
    _, value = _check_pair_structure(dataset)
    if default_value is None:
        default_value = -1
        if not (value.dtype.is_integer or value.dtype.is_floating):
            raise ValueError("`default_value` must be specified when creating a table from a "
                             f"dataset that produces values of type {value.dtype}.")
    if num_oov_buckets < 0:
        raise ValueError("`num_oov_buckets` must be greater than or equal to 0, got "
                         f"{num_oov_buckets}.")
    if not isinstance(vocab_size, Tensor) and vocab_size is not None and vocab_size < 1:
        raise ValueError(f"`vocab_size` must be greater than 0, got {vocab_size}.")
    key_dtype = dtypes.as_dtype(key_dtype)
    if not key_dtype.is_integer and key_dtype.base_dtype != dtypes.string:
        raise TypeError("`key_dtype` must be either an integer or string type, but got "
                        f"{key_dtype}")
    if vocab_size is not None:
        vocab_size = math_ops.cast(convert_to_tensor(vocab_size), dtypes.int64)
        dataset = _assert_cardinality(dataset.take(vocab_size), vocab_size)
    with graph_lib.name_scope(name, "string_to_index"):
        initializer = DatasetInitializer(dataset)
        with graph_lib.name_scope(None, "hash_table"):
            table = StaticHashTable(initializer, default_value)
            if num_oov_buckets:
                table = IdTableWithHashBuckets(table, num_oov_buckets, hasher_spec,
                                               key_dtype=key_dtype)
            return table


def _assert_cardinality(ds: DatasetV1, n) -> DatasetV1:
    v = apply_op("AssertCardinalityDataset", input_dataset=ds._variant_tensor, cardinality=n,
                 **st.flat_attrs(ds._structure))
    return DatasetV1(v, ds._structure)


def index_table_from_dataset(dataset=None, num_oov_buckets=0, vocab_size=None,
                             default_value=-1, hasher_spec=FastHashSpec,
                             key_dtype=dtypes.string, name=None):
    """A table from each key of `dataset` (a dataset of scalar keys) to its position
    (`tf.data.experimental.index_table_from_dataset`); other keys as in
    `table_from_dataset`."""
    return table_from_dataset(dataset.enumerate().map(lambda i, k: (k, i)), num_oov_buckets,
                              vocab_size, default_value, hasher_spec, key_dtype, name)
