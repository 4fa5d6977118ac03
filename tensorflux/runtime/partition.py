"""Partitioning: one subgraph per device, cross-device edges replaced by _Send/_Recv pairs.

Rules (paper §3.3, whitepaper §3.2.2, §5.2, §5.5):
- Every data edge whose endpoints sit on different devices becomes `src -> _Send` on the
  producer's device and `_Recv -> dst` on the consumer's. There is exactly one _Send/_Recv
  pair per (tensor, destination device): all consumers on that device share the _Recv, so a
  tensor crosses to a device once.
- A cross-device control edge becomes a _Send of a tiny dummy constant that waits on the
  source, and a _Recv on the destination device that the consumer waits on (one per
  (source node, destination device)).
- Each pair shares a rendezvous key built from the attrs `send_device`,
  `send_device_incarnation`, `recv_device` and `tensor_name` (plus the frame and iteration at
  run time), so the same partitions work with a local or a remote Rendezvous.
- Lossy transfers (`enable_bfloat16_sendrecv`): a float32 edge is cast to bfloat16 by a Cast
  on the producer's device before its _Send, and back to float32 by a Cast after the _Recv;
  consumers read the widened value.
- While loops spanning devices: every device that receives tensors living in a loop frame
  gets its own control loop for that frame, driven by the loop's LoopCond (see
  `_ControlLoops`), so its _Recvs run once per iteration.
- Recv scheduling (`enable_recv_scheduling`, graphs without control flow): a _Recv would
  otherwise start with the step and hold its tensor from the moment it arrives. The
  critical path is analysed ALAP (as late as possible start times from the cost model's
  estimates) and the _Recv gets a control edge from the latest node on its device that is
  an ancestor of its consumers, finishes before the consumers' ALAP start minus the
  transfer time, and is not reachable from the tensor's producer (checked on the whole
  placed graph, so across devices too). The added edge only delays the _Recv behind work
  its consumers wait for anyway, and never closes a cycle: a cycle would need a path from
  the _Recv, hence from the producer, back to the anchor.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from tensorflux.framework import dtypes, errors, graph_io, op_registry
from tensorflux.framework import graph as graph_lib
from tensorflux.protos import node_def_pb2
from tensorflux.runtime import frame_analysis
from tensorflux.runtime.device import DeviceMgr
from tensorflux.runtime.frame_analysis import flow_kind, is_control_flow
from tensorflux.runtime.step_graph import Node, StepGraph, topological_order

_MAX_ANCESTORS = 10_000  # per _Recv, when searching for the node it should wait for
_MAX_SCHEDULED_NODES = 20_000  # recv scheduling keeps a reachability bitset per node


@dataclass
class Partition:
    device: str
    nodes: list[Node] = field(default_factory=list)
    args: list[tuple[int, Node]] = field(default_factory=list)  # (feed index, _Arg node)
    fetches: list[tuple[int, Node, int]] = field(default_factory=list)  # (fetch pos, node, out)
    targets: list[Node] = field(default_factory=list)


def partition(sg: StepGraph, device_mgr: DeviceMgr, bfloat16_sendrecv: bool = False,
              recv_scheduling: bool = False, costs=None,
              group_control: bool = False) -> dict[str, Partition]:
    """Splits the placed `sg` into one Partition per device, in place.

    Args:
      sg: a placed StepGraph (every node has `device`); its nodes' inputs are rewritten.
      device_mgr: the session's devices (for incarnations).
      bfloat16_sendrecv: cast float32 transfers to bfloat16 and back.
      recv_scheduling: delay each _Recv behind a node on its device (see the module
        docstring); needs `costs`.
      costs: a `cost_model.StepCosts` for the ALAP analysis.
      group_control: a node's control inputs from another device, when there are several,
        cross as one transfer (`_group_control_edges`; graphs without control flow).

    Returns:
      Device name -> Partition, in the order devices first appear in `sg`.
    """
    parts: dict[str, Partition] = {}
    for n in sg.nodes:
        if n.device not in parts:
            parts[n.device] = Partition(n.device)
    anchors = {}
    control_flow = any(is_control_flow(n.op) for n in sg.nodes)
    if recv_scheduling and costs is not None and not control_flow:
        anchors = _recv_anchors(sg, costs)
    if group_control and not control_flow:
        _group_control_edges(sg)
    loops = None
    if control_flow:
        loops = _ControlLoops(sg)
        loops.add_loops()
    builder = _Builder(device_mgr, bfloat16_sendrecv)
    for n in list(sg.nodes):
        n.inputs = [(builder.recv_for(src, idx, n.device, False), 0)
                    if src.device != n.device else (src, idx) for src, idx in n.inputs]
        n.control_inputs = [c if c.device == n.device else
                            builder.recv_for(c, 0, n.device, True)
                            for c in n.control_inputs]
    for (src, idx, dst_device), anchor in anchors.items():
        recv = builder.recvs.get((src, idx, dst_device))
        if recv is not None:
            recv[1].control_inputs.append(anchor)
    if loops is not None:
        for (src, _, dst_device), (_, recv) in builder.recvs.items():
            anchor = loops.anchor(src, dst_device)
            if anchor is not None:  # the _Recv runs in the iterations its tensor is sent in
                recv.control_inputs.append(anchor)
    original = list(sg.nodes)
    for n in builder.new_nodes:
        sg.add(n)
    # Partition order: the receiving side of each transfer first (they are roots), and the
    # sending side right after its producer, so a schedule that follows node order (the
    # static executor's topological sort breaks ties by position) sends each tensor as
    # soon as it exists instead of after the rest of the partition.
    for n in builder.receiving:
        parts[n.device].nodes.append(n)
    for n in original:
        parts[n.device].nodes.append(n)
        for m in builder.sending.get(n, ()):
            parts[m.device].nodes.append(m)
    for i, a in enumerate(sg.args):
        parts[a.device].args.append((i, a))
    for pos, (n, idx) in enumerate(sg.fetches):
        parts[n.device].fetches.append((pos, n, idx))
    for n in sg.targets:
        parts[n.device].targets.append(n)
    return parts


def _group_control_edges(sg: StepGraph) -> None:
    """Gives each node's control inputs from one other device, when there are two or more,
    one NoOp on that device that waits for them all, and the node that NoOp instead: one
    control transfer per (node, device) instead of one per input (an optimizer's update
    ops on a parameter server and the train op on the worker: 9 transfers become 1). The
    node waits for exactly what it waited for; a dead input makes the NoOp dead, hence the
    node too, as before. Nodes with the same inputs from a device share the NoOp."""
    gates: dict[tuple, Node] = {}
    for n in list(sg.nodes):
        remote: dict[str, list[Node]] = {}
        for c in n.control_inputs:
            if c.device != n.device:
                remote.setdefault(c.device, []).append(c)
        for device, srcs in remote.items():
            if len(srcs) < 2:
                continue
            key = (device, frozenset(srcs))
            gate = gates.get(key)
            if gate is None:
                gate = Node(f"{n.name}/_ctrl_group_from_{_short(device)}", "NoOp", {}, [],
                            srcs, [])
                gate.device = device
                gates[key] = sg.add(gate)
            grouped = set(srcs)
            n.control_inputs = [c for c in n.control_inputs if c not in grouped] + [gate]


class _Builder:
    """Creates the _Send/_Recv pairs (and casts, and control dummies), one per destination."""

    def __init__(self, device_mgr: DeviceMgr, bfloat16: bool):
        self.device_mgr = device_mgr
        self.bfloat16 = bfloat16
        # (src, output or -1 for control, dst device) -> (node consumers read, the _Recv)
        self.recvs: dict[tuple[Node, int, str], tuple[Node, Node]] = {}
        self.new_nodes: list[Node] = []
        self.sending: dict[Node, list[Node]] = {}  # producer -> its dummies, casts, _Sends
        self.receiving: list[Node] = []  # _Recvs and the casts after them

    def _new(self, node: Node, device: str, after: Node | None = None) -> Node:
        node.device = device
        self.new_nodes.append(node)
        if after is None:
            self.receiving.append(node)
        else:
            self.sending.setdefault(after, []).append(node)
        return node

    def recv_for(self, src: Node, idx: int, dst_device: str, control: bool):
        """The node (and its output 0) that consumers on `dst_device` read `src:idx` from."""
        key = (src, -1 if control else idx, dst_device)
        found = self.recvs.get(key)
        if found is not None:
            return found[0]
        incarnation = self.device_mgr.lookup(src.device).incarnation
        tag = "ctrl" if control else str(idx)
        dst = _short(dst_device)
        edge = f"edge_{src.id}_{src.name}_{tag}"
        common = {"tensor_name": edge, "send_device": src.device, "recv_device": dst_device,
                  "send_device_incarnation": incarnation, "client_terminated": False}
        dtype = dtypes.float32 if control else src.output_dtypes[idx]
        if control:
            dummy = self._new(Node(f"{src.name}/_ctrl_dummy_to_{dst}", "Const",
                                   {"dtype": dtype, "value": np.zeros((), np.float32)}, [],
                                   [src], [dtype]), src.device, src)
            source: tuple[Node, int] = (dummy, 0)
        else:
            source = (src, idx)
        cast = self.bfloat16 and not control and dtype is dtypes.float32
        wire = dtypes.bfloat16 if cast else dtype
        if cast:
            narrow = self._new(Node(f"{src.name}/_bf16_{tag}_to_{dst}", "Cast",
                                    _cast_attrs(dtypes.float32, dtypes.bfloat16), [source], [],
                                    [wire]), src.device, src)
            source = (narrow, 0)
        self._new(Node(f"{src.name}/_send_{tag}_to_{dst}", "_Send", {"T": wire, **common},
                       [source], [], []), src.device, src)
        recv = self._new(Node(f"{src.name}/_recv_{tag}_on_{dst}", "_Recv",
                              {"tensor_type": wire, **common}, [], [], [wire]), dst_device)
        out = recv
        if cast:
            out = self._new(Node(f"{src.name}/_f32_{tag}_on_{dst}", "Cast",
                                 _cast_attrs(dtypes.bfloat16, dtypes.float32), [(recv, 0)], [],
                                 [dtypes.float32]), dst_device)
        self.recvs[key] = (out, recv)
        return out


# ------------------------------------------------------------------------------------------
# While loops that span devices (per-device control loops).


class _ControlLoop:
    """The nodes of one frame's control loop on one device."""

    __slots__ = ("enter", "merge", "switch", "pivot", "next_iteration", "exit")


