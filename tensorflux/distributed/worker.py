"""The worker service of one task (paper §3.3 and §5; TensorFlow's worker.proto).

A master registers, once per graph version, the part of a step that runs on this task
(`RegisterGraph`: a GraphDef whose nodes are placed on this task's devices, with _Send/
_Recv nodes at the edges that cross to other tasks), then runs it once per step
(`RunGraph`), all tasks with the same step id. Tensors cross between tasks through
`RecvTensor` (remote_rendezvous.py).

A registered graph is built once into a GraphRunner, like a local step:
- its client-terminated _Recv nodes (the step's feeds) become `_Arg`s, so a RunGraph's
  `send` tensors are arguments, and its client-terminated _Send nodes (fetches) become
  fetched outputs answered in the response's `recv`; no rendezvous is involved, and a
  graph that does not cross tasks runs as fast as a local step;
- the rest is placed on this task's devices as the master assigned them and partitioned
  per device (edges between them become local _Send/_Recv pairs).
A step that crosses tasks gets the task's RemoteRendezvous for its step id.

Sessions: a master creates a worker session (`CreateWorkerSession`) and registers its
graphs in it; `DeleteWorkerSession` drops them. Unknown session or graph handles mean the
master is talking to a task that restarted (or was never told): AbortedError, TensorFlow's
code for a lost session. Variables and queues live in the devices' resource managers,
which outlive sessions (a parameter server keeps its variables) until `CleanupAll` or a
master's Reset clears their containers.
"""

from __future__ import annotations

import itertools
import threading
import time

from tensorflux.distributed import push, wire
from tensorflux.distributed.remote_rendezvous import RendezvousMgr, recv_tensor_caller
from tensorflux.framework import errors, importer
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.rendezvous_key import create_key, parse_key
from tensorflux.kernels import intra_op
from tensorflux.protos import config_pb2, device_attributes_pb2, graph_pb2, worker_pb2
from tensorflux.runtime import partition, placer, tracing
from tensorflux.runtime import step_graph as step_graph_lib
from tensorflux.runtime.cancellation import CancellationManager
from tensorflux.runtime.exec_options import ExecOptions
from tensorflux.runtime.graph_runner import GraphRunner, is_abort


class WorkerEnv:
    """What a task's services share: its name, its devices, the cluster, the channels.

    Args:
      job, task_index, replica: this task.
      device_mgr: this task's devices (named `/job:J/replica:R/task:T/device:...`).
      cluster: job -> {task index -> "host:port"}.
      stub_for_task: `stub_for_task(task_name) -> rpc.Stub` of another task's worker
        service (None: a single-task environment).
      max_push_bytes: the largest tensor pushed to another task (push.py; 0: any);
        larger ones are fetched with RecvTensor.
    """

    def __init__(self, job: str, task_index: int, device_mgr, cluster: dict,
                 stub_for_task=None, replica: int = 0, max_push_bytes: int = 0):
        self.job, self.task_index, self.replica = job, task_index, replica
        self.max_push_bytes = max_push_bytes
        self.task_name = f"/job:{job}/replica:{replica}/task:{task_index}"
        self.device_mgr = device_mgr
        self.cluster = cluster
        self.stub_for_task = stub_for_task

    def is_local(self, device: str) -> bool:
        return task_of(device) == self.task_name

    def stub_for_device(self, device: str):
        task = task_of(device)
        if self.stub_for_task is None:
            raise errors.InvalidArgumentError(None, None, f"No route to task {task}")
        return self.stub_for_task(task)


def task_of(device: str) -> str:
    """`/job:w/replica:0/task:1/device:CPU:0` -> `/job:w/replica:0/task:1`."""
    return device.split("/device:", 1)[0]


# On each node of a graph a tensorflux master registers with a tensorflux task: its
# position in one order of the whole step (`static_executor.step_order` over every task's
# partitions). A task whose graph is one partition runs it compiled in that order, blocking
# in its _Recvs from other tasks; the order, being one for all tasks, cannot deadlock.
STEP_ORDER_ATTR = "_tfx_order"


