"""`tf.lookup`: static hash tables, their initializers, and vocabulary tables.

A table is a HashTableV2 resource (ops/lookup_ops.py). Its initializer op (LookupTableImportV2
from tensors, InitializeTableFromTextFileV2 from a vocabulary file) is added to the
TABLE_INITIALIZERS collection, which `tf.tables_initializer()` groups, as in TF1.
`StaticVocabularyTable` sends keys missing from its table to `num_oov_buckets` extra ids by
hashing them: with the StringToHashBucketFast op (FarmHash Fingerprint64, TensorFlow's
buckets) when it is registered; otherwise through a py_func that hashes with BLAKE2b, whose
buckets differ from TensorFlow's (the graph then holds a PyFunc instead).
"""

from __future__ import annotations

import collections
import hashlib
import uuid

import numpy as np

from tensorflux.control_flow import builders
from tensorflux.framework import dtypes, op_registry
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    constant_op,
    control_flow_ops,
    lookup_ops,
    math_ops,
    script_ops,
    sequence_ops,
    string_ops,
)

__all__ = ["LookupInterface", "InitializableLookupTableBase", "StaticHashTable",
           "TableInitializerBase", "KeyValueTensorInitializer", "TextFileIndex",
           "TextFileInitializer", "TextFileStringTableInitializer",
           "TextFileIdTableInitializer", "StaticVocabularyTable", "tables_initializer",
           "initialize_all_tables", "index_table_from_tensor", "index_table_from_file",
           "index_to_string_table_from_tensor", "index_to_string_table_from_file",
           "MutableHashTable"]


def tables_initializer(name: str = "init_all_tables"):
    """One op running every initializer in TABLE_INITIALIZERS (`tf.tables_initializer`)."""
    initializers = graph_lib.get_collection(GraphKeys.TABLE_INITIALIZERS)
    if initializers:
        return builders.group(*initializers, name=name)
    return control_flow_ops.no_op(name=name)


def initialize_all_tables(name: str = "init_all_tables"):
    """Deprecated alias of `tables_initializer`."""
    return tables_initializer(name)


class _KeyValueTypes:
    """The key and value dtypes a table and its initializer share."""

    def __init__(self, key_dtype, value_dtype):
        self._key_dtype = dtypes.as_dtype(key_dtype)
        self._value_dtype = dtypes.as_dtype(value_dtype)

    @property
    def key_dtype(self):
        return self._key_dtype

    @property
    def value_dtype(self):
        return self._value_dtype


class LookupInterface(_KeyValueTypes):
    """A table mapping keys of `key_dtype` to values of `value_dtype`; subclasses keep the
    table's resource in `_table_ref` and their default value in `_default_value`."""

    @property
    def name(self) -> str:
        return self._name

    @property
    def resource_handle(self):
        return self._table_ref

    @property
    def default_value(self):
        return self._default_value

    def size(self, name=None):
        """The number of entries (int64 scalar)."""
        with graph_lib.name_scope(name, f"{self.name}_Size", [self.resource_handle]):
            return lookup_ops.lookup_table_size(self.resource_handle)

    def _check_keys(self, keys):
        keys = convert_to_tensor(keys)
        if keys.dtype.base_dtype != self._key_dtype:
            raise TypeError(f"Dtype of argument `keys` must be {self._key_dtype}, received: "
                            f"{keys.dtype}")
        return keys


class TableInitializerBase(_KeyValueTypes):
    """How a table is filled: `initialize(table)` returns the op that fills it."""

    @property
    def _shared_name(self) -> str:
        return f"hash_table_{uuid.uuid4()}"

    def initialize(self, table):
        raise NotImplementedError


class KeyValueTensorInitializer(TableInitializerBase):
    """Fills a table from a keys tensor and a values tensor of the same length
    (`tf.lookup.KeyValueTensorInitializer`)."""

    def __init__(self, keys, values, key_dtype=None, value_dtype=None, name=None):
        self._keys = convert_to_tensor(keys, dtype=key_dtype, name="keys")
        self._values = convert_to_tensor(values, dtype=value_dtype, name="values")
        self._name = name
        super().__init__(self._keys.dtype, self._values.dtype)

    def initialize(self, table):
        with graph_lib.name_scope(self._name, "key_value_init", [table.resource_handle]):
            op = lookup_ops.lookup_table_import(table.resource_handle, self._keys,
                                                self._values)
        graph_lib.add_to_collection(GraphKeys.TABLE_INITIALIZERS, op)
        return op


