"""When a step runs as one CUDA graph (kernels/gpu/graphs.py has the mechanics).

A step qualifies when its work is one GPU partition run by a StaticExecutor, every other
partition only hands feeds to it (_Arg -> _Send), and its stateful kernels are variable
reads, assignments and optimizer updates (no random numbers, queues or host state, whose
effects a replay would not repeat). Per distinct feed signature (shapes and dtypes):

1. the first run goes the usual way;
2. the second runs its partitions one after the other on the capture stream (a warm-up:
   cuDNN's algorithm search, kernel compilation and per-stream library state happen here);
3. the third is captured: the feeds are moved into fixed device buffers first (so no kernel
   reads a feed on the host), the GPU partition's kernels are recorded, and the graph is
   launched once. A capture that fails (a kernel needed a value on the host), or whose
   variables did not keep their buffers, gives the variables back their arrays and the
   step runs the usual way from then on, for this signature;
4. later runs copy the feeds into pinned buffers and launch the graph.

A replay first checks that every variable the step touched still holds the buffer it had
when captured (a re-initialization or a restore stores new arrays) and that no resource was
removed; if not, the graph is dropped and the signature starts over at 1.
"""

from __future__ import annotations

import logging
import threading

import numpy as np

from tensorflux.framework import op_registry
from tensorflux.kernels.gpu import graphs
from tensorflux.kernels.registry import KernelContext
from tensorflux.runtime import static_executor
from tensorflux.runtime.rendezvous import LocalRendezvous

_log = logging.getLogger("tensorflux")

WARMUP_RUNS = 2
MAX_SIGNATURES = 4

# The stateful ops a captured step may hold: their effects are on variables' buffers only.
CAPTURABLE_STATEFUL = frozenset({
    "VarHandleOp", "ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp",
    "AssignSubVariableOp", "ResourceGather", "ResourceApplyGradientDescent",
    "ResourceApplyMomentum", "ResourceApplyAdam", "ResourceApplyAdagrad",
    "ResourceApplyRMSProp", "_Recv", "_Arg"})

_FAILED = object()


def for_runner(runner) -> StepGraphs | None:
    """The StepGraphs of a GraphRunner whose steps qualify (module docstring), or None."""
    if not graphs.enabled() or runner.plan.merged_order is not None:
        return None
    gpu = [p for p in runner.parts if p[0].device_type == "GPU"]
    if len(gpu) != 1 or not isinstance(gpu[0][1], static_executor.StaticExecutor):
        return None
    feeders = []
    for device, ex, positions in runner.parts:
        if device.device_type == "GPU":
            continue
        if positions or not isinstance(ex, static_executor.StaticExecutor):
            return None
        feeders.append((device, ex))
    gpu_device = gpu[0][0]
    if getattr(gpu_device, "physical_index", 0) != 0:
        return None  # one capture stream, on the first GPU
    for device, nodes, _, _ in runner._part_nodes:
        for n in nodes:
            if device is not gpu_device:
                if n.op not in ("_Arg", "_Send") or (
                        n.op == "_Send" and n.attrs["recv_device"] != gpu_device.name):
                    return None
                continue
            if n.op == "_Send":
                return None
            opdef = op_registry.lookup(n.op)
            if opdef is None or (opdef.is_stateful and n.op not in CAPTURABLE_STATEFUL):
                return None
    return StepGraphs(gpu[0], feeders)


class _Entry:
    """One captured signature: its graph, fixed feed buffers and what it holds."""

    __slots__ = ("graph", "feeds", "values", "held", "vars", "version")

    def __init__(self, graph, feeds, values, held, var_pairs, version):
        self.graph, self.feeds, self.values = graph, feeds, values
        self.held, self.vars, self.version = held, var_pairs, version


