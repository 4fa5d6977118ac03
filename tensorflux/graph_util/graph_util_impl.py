"""`tf.graph_util` (TF1): freezing variables into constants and pruning GraphDefs.

These functions work on GraphDef protos, never on a live Graph (except for reading variable
values through a Session), and return new protos; the input is left unchanged.

`convert_variables_to_constants` does what TensorFlow's does: the subgraph the outputs need
is extracted; every VariableV2 / VarHandleOp in it (subject to the allow and deny lists)
becomes a Const holding the variable's value in `sess`; a ReadVariableOp of a converted
resource variable becomes an Identity, a ResourceGather a GatherV2 with a Const axis, and
the nodes a handle passes through on its way to them (Identity, and the Switch / Enter of
a tf.cond or tf.while_loop) get the value's dtype instead of `resource`.

`remove_training_nodes` differs from TensorFlow's in one way: TensorFlow deletes a
CheckNumerics node together with its consumers' edges from it (leaving e.g. an AddV2 with one
input); here a CheckNumerics is spliced out like an Identity, its input wired to its
consumers, so the result still computes the same values.
"""

from __future__ import annotations

import copy
import logging

from tensorflux.framework import tensor_util
from tensorflux.framework.operation import Operation
from tensorflux.protos import attr_value_pb2, graph_pb2, node_def_pb2, types_pb2

__all__ = ["convert_variables_to_constants", "extract_sub_graph", "must_run_on_cpu",
           "remove_training_nodes", "tensor_shape_from_node_def_name"]

_log = logging.getLogger("tensorflux")

# Nodes that forward a resource handle from their input 0 (see convert_variables_to_constants).
_PASS_THROUGH = ("Identity", "Switch", "Enter", "RefSwitch", "RefEnter")

_VARIABLE_OPS = {"Assign", "AssignAdd", "AssignSub", "Queue", "ScatterAdd", "ScatterSub",
                 "ScatterUpdate", "TruncatedNormal", "Variable", "VariableV2"}


def node_name(name: str) -> str:
    """The node name of an input or tensor name ("^a", "a:1" -> "a")."""
    name = name[1:] if name.startswith("^") else name
    head, sep, tail = name.rpartition(":")
    return head if sep and tail.isdigit() else name


def _check_graph_def(graph_def) -> None:
    if not isinstance(graph_def, graph_pb2.GraphDef):
        raise TypeError("graph_def must be a graph_pb2.GraphDef proto, but got type "
                        f"{type(graph_def)}.")


def _check_names(dest_nodes, what: str = "dest_nodes") -> list[str]:
    if isinstance(dest_nodes, (str, bytes)):
        raise TypeError(f"{what} must be an iterable of strings, but got type "
                        f"{type(dest_nodes)}.")
    return list(dest_nodes)


def extract_sub_graph(graph_def, dest_nodes):
    """The part of `graph_def` that the nodes `dest_nodes` need (data and control inputs,
    transitively), in the original order, with the library and versions.

    Raises:
      TypeError: `graph_def` is not a GraphDef or `dest_nodes` is a string.
      AssertionError: a destination is not in the graph.
    """
    _check_graph_def(graph_def)
    dest_nodes = _check_names(dest_nodes)
    by_name = {n.name: n for n in graph_def.node}
    for d in dest_nodes:
        if node_name(d) not in by_name:
            raise AssertionError(f"{d} is not in graph")
    keep, stack = set(), [node_name(d) for d in dest_nodes]
    while stack:
        name = stack.pop()
        if name in keep:
            continue
        keep.add(name)
        stack.extend(node_name(i) for i in by_name[name].input if node_name(i) in by_name)
    out = graph_pb2.GraphDef()
    out.node.extend(copy.deepcopy(n) for n in graph_def.node if n.name in keep)
    out.library.CopyFrom(graph_def.library)
    out.versions.CopyFrom(graph_def.versions)
    return out


