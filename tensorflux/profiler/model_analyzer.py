"""`tf.profiler.profile`: parameter counts, float operations, time and memory per scope.

The scope view builds one tree from the node names ("a/b/c" under "a/b" under "a"; a
missing prefix gets a node of its own) under `_TFProfRoot`, then, with tfprof's rules:

1. accounting: a node counts when one of its types (op type, or a logged type such as
   `_trainable_variables`) matches `account_type_regexes`; subtrees with no counted node
   are dropped;
2. display: a node shows when its own parameters, float ops and occurrences and its
   totals of time and bytes reach the `min_*` options, its depth is within `max_depth`,
   and its name matches `show_name_regexes` and no `hide_name_regexes`; the shown
   descendants of a hidden node take its place, siblings are ordered by `order_by`
   (largest first, then by name), and `trim_name_regexes` cuts below a node;
3. totals: with `account_displayed_op_only` a node's totals are its own figures plus its
   shown children's totals.

The report (options, legend, one line per shown node: "name (self/total params)", "--"
for the own figure of a node that does not count) goes to stdout, a file, or nowhere, and
the shown tree comes back as a `GraphNodeProto`. The op view (`cmd="op"`) aggregates the
nodes per op type into a `MultiGraphNodeProto`.
"""

from __future__ import annotations

import re
import sys

from tensorflux.framework import errors
from tensorflux.framework import graph as graph_lib
from tensorflux.profiler import report
from tensorflux.profiler.option_builder import ProfileOptionBuilder
from tensorflux.profiler.tfprof_logger import NodeStats, node_stats
from tensorflux.protos import tfprof_output_pb2

ROOT = "_TFProfRoot"
_STATS = ("run_count", "exec_micros", "cpu_exec_micros", "requested_bytes", "peak_bytes",
          "output_bytes", "parameters", "float_ops")


class _ScopeNode:
    """A node of the scope tree: its own figures, totals, and display state."""

    __slots__ = ("name", "stats", "children", "shown_children", "account", "total",
                 "definitions", "line")

    def __init__(self, name: str, stats: NodeStats | None):
        self.name, self.stats = name, stats or NodeStats(name)
        self.children: list[_ScopeNode] = []
        self.shown_children: list[_ScopeNode] = []
        self.account = False
        self.total: dict[str, int] = {}
        self.definitions = 0
        self.line = ""

    def own(self, key: str) -> int:
        return getattr(self.stats, key)

    def reset_totals(self) -> None:
        self.total = {k: self.own(k) for k in _STATS}
        self.definitions = 1

    def add_totals(self, child: _ScopeNode) -> None:
        for k in _STATS:
            self.total[k] += child.total[k]
        self.definitions += child.definitions


def _build_tree(nodes: dict[str, NodeStats]) -> _ScopeNode:
    by_name = {name: _ScopeNode(name, stats) for name, stats in nodes.items()}
    for name in sorted(by_name):
        while "/" in name:
            parent = name.rpartition("/")[0]
            created = parent not in by_name
            if created:
                by_name[parent] = _ScopeNode(parent, None)
            by_name[parent].children.append(by_name[name])
            if not created:
                break
            name = parent
    root = _ScopeNode(ROOT, None)
    root.children = [n for name, n in sorted(by_name.items()) if "/" not in name]
    for n in by_name.values():
        n.children.sort(key=lambda c: c.name)
    return root


def _matches(name: str, regexes) -> bool:
    return any(re.fullmatch(r, name) for r in regexes)


def _account(nodes: list[_ScopeNode], opts: dict) -> list[_ScopeNode]:
    """The nodes with a counted node in their subtree, totals over it (tfprof's Account)."""
    kept = []
    regexes = opts["account_type_regexes"]
    for node in nodes:
        children = _account(node.children, opts)
        node.account = regexes == [".*"] or any(
            _matches(t, regexes) for t in node.stats.op_types)
        if node.account or children:
            node.shown_children = children
            node.reset_totals()
            for c in children:
                node.add_totals(c)
            kept.append(node)
    return kept


def _search_roots(nodes: list[_ScopeNode], regexes) -> list[_ScopeNode]:
    found = []
    for node in nodes:
        if _matches(node.name, regexes):
            found.append(node)
        else:
            found.extend(_search_roots(node.shown_children, regexes))
    return found


