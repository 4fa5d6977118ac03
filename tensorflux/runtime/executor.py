"""The dataflow executor: runs one partition of a step (paper §3.1, §3.4; DESIGN §5).

Chosen by exec_options.choose_strategies for partitions the static path does not take
(control flow, asynchronous kernels) and everywhere with strategy "dataflow"; its results
must equal the reference executor's (reference_executor.py).

Threading. One driver thread (the caller of `run`) owns every piece of per-step state below.
Cheap kernels run inline on it; expensive ones go to the device's pool when other nodes are
ready too, and asynchronous kernels (Recv, queue ops) call back whenever they finish. Both
report through one completion queue that only the driver reads, so pending counts, frames and
entries are never touched by two threads and need no locks. (An asynchronous kernel that
calls back on the driver thread before it returns completes inline, without the queue; small
partitions without control flow run in a fixed order while that holds: `_run_straight`.)

Frames and iterations (paper §3.4, whitepaper §4.4). Every node executes in a static frame:
the root frame "", or the frame named by the `frame_name` of the Enter nodes that lead into a
while-loop body. At run time a frame is instantiated per (parent frame, parent iteration, name)
and holds iterations 0, 1, 2, ...; each iteration has its own entries (output values), pending
counts and dead counts for the frame's nodes. Outputs normally go to the same frame and
iteration as their node, except:
  - Enter: into iteration 0 of the child frame, or, with `is_constant`, into every iteration
    of it, present and future (a loop invariant);
  - Exit: into the parent frame and iteration. An Exit fires once per frame instance: live
    when the loop ends normally, or, if it never produced a live value, dead when the frame
    is done (a loop on an untaken branch); the dead Exits of earlier iterations are dropped;
  - NextIteration: into iteration i+1; a dead NextIteration propagates nothing. At most
    `parallel_iterations` iterations of a frame are outstanding; a NextIteration that would
    start one more is held in `next_iter_roots` until the oldest iteration finishes.

Op kinds. How a node's outputs travel is its op definition's `flow_kind` (define_op in
ops/control_flow_ops.py and ops/runtime_ops.py), read once per node when the executor is
built: "merge", "enter", "exit", "next_iteration", "dead_aware", or "switch" and none (both
NORMAL: a Switch is an ordinary node whose kernel leaves one output DEAD). Frames are
assigned by frame_analysis.analyze, the analysis the loop compiler reads too.

Dead values. An output is DEAD when a Switch did not take it. A non-Merge node with a dead data
or control input is dead: it skips its kernel and all its outputs are DEAD (except _Send, which
forwards the deadness to its Recv, and ControlTrigger, which is never dead: gradient loops use
it to wait for ops that may be on an untaken branch). A Merge is ready once its control inputs
have arrived and either one live data input has (which it forwards, with the input's index) or
all data inputs are dead (then it is dead). Pending counts of a Merge start at 2*controls + 1:
each control edge takes 2, the first live data edge takes the low bit.

Completion. An iteration is done when it has no outstanding nodes or child frames, its
frame has received all its Enter inputs (iteration 0) or its previous iteration is done;
finished iterations are dropped at once, freeing their values. A frame is done when all its
iterations are. The step is done when nothing is ready or in flight.

The driver loop (`_Run._loop`) pops ready nodes and hands each to `_Run._process`, the one
place a node runs; `_process` completes the common case itself (a plain op whose live
outputs stay in its frame and feed no Merge: `_Item.fast`) and everything else through
`_complete`/`_propagate`. A call per node would cost about a tenth of the executor's time,
so the loop that runs is generated from the two as written: `_loop` with `_process`'s body
in place of the call (codegen.inline_call; `_Run._loop_by_calls` is the loop as written).

The loop in C. With the C extension (kernels/cpu/native.py `dataflow_core`; off with
TENSORFLUX_NATIVE=0 or `NATIVE_CORE = False`) the ready queue is a C object of the same
methods, and its `drain` runs the loop: there, plain nodes (the fast path of `_process`, a
pass-through kernel such as Identity or NoOp without a call), Switch, Merge and dead nodes
(`_propagate`'s rules) and NextIteration's kernel; through the methods here, everything
else (`_process`: Enter, Exit, live asynchronous and expensive kernels; `_fail`: kernel
errors; `_complete`: a new iteration, a wrong number of outputs; `_cleanup_iterations`).
Both loops share the per-step state above, node by node (the C loop writes back what it
caches before any Python code runs); tests/runtime/test_native_executor.py compares them.
"""

from __future__ import annotations

import queue
import time
import zlib
from collections import deque
from threading import get_ident

