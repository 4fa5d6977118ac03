"""`tf.contrib.graph_editor.select`: ops and tensors picked by regular expression, by
filter, by walking the graph forward or backward, or within a boundary.

Walks return their ops in a fixed order (seeds first, then wave by wave in the order the
edges are met); TensorFlow's order came from Python sets."""

from __future__ import annotations

import re

from tensorflux.contrib.graph_editor import util
from tensorflux.framework.operation import Tensor

__all__ = [
    "can_be_regex", "check_cios", "compute_boundary_ts", "filter_ops", "filter_ops_from_regex",
    "filter_ts", "filter_ts_from_regex", "get_backward_walk_ops", "get_forward_walk_ops",
    "get_name_scope_ops", "get_ops_ios", "get_walks_intersection_ops", "get_walks_union_ops",
    "get_within_boundary_ops", "make_regex", "select_ops", "select_ops_and_ts", "select_ts",
]

_RE_TYPE = type(re.compile(""))


def can_be_regex(obj) -> bool:
    """True for a string or a compiled regular expression."""
    return isinstance(obj, (str, _RE_TYPE))


def make_regex(obj):
    """`obj` as a compiled regular expression.

    Raises:
      ValueError: `obj` is neither a string nor a compiled regular expression.
    """
    if isinstance(obj, _RE_TYPE):
        return obj
    if isinstance(obj, str):
        return re.compile(obj)
    raise ValueError(f"Expected a string or a regex, got: {type(obj)}")


def _get_input_ts(ops) -> list:
    ts = []
    for op in ops:
        util.concatenate_unique(ts, op.inputs)
    return ts


def _get_output_ts(ops) -> list:
    return [t for op in ops for t in op.outputs]


def filter_ts(ops, positive_filter) -> list:
    """The input and output tensors of `ops` (inputs first, each once) that
    `positive_filter(t)` accepts (`True`: all of them)."""
    ops = util.make_list_of_op(ops)
    ts = _get_input_ts(ops)
    util.concatenate_unique(ts, _get_output_ts(ops))
    if positive_filter is not True:
        ts = [t for t in ts if positive_filter(t)]
    return ts


def filter_ts_from_regex(ops, regex) -> list:
    """The tensors of `filter_ts(ops)` whose name `regex` matches (re.search)."""
    regex = make_regex(regex)
    return filter_ts(ops, positive_filter=lambda t: regex.search(t.name))


def filter_ops(ops, positive_filter) -> list:
    """The ops of `ops` that `positive_filter(op)` accepts (`True`: all of them)."""
    ops = util.make_list_of_op(ops)
    if positive_filter is not True:
        ops = [op for op in ops if positive_filter(op)]
    return ops


def filter_ops_from_regex(ops, regex) -> list:
    """The ops of `ops` whose name `regex` matches (re.search)."""
    regex = make_regex(regex)
    return filter_ops(ops, lambda op: regex.search(op.name))


def get_name_scope_ops(ops, scope) -> list:
    """The ops of `ops` named `scope` or inside it."""
    if scope and scope.endswith("/"):
        scope = scope[:-1]
    return filter_ops_from_regex(ops, f"^{re.escape(scope)}(/.*)?$")


def check_cios(control_inputs=False, control_outputs=None, control_ios=None):
    """(control_inputs, control_outputs) after `control_ios` (a util.ControlOutputs that
    turns both on).

    Raises:
      TypeError: `control_outputs` or `control_ios` is not a util.ControlOutputs.
    """
    if control_ios is not None:
        if not isinstance(control_ios, util.ControlOutputs):
            raise TypeError(f"Expected a util.ControlOutputs, got: {type(control_ios)}")
        if control_outputs is not None:
            raise ValueError("control_outputs should be None when using control_ios.")
        return True, control_ios
    if control_outputs is not None and not isinstance(control_outputs, util.ControlOutputs):
        raise TypeError(f"Expected a util.ControlOutputs, got: {type(control_outputs)}")
    return control_inputs, control_outputs


def get_ops_ios(ops, control_inputs=False, control_outputs=None, control_ios=None) -> list:
    """The ops connected to `ops` by an edge (and by control edges when asked)."""
    control_inputs, control_outputs = check_cios(control_inputs, control_outputs, control_ios)
    ops = util.make_list_of_op(ops)
    res = []
    for op in ops:
        util.concatenate_unique(res, [t.op for t in op.inputs])
        for t in op.outputs:
            util.concatenate_unique(res, t.consumers())
        if control_outputs is not None:
            util.concatenate_unique(res, control_outputs.get(op))
        if control_inputs:
            util.concatenate_unique(res, op.control_inputs)
    return res