def given_order(parts: dict) -> list | None:
    """The master's order of the whole step cut to this task's graph, when it is one
    partition whose nodes all carry one (the step's feeds, `_Arg`s made here, first) and
    it is a topological order; else None."""
    if len(parts) != 1:
        return None
    (p,) = parts.values()
    position = {}
    for n in p.nodes:
        v = n.attrs.get(STEP_ORDER_ATTR)
        if v is None and n.op != "_Arg":
            return None
        position[n] = -1 if v is None else int(v)
    order = sorted(p.nodes, key=lambda n: (position[n], n.id))
    rank = {n: k for k, n in enumerate(order)}
    for n in order:
        for src in [s for s, _ in n.inputs] + n.control_inputs:
            if rank.get(src, len(rank)) >= rank[n]:
                return None
    return order


# What a tensorflux worker writes in its devices' physical_device_desc: a master knows
# from it that the task ends its steps by itself (remote_rendezvous.py) and needs no
# CleanupGraph after a step that went well.
PHYSICAL_DEVICE_DESC = "tensorflux"


def device_attributes(device) -> device_attributes_pb2.DeviceAttributes:
    return device_attributes_pb2.DeviceAttributes(
        name=device.name, device_type=device.device_type, memory_limit=device.memory_limit,
        incarnation=device.incarnation & 0xFFFFFFFFFFFFFFFF,
        physical_device_desc=getattr(device, "physical_device_desc", PHYSICAL_DEVICE_DESC))


class RegisteredGraph:
    """One registered graph, built into a GraphRunner (see the module docstring).

    Raises:
      InvalidArgumentError: the GraphDef does not import, or names devices this task does
        not have.
    """

    def __init__(self, env: WorkerEnv, graph_def, options: ExecOptions,
                 partial: bool = False):
        """With `partial`, client-terminated transfers stay rendezvous transfers (a partial
        run feeds and fetches while the step runs)."""
        self.graph_def = graph_def
        self.options = options
        self.env = env
        graph = graph_lib.Graph()
        with graph.as_default():
            try:
                importer.import_graph_def(graph_def, name="")
            except (ValueError, TypeError, KeyError) as e:
                raise errors.InvalidArgumentError(
                    None, None, f"RegisterGraph on {env.task_name}: invalid GraphDef: {e}"
                ) from None
        feeds, fetches, targets = [], [], []
        self.feed_keys: list[str] = []
        fetch_keys: list[str] = []
        push_out, push_in = set(), set()
        for op in graph.get_operations():
            if op.type in ("_Send", "_Recv") and op._attrs.get(push.PUSH_ATTR):
                prefix = push.key_prefix(_key_of(op._attrs))
                (push_out if op.type == "_Send" else push_in).add(prefix)
            terminated = not partial and op.type in ("_Send", "_Recv") and \
                op._attrs.get("client_terminated")
            if terminated and op.type == "_Recv":
                feeds.append(op.outputs[0])
                self.feed_keys.append(_key_of(op._attrs))
            elif terminated:
                fetches.append(op.inputs[0])
                fetch_keys.append(_key_of(op._attrs))
            else:
                targets.append(op)
        # Edges to/from other tensorflux tasks that the master marked (push.py).
        self.push_out, self.push_in = frozenset(push_out), frozenset(push_in)
        sg = step_graph_lib.build(feeds, fetches, targets)
        for n in sg.nodes:
            n.traceback = ()  # imported here: the creation site is the client's
        for arg, t in zip(sg.args, feeds, strict=True):
            arg.requested_device = t.op.device
        for n in sg.nodes:
            if n.requested_device and not env.is_local(n.requested_device):
                raise errors.InvalidArgumentError(
                    None, None, f"Node {n.name} of a graph registered on {env.task_name} is "
                    f"placed on {n.requested_device}, another task")
        placer.place(sg, env.device_mgr, pinned={})
        parts = partition.partition(sg, env.device_mgr)
        self.crosses_tasks = partial or any(
            n.op in ("_Send", "_Recv") and not (env.is_local(n.attrs["send_device"]) and
                                                env.is_local(n.attrs["recv_device"]))
            for p in parts.values() for n in p.nodes)
        self.fetch_index = {k: i for i, k in enumerate(fetch_keys)}
        self.partition_graphs = parts
        order = given_order(parts) if self.crosses_tasks and not partial else None
        self.runner = GraphRunner(
            [(env.device_mgr.lookup(p.device), p.nodes, [(n, i) for _, n, i in p.fetches],
              [pos for pos, _, _ in p.fetches]) for p in parts.values()],
            options, len(sg.fetches), graph, orders=None if order is None else [order])
        self._partial: RegisteredGraph | None = None
        self._partial_lock = threading.Lock()

    def partial(self) -> RegisteredGraph:
        """The variant of this graph for partial runs (built on first use)."""
        with self._partial_lock:
            if self._partial is None:
                self._partial = RegisteredGraph(self.env, self.graph_def, self.options,
                                                partial=True)
            return self._partial


