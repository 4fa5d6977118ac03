"""Graph -> GraphDef: NodeDefs for Operations (and the encoder of the runtime's partition
graphs, which runtime/partition.py drives).

One encoder, `fill_node_def`, writes every NodeDef, whether it comes from a user's
Operation or from a runtime `step_graph.Node` of a partition:

* inputs as TensorFlow writes them: output 0 as plain `"name"`, output i > 0 as
  `"name:i"`, then the control inputs as `"^name"`, sorted by name (TensorFlow sorts them
  when it serializes a graph, so the same graph always gives the same bytes);
* attributes through `attr_values.to_proto`, with the kind the op's OpDef declares;
  private attributes (`_class`, `_gradient_op_type`, ...) have no declared kind and are
  encoded by the kind of their Python value. An internal `None` is an unknown shape for a
  shape attr, an empty list for a list attr, and an AttrValue with no value otherwise (so
  the key survives a round trip).

The reverse direction (GraphDef -> Graph) is `importer.import_graph_def`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from tensorflux.framework import attr_values, op_registry
from tensorflux.protos import attr_value_pb2, graph_pb2, node_def_pb2

if TYPE_CHECKING:
    from tensorflux.framework.graph import Graph
    from tensorflux.framework.operation import Operation

__all__ = ["node_def_of", "graph_to_graph_def", "fill_node_def"]

OUTPUT_SHAPES_ATTR = "_output_shapes"


def tensor_input_name(op_name: str, index: int) -> str:
    """The NodeDef input string of output `index` of `op_name` (`"x"` for output 0)."""
    return op_name if index == 0 else f"{op_name}:{index}"


def _attr_value(value: Any, kind: str | None) -> attr_value_pb2.AttrValue:
    if value is None:
        if kind == "shape":
            return attr_values.to_proto(None, "shape")
        if kind is not None and kind.startswith("list("):
            return attr_values.to_proto([], kind)
        return attr_value_pb2.AttrValue()
    if kind is None:  # a private attr: its kind follows from the Python value
        value = _plain(value)
    return attr_values.to_proto(value, kind)


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def fill_node_def(nd: node_def_pb2.NodeDef, name: str, op_type: str, device: str,
                  attrs: Mapping[str, Any], opdef: op_registry.OpDef | None,
                  inputs: Iterable[tuple[str, int]], control_inputs: Iterable[str]) -> None:
    """Writes one node into `nd` (the single encoder for Operations and runtime Nodes)."""
    nd.name = name
    nd.op = op_type
    nd.input.extend(tensor_input_name(src, idx) for src, idx in inputs)
    nd.input.extend("^" + c for c in sorted(control_inputs))
    if device:
        nd.device = device
    declared = opdef.attrs if opdef is not None else {}
    for key, value in attrs.items():
        adef = declared.get(key)
        try:
            nd.attr[key].CopyFrom(_attr_value(value, adef.kind if adef else None))
        except (TypeError, ValueError) as e:
            raise type(e)(f"Cannot serialize attr '{key}' of node '{name}' ({op_type}): "
                          f"{e}") from None
    _retag_quantized_const(nd, op_type, attrs)


def _retag_quantized_const(nd: node_def_pb2.NodeDef, op_type: str, attrs) -> None:
    """A quantized Const's value is held in its integer carrier (quint8 as uint8); its
    TensorProto must say the quantized type, as TensorFlow checks it against `dtype`."""
    dtype = attrs.get("dtype") if op_type == "Const" else None
    if dtype is not None and getattr(dtype, "is_quantized", False) and "value" in nd.attr:
        nd.attr["value"].tensor.dtype = dtype.as_datatype_enum


def _fill_from_op(nd: node_def_pb2.NodeDef, op: Operation) -> None:
    fill_node_def(nd, op._name, op._type, op._device, op._attrs, op._op_def,
                   ((t._op._name, t._value_index) for t in op._inputs),
                   (c._name for c in op._control_inputs))


def node_def_of(op: Operation) -> node_def_pb2.NodeDef:
    """`op` as a NodeDef (what `Operation.node_def` returns).

    Args:
      op: an Operation.

    Returns:
      A `node_def_pb2.NodeDef` with name, op, inputs, device and every attribute.
    """
    nd = node_def_pb2.NodeDef()
    _fill_from_op(nd, op)
    return nd


def graph_to_graph_def(graph: Graph, from_version: int | None = None,
                       add_shapes: bool = False) -> graph_pb2.GraphDef:
    """`graph` as a GraphDef (what `Graph.as_graph_def` returns).

    Args:
      graph: the Graph to serialize.
      from_version: if set, only the ops added since `graph.version` had this value.
      add_shapes: add to each op with outputs an `_output_shapes` attr listing the static
        shape of every output (unknown dimensions -1, unknown rank `unknown_rank: true`),
        as TensorFlow does.

    Returns:
      A `graph_pb2.GraphDef` with the nodes in creation order and the graph's versions.
    """
    gd = graph_pb2.GraphDef()
    gd.versions.CopyFrom(graph.graph_def_versions)
    with graph._lock:
        ops = list(graph._ops)
    for op in ops:
        if from_version is not None and op._id < from_version:
            continue
        nd = gd.node.add()
        _fill_from_op(nd, op)
        if add_shapes and op._outputs:
            shapes = nd.attr[OUTPUT_SHAPES_ATTR].list.shape
            del shapes[:]
            shapes.extend(t._shape.as_proto() for t in op._outputs)
    _add_function_library(gd, ops)
    return gd


def _add_function_library(gd: graph_pb2.GraphDef, ops: list) -> None:
    """The FunctionDefs of the traced functions (framework/func_graph.py) that `ops`'
    `func` attrs hold, and of those their bodies use, into `gd.library`."""
    add_function_library(gd, [op._attrs for op in ops])


def add_function_library(gd: graph_pb2.GraphDef, attr_maps) -> None:
    """The FunctionDefs of the traced functions that the attr dicts `attr_maps` (of ops, or
    of a step graph's nodes) hold, and of those their bodies use, into `gd.library` (a
    distributed step's task graph needs them as much as an exported graph)."""
    from tensorflux.framework import func_graph  # func_graph imports graph, which imports us

    seen = {f.signature.name for f in gd.library.function}
    stack = list(attr_maps)
    while stack:
        attrs = stack.pop()
        for value in attrs.values():
            body = getattr(value, "graph", None)
            if isinstance(body, func_graph.FuncGraph) and body.name not in seen:
                seen.add(body.name)
                gd.library.function.add().CopyFrom(func_graph.to_function_def(body))
                stack.extend(op._attrs for op in body.get_operations())
