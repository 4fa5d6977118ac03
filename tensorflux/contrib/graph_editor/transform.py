"""`tf.contrib.graph_editor.transform`: copying a subgraph (into the same graph or another)
through a Transformer whose handlers decide what each op, external input and control
input becomes; `copy`, `copy_with_input_replacements` and `graph_replace` are built on it.

A transform copies the view's ops in creation order (Operation ids), each reading the
copies of its inputs: an input from inside the view reads the copy, one from outside is
given by `transform_external_input_handler` (a placeholder by default; the original
tensor for copy_with_input_replacements in the same graph), an input from an op of the
view not copied yet (a loop's back edge) reads a temporary placeholder that is replaced
once its producer is copied. Control inputs are then added through
`transform_control_input_handler`. Ops inside while loops are copied without their loop
context, so such copies do not run as loops."""

from __future__ import annotations

from tensorflux.contrib.graph_editor import reroute, select, subgraph, util
from tensorflux.framework import attr_values
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Operation, Tensor

__all__ = [
    "Transformer", "TransformerInfo", "assign_renamed_collections_handler", "copy",
    "copy_op_handler", "copy_with_input_replacements", "graph_replace",
    "keep_t_if_possible_handler", "replace_t_with_placeholder_handler",
    "transform_op_if_inside_handler",
]


def replace_t_with_placeholder_handler(info, t):
    """An external input becomes a placeholder of its dtype and shape in the destination
    graph, under the destination scope."""
    with info.graph_.as_default():
        return util.make_placeholder_from_tensor(t, scope=info.scope_)


def keep_t_if_possible_handler(info, t):
    """An external input stays itself within one graph, else becomes a placeholder."""
    if info.graph is info.graph_:
        return t
    return replace_t_with_placeholder_handler(info, t)


def assign_renamed_collections_handler(info, elem, elem_):
    """Puts the copy `elem_` in the collections of `elem`: TF's own collections (tf.GraphKeys)
    under their name, the others under their name moved to the destination scope."""
    known = util.get_predefined_collection_names()
    for name in info.collections_of.get(id(elem), ()):
        info.graph_.add_to_collection(name if name in known else info.new_name(name), elem_)


def transform_op_if_inside_handler(info, op, keep_if_possible=True):
    """An op of the view becomes its copy; another one stays itself within one graph
    (with `keep_if_possible`), else becomes None (dropped)."""
    if op in info.sgv_ops_set:
        return info.transformed_ops[op]
    if keep_if_possible and info.graph is info.graph_:
        return op
    return None


def _copied_attrs(op):
    return {k: list(v) if isinstance(v, list) else v for k, v in op.attrs.items()}


def copy_op_handler(info, op, new_inputs, copy_shape=False, nodedef_fn=None):
    """A copy of `op` in the destination graph reading `new_inputs`: same type, attributes
    and device, its name moved from the source to the destination scope (made unique).

    Args:
      nodedef_fn: a function given the copy's NodeDef before it is made, returning the
        NodeDef to make (its name, device and attrs are used).

    Returns:
      (the copy, its outputs).

    Raises:
      TypeError: `new_inputs` is not an iterable of tensors.
    """
    if isinstance(new_inputs, bool):
        raise TypeError("the `new_inputs` argument must be an iterable.")
    name_ = info.graph_.unique_name(info.new_name(op.name))
    attrs, device = _copied_attrs(op), op.device
    if nodedef_fn is not None:
        node_def = op.node_def
        node_def.name = name_
        node_def = nodedef_fn(node_def)
        name_, device = node_def.name, node_def.device
        kinds = {k: (op._op_def.attrs[k].kind if op._op_def is not None
                     and k in op._op_def.attrs else None) for k in node_def.attr}
        attrs = {k: attr_values.from_proto(v, kinds[k]) for k, v in node_def.attr.items()}
    op_ = info.graph_._create_op_internal(
        op.type, tuple(new_inputs), attrs, name_ + "/",
        output_dtypes=[t.dtype for t in op.outputs], control_inputs=[])
    op_._device = device
    if "_class" in op.attrs:
        op_._attrs["_class"] = list(op.attrs["_class"])
    else:
        op_._attrs.pop("_class", None)
    if copy_shape:
        for t, t_ in zip(op.outputs, op_.outputs, strict=True):
            t_.set_shape(t.get_shape())
    if op._original_op is not None:
        op_._original_op = op._original_op
    return op_, op_.outputs


