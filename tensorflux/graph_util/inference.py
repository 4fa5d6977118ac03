"""Inference transforms on frozen GraphDefs: constant folding, batch-norm folding, and the
`optimize_for_inference` pipeline that chains them.

Batch normalization in inference mode is a per-channel affine map y = s * x + t. When x is
the output of a linear op with constant weights (Conv2D, DepthwiseConv2dNative, MatMul),
optionally followed by a constant bias, the affine map folds into that op:

    conv(x, W) [+ b]  then  s * . + t    ==    conv(x, W * s) + (b * s + t)

with s and t broadcast along the output-channel axis (the last one: NHWC, or MatMul's
columns). Three patterns are rewritten until none is left:

  1. FusedBatchNorm / V2 / V3 with is_training=false and NHWC data (only its output 0
     consumed): s = gamma / sqrt(var + eps), t = beta - mean * s;
  2. Mul of a linear op's output (optionally biased) by a constant per-channel vector or
     scalar: the unfused `tf.layers.batch_normalization` once its constant parts are
     folded (`batchnorm/mul_2`), or any such scaling;
  3. Add / AddV2 / BiasAdd of a constant per-channel vector to a biased linear output:
     the biases merge (`batchnorm/add_1`).

A rewrite only fires when the intermediate tensors have no other consumer, so no value the
graph still needs is lost. The folded op keeps the name of the node it replaces (the
batch-norm, Mul or Add node), so its consumers and the graph's outputs are unchanged.
"""

from __future__ import annotations

import copy

import numpy as np

from tensorflux.framework import dtypes, op_registry, tensor_util
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.importer import import_graph_def
from tensorflux.graph_util.graph_util_impl import (
    create_const_node,
    extract_sub_graph,
    node_name,
    remove_training_nodes,
)
from tensorflux.protos import attr_value_pb2, graph_pb2, types_pb2
from tensorflux.runtime.session import Session

__all__ = ["fold_batch_norms", "fold_constants", "freeze_placeholder_defaults",
           "optimize_for_inference", "prune_dead_branches"]

_LINEAR = ("Conv2D", "DepthwiseConv2dNative", "MatMul")
_BATCH_NORMS = ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
_NOT_FOLDABLE = {"Placeholder", "PlaceholderWithDefault", "PlaceholderV2", "Const"}
_FLOATS = (types_pb2.DT_FLOAT, types_pb2.DT_DOUBLE, types_pb2.DT_HALF)


def _attr(node, key: str, default):
    """Attr `key` of a NodeDef (without inserting it, as indexing the map would), or
    `default` (the op's default, for GraphDefs written with defaults stripped)."""
    if key not in node.attr:
        return default
    value = node.attr[key]
    return getattr(value, value.WhichOneof("value") or "s", default)


def _dtype_attr(value: np.ndarray) -> attr_value_pb2.AttrValue:
    dtype = dtypes.string if value.dtype == object else dtypes.as_dtype(value.dtype)
    return attr_value_pb2.AttrValue(type=dtype.as_datatype_enum)


def _output_index(name: str) -> int:
    """The output index an input string reads (-1 for a control input)."""
    if name.startswith("^"):
        return -1
    head, sep, tail = name.rpartition(":")
    return int(tail) if sep and tail.isdigit() else 0


# ---- constant folding ------------------------------------------------------------------------


def _foldable_nodes(graph_def) -> list[str]:
    """Nodes whose value follows from Consts alone (stateless, one output, no control
    inputs), in an order where inputs come first."""
    by_name = {n.name: n for n in graph_def.node}
    state: dict[str, bool] = {}

    def foldable(name: str) -> bool:
        if name in state:
            return state[name]
        state[name] = False  # cycles (loops) are not constant
        node = by_name[name]
        opdef = op_registry.lookup(node.op)
        if node.op == "Const":
            state[name] = True
            return True
        ok = (opdef is not None and not opdef.is_stateful and node.op not in _NOT_FOLDABLE
              and len(opdef.outputs) == 1 and node.input
              and not any(i.startswith("^") for i in node.input)
              and all(node_name(i) in by_name and foldable(node_name(i)) for i in node.input))
        state[name] = bool(ok)
        return state[name]

    order = []
    for node in graph_def.node:
        if foldable(node.name) and node.op != "Const":
            order.append(node.name)
    return order


