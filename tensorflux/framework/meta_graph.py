"""MetaGraphDef export and import: a graph plus its saver and collections, as one proto.

`export_meta_graph` writes the GraphDef, the SaverDef, the OpDefs the graph uses
(`meta_info_def.stripped_op_list`) and one CollectionDef per collection:

* collections with a registered proto function (the variable collections: VariableDef;
  `savers`: SaverDef; others may register theirs with `register_proto_function`) become
  `bytes_list`s of serialized protos;
* strings become `bytes_list`, ints `int64_list`, floats `float_list`;
* anything with a graph name (Operations, Tensors, Variables in other collections such as
  `global_step`) becomes a `node_list` of names.

`import_scoped_meta_graph` imports the GraphDef (under `import_scope`) and rebuilds the
collections: variables become `Variable` objects bound to the imported ops (one object per
variable, shared by every collection that holds it, `node_list` entries naming a
variable's handle included), node names become the imported Operations and Tensors. So a
training graph exported by one process can be imported by another, which finds its
`train_op`, global step and variables and goes on training.
"""

from __future__ import annotations

import logging
import os

from google.protobuf import any_pb2, text_format

from tensorflux.framework import graph as graph_lib
from tensorflux.framework import op_registry, versions
from tensorflux.framework.graph import GraphKeys
from tensorflux.framework.importer import import_graph_def
from tensorflux.protos import meta_graph_pb2, op_def_pb2, variable_pb2

__all__ = ["export_meta_graph", "import_scoped_meta_graph", "read_meta_graph_file",
           "register_proto_function"]

_log = logging.getLogger("tensorflux")

VARIABLE_COLLECTIONS = (GraphKeys.GLOBAL_VARIABLES, GraphKeys.LOCAL_VARIABLES,
                        GraphKeys.METRIC_VARIABLES, GraphKeys.MODEL_VARIABLES,
                        GraphKeys.TRAINABLE_VARIABLES, GraphKeys.MOVING_AVERAGE_VARIABLES,
                        GraphKeys.CONCATENATED_VARIABLES,
                        GraphKeys.TRAINABLE_RESOURCE_VARIABLES)

# collection key -> (proto class, to_proto(item, export_scope), from_proto(proto, scope))
_PROTO_FUNCTIONS: dict[str, tuple] = {}


def register_proto_function(collection_name: str, proto_type=None, to_proto=None,
                            from_proto=None) -> None:
    """Makes a collection's items serialize as `proto_type` messages (TF's
    `ops.register_proto_function`)."""
    _PROTO_FUNCTIONS[collection_name] = (proto_type, to_proto, from_proto)


def get_collection_proto_type(collection_name: str):
    """The proto class registered for a collection, or None (TF's `ops.` function)."""
    return _PROTO_FUNCTIONS.get(collection_name, (None, None, None))[0]


def get_to_proto_function(collection_name: str):
    """The to_proto function registered for a collection, or None."""
    return _PROTO_FUNCTIONS.get(collection_name, (None, None, None))[1]


def get_from_proto_function(collection_name: str):
    """The from_proto function registered for a collection, or None."""
    return _PROTO_FUNCTIONS.get(collection_name, (None, None, None))[2]


def _proto_function(key: str):
    """The registered (proto class, to_proto, from_proto) of a collection, or None.

    The libraries above framework register theirs when they are imported: variables.py for
    the variable collections, saver.py for `savers` (as TensorFlow's do)."""
    return _PROTO_FUNCTIONS.get(key)


# ---- export ------------------------------------------------------------------------------


def strip_name_scope(name: str, scope: str | None) -> str:
    """`name` without the leading `scope/` (a control input's `^` kept), as exported."""
    if not scope:
        return name
    scope = scope.rstrip("/") + "/"
    if name.startswith("^") and name[1:].startswith(scope):
        return "^" + name[1 + len(scope):]
    return name[len(scope):] if name.startswith(scope) else name


def _scoped_graph_def(graph, export_scope, clear_devices):
    gd = graph.as_graph_def(add_shapes=True)
    if export_scope:
        scope = export_scope.rstrip("/") + "/"
        keep = [n for n in gd.node if n.name.startswith(scope)]
        del gd.node[:]
        for n in keep:
            n.name = strip_name_scope(n.name, export_scope)
            inputs = [strip_name_scope(i, export_scope) for i in n.input]
            del n.input[:]
            n.input.extend(inputs)
            if "_class" in n.attr:
                values = [b"loc:@" + strip_name_scope(v.decode()[5:], export_scope).encode()
                          for v in n.attr["_class"].list.s]
                del n.attr["_class"].list.s[:]
                n.attr["_class"].list.s.extend(values)
            gd.node.append(n)
    if clear_devices:
        for n in gd.node:
            n.device = ""
    return gd


def _item_kind(item) -> str | None:
    if isinstance(item, any_pb2.Any):
        return "any_list"
    if isinstance(item, (str, bytes)):
        return "bytes_list"
    if isinstance(item, (bool, int)):
        return "int64_list"
    if isinstance(item, float):
        return "float_list"
    if isinstance(getattr(item, "name", None), str):
        return "node_list"
    return None


