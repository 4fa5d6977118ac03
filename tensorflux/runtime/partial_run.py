"""Partial runs of a local Session: TF1's `partial_run_setup` and `partial_run`.

A partial run is ONE step of a (feeds, fetches, targets) signature that the client feeds
and fetches in pieces: `partial_run_setup` starts it, each `partial_run` hands over some of
its feeds and takes some of its fetches, and the step's nodes run as soon as their inputs
exist, each once (a variable's update, a queue's dequeue happen once per partial run).

How it runs. The signature is pruned, optimized, placed and partitioned as a `Session.run`
step is (`PartialRunStep`, cached per signature), and then made what a worker's graph of a
partial run is (distributed/worker.py `RegisteredGraph(partial=True)`): each feed's `_Arg`
becomes a client-terminated `_Recv` and each fetch a client-terminated `_Send`, so feeds and
fetches cross the step's Rendezvous (TF's convention, dist_step.py's keys). Every
partition runs on the dataflow executor, whose asynchronous `_Recv`s let the rest of the
step go on while a feed has not come (a compiled schedule would block in a `_Recv` in a
fixed order, and a fetch computable from the feeds given so far could wait for a later
one). The step runs on a thread of its own (`PartialRun`), from setup until it is done:
the executor's driver loop keeps the step's state (pending counts, frames, values) on that
thread for the step's whole life, so nothing of it has to be suspended between calls; the
calls only put values into the Rendezvous and take values out of it, as a worker's
RunGraph calls of a partial run do.

Rules (DirectSession's, checked against TensorFlow 2.21):
- setup: no tensor both fed and fetched, no feed twice, something to fetch or run;
- a call feeds only declared feeds, each once, and fetches only declared fetches, each once;
  a fetch needing a declared feed that has not been fed (nor is fed by this call) fails at
  once (InvalidArgumentError "Fetch <feed> can't be computed ..."), the step unchanged
  (TensorFlow's walk: over the user's graph, through fed tensors to their producers, from
  the last fetch first; `Signature`, `PendingRun`, which a master's partial runs share);
- a kernel's error fails the call that waits for the step (a fetch, a feed, the last call)
  with that error, naming the node, and ends the step;
- the step is done when every feed has been fed and every fetch fetched: that call waits for
  the rest of the step (targets) and the handle is gone ("Must run 'setup' ...").
Where TensorFlow differs: its error for a failing kernel sometimes comes as the
CancelledError of a feed's `_Recv` ("RecvAsync is cancelled"), by a race; here it is always
the kernel's own. TensorFlow keeps a partial run nobody finishes until the session closes;
here the handle's collection ends it too.

Lifetime. The session keeps each live partial run under its handle; a partial run ends when
it is done, when it fails, when the session closes, or when the handle object returned by
setup is garbage collected (a plain copy of its string works while the original lives).
Ending it aborts its Rendezvous and cancels it, so its thread stops.
"""

from __future__ import annotations

import threading
from dataclasses import replace

from tensorflux.framework import errors
from tensorflux.framework.operation import Operation, Tensor
from tensorflux.framework.rendezvous_key import create_key
from tensorflux.framework.session_run_conversions import conversion_for
from tensorflux.runtime.cancellation import CancellationManager
from tensorflux.runtime.exec_options import ExecOptions
from tensorflux.runtime.graph_runner import GraphRunner, is_abort
from tensorflux.runtime.rendezvous import LocalRendezvous
from tensorflux.runtime.step_graph import Node

# How long a failed call waits for the step's own error once the step is failing (the
# driver loop records it before it aborts the Rendezvous; this only bounds a stuck kernel).
_FAILURE_WAIT_SECONDS = 10.0


class PartialRunHandle(str):
    """The handle `partial_run_setup` returns: TF's string, whose collection ends the run."""

    __slots__ = ("__weakref__",)


def setup_feeds(graph, feeds) -> list[Tensor]:
    """The Tensors `partial_run_setup`'s `feeds` name (composites split into their parts).

    Raises:
      TypeError, ValueError, KeyError: a feed that names no tensor of `graph`.
    """
    if feeds is None:
        feeds = []
    elif not isinstance(feeds, (list, tuple)):
        feeds = [feeds]
    out: list[Tensor] = []
    for feed in feeds:
        conv = conversion_for(feed)
        for sub in conv[0](feed)[0] if conv is not None else [feed]:
            try:
                t = graph.as_graph_element(sub, allow_tensor=True, allow_operation=False)
            except (TypeError, ValueError, KeyError) as e:
                msg = e.args[0] if e.args else str(e)
                raise type(e)(f"Cannot interpret argument `feed` key as Tensor: {msg}"
                              ) from None
            out.append(t)
    return out