def must_run_on_cpu(node, pin_variables_on_cpu=False) -> bool:
    """Whether TensorFlow would keep `node` (an Operation or NodeDef) on the CPU: int32 and
    string Consts, int32 DynamicStitch and Cast from int32, and variable ops when
    `pin_variables_on_cpu`."""
    node_def = node.node_def if isinstance(node, Operation) else node
    if not isinstance(node_def, node_def_pb2.NodeDef):
        raise TypeError(f"node must be an Operation or a NodeDef, got {type(node)}")
    if pin_variables_on_cpu and node_def.op in _VARIABLE_OPS:
        return True
    cpu_types = (types_pb2.DT_STRING, types_pb2.DT_INT32)
    if node_def.op == "Const":
        return node_def.attr["dtype"].type in cpu_types
    if node_def.op in ("DynamicStitch", "ParallelDynamicStitch"):
        return node_def.attr["T"].type == types_pb2.DT_INT32
    if node_def.op == "Cast":
        return node_def.attr["SrcT"].type == types_pb2.DT_INT32
    return False


def tensor_shape_from_node_def_name(graph, input_name: str):
    """The static shape of tensor `input_name` of `graph` ("x" means "x:0")."""
    canonical = input_name if ":" in input_name else input_name + ":0"
    return graph.get_tensor_by_name(canonical).get_shape()


def create_const_node(name: str, dtype_attr, value, device: str = "") -> node_def_pb2.NodeDef:
    """A Const NodeDef named `name` holding `value` with the dtype of `dtype_attr`."""
    node = node_def_pb2.NodeDef(name=name, op="Const", device=device)
    node.attr["dtype"].CopyFrom(dtype_attr)
    node.attr["value"].CopyFrom(attr_value_pb2.AttrValue(
        tensor=tensor_util.make_tensor_proto(value, dtype=dtype_attr.type)))
    return node


def _read_tensor_of(graph, handle_name: str) -> str:
    """A ReadVariableOp output that reads resource variable `handle_name` in `graph`."""
    handle = graph.get_operation_by_name(handle_name).outputs[0]
    for consumer in handle.consumers():
        if consumer.type == "ReadVariableOp" and not consumer.control_inputs:
            return consumer.outputs[0].name
    return handle_name + "/Read/ReadVariableOp:0"


def _variables_to_freeze(graph_def, allow, deny):
    """(the variable node names to convert, {Identity between a VarHandleOp and its reader:
    (the read dtype attr, the variable)})."""
    by_name = {n.name: n for n in graph_def.node}
    names, identity_types = [], {}
    for node in graph_def.node:
        if node.op in ("Variable", "VariableV2", "VarHandleOp"):
            if (allow is not None and node.name not in allow) or \
                    (deny is not None and node.name in deny):
                continue
            names.append(node.name)
        elif node.op in ("ReadVariableOp", "ResourceGather"):
            chain, source = [], node_name(node.input[0])
            while by_name[source].op in _PASS_THROUGH:
                chain.append(source)
                source = node_name(by_name[source].input[0])
            if by_name[source].op != "VarHandleOp":
                raise ValueError("Cannot find the variable that is an input to the "
                                 f"{node.op} {node.name}.")
            identity_types.update((i, (node.attr["dtype"], source)) for i in chain)
    return names, identity_types


def _gather_from_resource_gather(node):
    if node.attr["batch_dims"].i != 0:
        raise ValueError("batch_dims != 0 is not supported by freeze_graph.")
    axis = create_const_node(node.name + "/axis", node.attr["Tindices"], 0)
    out = node_def_pb2.NodeDef(name=node.name, op="GatherV2", device=node.device,
                               input=[node.input[0], node.input[1], axis.name])
    out.attr["Tparams"].CopyFrom(node.attr["dtype"])
    out.attr["Tindices"].CopyFrom(node.attr["Tindices"])
    out.attr["Taxis"].CopyFrom(node.attr["Tindices"])
    if "_class" in node.attr:
        out.attr["_class"].CopyFrom(node.attr["_class"])
    return [axis, out]


def convert_variables_to_constants(sess, input_graph_def, output_node_names,
                                   variable_names_whitelist=None,
                                   variable_names_blacklist=None):
    """The subgraph of `input_graph_def` that computes `output_node_names`, with its
    variables replaced by Consts of their current values in `sess`.

    Args:
      sess: a Session whose graph holds the variables (initialized or restored).
      input_graph_def: the GraphDef to freeze (usually `sess.graph.as_graph_def()`).
      output_node_names: names of the nodes to keep (with what they need).
      variable_names_whitelist: only these variables (node names) are converted.
      variable_names_blacklist: these variables are not converted.

    Returns:
      A new GraphDef.

    Raises:
      AssertionError: an output is not in the graph.
      ValueError: a ReadVariableOp does not read a VarHandleOp.
      tf.errors.FailedPreconditionError: a variable is not initialized.
    """
    def read(nodes):
        fetches = [_read_tensor_of(sess.graph, n.name) if n.op == "VarHandleOp"
                   else n.name + ":0" for n in nodes]
        return sess.run(fetches) if fetches else []

    return freeze_variables(input_graph_def, output_node_names, read,
                            variable_names_whitelist, variable_names_blacklist)


