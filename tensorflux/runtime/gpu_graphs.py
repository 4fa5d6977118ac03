"""When a step runs as one CUDA graph (kernels/gpu/graphs.py has the mechanics).

A step qualifies when its GPU work is one partition run by a StaticExecutor whose stateful
kernels are variable reads, assignments, gathers and dense optimizer updates (no random
numbers, queues or host state, whose effects a replay would not repeat), and whose other
partitions only send to it (they receive nothing from the GPU): the feeds, and host work
such as a queue's dequeue or a dataset iterator's next batch. Every run executes those
host partitions as usual first and takes what they send to the GPU (the "inputs": host
arrays); then, per signature of the inputs (shapes and dtypes):

1. the first run executes the GPU partition as usual;
2. the second executes it on the capture stream (a warm-up: cuDNN's algorithm search,
   kernel compilation and per-stream library state happen here);
3. the third captures it: the inputs are moved into fixed device buffers first (so no
   kernel reads them on the host), the GPU partition's kernels are recorded, and the graph
   is launched once. A capture that fails (a kernel needed a value on the host), or whose
   variables did not keep their buffers, gives the variables back their arrays, runs the
   partition as usual, and the signature stays kernel by kernel;
4. later runs copy the inputs into pinned buffers and launch the graph.

A replay first checks that every variable the step touched still holds the buffer it had
when captured (a re-initialization or a restore stores new arrays) and that no resource was
removed; if not, the graph is dropped and the signature starts over at 1.
"""

from __future__ import annotations

import logging
import threading
import weakref

import numpy as np

from tensorflux.framework import op_registry
from tensorflux.framework.rendezvous_key import create_key
from tensorflux.kernels.gpu import graphs
from tensorflux.kernels.registry import KernelContext
from tensorflux.runtime import static_executor
from tensorflux.runtime.rendezvous import LocalRendezvous

_log = logging.getLogger("tensorflux")

WARMUP_RUNS = 2
MAX_SIGNATURES = 4

# The stateful ops a captured partition may hold: their effects are on variables' buffers.
CAPTURABLE_STATEFUL = frozenset({
    "VarHandleOp", "ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp",
    "AssignSubVariableOp", "ResourceGather", "ResourceApplyGradientDescent",
    "ResourceApplyMomentum", "ResourceApplyAdam", "ResourceApplyAdagrad",
    "ResourceApplyRMSProp", "_Recv"})

_FAILED = object()


def for_runner(runner) -> StepGraphs | None:
    """The StepGraphs of a GraphRunner whose steps qualify (module docstring), or None."""
    if not graphs.enabled() or runner.plan.merged_order is not None:
        return None
    gpu = [p for p in runner.parts if p[0].device_type == "GPU"]
    if len(gpu) != 1 or not isinstance(gpu[0][1], static_executor.StaticExecutor):
        return None
    gpu_device = gpu[0][0]
    if getattr(gpu_device, "physical_index", 0) != 0:
        return None  # one capture stream, on the first GPU
    recv_keys = []
    for device, nodes, _, _ in runner._part_nodes:
        for n in nodes:
            if device is not gpu_device:
                if n.op == "_Recv":
                    return None  # host work that waits for the GPU: not before it
                continue
            if n.op in ("_Send", "_Arg"):
                return None
            opdef = op_registry.lookup(n.op)
            if opdef is None or (opdef.is_stateful and n.op not in CAPTURABLE_STATEFUL):
                return None
            if n.op == "_Recv":
                a = n.attrs
                recv_keys.append(create_key(a["send_device"], a["send_device_incarnation"],
                                            a["recv_device"], a["tensor_name"]))
    hosts = [p for p in runner.parts if p[0].device_type != "GPU"]
    return StepGraphs(gpu[0], hosts, recv_keys)


class _Entry:
    """One captured signature: its graph, fixed input buffers and what it holds."""

    __slots__ = ("graph", "feeds", "values", "held", "vars", "version", "__weakref__")

    def __init__(self, graph, feeds, values, held, var_pairs, version):
        self.graph, self.feeds, self.values = graph, feeds, values
        self.held, self.vars, self.version = held, var_pairs, version