class TextFileIndex:
    """Which part of a line is the key or value: a column (>= 0), the whole line, or the
    line number (`tf.lookup.TextFileIndex`)."""

    WHOLE_LINE = -2
    LINE_NUMBER = -1


class TextFileInitializer(TableInitializerBase):
    """Fills a table from a text file, one entry per line (`tf.lookup.TextFileInitializer`).

    Args:
      filename: the vocabulary file (a string or a scalar string tensor).
      key_dtype, value_dtype: the table's dtypes.
      key_index, value_index: a column index (split by `delimiter`), or
        TextFileIndex.WHOLE_LINE (strings) or TextFileIndex.LINE_NUMBER (int64).
      vocab_size: read only this many lines (the file must have them).
      delimiter: the column separator.
      value_index_offset: added to line-number values.

    Raises:
      ValueError: an index that does not fit its dtype, or a bad vocab_size.
    """

    def __init__(self, filename, key_dtype, key_index, value_dtype, value_index,
                 vocab_size=None, delimiter="\t", name=None, value_index_offset=0):
        key_dtype, value_dtype = dtypes.as_dtype(key_dtype), dtypes.as_dtype(value_dtype)
        for what, index, dtype in (("key", key_index, key_dtype),
                                   ("value", value_index, value_dtype)):
            if index < TextFileIndex.WHOLE_LINE:
                raise ValueError(f"Invalid {what}_index {index}.")
            if index == TextFileIndex.LINE_NUMBER and dtype != dtypes.int64:
                raise ValueError(f"Signature mismatch. {what.capitalize()}s must be dtype "
                                 f"{dtypes.int64}, got {dtype}.")
            if index == TextFileIndex.WHOLE_LINE and not dtype.is_integer and \
                    dtype != dtypes.string:
                raise ValueError(f"Signature mismatch. {what.capitalize()}s must be integer "
                                 f"or string, got {dtype}.")
        if vocab_size is not None and vocab_size <= 0:
            raise ValueError(f"Invalid vocab_size {vocab_size}.")
        self._filename_arg = filename
        self._key_index, self._value_index = key_index, value_index
        self._vocab_size = vocab_size
        self._delimiter = delimiter
        self._name = name
        self._offset = value_index_offset
        super().__init__(key_dtype, value_dtype)

    @property
    def _shared_name(self) -> str:
        name = f"hash_table_{self._filename_arg}"
        if self._vocab_size:
            name += f"_{self._vocab_size}"
        return f"{name}_{self._key_index}_{self._value_index}"

    def initialize(self, table):
        with graph_lib.name_scope(self._name, "text_file_init", [table.resource_handle]):
            filename = convert_to_tensor(self._filename_arg, dtypes.string, name="asset_path")
            op = lookup_ops.initialize_table_from_text_file(
                table.resource_handle, filename, self._key_index, self._value_index,
                -1 if self._vocab_size is None else self._vocab_size, self._delimiter,
                self._offset)
        graph_lib.add_to_collection(GraphKeys.TABLE_INITIALIZERS, op)
        if isinstance(self._filename_arg, str):
            graph_lib.add_to_collection(GraphKeys.ASSET_FILEPATHS, filename)
        return op


class TextFileStringTableInitializer(TextFileInitializer):
    """Line numbers (int64) to whole lines (strings) by default."""

    def __init__(self, filename, key_column_index=TextFileIndex.LINE_NUMBER,
                 value_column_index=TextFileIndex.WHOLE_LINE, vocab_size=None,
                 delimiter="\t", name="text_file_string_table_init"):
        super().__init__(filename, dtypes.int64, key_column_index, dtypes.string,
                         value_column_index, vocab_size, delimiter, name)


class TextFileIdTableInitializer(TextFileInitializer):
    """Whole lines (strings) to line numbers (int64) by default."""

    def __init__(self, filename, key_column_index=TextFileIndex.WHOLE_LINE,
                 value_column_index=TextFileIndex.LINE_NUMBER, vocab_size=None,
                 delimiter="\t", name="text_file_id_table_init", key_dtype=dtypes.string):
        super().__init__(filename, key_dtype, key_column_index, dtypes.int64,
                         value_column_index, vocab_size, delimiter, name)