class _ControlLoops:
    """Per-device control loops for while-loop frames whose nodes sit on several devices.

    The executor of a partition runs a node once per loop iteration only if the node is
    in the loop's frame on that partition, i.e. reached from one of the frame's Enter nodes
    there, and only in the iterations that partition's NextIteration nodes create. A _Recv
    has no inputs, so a device that only receives a frame's tensors would run its _Recvs
    once, in the root frame; a device whose frame nodes hang off loop invariants only
    (constant Enters) would run them in iteration 0 only. So every device holding nodes of
    a frame that spans devices gets its own control loop for it, as TensorFlow's
    partitioner does:

        Const (the parent frame's loop pivot as control input, if the frame is nested)
          -> Enter(frame) -> Merge <- NextIteration <- Identity (the pivot)
                               -> Switch(Merge, LoopCond) -> output_true: the pivot
                                                          -> output_false: Exit

    The frame's LoopCond is used directly on its own device and reaches the others through
    an ordinary Send/Recv inside the frame. Each iteration, the loop's Merge fires once;
    every _Recv of a tensor living in the frame gets a control input from the loop (see
    `anchor`), so it runs once in each iteration its tensor is sent in, with that
    iteration's rendezvous key (frame ids and iteration numbers agree across partitions by
    construction). When the LoopCond is false the Switch sends the pivot a dead value, the
    NextIteration stops, and the Exit closes the frame.
    """

    def __init__(self, sg: StepGraph):
        self.sg = sg
        self.cond: dict[str, Node] = {}
        self.parallel: dict[str, int] = {}
        self.loops: dict[tuple[str, str], _ControlLoop] = {}
        try:  # the one frame analysis, on the whole placed graph
            frames = frame_analysis.analyze(sg.nodes)
        except errors.InvalidArgumentError:  # malformed: each partition's executor reports it
            self.frame: dict[Node, str] = {}
            self.parent: dict[str, str | None] = {"": None}
            return
        self.frame = dict(frames.frame_of)  # grows with the control loops' nodes
        self.parent = frames.parent
        for n in frames.frame_of:  # in the analysis's (breadth-first) order
            if flow_kind(n.op) == "enter":
                self.parallel.setdefault(n.attrs["frame_name"],
                                         int(n.attrs.get("parallel_iterations") or 10))
            elif n.op == "LoopCond":
                self.cond.setdefault(self.frame[n], n)

    def out_frame(self, n: Node) -> str:
        """The frame the outputs of `n` live in ("" for the root frame)."""
        frame = self.frame.get(n, "")
        kind = flow_kind(n.op)
        if kind == "enter":
            return n.attrs["frame_name"]
        if kind == "exit":
            return self.parent.get(frame) or ""
        return frame

    def add_loops(self) -> None:
        """Control loops for every frame that spans devices, on each device holding its
        nodes or receiving tensors that live in it. (All are made before the edges are
        split: a control loop's own LoopCond edge may cross devices too.)"""
        devices: dict[str, set[str]] = {}
        for n in self.sg.nodes:
            frame = self.frame.get(n, "")
            if frame:
                devices.setdefault(frame, set()).add(n.device)
            for src in [s for s, _ in n.inputs] + n.control_inputs:
                if src.device != n.device and self.out_frame(src):
                    devices.setdefault(self.out_frame(src), set()).update(
                        (src.device, n.device))
        for frame, on in devices.items():
            if len(on) > 1 and frame in self.cond:
                for device in sorted(on):
                    self.loop_on(device, frame)

    def anchor(self, src: Node, device: str) -> Node | None:
        """The node of `device`'s control loop that a _Recv of `src`'s output waits for,
        so that it runs in exactly the iterations the output is sent in: the loop's Enter
        for a (non-constant) Enter's output (iteration 0), its NextIteration for a
        NextIteration's output (iterations 1, 2, ...), its Merge otherwise (every
        iteration). None in the root frame."""
        frame = self.out_frame(src)
        loop = self.loops.get((device, frame)) if frame else None
        if loop is None:
            return None
        kind = flow_kind(src.op)
        if kind == "enter" and not src.attrs.get("is_constant"):
            return loop.enter
        if kind == "next_iteration":
            return loop.next_iteration
        return loop.merge

    def loop_on(self, device: str, frame: str) -> _ControlLoop:
        """The control loop of `frame` on `device` (created, with its parents', on demand)."""
        loop = self.loops.get((device, frame))
        if loop is not None:
            return loop
        parent = self.parent.get(frame) or ""
        anchor = [self.loop_on(device, parent).pivot] if parent else []
        cond = self.cond[frame]
        f32 = dtypes.float32
        base = f"{frame}/_ctrl_loop_on_{_short(device)}"
        loop = _ControlLoop()

        def add(name, op, attrs, inputs, outputs, control=()):
            node = Node(f"{base}/{name}", op, attrs, inputs, list(control), outputs)
            node.device = device
            self.sg.add(node)
            return node

        seed = add("seed", "Const", {"dtype": f32, "value": np.zeros((), np.float32)}, [],
                   [f32], anchor)
        loop.enter = add("enter", "Enter", {"T": f32, "frame_name": frame, "is_constant": False,
                                            "parallel_iterations": self.parallel.get(frame, 10)},
                         [(seed, 0)], [f32])
        loop.merge = add("merge", "Merge", {"T": f32, "N": 2}, [(loop.enter, 0)],
                         [f32, dtypes.int32])
        loop.switch = add("switch", "Switch", {"T": f32}, [(loop.merge, 0), (cond, 0)],
                          [f32, f32])
        loop.pivot = add("pivot", "Identity", {"T": f32}, [(loop.switch, 1)], [f32])
        loop.next_iteration = add("next_iteration", "NextIteration", {"T": f32},
                                  [(loop.pivot, 0)], [f32])
        loop.merge.inputs.append((loop.next_iteration, 0))
        loop.exit = add("exit", "Exit", {"T": f32}, [(loop.switch, 0)], [f32])
        for node, frame_of in ((seed, parent), (loop.enter, parent), (loop.merge, frame),
                               (loop.switch, frame), (loop.pivot, frame),
                               (loop.next_iteration, frame), (loop.exit, frame)):
            self.frame[node] = frame_of
        self.loops[(device, frame)] = loop
        return loop