def compute_boundary_ts(ops):
    """(outside input tensors, outside output tensors, inside tensors) of the ops `ops`:
    inputs produced outside, outputs read outside (or by nobody), and tensors both produced
    and consumed inside.

    Raises:
      TypeError: `ops` cannot be converted to a list of ops.
    """
    ops = util.make_list_of_op(ops)
    input_ts = _get_input_ts(ops)
    output_ts = _get_output_ts(ops)
    output_set, ops_set = frozenset(output_ts), frozenset(ops)
    inside_ts, only_inside = [], set()
    for t in input_ts:
        if t not in output_set:
            continue
        inside_ts.append(t)
        if not set(t.consumers()) - ops_set:
            only_inside.add(t)
    inside_set = frozenset(inside_ts)
    outside_output_ts = [t for t in output_ts if t not in only_inside]
    outside_input_ts = [t for t in input_ts if t not in inside_set]
    return outside_input_ts, outside_output_ts, inside_ts


def get_within_boundary_ops(ops, seed_ops, boundary_ops=(), inclusive=True,
                            control_inputs=False, control_outputs=None, control_ios=None):
    """The ops of `ops` reachable from `seed_ops` over edges in either direction without
    crossing `boundary_ops` (which are included when `inclusive`).

    Raises:
      ValueError: the boundary contains a seed, or the ops are from different graphs.
    """
    control_inputs, control_outputs = check_cios(control_inputs, control_outputs, control_ios)
    ops = util.make_list_of_op(ops)
    seed_ops = util.make_list_of_op(seed_ops, allow_graph=False)
    util.check_graphs(*(ops + seed_ops))
    boundary = set(util.make_list_of_op(boundary_ops))
    res = set(seed_ops)
    if boundary & res:
        raise ValueError("Boundary is intersecting with the seeds.")
    wave = list(seed_ops)
    while wave:
        new_wave = []
        for op in get_ops_ios(wave, control_inputs, control_outputs):
            if op in res:
                continue
            if op in boundary:
                if inclusive:
                    res.add(op)
            else:
                new_wave.append(op)
                res.add(op)
        wave = new_wave
    return [op for op in ops if op in res]


def _seeds(seed_ops, to_ops):
    """Seed ops as a list; tensors are first turned into ops by `to_ops`."""
    if not util.is_iterable(seed_ops):
        seed_ops = [seed_ops]
    seed_ops = list(seed_ops)
    if not seed_ops:
        return []
    if isinstance(seed_ops[0], Tensor):
        return to_ops(util.make_list_of_t(seed_ops, allow_graph=False))
    return util.make_list_of_op(seed_ops, allow_graph=False)


def _walk(seeds, inclusive, within_ops, within_ops_fn, next_ops):
    if within_ops:
        within_ops = frozenset(util.make_list_of_op(within_ops, allow_graph=False))
        seeds = [op for op in seeds if op in within_ops]

    def is_within(op):
        return (within_ops is None or op in within_ops) and \
            (within_ops_fn is None or within_ops_fn(op))

    result = util.concatenate_unique([], seeds)
    seen = set(result)
    wave = list(result)
    while wave:
        new_wave = []
        for op in wave:
            for new_op in next_ops(op):
                if new_op not in seen and is_within(new_op):
                    seen.add(new_op)
                    new_wave.append(new_op)
        result += new_wave
        wave = new_wave
    if not inclusive:
        seed_set = frozenset(seeds)
        result = [op for op in result if op not in seed_set]
    return result


def get_forward_walk_ops(seed_ops, inclusive=True, within_ops=None, within_ops_fn=None,
                         stop_at_ts=(), control_outputs=None) -> list:
    """The ops reached from `seed_ops` (ops, or tensors: their consumers) following edges
    forward, staying within `within_ops` / `within_ops_fn`, not through `stop_at_ts`,
    and also along control edges when `control_outputs` (a util.ControlOutputs) is given.

    Raises:
      TypeError: the seeds cannot be converted to ops.
    """
    _, control_outputs = check_cios(False, control_outputs)
    seeds = _seeds(seed_ops, util.get_consuming_ops)
    stop_at_ts = frozenset(util.make_list_of_t(stop_at_ts))

    def next_ops(op):
        found = []
        for t in op.outputs:
            if t not in stop_at_ts:
                found += t.consumers()
        if control_outputs is not None:
            found += control_outputs.get(op)
        return found

    return _walk(seeds, inclusive, within_ops, within_ops_fn, next_ops)


def get_backward_walk_ops(seed_ops, inclusive=True, within_ops=None, within_ops_fn=None,
                          stop_at_ts=(), control_inputs=False) -> list:
    """The ops reached from `seed_ops` (ops, or tensors: their producers) following edges
    backward, staying within `within_ops` / `within_ops_fn`, not through `stop_at_ts`, and
    also along control inputs when `control_inputs`.

    Raises:
      TypeError: the seeds cannot be converted to ops.
    """
    control_inputs, _ = check_cios(control_inputs, None)
    seeds = _seeds(seed_ops, util.get_generating_ops)
    stop_at_ts = frozenset(util.make_list_of_t(stop_at_ts))

    def next_ops(op):
        found = [t.op for t in op.inputs if t not in stop_at_ts]
        if control_inputs:
            found += op.control_inputs
        return found

    return _walk(seeds, inclusive, within_ops, within_ops_fn, next_ops)