# How long a partial run's call that saw its step aborted waits for the step's own error
# (the executor records it before it aborts the rendezvous; this only bounds a stuck kernel).
_FAILURE_WAIT_SECONDS = 5.0


class _PartialStep:
    """A partial run's step on this task (TensorFlow's PartialRunMgr entry): the graph runs
    on a thread of its own from the run's first RunGraph on, while each RunGraph puts its
    feeds into the step's rendezvous and takes its fetches out. It ends with the run's last
    RunGraph, or when the master cleans the step up (CleanupGraph: the run failed or was
    released), or when its worker session is deleted: it is cancelled and its rendezvous
    aborted, so the thread stops."""

    def __init__(self, worker: Worker, session: WorkerSession, graph: RegisteredGraph,
                 step_id: int):
        self.session = session
        self.rendezvous = worker.rendezvous_mgr.start_run(step_id, graph.push_out,
                                                          graph.push_in)
        self.cancellation = CancellationManager()
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(graph, session, step_id),
                                       name=f"tfx-partial-{step_id}", daemon=True)
        self.thread.start()

    def _run(self, graph: RegisteredGraph, session: WorkerSession, step_id: int) -> None:
        try:
            graph.runner.run(session, step_id, [], None, rendezvous=self.rendezvous,
                             cancellation=self.cancellation)
        except BaseException as e:  # noqa: BLE001 - reported to the RunGraph calls
            self.error = e
        finally:
            self.done.set()

    def exchange(self, sends: dict, recv_keys: list, last: bool,
                 deadline: float | None) -> list:
        """Feeds `sends` ({key: array}) and returns the values of `recv_keys`; the `last`
        call also waits for the step to finish.

        Raises:
          OpError: the step failed (its own error, not the abort that follows it), or
            the deadline passed.
        """
        values = []
        try:
            for key, value in sends.items():
                self.rendezvous.send(key, value)
            for key in recv_keys:
                value, _ = self.rendezvous.local.recv(key, _remaining(deadline))
                values.append(value)
        except errors.OpError as e:
            raise self._own_error(e) from None
        if last:
            if not self.done.wait(_remaining(deadline)):
                raise errors.DeadlineExceededError(
                    None, None, "Timed out waiting for the partial run's step to finish")
            if self.error is not None:
                raise self.error
        return values

    def _own_error(self, e: errors.OpError) -> errors.OpError:
        """The error to report for `e`: the step's own after an abort, when it has one."""
        if isinstance(e, errors.DeadlineExceededError):
            return e
        self.done.wait(_FAILURE_WAIT_SECONDS)
        own = self.error
        if isinstance(own, errors.OpError) and not is_abort(own):
            return own
        return e

    def end(self, error: errors.OpError) -> None:
        """Stops the step: cancelled, its rendezvous aborted with `error`."""
        self.cancellation.start_cancel()
        self.rendezvous.start_abort(error)


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _key_of(attrs: dict) -> str:
    return create_key(attrs["send_device"], attrs["send_device_incarnation"],
                      attrs["recv_device"], attrs["tensor_name"])


class WorkerSession:
    """The graphs one master registered, and the steps it runs (for cancellation)."""

    def __init__(self, handle: str, intra_op_threads: int):
        self.handle = handle
        # What kernels split over (intra_op.workers reads it as a local session's), fixed
        # when the session is made: a kernel call reads no environment variable.
        self._intra_op_threads = intra_op_threads
        self.graphs: dict[str, RegisteredGraph] = {}
        self._active: dict[int, CancellationManager] = {}

    # GraphRunner registers its cancellable steps with the "session" it is given.
    def _register_step(self, cm: CancellationManager) -> None:
        self._active[id(cm)] = cm

    def _deregister_step(self, cm: CancellationManager) -> None:
        self._active.pop(id(cm), None)

    def cancel_all(self) -> None:
        for cm in list(self._active.values()):
            cm.start_cancel()