class StepGraphs:
    """The captured graphs of one GraphRunner, by the signature of the GPU's inputs."""

    def __init__(self, gpu_part, hosts, recv_keys):
        self.device, self.executor, self.positions = gpu_part
        self.hosts = hosts
        self.recv_keys = recv_keys
        self._mech = None
        self._entries: dict = {}
        self._seen: dict = {}
        self._lock = threading.Lock()
        self.captures = 0
        self.replays = 0
        self.failures: list[str] = []

    def run(self, runner, session, step_id, args, options, deadline, cancellation):
        """Runs the step; its fetched values (host arrays, in the runner's fetch order)."""
        out = [None] * runner.num_fetches
        inputs = self._run_hosts(session, step_id, args, options, deadline, cancellation,
                                 out)
        sig = _signature(inputs)
        with self._lock:
            values = self._run_gpu(sig, inputs, session, step_id, options, deadline)
        for pos, v in zip(self.positions, values, strict=True):
            out[pos] = v
        return out

    # ---- the host partitions ---------------------------------------------------------

    def _context(self, device, step_id, args, rendezvous, session, options, deadline,
                 cancellation=None):
        ctx = KernelContext(step_id, device, rendezvous, cancellation, args, device.runner,
                            session, options)
        ctx.deadline = deadline
        return ctx

    def _run_hosts(self, session, step_id, args, options, deadline, cancellation, out):
        """Runs the host partitions; [(value, is_dead)] they sent to the GPU, in the order
        of `recv_keys`."""
        rendezvous = LocalRendezvous()
        for device, ex, positions in self.hosts:
            ctx = self._context(device, step_id, args, rendezvous, session, options,
                                deadline, cancellation)
            with device.compute_scope():
                values = ex.run(ctx, deadline)
            for pos, v in zip(positions, values, strict=True):
                out[pos] = device.to_host(v)
        return [rendezvous.recv(key, 0.0) for key in self.recv_keys]

    # ---- the GPU partition -------------------------------------------------------------

    def _as_usual(self, inputs, step_id, session, options, deadline, run=None):
        rendezvous = LocalRendezvous()
        for key, (value, dead) in zip(self.recv_keys, inputs, strict=True):
            rendezvous.send(key, value, dead)
        ctx = self._context(self.device, step_id, (), rendezvous, session, options,
                            deadline)
        with graphs.keeping_buffers():  # no copy-on-write: the graphs keep their buffers
            if run is None:
                with self.device.compute_scope():
                    values = self.executor.run(ctx, deadline)
            else:
                values = run(lambda: self.executor.run(ctx, deadline))
        return [self.device.to_host(v) for v in values]

    def _run_gpu(self, sig, inputs, session, step_id, options, deadline):
        entry = None if sig is None else self._entries.get(sig)
        if sig is None or entry is _FAILED:
            return self._as_usual(inputs, step_id, session, options, deadline)
        if entry is not None:
            if self._valid(entry):
                return self._replay(entry, inputs)
            del self._entries[sig]
            self._seen[sig] = 0
            return self._as_usual(inputs, step_id, session, options, deadline)
        if len(self._entries) >= MAX_SIGNATURES:
            return self._as_usual(inputs, step_id, session, options, deadline)
        seen = self._seen[sig] = self._seen.get(sig, 0) + 1
        if seen < WARMUP_RUNS:
            return self._as_usual(inputs, step_id, session, options, deadline)
        if self._mech is None:
            self._mech = graphs.mechanics()
        if seen == WARMUP_RUNS:
            return self._as_usual(inputs, step_id, session, options, deadline,
                                  self._mech.run_on_stream)
        values = self._capture(sig, inputs, session, step_id, options, deadline)
        if values is None:
            return self._as_usual(inputs, step_id, session, options, deadline)
        return values

    def _capture(self, sig, inputs, session, step_id, options, deadline):
        """The step's values from a captured graph's first launch, or None (the capture
        failed: the variables have their arrays back, nothing ran)."""
        mech = self._mech
        mgr = self.device.resource_mgr
        before = mech.snapshot([r for r in mgr.resources() if hasattr(r, "value")])
        version = mgr.version
        host_values = [v for v, _ in inputs]
        feeds = mech.feeds(host_values)
        mech.fill(feeds, host_values)
        cap = graphs.new_capture(mech)

        def body():
            mech.enqueue_feeds(feeds)
            return self._run_on_buffers(feeds, step_id, session, options, deadline)

        try:
            with graphs.active_capture(cap):
                graph, values, ran = mech.capture(cap, body)
        except Exception as e:  # noqa: BLE001 - the partition then runs as usual
            mech.restore(before)
            node = getattr(e, "node", None)
            cause = getattr(e, "cause", e)
            where = f" at node {node.name} ({node.op})" if node is not None else ""
            self._give_up(sig, f"capture failed{where}: {type(cause).__name__}: {cause}")
            return None
        touched = list(cap.vars.values())
        moved = [v for v in touched if id(v) not in before or before[id(v)][1] is not v.value]
        if not ran:
            mech.replay(graph, values)
        out = [mech.to_host(v) for v in values]
        if moved or mgr.version != version:
            mech.synchronize()
            self._give_up(sig, f"{len(moved)} variable(s) took new buffers while captured")
            return out
        self.captures += 1
        if ran:  # simulated: a replay runs the partition again on the buffers
            graph = lambda: self._simulated_replay(  # noqa: E731
                feeds, step_id, session, options, deadline)
        entry = self._entries[sig] = _Entry(graph, feeds, values, cap.held,
                                            [(v, v.value) for v in touched], version)
        # Its memory goes back to the pool when it is dropped (a load, a closed session):
        # not while a launch may still be writing it.
        weakref.finalize(entry, mech.synchronize)
        return out

    def _run_on_buffers(self, feeds, step_id, session, options, deadline):
        rendezvous = LocalRendezvous()
        for key, f in zip(self.recv_keys, feeds, strict=True):
            rendezvous.send(key, f.device, False)
        ctx = self._context(self.device, step_id, (), rendezvous, session, options,
                            deadline)
        return self.executor.run(ctx, deadline)

    def _simulated_replay(self, feeds, step_id, session, options, deadline):
        self._mech.enqueue_feeds(feeds)
        with graphs.active_capture(graphs.new_capture(self._mech)):
            return self._run_on_buffers(feeds, step_id, session, options, deadline)

    def _give_up(self, sig, why: str) -> None:
        self._entries[sig] = _FAILED
        self.failures.append(why)
        _log.info("The step on %s runs kernel by kernel: %s", self.device.name, why[:500])

    def _valid(self, entry) -> bool:
        if self.device.resource_mgr.version != entry.version:
            return False
        return all(v.value is value for v, value in entry.vars)

    def _replay(self, entry, inputs):
        mech = self._mech
        mech.fill(entry.feeds, [v for v, _ in inputs])
        values = mech.replay(entry.graph, entry.values)
        self.replays += 1
        return [mech.to_host(v) for v in values]


def _signature(inputs):
    """Shapes and dtypes of the GPU's inputs, or None when one is dead or not a plain
    numeric host array (the partition then runs as usual)."""
    sig = []
    for value, dead in inputs:
        if dead or type(value) is not np.ndarray or value.dtype.kind not in "biuf":
            return None
        sig.append((value.shape, value.dtype.str))
    return tuple(sig)