def _should_show(node: _ScopeNode, opts: dict, depth: int) -> bool:
    if node.name == ROOT:
        return True
    t = node.total
    if (t["requested_bytes"] < opts.get("min_bytes", 0)
            or t["peak_bytes"] < opts.get("min_peak_bytes", 0)
            or t["output_bytes"] < opts.get("min_output_bytes", 0)
            or t["exec_micros"] < opts.get("min_micros", 0)
            or t["exec_micros"] - t["cpu_exec_micros"] < opts.get("min_accelerator_micros", 0)
            or t["cpu_exec_micros"] < opts.get("min_cpu_micros", 0)
            or node.own("parameters") < opts.get("min_params", 0)
            or node.own("float_ops") < opts.get("min_float_ops", 0)
            or node.own("run_count") < opts.get("min_occurrence", 0)
            or depth > opts["max_depth"]):
        return False
    shows = opts["show_name_regexes"] == [".*"] or _matches(node.name, opts["show_name_regexes"])
    return shows and not _matches(node.name, opts["hide_name_regexes"])


_ORDER_KEYS = {"params": "parameters", "float_ops": "float_ops", "bytes": "requested_bytes",
               "peak_bytes": "peak_bytes", "output_bytes": "output_bytes",
               "micros": "exec_micros", "cpu_micros": "cpu_exec_micros",
               "occurrence": "run_count"}


def _sorted(nodes: list[_ScopeNode], order_by: str) -> list[_ScopeNode]:
    key = _ORDER_KEYS.get(order_by)
    if key is None:
        return sorted(nodes, key=lambda n: n.name)
    return sorted(nodes, key=lambda n: (-n.total[key], n.name))


def _show(nodes: list[_ScopeNode], opts: dict, depth: int, indent: int) -> list[_ScopeNode]:
    """The nodes to display in place of `nodes` (tfprof's PrintScope)."""
    shown = []
    for node in nodes:
        visible = _should_show(node, opts, depth)
        below = []
        if not _matches(node.name, opts["trim_name_regexes"]) and depth <= opts["max_depth"]:
            below = _show(node.shown_children, opts, depth + 1, indent + 2 * visible)
        if not visible:
            shown.extend(below)
            continue
        node.shown_children = _sorted(below, opts["order_by"])
        if opts["account_displayed_op_only"]:
            node.reset_totals()
            for c in node.shown_children:
                node.add_totals(c)
        node.line = " " * indent + report.node_line(node, opts) + "\n"
        shown.append(node)
    return shown


def _to_proto(node: _ScopeNode) -> tfprof_output_pb2.GraphNodeProto:
    s, t = node.stats, node.total
    proto = tfprof_output_pb2.GraphNodeProto(name=node.name, devices=s.devices,
                                             total_definition_count=node.definitions)
    for key in _STATS:
        setattr(proto, key, getattr(s, key))
        setattr(proto, "total_" + key, t[key])
    proto.accelerator_exec_micros = s.exec_micros - s.cpu_exec_micros
    proto.total_accelerator_exec_micros = t["exec_micros"] - t["cpu_exec_micros"]
    for index, dims in s.input_shapes.items():
        for d in dims:
            proto.input_shapes[index].dim.add(size=d)
    proto.children.extend(_to_proto(c) for c in node.shown_children)
    return proto


def _lines(node: _ScopeNode) -> str:
    return node.line + "".join(_lines(c) for c in node.shown_children)


def _scope_view(nodes: dict[str, NodeStats], opts: dict):
    root = _build_tree(nodes)
    root.reset_totals()
    tops = _account(root.children, opts)
    for n in tops:
        root.add_totals(n)
    root.shown_children = _search_roots(tops, opts["start_name_regexes"])
    shown = _show([root], opts, 1, 0)[0]
    text = report.legend(opts) + _lines(shown)
    return _to_proto(shown), text


# What an option left out of the dict means (as TF's `_build_options` fills it in).
_DEFAULTS = {"max_depth": 10, "min_bytes": 0, "min_peak_bytes": 0, "min_residual_bytes": 0,
             "min_output_bytes": 0, "min_micros": 0, "min_accelerator_micros": 0,
             "min_cpu_micros": 0, "min_params": 0, "min_float_ops": 0, "min_occurrence": 0,
             "step": -1, "order_by": "name", "account_type_regexes": [],
             "start_name_regexes": [], "trim_name_regexes": [], "show_name_regexes": [],
             "hide_name_regexes": [], "account_displayed_op_only": False, "select": [],
             "output": "stdout"}