def fold_constants(graph_def, output_node_names):
    """`graph_def` with every node computable from Consts alone replaced by a Const of its
    value, and nodes the outputs no longer need removed.

    Args:
      graph_def: a GraphDef (frozen: variables already Consts).
      output_node_names: the nodes to keep.

    Returns:
      A new GraphDef.
    """
    foldable = set(_foldable_nodes(graph_def))
    if not foldable:
        return extract_sub_graph(graph_def, output_node_names)
    # Only the foldable nodes that a non-foldable node or an output reads need a value.
    needed = {node_name(i) for n in graph_def.node if n.name not in foldable
              for i in n.input if node_name(i) in foldable}
    needed |= {node_name(o) for o in output_node_names} & foldable
    names = sorted(needed)
    with graph_lib.Graph().as_default() as g:
        import_graph_def(extract_sub_graph(graph_def, names), name="")
        with Session(graph=g) as sess:
            values = sess.run([n + ":0" for n in names])
    value_of = dict(zip(names, values, strict=True))
    out = graph_pb2.GraphDef()
    out.versions.CopyFrom(graph_def.versions)
    out.library.CopyFrom(graph_def.library)
    for node in graph_def.node:
        if node.name in needed:
            value = np.asarray(value_of[node.name])
            out.node.append(create_const_node(node.name, _dtype_attr(value), value,
                                              node.device))
        else:
            out.node.append(copy.deepcopy(node))
    return extract_sub_graph(out, output_node_names)


# ---- training switches -----------------------------------------------------------------------


def freeze_placeholder_defaults(graph_def, input_node_names):
    """`graph_def` with every PlaceholderWithDefault that is not an input replaced by an
    Identity of its default: at inference nobody feeds a `training` flag, so it is a
    constant, and the tf.cond branches it selects can be pruned (prune_dead_branches)."""
    inputs = {node_name(n) for n in input_node_names}
    out = copy.deepcopy(graph_def)
    for node in out.node:
        if node.op == "PlaceholderWithDefault" and node.name not in inputs:
            dtype = node.attr["dtype"]
            node.op = "Identity"
            node.attr["T"].CopyFrom(dtype)
            del node.attr["dtype"]
            if "shape" in node.attr:
                del node.attr["shape"]
    return out


def _dead_nodes(by_name, dead_outputs: set[tuple[str, int]]) -> set[str]:
    """The nodes a dead Switch output kills, as the executor would: every node with a dead
    data or control input, except a Merge, which dies only when all its data inputs do."""
    dead: set[str] = set()

    def is_dead(ref: str) -> bool:
        name = node_name(ref)
        return name in dead or (name, _output_index(ref)) in dead_outputs

    changed = True
    while changed:
        changed = False
        for node in by_name.values():
            if node.name in dead:
                continue
            data = [i for i in node.input if not i.startswith("^")]
            if node.op == "Merge":
                died = bool(data) and all(is_dead(i) for i in data)
            else:
                died = any(is_dead(i) for i in node.input)
            if died:
                dead.add(node.name)
                changed = True
    return dead


def prune_dead_branches(graph_def):
    """`graph_def` with every Switch whose predicate is a Const resolved: the taken
    output's consumers read the Switch's input, the other branch is removed, and a Merge
    left with one live input becomes an Identity of it.

    Returns:
      A new GraphDef.
    """
    g = _Graph(graph_def)
    taken: dict[str, int] = {}
    for node in g.nodes.values():
        if node.op in ("Switch", "RefSwitch"):
            pred = g.const(node.input[1])
            if pred is not None and pred.size == 1:
                taken[node.name] = 1 if bool(pred.reshape(-1)[0]) else 0
    if not taken:
        return copy.deepcopy(graph_def)
    dead = _dead_nodes(g.nodes, {(n, 1 - port) for n, port in taken.items()})
    out = graph_pb2.GraphDef()
    out.versions.CopyFrom(graph_def.versions)
    out.library.CopyFrom(graph_def.library)
    for node in g.nodes.values():
        if node.name in dead or node.name in taken:
            continue
        new = copy.deepcopy(node)
        del new.input[:]
        for ref in node.input:
            name = node_name(ref)
            if ref.startswith("^") and name in taken:
                ref = "^" + node_name(g.nodes[name].input[0])
            elif name in taken:
                ref = g.nodes[name].input[0]
            if node.op == "Merge" and not ref.startswith("^") and node_name(ref) in dead:
                continue
            new.input.append(ref)
        if node.op == "Merge" and sum(not i.startswith("^") for i in new.input) == 1 and \
                not any(_output_index(r) == 1 for r in g.consumers.get(node.name, [])):
            new.op = "Identity"
            del new.attr["N"]
        elif node.op == "Merge":
            new.attr["N"].i = sum(not i.startswith("^") for i in new.input)
        out.node.append(new)
    return out


# ---- batch-norm folding ----------------------------------------------------------------------