def _cast_attrs(src: dtypes.DType, dst: dtypes.DType) -> dict:
    return {"SrcT": src, "DstT": dst, "Truncate": False}


def _short(device: str) -> str:
    """`/job:localhost/replica:0/task:0/device:CPU:1` -> `CPU_1`, `/job:ps/replica:0/
    task:2/device:CPU:0` -> `ps_2_CPU_0` (readable node names, unique per device)."""
    task, _, tail = device.rpartition("/device:")
    tail = tail.replace(":", "_")
    if task and not task.startswith("/job:localhost/replica:0/task:0"):
        fields = dict(p.split(":", 1) for p in task.strip("/").split("/") if ":" in p)
        tail = f"{fields.get('job', '')}_{fields.get('task', '0')}_{tail}"
    return tail


# ------------------------------------------------------------------------------------------
# Recv scheduling (whitepaper §5.2).


def _alap_starts(sg: StepGraph, costs) -> tuple[dict[Node, float], dict[Node, float]]:
    """(ALAP start, compute time) per node: start = makespan - longest path from the node's
    start to the end of the step, transfers included."""
    consumers = sg.consumers()
    compute = {n: costs.compute_micros(n, _device_type(n.device)) for n in sg.nodes}
    tail: dict[Node, float] = {}
    model = costs.model
    latency = model.params.transfer_latency_us
    for n in reversed(_order(sg.nodes)):
        rest = 0.0
        for c in consumers[n]:
            hop = 0.0
            if c.device != n.device:
                hop = latency + sum(costs.output_bytes(n, i) for s, i in c.inputs if s is n) \
                    / model.params.local_bytes_per_us
            rest = max(rest, hop + tail[c])
        tail[n] = compute[n] + rest
    makespan = max(tail.values(), default=0.0)
    return {n: makespan - t for n, t in tail.items()}, compute


