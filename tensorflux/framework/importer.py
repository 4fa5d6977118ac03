"""GraphDef -> Graph: `tf.import_graph_def`, with TensorFlow 1.x semantics.

An import runs in two phases, so that a bad GraphDef leaves the graph as it was:

1. Plan (no graph change). Every node is checked and resolved: its name (valid, unique in
   the GraphDef), its op type (registered), its attributes (converted from AttrValue with
   the kind the OpDef declares, defaults filled, `_output_shapes` dropped, unknown attrs
   stripped only when TensorFlow is known to have added them with the value they carry),
   its inputs (each names an existing output of a node or an `input_map` entry, with the
   dtype the op expects; control inputs last), its colocation (`_class` `loc:@x` names a
   node of the GraphDef). The nodes are then ordered topologically, stably (a GraphDef
   already in order keeps its order). The only cycles allowed are while loops: an edge
   NextIteration -> Merge is a back edge and is left out of the ordering.
2. Create. Ops are created in that order through `Graph._create_op_internal` under their
   final names, so shape functions run as usual. A Merge input on a back edge starts as a
   stand-in tensor of unknown shape (not part of the graph) and is rewired with
   `Operation._update_input` once its NextIteration exists. If anything still fails here
   (a shape function rejecting an input_map tensor, say), the ops created so far are
   removed again.

Names: nodes go under a new name scope ("import" by default, made unique in the current
scope, as `tf.name_scope` would); `name=""` imports the original names at the top level.
A name already taken (by an op, or as the scope of existing ops) gets the first free `_N`
suffix, and `_class` attributes follow the renaming.

What TensorFlow 2.21 does (compat.v1) and this module does too: imported ops keep their
NodeDef devices, merged under the enclosing `tf.device` scopes; an op colocated with
`loc:@x` takes the device of `x`; ops inside `control_dependencies` all get those control
inputs; an input_map'd source node is still imported (it is just not consumed); returned
tensors that were mapped are the mapped tensors.
"""

from __future__ import annotations

import contextlib
import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tensorflux.framework import attr_values, dtypes, gc_pause, op_def_library, op_registry
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Operation, Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.protos import graph_pb2

__all__ = ["import_graph_def"]

_OUTPUT_SHAPES = "_output_shapes"
_COLOCATION = "_class"
_LOC = "loc:@"

# AttrValue oneof field -> the attr kind it holds.
_FIELD_KIND = {"s": "string", "i": "int", "f": "float", "b": "bool", "type": "type",
               "shape": "shape", "tensor": "tensor", "func": "func"}
_KIND_FIELD = {v: k for k, v in _FIELD_KIND.items()}


@dataclass(slots=True)
class _Node:
    """One NodeDef, resolved against its OpDef during planning."""

    index: int
    node_def: Any
    name: str = ""  # final name in the graph
    opdef: op_registry.OpDef | None = None
    attrs: dict = field(default_factory=dict)
    inputs: list[tuple[str, int]] = field(default_factory=list)
    controls: list[str] = field(default_factory=list)
    input_dtypes: list[dtypes.DType] = field(default_factory=list)
    output_dtypes: list[dtypes.DType] = field(default_factory=list)
    back_edges: set[int] = field(default_factory=set)  # data input positions

    @property
    def src_name(self) -> str:
        return self.node_def.name


