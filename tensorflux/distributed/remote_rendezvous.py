"""The Rendezvous of one step on one worker task, and the table of them (paper §3.3).

A step that spans tasks runs one registered graph per task, all with the same step id. On
each task, a `RemoteRendezvous` for that step id:
- keeps what this task's _Sends produce in a LocalRendezvous, where this task's own
  _Recvs and the RecvTensor calls of other tasks pick them up;
- answers a _Recv whose key names a device of another task (`src_device` of the key) by
  calling RecvTensor on that task, with the step id and the key, TensorFlow's protocol.
A RecvTensor call may arrive before this task has started the step, so the table creates
a step's rendezvous on first use, whoever comes first. A step ends on a task when its
RunGraph has finished and every tensor it sent has been received (`finish_run`, `recv`):
its rendezvous is dropped then, without a CleanupGraph call (a tensorflux master sends
one only after a failure; a TensorFlow master sends one after every step, which is
harmless). A rendezvous nobody cleans up is dropped after `STALE_SECONDS` (or
`DONE_STALE_SECONDS` once its run has finished: a value sent but never received).

Between two tensorflux tasks, the edges the master marked are pushed instead (push.py):
a _Send whose key is in the step's `push_out` hands the tensor to the push stream of the
consumer's task, and a _Recv whose key is in `push_in` waits in the local table, which
the consumer's push handler fills (`RendezvousMgr.deliver`).

Invariants: after `start_abort(error)` every pending Recv, local or remote, completes with
that error (in-flight RecvTensor calls are cancelled); the local table is never touched by
a remote Recv (values from other tasks go straight to the waiting kernel), only by pushes.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor

from tensorflux.distributed import push_held, wire
from tensorflux.framework import errors
from tensorflux.framework.rendezvous_key import parse_key
from tensorflux.kernels.cpu import native
from tensorflux.protos import worker_pb2
from tensorflux.runtime.rendezvous import DoneCallback, LocalRendezvous, Rendezvous

STALE_SECONDS = 600.0
DONE_STALE_SECONDS = 30.0
_ENDED_REMEMBERED = 4096  # step ids whose late pushes are dropped


_PEERS: dict = {}  # push_in -> the tasks that push to it


def _task(device: str) -> str:
    return device.split("/device:", 1)[0]


class RemoteRendezvous(Rendezvous):
    """One step's rendezvous on one task (see the module docstring).

    Args:
      step_id: the step.
      is_local: `is_local(device_name)`, True for this task's devices.
      recv_remote: `recv_remote(step_id, key, done) -> cancel()`: asks the task owning the
        key's source device for the tensor and calls `done(err, value, is_dead)`.
    """

    def __init__(self, step_id: int, is_local, recv_remote, push=None, segment=None):
        self.step_id = step_id
        self._segment = segment
        self.local = LocalRendezvous()
        self.created = time.monotonic()
        self._is_local = is_local
        self._recv_remote = recv_remote
        self._push = push
        self._lock = threading.Lock()
        self._inflight: dict[int, object] = {}
        self._ids = iter(range(1 << 62))
        self._status: errors.OpError | None = None
        self.run_done = False  # the task's RunGraph finished (its sends are all made)
        self.configured = False  # a RunGraph of this task has started the step
        self.by_push = False  # made by a tensor pushed before the step started here
        self.push_out: frozenset = frozenset()  # key prefixes this task pushes
        self.push_in: frozenset = frozenset()  # key prefixes pushed to this task
        self.push_peers: frozenset = frozenset()  # the tasks that push to it
        self.pushed_to: set[str] = set()  # the tasks it pushed to

    def _waiting(self) -> None:
        # What this step waits for comes from another process: helpers spinning for a
        # next task would take the cores it runs on.
        native.helpers_rest()

    def configure(self, push_out: frozenset, push_in: frozenset) -> None:
        """The step's pushed edges (from the registered graph), before it runs here."""
        self.push_out, self.push_in = push_out, push_in
        peers = _PEERS.get(push_in)  # a registered graph passes the same set every step
        if peers is None:
            peers = frozenset(_task(k.partition(";")[0]) for k in push_in)
            if len(_PEERS) >= _ENDED_REMEMBERED:
                _PEERS.clear()
            _PEERS[push_in] = peers
        self.push_peers = peers
        self.configured = True

    def send(self, key: str, value, is_dead: bool = False) -> None:
        if self.push_out and key.rpartition(";")[0] in self.push_out:
            if self._status is not None:
                raise self._status
            if self._push(self, key, value, is_dead):
                return
        self.local.send(key, value, is_dead)

    def hold_sends(self):
        """Holds this thread's pushes (push_held.holding) until `flush_sends`."""
        return push_held.holding() if self.push_out else contextlib.nullcontext()

    def flush_sends(self) -> None:
        push_held.flush_held()

    def push_allocator(self, dst_device: str):
        """`alloc(shape, dtype) -> ndarray | None` placing an array in the shared segment
        of this task's push connection to `dst_device`'s task (a tensor pushed there from
        it is not copied), or None when there is none (yet)."""
        return None if self._segment is None else self._segment(dst_device)

    def recv_async(self, key: str, done: DoneCallback) -> None:
        if (self.push_in and key.rpartition(";")[0] in self.push_in) or \
                self._is_local(parse_key(key).src_device):
            self.local.recv_async(key, done)
            return
        self._recv_from_remote(key, done)

    def _recv_from_remote(self, key: str, done: DoneCallback) -> None:
        with self._lock:
            status = self._status
            call_id = next(self._ids)
            if status is None:
                self._inflight[call_id] = None
        if status is not None:
            done(status, None, False)
            return
        finished = threading.Event()

        def on_value(err, value, is_dead):
            with self._lock:
                self._inflight.pop(call_id, None)
                if finished.is_set():
                    return
                finished.set()
                if err is None and self._status is not None:
                    err = self._status
            done(err, value, is_dead)

        cancel = self._recv_remote(self.step_id, key, on_value)
        with self._lock:
            if call_id in self._inflight:
                self._inflight[call_id] = (cancel, on_value)

    def pull(self, key: str) -> None:
        """A pushed notice: fetch `key` with RecvTensor and leave it in the local table."""
        def on_value(err, value, is_dead):
            if err is not None:
                self.start_abort(err)
                return
            try:
                self.local.send(key, value, is_dead)
            except errors.OpError:
                pass  # aborted meanwhile

        self._recv_from_remote(key, on_value)

    def start_abort(self, error: errors.OpError) -> None:
        with self._lock:
            if self._status is not None:
                return
            self._status = error
            calls = [c for c in self._inflight.values() if c is not None]
            self._inflight.clear()
        self.local.start_abort(error)
        for cancel, on_value in calls:
            cancel()
            on_value(error, None, False)


