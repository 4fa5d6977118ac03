"""tf.cond's and tf.while_loop's contexts in a MetaGraphDef: the `cond_context` and
`while_context` collections hold CondContextDef / WhileContextDef messages (protos/
control_flow.proto, TensorFlow's), registered here as those collections' proto functions.

Export writes an outermost context with the contexts built inside it (`nested_contexts`),
every tensor by name (the export scope stripped). Import rebuilds the context objects
around the imported ops without making any op: names resolve to the imported tensors, each
op of a context's own values gets the context back (`control_flow_util.get_context`), and
nested contexts are rebuilt inside their outer one, so tf.gradients can differentiate
through the imported conds and loops as through ones built in this process.
"""

from __future__ import annotations

from tensorflux.control_flow import control_flow_util as util
from tensorflux.control_flow.control_flow_context import CondContext, WhileContext
from tensorflux.framework import graph as graph_lib
from tensorflux.framework import meta_graph
from tensorflux.protos import control_flow_pb2


def _name(tensor, scope) -> str:
    return meta_graph.strip_name_scope(tensor.name, scope)


def _values_def(ctx, scope) -> control_flow_pb2.ValuesDef:
    out = control_flow_pb2.ValuesDef()
    out.values.extend(sorted(_name(v, scope) for v in ctx._values))
    for outside, inside in ctx._external_values.items():
        out.external_values[_name(outside, scope)] = _name(inside, scope)
    return out


def _context_def(ctx, scope) -> control_flow_pb2.ControlFlowContextDef:
    out = control_flow_pb2.ControlFlowContextDef()
    if isinstance(ctx, CondContext):
        out.cond_ctxt.CopyFrom(cond_to_proto(ctx, scope))
    else:
        out.while_ctxt.CopyFrom(while_to_proto(ctx, scope))
    return out


def _in_scope(ctx, scope) -> bool:
    return not scope or ctx.name.startswith(scope)


def cond_to_proto(ctx, export_scope=None):
    """A CondContextDef of `ctx` (None when it is outside `export_scope`)."""
    if not _in_scope(ctx, export_scope):
        return None
    out = control_flow_pb2.CondContextDef(
        context_name=meta_graph.strip_name_scope(ctx.name, export_scope),
        pred_name=_name(ctx.pred, export_scope), pivot_name=_name(ctx.pivot, export_scope),
        branch=ctx.branch)
    out.values_def.CopyFrom(_values_def(ctx, export_scope))
    for nested in ctx._nested_contexts:
        out.nested_contexts.append(_context_def(nested, export_scope))
    return out


def while_to_proto(ctx, export_scope=None):
    """A WhileContextDef of `ctx` (None when it is outside `export_scope`)."""
    if not _in_scope(ctx, export_scope):
        return None
    out = control_flow_pb2.WhileContextDef(
        context_name=meta_graph.strip_name_scope(ctx.name, export_scope),
        parallel_iterations=ctx.parallel_iterations, back_prop=ctx.back_prop,
        swap_memory=ctx.swap_memory)
    for field, tensor in (("pivot_name", ctx._pivot),
                          ("pivot_for_pred_name", ctx._pivot_for_pred),
                          ("pivot_for_body_name", ctx._pivot_for_body),
                          ("maximum_iterations_name", ctx.maximum_iterations)):
        if tensor is not None and hasattr(tensor, "name"):
            setattr(out, field, _name(tensor, export_scope))
    out.loop_exit_names.extend(_name(t, export_scope) for t in ctx.loop_exits)
    out.loop_enter_names.extend(_name(t, export_scope) for t in ctx.loop_enters)
    out.values_def.CopyFrom(_values_def(ctx, export_scope))
    for nested in ctx._nested_contexts:
        out.nested_contexts.append(_context_def(nested, export_scope))
    return out


def _element(graph, name: str, scope):
    return graph.as_graph_element(meta_graph.prepend_name_scope(name, scope))


def _restore_common(ctx, proto, scope, outer) -> None:
    """The ControlFlowContext state of a context rebuilt from `proto`, its ops given it
    back, its nested contexts rebuilt inside it."""
    graph = graph_lib.get_default_graph()
    ctx._graph = graph
    ctx._name = meta_graph.prepend_name_scope(proto.context_name, scope)
    ctx._outer_context = outer
    ctx._context_stack = []
    ctx._nested_contexts = []
    if outer is not None:
        outer._nested_contexts.append(ctx)
    values = proto.values_def
    ctx._values = {_element(graph, n, scope) for n in values.values}
    ctx._external_values = {_element(graph, k, scope): _element(graph, v, scope)
                            for k, v in values.external_values.items()}
    outside = set(ctx._external_values)
    for value in ctx._values - outside:
        util.set_context(value.op, ctx)
    for nested in proto.nested_contexts:
        if nested.WhichOneof("ctxt") == "cond_ctxt":
            cond_from_proto(nested.cond_ctxt, scope, outer=ctx)
        else:
            while_from_proto(nested.while_ctxt, scope, outer=ctx)


def cond_from_proto(proto, import_scope=None, outer=None) -> CondContext:
    """The CondContext a CondContextDef describes, around the imported ops."""
    graph = graph_lib.get_default_graph()
    ctx = CondContext.__new__(CondContext)
    ctx._pred = _element(graph, proto.pred_name, import_scope)
    ctx._pivot = _element(graph, proto.pivot_name, import_scope)
    ctx._branch = proto.branch
    _restore_common(ctx, proto, import_scope, outer)
    util.set_context(ctx._pivot.op, ctx)
    return ctx


def while_from_proto(proto, import_scope=None, outer=None) -> WhileContext:
    """The WhileContext a WhileContextDef describes, around the imported ops."""
    graph = graph_lib.get_default_graph()
    ctx = WhileContext.__new__(WhileContext)

    def tensor(name):
        return _element(graph, name, import_scope) if name else None

    ctx._maximum_iterations = tensor(proto.maximum_iterations_name)
    ctx._parallel_iterations = proto.parallel_iterations
    ctx._back_prop = proto.back_prop
    ctx._swap_memory = proto.swap_memory
    ctx._grad_state = None
    ctx._pivot = tensor(proto.pivot_name)
    ctx._pivot_for_pred = tensor(proto.pivot_for_pred_name)
    ctx._pivot_for_body = tensor(proto.pivot_for_body_name)
    ctx._loop_exits = [tensor(n) for n in proto.loop_exit_names]
    ctx._loop_enters = [tensor(n) for n in proto.loop_enter_names]
    _restore_common(ctx, proto, import_scope, outer)
    return ctx


meta_graph.register_proto_function(graph_lib.GraphKeys.COND_CONTEXT,
                                   control_flow_pb2.CondContextDef, cond_to_proto,
                                   cond_from_proto)
meta_graph.register_proto_function(graph_lib.GraphKeys.WHILE_CONTEXT,
                                   control_flow_pb2.WhileContextDef, while_to_proto,
                                   while_from_proto)