def add_collection_def(meta_graph_def, key: str, graph=None, export_scope=None) -> None:
    """Adds collection `key` of `graph` to `meta_graph_def` (skipped, with a warning, if
    its items cannot be serialized)."""
    graph = graph or graph_lib.get_default_graph()
    items = graph.get_collection(key)
    if not items:
        return
    proto_fn = _proto_function(key)
    col = meta_graph_pb2.CollectionDef()
    try:
        if proto_fn is not None:
            for item in items:
                proto = proto_fn[1](item, export_scope=export_scope)
                if proto is not None:
                    col.bytes_list.value.append(proto.SerializeToString())
        else:
            kind = _item_kind(items[0])
            if kind is None:
                raise TypeError(f"{type(items[0]).__name__} has no graph name")
            for item in items:
                if kind == "node_list":
                    if export_scope and not item.name.startswith(export_scope):
                        continue
                    col.node_list.value.append(strip_name_scope(item.name, export_scope))
                elif kind == "bytes_list":
                    col.bytes_list.value.append(item if isinstance(item, bytes)
                                                else item.encode("utf-8"))
                elif kind == "int64_list":
                    col.int64_list.value.append(int(item))
                elif kind == "any_list":
                    col.any_list.value.add().CopyFrom(item)
                else:
                    col.float_list.value.append(float(item))
    except Exception as e:  # noqa: BLE001 - TensorFlow skips such collections too
        _log.warning("Issue encountered when serializing: %s. %s", key, e)
        return
    if col.WhichOneof("kind") is not None:
        meta_graph_def.collection_def[key].CopyFrom(col)


def _stripped_op_list(graph_def):
    ops = op_def_pb2.OpList()
    for op_type in sorted({n.op for n in graph_def.node}):
        opdef = op_registry.lookup(op_type)
        if opdef is None:
            continue
        try:
            ops.op.append(opdef.to_proto())
        except Exception:  # noqa: BLE001 - an OpDef we cannot express is just left out
            continue
    return ops


def export_meta_graph(meta_info_def=None, graph_def=None, saver_def=None,
                      collection_list=None, graph=None, export_scope=None,
                      clear_devices=False, strip_default_attrs=False, **kwargs):
    """The MetaGraphDef of `graph` (default graph); `tf.train.export_meta_graph`
    (train/saver.py) builds it here and writes it to a file.

    Args:
      meta_info_def: a MetaInfoDef to start from.
      graph_def: the GraphDef to use instead of `graph`'s.
      saver_def: the SaverDef to record.
      collection_list: the collections to record (default: all).
      export_scope: keep only ops under this name scope, with the scope stripped.
      clear_devices: drop the device of every node.
      strip_default_attrs: accepted; attributes are kept.

    Returns:
      The MetaGraphDef.
    """
    del strip_default_attrs, kwargs
    graph = graph or graph_lib.get_default_graph()
    mgd = meta_graph_pb2.MetaGraphDef()
    if meta_info_def is not None:
        mgd.meta_info_def.CopyFrom(meta_info_def)
    if graph_def is None:
        graph_def = _scoped_graph_def(graph, export_scope, clear_devices)
    mgd.graph_def.CopyFrom(graph_def)
    if not mgd.meta_info_def.HasField("stripped_op_list"):
        mgd.meta_info_def.stripped_op_list.CopyFrom(_stripped_op_list(mgd.graph_def))
    if not mgd.meta_info_def.meta_graph_version:
        mgd.meta_info_def.meta_graph_version = f"tensorflux-{versions.__version__}"
    if saver_def is not None:
        mgd.saver_def.CopyFrom(saver_def)
    keys = collection_list if collection_list is not None else \
        graph.get_all_collection_keys()
    for key in sorted(keys):
        add_collection_def(mgd, key, graph, export_scope)
    return mgd


# ---- import ------------------------------------------------------------------------------


def read_meta_graph_file(filename) -> meta_graph_pb2.MetaGraphDef:
    """A MetaGraphDef read from `filename` (binary or text format).

    Raises:
      IOError: the file does not exist or parses as neither format.
    """
    filename = os.fspath(filename)
    mgd = meta_graph_pb2.MetaGraphDef()
    if not os.path.exists(filename):
        raise OSError(f"File {filename} does not exist.")
    with open(filename, "rb") as f:
        data = f.read()
    try:
        mgd.ParseFromString(data)
        return mgd
    except Exception:  # noqa: BLE001 - try the text format next
        pass
    try:
        text_format.Merge(data.decode("utf-8"), mgd)
    except (UnicodeDecodeError, text_format.ParseError) as e:
        raise OSError(f"Cannot parse file {filename}: {e}.") from None
    return mgd


def prepend_name_scope(name: str, scope: str | None) -> str:
    """`name` under `scope/`, as imported."""
    return f"{scope.rstrip('/')}/{name}" if scope else name