def check_signature(feeds: list[str], fetches: list[str], targets: list[str]) -> None:
    """TensorFlow's checks of a partial run's signature (tensor and node names), in its
    order (a session's and a master's alike).

    Raises:
      InvalidArgumentError: nothing to fetch or run, a feed named twice, or a tensor both
        fed and fetched.
    """
    if not fetches and not targets:
        raise errors.InvalidArgumentError(
            None, None, "Must specify at least one target to fetch or execute.")
    fed: set[str] = set()
    for name in feeds:
        if name in fed:
            raise errors.InvalidArgumentError(None, None,
                                              f'Endpoint "{name}" fed more than once.')
        fed.add(name)
    for name in fetches:
        if name in fed:
            raise errors.InvalidArgumentError(None, None, f"{name} is both fed and fetched.")


class Signature:
    """A partial run's declared feeds and fetches (tensors of one graph) by name, and which
    feeds each fetch depends on (for TensorFlow's check that a fetch is computable from
    the feeds given so far)."""

    def __init__(self, feeds: list[Tensor], fetches: list[Tensor]):
        self.feeds = feeds
        self.fetches = fetches
        self.feed_index = {t.name: i for i, t in enumerate(feeds)}
        self.fetch_index = {t.name: i for i, t in enumerate(fetches)}
        self._feed_tensors = {t: i for i, t in enumerate(feeds)}
        self._needs: dict[int, frozenset[int]] = {}  # fetch position -> feed indices

    def missing_feed(self, positions: list[int], pending: set[int]) -> int | None:
        """The feed TensorFlow names when fetches `positions` need a feed in `pending`
        (feed indices not fed yet), or None when they need none of them."""
        if not pending:
            return None
        for pos in positions:
            needs = self._needs.get(pos)
            if needs is None:
                needs = self._needs[pos] = _feeds_needed(self.fetches[pos],
                                                          self._feed_tensors)
            if needs & pending:
                break
        else:
            return None
        return _first_pending([self.fetches[p] for p in positions],
                              {self.feeds[i]: i for i in pending})


def _feeds_needed(fetch: Tensor, feed_index: dict[Tensor, int]) -> frozenset[int]:
    """The feeds `fetch` depends on in the user's graph (through fed tensors too: their
    producers count, as in TensorFlow's check)."""
    out: set[int] = set()
    stack, visited = [fetch.op], {fetch.op}
    while stack:
        op = stack.pop()
        for t in op._inputs:
            i = feed_index.get(t)
            if i is not None:
                out.add(i)
            if t._op not in visited:
                visited.add(t._op)
                stack.append(t._op)
        for c in op._control_inputs:
            if c not in visited:
                visited.add(c)
                stack.append(c)
    return frozenset(out)


def _first_pending(fetches: list[Tensor], pending: dict[Tensor, int]) -> int | None:
    """TensorFlow's walk (CheckFetches): depth first from every fetch's op at once (the
    last fetch's first), over inputs and then control inputs; the first input met that is
    a pending feed."""
    stack = [t.op for t in fetches]
    visited: set[Operation] = set()
    while stack:
        op = stack.pop()
        for t in op._inputs:
            i = pending.get(t)
            if i is not None:
                return i
            if t._op not in visited:
                visited.add(t._op)
                stack.append(t._op)
        for c in op._control_inputs:
            if c not in visited:
                visited.add(c)
                stack.append(c)
    return None