def _order(nodes: list[Node]) -> list[Node]:
    return topological_order(nodes, skip_back_edges=True)[0]


def _device_type(device: str) -> str:
    return device.rsplit("/device:", 1)[-1].split(":")[0]


def _descendants(sg: StepGraph) -> tuple[dict[Node, int], dict[Node, int]]:
    """(reachable, bit): per node, a bitset (int) of the nodes reachable from it, itself
    included, and the node's own bit (its position in topological order)."""
    order = _order(sg.nodes)
    bit = {n: 1 << k for k, n in enumerate(order)}
    consumers = sg.consumers()
    desc: dict[Node, int] = {}
    for n in reversed(order):
        d = bit[n]
        for c in consumers[n]:
            d |= desc.get(c, 0)  # absent: a loop back edge (not scheduled anyway)
        desc[n] = d
    return desc, bit


def _recv_anchors(sg: StepGraph, costs) -> dict[tuple[Node, int, str], Node]:
    """(src, output, destination device) -> the node its _Recv should wait for."""
    if len(sg.nodes) > _MAX_SCHEDULED_NODES:
        return {}
    start, compute = _alap_starts(sg, costs)
    desc, bit = _descendants(sg)
    edges: dict[tuple[Node, int, str], list[Node]] = {}
    for n in sg.nodes:
        for src, idx in n.inputs:
            if src.device != n.device:
                edges.setdefault((src, idx, n.device), []).append(n)
    model = costs.model
    anchors = {}
    for (src, idx, dst), users in edges.items():
        hop = model.params.transfer_latency_us + costs.output_bytes(src, idx) / \
            model.params.local_bytes_per_us
        target = min(start[u] for u in users) - hop
        below = desc[src]  # nodes that may wait for this tensor: never an anchor
        best, best_end = None, -1.0
        seen: set[Node] = set(users)
        stack = [p for u in users for p in _same_device_preds(u, src)]
        while stack and len(seen) < _MAX_ANCESTORS:
            p = stack.pop()
            if p in seen:
                continue
            seen.add(p)
            end = start[p] + compute[p]
            if end <= target and end > best_end and not below & bit[p]:
                best, best_end = p, end
            stack.extend(_same_device_preds(p, None))
        if best is not None:
            anchors[(src, idx, dst)] = best
    return anchors