def import_graph_def(graph_def, input_map=None, return_elements=None, name=None,
                     op_dict=None, producer_op_list=None):
    """Imports the graph from `graph_def` into the current default graph.

    Args:
      graph_def: a `GraphDef` proto.
      input_map: a dict from names in `graph_def` to Tensors of the default graph that
        replace them: `"x:0"` (or just `"x"`) for an output, `"^x"` for control inputs on
        node `x` (then an Operation or Tensor). Values that are not Tensors are converted
        with `tf.convert_to_tensor` (this needs a non-empty `name`).
      return_elements: names in `graph_def` of ops (`"x"`) or tensors (`"x:0"`) to return.
      name: the prefix of the imported names (default "import"; "" for none).
      op_dict: deprecated in TensorFlow and ignored.
      producer_op_list: an `OpList` of the producer's OpDefs; an attribute our OpDef lacks
        is dropped when it has its default value there.

    Returns:
      None, or the Operations and Tensors named by `return_elements`, in order.

    Raises:
      TypeError: an argument of the wrong type.
      ValueError: `graph_def` is malformed or does not fit the registered ops, an
        input_map key names nothing in it, or a return element is not found.
    """
    del op_dict  # deprecated in TensorFlow, which ignores it too
    graph_def = _as_graph_def(graph_def)
    input_map = _check_input_map(input_map)
    if return_elements is not None:
        if not isinstance(return_elements, (str, bytes)):
            return_elements = list(return_elements)
        if isinstance(return_elements, (str, bytes)) or \
                not all(isinstance(x, str) for x in return_elements):
            raise TypeError("Argument `return_elements` must be a list of strings. Obtained "
                            f"{return_elements!r}.")
    with gc_pause.paused():  # a graph's worth of live objects: nothing to collect
        imported, mapped = _import(graph_def, input_map, return_elements or (), name,
                                   producer_op_list, exact_names=False)
    if return_elements is None:
        return None
    return [_return_element(r, imported, mapped) for r in return_elements]


def extend_graph(graph_def, input_map=None) -> None:
    """Adds the nodes of `graph_def` to the default graph under their own names.

    This is a session's graph extension (TensorFlow's ExtendSession): the nodes keep their
    names exactly, also when a name is the scope of existing ops (`emb` next to
    `emb/part_0`), where `import_graph_def(name="")` would rename them.

    Args:
      graph_def: the new nodes, as a `GraphDef`.
      input_map: as for `import_graph_def`: the existing tensors and ops the new nodes'
        inputs name.

    Raises:
      ValueError: a node's name is already an op's, or `graph_def` is malformed.
    """
    _import(_as_graph_def(graph_def), _check_input_map(input_map), (), "", None,
            exact_names=True)


def _import(graph_def, input_map, return_elements, name, producer_op_list,
            exact_names: bool):
    """Plans and creates the nodes; returns (imported nodes, converted input_map)."""
    graph = graph_lib.get_default_graph()
    graph._check_not_finalized()
    _check_versions(graph, graph_def.versions)
    if len(graph_def.library.gradient):
        raise ValueError("GraphDef has a function library with gradients; importing "
                         "gradient functions is not supported yet.")
    with graph._lock, graph.as_default(), \
            graph.name_scope("import" if name is None else name) as prefix:
        mapped = _convert_input_map(graph, name, input_map)
        nodes = _plan(graph, graph_def, prefix, mapped, producer_op_list, exact_names)
        order = _topological_order(nodes, mapped)
        _check_return_elements(nodes, return_elements, mapped)
        n_before, names_before = len(graph._ops), dict(graph._names_in_use)
        imported = _create(graph, nodes, order, mapped)
        if len(graph_def.library.function):
            # The traced functions (dataset map functions, ...) the ops' func attrs name.
            from tensorflux.framework import func_graph  # func_graph imports this module

            try:
                func_graph.link_functions(
                    imported.values(),
                    {f.signature.name: f for f in graph_def.library.function}, graph, {})
            except BaseException:
                _discard(graph, n_before, names_before)
                raise
        return imported, mapped


# ------------------------------------------------------------------------------------------
# Arguments.


def _as_graph_def(graph_def) -> graph_pb2.GraphDef:
    if isinstance(graph_def, graph_pb2.GraphDef):
        return graph_def
    descriptor = getattr(graph_def, "DESCRIPTOR", None)
    if descriptor is not None and descriptor.name == "GraphDef":  # another GraphDef class
        return graph_pb2.GraphDef.FromString(graph_def.SerializeToString())
    raise TypeError("Argument `graph_def` must be a GraphDef proto.")


