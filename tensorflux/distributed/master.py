"""The master service (paper §3.3 and §5; TensorFlow's master.proto).

A client creates a session with its GraphDef (`CreateSession`), extends it as the graph
grows (`ExtendSession`) and runs steps (`RunStep`: feeds, fetches, targets by name). For
each (feeds, fetches, targets) signature the master builds a distributed step once
(`DistStep`, dist_step.py): prune, optimize, place on the devices of every task the
session may use, partition per device, group the partitions per task and register each
task's graph with that task's worker. Every run then costs one RunGraph per task (the
master's own task called in-process, on the caller's thread), all with one step id.

Sessions see the devices of the tasks that `ConfigProto.device_filters` name (all tasks
of the cluster without filters); a session never waits for a task it does not use.
Devices are discovered when the session is created (GetStatus on each task, in parallel,
with a bounded wait for tasks that are down).
"""

from __future__ import annotations

import itertools
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from tensorflux.distributed import wire
from tensorflux.distributed.dist_partial_run import DistPartialRun
from tensorflux.distributed.dist_step import DistStep, TaskClient
from tensorflux.distributed.worker import Worker, device_attributes, task_of
from tensorflux.framework import device_spec as device_spec_lib
from tensorflux.framework import errors, gc_pause, importer
from tensorflux.framework import graph as graph_lib
from tensorflux.protos import config_pb2, master_pb2, worker_pb2
from tensorflux.runtime import cost_model as cost_model_lib
from tensorflux.runtime import device as device_lib
from tensorflux.runtime import partial_run
from tensorflux.runtime.exec_options import ExecOptions

_discovery_pool = ThreadPoolExecutor(max_workers=32, thread_name_prefix="tfx-discovery")


def remote_device(attrs) -> device_lib.Device:
    """A Device standing for another task's device (name, type, incarnation) in placement
    and partitioning; it never runs kernels here."""
    spec = device_spec_lib.DeviceSpecV2.from_string(attrs.name)
    d = device_lib.Device(spec.job, spec.replica or 0, spec.task or 0, spec.device_type,
                          spec.device_index or 0, 1, attrs.memory_limit)
    inc = attrs.incarnation
    d.incarnation = inc - (1 << 64) if inc >= 1 << 63 else inc  # as an int64 attr holds it
    d.physical_device_desc = attrs.physical_device_desc
    return d


def filtered_tasks(cluster: dict, filters) -> list[str]:
    """Task names (`/job:J/replica:0/task:T`) of `cluster` that `filters` (device specs
    such as "/job:ps" or "/job:worker/task:1"; none: every task) allow."""
    tasks = [f"/job:{job}/replica:0/task:{i}" for job in sorted(cluster)
             for i in sorted(cluster[job])]
    if not filters:
        return tasks
    specs = []
    for f in filters:
        try:
            spec = device_spec_lib.DeviceSpecV2.from_string(f)
        except ValueError as e:
            raise errors.InvalidArgumentError(None, None, f"Bad device filter {f!r}: {e}") \
                from None
        specs.append(device_spec_lib.DeviceSpecV2(spec.job, spec.replica, spec.task)
                     .to_string())
    return [t for t in tasks if any(device_spec_lib.is_compatible(s, t) for s in specs)]


