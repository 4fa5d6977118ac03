"""The reference executor: the executable specification of a step (DESIGN §5).

It runs one partition with the same kernels and contexts as the fast strategies
(static_executor.py, executor.py, compiled_loops.py), one node at a time on the caller's
thread, with none of their shortcuts: no slots, pending-count tricks, thread pool,
compiled loops or `parallel_iterations` limit. Every strategy must give its fetched values
and its errors; tests/runtime/test_strategies.py compares them. Chosen only by
`ExecOptions(strategy="reference")` (exec_options.py); it is slow, by design.

Semantics (paper §3.4; the header of executor.py states the same invariants):
  - Frames. A node runs in a frame instance and an iteration. The root frame "" has one
    iteration. An Enter with `frame_name` F running in (frame P, iteration i) sends its
    value into the instance of F keyed by (P, i, F), created on first use with iteration 0.
    With `is_constant` the value goes into every iteration of that instance, present and
    future (a loop invariant); otherwise into iteration 0.
  - NextIteration in iteration i sends into iteration i+1 of its frame (created on first
    use); a dead NextIteration sends nothing, which is how a loop stops.
  - Exit sends into the parent frame and iteration, at most once per frame instance: live
    when it gets a live value, or, if it never did, dead when the instance is done (no node
    of it pending or running, no child instance left, and every Enter of F arrived).
  - Dead values. A Switch's untaken output is DEAD. A node other than Merge with a dead data
    input, or a control input from a dead node, is dead: its kernel is skipped and all its
    outputs are DEAD. Exceptions (their definitions' flow_kind "dead_aware"): _Send runs (it
    forwards the deadness to its Recv) and ControlTrigger runs and is live. An asynchronous
    kernel that delivers DEAD (a _Recv of a dead tensor) makes its node dead.
  - Merge fires once per iteration, when all its control inputs have arrived (dead ones do
    not kill it) and either a live data input has (its kernel forwards it and its index) or
    all its data inputs are dead. A dead value from an Enter counts for all of them: the
    other input, a NextIteration, cannot come (the loop is on an untaken branch).
  - Asynchronous kernels get a `done` callback posting to a completion queue; the executor
    runs whatever else is ready and waits on the queue only when nothing is, up to the
    step's deadline (then DeadlineExceededError, the step cancelled). Before each node it
    checks the deadline, the step's cancellation and its session's close too
    (kernels/interrupt.py), so a loop of nodes that never wait still stops.
  - The first error cancels the step, nothing more starts, in-flight kernels are waited for,
    and it is raised as ExecutorError(node, device, cause).
"""

from __future__ import annotations

import queue
import time
import zlib
from collections import Counter, deque

from tensorflux.framework import errors
from tensorflux.kernels import interrupt
from tensorflux.kernels import registry as kernel_registry
from tensorflux.kernels.registry import DEAD
from tensorflux.runtime.codegen import make_kernel
from tensorflux.runtime.executor import ExecutorError
from tensorflux.runtime.frame_analysis import flow_kind
from tensorflux.runtime.step_graph import Node

_FIRED = object()  # a Merge that has fired in an iteration


class ReferenceExecutor:
    """Runs one partition's nodes on one device by the rules above; `Executor`'s interface.

    Args:
      nodes, device, fetches: as for `executor.Executor`.
      kernel_wrapper: optional `wrap(node, kdef, compute) -> compute` (see tracing.py).
    """

    def __init__(self, nodes: list[Node], device, fetches: list[tuple[Node, int]],
                 kernel_wrapper=None):
        self.device = device
        self.fetches = list(fetches)
        self.kernels: dict[Node, tuple] = {}
        for n in nodes:
            kdef = kernel_registry.find_kernel(n.op, device.device_type, n.attrs)
            if kdef is None:
                raise errors.NotFoundError(
                    None, None, f"No registered '{n.op}' OpKernel for {device.device_type} "
                    f"devices compatible with node {{{{node {n.name}}}}}")
            compute = make_kernel(kdef, n, device.name)
            if kernel_wrapper is not None:
                compute = kernel_wrapper(n, kdef, compute)
            self.kernels[n] = (compute, kdef.is_async)
        # consumers[n]: (consumer, output index, input position), or (consumer, -1, -1)
        self.consumers: dict[Node, list[tuple[Node, int, int]]] = {n: [] for n in nodes}
        for n in nodes:
            for pos, (src, i) in enumerate(n.inputs):
                self.consumers[src].append((n, i, pos))
            for c in n.control_inputs:
                self.consumers[c].append((n, -1, -1))
        self.roots = [n for n in nodes if not n.inputs and not n.control_inputs]
        self.num_enters = Counter(n.attrs.get("frame_name", "") for n in nodes
                                  if flow_kind(n.op) == "enter")

    def run(self, ctx, deadline: float | None = None) -> list:
        """Runs one step; returns the fetched values. Raises ExecutorError or OpError."""
        ctx.deadline = deadline  # long kernels poll it (kernels/interrupt.py)
        try:
            return _Run(self, ctx, deadline).execute()
        finally:
            if ctx.at_end:  # e.g. a mutex lock no ConsumeMutexLock released
                ctx.end_step()