def _normalize_key(key: str) -> str:
    if key.startswith("^"):
        return key
    src, idx = _parse_tensor_name(key)
    return f"{src}:{idx}"


def _check_input_map(input_map) -> dict:
    if input_map is None:
        return {}
    if not isinstance(input_map, Mapping):
        raise TypeError("Argument `input_map` must be a dictionary. Obtained "
                        f"{type(input_map).__name__}")
    bad = [k for k in input_map if not isinstance(k, str)]
    if bad:
        raise TypeError("All keys for argument `input_map` must be strings. Obtained keys: "
                        f"{bad}")
    return dict(input_map)


def _convert_input_map(graph: graph_lib.Graph, name, input_map: dict) -> dict:
    """Normalized keys -> Tensors (data) or Operations (`^x`), all of `graph`."""
    needs_conversion = any(not isinstance(v, (Tensor, Operation)) and not k.startswith("^")
                           for k, v in input_map.items())
    if needs_conversion and name == "":
        raise ValueError("tf.import_graph_def() requires a non-empty `name` if `input_map` "
                         "contains non-Tensor values. Try calling tf.convert_to_tensor() on "
                         "`input_map` values before calling tf.import_graph_def().")
    out: dict[str, Tensor | Operation] = {}
    scope = graph.name_scope("_inputs") if needs_conversion else contextlib.nullcontext()
    with scope:
        for key, value in input_map.items():
            if key.startswith("^"):
                value = value.op if isinstance(value, Tensor) else value
                if not isinstance(value, Operation):
                    raise TypeError(f"input_map value for control input '{key}' must be an "
                                    f"Operation or Tensor, not {type(value).__name__}.")
            elif isinstance(value, Operation):
                raise TypeError(f"input_map value for '{key}' must be a Tensor, not the "
                                f"Operation '{value.name}'.")
            elif not isinstance(value, Tensor):
                value = convert_to_tensor(value)
            if value.graph is not graph:
                raise ValueError(f"input_map value for '{key}' ({value.name}) must be from "
                                 "the graph being imported into.")
            out[_normalize_key(key)] = value
    return out


def _check_versions(graph: graph_lib.Graph, versions) -> None:
    ours = graph.graph_def_versions.producer
    if versions.min_consumer > ours:
        raise ValueError(f"GraphDef min consumer version {versions.min_consumer} above current "
                         f"version {ours} for tensorflux. Please upgrade tensorflux.")
    if ours in versions.bad_consumers:
        raise ValueError(f"GraphDef disallows consumer version {ours}. Please upgrade "
                         "tensorflux: this version is likely buggy.")


def _parse_tensor_name(s: str) -> tuple[str, int]:
    """`"x:1"` -> ("x", 1); `"x"` -> ("x", 0). A suffix that is not a number stays."""
    src, sep, idx = s.rpartition(":")
    if sep and idx.isdigit():
        return src, int(idx)
    return s, 0


# ------------------------------------------------------------------------------------------
# Phase 1: plan.


def _plan(graph, graph_def, prefix: str, mapped: dict, producer_op_list,
          exact_names: bool = False) -> dict[str, _Node]:
    nodes: dict[str, _Node] = {}
    for i, nd in enumerate(graph_def.node):
        if not graph_lib._VALID_OP_NAME.match(nd.name):
            raise ValueError(f"Node '{nd.name}': Node name contains invalid characters")
        if nd.name in nodes:
            raise ValueError(f"Node '{nd.name}' is not unique")
        nodes[nd.name] = _Node(i, nd)
    if exact_names:
        taken = [n for n in nodes if n in graph._ops_by_name]
        if taken:
            raise ValueError(f"Node '{taken[0]}' is already in the graph")
        for n in nodes.values():
            n.name = n.node_def.name
    else:
        for src, new in _assign_names(graph, prefix, list(nodes)).items():
            nodes[src].name = new
    producer_ops = {op.name: op for op in producer_op_list.op} if producer_op_list else {}
    for n in nodes.values():
        _resolve_signature(n, producer_ops)
    used: set[str] = set()  # input_map keys some input consumes
    for n in nodes.values():
        _resolve_inputs(n, nodes, mapped, used)
        _rewrite_colocation(n, nodes)
    _check_input_map_keys(nodes, mapped, used)
    return nodes


