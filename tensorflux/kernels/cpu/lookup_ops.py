"""CPU kernels of the lookup-table ops (tensorflux/ops/lookup_ops.py).

A `HashTable` resource is a dict from Python scalars (bytes for strings) to Python
scalars, filled once under its lock. HashTableV2 creates it like any resource op
(kernels/cpu/data_flow_ops.py's `resource_op`: the node's shared_name, or its name with
`use_node_name_sharing`, else a process-unique name). Lookups take a reference to the
filled dict, so they never wait on one another.
"""

from __future__ import annotations

import threading

import numpy as np

from tensorflux.framework import dtypes, errors
from tensorflux.kernels import datasets as ds_lib
from tensorflux.kernels.cpu.data_flow_ops import lookup as lookup_resource
from tensorflux.kernels.cpu.data_flow_ops import resource_op
from tensorflux.kernels.queues import type_name
from tensorflux.kernels.registry import kernel, kernel_factory

WHOLE_LINE, LINE_NUMBER = -2, -1


class HashTable:
    """A static hash table: empty until one initialization fills it."""

    dropped = False  # set when the ResourceMgr drops the resource
    mutable = False

    def __init__(self, name: str, key_dtype: dtypes.DType, value_dtype: dtypes.DType):
        self.name = name
        self.key_dtype = key_dtype
        self.value_dtype = value_dtype
        self.table: dict | None = None
        self.lock = threading.Lock()

    def close_resource(self) -> None:
        self.dropped = True

    def check_types(self, key_dtype, value_dtype) -> None:
        if key_dtype != self.key_dtype or value_dtype != self.value_dtype:
            raise errors.InvalidArgumentError(
                None, None, f"Conflicting key/value dtypes {type_name(key_dtype)}->"
                f"{type_name(value_dtype)} with {type_name(self.key_dtype)}-"
                f"{type_name(self.value_dtype)}")

    def initialize(self, keys: list, values: list) -> None:
        """Fills the table; the same contents again is a no-op, other contents an error."""
        new: dict = {}
        for k, v in zip(keys, values, strict=True):
            old = new.setdefault(k, v)
            if old != v:
                raise errors.FailedPreconditionError(
                    None, None, f"HashTable has different value for same key. Key "
                    f"{_show(k)} has {_show(old)} and trying to add value {_show(v)}")
        with self.lock:
            if self.table is None:
                self.table = new
            elif self.table != new:
                raise errors.FailedPreconditionError(
                    None, None, "Table was already initialized with different data.")

    def find(self, keys: np.ndarray, default) -> np.ndarray:
        table = self.table
        if table is None:
            raise errors.FailedPreconditionError(None, None, "Table not initialized.")
        flat = keys.ravel().tolist()
        out = np.empty(len(flat), dtype=_np_dtype(self.value_dtype))
        d = default.item() if isinstance(default, np.ndarray) else default
        out[:] = [table.get(k, d) for k in flat]
        return out.reshape(keys.shape)

    def size(self) -> int:
        table = self.table
        return 0 if table is None else len(table)


class MutableHashTable(HashTable):
    """A table that is always usable and changes under its lock; a lookup copies the
    values it finds while holding the lock, so it sees one state of the table."""

    mutable = True

    def __init__(self, name, key_dtype, value_dtype):
        super().__init__(name, key_dtype, value_dtype)
        self.table = {}

    def initialize(self, keys: list, values: list) -> None:
        """LookupTableImportV2 on a mutable table: the entries become exactly these."""
        with self.lock:
            self.table = dict(zip(keys, values, strict=True))

    def insert(self, keys: list, values: list) -> None:
        with self.lock:
            self.table.update(zip(keys, values, strict=True))

    def remove(self, keys: list) -> None:
        with self.lock:
            for k in keys:
                self.table.pop(k, None)

    def find(self, keys, default):
        with self.lock:
            return super().find(keys, default)

    def export(self):
        with self.lock:
            keys, values = list(self.table), list(self.table.values())
        return (np.array(keys, dtype=_np_dtype(self.key_dtype)).reshape(-1),
                np.array(values, dtype=_np_dtype(self.value_dtype)).reshape(-1))


