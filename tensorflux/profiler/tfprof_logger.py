"""What the profiler knows about each node of a graph (tfprof's per-node statistics).

- float operations: the formula the op's definition names (`define_op(..., flops=...)`,
  framework/flops.py) over the static shapes of its inputs and outputs; shapes left unknown
  in the graph are completed from a traced step's `RunMetadata` when one is given, and the
  ops that still lack one are counted and reported ("N ops no flops stats due to incomplete
  shapes.", on stderr, as TF does);
- parameters: the elements of the node's `shape` attribute (variables, placeholders; a
  scalar counts 1); `_trainable_variables` is added to the types of the variables in the
  TRAINABLE_VARIABLES collection, which is what the parameter view accounts;
- run statistics from `RunMetadata.step_stats`: runs, CPU time, requested/peak/output
  bytes;
- an `op_log` (an OpLogProto-like object with `log_entries` of `name`, `float_ops`,
  `types`) adds types and float counts, as `tf.profiler.profile(op_log=...)` does.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field

from tensorflux.framework import errors, op_registry
from tensorflux.framework import flops as flops_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.profiler.option_builder import TRAINABLE_VARIABLES
from tensorflux.protos import tfprof_log_pb2


@dataclass(slots=True)
class NodeStats:
    """One graph node's own figures."""

    name: str
    op_types: list = field(default_factory=list)
    float_ops: int = 0
    parameters: int = 0
    shape: list | None = None  # the `shape` attribute's dims (scalar: [1])
    input_shapes: dict = field(default_factory=dict)  # input index -> dims (-1 unknown)
    run_count: int = 0
    exec_micros: int = 0
    cpu_exec_micros: int = 0
    requested_bytes: int = 0
    peak_bytes: int = 0
    output_bytes: int = 0
    devices: list = field(default_factory=list)


def _dims(shape) -> list | None:
    """A static shape's dims if fully known, else None."""
    if shape is None or shape.ndims is None:
        return None
    dims = shape.as_list()
    return None if any(d is None for d in dims) else dims


def _traced_shapes(run_meta) -> dict[str, list]:
    """Tensor name -> dims of every output recorded in a traced step."""
    out: dict[str, list] = {}
    if run_meta is None or not run_meta.HasField("step_stats"):
        return out
    for dev in run_meta.step_stats.dev_stats:
        for ns in dev.node_stats:
            for o in ns.output:
                shape = o.tensor_description.shape
                if not shape.unknown_rank:
                    out[f"{ns.node_name}:{o.slot}"] = [d.size for d in shape.dim]
    return out


def _tensor_dims(t, traced: dict) -> list | None:
    dims = _dims(t.shape)
    return dims if dims is not None else traced.get(t.name)


def _shape_attr(op) -> list | None:
    """tfprof's view of a `shape` attribute: its dims (-1 unknown), a scalar as [1]."""
    try:
        shape = op.get_attr("shape")
    except (ValueError, KeyError, AttributeError):
        return None
    if shape is None:
        return None
    if hasattr(shape, "unknown_rank"):  # a TensorShapeProto
        if shape.unknown_rank:
            return None
        dims = [d.size for d in shape.dim]
    else:
        if shape.ndims is None:
            return None
        dims = [-1 if d is None else d for d in shape.as_list()]
    return dims or [1]


def _float_ops(op, traced: dict) -> int | None:
    """The op's float operations; None when its formula lacks a shape; 0 without one."""
    opdef = op_registry.lookup(op.type)
    if opdef is None or not opdef.flops:
        return 0

    def attr(name):
        try:
            return op.get_attr(name)
        except (ValueError, KeyError, AttributeError):
            return None

    return flops_lib.count(opdef.flops, op.type, attr,
                           [_tensor_dims(t, traced) for t in op.inputs],
                           [_tensor_dims(t, traced) for t in op.outputs])


def _input_shapes(op) -> dict:
    shapes = {}
    for i, t in enumerate(op.inputs):
        if t.shape.ndims is not None:
            shapes[i] = [-1 if d is None else d for d in t.shape.as_list()] or [1]
    return shapes


def _node(op, traced: dict) -> tuple[NodeStats, bool]:
    """(the op's NodeStats, whether its FLOP formula lacked a shape)."""
    stats = NodeStats(op.name, op_types=[op.type], shape=_shape_attr(op),
                      input_shapes=_input_shapes(op))
    if stats.shape is not None and all(d >= 0 for d in stats.shape):
        stats.parameters = math.prod(stats.shape)
    count = _float_ops(op, traced)
    stats.float_ops = count or 0
    return stats, count is None


