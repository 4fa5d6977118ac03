"""Lookup tables: ops over a hash table resource (TF's lookup_ops, V2 resource ops).

MutableHashTableV2 makes a table that starts empty and changes at any time:
LookupTableInsertV2 (overwriting), LookupTableRemoveV2, LookupTableExportV2 (all entries),
LookupTableImportV2 (replacing all entries).

HashTableV2 outputs a `resource` handle naming a table in the device's ResourceMgr
(kernels/cpu/lookup_ops.py). A table is filled once, by LookupTableImportV2 or
InitializeTableV2 (keys and values tensors) or InitializeTableFromTextFileV2 (a vocabulary
file); re-running an initializer with the same contents is a no-op, with other contents a
FailedPreconditionError. LookupTableFindV2 maps keys to values (the default where a key is
absent; FailedPreconditionError before initialization), LookupTableSizeV2 counts entries.
The Python classes (`tf.lookup.StaticHashTable`, ...) live in tensorflux/lookup.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable

__all__: list[str] = []

_DEVICE = "/device:CPU:*"  # tables live in host memory, as in TensorFlow


def _no_outputs(op):
    return []


def _find_shape(op):
    keys = op.inputs[1].shape
    default = op.inputs[2].shape
    if default.ndims == 0:
        return [keys]
    if keys.ndims is None or default.ndims is None:
        return [tensor_shape.unknown_shape()]
    return [keys.concatenate(default)]


define_op("HashTableV2", outputs=["table_handle: resource"],
          attrs=["container: string = ''", "shared_name: string = ''",
                 "use_node_name_sharing: bool = false", "key_dtype: type", "value_dtype: type"],
          shape_fn=common_shapes.scalar, stateful=True)
define_op("MutableHashTableV2", outputs=["table_handle: resource"],
          attrs=["container: string = ''", "shared_name: string = ''",
                 "use_node_name_sharing: bool = false", "key_dtype: type", "value_dtype: type"],
          shape_fn=common_shapes.scalar, stateful=True)
define_op("LookupTableInsertV2", inputs=["table_handle: resource", "keys: Tin", "values: Tout"],
          attrs=["Tin: type", "Tout: type"], shape_fn=_no_outputs, stateful=True)
define_op("LookupTableRemoveV2", inputs=["table_handle: resource", "keys: Tin"],
          attrs=["Tin: type"], shape_fn=_no_outputs, stateful=True)
define_op("LookupTableExportV2", inputs=["table_handle: resource"],
          outputs=["keys: Tkeys", "values: Tvalues"], attrs=["Tkeys: type", "Tvalues: type"],
          shape_fn=lambda op: [tensor_shape.TensorShape([None])] * 2, stateful=True)
define_op("LookupTableFindV2",
          inputs=["table_handle: resource", "keys: Tin", "default_value: Tout"],
          outputs=["values: Tout"], attrs=["Tin: type", "Tout: type"], shape_fn=_find_shape,
          stateful=True)
define_op("LookupTableImportV2", inputs=["table_handle: resource", "keys: Tin", "values: Tout"],
          attrs=["Tin: type", "Tout: type"], shape_fn=_no_outputs, stateful=True)
define_op("LookupTableSizeV2", inputs=["table_handle: resource"], outputs=["size: int64"],
          shape_fn=common_shapes.scalar, stateful=True)
define_op("InitializeTableV2", inputs=["table_handle: resource", "keys: Tkey", "values: Tval"],
          attrs=["Tkey: type", "Tval: type"], shape_fn=_no_outputs, stateful=True)
define_op("InitializeTableFromTextFileV2", inputs=["table_handle: resource", "filename: string"],
          attrs=["key_index: int >= -2", "value_index: int >= -2", "vocab_size: int >= -1 = -1",
                 "delimiter: string = '\\t'", "offset: int = 0"],
          shape_fn=_no_outputs, stateful=True)
# Fills a table from a dataset of (key, value) scalar pairs (tf.data.experimental.
# DatasetInitializer, tensorflux/data/lookup.py).
define_op("InitializeTableFromDataset", inputs=["table_handle: resource", "dataset: variant"],
          shape_fn=_no_outputs, stateful=True)
not_differentiable("InitializeTableFromDataset")
not_differentiable("HashTableV2", "LookupTableFindV2", "LookupTableImportV2",
                   "LookupTableSizeV2", "InitializeTableV2", "InitializeTableFromTextFileV2",
                   "MutableHashTableV2", "LookupTableInsertV2", "LookupTableRemoveV2",
                   "LookupTableExportV2")


def hash_table(key_dtype, value_dtype, container="", shared_name="",
               use_node_name_sharing=False, name=None):
    """A HashTableV2 op: the handle of an empty table (on the CPU)."""
    with graph_lib.device(_DEVICE):
        return apply_op("HashTableV2", key_dtype=key_dtype, value_dtype=value_dtype,
                        container=container, shared_name=shared_name,
                        use_node_name_sharing=use_node_name_sharing,
                        name=name or "HashTableV2")


def mutable_hash_table(key_dtype, value_dtype, container="", shared_name="",
                       use_node_name_sharing=False, name=None):
    """A MutableHashTableV2 op: the handle of an empty mutable table (on the CPU)."""
    with graph_lib.device(_DEVICE):
        return apply_op("MutableHashTableV2", key_dtype=key_dtype, value_dtype=value_dtype,
                        container=container, shared_name=shared_name,
                        use_node_name_sharing=use_node_name_sharing,
                        name=name or "MutableHashTableV2")


def lookup_table_insert(table_handle, keys, values, name=None):
    return apply_op("LookupTableInsertV2", table_handle=table_handle, keys=keys,
                    values=values, name=name or "LookupTableInsertV2")


def lookup_table_remove(table_handle, keys, name=None):
    return apply_op("LookupTableRemoveV2", table_handle=table_handle, keys=keys,
                    name=name or "LookupTableRemoveV2")


def lookup_table_export(table_handle, key_dtype, value_dtype, name=None):
    return apply_op("LookupTableExportV2", table_handle=table_handle, Tkeys=key_dtype,
                    Tvalues=value_dtype, name=name or "LookupTableExportV2")


def lookup_table_find(table_handle, keys, default_value, name=None):
    return apply_op("LookupTableFindV2", table_handle=table_handle, keys=keys,
                    default_value=default_value, name=name or "LookupTableFindV2")


def lookup_table_import(table_handle, keys, values, name=None):
    return apply_op("LookupTableImportV2", table_handle=table_handle, keys=keys,
                    values=values, name=name or "LookupTableImportV2")


def lookup_table_size(table_handle, name=None):
    return apply_op("LookupTableSizeV2", table_handle=table_handle,
                    name=name or "LookupTableSizeV2")


def initialize_table(table_handle, keys, values, name=None):
    return apply_op("InitializeTableV2", table_handle=table_handle, keys=keys, values=values,
                    name=name or "InitializeTableV2")


def initialize_table_from_text_file(table_handle, filename, key_index, value_index,
                                    vocab_size=-1, delimiter="\t", offset=0, name=None):
    return apply_op("InitializeTableFromTextFileV2", table_handle=table_handle,
                    filename=filename, key_index=key_index, value_index=value_index,
                    vocab_size=vocab_size, delimiter=delimiter, offset=offset,
                    name=name or "InitializeTableFromTextFileV2")