def _show(x) -> str:
    return x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x)


def _np_dtype(dtype: dtypes.DType):
    return object if dtype == dtypes.string else dtype.as_numpy_dtype


def _scalars(arr) -> list:
    return np.asarray(arr).ravel().tolist()


def _table_kernel(op_type: str, cls):
    @kernel_factory(op_type)
    def factory(node):
        return _make_table(node, cls)

    return factory


def _make_table(node, cls):
    key_dtype, value_dtype = node.attrs["key_dtype"], node.attrs["value_dtype"]
    if node.attrs.get("use_node_name_sharing") and not node.attrs.get("shared_name"):
        node_attrs = dict(node.attrs, shared_name=node.name)
        node = _NamedNode(node.name, node_attrs)

    def check(res):
        if type(res) is not cls:
            raise errors.InvalidArgumentError(
                None, None, f"Resource {res!r} is not a {cls.__name__}")
        res.check_types(key_dtype, value_dtype)

    return resource_op(node, lambda name: cls(name, key_dtype, value_dtype), check)


_table_kernel("HashTableV2", HashTable)
_table_kernel("MutableHashTableV2", MutableHashTable)


class _NamedNode:
    """The two fields `resource_op` reads from a node."""

    __slots__ = ("name", "attrs")

    def __init__(self, name, attrs):
        self.name, self.attrs = name, attrs


def _table(ctx, handle) -> HashTable:
    return lookup_resource(ctx, handle, HashTable, "N10tensorflow6lookup15LookupInterfaceE")


def _check_key_type(table: HashTable, key_dtype, value_dtype) -> None:
    if key_dtype is not None and key_dtype != table.key_dtype:
        raise errors.InvalidArgumentError(
            None, None, f"Key must be type {type_name(table.key_dtype)} but got "
            f"{type_name(key_dtype)}")
    if value_dtype is not None and value_dtype != table.value_dtype:
        raise errors.InvalidArgumentError(
            None, None, f"Value must be type {type_name(table.value_dtype)} but got "
            f"{type_name(value_dtype)}")


@kernel_factory("LookupTableFindV2")
def _find(node):
    tin, tout = node.attrs["Tin"], node.attrs["Tout"]

    def compute(ctx, handle, keys, default):
        table = _table(ctx, handle)
        _check_key_type(table, tin, tout)
        return table.find(np.asarray(keys), np.asarray(default))

    return compute


def _import_kernel(op_type: str, key_attr: str, value_attr: str):
    @kernel_factory(op_type)
    def factory(node):
        tk, tv = node.attrs[key_attr], node.attrs[value_attr]

        def compute(ctx, handle, keys, values):
            table = _table(ctx, handle)
            _check_key_type(table, tk, tv)
            keys, values = np.asarray(keys), np.asarray(values)
            if keys.shape != values.shape and op_type == "InitializeTableV2":
                raise errors.InvalidArgumentError(
                    None, None, "Expected shape " + str(list(keys.shape)) + " for value, "
                    f"got {list(values.shape)}")
            if keys.shape[:1] != values.shape[:1]:
                raise errors.InvalidArgumentError(
                    None, None, f"Expected shape {list(keys.shape)} for value, got "
                    f"{list(values.shape)}")
            table.initialize(_scalars(keys), _scalars(values))

        return compute

    return factory


_import_kernel("LookupTableImportV2", "Tin", "Tout")
_import_kernel("InitializeTableV2", "Tkey", "Tval")


@kernel_factory("LookupTableInsertV2")
def _insert(node):
    tin, tout = node.attrs["Tin"], node.attrs["Tout"]

    def compute(ctx, handle, keys, values):
        table = _mutable(ctx, handle)
        _check_key_type(table, tin, tout)
        keys, values = np.asarray(keys), np.asarray(values)
        if keys.shape != values.shape:
            raise errors.InvalidArgumentError(
                None, None, f"Expected shape {list(keys.shape)} for value, got "
                f"{list(values.shape)}")
        table.insert(_scalars(keys), _scalars(values))

    return compute


@kernel_factory("LookupTableRemoveV2")
def _remove(node):
    tin = node.attrs["Tin"]

    def compute(ctx, handle, keys):
        table = _mutable(ctx, handle)
        _check_key_type(table, tin, None)
        table.remove(_scalars(keys))

    return compute