def _add_run_stats(nodes: dict, run_meta) -> None:
    for dev in run_meta.step_stats.dev_stats:
        for ns in dev.node_stats:
            stats = nodes.get(ns.node_name)
            if stats is None:
                continue
            micros = max(0, ns.op_end_rel_micros - ns.op_start_rel_micros)
            stats.run_count += 1
            stats.exec_micros += micros
            stats.cpu_exec_micros += micros
            stats.requested_bytes += sum(m.total_bytes for m in ns.memory)
            stats.peak_bytes += sum(m.peak_bytes for m in ns.memory)
            stats.output_bytes += sum(
                o.tensor_description.allocation_description.requested_bytes
                for o in ns.output)
            if dev.device not in stats.devices:
                stats.devices.append(dev.device)


def _merge_op_log(nodes: dict, op_log) -> None:
    for entry in getattr(op_log, "log_entries", ()):
        stats = nodes.get(entry.name)
        if stats is None:
            continue
        stats.op_types.extend(t for t in entry.types if t not in stats.op_types)
        if getattr(entry, "float_ops", 0) and not stats.float_ops:
            stats.float_ops = int(entry.float_ops)


def node_stats(graph, run_meta=None, op_log=None) -> dict[str, NodeStats]:
    """Every node of `graph` with its figures, by name.

    Args:
      graph: the Graph.
      run_meta: a RunMetadata of a traced step (shapes and run statistics), or None.
      op_log: an OpLogProto-like object adding types and float counts, or None.

    Returns:
      {node name: NodeStats}.
    """
    traced = _traced_shapes(run_meta)
    nodes: dict[str, NodeStats] = {}
    missing = 0
    for op in graph.get_operations():
        nodes[op.name], lacks_shape = _node(op, traced)
        missing += lacks_shape
    if missing and run_meta is None:
        sys.stderr.write(f"{missing} ops no flops stats due to incomplete shapes.\n")
    for v in graph.get_collection(GraphKeys.TRAINABLE_VARIABLES):
        stats = nodes.get(v.op.name)
        if stats is not None and TRAINABLE_VARIABLES not in stats.op_types:
            stats.op_types.append(TRAINABLE_VARIABLES)
    if run_meta is not None and run_meta.HasField("step_stats"):
        _add_run_stats(nodes, run_meta)
    if op_log is not None:
        _merge_op_log(nodes, op_log)
    return nodes


def merged_op_log(graph, op_log=None, run_meta=None, add_trace: bool = True):
    """The OpLogProto (protos/tfprof_log.proto) `write_op_log` writes: per op of `graph`
    its float operations (shapes completed from `run_meta`), the `_trainable_variables`
    type of trainable variables, and (`add_trace`) the stack that created it; then the
    entries of `op_log` (an OpLogProto) merged in: their types added, their float counts
    taking precedence."""
    nodes = node_stats(graph, run_meta)
    out = tfprof_log_pb2.OpLogProto()
    ids: dict[str, int] = {}

    def string_id(text: str) -> int:
        if text not in ids:
            ids[text] = len(ids)
            out.id_to_string[ids[text]] = text
        return ids[text]

    by_name = {}
    for op in graph.get_operations():
        stats = nodes[op.name]
        entry = out.log_entries.add(name=op.name, float_ops=stats.float_ops)
        entry.types.extend(t for t in stats.op_types if t != op.type)
        if add_trace:
            for frame in op.traceback:
                filename, lineno, funcname = frame[0], frame[1], frame[2]
                line = frame[3] if len(frame) > 3 and frame[3] else ""
                entry.code_def.traces.add(file_id=string_id(filename), lineno=lineno,
                                          function_id=string_id(funcname),
                                          line_id=string_id(line))
        by_name[op.name] = entry
    for logged in getattr(op_log, "log_entries", ()):
        entry = by_name.get(logged.name)
        if entry is None:
            entry = by_name[logged.name] = out.log_entries.add(name=logged.name)
        entry.types.extend(t for t in logged.types if t not in entry.types)
        if logged.float_ops:
            entry.float_ops = logged.float_ops
    return out


def write_op_log(graph, log_dir: str, op_log=None, run_meta=None, add_trace: bool = True):
    """Writes `merged_op_log(...)` to `<log_dir>/tfprof_log` (`tf.profiler.write_op_log`).

    Raises:
      NotFoundError: `log_dir` does not exist (as TensorFlow's).
    """
    proto = merged_op_log(graph, op_log, run_meta, add_trace)
    path = os.path.join(log_dir, "tfprof_log")
    try:
        with open(path, "wb") as f:
            f.write(proto.SerializeToString())
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{path}; No such file or directory") from None
