"""A distributed step: one (feeds, fetches, targets) signature of a master session, built
once and run many times (paper §3.3).

Building (`DistStep.__init__`): the session's graph is pruned, optimized, placed on the
devices of the session's tasks (nodes whose device names no job go to the master's task,
as TensorFlow places them) and partitioned per device with the local runtime's passes.
The partitions are then grouped per task, and each task's group becomes one GraphDef,
registered once with that task's worker (RegisterGraph). In that GraphDef:
- each feed is a client-terminated `_Recv` on the device its `_Arg` was placed on, its
  rendezvous key `dev;inc;dev;<feed name>;0:0`; RunGraph's `send` carries the value;
- each fetch is a client-terminated `_Send` on its producer's device, answered in
  RunGraph's `recv` under its key;
- edges between tasks are `_Send`/`_Recv` pairs keyed with the real incarnation of the
  sending device, which the receiving task's RecvTensor call presents (a restarted task
  has a new incarnation and refuses it: AbortedError).
These are exactly TensorFlow's conventions, so a TensorFlow worker task can run its part.
Only the pairs of an edge between two tensorflux tasks get one more attr, `_tfx_push`:
their producer pushes the tensor instead of waiting for a RecvTensor call (push.py).

Running (`DistStep.run`): one random 56-bit step id; RunGraph on every other task (in
parallel: on the push connection to a tensorflux task, push.py, else gRPC) and on the
master's own task (in-process, on the caller's thread). The first
failure (a remote one as soon as its call ends, while the caller's thread may still be
waiting for that task's tensors) cancels the other tasks' calls and aborts the step's
rendezvous on this task; the error reported is the first that is not a consequence of
another (an abort or a cancellation). A step that spans tasks ends with CleanupGraph on
each (fire and forget).
"""

from __future__ import annotations

import random
import threading
import time
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor

from tensorflux.distributed import push, rpc, wire
from tensorflux.distributed.worker import PHYSICAL_DEVICE_DESC, STEP_ORDER_ATTR, Worker, task_of
from tensorflux.framework import errors, graph_io
from tensorflux.framework.rendezvous_key import create_key
from tensorflux.kernels.cpu import native
from tensorflux.protos import graph_pb2, step_stats_pb2, worker_pb2
from tensorflux.runtime import cost_model as cost_model_lib
from tensorflux.runtime import (
    fetching,
    graph_optimizer,
    partial_run,
    partition,
    placer,
    static_executor,
)
from tensorflux.runtime import step_graph as step_graph_lib
from tensorflux.runtime.frame_analysis import is_control_flow
from tensorflux.runtime.step_graph import Node

DEFAULT_STEP_SECONDS = 7 * 24 * 3600.0  # RunGraph's deadline when the step sets none
REPLY_GRACE_SECONDS = 10.0  # past the step's deadline, a task that has not answered fails
_cleanup_pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="tfx-cleanup")


