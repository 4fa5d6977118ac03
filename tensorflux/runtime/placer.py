"""Placement: choose a device for every node of a StepGraph (paper §3.3; whitepaper §3.2.1,
§4.3).

1. Colocation groups by union-find: a node joins the groups named by its `_class`
   (`loc:@other`) attribute, and every consumer of a resource handle joins the group of the
   handle's producer (a variable's reads and updates run where the variable lives; a
   consumer whose requested device conflicts with the group's follows the resource, as in
   TensorFlow, so a worker's device scope does not pull a ps variable's reads off the ps).
2. Feasible devices per group: those matching every member's requested (partial) device
   spec, on which every member has a registered kernel. With `allow_soft_placement`, a group
   whose request cannot be met falls back to any device where all members have kernels.
   A group holding a stateful node placed by an earlier step of the session keeps that
   device (`pinned`): a variable must not move between steps.
   A group that a GPU can run goes to the first such GPU (TensorFlow's preference).
3. Choice, for groups left with several feasible devices: the greedy simulation of the
   whitepaper. Nodes are visited in topological order; each device is a serial processor
   with a time at which it becomes free. A node's estimated finish on device d is
       max(free[d], max over inputs (finish[input] + transfer(input bytes, its device, d)))
       + compute(node, d)
   (costs from `cost_model.StepCosts`: measured when a traced step has measured them,
   static estimates otherwise). The first node of a group reached decides the group's
   device: the one with the earliest finish, except that the device favoured by its inputs
   (the one holding most of their bytes, or the first feasible device when it has none)
   keeps the node unless another finishes it more than `switch_margin_us` sooner. So cheap
   work stays together on the first device, and heavy independent work spreads out.
   Groups with one feasible device are simply simulated there. When every kernel already
   spreads over all cores (ConfigProto.intra_op_parallelism_threads other than 1), the CPU
   devices of a task share one timeline, so the model spreads nothing across them: they
   would only compete for the same cores.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from tensorflux.framework import device_spec as device_spec_lib
from tensorflux.framework import dtypes, errors, op_registry
from tensorflux.kernels import registry as kernel_registry
from tensorflux.runtime.cost_model import CostModel, StepCosts
from tensorflux.runtime.device import Device, DeviceMgr
from tensorflux.runtime.step_graph import Node, StepGraph, dependencies

_FIELD_WORDS = {"job": "jobs", "replica": "replicas", "task": "tasks",
                "device_type": "types", "device_index": "ids"}


@dataclass
class Placement:
    """What the placer decided, for tests and the session.

    Attributes:
      has_choices: some group had more than one feasible device (the cost model chose).
      makespan_us: the simulated step time (0 when nothing was simulated).
      device_busy_us: device name -> simulated busy time.
    """

    has_choices: bool = False
    makespan_us: float = 0.0
    device_busy_us: dict | None = None


class _UnionFind:
    def __init__(self, nodes):
        self.parent = {n: n for n in nodes}

    def find(self, n):
        while self.parent[n] is not n:
            self.parent[n] = self.parent[self.parent[n]]
            n = self.parent[n]
        return n

    def union(self, a, b) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            if ra.id < rb.id:
                self.parent[rb] = ra
            else:
                self.parent[ra] = rb


class GraphColocation:
    """Colocation groups of the whole user graph, kept up to date as ops are added.

    A step graph is pruned, so two nodes can be linked only through nodes another step
    runs: Adam's update of `w` reads `beta1_power` inside `colocate_with(w)`, so `w` and
    `beta1_power` belong together, but the initializer step sees neither link. TensorFlow
    places the whole graph for this reason; here every step's groups are merged along the
    groups of the whole graph (`root`), so stateful nodes land consistently in all steps.
    The graph only grows, so new ops are folded in incrementally; a mutation of existing
    ops (`_mutation_version`) recomputes from scratch.
    """

    def __init__(self, graph):
        self._graph = graph
        self._parent: dict[str, str] = {}
        self._seen = 0
        self._version = graph._mutation_version

    def _find(self, name: str) -> str:
        parent = self._parent
        root = name
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(name, name) != root:
            parent[name], name = root, parent[name]
        return root

    def _union(self, a: str, b: str) -> None:
        ra, rb = self._find(a), self._find(b)
        if ra != rb:
            self._parent[rb] = ra

    def update(self) -> None:
        graph = self._graph
        if graph._mutation_version != self._version:
            self._parent, self._seen = {}, 0
            self._version = graph._mutation_version
        ops = graph._ops
        for op in ops[self._seen:]:
            for c in op._attrs.get("_class", ()):
                if isinstance(c, bytes):
                    c = c.decode()
                if c.startswith("loc:@"):
                    self._union(c[5:], op._name)
            for t in op._inputs:
                if t._dtype is dtypes.resource and t._op._type != "Placeholder":
                    self._union(t._op._name, op._name)
        self._seen = len(ops)

    def root(self, name: str) -> str | None:
        """The group of op `name` (None when it is alone)."""
        root = self._find(name)
        return None if root == name and name not in self._parent else root


def _colocation_groups(sg: StepGraph,
                       graph_groups: GraphColocation | None = None) -> list[list[Node]]:
    uf = _UnionFind(sg.nodes)
    by_name = {n.name: n for n in sg.nodes}
    for n in sg.nodes:
        for other in n.colocation:
            if other in by_name:
                uf.union(n, by_name[other])
        for src, i in n.inputs:
            dt = src.output_dtypes[i]
            if (dt is dtypes.resource or dt._is_ref_dtype) and src.op != "_Arg":
                uf.union(n, src)
    if graph_groups is not None:
        graph_groups.update()
        first: dict[str, Node] = {}
        for n in sg.nodes:
            root = graph_groups.root(n.name)
            if root is not None:
                uf.union(n, first.setdefault(root, n))
    groups: dict[Node, list[Node]] = {}
    for n in sg.nodes:
        groups.setdefault(uf.find(n), []).append(n)
    return list(groups.values())


def _follows_a_resource(n: Node) -> bool:
    """Whether `n` consumes a resource handle or a TF1 variable's ref made in the step (a
    read or an update): TensorFlow ignores the device such a consumer asks for ("the input
    edge ... is a reference connection and already has a device field set")."""
    for src, i in n.inputs:
        dt = src.output_dtypes[i]
        if (dt is dtypes.resource or dt._is_ref_dtype) and src.op != "_Arg":
            return True
    return False


def _merged_request(group: list[Node], allow_soft: bool) -> str:
    """The merged device spec of a group; InvalidArgumentError if two requests conflict.

    A consumer of a resource whose request conflicts with the group's follows the resource
    instead, as in TensorFlow: a variable read or update built under another device scope
    (e.g. a worker's, under `replica_device_setter`) runs where the variable lives. The
    requests of the other members are merged first, so they decide.
    """
    followers = [n for n in group if n.requested_device and _follows_a_resource(n)]
    leaders = [n for n in group if n.requested_device and not _follows_a_resource(n)]
    merged = first = None
    for n in leaders + followers:
        spec = device_spec_lib.DeviceSpecV2.from_string(n.requested_device)
        if merged is None:
            merged, first = spec, n
            continue
        conflict = _conflicting_field(merged, spec)
        if conflict is None:
            merged = merged.make_merged_spec(spec)
        elif not allow_soft and n in leaders:
            raise errors.InvalidArgumentError(
                None, None,
                f"Cannot colocate nodes {{{{colocation_node {n.name}}}}} and "
                f"{{{{colocation_node {first.name}}}}}: Cannot merge devices with "
                f"incompatible {conflict}: '{spec.to_string()}' and "
                f"'{merged.to_string()}'")
    return merged.to_string() if merged is not None else ""


def _conflicting_field(a, b) -> str | None:
    """The plural word of the first field two device specs set differently, or None."""
    for field, word in _FIELD_WORDS.items():
        x, y = getattr(a, field), getattr(b, field)
        if x is not None and y is not None and x != y:
            return word
    return None


def _supports(device: Device, group: list[Node]) -> bool:
    return all(kernel_registry.find_kernel(n.op, device.device_type, n.attrs) is not None
               for n in group)


def _is_stateful(n: Node) -> bool:
    opdef = op_registry.lookup(n.op)
    return opdef is not None and opdef.is_stateful


def _feasible(group: list[Node], ordered: list[Device], host: Device, allow_soft: bool,
              pinned: dict[str, str], devices: list[Device],
              default_task: str | None = None) -> list[Device]:
    """The devices a group may go to, in preference order (a request naming no job is
    completed with `default_task`'s job, replica and task)."""
    if all(n.op == "_Arg" for n in group):
        return [host]
    pins = {n: pinned[n.name] for n in group if n.name in pinned}
    if pins:
        (first, device), *rest = pins.items()
        other = next(((n, d) for n, d in rest if d != device), None)
        if other is not None:
            raise errors.InvalidArgumentError(
                None, None, f"Cannot colocate nodes {{{{colocation_node {first.name}}}}} and "
                f"{{{{colocation_node {other[0].name}}}}}: stateful nodes placed on "
                f"'{device}' and '{other[1]}' by earlier steps of this session must stay "
                "there.")
        pin = next((d for d in ordered if d.name == device), None)
        if pin is not None:
            return [pin]
    request = _merged_request(group, allow_soft)
    if default_task and (not request or
                         device_spec_lib.DeviceSpecV2.from_string(request).job is None):
        default = device_spec_lib.DeviceSpecV2.from_string(default_task)
        request = device_spec_lib.fill_defaults(request or None, default.job, default.replica,
                                                default.task).to_string()
    matching = [d for d in ordered if device_spec_lib.is_compatible(request, d.name)] \
        if request else ordered
    feasible = [d for d in matching if _supports(d, group)]
    if not feasible and allow_soft:
        feasible = [d for d in ordered if _supports(d, group)]
    if not feasible:
        raise _placement_error(group, request, matching, devices)
    if feasible[0].device_type == "GPU":
        # TensorFlow's preference, not a cost estimate: work that a GPU can run goes to
        # the first such GPU.
        return feasible[:1]
    return feasible


def place(sg: StepGraph, device_mgr: DeviceMgr, allow_soft_placement: bool = False,
          log_device_placement: bool = False, costs: StepCosts | None = None,
          pinned: dict[str, str] | None = None,
          graph_groups: GraphColocation | None = None,
          default_task: str | None = None) -> Placement:
    """Sets `node.device` (a full device name) for every node of `sg`.

    Args:
      sg: the step graph (optimized, not yet partitioned).
      device_mgr: the session's devices.
      allow_soft_placement: fall back to any device with kernels when a request cannot be met.
      log_device_placement: print `name: (Op): device` per node, as TensorFlow does.
      costs: the step's StepCosts (static estimates of a fresh CostModel when None).
      pinned: node name -> device of stateful nodes placed by earlier steps; read, and
        updated with this step's stateful nodes.
      graph_groups: the colocation groups of the whole graph (see GraphColocation).
      default_task: in a cluster, the task (`/job:J/replica:R/task:T`) that nodes whose
        request names no job run on (TensorFlow places them on the master's task).

    Returns:
      A Placement summary.

    Raises:
      InvalidArgumentError: naming the node and devices, when no device can run a node or
        the requests of a colocation group conflict.
    """
    devices = device_mgr.devices
    host = devices[0]
    ordered = [d for d in devices if d.device_type == "GPU"] + \
              [d for d in devices if d.device_type != "GPU"]
    pinned = {} if pinned is None else pinned
    groups = _colocation_groups(sg, graph_groups)
    candidates = [_feasible(g, ordered, host, allow_soft_placement, pinned, devices,
                            default_task) for g in groups]
    result = Placement(has_choices=any(len(c) > 1 for c in candidates))
    if result.has_choices:
        costs = costs or StepCosts(CostModel())
        chosen = _simulate(sg, groups, candidates, costs, ordered, host, result)
    else:
        chosen = [c[0] for c in candidates]
    chosen = _generators_with_consumers(sg, groups, chosen)
    for group, device in zip(groups, chosen, strict=True):
        for n in group:
            n.device = device.name
            if n.name not in pinned and _is_stateful(n):
                pinned[n.name] = device.name
    if log_device_placement:
        for n in sg.nodes:
            print(f"{n.name}: ({n.op}): {n.device}", flush=True)
    return result


def _generators_with_consumers(sg: StepGraph, groups, chosen) -> list:
    """TensorFlow's placer heuristic for generators: a node with no inputs (a constant)
    whose output has a single consumer, that asks for no device and could run on that
    consumer's device, goes there (a GPU-first rule would otherwise put the count of a
    queue's dequeue on the GPU and send it back to the CPU)."""
    consumers: dict[Node, list[Node]] = {}
    for n in sg.nodes:
        for src, _ in n.inputs:
            consumers.setdefault(src, []).append(n)
    where = {n: d for g, d in zip(groups, chosen, strict=True) for n in g}
    out = list(chosen)
    for k, group in enumerate(groups):
        if len(group) != 1:
            continue
        n = group[0]
        users = consumers.get(n, [])
        if n.inputs or n.control_inputs or n.requested_device or len(users) != 1 or \
                _is_stateful(n) or n.colocation:
            continue
        target = where[users[0]]
        if target is not out[k] and _supports(target, group):
            out[k] = where[n] = target
    return out


# ------------------------------------------------------------------------------------------
# The simulation (whitepaper §3.2.1).


class _Simulation:
    """Device timelines of the greedy placement (see the module docstring)."""

    def __init__(self, costs: StepCosts, devices: list[Device], host: Device):
        self.costs = costs
        params = costs.model.params
        # Which timeline (serial processor) each device runs on: its own, or, when kernels
        # already use all cores, one per task for all its CPU devices.
        self.timeline = {d: (("CPU", d.job, d.replica, d.task)
                             if params.cpu_devices_share_cores and d.device_type == "CPU"
                             else d) for d in devices}
        self.free = {self.timeline[d]: (0.0 if d is host else params.device_startup_us)
                     for d in reversed(devices)}
        self.busy = {d: 0.0 for d in devices}
        self.finish: dict[Node, float] = {}
        self.where: dict[Node, Device] = {}

    def ready_time(self, n: Node, d: Device) -> float:
        t = 0.0
        model = self.costs.model
        for src, i in n.inputs:
            done = self.finish.get(src)
            if done is None:
                continue  # a back edge
            src_dev = self.where[src]
            if src_dev is not d:
                done += model.transfer_micros(self.costs.output_bytes(src, i), src_dev, d)
            t = max(t, done)
        for src in n.control_inputs:
            done = self.finish.get(src)
            if done is None:
                continue
            if self.where[src] is not d:
                done += model.transfer_micros(0, self.where[src], d)
            t = max(t, done)
        return t

    def finish_on(self, n: Node, d: Device) -> float:
        start = max(self.free[self.timeline[d]], self.ready_time(n, d))
        return start + self.costs.compute_micros(n, d.device_type)

    def run(self, n: Node, d: Device) -> None:
        t = self.finish_on(n, d)
        self.busy[d] += self.costs.compute_micros(n, d.device_type)
        self.finish[n] = t
        self.free[self.timeline[d]] = t
        self.where[n] = d

    def favoured(self, n: Node, candidates: list[Device], consumer_devices) -> Device:
        """The candidate holding most bytes of `n`'s inputs; for a node without inputs
        (a constant, a variable handle), the device its consumers are bound to, if any;
        else the first candidate."""
        held: dict[Device, int] = {}
        for src, i in n.inputs:
            d = self.where.get(src)
            if d is not None and d in candidates:
                held[d] = held.get(d, 0) + self.costs.output_bytes(src, i) + 1
        if held:
            return max(candidates, key=lambda d: held.get(d, -1))
        if not n.inputs and not n.control_inputs:
            for d in consumer_devices:
                if d in candidates:
                    return d
        return candidates[0]


def _simulate(sg: StepGraph, groups: list[list[Node]], candidates: list[list[Device]],
              costs: StepCosts, ordered: list[Device], host: Device,
              result: Placement) -> list[Device]:
    """List scheduling: nodes are taken in the order they become ready in simulated time
    (ties by id), each placed as the module docstring says."""
    group_of = {n: k for k, g in enumerate(groups) for n in g}
    chosen: list[Device | None] = [c[0] if len(c) == 1 else None for c in candidates]
    sim = _Simulation(costs, ordered, host)
    margin = costs.model.params.switch_margin_us
    indegree, consumers = dependencies(sg.nodes, skip_back_edges=True)
    heap = [(0.0, n.id, n) for n in sg.nodes if indegree[n] == 0]
    heapq.heapify(heap)
    visited = 0
    while heap or visited < len(sg.nodes):
        if heap:
            _, _, n = heapq.heappop(heap)
        else:  # a cycle without a NextIteration: finish in id order
            n = next(m for m in sg.nodes if m not in sim.finish)
        visited += 1
        k = group_of[n]
        d = chosen[k]
        if d is None:
            cands = candidates[k]
            finish = {c: sim.finish_on(n, c) for c in cands}
            best = min(cands, key=lambda c: finish[c])  # ties: the earlier candidate
            bound = (chosen[group_of[c]] for c in consumers[n])
            pref = sim.favoured(n, cands, [b for b in bound if b is not None])
            d = pref if finish[pref] - finish[best] <= margin else best
            chosen[k] = d
        sim.run(n, d)
        for c in consumers[n]:
            indegree[c] -= 1
            if indegree[c] == 0:
                ready = max([sim.finish[s] for s, _ in c.inputs if s in sim.finish] +
                            [sim.finish[s] for s in c.control_inputs if s in sim.finish],
                            default=0.0)
                heapq.heappush(heap, (ready, c.id, c))
    result.makespan_us = max(sim.finish.values(), default=0.0)
    result.device_busy_us = {d.name: t for d, t in sim.busy.items()}
    return [d if d is not None else candidates[k][0] for k, d in enumerate(chosen)]


# ------------------------------------------------------------------------------------------
# Errors.


def _placement_error(group, request, matching, devices) -> errors.InvalidArgumentError:
    node = next((n for n in group if n.requested_device), group[0])
    names = ", ".join(d.name for d in devices)
    if not matching:
        msg = (f"Cannot assign a device for operation {node.name}: {{{{node {node.name}}}}} "
               f"was explicitly assigned to {request} but available devices are [ {names} ]. "
               "Make sure the device specification refers to a valid device.")
    else:
        kinds = sorted({d.device_type for d in matching})
        missing = next((n for n in group if not any(
            kernel_registry.find_kernel(n.op, k, n.attrs) for k in kinds)), node)
        dtype_info = {k: v.name for k, v in missing.attrs.items()
                      if isinstance(v, dtypes.DType)}
        msg = (f"Cannot assign a device for operation {missing.name}: Could not satisfy "
               f"explicit device specification '{request}' because no supported kernel for "
               f"{'/'.join(kinds)} devices is available (op {missing.op}"
               f"{', ' + str(dtype_info) if dtype_info else ''}). Devices matching the "
               f"specification: [ {', '.join(d.name for d in matching)} ].")
        if missing is not node:
            msg += f" The node is colocated with {node.name}."
    return errors.InvalidArgumentError(None, None, msg)