def _complete(options: dict) -> dict:
    return {**_DEFAULTS, **options}


def profile(graph=None, run_meta=None, op_log=None, cmd: str = "scope", options=None):
    """Profiles `graph` and prints the report (`tf.profiler.profile`).

    Args:
      graph: the Graph (default: the default graph).
      run_meta: the RunMetadata of a traced step (`RunOptions(trace_level=FULL_TRACE)`):
        completes unknown shapes and gives time and memory.
      op_log: an OpLogProto-like object (`log_entries` of name, float_ops, types).
      cmd: "scope" (the name hierarchy) or "op" (one node per op type).
      options: a dict from `ProfileOptionBuilder` (default: trainable parameters).

    Returns:
      A `GraphNodeProto` ("scope") or `MultiGraphNodeProto` ("op"): the displayed tree.

    Raises:
      InvalidArgumentError: an unknown `cmd`.
      UnimplementedError: the "graph" and "code" views.
    """
    graph = graph or graph_lib.get_default_graph()
    _check_cmd(cmd)
    return _report(node_stats(graph, run_meta, op_log), cmd, options)


def _check_cmd(cmd: str) -> None:
    if cmd in ("graph", "code"):
        raise errors.UnimplementedError(None, None, f"the '{cmd}' view is not supported")
    if cmd not in ("scope", "op"):
        raise errors.InvalidArgumentError(None, None, f"unknown cmd: {cmd}\n")


def _report(nodes: dict, cmd: str, options):
    """The `cmd` view of `nodes` with `options` (default: trainable parameters), printed
    where the options say; the displayed tree."""
    opts = _complete(ProfileOptionBuilder.trainable_variables_parameter() if options is None
                     else options)
    if cmd == "scope":
        proto, text = _scope_view(nodes, opts)
    else:
        proto, text = report.op_view(nodes, opts)
    report.write(cmd, opts, text)
    return proto


# ---- Profiler: several steps, and advice ------------------------------------------------

_AVERAGED = ("run_count", "exec_micros", "cpu_exec_micros", "requested_bytes", "peak_bytes",
             "output_bytes")
ALL_ADVICE = {"ExpensiveOperationChecker": {}, "AcceleratorUtilizationChecker": {},
              "JobChecker": {}, "OperationChecker": {}}


class Profiler:
    """TF1's `tf.profiler.Profiler`: the graph's figures over the traced steps added with
    `add_step`, viewed per name scope or per op type, and `advise`.

    A view's options choose the step (`"step"`: a step added, or -1, the default: each
    run figure averaged over all the steps added). The "graph" and "code" views
    (`profile_graph`, `profile_python`) and `serialize_to_string` are not provided
    (UnimplementedError).

    Args:
      graph: the Graph (default: the default graph).
      op_log: an OpLogProto adding types and float counts.
    """

    def __init__(self, graph=None, op_log=None):
        self._graph = graph or graph_lib.get_default_graph()
        self._op_log = op_log
        self._steps: dict[int, object] = {}

    def add_step(self, step: int, run_meta) -> None:
        """Adds the RunMetadata of a traced step (`step` a number of the caller's)."""
        self._steps[int(step)] = run_meta

    def _nodes(self, options) -> dict:
        step = (options or {}).get("step", -1)
        if step is not None and step >= 0:
            if step not in self._steps:
                raise errors.InvalidArgumentError(None, None, f"step {step} was not added")
            return node_stats(self._graph, self._steps[step], self._op_log)
        if not self._steps:
            return node_stats(self._graph, None, self._op_log)
        runs = [node_stats(self._graph, meta, self._op_log) for meta in self._steps.values()]
        nodes = runs[0]
        for name, stats in nodes.items():
            for field in _AVERAGED:
                total = sum(getattr(r[name], field) for r in runs)
                setattr(stats, field, int(round(total / len(runs))))
        return nodes

    def profile_name_scope(self, options):
        """The scope view (`GraphNodeProto`), printed where `options` say."""
        return _report(self._nodes(options), "scope", options)

    def profile_operations(self, options):
        """The op-type view (`MultiGraphNodeProto`), printed where `options` say."""
        return _report(self._nodes(options), "op", options)

    def profile_graph(self, options):
        _check_cmd("graph")

    def profile_python(self, options):
        _check_cmd("code")

    def serialize_to_string(self) -> bytes:
        raise errors.UnimplementedError(
            None, None, "Profiler.serialize_to_string (tfprof's ProfileProto) is not "
            "supported")

    def advise(self, options=None):
        """Checks the steps added (averaged) and prints and returns the `AdviceProto`."""
        return _advise(self._graph, self._nodes({"step": -1}),
                       ALL_ADVICE if options in (None, 0) else options)