class TaskClient:
    """One task's worker service as the master uses it: in-process for the master's own
    task (`local`), over gRPC for the others (`remote`)."""

    def __init__(self, task: str, worker: Worker | None = None, stub: rpc.Stub | None = None):
        self.task = task
        self.worker = worker
        self.stub = stub

    @classmethod
    def local(cls, task: str, worker: Worker) -> TaskClient:
        return cls(task, worker=worker)

    @classmethod
    def remote(cls, task: str, stub: rpc.Stub) -> TaskClient:
        return cls(task, stub=stub)

    def _call(self, method: str, request, response_cls, fn_name: str):
        if self.worker is not None:
            return getattr(self.worker, fn_name)(request)
        return self.stub.call(method, request, response_cls)

    def get_status(self):
        return self._call("GetStatus", worker_pb2.GetStatusRequest(),
                          worker_pb2.GetStatusResponse, "get_status")

    def create_worker_session(self, handle: str, server_def=None) -> None:
        request = worker_pb2.CreateWorkerSessionRequest(session_handle=handle)
        if server_def is not None:
            # Each task gets the cluster with its own job and index (a TensorFlow worker
            # names the session's devices after them).
            request.server_def.CopyFrom(server_def)
            fields = dict(p.split(":", 1) for p in self.task.strip("/").split("/"))
            request.server_def.job_name = fields["job"]
            request.server_def.task_index = int(fields["task"])
        self._call("CreateWorkerSession", request, worker_pb2.CreateWorkerSessionResponse,
                   "create_worker_session")

    def delete_worker_session(self, handle: str) -> None:
        request = worker_pb2.DeleteWorkerSessionRequest(session_handle=handle)
        try:
            if self.worker is not None:
                self.worker.delete_worker_session(request)
            else:
                self.stub.call("DeleteWorkerSession", request,
                               worker_pb2.DeleteWorkerSessionResponse, timeout=5.0,
                               retry_unavailable=False)
        except errors.OpError:
            pass  # a task that is gone has nothing left to free

    def register_graph(self, handle: str, graph_def, graph_options) -> str:
        request = worker_pb2.RegisterGraphRequest(session_handle=handle, graph_def=graph_def,
                                                  create_worker_session_called=True)
        if graph_options is not None:
            request.graph_options.CopyFrom(graph_options)
        return self._call("RegisterGraph", request, worker_pb2.RegisterGraphResponse,
                          "register_graph").graph_handle

    def deregister_graph(self, handle: str, graph_handle: str) -> None:
        request = worker_pb2.DeregisterGraphRequest(
            session_handle=handle, graph_handle=graph_handle, create_worker_session_called=True)
        try:
            if self.worker is not None:
                self.worker.deregister_graph(request)
            else:
                self.stub.call("DeregisterGraph", request, worker_pb2.DeregisterGraphResponse,
                               timeout=5.0, retry_unavailable=False)
        except errors.OpError:
            pass

    def cleanup_graph(self, step_id: int, error: errors.OpError | None = None) -> None:
        """Ends step `step_id` on the task (CleanupGraph; fire and forget for another
        task); this task's own transfers fail with `error` (default: CancelledError)."""
        if self.worker is not None:
            self.worker.end_step(step_id, error)
            return
        request = worker_pb2.CleanupGraphRequest(step_id=step_id)

        def send():
            try:
                self.stub.call("CleanupGraph", request, worker_pb2.CleanupGraphResponse,
                               timeout=10.0, retry_unavailable=False)
            except errors.OpError:
                pass

        _cleanup_pool.submit(send)

    def cleanup_all(self, request) -> None:
        self._call("CleanupAll", request, worker_pb2.CleanupAllResponse, "cleanup_all")


class _TaskPart:
    """What one task runs of a step: its registered graph and its feed/fetch keys."""

    def __init__(self, client: TaskClient):
        self.client = client
        self.graph_def = graph_pb2.GraphDef()
        self.feeds: list[tuple[int, str]] = []  # (feed index, key)
        self.fetches: list[tuple[int, str]] = []  # (fetch position, key)
        self.graph_handle = ""
        self.pushed_calls = False  # RunGraph may go on the push connection (push.py)


