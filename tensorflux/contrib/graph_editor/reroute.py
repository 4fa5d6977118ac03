"""`tf.contrib.graph_editor.reroute`: re-plugging tensors. "reroute a to b" makes the
consumers of b read a instead (b's ends are left dangling); "swap" exchanges the consumers
of a and b. Ops themselves are not changed, only which tensors they read
(Operation._update_input, which also invalidates Sessions' cached steps)."""

from __future__ import annotations

from tensorflux.contrib.graph_editor import subgraph, util
from tensorflux.framework.operation import Operation

__all__ = [
    "add_control_inputs", "remove_control_inputs", "reroute_inputs", "reroute_ios",
    "reroute_outputs", "reroute_ts", "swap_inputs", "swap_ios", "swap_outputs", "swap_ts",
]

_SWAP, _A2B, _B2A = range(3)


def _check_ts_compatibility(ts0, ts1):
    ts0, ts1 = util.make_list_of_t(ts0), util.make_list_of_t(ts1)
    if len(ts0) != len(ts1):
        raise ValueError(f"ts0 and ts1 have different sizes: {len(ts0)} != {len(ts1)}")
    for t0, t1 in zip(ts0, ts1, strict=True):
        if not t0.dtype.is_compatible_with(t1.dtype):
            raise ValueError(f"Dtypes {t0.dtype} and {t1.dtype} are not compatible.")
        if not t0.get_shape().is_compatible_with(t1.get_shape()):
            raise ValueError(f"Shapes {t0.get_shape()} and {t1.get_shape()} are not compatible.")


def _reroute_t(t0, t1, consumers1, can_modify=None, cannot_modify=None) -> int:
    """Makes the ops of `consumers1` (allowed to change) read `t0` where they read `t1`."""
    if can_modify is not None:
        consumers1 = [op for op in consumers1 if op in can_modify]
    if cannot_modify is not None:
        consumers1 = [op for op in consumers1 if op not in cannot_modify]
    positions = {op: [i for i, t in enumerate(op.inputs) if t is t1] for op in consumers1}
    updates = 0
    for op in consumers1:
        for i in positions[op]:
            op._update_input(i, t0)
            updates += 1
    return updates


def _reroute_ts(ts0, ts1, mode, can_modify=None, cannot_modify=None) -> int:
    ts0, ts1 = util.make_list_of_t(ts0), util.make_list_of_t(ts1)
    _check_ts_compatibility(ts0, ts1)
    if cannot_modify is not None:
        cannot_modify = frozenset(util.make_list_of_op(cannot_modify))
    if can_modify is not None:
        can_modify = frozenset(util.make_list_of_op(can_modify))
    # The consumers are taken before any change: a tensor may appear more than once.
    consumers = [(util.concatenate_unique([], t0.consumers()),
                  util.concatenate_unique([], t1.consumers()))
                 for t0, t1 in zip(ts0, ts1, strict=True)]
    updates = 0
    for t0, t1, (consumers0, consumers1) in zip(ts0, ts1, consumers, strict=True):
        if t0 is t1:
            continue
        if mode in (_A2B, _SWAP):
            updates += _reroute_t(t0, t1, consumers1, can_modify, cannot_modify)
        if mode in (_B2A, _SWAP):
            updates += _reroute_t(t1, t0, consumers0, can_modify, cannot_modify)
    return updates


def swap_ts(ts0, ts1, can_modify=None, cannot_modify=None) -> int:
    """For each pair (t0, t1), the consumers of t0 read t1 and those of t1 read t0.
    Only ops in `can_modify` (if given) and not in `cannot_modify` change.

    Returns:
      The number of op inputs changed.

    Raises:
      TypeError: the arguments cannot be converted to tensors / ops.
      ValueError: the lists differ in length, or a pair's dtypes or shapes are not
        compatible.
    """
    return _reroute_ts(ts0, ts1, _SWAP, can_modify, cannot_modify)


def reroute_ts(ts0, ts1, can_modify=None, cannot_modify=None) -> int:
    """For each pair (t0, t1), the consumers of t1 read t0 instead (t1 is left with no
    consumer among the ops allowed to change: `can_modify` if given, not `cannot_modify`).

    Returns:
      The number of op inputs changed.

    Raises:
      TypeError: the arguments cannot be converted to tensors / ops.
      ValueError: the lists differ in length, or a pair's dtypes or shapes are not
        compatible.
    """
    return _reroute_ts(ts0, ts1, _A2B, can_modify, cannot_modify)


