"""A partial run on a cluster: TensorFlow's PartialRunSetup, and RunStep with a
`partial_run_handle` (its master's DoPartialRun), for any client.

Setup (`Master.partial_run_setup`): the signature is checked as a session checks it
(runtime/partial_run.check_signature: TensorFlow's messages), its partial DistStep is built
or reused (dist_step.py: registered with every task like a Session.run step's graphs; its
feeds arrive while it runs), and a `DistPartialRun` is kept under a handle that counts the
session's partial runs ("0", "1", ..., as TensorFlow's master numbers them).

A call (RunStep with the handle) is checked first (runtime/partial_run.PendingRun: each
feed and fetch once and only those set up; a fetch needing a feed not fed yet fails at once,
nothing sent), then makes one RunGraph per task with `is_partial`, all with the run's step
id. The first call goes to every task, each starting its part of the step (worker.py's
`_PartialStep`, running until the run ends); later ones go to the tasks that take a feed or
give a fetch; the last (every feed fed and every fetch fetched) to every task with
`is_last_partial_run`, each answering once its part has finished. The master's own task
runs on the caller's thread, the others' calls go out at once over gRPC.

A run ends when it is done, when a call fails (a kernel's error, the deadline: the first
failure on any task ends the step everywhere, and the error reported is the first that is
not a consequence of another), when its session closes, or when the client releases it
(`ReleasePartialRun`, a tensorflux method: a tensorflux client sends it when the handle
object is collected; a TensorFlow master keeps a run until its session closes). Ending a
run that has started cleans the step up on every task (CleanupGraph; the master's own task
at once), so no task keeps its thread or its rendezvous; tensorflux tasks end the step by
themselves after the last call.
"""

from __future__ import annotations

import random
import threading
import time

from tensorflux.distributed import wire
from tensorflux.distributed.dist_step import (
    DEFAULT_STEP_SECONDS,
    REPLY_GRACE_SECONDS,
    DistStep,
    as_abort,
    decode_run_graph_response,
    first_cause,
    reply_values,
)
from tensorflux.framework import errors
from tensorflux.protos import worker_pb2
from tensorflux.runtime import fetching, partial_run


class DistPartialRun:
    """One partial run of a master session (see the module docstring).

    Args:
      step: the signature's partial DistStep (held until the run ends).
      on_end: called once when the run ends (done, failed or released).
    """

    def __init__(self, step: DistStep, on_end):
        self.step = step
        step.hold()
        self.step_id = random.getrandbits(56) or 1
        self._pending = partial_run.PendingRun(step.signature)
        self._lock = threading.Lock()
        self._started = False  # a RunGraph has gone out: the tasks have the step
        self._ended = False
        self._on_end = on_end

    def run(self, feeds: dict, fetches: list[str], deadline: float | None) -> list:
        """Feeds `feeds` (tensor name -> array) and returns the values of `fetches`.

        Raises:
          InvalidArgumentError: a feed or fetch breaking TensorFlow's rules (the run goes
            on), a feed value that does not convert, or the run has ended.
          OpError: the step failed (the run ends): the first task's error that is not a
            consequence of another's.
        """
        step = self.step
        with self._lock:
            if self._ended:
                raise partial_run.no_setup_error(master=True)
            ids, positions = self._pending.check(list(feeds), fetches)
            args = {}
            for i, value in zip(ids, feeds.values(), strict=True):
                try:
                    args[i] = fetching.convert_feed(step.feeds[i], value)
                except (TypeError, ValueError) as e:
                    raise errors.InvalidArgumentError(None, None, str(e)) from None
            done = self._pending.take(ids, positions)
            first, self._started = not self._started, True
        exchange = _Exchange(self, deadline)
        exchange.start(args, positions, first, done)
        if exchange.failures:
            raise first_cause(exchange.failures)
        if done:
            # Tensorflux tasks ended the step with the last call; TensorFlow's want
            # CleanupGraph.
            self._end(step.need_cleanup, None)
        return [exchange.results[pos] for pos in positions]

    def release(self, error: errors.OpError | None = None) -> None:
        """Ends the run (idempotent): the step is cleaned up on every task, what waits for
        it on the master's task failing with `error` (default: CancelledError); later
        calls find no handle."""
        if error is None:
            error = errors.CancelledError(None, None, "The partial run was released")
        self._end(list(self.step.tasks.values()), error)

    def _end(self, tasks: list, error: errors.OpError | None) -> None:
        with self._lock:
            if self._ended:
                return
            self._ended = True
            started = self._started
        if started:
            for task in tasks:
                task.client.cleanup_graph(self.step_id, error)
        self.step.unhold()
        self._on_end()