def import_scoped_meta_graph(meta_graph_or_file, clear_devices=False, graph=None,
                             import_scope=None, input_map=None,
                             restore_collections_predicate=lambda key: True,
                             **kwargs) -> dict:
    """Imports a MetaGraphDef's graph and collections into `graph` (default graph).

    Returns:
      The imported global variables, keyed by their names without the import scope.
    """
    del kwargs
    mgd = meta_graph_or_file if isinstance(meta_graph_or_file, meta_graph_pb2.MetaGraphDef) \
        else read_meta_graph_file(meta_graph_or_file)
    graph = graph or graph_lib.get_default_graph()

    with graph.as_default():
        gd = mgd.graph_def
        scope = graph.unique_name(import_scope or "", mark_as_used=False) \
            if import_scope else ""
        enters = [n for n in gd.node if n.op in ("Enter", "RefEnter")] if scope else []
        if clear_devices or enters:
            gd = type(gd).FromString(gd.SerializeToString())
        for n in gd.node:
            if clear_devices:
                n.device = ""
            if scope and n.op in ("Enter", "RefEnter") and "frame_name" in n.attr:
                # a loop's frame is named after its context, which the scope prefixes too
                # (as TensorFlow's meta-graph import does; import_graph_def does not)
                n.attr["frame_name"].s = prepend_name_scope(
                    n.attr["frame_name"].s.decode(), scope).encode()
        producer = mgd.meta_info_def.stripped_op_list \
            if mgd.meta_info_def.HasField("stripped_op_list") else None
        import_graph_def(gd, input_map=input_map, name=import_scope or "",
                         producer_op_list=producer)
        _import_collections(mgd, graph, scope, restore_collections_predicate)
    variables = graph.get_collection(GraphKeys.GLOBAL_VARIABLES, scope or None)
    out = {}
    for v in variables:
        out[strip_name_scope(v.name, scope)] = v
    return out


def _import_collections(mgd, graph, scope, predicate) -> None:
    keys = sorted(mgd.collection_def)
    if GraphKeys.TRAINABLE_VARIABLES in keys:  # TensorFlow's order
        keys.remove(GraphKeys.TRAINABLE_VARIABLES)
        keys.insert(0, GraphKeys.TRAINABLE_VARIABLES)
    variable_objects: dict[bytes, object] = {}
    by_handle: dict[str, object] = {}
    deferred = []
    for key in keys:
        if not predicate(key):
            continue
        col = mgd.collection_def[key]
        kind = col.WhichOneof("kind")
        if kind is None:
            _log.error("Cannot identify data type for collection %s. Skipping.", key)
            continue
        proto_fn = _proto_function(key)
        if proto_fn is not None and kind == "bytes_list":
            proto_type, _, from_proto = proto_fn
            for value in col.bytes_list.value:
                if key in VARIABLE_COLLECTIONS:
                    var = variable_objects.get(value)
                    if var is None:
                        var = from_proto(proto_type.FromString(value), import_scope=scope)
                        variable_objects[value] = var
                        by_handle[var.name] = var
                    graph.add_to_collection(key, var)
                else:
                    graph.add_to_collection(key, from_proto(proto_type.FromString(value),
                                                            import_scope=scope))
        elif kind == "node_list":
            deferred.append((key, col))
        elif kind == "int64_list":
            for value in col.int64_list.value:
                graph.add_to_collection(key, int(value))
        elif kind == "float_list":
            for value in col.float_list.value:
                graph.add_to_collection(key, float(value))
        elif kind == "any_list":
            for value in col.any_list.value:
                graph.add_to_collection(key, value)
        elif kind == "bytes_list":
            for value in col.bytes_list.value:
                text = value.decode("utf-8", "replace")
                graph.add_to_collection(key, prepend_name_scope(text, scope) if scope else value)
    for key, col in deferred:  # after the variables, so their names resolve to them
        for value in col.node_list.value:
            name = prepend_name_scope(value, scope)
            item = by_handle.get(name)
            if item is None:
                item = graph.as_graph_element(name)
                if getattr(item, "dtype", None) is not None and item.dtype.name == "resource" \
                        and item.op.type == "VarHandleOp":
                    item = _variable_for_handle(graph, item, by_handle)
            graph.add_to_collection(key, item)


def _variable_for_handle(graph, handle, by_handle):
    """A Variable object for an imported VarHandleOp that no variable collection listed."""
    proto_fn = _proto_function(GraphKeys.GLOBAL_VARIABLES)
    if proto_fn is None:
        return handle
    name = handle.op.name
    try:
        init = graph.get_operation_by_name(name + "/Assign")
        read = graph.get_tensor_by_name(name + "/Read/ReadVariableOp:0")
    except (KeyError, ValueError):
        return handle
    var = proto_fn[2](variable_pb2.VariableDef(
        variable_name=handle.name, initializer_name=init.name, snapshot_name=read.name,
        is_resource=True))
    by_handle[handle.name] = var
    return var