from tensorflux.framework import errors
from tensorflux.kernels import intra_op
from tensorflux.kernels import registry as kernel_registry
from tensorflux.kernels.buffers import donations
from tensorflux.kernels.cpu import native
from tensorflux.kernels.registry import DEAD
from tensorflux.runtime import codegen, compiled_loops, frame_analysis
from tensorflux.runtime.codegen import ExecutorError
from tensorflux.runtime.frame_analysis import flow_kind, is_control_flow
from tensorflux.runtime.step_graph import Node

NORMAL, MERGE, ENTER, EXIT, NEXT_ITERATION, DEAD_AWARE = range(6)
# The executor's view of each op's `flow_kind` (its definition's attribute; see above).
_KIND_OF_FLOW = {None: NORMAL, "switch": NORMAL, "merge": MERGE, "enter": ENTER, "exit": EXIT,
                 "next_iteration": NEXT_ITERATION, "dead_aware": DEAD_AWARE}
_CALLING = object()  # an asynchronous kernel call that has not returned or called back yet
_PENDING = object()  # an asynchronous kernel's result is not (or not only) for the caller
NATIVE_CORE = True  # run the driver loop in C where the extension is there (tests flip it)
# How the C loop runs a node (native.dataflow_core; _native.c's DF_*): through `_process`;
# a plain node's kernel call, pass-through of input 0 or nothing at all; a Switch or Merge
# (or a node feeding one) with `_propagate`'s rules; only when dead; a NextIteration (its
# kernel in C, the next iteration by `_complete`). Any mode but the first completes a dead
# node in C.
_PY, _CALL, _FORWARD, _NOTHING, _GENERAL, _DEAD_ONLY, _NEXT = range(7)


class _FrameInfo:
    """Static facts about one frame name: its nodes' slots and initial pending counts."""

    __slots__ = ("name", "parent", "num_nodes", "num_slots", "pending_init", "num_enters",
                 "slot_uses")

    def __init__(self, name: str, parent: str | None):
        self.name = name
        self.parent = parent
        self.num_nodes = 0
        self.num_slots = 0
        self.pending_init: list[int] = []
        self.num_enters = 0
        self.slot_uses: list[int] = []


class _Item:
    """Static facts about one node, prepared once when the executor is built."""

    __slots__ = ("node", "kernel", "is_async", "expensive", "kind", "frame", "out_frame",
                 "local", "in_slots", "out_base", "num_outputs", "out_edges", "num_data_inputs",
                 "enter_frame", "is_constant", "parallel_iterations", "is_enter", "fast",
                 "plain", "fast_edges", "lone_exit", "cidx", "inline", "reuses")

    def __init__(self, node: Node):
        self.node = node
        self.kind = _KIND_OF_FLOW[flow_kind(node.op)]
        self.is_enter = self.kind == ENTER
        self.enter_frame = node.attrs.get("frame_name", "") if self.is_enter else ""
        self.is_constant = bool(node.attrs.get("is_constant", False))
        self.parallel_iterations = int(node.attrs.get("parallel_iterations", 10) or 10)
        self.num_data_inputs = len(node.inputs)
        self.out_edges: list[tuple[_Item, int]] = []  # (consumer, output index or -1)


class _Iteration:
    __slots__ = ("entries", "pending", "dead", "uses", "outstanding_ops",
                 "outstanding_frames")

    def __init__(self, info: _FrameInfo):
        self.entries = [None] * info.num_slots
        self.pending = list(info.pending_init)
        self.dead = [0] * info.num_nodes
        self.uses = list(info.slot_uses)
        self.outstanding_ops = 0
        self.outstanding_frames = 0


class _Frame:
    __slots__ = ("info", "parent", "parent_iter", "iterations", "iteration_count",
                 "outstanding_iterations", "max_parallel", "inv_values", "next_iter_roots",
                 "pending_inputs", "dead_exits", "live_exits", "key", "frame_id")

    def __init__(self, info: _FrameInfo, parent, parent_iter: int, max_parallel: int, key):
        self.info = info
        self.parent = parent
        self.parent_iter = parent_iter
        self.iterations = {0: _Iteration(info)}
        self.iteration_count = 0
        self.outstanding_iterations = 1
        self.max_parallel = max_parallel
        self.inv_values: list[tuple[_Item, object]] = []
        self.next_iter_roots: list[tuple[_Item, object]] = []
        self.pending_inputs = info.num_enters
        self.dead_exits: dict[_Item, None] = {}  # ordered set
        self.live_exits: set[_Item] = set()
        self.key = key
        # Deterministic across partitions and processes, so Send/Recv keys inside loops match.
        self.frame_id = 0 if parent is None else zlib.crc32(
            f"{parent.frame_id};{parent_iter};{info.name}".encode())