class MasterSession:
    """One client session: its graph, devices, worker sessions and cached steps."""

    def __init__(self, master: Master, handle: str, graph_def, config):
        self.master = master
        self.handle = handle
        self.config = config if config is not None else config_pb2.ConfigProto()
        self.graph = graph_lib.Graph()
        self.version = 0
        self._import(graph_def)
        env = master.env
        tasks = filtered_tasks(env.cluster, list(self.config.device_filters))
        if env.task_name not in tasks:
            tasks.insert(0, env.task_name)
        self.tasks = {t: master.task_client(t) for t in tasks}
        devices = master.discover(self.tasks)
        self.device_mgr = device_lib.DeviceMgr(devices)
        self.exec_options = ExecOptions.from_config(self.config)
        self.cost_model = cost_model_lib.CostModel(cost_model_lib.CostParams(
            cpu_devices_share_cores=self.exec_options.cpu_devices_share_cores))
        self.stateful_placements: dict[str, str] = {}
        self.steps: dict[tuple, DistStep] = {}
        self.callables: dict[int, tuple] = {}
        self._callable_ids = itertools.count(1)
        self.partial_runs: dict[str, DistPartialRun] = {}
        self._partial_count = itertools.count()
        self.transfer_serial = itertools.count(1)  # names of transfers on TensorFlow tasks
        self._lock = threading.Lock()
        for client in self.tasks.values():
            client.create_worker_session(handle, master.server_def)
        self.closed = False

    def _import(self, graph_def) -> None:
        if graph_def is None or not graph_def.node:
            return
        with self.graph.as_default():
            try:
                importer.extend_graph(graph_def, input_map=self._existing_inputs(graph_def))
            except (ValueError, TypeError, KeyError) as e:
                raise errors.InvalidArgumentError(None, None, f"Invalid GraphDef: {e}") \
                    from None
        self.version += 1

    def _existing_inputs(self, graph_def) -> dict | None:
        """An input_map for an extension's inputs that name nodes already in the graph
        (ExtendSession sends only the new nodes)."""
        new = {nd.name for nd in graph_def.node}
        mapping = {}
        for nd in graph_def.node:
            for inp in nd.input:
                control = inp.startswith("^")
                name, _, index = inp.lstrip("^").partition(":")
                if name in new or inp in mapping:
                    continue
                try:
                    op = self.graph.get_operation_by_name(name)
                except (KeyError, ValueError):
                    continue  # the importer reports the unknown input
                if control:
                    mapping[inp] = op
                else:
                    try:
                        mapping[f"{name}:{index or 0}"] = op.outputs[int(index or 0)]
                    except (ValueError, IndexError):
                        continue
        return mapping or None

    def extend(self, graph_def, current_version: int) -> int:
        """Adds the nodes of `graph_def` (an extension: the nodes added since the last
        version); returns the new version."""
        with self._lock:
            if current_version != self.version:
                raise errors.AbortedError(
                    None, None, f"Current graph version {current_version} does not match "
                    f"the session's graph version {self.version}")
            self._import(graph_def)
            # Steps of older versions are never run again: free their registrations
            # (a partial run's when it ends).
            stale = [k for k in self.steps if k[3] != self.version]
            old = [self.steps.pop(k) for k in stale]
        for step in old:
            step.retire()
        return self.version

    def step(self, feeds: tuple, fetches: tuple, targets: tuple,
             partial: bool = False) -> DistStep:
        """The DistStep of a signature (built on first use); `partial`: for partial runs."""
        key = (feeds, fetches, targets, self.version, partial)
        step = self.steps.get(key)
        if step is None:
            with self._lock:
                step = self.steps.get(key)
                if step is None:
                    with gc_pause.paused():  # see framework/gc_pause.py
                        step = DistStep(self, list(feeds), list(fetches), list(targets),
                                        partial=partial)
                    self.steps[key] = step
        return step

    def partial_run_setup(self, feeds: list[str], fetches: list[str],
                          targets: list[str]) -> str:
        """Starts a partial run (dist_partial_run.py); returns its handle.

        Raises:
          InvalidArgumentError: TensorFlow's checks of the signature.
          NotFoundError: a name that is not in the graph.
          AbortedError: the session is closed.
        """
        if self.closed:
            raise errors.AbortedError(None, None, f"Session {self.handle} was closed")
        partial_run.check_signature(feeds, fetches, targets)
        step = self.step(tuple(feeds), tuple(fetches), tuple(targets), partial=True)
        handle = str(next(self._partial_count))
        runs = self.partial_runs
        runs[handle] = run = DistPartialRun(step, lambda: runs.pop(handle, None))
        if self.closed:  # closed meanwhile, by another thread
            run.release()
        return handle

    def run(self, feeds: dict, fetches: list[str], targets: list[str], options,
            run_metadata=None) -> list:
        """Fetched values (NumPy arrays) for one step; fed fetches answer with the feed."""
        if self.closed:
            raise errors.AbortedError(None, None, f"Session {self.handle} was closed")
        step = self.step(tuple(feeds), tuple(fetches), tuple(targets))
        return step.run(feeds, options, run_metadata)

    def close(self) -> None:
        self.closed = True
        for run in list(self.partial_runs.values()):
            run.release(errors.CancelledError(None, None, f"Session {self.handle} was "
                                              "closed"))
        for step in list(self.steps.values()):
            step.deregister()
        self.steps.clear()
        for client in self.tasks.values():
            client.delete_worker_session(self.handle)