def get_walks_intersection_ops(forward_seed_ops, backward_seed_ops, forward_inclusive=True,
                               backward_inclusive=True, within_ops=None, within_ops_fn=None,
                               control_inputs=False, control_outputs=None,
                               control_ios=None) -> list:
    """The ops both on a forward walk from `forward_seed_ops` and on a backward walk from
    `backward_seed_ops` (in the forward walk's order)."""
    control_inputs, control_outputs = check_cios(control_inputs, control_outputs, control_ios)
    forward = get_forward_walk_ops(forward_seed_ops, inclusive=forward_inclusive,
                                   within_ops=within_ops, within_ops_fn=within_ops_fn,
                                   control_outputs=control_outputs)
    backward = frozenset(get_backward_walk_ops(
        backward_seed_ops, inclusive=backward_inclusive, within_ops=within_ops,
        within_ops_fn=within_ops_fn, control_inputs=control_inputs))
    return [op for op in forward if op in backward]


def get_walks_union_ops(forward_seed_ops, backward_seed_ops, forward_inclusive=True,
                        backward_inclusive=True, within_ops=None, within_ops_fn=None,
                        control_inputs=False, control_outputs=None, control_ios=None) -> list:
    """The ops on a forward walk from `forward_seed_ops` or on a backward walk from
    `backward_seed_ops` (forward ones first)."""
    control_inputs, control_outputs = check_cios(control_inputs, control_outputs, control_ios)
    forward = get_forward_walk_ops(forward_seed_ops, inclusive=forward_inclusive,
                                   within_ops=within_ops, within_ops_fn=within_ops_fn,
                                   control_outputs=control_outputs)
    backward = get_backward_walk_ops(backward_seed_ops, inclusive=backward_inclusive,
                                     within_ops=within_ops, within_ops_fn=within_ops_fn,
                                     control_inputs=control_inputs)
    return util.concatenate_unique(forward, backward)


def _select(args, kwargs, kind):
    """select_ops (kind "ops") or select_ts (kind "ts")."""
    for k in kwargs:
        if k not in ("graph", "positive_filter", f"restrict_{kind}_regex"):
            raise ValueError(f"Wrong keywords argument: {k}.")
    graph = kwargs.get("graph")
    positive_filter = kwargs.get("positive_filter")
    restrict = kwargs.get(f"restrict_{kind}_regex", False)
    other = "ts" if kind == "ops" else "ops"
    found = []
    for arg in args:
        if can_be_regex(arg):
            if graph is None:
                raise ValueError("Use the keyword argument 'graph' to use regex.")
            regex = make_regex(arg)
            if regex.pattern.startswith(f"(?#{other})"):
                continue
            if restrict and not regex.pattern.startswith(f"(?#{kind})"):
                continue
            candidates = (filter_ops_from_regex(graph, regex) if kind == "ops"
                          else filter_ts_from_regex(graph, regex))
        elif kind == "ops":
            candidates = util.make_list_of_op(arg, ignore_ts=True)
        else:
            candidates = util.make_list_of_t(arg, ignore_ops=True)
        for item in candidates:
            if item not in found and (positive_filter is None or positive_filter(item)):
                found.append(item)
    return found


def select_ops(*args, **kwargs) -> list:
    """The ops named by `args`: regular expressions matched against the op names of
    `graph=` (those starting with "(?#ts)" are skipped; with `restrict_ops_regex=True`
    only those starting with "(?#ops)" are used), ops or lists of ops (tensors are
    ignored); `positive_filter=` keeps only the ops it accepts.

    Raises:
      ValueError: a regular expression without `graph=`, or an unknown keyword.
      TypeError: an argument is neither a regex nor ops.
    """
    return _select(args, kwargs, "ops")


def select_ts(*args, **kwargs) -> list:
    """The tensors named by `args`, as `select_ops` picks ops (regular expressions are
    matched against the names of the graph's tensors; "(?#ops)" ones are skipped;
    `restrict_ts_regex=True` keeps only "(?#ts)" ones; ops are ignored).

    Raises:
      ValueError: a regular expression without `graph=`, or an unknown keyword.
      TypeError: an argument is neither a regex nor tensors.
    """
    return _select(args, kwargs, "ts")


def select_ops_and_ts(*args, **kwargs):
    """(select_ops(...), select_ts(..., restrict_ts_regex=True)): plain regular expressions
    pick ops only; "(?#ts)" ones pick tensors."""
    ops = select_ops(*args, restrict_ops_regex=False, **kwargs)
    ts = select_ts(*args, restrict_ts_regex=True, **kwargs)
    return ops, ts