class Executor:
    """Runs the nodes of one partition graph on one device, in dataflow order.

    Args:
      nodes: the partition's nodes (all placed on `device`).
      device: the runtime Device.
      fetches: (node, output index) pairs whose values `run` returns, in order.
      kernel_wrapper: optional `wrap(node, kdef, compute) -> compute`, applied once per node
        when the executor is built (tracing and memory accounting; see runtime/tracing.py).
      straight_line: run a qualifying partition in one fixed order (`_run_straight`).
      compile_loops: run cheap loop frames as generated code (compiled_loops.py).
    """

    def __init__(self, nodes: list[Node], device, fetches: list[tuple[Node, int]],
                 kernel_wrapper=None, straight_line: bool = True, compile_loops: bool = True):
        self.device = device
        # Cheap loop frames run as one generated `while` statement (compiled_loops.py).
        nodes, fetches = compiled_loops.compile_loops(nodes, fetches, device.device_type,
                                                      kernel_wrapper, enabled=compile_loops)
        self.items = [_Item(n) for n in nodes]
        for k, it in enumerate(self.items):
            it.cidx = k  # its index in the C loop's table
        item_of = {it.node: it for it in self.items}
        for it in self.items:
            kdef = kernel_registry.find_kernel(it.node.op, device.device_type, it.node.attrs)
            if kdef is None:
                raise errors.NotFoundError(
                    None, None, f"No registered '{it.node.op}' OpKernel for "
                    f"{device.device_type} devices compatible with node {{{{node "
                    f"{it.node.name}}}}}")
            compute = it.kernel = codegen.make_kernel(kdef, it.node, device.name)
            if kernel_wrapper is not None:
                it.kernel = kernel_wrapper(it.node, kdef, it.kernel)
            # Inputs the kernel may write its output into when they die at it (`_process`)
            it.reuses = codegen.reused_inputs(it.node, kdef, compute, it.kernel)
            it.is_async = kdef.is_async
            it.expensive = kdef.expensive
            it.inline = kdef.inline if kernel_wrapper is None else None
        for it in self.items:
            for src, idx in it.node.inputs:
                item_of[src].out_edges.append((it, idx))
            for c in it.node.control_inputs:
                item_of[c].out_edges.append((it, -1))
        self.frames = _analyze_frames(self.items, item_of)
        for it in self.items:
            # The common case, completed by `_Run._process` itself: a plain op whose live
            # outputs stay in its frame and feed no Merge, so they are stored and counted
            # down without `_complete`/`_propagate`: an op without a flow_kind (not a Switch,
            # which makes a dead output; LoopCond qualifies: it forwards its input and cannot
            # make a dead output; an asynchronous kernel does when it calls back before
            # returning).
            it.fast = (flow_kind(it.node.op) is None
                       and all(dst.kind != MERGE for dst, _ in it.out_edges))
            # A fast node with a cheap synchronous kernel runs without `_Run._start`.
            it.plain = it.fast and not it.is_async and not it.expensive
            if not it.plain:
                it.reuses = ()
            # A dead value reaching an Exit that has no other input is recorded at once:
            # it happens every iteration, and only the frame's end looks at it.
            it.lone_exit = (it.kind == EXIT and it.num_data_inputs == 1
                            and not it.node.control_inputs)
            it.fast_edges = [(dst, dst.local) for dst, _ in it.out_edges]
        self.root_info = self.frames[""]
        self.roots = [it for it in self.items if it.frame is self.root_info
                      and self.root_info.pending_init[it.local] == 0]
        self.fetch_slots = [item_of[n].out_base + i for n, i in fetches]
        for s in self.fetch_slots:  # fetched values are never freed
            self.root_info.slot_uses[s] += 1
        _drop_unread_outputs(self.items)
        self.straight = _straight_schedule(self) if straight_line else None
        self.core = _native_core(self.items) if NATIVE_CORE else None
        self.root_indices = [it.cidx for it in self.roots]

    def run(self, ctx, deadline: float | None = None) -> list:
        """Runs one step; returns the fetched values. Raises ExecutorError or OpError."""
        ctx.deadline = deadline  # long kernels poll it (kernels/interrupt.py)
        try:
            if self.straight is not None:
                return self._run_straight(ctx, deadline)
            return _Run(self, ctx, deadline).execute()
        finally:
            if ctx.at_end:  # e.g. a mutex lock no ConsumeMutexLock released
                ctx.end_step()

    # ---- the straight-line path ---------------------------------------------------------
    # A partition of one frame, without control-flow ops or expensive kernels but with
    # asynchronous ones (a queue runner's `enqueue(read())`, a dequeue feeding a small
    # computation) runs its nodes in one order fixed when the executor is built: no pending
    # counts, ready queue or per-step frame. While every asynchronous kernel calls back
    # before it returns (a queue with room, a reader with a record at hand), nothing else
    # is needed; no dead value can arise (no Switch, and a _Recv's dead value falls back
    # as below). When one does not call back at once (or delivers a dead value), the step
    # continues on the dataflow path from exactly where it is (`_Run.resume`): the nodes
    # before it in the order have run, it is in flight, the rest are pending, as if the
    # dataflow loop had run them in this order; results and blocking behaviour are the
    # dataflow executor's.
    def _run_straight(self, ctx, deadline: float | None) -> list:
        entries = [None] * self.root_info.num_slots
        completions = queue.SimpleQueue()
        driver = get_ident()
        for k, (it, in_slots, base, n, free) in enumerate(self.straight):
            inputs = [entries[s] for s in in_slots]
            if it.is_async:
                out = _call_async(it, ctx, inputs, completions, driver)
                if out is DEAD:  # the dataflow loop propagates deadness
                    completions.put((it, None, 0, DEAD, None))
                    out = _PENDING
                if out is _PENDING:
                    return _Run(self, ctx, deadline).resume(k, entries, completions)
            else:
                try:
                    out = it.kernel(ctx, *inputs)
                except BaseException as e:  # noqa: BLE001 - reported as the step's error
                    out = e
            if isinstance(out, BaseException):
                if ctx.cancellation is not None:
                    ctx.cancellation.start_cancel()
                raise out if isinstance(out, ExecutorError) else \
                    ExecutorError(it.node, self.device.name, out)
            if n == 1:
                entries[base] = out
            elif n:
                if out is None or len(out) != n:
                    if ctx.cancellation is not None:
                        ctx.cancellation.start_cancel()
                    raise ExecutorError(it.node, self.device.name, errors.InternalError(
                        None, None, f"Kernel for {it.node.op} returned "
                        f"{'no' if out is None else len(out)} outputs, expected {n}"))
                entries[base:base + n] = out
            for s in free:
                entries[s] = None
        return [entries[s] for s in self.fetch_slots]