def _assign_names(graph, prefix: str, names: list[str]) -> dict[str, str]:
    """Final names: `prefix + name`, or with the first free `_N` suffix if that is taken by
    an existing op or is the scope of one, or is the name another imported node wants."""
    taken = set(graph._ops_by_name)
    for existing in list(taken):
        parts = existing.split("/")
        taken.update("/".join(parts[:k]) for k in range(1, len(parts)))
    wanted = {n: prefix + n for n in names}
    reserved = set(wanted.values())
    out = {}
    for n in names:
        full = wanted[n]
        if full in taken:
            k = 1
            while f"{full}_{k}" in taken or f"{full}_{k}" in reserved:
                k += 1
            full = f"{full}_{k}"
        taken.add(full)
        out[n] = full
    return out


def _resolve_signature(n: _Node, producer_ops: dict) -> None:
    """Op definition, attributes (converted, completed, validated) and argument dtypes."""
    nd = n.node_def
    opdef = op_registry.lookup(nd.op)
    if opdef is None:
        raise ValueError(f"Node '{nd.name}': Op type not registered '{nd.op}' in binary running "
                         "tensorflux. Make sure the Op and Kernel are registered in the binary "
                         "running in this process.")
    n.opdef = opdef
    attrs = {}
    for key, av in nd.attr.items():
        if key == _OUTPUT_SHAPES:
            continue  # recomputed by the shape functions
        adef = opdef.attrs.get(key)
        if adef is None and not key.startswith("_"):
            if _is_added_default(nd.op, key, av, producer_ops):
                continue
            raise ValueError(f"NodeDef mentions attr '{key}' not in Op<name={nd.op}>; "
                             f"NodeDef: {{{{node {n.name}}}}}. (Check whether your GraphDef-"
                             "interpreting binary is up to date with your GraphDef-generating "
                             "binary.)")
        kind = adef.kind if adef else "list(string)" if key == _COLOCATION else None
        attrs[key] = _attr_from_proto(av, kind, key, n)
    try:
        op_def_library.complete_attrs(opdef, attrs, n.name)
        _check_output_count(opdef, attrs, n)
        n.output_dtypes = op_def_library.output_dtypes(opdef, attrs)
    except (TypeError, ValueError, KeyError) as e:
        msg = str(e)
        if n.name not in msg:
            msg = f"{msg}; NodeDef: {{{{node {n.name}}}}}"
        raise ValueError(msg) from None
    n.attrs = attrs
    seen_control = False
    for s in nd.input:
        if s.startswith("^"):
            seen_control = True
            n.controls.append(s[1:])
        elif seen_control:
            raise ValueError(f"Node '{nd.name}': Control dependencies must come after regular "
                             "dependencies")
        else:
            n.inputs.append(_parse_tensor_name(s))
    # The count first: a number attr of 2**31 must not build a list of that many dtypes.
    count = _input_count(opdef, attrs)
    if count != len(n.inputs):
        expected = ", ".join(_dtype_str(d) for d in _input_dtypes(opdef, attrs)) \
            if count <= 100 else f"{count} inputs"
        raise ValueError(f"NodeDef expected inputs '{expected}' do not match {len(n.inputs)} "
                         f"inputs specified; Op<name={nd.op}>; NodeDef: {{{{node {n.name}}}}}")
    n.input_dtypes = _input_dtypes(opdef, attrs)


def _is_added_default(op_type: str, key: str, av, producer_ops: dict) -> bool:
    """Whether an attribute our OpDef lacks has its default value in the producer's OpDef
    (`producer_op_list`). Attributes TensorFlow added to ops in later releases (MatMul's
    `grad_a`, Conv2D's `explicit_paddings`, ...) are in our OpDefs themselves."""
    producer = producer_ops.get(op_type)
    if producer is not None:
        for a in producer.attr:
            if a.name == key and a.HasField("default_value"):
                return a.default_value == av
    return False


