"""Pieces shared by contrib.quantize's rewrites: rerouting a tensor's consumers, the
quantization step counter, the consumers of an op."""

from __future__ import annotations

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.ops import array_ops
from tensorflux.variables import init_ops, variable_scope

_STEP_NAME = "fake_quantization_step"


def reroute_tensor(t0, t1, can_modify=None) -> int:
    """Makes the consumers of `t1` (those in `can_modify` if given) read `t0`; returns the
    number of inputs changed."""
    consumers = list(dict.fromkeys(t1.consumers()))
    if can_modify is not None:
        consumers = [c for c in consumers if c in can_modify]
    positions = {c: [i for i, t in enumerate(c.inputs) if t is t1] for c in consumers}
    changed = 0
    for c in consumers:
        for i in positions[c]:
            c._update_input(i, t0)
            changed += 1
    return changed


def consumer_operations(producer_op) -> set:
    """The ops reading any output of `producer_op`."""
    return {c for t in producer_op.outputs for c in t.consumers()}


def create_or_get_quantization_step():
    """The step counter that quant_delay and freeze_bn_delay compare against: the int64
    variable `fake_quantization_step` (global variables), incremented each time the
    returned tensor (`fake_quantization_step/Identity:0`) is computed."""
    g = graph_lib.get_default_graph()
    try:
        return g.get_tensor_by_name(_STEP_NAME + "/Identity:0")
    except KeyError:
        pass
    with g.name_scope(None):
        step = variable_scope.get_variable(
            _STEP_NAME, shape=[], dtype=dtypes.int64, initializer=init_ops.zeros_initializer(),
            trainable=False, collections=[graph_lib.GraphKeys.GLOBAL_VARIABLES])
        with g.name_scope(step.op.name + "/"):
            return array_ops.identity(step.assign_add(1), name="Identity")


def drop_string_prefix(s, prefix):
    """`s` without `prefix` if it starts with it."""
    return s[len(prefix):] if s.startswith(prefix) else s