class InitializableLookupTableBase(LookupInterface):
    """A table filled once by an initializer."""

    def __init__(self, default_value, initializer):
        super().__init__(initializer.key_dtype, initializer.value_dtype)
        self._default_value = convert_to_tensor(default_value, dtype=self._value_dtype)
        self._default_value.shape.with_rank_at_most(1)
        self._initializer = initializer
        self._init_op = initializer.initialize(self)

    @property
    def initializer(self):
        return self._init_op

    @property
    def init(self):
        return self._init_op

    def lookup(self, keys, name=None):
        """The value of each key, the default value where it is absent.

        Raises:
          TypeError: `keys` is not of the table's key dtype.
        """
        keys = self._check_keys(keys)
        with graph_lib.name_scope(name, f"{self.name}_Lookup",
                                  [self.resource_handle, keys, self._default_value]):
            values = lookup_ops.lookup_table_find(self.resource_handle, keys,
                                                  self._default_value)
        return values


class StaticHashTable(InitializableLookupTableBase):
    """A hash table filled once by `initializer`, read-only afterwards
    (`tf.lookup.StaticHashTable`).

    Args:
      initializer: a KeyValueTensorInitializer or TextFileInitializer.
      default_value: the value of absent keys (the value dtype).
      name: the table op's name (default "hash_table").
    """

    def __init__(self, initializer, default_value, name=None,
                 experimental_is_anonymous=False):
        self._name = name or "hash_table"
        self._table_ref = lookup_ops.hash_table(
            initializer.key_dtype, initializer.value_dtype,
            shared_name=initializer._shared_name, name=self._name)
        self._name = self._table_ref.op.name.split("/")[-1]
        super().__init__(default_value, initializer)


def _hash_bucket(strings, num_buckets: int):
    """Fingerprint buckets of `strings` (see the module docstring)."""
    if op_registry.lookup("StringToHashBucketFast") is not None:
        return apply_op("StringToHashBucketFast", input=strings, num_buckets=num_buckets,
                        name="hash_bucket")

    def buckets(values):
        flat = [int.from_bytes(hashlib.blake2b(v, digest_size=8).digest(), "little")
                % num_buckets for v in np.asarray(values, dtype=object).ravel().tolist()]
        return np.asarray(flat, np.int64).reshape(np.shape(values))

    out = script_ops.py_func(buckets, [strings], dtypes.int64, stateful=False,
                             name="hash_bucket")
    out.set_shape(strings.shape)
    return out


def _as_string(keys):
    if keys.dtype == dtypes.string:
        return keys
    if op_registry.lookup("AsString") is not None:
        return apply_op("AsString", input=keys, name="AsString")

    def to_text(values):
        arr = np.asarray(values)
        return np.asarray([str(v).encode() for v in arr.ravel().tolist()],
                          dtype=object).reshape(arr.shape)

    out = script_ops.py_func(to_text, [keys], dtypes.string, stateful=False,
                             name="AsString")
    out.set_shape(keys.shape)
    return out


class TableWrapper(LookupInterface):
    """A table around an optional inner table (`_table`): its handle and initializer."""

    @property
    def resource_handle(self):
        return None if self._table is None else self._table.resource_handle

    @property
    def initializer(self):
        return None if self._table is None else self._table.initializer


class HasherSpec(collections.namedtuple("HasherSpec", ["hasher", "key"])):
    """Which hash assigns out-of-vocabulary buckets: "fasthash", "legacy" or "stronghash"
    (with a 2-int `key`)."""

    __slots__ = ()


FastHashSpec = HasherSpec("fasthash", None)


class StrongHashSpec(HasherSpec):
    """The keyed "stronghash" (StringToHashBucketStrong) with `key`, two unsigned ints.

    Raises:
      ValueError: `key` is not of size 2.
      TypeError: a part of `key` is not an integer.
    """

    __slots__ = ()

    def __new__(cls, key):
        if len(key) != 2:
            raise ValueError(f"`key` must have size 2, received {len(key)}")
        if not all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in key):
            raise TypeError(f"Invalid key {key}. Must be unsigned integer values.")
        return super().__new__(cls, "stronghash", key)


def _hashed(strings, num_buckets: int, spec: HasherSpec):
    """`strings`' buckets by the hash `spec` names."""
    if spec.hasher == "fasthash":
        return string_ops.string_to_hash_bucket_fast(strings, num_buckets, name="hash_bucket")
    if spec.hasher == "legacy":
        return string_ops.string_to_hash_bucket(strings, num_buckets, name="hash_bucket")
    return string_ops.string_to_hash_bucket_strong(strings, num_buckets, list(spec.key),
                                                   name="hash_bucket")