def freeze_variables(input_graph_def, output_node_names, read_values, allow=None, deny=None):
    """convert_variables_to_constants with the values from `read_values(variable NodeDefs)`
    (a list of arrays in the same order): a Session, or a checkpoint read directly."""
    output_node_names = _check_names(output_node_names, "output_node_names")
    inference = extract_sub_graph(input_graph_def, output_node_names)
    allow = set(allow) if allow is not None else None
    deny = set(deny) if deny is not None else None
    names, identity_types = _variables_to_freeze(inference, allow, deny)
    by_name = {n.name: n for n in inference.node}
    values = dict(zip(names, read_values([by_name[n] for n in names]), strict=True))
    out = graph_pb2.GraphDef()
    for node in inference.node:
        if node.name in values:
            out.node.append(create_const_node(node.name, node.attr["dtype"], values[node.name],
                                              node.device))
        elif node.name in identity_types and identity_types[node.name][1] in values:
            new = copy.deepcopy(node)
            new.attr["T"].CopyFrom(identity_types[node.name][0])
            out.node.append(new)
        elif node.op == "ReadVariableOp" and _source_var(node, by_name) in values:
            new = node_def_pb2.NodeDef(name=node.name, op="Identity", device=node.device,
                                       input=list(node.input))
            new.attr["T"].CopyFrom(node.attr["dtype"])
            if "_class" in node.attr:
                new.attr["_class"].CopyFrom(node.attr["_class"])
            out.node.append(new)
        elif node.op == "ResourceGather" and _source_var(node, by_name) in values:
            out.node.extend(_gather_from_resource_gather(node))
        else:
            out.node.append(copy.deepcopy(node))
    out.library.CopyFrom(inference.library)
    out.versions.CopyFrom(inference.versions)
    _log.info("Froze %d variables.", len(values))
    return out


def _source_var(node, by_name) -> str:
    source = node_name(node.input[0])
    while by_name[source].op in _PASS_THROUGH:
        source = node_name(by_name[source].input[0])
    return source


def _colocated_names(node) -> list[str]:
    return [s.decode("utf-8", "replace")[len("loc:@"):] for s in node.attr["_class"].list.s
            if s.startswith(b"loc:@")] if "_class" in node.attr else []


def remove_training_nodes(input_graph, protected_nodes=None):
    """`input_graph` without the nodes only training needs: CheckNumerics and Identity
    nodes are spliced out (their input wired to their consumers), except protected ones,
    Identities with control inputs, used as control inputs, or named in a colocation.

    Returns:
      A new GraphDef (the library and versions are kept).
    """
    _check_graph_def(input_graph)
    protected = set(protected_nodes or [])
    control_inputs, with_control_input, colocated = set(), set(), set()
    for node in input_graph.node:
        for inp in node.input:
            if inp.startswith("^"):
                control_inputs.add(inp[1:])
                with_control_input.add(node.name)
        colocated.update(_colocated_names(node))
    splice = {}
    for node in input_graph.node:
        if node.name in protected or not node.input:
            continue
        if node.op == "CheckNumerics" or (
                node.op == "Identity" and node.name not in colocated
                and node.name not in with_control_input and node.name not in control_inputs):
            splice[node.name] = node.input[0]
    out = graph_pb2.GraphDef()
    for node in input_graph.node:
        if node.name in splice:
            continue
        new = copy.deepcopy(node)
        del new.input[:]
        for full in node.input:
            control = full.startswith("^")
            name = full[1:] if control else full
            while node_name(name) in splice:  # Identity and CheckNumerics: one output
                name = splice[node_name(name)]
            new.input.append("^" + node_name(name) if control else name)
        out.node.append(new)
    out.library.CopyFrom(input_graph.library)
    out.versions.CopyFrom(input_graph.versions)
    return out