class _Graph:
    """A mutable view of a GraphDef: nodes by name, consumers, constant values."""

    def __init__(self, graph_def, protected=()):
        self.protected = set(protected)
        self.nodes = {n.name: copy.deepcopy(n) for n in graph_def.node}
        self.consumers: dict[str, list[str]] = {}
        for node in self.nodes.values():
            for i in node.input:
                self.consumers.setdefault(node_name(i), []).append(i)

    def const(self, name: str):
        """The value of tensor `name` if it is a Const (through Identity nodes), else None."""
        if name.startswith("^") or node_name(name) not in self.nodes:
            return None
        node = self.nodes[node_name(name)]
        while node.op == "Identity" and not any(i.startswith("^") for i in node.input):
            node = self.nodes.get(node_name(node.input[0]))
            if node is None:
                return None
        if node.op != "Const":
            return None
        return tensor_util.MakeNdarray(node.attr["value"].tensor)

    def only_consumer_is(self, name: str) -> bool:
        """Whether node `name` is read by exactly one input (of its output 0) and is not a
        graph output."""
        refs = self.consumers.get(name, [])
        return name not in self.protected and len(refs) == 1 and _output_index(refs[0]) == 0

    def add_const(self, name: str, value, like_attr) -> str:
        while name in self.nodes:
            name += "_"
        self.nodes[name] = create_const_node(name, like_attr, value)
        return name


def _linear_chain(g: _Graph, name: str):
    """(linear node, weights, bias-or-None, BiasAdd node-or-None) if `name` is a linear op
    with constant weights, optionally followed by a BiasAdd of a constant, each read only
    along this chain; else None."""
    if _output_index(name) != 0:
        return None
    node = g.nodes.get(node_name(name))
    bias = bias_node = None
    if node is not None and node.op in ("BiasAdd", "Add", "AddV2") and \
            g.only_consumer_is(node.name):
        bias = g.const(node.input[1])
        inner = g.nodes.get(node_name(node.input[0]))
        if bias is None or inner is None or inner.op not in _LINEAR or \
                _attr(node, "data_format", b"NHWC") != b"NHWC":
            return None
        bias_node, node = node, inner
    if node is None or node.op not in _LINEAR or not g.only_consumer_is(node.name):
        return None
    if node.op != "MatMul" and _attr(node, "data_format", b"NHWC") != b"NHWC":
        return None
    if node.op == "MatMul" and _attr(node, "transpose_a", False):
        return None
    weights = g.const(node.input[1])
    if weights is None:
        return None
    channels = _out_channels(node, weights)
    if bias is not None and bias.size not in (1, channels) or \
            bias is not None and bias.ndim > 1:
        return None
    return node, weights, bias, bias_node


def _out_channels(node, weights) -> int:
    if node.op == "MatMul":
        return weights.shape[0] if _attr(node, "transpose_b", False) else weights.shape[1]
    if node.op == "DepthwiseConv2dNative":
        return weights.shape[2] * weights.shape[3]
    return weights.shape[3]


def _scale_weights(node, weights, s: np.ndarray) -> np.ndarray:
    if node.op == "MatMul" and _attr(node, "transpose_b", False):
        return weights * s[:, None]
    if node.op == "DepthwiseConv2dNative":
        return weights * s.reshape(weights.shape[2], weights.shape[3])
    return weights * s


def _per_channel(value, channels: int, rank: int):
    """`value` as a [channels] vector if it broadcasts per channel against a rank-`rank`
    output, else None."""
    if value is None or value.ndim > rank or value.size not in (1, channels):
        return None
    if value.ndim and any(d != 1 for d in value.shape[:-1]):
        return None
    return np.broadcast_to(value.reshape(-1), (channels,)).astype(value.dtype)


def _emit(g: _Graph, chain, s, t, replaced) -> None:
    """Replaces node `replaced` by BiasAdd(linear(W * s), b * s + t), named `replaced.name`
    (the linear op keeps its name, with new weights)."""
    node, weights, bias, bias_node = chain
    channels = _out_channels(node, weights)
    dtype_attr = _dtype_attr(weights)
    s = np.broadcast_to(np.asarray(s, np.float64), (channels,))
    new_weights = _scale_weights(node, weights.astype(np.float64), s).astype(weights.dtype)
    b = np.zeros(channels) if bias is None else np.broadcast_to(bias.reshape(-1), (channels,))
    new_bias = (b * s + np.broadcast_to(t, (channels,))).astype(weights.dtype)
    linear = copy.deepcopy(node)  # keeps its name: its only consumer is being replaced
    linear.input[1] = g.add_const(node.name + "/folded_weights", new_weights, dtype_attr)
    if bias_node is not None:
        del g.nodes[bias_node.name]
    g.nodes[linear.name] = linear
    bias_add = copy.deepcopy(replaced)
    bias_add.op = "BiasAdd"
    del bias_add.input[:]
    bias_add.input.extend([linear.name, g.add_const(replaced.name + "/folded_bias", new_bias,
                                                    dtype_attr)])
    for key in list(bias_add.attr):
        del bias_add.attr[key]
    bias_add.attr["T"].CopyFrom(node.attr["T"])
    bias_add.attr["data_format"].s = b"NHWC"
    g.nodes[replaced.name] = bias_add