class PendingRun:
    """What one partial run has fed and fetched (TensorFlow's RunState), and its checks of
    a call, with TensorFlow's messages (DirectSession's and the master's are the same)."""

    def __init__(self, signature: Signature):
        self.signature = signature
        self.fed: set[int] = set()
        self.fetched: set[int] = set()

    def check(self, feeds: list[str], fetches: list[str]) -> tuple[list[int], list[int]]:
        """The feed indices and fetch positions of a call feeding and fetching the tensors
        named; nothing is marked.

        Raises:
          InvalidArgumentError: a feed or fetch not declared at setup, or given before; a
            fetch needing a feed neither fed before nor by this call.
        """
        sig = self.signature
        ids = _declared(feeds, sig.feed_index, self.fed, "feed", "fed")
        positions = _declared(fetches, sig.fetch_index, self.fetched, "fetch", "fetched")
        pending = set(range(len(sig.feeds))) - self.fed - set(ids)
        i = sig.missing_feed(positions, pending)
        if i is not None:
            raise errors.InvalidArgumentError(
                None, None, f"Fetch {sig.feeds[i].name} can't be computed from the feeds "
                "that have been fed so far.")
        return ids, positions

    def take(self, ids: list[int], positions: list[int]) -> bool:
        """Marks a checked call's feeds fed and fetches fetched; True when every feed has
        been fed and every fetch fetched (the run is done)."""
        self.fed.update(ids)
        self.fetched.update(positions)
        sig = self.signature
        return len(self.fed) == len(sig.feeds) and len(self.fetched) == len(sig.fetches)


def handle_string(feeds, fetches, targets, count: int) -> str:
    """TensorFlow's handle: "a:0,b:0->r1:0,r2:0/targets/1/;<count>"."""
    return (f"{','.join(t.name for t in feeds)}->{','.join(t.name for t in fetches)}/"
            f"{','.join(op.name for op in targets)}/1/;{count}")


def _transfer_attrs(name: str, device: str, incarnation: int, **dtype) -> dict:
    return {**dtype, "tensor_name": name, "send_device": device, "recv_device": device,
            "send_device_incarnation": incarnation, "client_terminated": True}


class PartialRunStep:
    """A signature's partitions with client-terminated feeds and fetches, and their
    executors (built once, run by every partial run of the signature).

    Args:
      parts: the partitions (partition.partition's), changed in place.
      device_mgr: the session's devices.
      options: the session's ExecOptions (the strategy becomes "dataflow").
      feeds, fetches: the signature's tensors (fetches not fed).
      graph: the user's graph (errors name its ops).
      costs: the step's cost_model.StepCosts.
    """

    def __init__(self, parts: dict, device_mgr, options: ExecOptions, feeds: list[Tensor],
                 fetches: list[Tensor], graph, costs):
        self.feeds = feeds
        self.fetches = fetches
        self.signature = Signature(feeds, fetches)
        self.feed_keys: dict[int, str] = {}  # feed index -> key (pruned feeds have none)
        self.fetch_keys: list = [None] * len(fetches)  # position -> (key, Device)
        self.partition_graphs = parts
        next_id = 1 + max((n.id for p in parts.values() for n in p.nodes), default=0)
        part_nodes = []
        for p in parts.values():
            device = device_mgr.lookup(p.device)
            inc = device.incarnation
            for index, arg in p.args:
                name = feeds[index].name
                arg.op = "_Recv"
                arg.attrs = _transfer_attrs(name, p.device, inc, tensor_type=arg.attrs["T"])
                self.feed_keys[index] = create_key(p.device, inc, p.device, name)
            for pos, node, idx in p.fetches:
                t = fetches[pos]
                send = Node(f"_send_{t.op.name}_{t.value_index}_{pos}", "_Send",
                            _transfer_attrs(t.name, p.device, inc, T=node.output_dtypes[idx]),
                            [(node, idx)], [], [])
                send.device, send.id = p.device, next_id
                next_id += 1
                p.nodes.append(send)
                self.fetch_keys[pos] = (create_key(p.device, inc, p.device, t.name), device)
            part_nodes.append((device, p.nodes, [], []))
        # Asynchronous _Recvs need the dataflow executor (see the module docstring).
        strategy = replace(options, strategy="dataflow")
        self.runner = GraphRunner(part_nodes, strategy, 0, graph, costs)