class _Frame:
    """One frame instance: its iterations' arrivals (node -> _Inputs or _FIRED)."""

    def __init__(self, name: str, parent: _Frame | None, parent_iter: int, enters: int):
        self.name, self.parent, self.parent_iter = name, parent, parent_iter
        self.frame_id = 0 if parent is None else zlib.crc32(
            f"{parent.frame_id};{parent_iter};{name}".encode())
        self.iterations: dict[int, dict] = {0: {}}
        self.invariants: list[tuple[Node, tuple]] = []
        self.enters_left = enters
        self.running = 0  # scheduled or running nodes of this instance, and child instances
        self.exits: dict[Node, bool] = {}  # Exit -> sent live


class _Inputs:
    """What has arrived for one node in one iteration."""

    __slots__ = ("values", "data", "controls", "dead", "enter_dead", "scheduled")

    def __init__(self, n: Node):
        self.values = [None] * len(n.inputs)
        self.data = self.controls = 0
        self.dead = self.enter_dead = self.scheduled = False


class _Run:
    def __init__(self, ex: ReferenceExecutor, ctx, deadline: float | None):
        self.ex, self.ctx, self.deadline = ex, ctx, deadline
        self.root = _Frame("", None, 0, 0)
        self.frames: dict[tuple, _Frame] = {}
        self.ready: deque = deque()
        self.completions: queue.SimpleQueue = queue.SimpleQueue()
        self.in_flight = 0
        self.error: BaseException | None = None
        self.fetched: dict[tuple[Node, int], object] = {}

    def execute(self) -> list:
        for n in self.ex.roots:
            self._schedule(n, self.root, 0)
        while True:
            while self.ready and self.error is None:
                stop = interrupt.stop_reason(self.ctx)  # a loop may never wait below
                if stop is not None:
                    self._fail(None, stop)
                    break
                self._run_node(*self.ready.popleft())
            if not self.in_flight:
                break
            timeout = None if self.deadline is None else max(0.0, self.deadline -
                                                              time.monotonic())
            try:
                n, frame, i, out = self.completions.get(timeout=timeout)
            except queue.Empty:
                self._fail(None, errors.DeadlineExceededError(
                    None, None, "Timed out waiting for the step to complete"))
                break
            self.in_flight -= 1
            if isinstance(out, BaseException):
                self._fail(n, out)
            elif self.error is None:
                self._complete(n, frame, i, out, out is DEAD)
        if self.error is not None:
            raise self.error
        values = []
        for n, k in self.ex.fetches:
            v = self.fetched.get((n, k))
            if v is None or v is DEAD:
                raise errors.InvalidArgumentError(
                    None, None, f"Fetched tensor {n.name}:{k} was not computed"
                    f"{' (dead: on an untaken branch)' if v is DEAD else ''}.")
            values.append(v)
        return values

    def _fail(self, n: Node | None, err: BaseException) -> None:
        if self.error is None:
            if n is not None and not isinstance(err, ExecutorError):
                err = ExecutorError(n, self.ex.device.name, err)
            self.error = err
            self.ready.clear()
            if self.ctx.cancellation is not None:
                self.ctx.cancellation.start_cancel()

    def _schedule(self, n: Node, frame: _Frame, i: int) -> None:
        frame.running += 1
        self.ready.append((n, frame, i))

    def _run_node(self, n: Node, frame: _Frame, i: int) -> None:
        arrived = frame.iterations[i].pop(n, None)
        kind = flow_kind(n.op)
        if kind == "merge":
            frame.iterations[i][n] = _FIRED
        inputs = arrived.values if arrived is not None else []
        if kind == "merge":
            dead = arrived.enter_dead or all(v is None or v is DEAD for v in inputs)
        else:
            dead = arrived is not None and arrived.dead
        if dead and kind != "dead_aware":
            self._complete(n, frame, i, None, True)
            return
        compute, is_async = self.ex.kernels[n]
        self.ctx.frame_iter = (frame.frame_id, i)
        if is_async:
            def done(outputs=None):
                self.completions.put((n, frame, i, outputs))
            self.in_flight += 1
            try:
                compute(self.ctx, done, *inputs)
            except BaseException as e:  # noqa: BLE001 - reported as the step's error
                self.in_flight -= 1
                self._fail(n, e)
            return
        try:
            outputs = compute(self.ctx, *inputs)
        except BaseException as e:  # noqa: BLE001 - reported as the step's error
            self._fail(n, e)
            return
        self._complete(n, frame, i, outputs, False)

    def _complete(self, n: Node, frame: _Frame, i: int, outputs, dead: bool) -> None:
        count = len(n.output_dtypes)
        if dead:
            values = (DEAD,) * count
        elif count == 1:
            values = (outputs,)
        else:
            values = () if count == 0 else tuple(outputs)
            if len(values) != count:
                self._fail(n, errors.InternalError(
                    None, None, f"Kernel for {n.op} returned {len(values)} outputs, "
                    f"expected {count}"))
                return
        kind = flow_kind(n.op)
        if kind == "enter":
            self._enter(n, frame, i, values, dead)
        elif kind == "exit":
            if frame.parent is None:
                self._fail(None, errors.InvalidArgumentError(
                    None, None, f"Exit node {n.name} is not inside a while loop frame"))
                return
            if not dead:
                frame.exits[n] = True
                self._deliver(n, frame.parent, frame.parent_iter, values, False)
            else:
                frame.exits.setdefault(n, False)
        elif kind == "next_iteration":
            if not dead:
                self._iteration(frame, i + 1)
                self._deliver(n, frame, i + 1, values, False)
        else:
            self._deliver(n, frame, i, values, dead)
        frame.running -= 1
        self._maybe_finish(frame)

    def _enter(self, n: Node, frame: _Frame, i: int, values: tuple, dead: bool) -> None:
        name = n.attrs.get("frame_name", "")
        key = (id(frame), i, name)
        child = self.frames.get(key)
        if child is None:
            child = self.frames[key] = _Frame(name, frame, i, self.ex.num_enters[name])
            frame.running += 1  # the parent is not done while a child instance runs
        child.enters_left -= 1
        if n.attrs.get("is_constant", False) and not dead:
            child.invariants.append((n, values))
            for j in list(child.iterations):
                self._deliver(n, child, j, values, False)
        else:
            self._deliver(n, child, 0, values, dead)
        self._maybe_finish(child)

    def _iteration(self, frame: _Frame, j: int) -> None:
        if j not in frame.iterations:
            frame.iterations[j] = {}
            for n, values in frame.invariants:
                self._deliver(n, frame, j, values, False)

    def _deliver(self, src: Node, frame: _Frame, i: int, values: tuple, dead: bool) -> None:
        """Hands `src`'s outputs to its consumers in (frame, i); schedules the ready ones."""
        if frame is self.root:
            for k, v in enumerate(values):
                self.fetched[(src, k)] = v
        arrivals = frame.iterations[i]
        for dst, k, pos in self.ex.consumers[src]:
            got = arrivals.get(dst)
            if got is _FIRED or (got is not None and got.scheduled):
                continue
            if got is None:
                got = arrivals[dst] = _Inputs(dst)
            if pos < 0:
                got.controls += 1
                got.dead |= dead
            else:
                got.values[pos] = values[k]
                got.data += 1
                if values[k] is DEAD:
                    got.dead = True
                    got.enter_dead |= flow_kind(src.op) == "enter"
            if got.controls < len(dst.control_inputs):
                continue
            if flow_kind(dst.op) == "merge":
                live = any(v is not None and v is not DEAD for v in got.values)
                go = live or got.enter_dead or got.data == len(dst.inputs)
            else:
                go = got.data == len(dst.inputs)
            if go:
                got.scheduled = True  # a Merge fires once: later inputs are dropped
                self._schedule(dst, frame, i)

    def _maybe_finish(self, frame: _Frame) -> None:
        """Ends a frame instance with nothing left to run: its dead Exits fire."""
        while frame is not self.root and not frame.running and not frame.enters_left:
            parent, pi = frame.parent, frame.parent_iter
            del self.frames[(id(parent), pi, frame.name)]
            for x, live in frame.exits.items():
                if not live:
                    self._deliver(x, parent, pi, (DEAD,) * len(x.output_dtypes), True)
            parent.running -= 1
            frame = parent