def _analyze_frames(items: list[_Item], item_of: dict[Node, _Item]) -> dict[str, _FrameInfo]:
    """Assigns every node its static frame (frame_analysis.analyze), local id and entry
    slots."""
    analysis = frame_analysis.analyze([it.node for it in items])
    frames: dict[str, _FrameInfo] = {}
    for name, parent in analysis.parent.items():  # parents first: in order of discovery
        frames[name] = _FrameInfo(name, parent)
    for it in items:
        it.frame = frames[analysis.frame_of[it.node]]
        it.out_frame = frames[analysis.out_frame[it.node]]
        if it.kind == ENTER:
            it.out_frame.num_enters += 1
    for it in items:
        info = it.frame
        it.local = info.num_nodes
        info.num_nodes += 1
        n_ctrl = len(it.node.control_inputs)
        if it.kind == MERGE:
            info.pending_init.append(2 * n_ctrl + 1)
        else:
            info.pending_init.append(it.num_data_inputs + n_ctrl)
        it.num_outputs = len(it.node.output_dtypes)
        out = it.out_frame
        it.out_base = out.num_slots
        out.num_slots += it.num_outputs
        out.slot_uses.extend([0] * it.num_outputs)
    for it in items:
        it.in_slots = tuple(item_of[src].out_base + i for src, i in it.node.inputs)
        for src, i in it.node.inputs:
            it.frame.slot_uses[item_of[src].out_base + i] += 1
    return frames


def _drop_unread_outputs(items: list[_Item]) -> None:
    """Nodes none of whose outputs is read or fetched (an assign's `read_value` that only a
    control dependency waits for) store none: `num_outputs` becomes 0, so their values are
    dropped as soon as the kernel returns, as the static schedule's `del` drops them,
    instead of living in their slots until the step ends. (Such a value can be a read of a
    variable's storage: alive, it made the next in-place update copy the whole variable.)
    Their slots stay allocated and unused."""
    for it in items:
        uses = it.out_frame.slot_uses
        if it.num_outputs and it.kind == NORMAL and not any(
                uses[it.out_base + k] for k in range(it.num_outputs)):
            it.num_outputs = 0


def _native_core(items: list[_Item]):
    """The C loop's table of the nodes (native.dataflow_core), or None without it."""
    specs = []
    for it in items:
        mode = _PY
        if it.plain and it.reuses:
            pass  # `_process` donates the inputs that die at it
        elif it.plain:
            mode = _FORWARD if it.inline == "{0}" else _NOTHING if it.inline == "" else _CALL
        elif it.kind == NORMAL or it.kind == MERGE:
            mode = _DEAD_ONLY if it.is_async or it.expensive else _GENERAL
        elif it.kind == NEXT_ITERATION and not it.is_async and not it.expensive:
            mode = _NEXT
        flags = (it.kind == MERGE) | (2 if it.lone_exit else 0)
        specs.append((mode, it.local, it.num_outputs, it.out_base, it.in_slots,
                      tuple(dst.cidx for dst, _ in it.out_edges),
                      tuple(idx for _, idx in it.out_edges), it.kernel, flags))
    return native.dataflow_core(items, specs)