def _reroute_sgv_remap(sgv0, sgv1, mode):
    """Updates the views' inputs (and passthrough outputs) after their inputs moved."""
    a, b = sgv0.copy(), sgv1.copy()
    if mode == _SWAP:
        a._input_ts, b._input_ts = b._input_ts, a._input_ts
        a._passthrough_ts, b._passthrough_ts = b._passthrough_ts, a._passthrough_ts
    elif mode == _A2B:
        b._input_ts, b._passthrough_ts = a._input_ts[:], a._passthrough_ts[:]
    else:
        a._input_ts, a._passthrough_ts = b._input_ts[:], b._passthrough_ts[:]

    def update_passthrough_outputs(src, dst):
        for i, t in enumerate(dst._output_ts):
            if t in src._passthrough_ts:
                dst._output_ts[i] = dst._input_ts[src._input_ts.index(t)]

    if mode in (_A2B, _SWAP):
        update_passthrough_outputs(a, b)
    if mode in (_B2A, _SWAP):
        update_passthrough_outputs(b, a)
    sgv0._assign_from(a)
    sgv1._assign_from(b)


def _reroute_sgv_inputs(sgv0, sgv1, mode):
    sgv0, sgv1 = subgraph.make_view(sgv0), subgraph.make_view(sgv1)
    util.check_graphs(sgv0, sgv1)
    can_modify = sgv0.ops + sgv1.ops
    # the consumers of passthrough tensors may change too
    can_modify += util.get_consuming_ops(sgv0.passthroughs)
    can_modify += util.get_consuming_ops(sgv1.passthroughs)
    _reroute_ts(sgv0.inputs, sgv1.inputs, mode, can_modify=can_modify)
    _reroute_sgv_remap(sgv0, sgv1, mode)
    return sgv0, sgv1


def _reroute_sgv_outputs(sgv0, sgv1, mode):
    sgv0, sgv1 = subgraph.make_view(sgv0), subgraph.make_view(sgv1)
    util.check_graphs(sgv0, sgv1)
    _reroute_ts(sgv0.outputs, sgv1.outputs, mode, cannot_modify=sgv0.ops + sgv1.ops)
    return sgv0, sgv1


def _reroute_sgv(sgv0, sgv1, mode):
    _reroute_sgv_outputs(sgv0, sgv1, mode)
    _reroute_sgv_inputs(sgv0, sgv1, mode)
    return sgv0, sgv1


def swap_inputs(sgv0, sgv1):
    """Swaps the inputs of two subgraph views (anything `make_view` takes); returns the
    two views, updated."""
    return _reroute_sgv_inputs(sgv0, sgv1, _SWAP)


def reroute_inputs(sgv0, sgv1):
    """The ops of `sgv1` read `sgv0`'s inputs instead of their own; returns the views."""
    return _reroute_sgv_inputs(sgv0, sgv1, _A2B)


def swap_outputs(sgv0, sgv1):
    """Swaps the consumers of the outputs of two views; returns the views."""
    return _reroute_sgv_outputs(sgv0, sgv1, _SWAP)


def reroute_outputs(sgv0, sgv1):
    """The consumers of `sgv1`'s outputs read `sgv0`'s outputs instead; returns the
    views."""
    return _reroute_sgv_outputs(sgv0, sgv1, _A2B)


def swap_ios(sgv0, sgv1):
    """Swaps both the inputs and the outputs of two views; returns the views."""
    return _reroute_sgv(sgv0, sgv1, _SWAP)


def reroute_ios(sgv0, sgv1):
    """reroute_outputs then reroute_inputs from `sgv0` to `sgv1`; returns the views."""
    return _reroute_sgv(sgv0, sgv1, _A2B)


def _check_op(op):
    if not isinstance(op, Operation):
        raise TypeError(f"Expected a tf.Operation, got: {type(op)}")


def remove_control_inputs(op, cops):
    """Removes the control inputs `cops` from `op`.

    Raises:
      TypeError: `op` is not an op, or `cops` cannot be converted to ops.
      ValueError: one of `cops` is not a control input of `op`.
    """
    _check_op(op)
    cops = util.make_list_of_op(cops, allow_graph=False)
    for cop in cops:
        if cop not in op.control_inputs:
            raise ValueError(f"{cop.name} is not a control_input of {op.name}")
    keep = [cop for cop in op.control_inputs if cop not in cops]
    op._remove_all_control_inputs()
    op._add_control_inputs(keep)


def add_control_inputs(op, cops):
    """Adds the control inputs `cops` to `op`.

    Raises:
      TypeError: `op` is not an op, or `cops` cannot be converted to ops.
      ValueError: one of `cops` already is a control input of `op`.
    """
    _check_op(op)
    cops = util.make_list_of_op(cops, allow_graph=False)
    for cop in cops:
        if cop in op.control_inputs:
            raise ValueError(f"{cop.name} is already a control_input of {op.name}")
    util.check_graphs(op, *cops)
    op._add_control_inputs(cops)