class _TmpInfo:
    """What one transform call works with: source and destination graphs and scopes, the
    ops and tensors transformed so far, the temporary placeholders of back edges."""

    def __init__(self, sgv, dst_graph, dst_scope, src_scope):
        self.sgv = sgv
        self.sgv_inputs_set = frozenset(sgv.inputs)
        self.sgv_ops_set = frozenset(sgv.ops)
        self.graph = sgv.graph
        self.scope = src_scope
        self.graph_ = dst_graph
        self.scope_ = dst_scope
        self.transformed_ops = {}
        self.transformed_ts = {}
        self.tmp_cyclic_ts = []
        self.collections_of = {}
        if self.graph is not None:
            for name in self.graph.get_all_collection_keys():
                for elem in self.graph.get_collection(name):
                    names = self.collections_of.setdefault(id(elem), [])
                    if name not in names:
                        names.append(name)

    def new_name(self, name):
        """`name` moved from the source scope to the destination scope.

        Raises:
          ValueError: `name` is not under the source scope.
        """
        if not name.startswith(self.scope):
            raise ValueError(f"{name} does not belong to source scope: {self.scope}.")
        return self.scope_ + name[len(self.scope):]


class TransformerInfo:
    """What a transform produced: `transformed(original)` and `original(transformed)` map
    ops and tensors (or names, or trees of them) between the source and the copy."""

    def __init__(self, info):
        self._graph = info.graph
        self._scope = info.scope
        self._graph_ = info.graph_
        self._scope_ = info.scope_
        self._transformed_ops = info.transformed_ops
        self._transformed_ts = info.transformed_ts

    def _maps(self, top):
        if isinstance(top, Operation):
            return [self._transformed_ops]
        if isinstance(top, Tensor):
            return [self._transformed_ts]
        if isinstance(top, str):
            return [self._transformed_ts if ":" in top else self._transformed_ops]
        raise TypeError(f"Expected a tf.Tensor or a tf.Operation, got a {type(top)}")

    def _transformed_elem(self, original_top, missing_fn=None):
        (mapping,) = self._maps(original_top)
        if isinstance(original_top, str):
            for original, transformed in mapping.items():
                if original.name == original_top:
                    return transformed
        elif original_top in mapping:
            return mapping[original_top]
        return None if missing_fn is None else missing_fn(original_top)

    def _original_elem(self, transformed_top, missing_fn=None):
        (mapping,) = self._maps(transformed_top)
        for original, transformed in mapping.items():
            if transformed is transformed_top or (
                    isinstance(transformed_top, str) and transformed.name == transformed_top):
                return original
        return None if missing_fn is None else missing_fn(transformed_top)

    def transformed(self, original, missing_fn=None):
        """The copies of `original` (an op, a tensor, a name or a tree of them); None, or
        `missing_fn(elem)`, for what was not transformed."""
        return util.transform_tree(
            original, lambda top: self._transformed_elem(top, missing_fn))

    def original(self, transformed, missing_fn=None):
        """The originals of `transformed` (the inverse of `transformed`)."""
        return util.transform_tree(
            transformed, lambda top: self._original_elem(top, missing_fn))

    def __str__(self):
        lines = ["Transform result info:"]
        if self._graph_ is self._graph:
            lines.append("  Within graph")
        lines.append(f"  Source scope: {self._scope!r}; destination scope: {self._scope_!r}")
        for op, op_ in self._transformed_ops.items():
            lines.append(f"  {op.name} -> {op_.name}")
        return "\n".join(lines)