def _attr_from_proto(av, kind: str | None, key: str, n: _Node):
    if kind is not None:
        _check_attr_kind(av, kind, key, n)
    try:
        value = attr_values.from_proto(av, kind)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{e} for attr '{key}'; NodeDef: {{{{node {n.name}}}}}") from None
    if kind == "shape" and value is not None and value.ndims is None:
        value = None  # the internal form of an unknown shape
    elif isinstance(value, np.ndarray):
        value.flags.writeable = False  # the graph owns its constants
    return value


def _check_attr_kind(av, kind: str, key: str, n: _Node) -> None:
    """ValueError unless the AttrValue holds a value of attr kind `kind`."""
    which = av.WhichOneof("value")
    if kind.startswith("list("):
        if which in (None, "list"):
            inner = _KIND_FIELD.get(kind[5:-1])
            found = [f for f in _FIELD_KIND if f != inner and len(getattr(av.list, f))]
            if not found:
                return
            got = f"list({_FIELD_KIND[found[0]]})"
        else:
            got = _FIELD_KIND.get(which, which)
    elif which == _KIND_FIELD.get(kind):
        return
    elif which is None:
        raise ValueError(f"AttrValue missing value with expected type '{kind}' for attr "
                         f"'{key}'; NodeDef: {{{{node {n.name}}}}}")
    else:
        got = "list(...)" if which == "list" else _FIELD_KIND.get(which, which)
    raise ValueError(f"AttrValue had value with type '{got}' when '{kind}' expected for attr "
                     f"'{key}'; NodeDef: {{{{node {n.name}}}}}")


# The most outputs one imported node may have through a number attr (Split's num_split,
# Unpack's num): a few bytes of GraphDef must not make a list of 2**31 dtypes.
_MAX_OUTPUTS = 1 << 20


def _input_count(opdef: op_registry.OpDef, attrs: dict) -> int:
    return sum(len(attrs[a.type_list_attr]) if a.type_list_attr else
               attrs[a.number_attr] if a.number_attr else 1 for a in opdef.inputs)


def _check_output_count(opdef: op_registry.OpDef, attrs: dict, n: _Node) -> None:
    for a in opdef.outputs:
        if a.number_attr and attrs[a.number_attr] > _MAX_OUTPUTS:
            raise ValueError(f"Node '{n.src_name}': attr '{a.number_attr}' asks for "
                             f"{attrs[a.number_attr]} outputs, more than the {_MAX_OUTPUTS} "
                             "an imported node may have")


def _input_dtypes(opdef: op_registry.OpDef, attrs: dict) -> list[dtypes.DType]:
    out: list[dtypes.DType] = []
    for arg in opdef.inputs:
        if arg.type_list_attr:
            types = list(attrs[arg.type_list_attr])
        else:
            dt = arg.dtype if arg.dtype is not None else attrs[arg.type_attr]
            types = [dt] * (attrs[arg.number_attr] if arg.number_attr else 1)
        out.extend(t._as_ref if arg.is_ref else t for t in types)
    return out


def _dtype_str(dt: dtypes.DType) -> str:
    """TensorFlow's DataTypeString spelling ("float", "double", "half", "float_ref")."""
    base = {"float32": "float", "float64": "double", "float16": "half"}.get(
        dt.base_dtype.name, dt.base_dtype.name)
    return base + "_ref" if dt._is_ref_dtype else base