class RendezvousMgr:
    """Step id -> RemoteRendezvous for one worker task (thread-safe).

    Args:
      is_local: `is_local(device_name)`, True for this task's devices.
      recv_remote: see RemoteRendezvous.
      pushers: a push.Pushers of this task (None: nothing is pushed from here).
    """

    def __init__(self, is_local, recv_remote, pushers=None):
        self._is_local = is_local
        self._recv_remote = recv_remote
        self.pushers = pushers
        self._lock = threading.Lock()
        self._steps: dict[int, RemoteRendezvous] = {}
        self._ended: OrderedDict[int, None] = OrderedDict()
        # Steps cleaned up (failed) here, with their error: a run of one that starts after
        # its cleanup (another task's failure can come back before this task's own part
        # of the step has begun) is aborted at once instead of waiting for tensors that
        # will not come.
        self._cleaned: OrderedDict[int, errors.OpError] = OrderedDict()
        self._peer_lost: dict[str, float] = {}  # task -> when its push stream last ended
        self._dst_devices: dict[str, str] = {}  # key -> its dst_device (keys recur per step)
        self._last_sweep = time.monotonic()

    def find_or_create(self, step_id: int) -> RemoteRendezvous:
        return self._find_or_create(step_id)

    def _find_or_create(self, step_id: int, for_push: bool = False
                        ) -> RemoteRendezvous | None:
        with self._lock:
            rdv = self._steps.get(step_id)
            if rdv is None:
                if for_push and step_id in self._ended:
                    return None
                rdv = self._steps[step_id] = RemoteRendezvous(
                    step_id, self._is_local, self._recv_remote, self._push, self._segment)
                rdv.by_push = for_push
                stale = self._stale_locked()
            else:
                stale = []
        for old in stale:
            old.start_abort(errors.AbortedError(
                None, None, f"Step {old.step_id} was never cleaned up by its master; "
                "its transfers were dropped"))
        return rdv

    def start_run(self, step_id: int, push_out: frozenset, push_in: frozenset
                  ) -> RemoteRendezvous:
        """The step's rendezvous, configured for this task's run of it. A step expecting
        pushes from a task whose stream ended since the rendezvous was made is aborted."""
        rdv = self._find_or_create(step_id)
        rdv.configure(push_out, push_in)
        with self._lock:
            lost = [t for t in rdv.push_peers if self._peer_lost.get(t, -1.0) >= rdv.created]
            cleaned = self._cleaned.get(step_id)
        if cleaned is not None:
            rdv.start_abort(cleaned)
        elif lost:
            rdv.start_abort(_push_lost(lost[0]))
        return rdv

    def _push(self, rdv: RemoteRendezvous, key: str, value, is_dead: bool) -> bool:
        if self.pushers is None:
            raise errors.InternalError(None, None, f"{key} is marked to be pushed, but this "
                                       "task has no connections to other tasks")
        task = _task(self._dst_device(key))
        rdv.pushed_to.add(task)
        return self.pushers.push(task, rdv.step_id, key, value, is_dead)

    def _segment(self, dst_device: str):
        pushers = self.pushers
        return None if pushers is None else pushers.allocator(_task(dst_device))

    def deliver(self, peer: str, items) -> None:
        """Pushed tensors from task `peer`: (step_id, key, value, is_dead, pull) each.

        Raises:
          InvalidArgumentError: a malformed key, or one for a device of another task.
        """
        for step_id, key, value, is_dead, pull in items:
            dst = self._dst_device(key)
            if not self._is_local(dst):
                raise errors.InvalidArgumentError(
                    None, None, f"A tensor pushed from {peer or 'a task'} is for "
                    f"{dst}, a device of another task")
            rdv = self._find_or_create(step_id, for_push=True)
            if rdv is None:
                continue  # the step has ended here
            if pull:
                rdv.pull(key)
                continue
            try:
                rdv.local.send(key, value, is_dead)
            except errors.OpError:
                pass  # the step was aborted here

    def _dst_device(self, key: str) -> str:
        """The key's dst_device (InvalidArgumentError for a malformed key), remembered:
        a step's keys are the same every step."""
        dst = self._dst_devices.get(key)
        if dst is None:
            dst = parse_key(key).dst_device
            if len(self._dst_devices) >= _ENDED_REMEMBERED:
                self._dst_devices.clear()
            self._dst_devices[key] = dst
        return dst

    def push_stream_ended(self, peer: str) -> None:
        """A push stream from `peer` ended (its task stopped, or the connection broke):
        the running steps that expect pushes from it are aborted."""
        with self._lock:
            self._peer_lost[peer] = time.monotonic()
            steps = [r for r in self._steps.values()
                     if peer in r.push_peers and not r.run_done]
        for rdv in steps:
            rdv.start_abort(_push_lost(peer))

    def push_broken(self, task: str, error: errors.OpError) -> None:
        """A push stream to `task` ended: what was queued on it may be lost, so the
        running steps that pushed to it are aborted."""
        with self._lock:
            steps = [r for r in self._steps.values()
                     if task in r.pushed_to and not r.run_done]
        for rdv in steps:
            rdv.start_abort(errors.UnavailableError(
                None, None, f"Tensors pushed to {task} may be lost: {error.message}"))

    def _forget_locked(self, step_id: int) -> None:
        self._ended[step_id] = None
        if len(self._ended) > _ENDED_REMEMBERED:
            self._ended.popitem(last=False)

    def finish_run(self, step_id: int) -> None:
        """This task's run of the step ended well: the rendezvous goes once what it sent
        has been received (at once if nothing is waiting)."""
        with self._lock:
            rdv = self._steps.get(step_id)
            if rdv is None:
                return
            rdv.run_done = True
            self._forget_locked(step_id)
            if not rdv.local.pending_keys():
                del self._steps[step_id]

    def recv(self, step_id: int, key: str, timeout: float | None):
        """(value, is_dead) this task sent under `key` (a RecvTensor call), dropping the
        step's rendezvous when that was the last value of a finished run. A step cleaned
        up here fails at once (a rendezvous made for it would wait for nothing)."""
        with self._lock:
            cleaned = self._cleaned.get(step_id) if step_id not in self._steps else None
        if cleaned is not None:
            raise cleaned
        rdv = self.find_or_create(step_id)
        result = rdv.local.recv(key, timeout)
        if rdv.run_done:
            with self._lock:
                if self._steps.get(step_id) is rdv and not rdv.local.pending_keys():
                    del self._steps[step_id]
        return result

    def _stale_locked(self) -> list[RemoteRendezvous]:
        now = time.monotonic()
        if now - self._last_sweep < DONE_STALE_SECONDS / 10:
            return []
        self._last_sweep = now
        stale = [r for r in self._steps.values() if now - r.created > STALE_SECONDS or
                 ((r.run_done or (r.by_push and not r.configured)) and
                  now - r.created > DONE_STALE_SECONDS)]
        for r in stale:
            del self._steps[r.step_id]
            self._forget_locked(r.step_id)
        return stale

    def ended(self, step_id: int) -> errors.OpError | None:
        """Why step `step_id` has ended here (its cleanup's error, or an InvalidArgumentError
        for a step whose run finished), or None for a step still running or unknown."""
        with self._lock:
            cleaned = self._cleaned.get(step_id)
            if cleaned is None and step_id in self._ended:
                return errors.InvalidArgumentError(None, None,
                                                   f"Step {step_id} has ended on this task")
        return cleaned

    def cleanup(self, step_id: int, error: errors.OpError | None = None) -> None:
        """Ends a step here: pending Recvs fail with `error` (default: CancelledError), and
        so does a run of the step that starts here later (`start_run`)."""
        error = error or errors.CancelledError(None, None, f"Step {step_id} was cleaned up")
        with self._lock:
            rdv = self._steps.pop(step_id, None)
            self._forget_locked(step_id)
            self._cleaned[step_id] = error
            if len(self._cleaned) > _ENDED_REMEMBERED:
                self._cleaned.popitem(last=False)
        if rdv is not None:
            rdv.start_abort(error)

    def cleanup_all(self, error: errors.OpError) -> None:
        with self._lock:
            steps, self._steps = list(self._steps.values()), {}
        for rdv in steps:
            rdv.start_abort(error)

    def __len__(self) -> int:
        return len(self._steps)