class Transformer:
    """Transforms a subgraph into another one; by default a copy whose external inputs are
    placeholders. The handlers can be replaced:

    - transform_op_handler(info, op, new_inputs) -> (op_, outputs_): copy_op_handler;
    - transform_external_input_handler(info, t) -> t_: replace_t_with_placeholder_handler;
    - transform_external_hidden_input_handler(info, t) -> t_: keep_t_if_possible_handler;
    - transform_control_input_handler(info, op) -> op_ or None:
      transform_op_if_inside_handler;
    - transform_original_op_handler(info, op) -> op_ or None: the same;
    - assign_collections_handler(info, elem, elem_): assign_renamed_collections_handler.
    """

    def __init__(self):
        self.transform_control_input_handler = transform_op_if_inside_handler
        self.transform_external_input_handler = replace_t_with_placeholder_handler
        self.transform_external_hidden_input_handler = keep_t_if_possible_handler
        self.transform_original_op_handler = transform_op_if_inside_handler
        self.transform_op_handler = copy_op_handler
        self.assign_collections_handler = assign_renamed_collections_handler

    def __call__(self, sgv, dst_graph, dst_scope, src_scope="", reuse_dst_scope=False):
        """Transforms `sgv` into `dst_graph` under `dst_scope` (made unique unless
        `reuse_dst_scope`); op names lose `src_scope` first.

        Returns:
          (the view of the transformed ops, its inputs and outputs in the original's
          order; a TransformerInfo).

        Raises:
          TypeError: `dst_graph` is not a tf.Graph.
          ValueError: an op name is not under `src_scope`, or a handler transformed an op
            in place.
        """
        sgv = subgraph.make_view(sgv)
        if not isinstance(dst_graph, graph_lib.Graph):
            raise TypeError(f"Expected a tf.Graph, got: {type(dst_graph)}")
        src_scope = util.scope_finalize(src_scope)
        dst_scope = util.scope_finalize(dst_scope)
        if dst_scope and not reuse_dst_scope:
            dst_scope = util.scope_finalize(dst_graph.unique_name(dst_scope[:-1]))
        info = _TmpInfo(sgv, dst_graph, dst_scope, src_scope)
        self._copy_ops(info)
        self._finalize_cycles(info)
        self._connect_control_inputs(info)
        return self._transform_sgv(info, sgv), TransformerInfo(info)

    def _copy_ops(self, info):
        for op in sorted(info.sgv.ops, key=lambda o: o._id):
            new_inputs = [self._transformed_t(info, t, op) for t in op.inputs]
            op_, outputs_ = self.transform_op_handler(info, op, new_inputs)
            if op is op_:
                raise ValueError("In-place transformation not allowed.")
            info.transformed_ops[op] = op_
            self.assign_collections_handler(info, op, op_)
            for t, t_ in zip(op.outputs, outputs_, strict=True):
                info.transformed_ts[t] = t_
                self.assign_collections_handler(info, t, t_)

    def _finalize_cycles(self, info):
        for t, tmp_t_, consumer in info.tmp_cyclic_ts:
            if t not in info.transformed_ts:
                raise ValueError(f"The tensor {t.name} should be transformed by now.")
            consumer_ = info.transformed_ops[consumer]
            index = list(consumer_.inputs).index(tmp_t_)
            consumer_._update_input(index, info.transformed_ts[t], update_dtype=False)

    def _connect_control_inputs(self, info):
        for op in info.sgv.ops:
            op_ = info.transformed_ops[op]
            if op._original_op is not None:
                original = self.transform_original_op_handler(info, op._original_op)
                if not isinstance(original, list):
                    op_._original_op = original
            controls_ = [self.transform_control_input_handler(info, ci)
                         for ci in op.control_inputs]
            controls_ = [ci for ci in controls_ if ci is not None and ci not in op_.control_inputs]
            if controls_:
                reroute.add_control_inputs(op_, controls_)

    def _transform_sgv(self, info, sgv):
        sgv_ = subgraph.SubGraphView(list(info.transformed_ops.values()))
        inputs_, outputs_ = set(sgv_.inputs), set(sgv_.outputs)
        input_map = [sgv_.input_index(info.transformed_ts[t]) for t in sgv.inputs
                     if t in info.transformed_ts and info.transformed_ts[t] in inputs_]
        output_map = [sgv_.output_index(info.transformed_ts[t]) for t in sgv.outputs
                      if t in info.transformed_ts and info.transformed_ts[t] in outputs_]
        return sgv_.remap(input_map, output_map)

    def _transformed_t(self, info, t, consumer_op):
        if t in info.sgv_inputs_set:
            if t not in info.transformed_ts:
                info.transformed_ts[t] = self.transform_external_input_handler(info, t)
            return info.transformed_ts[t]
        if t in info.transformed_ts:
            return info.transformed_ts[t]
        if t.op in info.sgv_ops_set:  # a back edge: its producer is copied later
            with info.graph_.as_default():
                tmp = util.make_placeholder_from_tensor(t, scope=info.scope_,
                                                        prefix="geph_tmp")
            info.tmp_cyclic_ts.append((t, tmp, consumer_op))
            return tmp
        t_ = self.transform_external_hidden_input_handler(info, t)
        info.transformed_ts[t] = t_
        return t_