def _straight_schedule(ex: Executor) -> list | None:
    """The order of Executor._run_straight, or None when the partition does not qualify:
    (item, input slots, first output slot, number of outputs, slots freed after it)."""
    items = ex.items
    if len(ex.frames) != 1 or not any(it.is_async for it in items) or any(
            it.expensive or is_control_flow(it.node.op) for it in items):
        return None
    pending = list(ex.root_info.pending_init)
    order = list(ex.roots)
    for it in order:  # breadth first, as the dataflow loop would go
        for dst, _ in it.out_edges:
            pending[dst.local] -= 1
            if pending[dst.local] == 0:
                order.append(dst)
    if len(order) != len(items):
        return None
    last_use: dict[int, int] = {}
    for k, it in enumerate(order):
        for s in it.in_slots:
            last_use[s] = k
    for s in ex.fetch_slots:
        last_use.pop(s, None)
    free: list[list[int]] = [[] for _ in order]
    for s, k in last_use.items():
        free[k].append(s)
    return [(it, it.in_slots, it.out_base, it.num_outputs, tuple(f))
            for it, f in zip(order, free, strict=True)]


def _uncount_if_cancelled(future) -> None:
    """A kernel handed to the pool that never ran is no longer counted as running."""
    if future.cancelled():
        intra_op.kernel_finished()


def _call_async(it: _Item, ctx, inputs: list, completions, driver: int, frame=None,
                i: int = 0):
    """Runs an asynchronous kernel: its outputs (possibly DEAD) or error when it calls back
    on this thread before returning, else _PENDING (the result then comes through
    `completions` as (it, frame, i, outputs, error))."""
    cell = [_CALLING]  # the driver thread alone reads or writes it

    def done(outputs=None):
        if cell[0] is _CALLING and get_ident() == driver:
            cell[0] = (outputs,)
        elif isinstance(outputs, BaseException):
            completions.put((it, frame, i, None, outputs))
        else:
            completions.put((it, frame, i, outputs, None))

    try:
        it.kernel(ctx, done, *inputs)
    except BaseException as e:  # noqa: BLE001 - reported as the step's error
        cell[0] = None
        return e
    result, cell[0] = cell[0], None
    return _PENDING if result is _CALLING else result[0]