class DistStep:
    """One signature of a MasterSession (see the module docstring). A `partial` one is
    for partial runs (dist_partial_run.py): its feeds arrive while it runs, so a ref
    variable's read waits for the feeds its consumer waits for (step_graph's
    `feeds_arrive`), and it stays registered while a partial run holds it."""

    def __init__(self, session, feed_names: list[str], fetch_names: list[str],
                 target_names: list[str], partial: bool = False):
        self.session = session
        self._users = 0  # partial runs holding the step (`hold`)
        self._retired = False  # no longer cached: deregistered once nobody holds it
        self._registered = False
        self._users_lock = threading.Lock()
        graph = session.graph
        self.feed_names = feed_names
        self.feeds = [_tensor(graph, n, "feed") for n in feed_names]
        fetches = [_tensor(graph, n, "fetch") for n in fetch_names]
        targets = [_operation(graph, n) for n in target_names]
        fed = {t: i for i, t in enumerate(self.feeds)}
        self.fetch_from_feed = {pos: fed[t] for pos, t in enumerate(fetches) if t in fed}
        self.num_fetches = len(fetches)
        self.signature = partial_run.Signature(self.feeds, fetches) if partial else None
        sg = step_graph_lib.build(self.feeds, fetches, targets, feeds_arrive=partial)
        for index, arg in enumerate(sg.args):
            # A name a user's op cannot have (a leading "." is unusual, not invalid; the
            # local runtime's "_arg_..." names do not import).
            arg.name = f".feed_{index}"
        config = session.config
        graph_options = config.graph_options if config.HasField("graph_options") else None
        graph_optimizer.optimize(sg, graph_options.optimizer_options if graph_options
                                 else None, fuse=_fusable(session.device_mgr))
        costs = cost_model_lib.StepCosts(session.cost_model,
                                         {a: t.shape for a, t in zip(sg.args, self.feeds,
                                                                     strict=True)})
        placer.place(sg, session.device_mgr,
                     allow_soft_placement=config.allow_soft_placement,
                     log_device_placement=config.log_device_placement, costs=costs,
                     pinned=session.stateful_placements,
                     default_task=session.master.env.task_name)
        graph_optimizer.optimize_placed(sg, graph_options.optimizer_options if graph_options
                                        else None, fuse=_fusable(session.device_mgr))
        _drop_needless_control(sg)
        parts = partition.partition(
            sg, session.device_mgr,
            bfloat16_sendrecv=bool(graph_options and graph_options.enable_bfloat16_sendrecv),
            costs=costs, group_control=True)
        fetch_positions = [pos for pos in range(len(fetches)) if pos not in
                           self.fetch_from_feed]
        self.tasks = self._split(parts, fetch_positions, fetch_names, session,
                                 {} if partial else _whole_step_order(parts))
        self.spans_tasks = len(self.tasks) > 1
        self._registered = True
        for task in self.tasks.values():
            task.graph_handle = task.client.register_graph(session.handle, task.graph_def,
                                                           graph_options)
        self.local = self.tasks.get(session.master.env.task_name)
        self.need_cleanup = [t for name, t in self.tasks.items()
                             if not _ends_steps_itself(session.device_mgr, name)]
        self.remote = [t for name, t in self.tasks.items()
                       if name != session.master.env.task_name]
        self._pushers = session.master.worker.rendezvous_mgr.pushers
        for task in self.remote:
            task.pushed_calls = push.enabled() and self._pushers is not None and \
                _ends_steps_itself(session.device_mgr, task.client.task)

    def _split(self, parts, fetch_positions, fetch_names, session, order: dict
               ) -> dict[str, _TaskPart]:
        """One _TaskPart per task, its GraphDef holding its devices' partitions with the
        feeds and fetches made client-terminated transfers (and, for tensorflux tasks, each
        node's position in `order`, the whole step's: worker.STEP_ORDER_ATTR)."""
        tasks: dict[str, _TaskPart] = {}
        devices = session.device_mgr
        pushes = push.enabled()
        tensorflux_tasks: dict[str, bool] = {}

        def pushed(nd) -> bool:
            """An edge between two tensorflux tasks: pushed, not pulled (push.py)."""
            if not pushes or nd.op not in ("_Send", "_Recv") or \
                    nd.attr["client_terminated"].b:
                return False
            ends = {task_of(nd.attr["send_device"].s.decode()),
                    task_of(nd.attr["recv_device"].s.decode())}
            for t in ends:
                if t not in tensorflux_tasks:
                    tensorflux_tasks[t] = _ends_steps_itself(devices, t)
            return len(ends) == 2 and all(tensorflux_tasks[t] for t in ends)

        for p in parts.values():
            task = task_of(p.device)
            tp = tasks.get(task)
            if tp is None:
                tp = tasks[task] = _TaskPart(session.tasks[task])
            inc = devices.lookup(p.device).incarnation
            ordered = bool(order) and _ends_steps_itself(devices, task)
            for index, arg in p.args:
                name = self.feed_names[index]
                arg.op = "_Recv"
                arg.attrs = _transfer_attrs(name, p.device, inc, tensor_type=arg.attrs["T"])
                tp.feeds.append((index, create_key(p.device, inc, p.device, name)))
            nodes = list(p.nodes)
            for pos, node, idx in p.fetches:
                real_pos = fetch_positions[pos]
                name = fetch_names[real_pos]
                send = Node(f".fetch_{real_pos}", "_Send",
                            _transfer_attrs(name, p.device, inc,
                                            T=node.output_dtypes[idx]),
                            [(node, idx)], [], [])
                send.device = p.device
                nodes.append(send)
                tp.fetches.append((real_pos, create_key(p.device, inc, p.device, name)))
            theirs = not _ends_steps_itself(devices, task)
            if theirs:
                # A TensorFlow worker keeps the kernels of stateful nodes (_Send, _Recv) of
                # a session by node name across its graphs: each transfer gets a name no
                # other graph of the session has (as TensorFlow's master numbers them).
                for node in nodes:
                    if node.op in ("_Send", "_Recv"):
                        node.name = f"{node.name}_S{next(session.transfer_serial)}"
            for node in nodes:
                nd = partition.step_node_def(node)
                if theirs and nd.op == "_RefRead":
                    # A ref variable's read on a TensorFlow task: its own Identity of the
                    # ref (TF1's "v/read"), with the read's control inputs
                    nd.op = "Identity"
                if "_class" in nd.attr:
                    del nd.attr["_class"]  # placed already; colocated nodes may be elsewhere
                if pushed(nd):
                    nd.attr[push.PUSH_ATTR].b = True
                if ordered and node in order:
                    nd.attr[STEP_ORDER_ATTR].i = order[node]
                tp.graph_def.node.append(nd)
            # the traced functions (dataset map functions, ...) the nodes' func attrs name
            graph_io.add_function_library(tp.graph_def, [node.attrs for node in nodes])
        return tasks

    def run(self, feeds: dict, options, run_metadata=None) -> list:
        """The fetched values of one run. `feeds` maps feed names to arrays."""
        try:
            args = [fetching.convert_feed(t, feeds[n])
                    for t, n in zip(self.feeds, self.feed_names, strict=True)]
        except (TypeError, ValueError) as e:
            raise errors.InvalidArgumentError(None, None, str(e)) from None
        run = _Run(self, args, options)
        run.calls = [(t, self._start_remote(t, run.step_id, args, run.timeout, run.trace,
                                            run.partitions)) for t in self.remote]
        for task, future in run.calls:
            # A task that fails stops the step at once, even while this thread runs the
            # local part (which may wait for tensors that task will never send).
            future.add_done_callback(lambda f, t=task: run.early(t, f))
        if self.local is not None and not run.failures:  # (another task may have failed)
            run.run_local()
        for task, future in run.calls:
            run.collect_once(task, future)
        if self.spans_tasks:
            # tensorflux tasks end a step that went well by themselves (remote_rendezvous.py).
            for t in self.tasks.values() if run.failures else self.need_cleanup:
                t.client.cleanup_graph(run.step_id)
        if run.failures:
            raise first_cause(run.failures)
        for pos, index in self.fetch_from_feed.items():
            run.results[pos] = args[index]
        if run_metadata is not None:
            run.fill_metadata(run_metadata)
        return run.results

    def _start_remote(self, task: _TaskPart, step_id: int, args: list, timeout, trace: bool,
                      partitions: bool):
        request = worker_pb2.RunGraphRequest(
            session_handle=self.session.handle, create_worker_session_called=True,
            graph_handle=task.graph_handle, step_id=step_id,
            recv_key=[key for _, key in task.fetches], store_errors_in_response_body=True)
        request.exec_opts.record_timeline = trace
        request.exec_opts.record_partition_graphs = partitions
        data = wire.encode_with_named_tensors(
            request, 3, [(key, args[index]) for index, key in task.feeds])
        if task.pushed_calls:
            future = self._pushers.call(task.client.task, step_id, data,
                                        timeout or DEFAULT_STEP_SECONDS,
                                        decode_run_graph_response)
            if future is not None:
                return future
        return task.client.stub.future("RunGraph", data, decode_run_graph_response,
                                       timeout=timeout or DEFAULT_STEP_SECONDS)

    def _abort(self, calls, step_id: int, error: errors.OpError) -> None:
        """Stops the rest of a failed step: cancels the other tasks' RunGraph calls and
        aborts the step's transfers on this task."""
        for _, future in calls:
            future.cancel()
        if self.local is not None:
            self.local.client.cleanup_graph(step_id, as_abort(error))

    def deregister(self) -> None:
        """Drops the step's graphs on every task (once)."""
        with self._users_lock:
            registered, self._registered = self._registered, False
        if registered:
            for t in self.tasks.values():
                if t.graph_handle:
                    t.client.deregister_graph(self.session.handle, t.graph_handle)

    def hold(self) -> None:
        """A partial run uses the step: it stays registered until `unhold`."""
        with self._users_lock:
            self._users += 1

    def unhold(self) -> None:
        with self._users_lock:
            self._users -= 1
            drop = self._retired and not self._users
        if drop:
            self.deregister()

    def retire(self) -> None:
        """The session no longer caches the step (its graph grew): deregistered now, or
        when the last partial run holding it ends (as TensorFlow's graph of a partial run
        is kept by its run)."""
        with self._users_lock:
            self._retired = True
            drop = not self._users
        if drop:
            self.deregister()