class _Exchange:
    """One call's RunGraphs: the fetched values by position and the failures in the order
    they came (the first ends the run, which stops the calls still waiting)."""

    def __init__(self, run: DistPartialRun, deadline: float | None):
        self.run = run
        self.deadline = deadline
        self.results: dict[int, object] = {}
        self.failures: list[errors.OpError] = []
        self._lock = threading.Lock()

    def fail(self, error: errors.OpError) -> None:
        with self._lock:
            first = not self.failures
            self.failures.append(error)
        if first:
            self.run.release(as_abort(error))

    def start(self, args: dict, positions: list[int], first: bool, last: bool) -> None:
        """Calls every task concerned (see the module docstring) and waits for them."""
        run, step = self.run, self.run.step
        wanted_positions = set(positions)
        local, remote = None, []
        for task in step.tasks.values():
            sends = {key: args[i] for i, key in task.feeds if i in args}
            wanted = [(pos, key) for pos, key in task.fetches if pos in wanted_positions]
            if not (first or last or sends or wanted):
                continue
            request = worker_pb2.RunGraphRequest(
                session_handle=step.session.handle, create_worker_session_called=True,
                graph_handle=task.graph_handle, step_id=run.step_id,
                recv_key=[key for _, key in wanted], is_partial=True,
                is_last_partial_run=last, store_errors_in_response_body=True)
            if task.client.worker is not None:
                local = (task, wanted, sends)
                continue
            done = threading.Event()
            remaining = self._remaining()
            future = task.client.stub.future(
                "RunGraph", wire.encode_with_named_tensors(request, 3, sends.items()),
                decode_run_graph_response,
                timeout=DEFAULT_STEP_SECONDS if remaining is None else max(remaining, 1e-3))
            future.add_done_callback(
                lambda f, t=task, w=wanted, d=done: self._answered(t, w, f, d))
            remote.append((task, future, done))
        if local is not None:
            task, wanted, sends = local
            try:
                values = task.client.worker.run_partial(
                    step.session.handle, True, task.graph_handle, run.step_id, sends,
                    [key for _, key in wanted], last, self.deadline)
            except errors.OpError as e:
                self.fail(e)
            else:
                self._take(wanted, values)
        for task, future, done in remote:
            remaining = self._remaining()
            if not done.wait(None if remaining is None else remaining + REPLY_GRACE_SECONDS):
                future.cancel()
                self.fail(errors.DeadlineExceededError(
                    None, None, f"RunGraph on {task.client.task} did not answer before the "
                    "step's deadline"))

    def _answered(self, task, wanted: list, future, done: threading.Event) -> None:
        """A remote RunGraph's done callback."""
        try:
            try:
                _, by_key = reply_values(task, future)
            except errors.OpError as e:
                self.fail(e)
                return
            missing = [key for _, key in wanted if key not in by_key]
            if missing:
                self.fail(errors.InternalError(
                    None, None, f"RunGraph on {task.client.task} did not return {missing[0]}"))
                return
            self._take(wanted, [by_key[key] for _, key in wanted])
        finally:
            done.set()

    def _take(self, wanted: list, values: list) -> None:
        for (pos, _), v in zip(wanted, values, strict=True):
            self.results[pos] = v

    def _remaining(self) -> float | None:
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())