def advise(graph=None, run_meta=None, options=0):
    """`tf.profiler.advise`: the checks of `options` (default: all) over `graph` and one
    traced step; prints and returns the `AdviceProto`."""
    graph = graph or graph_lib.get_default_graph()
    return _advise(graph, node_stats(graph, run_meta),
                   ALL_ADVICE if options in (None, 0) else options)


def _is_accelerator(device: str) -> bool:
    return "/device:GPU:" in device or "/gpu:" in device.lower()


def _times(stats) -> tuple[int, int]:
    """(CPU micros, accelerator micros) of one node's runs."""
    if any(_is_accelerator(d) for d in stats.devices):
        return 0, stats.exec_micros
    return stats.cpu_exec_micros, 0


def _timing(cpu: int, accelerator: int) -> str:
    return (f"cpu: {report.time(cpu)}, accelerator: {report.time(accelerator)}, "
            f"total: {report.time(cpu + accelerator)}")


def _expensive_operations(graph, nodes: dict) -> list[str]:
    """ExpensiveOperationChecker: the three op types and the node that took longest."""
    by_type: dict[str, list[int]] = {}
    ran = [s for s in nodes.values() if s.run_count]
    for stats in ran:
        cpu, acc = _times(stats)
        totals = by_type.setdefault(stats.op_types[0], [0, 0])
        totals[0] += cpu
        totals[1] += acc
    if not ran:
        return []
    whole = sum(c + a for c, a in by_type.values()) or 1
    top = sorted(by_type.items(), key=lambda kv: (-(kv[1][0] + kv[1][1]), kv[0]))[:3]
    types = "\n".join(f"top {i} operation type: {name}, {_timing(c, a)} "
                      f"({100.0 * (c + a) / whole:.2f}%)"
                      for i, (name, (c, a)) in enumerate(top, 1))
    node = max(ran, key=lambda s: (sum(_times(s)), s.name))
    return [types, f"top 1 graph node: {node.name}, {_timing(*_times(node))}"]


def _accelerator_utilization(graph, nodes: dict) -> list[str]:
    """AcceleratorUtilizationChecker: accelerators that ran less than half of the step's op
    time (their ops' time over all ops' time)."""
    busy: dict[str, int] = {}
    for stats in nodes.values():
        for d in stats.devices:
            if _is_accelerator(d):
                busy[d] = busy.get(d, 0) + stats.exec_micros
    total = sum(s.exec_micros for s in nodes.values()) or 1
    return [f"device: {d} low utilization: {b / total:.2f}" for d, b in sorted(busy.items())
            if b / total < 0.5]


def _operations(graph, nodes: dict) -> list[str]:
    """OperationChecker: convolutions in NHWC that ran on an accelerator (NCHW is the
    accelerators' layout)."""
    found = []
    for stats in nodes.values():
        if not stats.op_types[0].startswith("Conv") or \
                not any(_is_accelerator(d) for d in stats.devices):
            continue
        try:
            layout = graph.get_operation_by_name(stats.name).get_attr("data_format")
        except (KeyError, ValueError):
            continue
        if (layout.decode() if isinstance(layout, bytes) else layout) == "NHWC":
            found.append(stats.name)
    return [f"Found operation using NHWC data_format on GPU. Maybe NCHW is faster: "
            f"{', '.join(found)}"] if found else []


_CHECKERS = {"AcceleratorUtilizationChecker": _accelerator_utilization,
             "ExpensiveOperationChecker": _expensive_operations,
             "OperationChecker": _operations}


def _advise(graph, nodes: dict, options: dict):
    """The checks named in `options` that this runtime has (JobChecker is TensorFlow's
    cluster-internal one), printed as TF prints them."""
    out = tfprof_output_pb2.AdviceProto()
    for name in sorted(options):
        check = _CHECKERS.get(name)
        if check is None:
            continue
        out.checkers[name].reports.extend(check(graph, nodes))
    text = "".join(f"\n{name}:\n" + "".join(r + "\n" for r in out.checkers[name].reports)
                   for name in sorted(out.checkers))
    sys.stdout.write(text)
    return out


__all__ = ["ALL_ADVICE", "Profiler", "advise", "profile"]
