"""`tf.contrib.lookup`: TF1's lookup tables, which later moved to `tf.lookup`. The same
classes as tensorflux/lookup (`HashTable` is TF1's name for `StaticHashTable`), plus
contrib's `MutableDenseHashTable`, `IdTableWithHashBuckets` and the deprecated
`string_to_index`/`index_to_string` functions."""

from __future__ import annotations

from tensorflux.framework import graph as graph_lib
from tensorflux.lookup.lookup_ops import (  # noqa: F401
    FastHashSpec,
    HasherSpec,
    IdTableWithHashBuckets,
    InitializableLookupTableBase,
    KeyValueTensorInitializer,
    LookupInterface,
    MutableHashTable,
    StaticHashTable,
    StaticVocabularyTable,
    StrongHashSpec,
    TableInitializerBase,
    TableWrapper,
    TextFileIdTableInitializer,
    TextFileIndex,
    TextFileInitializer,
    TextFileStringTableInitializer,
    index_table_from_file,
    index_table_from_tensor,
    index_to_string_table_from_file,
    index_to_string_table_from_tensor,
    tables_initializer,
)

HashTable = StaticHashTable


class MutableDenseHashTable(MutableHashTable):
    """A mutable table of TF1's open-addressing kind (`tf.contrib.lookup.
    MutableDenseHashTable`). tensorflux keeps it as a MutableHashTable: `empty_key` and
    `deleted_key` are checked for being distinct, `initial_num_buckets` is ignored.

    Raises:
      ValueError: `empty_key` equals `deleted_key`.
    """

    def __init__(self, key_dtype, value_dtype, default_value, empty_key, deleted_key=None,
                 initial_num_buckets=None, name="MutableDenseHashTable", checkpoint=True):
        if deleted_key is not None and deleted_key == empty_key:
            raise ValueError("Empty and deleted keys must have different values.")
        self._empty_key, self._deleted_key = empty_key, deleted_key
        super().__init__(key_dtype, value_dtype, default_value, name=name,
                         checkpoint=checkpoint)


def string_to_index(tensor, mapping, default_value=-1, name=None):
    """The position in `mapping` of each string of `tensor`, `default_value` if absent
    (deprecated in TF1 for `index_table_from_tensor`; the table must be initialized)."""
    with graph_lib.name_scope(name, "string_to_index", [tensor, mapping]):
        table = index_table_from_tensor(mapping, default_value=default_value)
        return table.lookup(tensor)


def index_to_string(tensor, mapping, default_value="UNK", name=None):
    """The entry of `mapping` at each int64 position of `tensor`, `default_value` out of
    range (deprecated in TF1 for `index_to_string_table_from_tensor`)."""
    with graph_lib.name_scope(name, "index_to_string", [tensor, mapping]):
        table = index_to_string_table_from_tensor(mapping, default_value=default_value)
        return table.lookup(tensor)


__all__ = ["FastHashSpec", "HashTable", "HasherSpec", "IdTableWithHashBuckets",
           "InitializableLookupTableBase", "StrongHashSpec",
           "KeyValueTensorInitializer", "LookupInterface", "MutableDenseHashTable",
           "MutableHashTable", "StaticHashTable", "StaticVocabularyTable",
           "TableInitializerBase", "TextFileIdTableInitializer", "TextFileIndex",
           "TextFileInitializer", "TextFileStringTableInitializer", "index_table_from_file",
           "index_table_from_tensor", "index_to_string", "index_to_string_table_from_file",
           "index_to_string_table_from_tensor", "string_to_index", "tables_initializer"]