class StepGraphs:
    """The captured graphs of one GraphRunner, by feed signature."""

    def __init__(self, gpu_part, feeders):
        self.device, self.executor, self.positions = gpu_part
        self.feeders = feeders
        self._mech = None
        self._entries: dict = {}
        self._seen: dict = {}
        self._lock = threading.Lock()
        self.captures = 0
        self.replays = 0
        self.failures: list[str] = []

    @staticmethod
    def _signature(args):
        sig = []
        for a in args:
            if type(a) is not np.ndarray or a.dtype.kind not in "biuf":
                return None
            sig.append((a.shape, a.dtype.str))
        return tuple(sig)

    def run(self, runner, session, step_id, args, options, deadline):
        """The step's fetched values (host arrays, in the runner's fetch order) when it ran
        here, or None: run it the usual way."""
        sig = self._signature(args)
        if sig is None:
            return None
        with self._lock:
            entry = self._entries.get(sig)
            if entry is _FAILED:
                return None
            if entry is not None:
                if self._valid(entry):
                    return self._replay(entry, args, runner.num_fetches)
                del self._entries[sig]
                self._seen[sig] = 0
                return None
            if len(self._entries) >= MAX_SIGNATURES:
                return None
            seen = self._seen[sig] = self._seen.get(sig, 0) + 1
            if seen < WARMUP_RUNS:
                return None
            if self._mech is None:
                self._mech = graphs.mechanics()
            if seen == WARMUP_RUNS:
                values = self._mech.run_on_stream(
                    lambda: self._run_parts(session, step_id, args, options, deadline))
                return self._fetched(values, runner.num_fetches, self.device.to_host)
            return self._capture(sig, session, step_id, args, options, deadline,
                                 runner.num_fetches)

    def _context(self, device, step_id, args, rendezvous, session, options, deadline):
        ctx = KernelContext(step_id, device, rendezvous, None, args, device.runner, session,
                            options)
        ctx.deadline = deadline
        return ctx

    def _run_feeders(self, step_id, args, session, options, deadline):
        rendezvous = LocalRendezvous()
        for device, ex in self.feeders:
            ex.run(self._context(device, step_id, args, rendezvous, session, options,
                                 deadline), deadline)
        return rendezvous

    def _run_parts(self, session, step_id, args, options, deadline):
        rendezvous = self._run_feeders(step_id, args, session, options, deadline)
        return self.executor.run(self._context(self.device, step_id, args, rendezvous,
                                               session, options, deadline), deadline)

    def _fetched(self, values, num_fetches, convert):
        out = [None] * num_fetches
        for pos, v in zip(self.positions, values, strict=True):
            out[pos] = convert(v)
        return out

    def _capture(self, sig, session, step_id, args, options, deadline, num_fetches):
        mech = self._mech
        mgr = self.device.resource_mgr
        before = mech.snapshot([r for r in mgr.resources() if hasattr(r, "value")])
        version = mgr.version
        indices = list(range(len(args)))
        feeds = mech.feeds(args, indices)
        dev_args = list(args)
        for f in feeds:
            dev_args[f.index] = f.device
        mech.fill(feeds, args)
        cap = graphs.new_capture(mech)
        try:
            rendezvous = self._run_feeders(step_id, dev_args, session, options, deadline)
            ctx = self._context(self.device, step_id, dev_args, rendezvous, session, options,
                                deadline)

            def body():
                mech.enqueue_feeds(feeds)
                return self.executor.run(ctx, deadline)

            with graphs.active_capture(cap):
                graph, values, ran = mech.capture(cap, body)
        except Exception as e:  # noqa: BLE001 - the step then runs the usual way
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
        out = self._fetched(values, num_fetches, mech.to_host)
        if moved or mgr.version != version:
            mech.synchronize()
            self._give_up(sig, f"{len(moved)} variable(s) took new buffers while captured")
            return out
        self.captures += 1
        if ran:  # simulated: a replay runs the body again
            graph = lambda: self._simulated_body(  # noqa: E731
                feeds, step_id, dev_args, session, options, deadline)
        self._entries[sig] = _Entry(graph, feeds, values, cap.held,
                                    [(v, v.value) for v in touched], version)
        return out

    def _simulated_body(self, feeds, step_id, dev_args, session, options, deadline):
        self._mech.enqueue_feeds(feeds)
        rendezvous = self._run_feeders(step_id, dev_args, session, options, deadline)
        ctx = self._context(self.device, step_id, dev_args, rendezvous, session, options,
                            deadline)
        with graphs.active_capture(graphs.new_capture(self._mech)):
            return self.executor.run(ctx, deadline)

    def _give_up(self, sig, why: str) -> None:
        self._entries[sig] = _FAILED
        self.failures.append(why)
        _log.info("The step on %s runs kernel by kernel: %s", self.device.name, why[:500])

    def _valid(self, entry) -> bool:
        if self.device.resource_mgr.version != entry.version:
            return False
        return all(v.value is value for v, value in entry.vars)

    def _replay(self, entry, args, num_fetches):
        mech = self._mech
        mech.fill(entry.feeds, args)
        values = mech.replay(entry.graph, entry.values)
        self.replays += 1
        return self._fetched(values, num_fetches, mech.to_host)