class IdTableWithHashBuckets(LookupInterface):
    """`table`'s ids for its keys, `table.size() + hash(key) % num_oov_buckets` for any
    other key (TF1's `IdTableWithHashBuckets`; with no table, the hashed bucket alone).

    Raises:
      ValueError: no `table` and `num_oov_buckets` <= 0; an unknown hasher.
      TypeError: a `key_dtype` other than integer or string, or not of the table's kind;
        a table whose values are not int64; `hasher_spec` not a HasherSpec.
    """

    def __init__(self, table, num_oov_buckets, hasher_spec=FastHashSpec, name=None,
                 key_dtype=None):
        if table is None and num_oov_buckets <= 0:
            raise ValueError("`oov_buckets` must be > 0 if no `table` is supplied.")
        key_dtype = None if key_dtype is None else dtypes.as_dtype(key_dtype)
        if table is not None:
            if key_dtype is None:
                key_dtype = table.key_dtype
            if table.key_dtype.is_integer != key_dtype.is_integer:
                raise TypeError("Invalid `key dtype`, expected "
                                f"{'integer' if key_dtype.is_integer else 'non-integer'} "
                                f"but got {table.key_dtype}.")
            if table.value_dtype != dtypes.int64:
                raise TypeError(f"Invalid `value_dtype`: expected int64 but got "
                                f"{table.value_dtype}.")
            name = name or table.name
        elif key_dtype is None:
            key_dtype = dtypes.string
        if key_dtype not in (dtypes.int32, dtypes.int64, dtypes.string):
            raise TypeError(f"Invalid `key_dtype`, expected integer or string, got "
                            f"{key_dtype}.")
        if not isinstance(hasher_spec, HasherSpec):
            raise TypeError(f"`hasher_spec` must be of type HasherSpec, got "
                            f"{type(hasher_spec)}.")
        if hasher_spec.hasher not in ("fasthash", "legacy", "stronghash"):
            raise ValueError(f"Found unknown hasher {hasher_spec.hasher} in `hasher_spec`")
        self._table, self._num_oov_buckets = table, num_oov_buckets
        self._hasher_spec = hasher_spec
        self._name = name or "hash_bucket"
        super().__init__(key_dtype, dtypes.int64)

    @property
    def resource_handle(self):
        return None if self._table is None else self._table.resource_handle

    @property
    def initializer(self):
        if self._table is None:
            return control_flow_ops.no_op()
        return self._table.initializer

    init = initializer

    def size(self, name=None):
        """Table entries plus buckets."""
        with graph_lib.name_scope(name, f"{self.name}_Size"):
            if self._table is None:
                return constant_op.constant(self._num_oov_buckets, dtypes.int64)
            return math_ops.add(self._table.size(), constant_op.constant(
                self._num_oov_buckets, dtypes.int64))

    def lookup(self, keys, name=None):
        """Each key's id (see the class docstring).

        Raises:
          TypeError: `keys` is not of the key dtype.
        """
        values = self._check_keys(keys)
        if values.dtype.is_integer:
            values = math_ops.cast(values, dtypes.int64)
        with graph_lib.name_scope(name, f"{self.name}_Lookup"):
            if self._num_oov_buckets == 0:
                return self._table.lookup(values)
            buckets = _hashed(_as_string(values), self._num_oov_buckets, self._hasher_spec)
            if self._table is None:
                return buckets
            ids = self._table.lookup(values)
            buckets = math_ops.add(buckets, self._table.size())
            found = comparison_ops.not_equal(ids, self._table.default_value)
            return comparison_ops.where_v2(found, ids, buckets)