class _Run:
    """The state of one step on one executor (owned by the driver thread)."""

    def __init__(self, ex: Executor, ctx, deadline: float | None):
        self.ex = ex
        self.ctx = ctx
        self.deadline = deadline
        core = ex.core
        self.ready = deque() if core is None else core.ready()
        self.drain = None if core is None else self.ready.drain  # the loop in C
        self.completions: queue.SimpleQueue = queue.SimpleQueue()
        self.in_flight = 0
        self.error: BaseException | None = None
        self.frames: dict[tuple, _Frame] = {}
        self.root = _Frame(ex.root_info, None, 0, 1, ("",))
        self.driver = get_ident()  # the thread running `execute`

    # ---- the driver loop ----------------------------------------------------------------
    def execute(self) -> list:
        root_iter = self.root.iterations[0]
        if self.drain is not None:
            root_iter.outstanding_ops += len(self.ex.roots)
            self.ready.push_indices(self.ex.root_indices, self.root, 0)
            return self._loop()
        for it in self.ex.roots:
            root_iter.outstanding_ops += 1
            self.ready.append((it, self.root, 0))
        return self._loop()

    def resume(self, k: int, entries: list, completions) -> list:
        """Continues a straight-line step (Executor._run_straight) whose first `k` nodes
        in its order have run, leaving `entries`, and whose node `k` is in flight, posting
        to `completions`."""
        self.completions = completions
        order = self.ex.straight
        st = self.root.iterations[0]
        st.entries = entries
        uses, pending = st.uses, st.pending
        for _it, in_slots, _, _, _ in order[:k + 1]:
            for s in in_slots:  # consumed (and freed once unused, as _run_straight did)
                uses[s] -= 1
        for it, _, _, _, _ in order[:k]:
            for _, d in it.fast_edges:
                pending[d] -= 1
        self.in_flight = 1
        st.outstanding_ops = 1
        for it, _, _, _, _ in order[k + 1:]:
            if pending[it.local] == 0:
                st.outstanding_ops += 1
                self.ready.append((it, self.root, 0))
        return self._loop()

    def _loop(self) -> list:
        """Runs ready nodes until none is ready or in flight; the fetched values. (Runs
        generated with `_process` inlined: see the module docstring.)"""
        root_iter = self.root.iterations[0]
        ready = self.ready
        popleft = ready.popleft
        process = self._process
        ctx = self.ctx
        drain = self.drain
        while True:
            if drain is not None:
                drain(self, ctx)  # empties `ready` unless the step failed
            while ready and self.error is None:
                it, frame, i = popleft()
                process(it, frame, i, ctx, ready)
            if self.in_flight == 0:
                break
            self._wait_one()
        if self.error is not None:
            raise self.error
        entries = root_iter.entries
        values = [entries[s] for s in self.ex.fetch_slots]
        for v, s in zip(values, self.ex.fetch_slots, strict=True):
            if v is None or v is DEAD:
                raise errors.InvalidArgumentError(
                    None, None, f"Fetched tensor at slot {s} was not computed"
                    f"{' (dead: on an untaken branch)' if v is DEAD else ''}.")
        return values

    def _wait_one(self) -> None:
        timeout = None
        if self.deadline is not None:
            timeout = max(0.0, self.deadline - time.monotonic())
        try:
            it, frame, i, outputs, err = self.completions.get(timeout=timeout)
        except queue.Empty:
            self._fail(errors.DeadlineExceededError(None, None, "Timed out waiting for the "
                                                    "step to complete"), None)
            self._drain()
            return
        self.in_flight -= 1
        if frame is None:  # posted by a straight-line step before it fell back (resume)
            frame = self.root
        if err is not None:
            self._fail(err, it)
            return
        if self.error is None:
            # An asynchronous kernel that produced a dead value (a _Recv of a dead tensor) is
            # dead itself, so its control edges carry the deadness too, as the edge it
            # replaces would have within one partition.
            self._complete(it, frame, i, outputs, outputs is DEAD)

    def _drain(self) -> None:
        """After a deadline: wait briefly for cancelled kernels to report back."""
        end = time.monotonic() + 1.0
        while self.in_flight:
            try:
                self.completions.get(timeout=max(0.0, end - time.monotonic()))
                self.in_flight -= 1
            except queue.Empty:
                break
        self.in_flight = 0

    def _fail(self, err: BaseException, it: _Item | None) -> None:
        if self.error is None:
            if it is not None and not isinstance(err, ExecutorError):
                err = ExecutorError(it.node, self.ex.device.name, err)
            self.error = err
            self.ready.clear()
            if self.ctx.cancellation is not None:
                self.ctx.cancellation.start_cancel()

    # ---- running one node ---------------------------------------------------------------
    def _process(self, it: _Item, frame: _Frame, i: int, ctx, ready: deque) -> None:
        """Runs one ready node (`ctx` and `ready` are the step's context and ready queue):
        takes (and releases) its inputs, runs its kernel unless it is dead, and completes
        it. A plain node (_Item.plain) runs right here, anything else is started by
        `_start`; the live outputs of a fast node (_Item.fast) are stored and counted down
        here, the rest completed by `_complete`. This is the driver loop's hot path, at
        about 0.7 us a node."""
        st = frame.iterations[i]
        entries = st.entries
        uses = st.uses
        slots = it.in_slots
        inputs = [entries[s] for s in slots]
        for s in slots:
            u = uses[s] - 1
            uses[s] = u
            if u == 0:
                entries[s] = None
        if it.plain:
            if st.dead[it.local]:
                self._complete(it, frame, i, None, True)
                return
            try:
                if it.reuses:  # inputs whose last use this is, and nothing else holds
                    donated = donations(inputs, it.reuses)  # (before `*inputs` is packed)
                    out = it.kernel(ctx, *inputs, donated=donated)
                else:
                    out = it.kernel(ctx, *inputs)
            except BaseException as e:  # noqa: BLE001 - reported as the step's error
                self._fail(e, it)
                return
        else:
            out = self._start(it, frame, i, st, inputs)
            if out is _PENDING:
                return
        # Live outputs of a fast node: the part of _complete and _propagate that applies
        # (a node whose outputs nothing reads has none: _drop_unread_outputs).
        n = it.num_outputs
        if n == 1:
            entries[it.out_base] = out
        elif n:
            if out is None or len(out) != n:
                self._complete(it, frame, i, out, False)  # reports the mismatch
                return
            base = it.out_base
            for k in range(n):
                entries[base + k] = out[k]
        # The loop that runs is this body inlined: locals it kept would hold the values
        # into the next node's run, where they could not be donated (kernels/buffers.py).
        out = inputs = None
        pending = st.pending
        started = -1  # this node is done; each consumer it makes ready is outstanding
        for dst, d in it.fast_edges:
            p = pending[d] - 1
            pending[d] = p
            if p == 0:
                started += 1
                ready.append((dst, frame, i))
        if started:
            st.outstanding_ops += started
            if st.outstanding_ops == 0 and st.outstanding_frames == 0:
                self._cleanup_iterations(frame, i)

    def _start(self, it: _Item, frame: _Frame, i: int, st: _Iteration, inputs: list):
        """Runs a node that is not plain (`_process` has taken its inputs): a dead one is
        completed dead, an asynchronous kernel started, an expensive one sent to the pool
        when other work is ready. Returns the live outputs of a fast node that ran at once,
        else _PENDING (the node was completed here, or will be when its result comes)."""
        kind = it.kind
        if kind == MERGE:  # ready with one live input, or dead with none
            is_dead = not any(v is not None and v is not DEAD for v in inputs)
        else:
            is_dead = st.dead[it.local] > 0
        if is_dead and kind != DEAD_AWARE:
            self._complete(it, frame, i, None, True)
            return _PENDING
        if it.is_async:
            return self._run_async(it, frame, i, inputs, it.fast)
        if it.expensive and (self.ready or self.in_flight) and self.ex.device.num_threads:
            self.in_flight += 1
            intra_op.kernel_started()
            try:
                future = self.ex.device.runner(self._run_on_pool, it, frame, i, inputs)
            except BaseException:
                intra_op.kernel_finished()
                raise
            if future is not None:  # a closing session cancels what has not started
                future.add_done_callback(_uncount_if_cancelled)
            return _PENDING
        if kind == DEAD_AWARE or kind == NEXT_ITERATION or kind == EXIT:
            self.ctx.frame_iter = (frame.frame_id, i)
        try:
            if it.expensive:  # alone here, but other partitions' kernels may be running
                intra_op.kernel_started()
                try:
                    outputs = it.kernel(self.ctx, *inputs)
                finally:
                    intra_op.kernel_finished()
            else:
                outputs = it.kernel(self.ctx, *inputs)
        except BaseException as e:  # noqa: BLE001 - reported as the step's error
            self._fail(e, it)
            return _PENDING
        if it.fast:
            return outputs
        self._complete(it, frame, i, outputs, False)
        return _PENDING

    def _run_async(self, it: _Item, frame: _Frame, i: int, inputs: list, fast: bool):
        """Starts an asynchronous kernel. One that calls `done` before it returns, on this
        thread (a queue with room, a reader with a record at hand), completes inline;
        otherwise its result arrives through the completion queue. With `fast` (the
        caller's inline path, see _Item.fast) a live result is returned for the caller to
        store and propagate; anything else returns _PENDING."""
        self.in_flight += 1
        self.ctx.frame_iter = (frame.frame_id, i)
        outputs = _call_async(it, self.ctx, inputs, self.completions, self.driver, frame, i)
        if outputs is _PENDING:
            return _PENDING  # still running: `done` will post to the completion queue
        self.in_flight -= 1
        if isinstance(outputs, BaseException):
            self._fail(outputs, it)
        elif self.error is None:
            if fast and outputs is not DEAD:
                return outputs
            self._complete(it, frame, i, outputs, outputs is DEAD)
        return _PENDING

    def _run_on_pool(self, it, frame, i, inputs) -> None:
        try:
            outputs = it.kernel(self.ctx, *inputs)
        except BaseException as e:  # noqa: BLE001
            self.completions.put((it, frame, i, None, e))
            return
        finally:
            # The pool's work item holds `inputs` until this thread runs again after the
            # put below, which may be long after the driver went on (a thread without a
            # core): the inputs must die with the kernel, as they do on the driver's thread
            # (a late free raises a step's peak memory, which the heap then keeps).
            inputs.clear()
            intra_op.kernel_finished()  # started when handed to the pool (`_start`)
        self.completions.put((it, frame, i, outputs, None))

    # ---- propagating outputs ------------------------------------------------------------
    def _complete(self, it: _Item, frame: _Frame, i: int, outputs, is_dead: bool) -> None:
        n = it.num_outputs
        if is_dead:
            values = (DEAD,) * n
        elif n == 1:
            values = (outputs,)
        elif n == 0:
            values = ()
        else:
            values = tuple(outputs)
            if len(values) != n:
                self._fail(errors.InternalError(
                    None, None, f"Kernel for {it.node.op} returned {len(values)} outputs, "
                    f"expected {n}"), it)
                return
        kind = it.kind
        if kind == NORMAL or kind == MERGE or kind == DEAD_AWARE:
            self._propagate(it, frame, i, values, is_dead)
        elif kind == ENTER:
            self._enter(it, frame, i, values, is_dead)
        elif kind == EXIT:
            if is_dead:
                frame.dead_exits[it] = None
            else:
                frame.live_exits.add(it)
                self._propagate(it, frame.parent, frame.parent_iter, values, False)
        else:  # NEXT_ITERATION
            if not is_dead:
                self._next_iteration(it, frame, i, values)
        st = frame.iterations[i]
        st.outstanding_ops -= 1
        if st.outstanding_ops == 0 and st.outstanding_frames == 0:
            self._cleanup_iterations(frame, i)

    def _propagate(self, it: _Item, frame: _Frame, i: int, values, is_dead: bool) -> None:
        st = frame.iterations[i]
        base = it.out_base
        entries = st.entries
        for k, v in enumerate(values):
            entries[base + k] = v
        pending = st.pending
        ready = self.ready
        for dst, idx in it.out_edges:
            d = dst.local
            if dst.kind == MERGE:
                if idx < 0:
                    pending[d] -= 2  # a dead control input does not kill a Merge
                    go = pending[d] == 0 or (pending[d] == 1 and
                                             st.dead[d] == dst.num_data_inputs)
                elif values[idx] is not DEAD:
                    go = pending[d] == 1
                    if pending[d] & 1:
                        pending[d] -= 1
                else:
                    st.dead[d] += 1
                    if it.is_enter:  # a dead Enter: the loop is on an untaken branch
                        st.dead[d] = dst.num_data_inputs
                    go = pending[d] == 1 and st.dead[d] == dst.num_data_inputs
            else:
                if is_dead or (idx >= 0 and values[idx] is DEAD):
                    if dst.lone_exit:
                        frame.dead_exits[dst] = None
                        continue
                    st.dead[d] += 1
                pending[d] -= 1
                go = pending[d] == 0
            if go:
                st.outstanding_ops += 1
                ready.append((dst, frame, i))

    def _enter(self, it: _Item, frame: _Frame, i: int, values, is_dead: bool) -> None:
        key = (id(frame), i, it.enter_frame)
        child = self.frames.get(key)
        if child is None:
            info = self.ex.frames[it.enter_frame]
            child = _Frame(info, frame, i, it.parallel_iterations, key)
            self.frames[key] = child
            frame.iterations[i].outstanding_frames += 1
        if it.is_constant and not is_dead:
            child.inv_values.append((it, values))
            for j in sorted(child.iterations):
                self._propagate(it, child, j, values, False)
        else:
            self._propagate(it, child, 0, values, is_dead)
        child.pending_inputs -= 1
        st0 = child.iterations.get(0)
        if child.pending_inputs == 0 and st0 is not None and st0.outstanding_ops == 0 \
                and st0.outstanding_frames == 0:
            self._cleanup_iterations(child, 0)

    def _next_iteration(self, it: _Item, frame: _Frame, i: int, values) -> None:
        nxt = i + 1
        if nxt not in frame.iterations:
            if nxt <= frame.iteration_count:  # that iteration already finished: impossible
                return
            if frame.outstanding_iterations >= frame.max_parallel:
                frame.next_iter_roots.append((it, values))
                return
            self._new_iteration(frame)
        self._propagate(it, frame, nxt, values, False)

    def _new_iteration(self, frame: _Frame) -> None:
        frame.iteration_count += 1
        j = frame.iteration_count
        frame.iterations[j] = _Iteration(frame.info)
        frame.outstanding_iterations += 1
        for inv, values in frame.inv_values:
            self._propagate(inv, frame, j, values, False)

    # ---- finishing iterations and frames ------------------------------------------------
    def _iteration_done(self, frame: _Frame, i: int) -> bool:
        st = frame.iterations.get(i)
        if st is None or st.outstanding_ops or st.outstanding_frames:
            return False
        if i == 0:
            return frame.pending_inputs == 0
        return (i - 1) not in frame.iterations

    def _cleanup_iterations(self, frame: _Frame, i: int) -> None:
        if frame is self.root:
            return  # the root iteration lives until the step ends (fetches read it)
        while self._iteration_done(frame, i):
            del frame.iterations[i]
            frame.outstanding_iterations -= 1
            if frame.next_iter_roots:
                roots, frame.next_iter_roots = frame.next_iter_roots, []
                self._new_iteration(frame)
                j = frame.iteration_count
                for it, values in roots:
                    self._propagate(it, frame, j, values, False)
            i += 1
        if not frame.iterations and frame.pending_inputs == 0:
            self._finish_frame(frame)

    def _finish_frame(self, frame: _Frame) -> None:
        self.frames.pop(frame.key, None)
        parent, pi = frame.parent, frame.parent_iter
        for exit_item in frame.dead_exits:
            if exit_item not in frame.live_exits:  # an Exit fires once: live, or dead if never
                self._propagate(exit_item, parent, pi, (DEAD,) * exit_item.num_outputs, True)
        st = parent.iterations[pi]
        st.outstanding_frames -= 1
        if st.outstanding_ops == 0 and st.outstanding_frames == 0:
            self._cleanup_iterations(parent, pi)


# The driver loop that runs: `_loop` with the body of `_process` in place of its call.
_Run._loop_by_calls = _Run._loop
_Run._loop = codegen.inline_call(_Run._loop, _Run._process, "process")