def _push_lost(peer: str) -> errors.OpError:
    return errors.UnavailableError(
        None, None, f"The stream of tensors pushed from {peer or 'another task'} ended "
        "during the step: that task stopped or cannot be reached")


class _Call:
    """One RecvTensor call, started on the issuing thread; cancellable before it starts."""

    __slots__ = ("future", "cancelled", "lock")

    def __init__(self):
        self.future = None
        self.cancelled = False
        self.lock = threading.Lock()

    def cancel(self) -> None:
        with self.lock:
            self.cancelled = True
            future = self.future
        if future is not None:
            future.cancel()


# Starting a gRPC call costs a Python thread ~0.5 ms; an executor that needs several
# tensors from other tasks would otherwise start its calls one after another before it runs
# anything else (its own sends, which other tasks wait for). The calls start here instead.
_issuer = ThreadPoolExecutor(max_workers=4, thread_name_prefix="tfx-recv-tensor")


def recv_tensor_caller(stub_for):
    """`recv_remote` for RendezvousMgr: RecvTensor on the task owning the key's source
    device, through `stub_for(device_name) -> rpc.Stub` (worker service)."""

    def recv_remote(step_id: int, key: str, done: DoneCallback):
        try:
            stub = stub_for(parse_key(key).src_device)
        except errors.OpError as e:
            done(e, None, False)
            return lambda: None
        call = _Call()

        def finished(f):
            if f.cancelled():
                return
            try:
                data = f.result()
            except Exception as e:  # noqa: BLE001 - grpc.RpcError
                done(stub.error(e, "RecvTensor"), None, False)
                return
            try:
                value, is_dead = wire.decode_recv_tensor_response(data)
            except errors.OpError as e:
                done(e, None, False)
                return
            done(None, value, is_dead)

        def start():
            request = worker_pb2.RecvTensorRequest(step_id=step_id, rendezvous_key=key)
            with call.lock:
                if call.cancelled:
                    return
                call.future = stub.future("RecvTensor", request, None, timeout=24 * 3600.0)
            call.future.add_done_callback(finished)

        _issuer.submit(start)
        return call.cancel

    return recv_remote