class StaticVocabularyTable(TableWrapper):
    """Ids for a vocabulary, plus `num_oov_buckets` hashed ids for every other key
    (`tf.lookup.StaticVocabularyTable`): a key in the table gets its value, any other key
    `table.size() + hash(key) % num_oov_buckets`.

    Raises:
      ValueError: `num_oov_buckets` <= 0, or a table whose values are not int64.
      TypeError: table keys other than string or int64, or lookup keys other than string,
        int32 or int64.
    """

    def __init__(self, initializer, num_oov_buckets, lookup_key_dtype=None, name=None,
                 experimental_is_anonymous=False):
        if num_oov_buckets <= 0:
            raise ValueError("`num_oov_buckets` must be > 0; use StaticHashTable.")
        if initializer is not None and initializer.value_dtype != dtypes.int64:
            raise ValueError(f"`initializer` must have value_dtype {dtypes.int64}, got "
                             f"{initializer.value_dtype}.")
        key_dtype = initializer.key_dtype if initializer is not None else dtypes.string
        if key_dtype not in (dtypes.int64, dtypes.string):
            raise TypeError("Invalid `key_dtype`, expected one of (tf.int64, tf.string), but "
                            f"got {key_dtype}.")
        if lookup_key_dtype is None:
            lookup_key_dtype = key_dtype
        lookup_key_dtype = dtypes.as_dtype(lookup_key_dtype)
        if lookup_key_dtype not in (dtypes.string, dtypes.int32, dtypes.int64):
            raise TypeError(f"Invalid `key_dtype`, expected one of (tf.int64, tf.int32, "
                            f"tf.string), got {lookup_key_dtype}.")
        self._num_oov_buckets = num_oov_buckets
        self._table = None
        if initializer is not None:
            self._table = StaticHashTable(initializer, -1, name=name)
            self._name = self._table.name
        else:
            self._name = name or "hash_table"
        super().__init__(lookup_key_dtype, dtypes.int64)

    def size(self, name=None):
        """Table entries plus buckets."""
        with graph_lib.name_scope(name, f"{self.name}_Size"):
            if self._table is None:
                return constant_op.constant(self._num_oov_buckets, dtypes.int64)
            return math_ops.add(self._table.size(), self._num_oov_buckets)

    def lookup(self, keys, name=None):
        """The id of each key (see the class docstring).

        Raises:
          TypeError: `keys` is not of the lookup key dtype.
        """
        keys = self._check_keys(keys)
        values = keys
        if self._table is not None and self._table.key_dtype == dtypes.int64:
            values = math_ops.cast(values, dtypes.int64)
        with graph_lib.name_scope(name, f"{self.name}_Lookup"):
            buckets = _hash_bucket(_as_string(values), self._num_oov_buckets)
            if self._table is None:
                return buckets
            ids = self._table.lookup(values)
            buckets = math_ops.add(buckets, self._table.size())
            found = comparison_ops.not_equal(ids, self._table.default_value)
            return comparison_ops.where_v2(found, ids, buckets)


# ---- TF1's contrib.lookup helpers -------------------------------------------------------


def index_table_from_tensor(vocabulary_list, num_oov_buckets=0, default_value=-1,
                            hash_bucket_size=None, dtype=dtypes.string, name=None):
    """A table from each entry of `vocabulary_list` to its position (TF1's
    `index_table_from_tensor`); other keys get `default_value`, or one of `num_oov_buckets`
    hashed ids.

    Raises:
      ValueError: `vocabulary_list` is None, or `num_oov_buckets` < 0.
    """
    if vocabulary_list is None:
        raise ValueError("`vocabulary_list` must be specified.")
    if num_oov_buckets < 0:
        raise ValueError(f"`num_oov_buckets` must be greater than or equal to 0, got "
                         f"{num_oov_buckets}.")
    with graph_lib.name_scope(name, "string_to_index"):
        keys = convert_to_tensor(vocabulary_list, dtype=dtype)
        ids = _positions(keys)
        init = KeyValueTensorInitializer(keys, ids, name="table_init")
        if num_oov_buckets:
            return StaticVocabularyTable(init, num_oov_buckets, name="hash_table")
        return StaticHashTable(init, default_value, name="hash_table")


def _positions(keys):
    """0, 1, ..., size(keys) - 1 as int64."""
    return sequence_ops.range(array_ops.size(keys, out_type=dtypes.int64))


def index_table_from_file(vocabulary_file=None, num_oov_buckets=0, vocab_size=None,
                          default_value=-1, hash_bucket_size=None, key_dtype=dtypes.string,
                          name=None, key_column_index=TextFileIndex.WHOLE_LINE,
                          value_column_index=TextFileIndex.LINE_NUMBER, delimiter="\t"):
    """A table from each line of `vocabulary_file` to its line number (TF1's
    `index_table_from_file`).

    Raises:
      ValueError: no file, or `num_oov_buckets` < 0.
    """
    if vocabulary_file is None or (isinstance(vocabulary_file, str) and not vocabulary_file):
        raise ValueError("`vocabulary_file` must be specified and must not be empty.")
    if num_oov_buckets < 0:
        raise ValueError(f"`num_oov_buckets` must be greater than or equal to 0, got "
                         f"{num_oov_buckets}.")
    with graph_lib.name_scope(name, "string_to_index"):
        init = TextFileIdTableInitializer(vocabulary_file, key_column_index,
                                          value_column_index, vocab_size, delimiter,
                                          key_dtype=key_dtype)
        if num_oov_buckets:
            return StaticVocabularyTable(init, num_oov_buckets, name="hash_table")
        return StaticHashTable(init, default_value, name="hash_table")