def _same_device_preds(n: Node, skip: Node | None) -> list[Node]:
    preds = [s for s, _ in n.inputs if s is not skip] + [c for c in n.control_inputs
                                                          if c is not skip]
    return [p for p in preds if p.device == n.device]


# ---- partition graphs (RunOptions.output_partition_graphs) ------------------------------

def _fill_from_node(nd: node_def_pb2.NodeDef, node: Node) -> None:
    graph_io.fill_node_def(nd, node.name, node.op, node.device, node.attrs,
                           op_registry.lookup(node.op),
                           ((src.name, idx) for src, idx in node.inputs),
                           (c.name for c in node.control_inputs))


def step_node_def(node: Node) -> node_def_pb2.NodeDef:
    """A runtime `step_graph.Node` as a NodeDef, its device being the assigned one."""
    nd = node_def_pb2.NodeDef()
    _fill_from_node(nd, node)
    return nd


@functools.lru_cache(maxsize=1)
def _default_versions():
    return graph_lib.Graph().graph_def_versions


def fill_partition_graphs(run_metadata, partitions: Mapping[str, Partition]) -> None:
    """Puts one GraphDef per device partition into `run_metadata.partition_graphs`.

    What was there before is replaced: TensorFlow fills `run_metadata` afresh on every run,
    so a RunMetadata reused across runs shows the partition graphs of the last one.

    Args:
      run_metadata: a `config_pb2.RunMetadata`.
      partitions: device name -> `Partition`, in the order to write them.
    """
    del run_metadata.partition_graphs[:]
    for part in partitions.values():
        gd = run_metadata.partition_graphs.add()
        gd.versions.CopyFrom(_default_versions())
        for node in part.nodes:
            _fill_from_node(gd.node.add(), node)