def _resolve_inputs(n: _Node, nodes: dict[str, _Node], mapped: dict, used: set) -> None:
    """Checks that every input names something, with the dtype the op expects. An input
    that input_map replaces need not exist in the GraphDef (TensorFlow allows that too)."""
    for i, (src, idx) in enumerate(n.inputs):
        key = f"{src}:{idx}"
        if key in mapped:
            used.add(key)
            actual, where = mapped[key].dtype, mapped[key].name
        elif src in nodes:
            producer = nodes[src]
            if idx >= len(producer.output_dtypes):
                raise ValueError(f"Node '{n.src_name}': Connecting to invalid output {idx} of "
                                 f"source node {src} which has {len(producer.output_dtypes)} "
                                 "outputs.")
            actual, where = producer.output_dtypes[idx], f"{producer.name}:{idx}"
            if n.opdef.flow_kind == "merge" and producer.opdef.flow_kind == "next_iteration":
                # A NextIteration -> Merge edge closes a while loop (the definitions' flow_kind).
                n.back_edges.add(i)
        else:
            raise ValueError(f"Node '{n.src_name}': Unknown input node '{n.node_def.input[i]}'")
        expected = n.input_dtypes[i]
        ok = actual == expected if expected._is_ref_dtype else \
            actual.base_dtype == expected.base_dtype
        if not ok:
            raise ValueError(f"Input {i} of node {n.name} was passed {_dtype_str(actual)} from "
                             f"{where} incompatible with expected {_dtype_str(expected)}.")
    for c in n.controls:
        if "^" + c in mapped:
            used.add("^" + c)
        elif c not in nodes:
            raise ValueError(f"Node '{n.src_name}': Unknown input node '^{c}'")


def _rewrite_colocation(n: _Node, nodes: dict[str, _Node]) -> None:
    groups = n.attrs.get(_COLOCATION)
    if not groups:
        return
    out = []
    for g in groups:
        if g.startswith(_LOC):
            target = nodes.get(g[len(_LOC):])
            if target is None:
                raise ValueError(f"Node '{n.src_name}' expects to be colocated with unknown "
                                 f"node '{g[len(_LOC):]}'")
            g = _LOC + target.name
        out.append(g)
    n.attrs[_COLOCATION] = out


def _check_input_map_keys(nodes: dict[str, _Node], mapped: dict, used: set) -> None:
    """ValueError for input_map keys that name nothing in the GraphDef and replace nothing."""
    missing = []
    for key in mapped:
        if key in used:
            continue
        if key.startswith("^"):
            found = key[1:] in nodes
        else:
            src, idx = _parse_tensor_name(key)
            found = src in nodes and idx < len(nodes[src].output_dtypes)
        if not found:
            missing.append(key)
    if missing:
        raise ValueError("Attempted to map inputs that were not found in graph_def: "
                         f"[{', '.join(missing)}]")


def _topological_order(nodes: dict[str, _Node], mapped: dict) -> list[_Node]:
    """Nodes in an order where each comes after its (unmapped, non-back-edge) inputs; among
    ready nodes the earliest in the GraphDef goes first."""
    pending: dict[str, int] = {}
    consumers: dict[str, list[_Node]] = {name: [] for name in nodes}
    for n in nodes.values():
        deps = {src for i, (src, idx) in enumerate(n.inputs)
                if f"{src}:{idx}" not in mapped and i not in n.back_edges}
        deps.update(c for c in n.controls if "^" + c not in mapped)
        pending[n.src_name] = len(deps)
        for d in deps:
            consumers[d].append(n)
    ready = [(n.index, n.src_name) for n in nodes.values() if pending[n.src_name] == 0]
    heapq.heapify(ready)
    order: list[_Node] = []
    while ready:
        _, name = heapq.heappop(ready)
        order.append(nodes[name])
        for c in consumers[name]:
            pending[c.src_name] -= 1
            if pending[c.src_name] == 0:
                heapq.heappush(ready, (c.index, c.src_name))
    if len(order) < len(nodes):
        stuck = [name for name, k in pending.items() if k > 0]
        shown = ", ".join(f"'{s}'" for s in stuck[:10]) + (", ..." if len(stuck) > 10 else "")
        raise ValueError(f"GraphDef is not a DAG: {len(stuck)} nodes in a cycle or fed by one "
                         f"({shown}); only NextIteration -> Merge edges may close a loop.")
    return order