def index_to_string_table_from_tensor(vocabulary_list, default_value="UNK", name=None):
    """A table from positions (int64) to the entries of `vocabulary_list` (TF1's
    `index_to_string_table_from_tensor`)."""
    if vocabulary_list is None:
        raise ValueError("`vocabulary_list` must be specified.")
    with graph_lib.name_scope(name, "index_to_string"):
        values = convert_to_tensor(vocabulary_list, dtypes.string)
        init = KeyValueTensorInitializer(_positions(values), values, dtypes.int64,
                                         dtypes.string, name="table_init")
        return StaticHashTable(init, default_value, name="hash_table")


def index_to_string_table_from_file(vocabulary_file, vocab_size=None, default_value="UNK",
                                    name=None, key_column_index=TextFileIndex.LINE_NUMBER,
                                    value_column_index=TextFileIndex.WHOLE_LINE,
                                    delimiter="\t"):
    """A table from line numbers (int64) to the lines of `vocabulary_file`."""
    if vocabulary_file is None or (isinstance(vocabulary_file, str) and not vocabulary_file):
        raise ValueError("`vocabulary_file` must be specified and must not be empty.")
    with graph_lib.name_scope(name, "index_to_string"):
        init = TextFileStringTableInitializer(vocabulary_file, key_column_index,
                                              value_column_index, vocab_size, delimiter)
        return StaticHashTable(init, default_value, name="hash_table")


class MutableHashTable(LookupInterface):
    """A table that starts empty and changes as ops insert and remove entries
    (`tf.lookup.experimental.MutableHashTable`, scalar values). Lookups of absent keys give
    `default_value`. Not saved by `tf.train.Saver` (TensorFlow's `checkpoint=True` is
    accepted and ignored).

    Args:
      key_dtype, value_dtype: the dtypes of keys and values.
      default_value: the value of absent keys.
      name: the table op's name.
    """

    def __init__(self, key_dtype, value_dtype, default_value, name="MutableHashTable",
                 checkpoint=True, experimental_is_anonymous=False):
        super().__init__(key_dtype, value_dtype)
        self._default_value = convert_to_tensor(default_value, dtype=self._value_dtype)
        if self._default_value.shape.ndims not in (0, None):
            raise ValueError("tensorflux's MutableHashTable holds scalar values only; "
                             f"got a default value of shape {self._default_value.shape}")
        self._table_ref = lookup_ops.mutable_hash_table(self._key_dtype, self._value_dtype,
                                                        name=name)
        self._name = self._table_ref.op.name.split("/")[-1]


    def lookup(self, keys, dynamic_default_values=None, name=None):
        """The value of each key, `default_value` for absent keys."""
        keys = self._check_keys(keys)
        default = self._default_value if dynamic_default_values is None else \
            convert_to_tensor(dynamic_default_values, self._value_dtype)
        with graph_lib.name_scope(name, f"{self.name}_lookup_table_find",
                                  [self._table_ref, keys, default]):
            return lookup_ops.lookup_table_find(self._table_ref, keys, default)

    def insert(self, keys, values, name=None):
        """The op that inserts (or overwrites) the entries keys[i] -> values[i].

        Raises:
          TypeError: keys or values of the wrong dtype.
        """
        keys = self._check_keys(keys)
        values = convert_to_tensor(values, self._value_dtype)
        with graph_lib.name_scope(name, f"{self.name}_lookup_table_insert",
                                  [self._table_ref, keys, values]):
            return lookup_ops.lookup_table_insert(self._table_ref, keys, values)

    def remove(self, keys, name=None):
        """The op that removes `keys` (absent ones are ignored)."""
        keys = self._check_keys(keys)
        with graph_lib.name_scope(name, f"{self.name}_lookup_table_remove",
                                  [self._table_ref, keys]):
            return lookup_ops.lookup_table_remove(self._table_ref, keys)

    def export(self, name=None):
        """(keys, values): every entry, in no particular order."""
        with graph_lib.name_scope(name, f"{self.name}_lookup_table_export_values",
                                  [self._table_ref]):
            return lookup_ops.lookup_table_export(self._table_ref, self._key_dtype,
                                                  self._value_dtype)