class _Run:
    """The state of one run of a DistStep: its step id, the calls in flight, the results
    and failures gathered so far."""

    def __init__(self, step: DistStep, args: list, options):
        self.step = step
        self.args = args
        self.step_id = random.getrandbits(56) or 1
        self.timeout = options.timeout_in_ms / 1000.0 if options is not None and \
            options.timeout_in_ms > 0 else None
        self.deadline = time.monotonic() + self.timeout if self.timeout else None
        self.trace = bool(options is not None and options.trace_level)
        self.partitions = bool(options is not None and options.output_partition_graphs)
        self.calls: list = []
        self.results = [None] * step.num_fetches
        self.failures: list[errors.OpError] = []
        self._lock = threading.Lock()
        self._collected: dict[int, threading.Event] = {}
        self.stats: list = []
        self.partition_graphs: list = []

    def fail(self, error: errors.OpError) -> None:
        """Records a failure; the first one stops the rest of the step everywhere."""
        with self._lock:
            first = not self.failures
            self.failures.append(error)
        if first:
            self.step._abort(self.calls, self.step_id, error)

    def early(self, task: _TaskPart, future) -> None:
        """A remote RunGraph's done callback: a failure is collected at once."""
        if future.cancelled() or future.exception() is not None or \
                future.result()[0].status_code:
            self.collect_once(task, future)

    def collect_once(self, task: _TaskPart, future) -> None:
        """`collect`, once per task, whichever thread comes first; the other waits."""
        with self._lock:
            done = self._collected.get(id(task))
            first = done is None
            if first:
                done = self._collected[id(task)] = threading.Event()
        if not first:
            done.wait()
            return
        try:
            self.collect(task, future)
        finally:
            done.set()

    def run_local(self) -> None:
        """The master's own task's part, in-process on this thread."""
        local = self.step.local
        try:
            values, step_stats = local.client.worker.run_graph_values(
                self.step.session.handle, True, local.graph_handle, self.step_id,
                {key: self.args[i] for i, key in local.feeds},
                [key for _, key in local.fetches], self.trace, self.deadline)
        except errors.OpError as e:
            self.fail(e)
            return
        for (pos, _), v in zip(local.fetches, values, strict=True):
            self.results[pos] = v
        if step_stats is not None:
            self.stats.append(step_stats)
        if self.partitions:
            self.partition_graphs.extend(local.client.worker.partition_graph_defs(
                self.step.session.handle, True, local.graph_handle))

    def collect(self, task: _TaskPart, future) -> None:
        """Waits for one remote task's RunGraph and takes its results."""
        if not future.done():
            native.helpers_rest()  # the reply comes from another process: see rendezvous
        try:
            # (a call on a push connection has no deadline of its own: the task reports
            # the step's, and this one bounds the wait if it never answers)
            response, by_key = reply_values(task, future, (
                None if self.deadline is None else
                max(0.0, self.deadline - time.monotonic()) + REPLY_GRACE_SECONDS))
        except errors.OpError as e:
            self.fail(e)
            return
        for pos, key in task.fetches:
            if key not in by_key:
                self.fail(errors.InternalError(
                    None, None, f"RunGraph on {task.client.task} did not return {key}"))
                return
            self.results[pos] = by_key[key]
        if response.HasField("step_stats"):
            self.stats.append(response.step_stats)
        self.partition_graphs.extend(response.partition_graph)

    def fill_metadata(self, run_metadata) -> None:
        """Every task's step stats (one timeline) and partition graphs."""
        if self.stats:
            merged = step_stats_pb2.StepStats()
            for s in self.stats:
                merged.dev_stats.extend(s.dev_stats)
            run_metadata.step_stats.CopyFrom(merged)
        if self.partitions:
            del run_metadata.partition_graphs[:]
            run_metadata.partition_graphs.extend(self.partition_graphs)


