"""Timeline: a traced step as Chrome trace-event JSON (`tf.client.timeline`).

    run_metadata = tf.RunMetadata()
    sess.run(train_op, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
             run_metadata=run_metadata)
    trace = timeline.Timeline(run_metadata.step_stats).generate_chrome_trace_format()
    open("timeline.json", "w").write(trace)      # load in chrome://tracing or Perfetto

The layout follows TensorFlow's `tensorflow/python/client/timeline.py`:
- one process per device for its compute (`<device> Compute`) and one for its tensors
  (`<device> Tensors`), plus an `Allocators` process for memory counters;
- inside a device, one thread lane per OS thread that ran kernels there (named after the
  thread), each node a complete event (`ph: X`, `cat: Op`, name = op type, args = node name,
  op and inputs);
- with `show_dataflow`, flow arrows (`ph: s` / `ph: t`, `cat: DataFlow`) from each _Send
  to its _Recv (matched by tensor name and devices, in order), and from a tensor's producer
  to each consumer on another thread or device;
- with `show_memory`, a counter series per allocator (bytes in use after each node).
"""

from __future__ import annotations

import collections
import json
import re

__all__ = ["Timeline", "StepStatsAnalysis", "AllocationMaximum"]

AllocationMaximum = collections.namedtuple("AllocationMaximum",
                                           ("timestamp", "num_bytes", "tensors"))
StepStatsAnalysis = collections.namedtuple("StepStatsAnalysis",
                                           ("chrome_trace", "allocator_maximums"))

_LABEL = re.compile(r"(.*?) = (.*?)\((.*)\)$")
_TRANSFER = re.compile(r"(.*) @(.*)")


class _ChromeTraceFormatter:
    """Accumulates metadata and events; `format_to_string` gives the JSON document."""

    def __init__(self):
        self._metadata: list[dict] = []
        self._events: list[dict] = []

    def emit_pid(self, name: str, pid: int) -> None:
        self._metadata.append({"name": "process_name", "ph": "M", "pid": pid,
                               "args": {"name": name}})

    def emit_tid(self, name: str, pid: int, tid: int) -> None:
        self._metadata.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                               "args": {"name": name}})

    def emit_region(self, ts: int, dur: int, pid: int, tid: int, category: str, name: str,
                    args: dict) -> None:
        self._events.append({"ph": "X", "cat": category, "name": name, "pid": pid,
                             "tid": tid, "ts": ts, "dur": dur, "args": args})

    def emit_flow(self, name: str, start: tuple[int, int, int], end: tuple[int, int, int],
                  flow_id: int) -> None:
        """An arrow from (ts, pid, tid) `start` to `end`."""
        for ph, (ts, pid, tid) in (("s", start), ("t", end)):
            self._events.append({"ph": ph, "cat": "DataFlow", "name": name, "pid": pid,
                                 "tid": tid, "ts": ts, "id": flow_id, "bp": "e"})

    def emit_counter(self, category: str, name: str, pid: int, ts: int, counter: str,
                     value: int) -> None:
        self._events.append({"ph": "C", "cat": category, "name": name, "pid": pid,
                             "tid": 0, "ts": ts, "args": {counter: value}})

    def format_to_string(self, pretty: bool = False) -> str:
        trace = {"traceEvents": self._metadata + self._events}
        if pretty:
            return json.dumps(trace, indent=4, separators=(",", ": "))
        return json.dumps(trace, separators=(",", ":"))


def _parse_label(label: str) -> tuple[str, str, list[str]]:
    """`name = Op(a, b:1, ^c)` -> (name, Op, ["a", "b:1", "^c"])."""
    m = _LABEL.match(label)
    if m is None:
        return "unknown", "unknown", []
    name, op, inputs = m.groups()
    return name, op, [s for s in inputs.split(", ") if s] if inputs else []