def _fold_batch_norm(g: _Graph, bn) -> bool:
    if _attr(bn, "is_training", True) or _attr(bn, "data_format", b"NHWC") != b"NHWC":
        return False
    if bn.name in g.protected or any(_output_index(r) != 0
                                     for r in g.consumers.get(bn.name, [])):
        return False  # the batch statistics outputs are read
    chain = _linear_chain(g, bn.input[0])
    params = [g.const(i) for i in bn.input[1:5]]
    if chain is None or any(p is None for p in params):
        return False
    gamma, beta, mean, var = (p.astype(np.float64).reshape(-1) for p in params)
    s = gamma / np.sqrt(var + _attr(bn, "epsilon", 1e-4))
    _emit(g, chain, s, beta - mean * s, bn)
    return True


def _fold_mul(g: _Graph, mul) -> bool:
    for data, other in ((0, 1), (1, 0)):
        chain = _linear_chain(g, mul.input[data])
        if chain is None:
            continue
        rank = 2 if chain[0].op == "MatMul" else 4
        s = _per_channel(g.const(mul.input[other]), _out_channels(chain[0], chain[1]), rank)
        if s is not None:
            _emit(g, chain, s, 0.0, mul)
            return True
    return False


def _fold_add(g: _Graph, add) -> bool:
    pairs = ((0, 1),) if add.op == "BiasAdd" else ((0, 1), (1, 0))
    for data, other in pairs:
        chain = _linear_chain(g, add.input[data])
        if chain is None or chain[2] is None:
            continue  # only merging into an existing bias
        rank = 2 if chain[0].op == "MatMul" else 4
        t = _per_channel(g.const(add.input[other]), _out_channels(chain[0], chain[1]), rank)
        if t is not None:
            _emit(g, chain, 1.0, t, add)
            return True
    return False


_RULES = {**{op: _fold_batch_norm for op in _BATCH_NORMS}, "Mul": _fold_mul,
          "Add": _fold_add, "AddV2": _fold_add, "BiasAdd": _fold_add}


def fold_batch_norms(graph_def, output_node_names=None):
    """`graph_def` with inference-mode batch normalizations (and other per-channel scales
    and shifts) folded into the weights and biases of the linear ops before them (see the
    module docstring). Nodes no longer needed are removed when `output_node_names` is given.

    Returns:
      A new GraphDef.
    """
    protected = [node_name(n) for n in output_node_names or []]
    g = _Graph(graph_def, protected)
    changed = True
    while changed:
        changed = False
        for name in list(g.nodes):
            node = g.nodes.get(name)
            rule = _RULES.get(node.op) if node is not None else None
            if rule is not None and _attr(node, "T", None) in _FLOATS and rule(g, node):
                g = _Graph(_as_graph_def(g, graph_def), protected)  # consumers changed
                changed = True
                break
    out = _as_graph_def(g, graph_def)
    return extract_sub_graph(out, output_node_names) if output_node_names else out


def _as_graph_def(g: _Graph, like) -> graph_pb2.GraphDef:
    out = graph_pb2.GraphDef()
    out.node.extend(g.nodes.values())
    out.versions.CopyFrom(like.versions)
    out.library.CopyFrom(like.library)
    return out


def optimize_for_inference(input_graph_def, input_node_names, output_node_names,
                           placeholder_type_enum=None, toco_compatible=False):
    """A frozen graph made ready for serving: only what the outputs need; placeholders with
    defaults that are not inputs (a `training` flag) fixed to their defaults and the
    tf.cond branches they rule out removed (dropout, batch statistics); training-only nodes
    (Identity, CheckNumerics) spliced out; constant subgraphs folded; batch norms folded
    into the preceding convolutions and matrix products.

    Args:
      input_graph_def: a frozen GraphDef (convert_variables_to_constants).
      input_node_names: the input nodes (kept as they are).
      output_node_names: the output nodes.
      placeholder_type_enum: accepted for TensorFlow's signature; inputs are not retyped.
      toco_compatible: accepted for TensorFlow's signature; no effect here.

    Returns:
      A new GraphDef that computes the same outputs (within float rounding).
    """
    del placeholder_type_enum, toco_compatible
    keep = list(output_node_names) + list(input_node_names)
    graph_def = extract_sub_graph(input_graph_def, output_node_names)
    graph_def = freeze_placeholder_defaults(graph_def, input_node_names)
    graph_def = fold_constants(graph_def, output_node_names)
    graph_def = prune_dead_branches(graph_def)
    graph_def = remove_training_nodes(graph_def, protected_nodes=keep)
    graph_def = fold_constants(graph_def, output_node_names)
    return fold_batch_norms(graph_def, output_node_names)