_ABORT_PREFIX = "Step aborted"


def as_abort(error: errors.OpError) -> errors.OpError:
    err = errors.CancelledError(None, None, f"{_ABORT_PREFIX}: another task failed "
                                f"({error.message.splitlines()[0][:200]})")
    err._abort_marker = True
    return err


def _is_consequence(e: errors.OpError) -> bool:
    """An error a task reports because another task or partition failed first."""
    return getattr(e, "_abort_marker", False) or (
        isinstance(e, errors.CancelledError) and _ABORT_PREFIX in e.message)


def first_cause(failures: list[errors.OpError]) -> errors.OpError:
    causes = [e for e in failures if not _is_consequence(e)]
    return (causes or failures)[0]


def _whole_step_order(parts) -> dict:
    """Node -> position in one order of the whole step (`static_executor.step_order`),
    for steps without control flow; {} otherwise."""
    nodes = [p.nodes for p in parts.values()]
    if any(is_control_flow(n.op) for p in nodes for n in p):
        return {}
    order = static_executor.step_order(nodes, recvs_as_sent=True)
    return {} if order is None else {n: k for k, n in enumerate(order)}


def _drop_needless_control(sg) -> None:
    """Removes the control edges between tasks that a step does not need: each costs a
    transfer per step, and the last ones sit on the step's critical path.
    - `src -> n` where `n` depends on `src` through its other inputs anyway (a gradient
      nobody wants becomes a NoOp in its MatMul's place, keeping a control input from the
      weight's read on the PS, which the forward MatMul already received);
    - `src -> n` where `n` is a NoOp that nothing consumes (the train op, grouping the
      PS's updates): the step ends only when every task's part of it has run, `src`
      included, so that the NoOp runs earlier is not observable.
    Steps with control flow keep every edge."""
    if any(is_control_flow(n.op) for n in sg.nodes):
        return
    consumed = {src for n in sg.nodes for src, _ in n.inputs}
    consumed.update(c for n in sg.nodes for c in n.control_inputs)
    for n in sg.nodes:
        task = task_of(n.device)
        remote = [c for c in n.control_inputs if task_of(c.device) != task]
        if not remote:
            continue
        if n.op == "NoOp" and n not in consumed:
            n.control_inputs = [c for c in n.control_inputs if c not in remote]
            continue
        for c in remote:
            others = [s for s, _ in n.inputs] + [x for x in n.control_inputs if x is not c]
            if _reaches(others, c):
                n.control_inputs.remove(c)