class Timeline:
    """A visual timeline of one traced step.

    Args:
      step_stats: a StepStats proto (RunMetadata.step_stats).
      graph: optional, the Graph that ran (unused; kept for TensorFlow's signature).
    """

    def __init__(self, step_stats, graph=None):
        self._step_stats = step_stats
        self._graph = graph

    def generate_chrome_trace_format(self, show_dataflow: bool = True,
                                     show_memory: bool = False,
                                     op_time: str = "schedule") -> str:
        """The step as a Chrome trace-event JSON string.

        Args:
          show_dataflow: draw arrows for transfers and for tensors crossing threads.
          show_memory: add memory counters per allocator.
          op_time: accepted for TensorFlow compatibility ("schedule", "gpu", "all"); CPU
            kernels have one time span, so all give the same trace.

        Returns:
          A JSON string: `{"traceEvents": [...]}`.
        """
        return self.analyze_step_stats(show_dataflow, show_memory, op_time).chrome_trace \
            .format_to_string(pretty=True)

    def analyze_step_stats(self, show_dataflow: bool = True, show_memory: bool = True,
                           op_time: str = "schedule") -> StepStatsAnalysis:
        """Builds the trace; returns it with the peak bytes in use per allocator."""
        del op_time
        trace = _ChromeTraceFormatter()
        trace.emit_pid("Allocators", 0)
        events = []  # (device, pid, tid, node_stats, name, op, inputs)
        next_pid = 1
        for dev in self._step_stats.dev_stats:
            pid = next_pid
            trace.emit_pid(dev.device + " Compute", pid)
            trace.emit_pid(dev.device + " Tensors", pid + 1)
            next_pid += 2
            lanes: dict[int, int] = {}
            for ns in dev.node_stats:
                if ns.thread_id not in lanes:
                    lanes[ns.thread_id] = len(lanes)
                    thread = dev.thread_names.get(ns.thread_id, f"thread {ns.thread_id}")
                    trace.emit_tid(thread, pid, lanes[ns.thread_id])
                tid = lanes[ns.thread_id]
                name, op, inputs = _parse_label(ns.timeline_label)
                args = {"name": ns.node_name, "op": op}
                for i, inp in enumerate(inputs):
                    args[f"input{i}"] = inp
                trace.emit_region(ns.all_start_micros, max(ns.all_end_rel_micros, 1), pid,
                                  tid, "Op", op, args)
                events.append((dev.device, pid, tid, ns, op, inputs))
        if show_dataflow:
            _emit_flows(trace, events)
        maximums = _memory(trace, self._step_stats, show_memory)
        return StepStatsAnalysis(trace, maximums)


def _end(ns) -> int:
    return ns.all_start_micros + max(ns.all_end_rel_micros, 1)


def _emit_flows(trace: _ChromeTraceFormatter, events: list) -> None:
    flow_id = 0
    produced: dict[str, tuple[int, int, int]] = {}  # tensor name -> (end ts, pid, tid)
    sends: dict[tuple[str, str, str], collections.deque] = {}
    for device, pid, tid, ns, op, inputs in events:
        for out in ns.output:
            name = ns.node_name if out.slot == 0 else f"{ns.node_name}:{out.slot}"
            produced[name] = (_end(ns) - 1, pid, tid)
        if op in ("_Send", "_HostSend") and inputs:
            m = _TRANSFER.match(inputs[0])
            if m:
                key = (m.group(1), device, m.group(2))
                # The Recv may complete inside the Send: the arrow leaves the Send's start.
                sends.setdefault(key, collections.deque()).append(
                    (ns.all_start_micros, pid, tid))
    for device, pid, tid, ns, op, inputs in sorted(events, key=lambda e: e[3].all_start_micros):
        if op in ("_Recv", "_HostRecv"):
            m = _TRANSFER.match(inputs[0]) if inputs else None
            queue = sends.get((m.group(1), m.group(2), device)) if m else None
            if queue:
                trace.emit_flow(m.group(1), queue.popleft(), (_end(ns) - 1, pid, tid), flow_id)
                flow_id += 1
            continue
        for inp in inputs:
            if inp.startswith("^") or inp not in produced:
                continue
            src = produced[inp]
            if src[1] != pid or src[2] != tid:
                trace.emit_flow(inp, src, (ns.all_start_micros, pid, tid), flow_id)
                flow_id += 1


def _memory(trace: _ChromeTraceFormatter, step_stats, show: bool) -> dict:
    samples: dict[str, list[tuple[int, int, str]]] = {}
    for dev in step_stats.dev_stats:
        for ns in dev.node_stats:
            for mem in ns.memory:
                samples.setdefault(mem.allocator_name, []).append(
                    (_end(ns), mem.allocator_bytes_in_use, ns.node_name))
    maximums = {}
    for allocator, points in samples.items():
        points.sort()
        best = AllocationMaximum(timestamp=0, num_bytes=0, tensors=set())
        for ts, in_use, node in points:
            if show:
                trace.emit_counter("Memory", allocator, 0, ts, allocator, in_use)
            if in_use > best.num_bytes:
                best = AllocationMaximum(timestamp=ts, num_bytes=in_use, tensors={node})
        maximums[allocator] = best
    return maximums