class Worker:
    """The worker service's methods, as Python calls (the master calls its own task's
    worker directly; `WorkerServicer` puts them on gRPC)."""

    def __init__(self, env: WorkerEnv, exec_options: ExecOptions | None = None,
                 config=None):
        self.env = env
        # The task's ConfigProto (tf.train.Server's `config`): its intra-op threads, or
        # TF_NUM_INTRAOP_THREADS, or the cores, read once as TensorFlow sizes a worker's pool.
        self._intra_op_threads = intra_op.intra_op_threads(config)
        self.exec_options = ExecOptions.from_config(None, exec_options)
        self.rendezvous_mgr = RendezvousMgr(env.is_local,
                                            recv_tensor_caller(env.stub_for_device))
        if env.stub_for_task is not None:
            self.rendezvous_mgr.pushers = push.Pushers(
                env.task_name, env.stub_for_task, self.rendezvous_mgr.push_broken,
                env.max_push_bytes)
        self._lock = threading.Lock()
        # "" is the session of masters that register graphs without creating one.
        self._sessions: dict[str, WorkerSession] = {"": WorkerSession("", self._intra_op_threads)}
        self._graph_ids = itertools.count(1)
        self._partial_steps: dict[int, _PartialStep] = {}
        self._log_steps = False
        self.logged_steps: list = []

    # ---- sessions and graphs ----------------------------------------------------------
    def get_status(self, request=None) -> worker_pb2.GetStatusResponse:
        return worker_pb2.GetStatusResponse(
            device_attributes=[device_attributes(d) for d in self.env.device_mgr.devices])

    def create_worker_session(self, request) -> worker_pb2.CreateWorkerSessionResponse:
        with self._lock:
            self._sessions.setdefault(request.session_handle,
                                      WorkerSession(request.session_handle,
                                                    self._intra_op_threads))
        return worker_pb2.CreateWorkerSessionResponse()

    def delete_worker_session(self, request) -> worker_pb2.DeleteWorkerSessionResponse:
        with self._lock:
            session = self._sessions.pop(request.session_handle, None) \
                if request.session_handle else None
            steps = [i for i, p in self._partial_steps.items() if p.session is session]
        if session is not None:
            session.cancel_all()
            for step_id in steps:
                self.end_step(step_id, errors.CancelledError(
                    None, None, f"Session {request.session_handle} was closed"))
        return worker_pb2.DeleteWorkerSessionResponse()

    def session(self, handle: str, called: bool = True) -> WorkerSession:
        s = self._sessions.get(handle if called else "")
        if s is None:
            raise errors.AbortedError(
                None, None, f"Session {handle} is not found on {self.env.task_name}: the "
                "task may have restarted since the session was created")
        return s

    def register_graph(self, request) -> worker_pb2.RegisterGraphResponse:
        session = self.session(request.session_handle, request.create_worker_session_called)
        graph = RegisteredGraph(self.env, request.graph_def, self.exec_options)
        handle = f"{self.env.task_name}/graph_{next(self._graph_ids)}"
        with self._lock:
            session.graphs[handle] = graph
        return worker_pb2.RegisterGraphResponse(graph_handle=handle)

    def deregister_graph(self, request) -> worker_pb2.DeregisterGraphResponse:
        session = self.session(request.session_handle, request.create_worker_session_called)
        with self._lock:
            session.graphs.pop(request.graph_handle, None)
        return worker_pb2.DeregisterGraphResponse()

    def _graph(self, session: WorkerSession, handle: str) -> RegisteredGraph:
        g = session.graphs.get(handle)
        if g is None:
            raise errors.AbortedError(None, None, f"Graph handle {handle} is not found on "
                                      f"{self.env.task_name}: the task may have restarted")
        return g

    # ---- steps ------------------------------------------------------------------------
    def run_partial(self, session_handle: str, called: bool, graph_handle: str,
                    step_id: int, sends: dict, recv_keys, last: bool,
                    deadline: float | None = None) -> list:
        """One RunGraph of a partial run: the first starts the step, each feeds `sends` and
        returns the values of `recv_keys`; the `last` waits for the step to finish, and
        the step ends here.

        Raises:
          AbortedError: unknown session or graph handle.
          CancelledError, InvalidArgumentError: the step has ended here (cleaned up by
            its master, or finished).
          OpError: the step failed.
        """
        session = self.session(session_handle, called)
        step = self._partial_steps.get(step_id)
        if step is None:
            graph = self._graph(session, graph_handle).partial()
            with self._lock:
                step = self._partial_steps.get(step_id)
                if step is None:
                    ended = self.rendezvous_mgr.ended(step_id)
                    if ended is not None:  # a late call of a run that has ended
                        raise ended
                    step = self._partial_steps[step_id] = _PartialStep(self, session, graph,
                                                                       step_id)
        try:
            values = step.exchange(sends, list(recv_keys), last, deadline)
        except errors.OpError as e:
            if last:
                self.end_step(step_id, e)
            raise
        if last:
            with self._lock:
                self._partial_steps.pop(step_id, None)
            # (its rendezvous goes once other tasks have what it sent them)
            self.rendezvous_mgr.finish_run(step_id)
        return values

    def end_step(self, step_id: int, error: errors.OpError | None = None) -> None:
        """Ends a step on this task (CleanupGraph): its transfers fail with `error`
        (default: CancelledError), a partial run's step stops, and later calls of it are
        refused."""
        self.rendezvous_mgr.cleanup(step_id, error)
        with self._lock:
            step = self._partial_steps.pop(step_id, None)
        if step is not None:
            step.end(error or errors.CancelledError(None, None,
                                                    f"Step {step_id} was cleaned up"))

    def run_graph_values(self, session_handle: str, called: bool, graph_handle: str,
                         step_id: int, sends: dict, recv_keys, trace: bool = False,
                         deadline: float | None = None, cancellation=None):
        """Runs a registered graph once. Returns (values by `recv_keys`, StepStats or None).

        Raises:
          AbortedError: unknown session or graph handle.
          InvalidArgumentError: a feed key is missing or a recv key unknown.
          OpError: the step failed (the failing node named).
        """
        session = self.session(session_handle, called)
        graph = self._graph(session, graph_handle)
        try:
            args = [sends[k] for k in graph.feed_keys]
        except KeyError as e:
            raise errors.InvalidArgumentError(
                None, None, f"RunGraph on {self.env.task_name} lacks the tensor for feed key "
                f"{e.args[0]}") from None
        try:
            positions = [graph.fetch_index[k] for k in recv_keys]
        except KeyError as e:
            raise errors.InvalidArgumentError(
                None, None, f"RunGraph on {self.env.task_name}: unknown recv key "
                f"{e.args[0]}") from None
        options = None
        if deadline is not None:
            options = config_pb2.RunOptions(
                timeout_in_ms=max(1, int((deadline - time.monotonic()) * 1000)))
        stats = tracing.StepStatsCollector() if trace else None
        rendezvous = self.rendezvous_mgr.start_run(step_id, graph.push_out, graph.push_in) \
            if graph.crosses_tasks else None
        values = graph.runner.run(session, step_id, args, options, stats,
                                  rendezvous=rendezvous, cancellation=cancellation)
        if rendezvous is not None:
            self.rendezvous_mgr.finish_run(step_id)
        step_stats = None
        if stats is not None:
            step_stats = tracing.new_step_stats()
            stats.fill(step_stats, {d.name: d.memory.allocator_name
                                    for d in self.env.device_mgr.devices})
            if self._log_steps:
                self.logged_steps.append((step_id, step_stats))
        return [values[p] for p in positions], step_stats

    def run_graph(self, request, deadline: float | None = None, cancellation=None,
                  sends: list | None = None) -> tuple[worker_pb2.RunGraphResponse, list]:
        """RunGraph with TensorFlow's messages (`store_errors_in_response_body` honoured).

        Args:
          request: a RunGraphRequest; its `send` tensors, or `sends` ((key, array) pairs
            read by `wire.decode_with_named_tensors`) when given.
          deadline: the step's deadline (time.monotonic()), or None.
          cancellation: a CancellationManager the caller cancels the step with.

        Returns:
          (the response without its `recv` tensors, [(recv key, array)]): the caller
          writes them (`wire.encode_with_named_tensors`) with one copy of each tensor.
        """
        response = worker_pb2.RunGraphResponse()
        try:
            if sends is None:
                sends = [(t.name, wire.from_tensor_proto(t.tensor, f"tensor for {t.name}"))
                         for t in request.send]
            sends = dict(sends)
            if request.is_partial:
                values = self.run_partial(
                    request.session_handle, request.create_worker_session_called,
                    request.graph_handle, request.step_id, sends, list(request.recv_key),
                    request.is_last_partial_run, deadline)
                return response, list(zip(request.recv_key, values, strict=True))
            values, step_stats = self.run_graph_values(
                request.session_handle, request.create_worker_session_called,
                request.graph_handle, request.step_id, sends, list(request.recv_key),
                request.exec_opts.record_timeline or request.exec_opts.record_costs,
                deadline, cancellation)
        except errors.OpError as e:
            if not request.store_errors_in_response_body:
                raise
            response.status_code, response.status_error_message = e.error_code, e.message
            return response, []
        if step_stats is not None:
            response.step_stats.CopyFrom(step_stats)
        if request.exec_opts.record_partition_graphs:
            response.partition_graph.extend(self.partition_graph_defs(
                request.session_handle, request.create_worker_session_called,
                request.graph_handle))
        return response, list(zip(request.recv_key, values, strict=True))

    def partition_graph_defs(self, session_handle: str, called: bool,
                             graph_handle: str) -> list:
        """The GraphDefs of a registered graph's device partitions, as this task runs
        them (RunOptions.output_partition_graphs)."""
        graph = self._graph(self.session(session_handle, called), graph_handle)
        out = []
        for p in graph.partition_graphs.values():
            gd = graph_pb2.GraphDef()
            for node in p.nodes:
                gd.node.append(partition.step_node_def(node))
            out.append(gd)
        return out

    def recv_value(self, step_id: int, key: str, timeout: float | None):
        """(value, is_dead) this task's _Send left under `key` in step `step_id`.

        Raises:
          InvalidArgumentError: a malformed key, or a device this task does not have.
          AbortedError: the key names an earlier incarnation of the device (a restart).
          DeadlineExceededError: nothing was sent within `timeout` seconds.
        """
        parsed = parse_key(key)
        device = self.env.device_mgr.lookup(parsed.src_device)
        if device.incarnation != parsed.src_incarnation:
            raise errors.AbortedError(
                None, None, f"RecvTensor expects a different device incarnation: "
                f"{parsed.src_incarnation} vs. {device.incarnation} for {device.name}. "
                "The task was most likely restarted; the session must be recreated.")
        return self.rendezvous_mgr.recv(step_id, key, timeout)

    def cleanup_graph(self, request) -> worker_pb2.CleanupGraphResponse:
        self.end_step(request.step_id)
        return worker_pb2.CleanupGraphResponse()

    def cleanup_all(self, request) -> worker_pb2.CleanupAllResponse:
        containers = list(request.container) or [""]
        for d in self.env.device_mgr.devices:
            for c in containers:
                d.resource_mgr.cleanup(c)
        return worker_pb2.CleanupAllResponse()

    def logging(self, request) -> worker_pb2.LoggingResponse:
        if request.enable_rpc_logging:
            self._log_steps = True
        if request.disable_rpc_logging:
            self._log_steps = False
        response = worker_pb2.LoggingResponse()
        wanted = set(request.fetch_step_id)
        for step_id, stats in self.logged_steps:
            if step_id in wanted:
                response.step.add(step_id=step_id).step_stats.CopyFrom(stats)
        if request.clear:
            self.logged_steps = []
        return response

    def tracing(self, request) -> worker_pb2.TracingResponse:
        return worker_pb2.TracingResponse()

    def shutdown(self) -> None:
        err = errors.CancelledError(None, None, f"Task {self.env.task_name} is shutting down")
        for s in list(self._sessions.values()):
            s.cancel_all()
        with self._lock:
            steps, self._partial_steps = list(self._partial_steps.values()), {}
        for step in steps:
            step.end(err)
        self.rendezvous_mgr.cleanup_all(err)
        if self.rendezvous_mgr.pushers is not None:
            self.rendezvous_mgr.pushers.close()