def _reaches(starts: list, target, budget: int = 20000) -> bool:
    """Whether `target` is among `starts` or their ancestors (False past `budget` nodes
    visited: the edge is then kept)."""
    seen, stack = set(), list(starts)
    while stack:
        n = stack.pop()
        if n is target:
            return True
        if n in seen:
            continue
        seen.add(n)
        if len(seen) > budget:
            return False
        stack.extend(s for s, _ in n.inputs)
        stack.extend(n.control_inputs)
    return False


def _fusable(device_mgr) -> bool:
    """Whether the step's kernels may be fused (graph_optimizer.optimize's `fuse`): every
    device of the cluster is a tensorflux task's CPU, as for a local session whose devices
    are all CPUs (a TensorFlow task may lack a fused node's kernel)."""
    return all(d.device_type == "CPU" and _tensorflux_device(d) for d in device_mgr.devices)


def _ends_steps_itself(device_mgr, task: str) -> bool:
    """True for a tensorflux task (its devices say so): no CleanupGraph after a good step."""
    return all(_tensorflux_device(d) for d in device_mgr.devices if task_of(d.name) == task)


def _tensorflux_device(d) -> bool:
    return getattr(d, "physical_device_desc", PHYSICAL_DEVICE_DESC) == PHYSICAL_DEVICE_DESC