def _check_return_elements(nodes: dict[str, _Node], names, mapped: dict) -> None:
    for r in names:
        if ":" in r:
            src, idx = _parse_tensor_name(r)
            if f"{src}:{idx}" in mapped:
                continue
            if src in nodes and r != src:
                n_out = len(nodes[src].output_dtypes)
                if idx < n_out:
                    continue
                raise ValueError(f"Invalid return output {idx} of node '{src}', which has "
                                 f"{n_out} output(s)")
        elif r in nodes:
            continue
        raise ValueError(f"Requested return_element '{r}' not found in graph_def.")


# ------------------------------------------------------------------------------------------
# Phase 2: create.


def _create(graph, nodes: dict[str, _Node], order: list[_Node], mapped: dict
            ) -> dict[str, Operation]:
    """Creates the planned ops; on any error removes them again and re-raises."""
    scope_controls = graph._control_inputs_for(())
    n_before = len(graph._ops)
    names_before = dict(graph._names_in_use)
    imported: dict[str, Operation] = {}
    try:
        for n in order:
            imported[n.src_name] = _create_one(graph, n, imported, mapped, scope_controls)
        for n in order:
            op = imported[n.src_name]
            for i in sorted(n.back_edges):
                src, idx = n.inputs[i]
                op._update_input(i, imported[src]._outputs[idx])
        _colocate_devices(graph, [imported[n.src_name] for n in order])
    except BaseException:
        _discard(graph, n_before, names_before)
        raise
    return imported


def _create_one(graph, n: _Node, imported: dict[str, Operation], mapped: dict,
                scope_controls: list[Operation]) -> Operation:
    inputs = []
    for i, (src, idx) in enumerate(n.inputs):
        key = f"{src}:{idx}"
        if key in mapped:
            inputs.append(mapped[key])
        elif i in n.back_edges:
            inputs.append(_back_edge_stub(graph, n.input_dtypes[i]))
        else:
            inputs.append(imported[src]._outputs[idx])
    controls = [mapped["^" + c] if "^" + c in mapped else imported[c] for c in n.controls]
    controls += [c for c in scope_controls if c not in controls]
    device = n.node_def.device
    with graph.device(device) if device else contextlib.nullcontext():
        return graph._create_op_internal(n.opdef.name, tuple(inputs), dict(n.attrs),
                                         n.name + "/", control_inputs=controls)


def _back_edge_stub(graph, dtype: dtypes.DType) -> Tensor:
    """A tensor of unknown shape standing in for a loop's back edge until it exists. Its
    op is never added to the graph."""
    stub = Operation(graph, "_import_back_edge", "_ImportBackEdge", None, (), [dtype.base_dtype],
                     {}, [], -1)
    return stub._outputs[0]


def _colocate_devices(graph, ops: list[Operation]) -> None:
    """An op colocated with `loc:@x` runs where x does: it takes x's device when x has one
    (as TensorFlow's importer; an op colocated with itself, e.g. a TF1 VariableV2 made from
    a callable initial value, keeps its NodeDef's device)."""
    for op in ops:
        names = [g[len(_LOC):] for g in op._attrs.get(_COLOCATION, ()) if g.startswith(_LOC)]
        for name in names:
            target = graph._ops_by_name.get(name)
            if target is not None and target._device:
                if op._device != target._device:
                    op._set_device(target._device)
                break


def _discard(graph, n_before: int, names_before: dict) -> None:
    """Removes the ops created since the graph had `n_before` (the caller holds its lock)."""
    for op in graph._ops[n_before:]:
        for t in op._inputs:
            if op in t._consumers:
                t._consumers.remove(op)
        graph._ops_by_name.pop(op._name, None)
    del graph._ops[n_before:]
    graph._names_in_use.clear()
    graph._names_in_use.update(names_before)


def _return_element(name: str, imported: dict[str, Operation], mapped: dict):
    if ":" in name:
        src, idx = _parse_tensor_name(name)
        key = f"{src}:{idx}"
        return mapped[key] if key in mapped else imported[src]._outputs[idx]
    return imported[name]