def _view_and_graph(sgv, dst_graph):
    """`sgv` as a SubGraphView and the graph a copy of it goes to (its own by default).

    Raises:
      TypeError: `dst_graph` is not a tf.Graph.
    """
    sgv = subgraph.make_view(sgv)
    if dst_graph is None:
        dst_graph = sgv.graph
    if not isinstance(dst_graph, graph_lib.Graph):
        raise TypeError(f"Expected a tf.Graph, got: {type(dst_graph)}")
    return sgv, dst_graph


def copy(sgv, dst_graph=None, dst_scope="", src_scope="", reuse_dst_scope=False):
    """Copies the subgraph `sgv` (anything make_view takes) into `dst_graph` (default:
    its own) under `dst_scope`; its external inputs become placeholders.

    Returns:
      (the copy's SubGraphView, a TransformerInfo).

    Raises:
      TypeError: `dst_graph` is not a tf.Graph.
    """
    sgv, dst_graph = _view_and_graph(sgv, dst_graph)
    return Transformer()(sgv, dst_graph, dst_scope, src_scope,
                         reuse_dst_scope=reuse_dst_scope)


def copy_with_input_replacements(sgv, replacement_ts, dst_graph=None, dst_scope="",
                                 src_scope="", reuse_dst_scope=False):
    """Copies `sgv` as `copy` does, but an external input in `replacement_ts` (a dict
    tensor -> tensor) reads its replacement, and the others stay themselves within one
    graph.

    Returns:
      (the copy's SubGraphView, a TransformerInfo).

    Raises:
      TypeError: `dst_graph` is not a tf.Graph.
    """
    sgv, dst_graph = _view_and_graph(sgv, dst_graph)
    copier = Transformer()

    def replace_or_keep(info, t):
        if t in replacement_ts:
            return replacement_ts[t]
        return keep_t_if_possible_handler(info, t)

    copier.transform_external_input_handler = replace_or_keep
    return copier(sgv, dst_graph, dst_scope, src_scope, reuse_dst_scope=reuse_dst_scope)


def graph_replace(target_ts, replacement_ts, dst_scope="", src_scope="",
                  reuse_dst_scope=False):
    """The tensors `target_ts` (a tree) recomputed with the tensors of `replacement_ts`
    (dict original -> replacement) in place of the originals: the ops between them are
    copied (control edges followed); targets that do not depend on the replaced tensors
    come back unchanged.

    Raises:
      ValueError: no target depends on the replaced tensors.
    """
    flat_targets = util.flatten_tree(target_ts)
    graph = util.get_unique_graph(flat_targets, check_types=(Tensor,))
    control_ios = util.ControlOutputs(graph)
    ops = select.get_walks_intersection_ops(list(replacement_ts), flat_targets,
                                            control_ios=control_ios)
    if not ops:
        raise ValueError("Targets and replacements are not connected!")
    _, info = copy_with_input_replacements(ops, replacement_ts, None, dst_scope, src_scope,
                                           reuse_dst_scope)
    return info.transformed(target_ts, missing_fn=lambda original_t: original_t)