class PartialRun:
    """One partial run in flight: its step running on a thread of its own (see the module
    docstring), and the feeds given and fetches taken so far.

    Args:
      step: the signature's PartialRunStep.
      session: the Session (what kernels see as `ctx.session`; it cancels the step on close).
      step_id: the step's id.
      on_end: called once when the run ends (done, failed or released).
    """

    def __init__(self, step: PartialRunStep, session, step_id: int, on_end):
        self.step = step
        self.rendezvous = LocalRendezvous()
        self.cancellation = CancellationManager()
        self._on_end = on_end
        # Reentrant: a handle's finalizer (release) may run on a thread inside `exchange`.
        self._lock = threading.RLock()
        self._pending = PendingRun(step.signature)
        self._held: list = []  # fed values, held to the step's end: never donated
        self._ended = False
        self.error: BaseException | None = None
        self.finished = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(session, step_id),
                                       name=f"tfx-partial-run-{step_id}", daemon=True)
        self.thread.start()

    def _run(self, session, step_id: int) -> None:
        try:
            self.step.runner.run(session, step_id, [], None, rendezvous=self.rendezvous,
                                 cancellation=self.cancellation)
        except BaseException as e:  # noqa: BLE001 - reported to the partial_run calls
            self.error = e
        finally:
            self.finished.set()

    def exchange(self, feeds: dict, fetches: list[Tensor], timeout: float | None) -> list:
        """Feeds `feeds` ({Tensor: array}) and returns the values of `fetches`.

        Raises:
          InvalidArgumentError: a feed or fetch breaking TensorFlow's rules (the run goes
            on), or the run has ended.
          OpError: the step failed (the run ends): the failing node's error.
        """
        step = self.step
        with self._lock:
            if self._ended:
                raise no_setup_error()
            feed_ids, positions = self._pending.check([t.name for t in feeds],
                                                      [t.name for t in fetches])
            done = self._pending.take(feed_ids, positions)
            self._held.extend(feeds.values())
        try:
            for i, value in zip(feed_ids, feeds.values(), strict=True):
                key = step.feed_keys.get(i)
                if key is not None:
                    self.rendezvous.send(key, value)
            values = [self._recv(pos, timeout) for pos in positions]
        except errors.OpError as e:
            raise self._failed(e) from None
        if done:
            if not self.finished.wait(timeout):
                raise self._failed(errors.DeadlineExceededError(
                    None, None, "Timed out waiting for the partial run's step to finish"))
            self._end()
            if self.error is not None:
                raise self.error
        return values

    def _recv(self, pos: int, timeout: float | None):
        key, device = self.step.fetch_keys[pos]
        value, is_dead = self.rendezvous.recv(key, timeout)
        if is_dead:
            raise errors.InvalidArgumentError(
                None, None, f"Fetched tensor {self.step.fetches[pos].name} was not computed "
                "(dead: on an untaken branch).")
        return value if device.device_type == "CPU" else device.to_host(value)

    def _failed(self, err: errors.OpError) -> errors.OpError:
        """Ends the run after `err` (a Rendezvous abort, or the call's deadline); returns
        the error to raise: after an abort, the step's own error when it has one."""
        if not is_abort(err):  # the call gave up: what its cancellation causes is an echo
            self.release(err)
            return err
        self.release()
        self.finished.wait(_FAILURE_WAIT_SECONDS)
        own = self.error
        if isinstance(own, errors.OpError) and not is_abort(own) and \
                not is_abort(own.__cause__):  # the step's error, not the abort's echo
            return own
        return err

    def release(self, reason: errors.OpError | None = None) -> None:
        """Ends the run (idempotent): the step is cancelled and its Rendezvous aborted, so
        its thread stops; later calls find no handle."""
        if not self._end():
            return
        if reason is None:
            reason = errors.CancelledError(None, None, "The partial run was released")
        aborted = errors.CancelledError(None, None, f"Partial run aborted: {reason.message}")
        aborted._abort_marker = True  # a consequence: the step's own error wins
        self.cancellation.start_cancel()
        self.rendezvous.start_abort(aborted)

    def _end(self) -> bool:
        """Marks the run ended; True the first time."""
        with self._lock:
            if self._ended:
                return False
            self._ended = True
        self._on_end()
        return True


def no_setup_error(master: bool = False) -> errors.InvalidArgumentError:
    """TensorFlow's error for a handle that names no live partial run: a session's, or
    (`master`) a master's, whose words differ."""
    message = "Must run PartialRunSetup before performing partial runs" if master else \
        "Must run 'setup' before performing partial runs!"
    return errors.InvalidArgumentError(None, None, message)


def _declared(names, index: dict, done: set, kind: str, past: str) -> list[int]:
    """The setup positions of the feeds or fetches `names` (`index`: name -> position).

    Raises:
      InvalidArgumentError: one was not declared at setup, or is in `done` already.
    """
    out = []
    for name in names:
        pos = index.get(name)
        if pos is None:
            raise errors.InvalidArgumentError(
                None, None, f"The {kind} {name} was not specified in partial_run_setup.")
        if pos in done:
            raise errors.InvalidArgumentError(
                None, None, f"The {kind} {name} has already been {past}.")
        out.append(pos)
    return out
