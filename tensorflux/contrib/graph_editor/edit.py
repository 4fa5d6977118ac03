"""`tf.contrib.graph_editor.edit`: detaching a subgraph from its surroundings (its inputs
and outputs replaced by placeholders), connecting two subgraphs and bypassing one."""

from __future__ import annotations

from tensorflux.contrib.graph_editor import reroute, select, subgraph, util
from tensorflux.ops import array_ops

__all__ = ["bypass", "connect", "detach", "detach_control_inputs", "detach_control_outputs",
           "detach_inputs", "detach_outputs"]


def detach_control_inputs(sgv):
    """Removes the control inputs of the view's ops that come from outside it."""
    sgv = subgraph.make_view(sgv)
    for op in sgv.ops:
        outside = [cop for cop in op.control_inputs if cop not in sgv.ops]
        if outside:
            reroute.remove_control_inputs(op, outside)


def detach_control_outputs(sgv, control_outputs):
    """Removes the control edges from the view's ops to ops outside it.

    Raises:
      TypeError: `control_outputs` is not a util.ControlOutputs.
    """
    if not isinstance(control_outputs, util.ControlOutputs):
        raise TypeError(f"Expected a util.ControlOutputs, got: {type(control_outputs)}")
    control_outputs.update()
    sgv = subgraph.make_view(sgv)
    for op in sgv.ops:
        for cop in control_outputs.get(op):
            if cop not in sgv.ops:
                reroute.remove_control_inputs(cop, op)


def detach_inputs(sgv, control_inputs=False):
    """Makes the view's ops read new placeholders instead of their inputs.

    Returns:
      (the view, updated; the placeholders, one per input).
    """
    sgv = subgraph.make_view(sgv)
    with sgv.graph.as_default():
        placeholders = [array_ops.placeholder(t.dtype, name=util.placeholder_name(t))
                        for t in sgv.inputs]
    reroute.swap_inputs(sgv, placeholders)
    if control_inputs:
        detach_control_inputs(sgv)
    return sgv, placeholders


def detach_outputs(sgv, control_outputs=None):
    """Makes the consumers of the view's outputs read new placeholders instead.

    Returns:
      (the view restricted to its outputs that had consumers; the placeholders).
    """
    sgv = subgraph.make_view(sgv)
    sgv_ = sgv.remap_outputs([i for i, t in enumerate(sgv.outputs) if t.consumers()])
    consumers = subgraph.SubGraphView(sgv_.consumers())
    consumers = consumers.remap_inputs(
        [i for i, t in enumerate(consumers.inputs) if t in sgv_.outputs])
    with sgv_.graph.as_default():
        placeholders = [util.make_placeholder_from_tensor(t) for t in consumers.inputs]
    reroute.swap_outputs(sgv_, placeholders)
    if control_outputs is not None:
        detach_control_outputs(sgv_, control_outputs)
    return sgv_, placeholders


def detach(sgv, control_inputs=False, control_outputs=None, control_ios=None):
    """detach_inputs and detach_outputs.

    Returns:
      (the view, the input placeholders, the output placeholders).
    """
    control_inputs, control_outputs = select.check_cios(control_inputs, control_outputs,
                                                        control_ios)
    _, inputs = detach_inputs(sgv, control_inputs)
    _, outputs = detach_outputs(sgv, control_outputs)
    return sgv, inputs, outputs


def connect(sgv0, sgv1, disconnect_first=False):
    """Makes `sgv1`'s ops read `sgv0`'s outputs as their inputs (detaching `sgv1`'s
    inputs first if asked); returns `sgv1`."""
    sgv0, sgv1 = subgraph.make_view(sgv0), subgraph.make_view(sgv1)
    util.check_graphs(sgv0, sgv1)
    if disconnect_first:
        detach_inputs(sgv1)
    outputs0 = subgraph.SubGraphView(passthrough_ts=sgv0.outputs)
    reroute.reroute_inputs(outputs0, sgv1)
    return sgv1


def bypass(sgv):
    """Routes the view's inputs straight to the consumers of its outputs (the i-th input
    replaces the i-th output) and detaches its inputs.

    Returns:
      (the view, the placeholders its ops now read).
    """
    sgv = subgraph.make_view(sgv)
    inputs = list(sgv.inputs)
    sgv, placeholders = detach_inputs(sgv)
    reroute.reroute_ts(inputs, sgv.outputs)
    return sgv, placeholders