@kernel_factory("LookupTableExportV2")
def _export(node):
    def compute(ctx, handle):
        return _mutable(ctx, handle).export()

    return compute


def _mutable(ctx, handle) -> MutableHashTable:
    table = _table(ctx, handle)
    if not table.mutable:
        raise errors.UnimplementedError(None, None, f"Table {table.name} is not mutable")
    return table


@kernel("LookupTableSizeV2")
def _size(ctx, handle):
    return np.int64(_table(ctx, handle).size())


# ---- vocabulary files -------------------------------------------------------------------


def _parse_field(text: str, dtype: dtypes.DType, filename: str, line_no: int):
    if dtype == dtypes.string:
        return text.encode("utf-8")
    try:
        if dtype.is_integer:
            return int(text)
        if dtype.is_floating:
            return float(text)
    except ValueError:
        pass
    raise errors.InvalidArgumentError(
        None, None, f"Field {text} in line {line_no} is not a valid {type_name(dtype)} in "
        f"{filename}")


def _column(parts, index, line_no, offset, dtype, filename, line):
    if index == LINE_NUMBER:
        return line_no + offset
    if index == WHOLE_LINE:
        return _parse_field(line, dtype, filename, line_no)
    if index >= len(parts):
        raise errors.InvalidArgumentError(
            None, None, f"Invalid number of columns in {filename} line {line_no} ({line}) "
            f"for value index {index}.")
    return _parse_field(parts[index], dtype, filename, line_no)


def read_vocabulary(filename: str, key_index, value_index, key_dtype, value_dtype,
                    vocab_size=-1, delimiter="\t", offset=0):
    """(keys, values) from a vocabulary file, one entry per line (TF's rules)."""
    try:
        with open(filename, "rb") as f:
            lines = f.read().decode("utf-8").split("\n")
    except FileNotFoundError as exc:
        raise errors.NotFoundError(None, None, f"{filename}; No such file or directory") \
            from exc
    if lines and lines[-1] == "":
        lines.pop()
    if vocab_size > 0:
        if len(lines) < vocab_size:
            raise errors.InvalidArgumentError(
                None, None, f"Invalid vocab_size in {filename}: expected {vocab_size} but "
                f"got {len(lines)}")
        lines = lines[:vocab_size]
    keys, values = [], []
    for line_no, line in enumerate(lines):
        line = line.rstrip("\r")
        parts = line.split(delimiter) if delimiter else list(line)
        keys.append(_column(parts, key_index, line_no, offset, key_dtype, filename, line))
        values.append(_column(parts, value_index, line_no, offset, value_dtype, filename,
                              line))
    return keys, values


@kernel("InitializeTableFromDataset")
def _init_from_dataset(ctx, handle, dataset):
    table = _table(ctx, handle)
    it = ds_lib.as_dataset(dataset).iterate(ds_lib.Env())
    keys, values = [], []
    try:
        while (element := it.next()) is not None:
            if len(element) != 2:
                raise errors.InvalidArgumentError(
                    None, None, "Expected the dataset to produce (key, value) pairs, got an "
                    f"element of {len(element)} components")
            keys.extend(_scalars(element[0]))
            values.extend(_scalars(element[1]))
    finally:
        it.close()
    table.initialize(keys, values)


@kernel_factory("InitializeTableFromTextFileV2")
def _init_from_text_file(node):
    key_index, value_index = node.attrs["key_index"], node.attrs["value_index"]
    vocab_size = node.attrs.get("vocab_size", -1)
    delimiter = node.attrs.get("delimiter", "\t")
    if isinstance(delimiter, bytes):
        delimiter = delimiter.decode()
    offset = node.attrs.get("offset", 0)

    def compute(ctx, handle, filename):
        table = _table(ctx, handle)
        name = np.asarray(filename).item()
        name = name.decode() if isinstance(name, bytes) else str(name)
        keys, values = read_vocabulary(name, key_index, value_index, table.key_dtype,
                                       table.value_dtype, vocab_size, delimiter, offset)
        table.initialize(keys, values)

    return compute