def decode_run_graph_response(data: bytes):
    """(RunGraphResponse without `recv`, [(key, array)]), the arrays viewing `data`."""
    return wire.decode_with_named_tensors(data, 1, worker_pb2.RunGraphResponse)


def reply_values(task: _TaskPart, future, timeout=None) -> tuple:
    """(RunGraphResponse, {key: array}) of a remote RunGraph's reply.

    Raises:
      OpError: a malformed response, the call failed (`call_error`), or the task reported
        an error.
    """
    try:
        response, recvs = future.result(timeout)
    except errors.OpError:  # a malformed response
        raise
    except Exception as e:  # noqa: BLE001 - grpc.RpcError or a cancellation
        raise call_error(task, e) from None
    if response.status_code:
        raise wire.error_from_status(response.status_code, response.status_error_message)
    return response, dict(recvs)


def call_error(task: _TaskPart, e: BaseException) -> errors.OpError:
    import grpc

    if isinstance(e, (grpc.FutureCancelledError, futures.CancelledError)):
        err = errors.CancelledError(None, None, f"{_ABORT_PREFIX}: RunGraph on "
                                    f"{task.client.task} was cancelled")
        err._abort_marker = True
        return err
    if isinstance(e, (grpc.FutureTimeoutError, futures.TimeoutError)):
        return errors.DeadlineExceededError(None, None, f"RunGraph on {task.client.task} "
                                            "did not answer before the step's deadline")
    if isinstance(e, grpc.RpcError):
        return task.client.stub.error(e, "RunGraph")
    return errors.InternalError(None, None, f"RunGraph on {task.client.task}: {e}")


def _transfer_attrs(name: str, device: str, incarnation: int, **dtype) -> dict:
    return {**dtype, "tensor_name": name, "send_device": device, "recv_device": device,
            "send_device_incarnation": incarnation, "client_terminated": True}


def _tensor(graph, name: str, what: str):
    try:
        t = graph.as_graph_element(name, allow_tensor=True, allow_operation=False)
    except (KeyError, ValueError, TypeError) as e:
        msg = e.args[0] if e.args else str(e)
        raise errors.NotFoundError(None, None, f"Tensor {name}, specified in either "
                                   f"feed_devices or fetch_devices was not found in the "
                                   f"Graph ({what}: {msg})") from None
    return t


def _operation(graph, name: str):
    try:
        return graph.as_graph_element(name, allow_tensor=False, allow_operation=True)
    except (KeyError, ValueError, TypeError):
        raise errors.NotFoundError(None, None, f"Node '{name}' is not found in the graph "
                                   "(target)") from None