class Master:
    """The master service's methods as Python calls on protos (`MasterServicer` puts them
    on gRPC; an in-process client calls them directly).

    Args:
      worker: this task's Worker (its env names the task and the cluster).
      task_client_factory: `factory(task_name) -> TaskClient` for other tasks.
      server_def: the ServerDef this task runs (sent with CreateWorkerSession).
      log: `log(event, message)`, told of "session_created", "session_closed" and
        "step_failed" (the `tensorflux-server` command logs them); None: silent.
    """

    def __init__(self, worker: Worker, task_client_factory, server_def=None, log=None):
        self.worker = worker
        self.env = worker.env
        self.server_def = server_def
        self._task_client_factory = task_client_factory
        self._log_hook = log
        self._sessions: dict[str, MasterSession] = {}
        self._lock = threading.Lock()

    def task_client(self, task: str) -> TaskClient:
        if task == self.env.task_name:
            return TaskClient.local(task, self.worker)
        return self._task_client_factory(task)

    def discover(self, tasks: dict) -> list:
        """The devices of `tasks` (this task's own first), asking the others in parallel.

        Raises:
          UnavailableError: a task did not answer within the RPC config's bound.
        """
        futures = {t: _discovery_pool.submit(c.get_status) for t, c in tasks.items()
                   if t != self.env.task_name}
        devices = list(self.env.device_mgr.devices) if self.env.task_name in tasks else []
        for t, f in futures.items():
            response = f.result()
            devices.extend(remote_device(a) for a in response.device_attributes
                           if task_of(a.name) == t)
        return devices

    def _log(self, event: str, message: str) -> None:
        """Tells the `log` hook (if any) of an event; a failing hook never fails a call."""
        if self._log_hook is not None:
            try:
                self._log_hook(event, message)
            except Exception:  # noqa: BLE001 - logging is best-effort
                pass

    def _session(self, handle: str) -> MasterSession:
        s = self._sessions.get(handle)
        if s is None:
            raise errors.AbortedError(None, None, f"Session {handle} is not found. Possibly, "
                                      "this master has restarted.")
        return s

    # ---- the service --------------------------------------------------------------------
    def create_session(self, request) -> master_pb2.CreateSessionResponse:
        handle = secrets.token_hex(8)
        config = request.config if request.HasField("config") else None
        session = MasterSession(self, handle, request.graph_def, config)
        with self._lock:
            self._sessions[handle] = session
        self._log("session_created", f"session {handle} created: "
                  f"{len(session.graph.get_operations())} nodes, tasks "
                  f"{', '.join(session.tasks)}")
        return master_pb2.CreateSessionResponse(session_handle=handle,
                                                graph_version=session.version)

    def extend_session(self, request) -> master_pb2.ExtendSessionResponse:
        version = self._session(request.session_handle).extend(
            request.graph_def, request.current_graph_version)
        return master_pb2.ExtendSessionResponse(new_graph_version=version)

    def run_step(self, request) -> master_pb2.RunStepResponse:
        """RunStep with TensorFlow's messages (the fetched tensors inside the response)."""
        response, tensors = self.run_step_values(request)
        for name, value in tensors:
            wire.to_tensor_proto(value, response.tensor.add(name=name).tensor)
        return response

    def run_step_values(self, request, feeds: list | None = None
                        ) -> tuple[master_pb2.RunStepResponse, list]:
        """RunStep, the fetched values apart: (response without `tensor`, [(fetch name,
        array)]). `feeds`, (name, array) pairs, stand for `request.feed` when given (the
        gRPC adapter reads them by hand; an in-process client passes its arrays)."""
        response = master_pb2.RunStepResponse()
        try:
            session = self._session(request.session_handle)
            if feeds is None:
                feeds = [(t.name, wire.from_tensor_proto(t.tensor, f"feed {t.name}"))
                         for t in request.feed]
            feeds = dict(feeds)
            fetches = list(request.fetch)
            if request.partial_run_handle:
                partial = session.partial_runs.get(request.partial_run_handle)
                if partial is None:
                    raise partial_run.no_setup_error(master=True)
                timeout = request.options.timeout_in_ms
                values = partial.run(feeds, fetches, time.monotonic() + timeout / 1000.0
                                     if timeout > 0 else None)
            else:
                metadata = response.metadata if request.options.trace_level or \
                    request.options.output_partition_graphs else None
                values = session.run(feeds, fetches, list(request.target), request.options,
                                     metadata)
        except errors.OpError as e:
            self._log("step_failed", f"step of session {request.session_handle} failed: "
                      f"{type(e).__name__}: {e.message.splitlines()[0] if e.message else ''}")
            if not request.store_errors_in_response_body:
                raise
            response.status_code, response.status_error_message = e.error_code, e.message
            return response, []
        return response, list(zip(fetches, values, strict=True))

    def partial_run_setup(self, request) -> master_pb2.PartialRunSetupResponse:
        handle = self._session(request.session_handle).partial_run_setup(
            list(request.feed), list(request.fetch), list(request.target))
        return master_pb2.PartialRunSetupResponse(partial_run_handle=handle)

    def release_partial_run(self, request) -> master_pb2.RunStepResponse:
        """Ends the partial run a RunStepRequest names (`session_handle`,
        `partial_run_handle`), whose client dropped the handle: tensorflux's method,
        TensorFlow's master has none (and keeps a run until its session closes). A run
        that has ended, or an unknown one, is no error; the response is empty."""
        session = self._sessions.get(request.session_handle)
        run = session.partial_runs.get(request.partial_run_handle) \
            if session is not None else None
        if run is not None:
            run.release()
        return master_pb2.RunStepResponse()

    def close_session(self, request) -> master_pb2.CloseSessionResponse:
        with self._lock:
            session = self._sessions.pop(request.session_handle, None)
        if session is None:
            raise errors.AbortedError(None, None,
                                      f"Session {request.session_handle} is not found.")
        session.close()
        self._log("session_closed", f"session {request.session_handle} closed")
        return master_pb2.CloseSessionResponse()

    def list_devices(self, request) -> master_pb2.ListDevicesResponse:
        if request.session_handle:
            devices = self._session(request.session_handle).device_mgr.devices
        else:
            tasks = {t: self.task_client(t) for t in filtered_tasks(self.env.cluster, [])}
            devices = self.discover(tasks)
        response = master_pb2.ListDevicesResponse()
        for d in devices:
            target = response.local_device if task_of(d.name) == self.env.task_name else \
                response.remote_device
            target.append(device_attributes(d))
        return response

    def reset(self, request) -> master_pb2.ResetResponse:
        """Closes every session of this master and clears the named resource containers
        (default: the default one) on every task the device filters allow."""
        self.shutdown()
        cleanup = worker_pb2.CleanupAllRequest(container=list(request.container))
        for t in filtered_tasks(self.env.cluster, list(request.device_filters)):
            self.task_client(t).cleanup_all(cleanup)
        return master_pb2.ResetResponse()

    def make_callable(self, request) -> master_pb2.MakeCallableResponse:
        session = self._session(request.session_handle)
        opts = request.options
        handle = next(session._callable_ids)
        session.callables[handle] = (list(opts.feed), list(opts.fetch), list(opts.target),
                                     opts.run_options)
        return master_pb2.MakeCallableResponse(handle=handle)

    def run_callable(self, request) -> master_pb2.RunCallableResponse:
        session = self._session(request.session_handle)
        found = session.callables.get(request.handle)
        if found is None:
            raise errors.InvalidArgumentError(None, None, f"Attempted to run callable "
                                              f"{request.handle} that was not found.")
        feed_names, fetches, targets, run_options = found
        if len(request.feed) != len(feed_names):
            raise errors.InvalidArgumentError(
                None, None, f"Expected {len(feed_names)} feed tensors, got "
                f"{len(request.feed)}")
        feeds = {n: wire.from_tensor_proto(t, f"feed {n}")
                 for n, t in zip(feed_names, request.feed, strict=True)}
        response = master_pb2.RunCallableResponse()
        metadata = response.metadata if run_options.trace_level else None
        values = session.run(feeds, fetches, targets, run_options, metadata)
        for v in values:
            wire.to_tensor_proto(v, response.fetch.add())
        return response

    def release_callable(self, request) -> master_pb2.ReleaseCallableResponse:
        session = self._session(request.session_handle)
        session.callables.pop(request.handle, None)
        return master_pb2.ReleaseCallableResponse()

    def shutdown(self) -> None:
        """Closes every session of this master (their state on every task is freed)."""
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for s in sessions:
            try:
                s.close()
            except errors.OpError:
                pass
