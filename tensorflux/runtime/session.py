"""tf.Session: run fetches given feeds (paper §3.2; DESIGN §4).

`run` flattens the fetches, validates and converts the feeds, and looks up a cached Step for
the signature (feeds, fetches, targets). A Step is built once per signature: the user's graph
is pruned to what the fetches need, optimized, placed, partitioned per device with
Send/Recv, and `exec_options.choose_strategies` decides, from the session's ExecOptions,
which executor each partition gets (or that all run merged as one); traced runs use the
same plan with traced kernels. Every run then gets a fresh step id, a Rendezvous when there
are several partitions, and runs the partitions concurrently. Many threads may call `run`
on one Session at once.
"""

from __future__ import annotations

import itertools
import threading
import weakref

import numpy as np

from tensorflux.framework import errors, gc_pause, traceback_utils
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Operation, Tensor, register_session_runner
from tensorflux.kernels import intra_op
from tensorflux.kernels.buffers import exclusively_owned
from tensorflux.kernels.cpu import session_ops as session_state
from tensorflux.kernels.cpu._blas import release_free_memory
from tensorflux.ops import session_ops
from tensorflux.protos import config_pb2
from tensorflux.runtime import cost_model as cost_model_lib
from tensorflux.runtime import device as device_lib
from tensorflux.runtime import (
    fetching,
    graph_optimizer,
    partial_run,
    partition,
    placer,
    tracing,
)
from tensorflux.runtime import step_graph as step_graph_lib
from tensorflux.runtime.cancellation import CancellationManager
from tensorflux.runtime.exec_options import ExecOptions
from tensorflux.runtime.graph_runner import GraphRunner

_live_sessions: weakref.WeakSet = weakref.WeakSet()


def _partitioned(session: BaseSession, feeds: list[Tensor], fetches: list[Tensor],
                 targets: list[Operation], partial: bool = False) -> tuple:
    """The user's graph pruned to a signature, optimized, placed and partitioned per
    device: (partitions, cost_model.StepCosts, placer.Placement). What a `_Step` and a
    partial run's step (`partial`: its feeds arrive while it runs) are built from."""
    sg = step_graph_lib.build(feeds, fetches, targets, feeds_arrive=partial)
    fuse = all(d.device_type == "CPU" for d in session._device_mgr.devices)
    graph_optimizer.optimize(sg, session._optimizer_options, fuse=fuse)
    config = session._config
    graph_options = config.graph_options if config is not None else None
    costs = cost_model_lib.StepCosts(session._cost_model,
                                     {a: t.shape for a, t in zip(sg.args, feeds, strict=True)})
    placement = placer.place(
        sg, session._device_mgr,
        allow_soft_placement=bool(config and config.allow_soft_placement),
        log_device_placement=bool(config and config.log_device_placement),
        costs=costs, pinned=session._stateful_placements,
        graph_groups=session._graph_colocation)
    graph_optimizer.optimize_placed(sg, session._optimizer_options, fuse=fuse)
    parts = partition.partition(
        sg, session._device_mgr,
        bfloat16_sendrecv=bool(graph_options and graph_options.enable_bfloat16_sendrecv),
        recv_scheduling=bool(graph_options and graph_options.enable_recv_scheduling),
        costs=costs)
    return parts, costs, placement


class _Step(GraphRunner):
    """Everything needed to run one (feeds, fetches, targets) signature, built once: the
    user's graph pruned, optimized, placed and partitioned, then a GraphRunner's executors."""

    def __init__(self, session: BaseSession, feeds: list[Tensor], fetches: list[Tensor],
                 targets: list[Operation]):
        # Placement uses the session's cost model as it is now; a traced run that changes
        # it marks this step for a rebuild (`rebuild_on_new_costs`, `cost_version`).
        self.cost_version = session._cost_model.version
        parts, costs, self.placement = _partitioned(session, feeds, fetches, targets)
        self.rebuild_on_new_costs = self.placement.has_choices
        self.partition_graphs = parts
        devices = {p.device: session._device_mgr.lookup(p.device) for p in parts.values()}
        super().__init__([(devices[p.device], p.nodes, [(n, i) for _, n, i in p.fetches],
                           [pos for pos, _, _ in p.fetches]) for p in parts.values()],
                         session._exec_options, sum(len(p.fetches) for p in parts.values()),
                         session._graph, costs,
                         compile_later=True)
        # fetches of persistent-tensor handles come back as TensorHandles
        self.handle_fetches = [(i, t.op.inputs[0].dtype) for i, t in enumerate(fetches)
                               if t.op.type in session_ops.HANDLE_OPS]

    def run(self, session: BaseSession, args: list, options, stats=None) -> list:
        return super().run(session, next(session._step_ids), args, options, stats)


# `tf.debugging.set_log_device_placement`: the process-wide default for sessions whose
# config does not ask for placement logging (a proto3 bool: "not set" reads as False).
_log_device_placement_default = False


def set_log_device_placement(enabled) -> None:
    """Sessions created from now on log their placements (as
    `ConfigProto(log_device_placement=True)` does) when `enabled`, whatever their config."""
    global _log_device_placement_default
    _log_device_placement_default = bool(enabled)


def get_log_device_placement() -> bool:
    """The default that `set_log_device_placement` set (False at start)."""
    return _log_device_placement_default


def _with_default_placement_logging(config):
    """`config`, or a copy of it (a new ConfigProto for None) with log_device_placement on
    when the process default asks for it and `config` does not."""
    if not _log_device_placement_default or (config is not None and
                                             config.log_device_placement):
        return config
    copy = config_pb2.ConfigProto()
    if config is not None:
        copy.CopyFrom(config)
    copy.log_device_placement = True
    return copy


class BaseSession:
    """A TF1 session: on this process (target "" or "local"), or on a cluster's master
    ("grpc://host:port", through the registered remote backend)."""

    def __init__(self, target: str = "", graph: graph_lib.Graph | None = None, config=None,
                 *, exec_options: ExecOptions | None = None):
        """Args: TF1's `target`, `graph`, `config`; `exec_options`, how steps run
        (tests and benchmarks; default: `ExecOptions.from_config(config)`)."""
        if graph is not None and not isinstance(graph, graph_lib.Graph):
            raise TypeError(f"graph must be a tf.Graph, but got {type(graph)}")
        if isinstance(target, bytes):
            target = target.decode()
        if target not in ("", "local") and not target.startswith("grpc://"):
            raise errors.InvalidArgumentError(None, None, f"Unknown session target: {target}")
        config = _with_default_placement_logging(config)
        self._remote = None
        if target.startswith("grpc://"):
            factory = _remote_backends.get("grpc")
            if factory is None:
                raise errors.UnimplementedError(
                    None, None, "grpc:// targets need tensorflux.distributed.client")
            self._remote = factory(target, graph if graph is not None
                                   else graph_lib.get_default_graph(), config)
        self._target = target
        self._graph = graph if graph is not None else graph_lib.get_default_graph()
        self._config = config
        # ConfigProto.operation_timeout_in_ms: the deadline of steps whose RunOptions set none
        self._operation_timeout_ms = getattr(config, "operation_timeout_in_ms", 0) \
            if config is not None else 0
        # the kernels' intra-op threads, fixed now as TF reads TF_NUM_INTRAOP_THREADS at
        # session creation (kernels/intra_op.workers)
        self._intra_op_threads = intra_op.intra_op_threads(config)
        self._device_mgr = device_lib.DeviceMgr(device_lib.make_local_devices(config))
        self._optimizer_options = _optimizer_options(config)
        self._exec_options = ExecOptions.from_config(config, exec_options)
        self._cost_model = cost_model_lib.CostModel(cost_model_lib.CostParams(
            cpu_devices_share_cores=self._exec_options.cpu_devices_share_cores))
        self._stateful_placements: dict[str, str] = {}  # a variable never changes device
        self._graph_colocation = placer.GraphColocation(self._graph)
        self._steps: dict[tuple, _Step] = {}
        self._build_lock = threading.Lock()
        self._step_ids = itertools.count(1)
        # Partial runs (runtime/partial_run.py): steps per signature, live runs per handle.
        self._partial_steps: dict[tuple, partial_run.PartialRunStep] = {}
        self._partial_runs: dict[str, partial_run.PartialRun] = {}
        self._partial_count = itertools.count()
        # Handles of persistent tensors on a server, collected, to delete (`run`).
        self._dead_handles: list[str] = []
        self._handle_deleters: dict[str, list[tuple]] = {}
        # Steps that can block, for close() to cancel. A dict keyed by identity: insertion
        # and removal are single atomic operations under the GIL, so the many threads
        # running steps on one Session never queue on a lock here.
        self._active_steps: dict[int, CancellationManager] = {}
        # Cancelled by close(): the C loops of running kernels stop on it
        # (kernels/interrupt.py), whether or not their step can block.
        self._closing = CancellationManager()
        self._closed = False
        self._default_session_context = None
        _live_sessions.add(self)

    # ---- properties ---------------------------------------------------------------------
    @property
    def graph(self) -> graph_lib.Graph:
        return self._graph

    @property
    def graph_def(self):
        return self._graph.as_graph_def()

    @property
    def sess_str(self) -> str:
        return self._target

    def list_devices(self) -> list[device_lib.DeviceAttributes]:
        if self._remote is not None:
            return self._remote.list_devices()
        return [device_lib.DeviceAttributes(d) for d in self._device_mgr.devices]

    # ---- running ------------------------------------------------------------------------
    @traceback_utils.filter_traceback
    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs the ops and evaluates the tensors in `fetches`.

        Args:
          fetches: a graph element (Tensor, Operation, name, Variable, SparseTensor, ...) or a
            nested list, tuple, namedtuple or dict of them.
          feed_dict: maps graph elements (or names) to values that replace them for this run.
          options: a `RunOptions` proto (`timeout_in_ms`, `trace_level`, ...).
          run_metadata: a `RunMetadata` proto to fill in.

        Returns:
          The fetched values in the structure of `fetches`: NumPy arrays (numpy scalars for
          0-d tensors, bytes for string scalars), None for Operations.

        Raises:
          RuntimeError: the Session is closed or its graph is empty.
          TypeError, ValueError: a bad fetch or feed (as TensorFlow raises them).
          tf.errors.OpError: the step failed (e.g. an unfed placeholder, a kernel error).
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if not self._graph._ops:
            raise RuntimeError("The Session graph is empty. Add operations to the graph "
                               "before calling run().")
        mapper = fetching.mapper_for(self._graph, fetches)
        feed_map = fetching.process_feeds(self._graph, feed_dict) if feed_dict else {}
        if not mapper.tensors and not mapper.targets:
            return mapper.build_results([])  # `run([])`: nothing to run, as in TF
        values = self._run_flat(mapper.tensors, mapper.targets, feed_map, options,
                                run_metadata)
        return mapper.build_results(values)

    def _with_operation_timeout(self, options):
        """`options` with ConfigProto.operation_timeout_in_ms as the step's deadline when
        they set none (TF: "global timeout for all blocking operations in this session")."""
        if options is not None and options.timeout_in_ms > 0:
            return options
        with_timeout = config_pb2.RunOptions()
        if options is not None:
            with_timeout.CopyFrom(options)
        with_timeout.timeout_in_ms = self._operation_timeout_ms
        return with_timeout

    def _run_flat(self, fetch_tensors: list[Tensor], targets: list[Operation],
                  feed_map: dict, options=None, run_metadata=None) -> list:
        if self._operation_timeout_ms > 0:
            options = self._with_operation_timeout(options)
        if self._remote is not None:
            if self._dead_handles:
                self._delete_dead_handles()
            raw = self._remote.run(feed_map, fetch_tensors, targets, options, run_metadata)
            results = _results(fetch_tensors, feed_map, raw)
            for i, t in enumerate(fetch_tensors):
                if t.op.type in session_ops.HANDLE_OPS and t not in feed_map:
                    results[i] = session_ops.TensorHandle(results[i], t.op.inputs[0].dtype,
                                                          self)
            return results
        feeds = list(feed_map)
        key = (tuple(feeds), tuple(fetch_tensors), tuple(targets),
               self._graph._mutation_version)
        step = self._steps.get(key)
        if step is None:
            step = self._build_step(key, feeds, fetch_tensors, targets)
        elif step.rebuild_on_new_costs and step.cost_version != self._cost_model.version:
            step = self._build_step(key, feeds, fetch_tensors, targets, stale=step)
        args = list(feed_map.values())
        stats = None
        if options is not None and options.trace_level:
            stats = tracing.StepStatsCollector()
        raw = step.run(self, args, options, stats)
        if stats is not None:
            self._collect_stats(stats, run_metadata)
        if run_metadata is not None and options is not None and \
                options.output_partition_graphs:
            partition.fill_partition_graphs(run_metadata, step.partition_graphs)
        results = _results(fetch_tensors, feed_map, raw)
        for i, dtype in step.handle_fetches:
            if fetch_tensors[i] not in feed_map:
                results[i] = session_ops.TensorHandle(results[i], dtype, self)
        return results

    def _build_step(self, key, feeds, fetches, targets, stale=None) -> _Step:
        with self._build_lock:
            step = self._steps.get(key)
            if step is None or step is stale:
                with gc_pause.paused():  # thousands of live objects: nothing to collect
                    step = _Step(self, feeds, fetches, targets)
                self._steps[key] = step
        return step

    def _collect_stats(self, stats, run_metadata) -> None:
        """Fills RunMetadata.step_stats and feeds the measured costs to the cost model."""
        step_stats = run_metadata.step_stats if run_metadata is not None else \
            tracing.new_step_stats()
        devices = self._device_mgr.devices
        stats.fill(step_stats, {d.name: d.memory.allocator_name for d in devices})
        self._cost_model.record_step_stats(step_stats, {d.name: d.device_type for d in devices})

    def make_callable(self, fetches, feed_list=None, accept_options=False):
        """A function running `fetches` with positional feed values for `feed_list`."""
        mapper = fetching.mapper_for(self._graph, fetches)
        feed_tensors = [fetching.feed_tensor(self._graph, f) for f in (feed_list or ())]
        graph, steps, convert = self._graph, self._steps, fetching.convert_feed
        # The step's cache key but for the graph's version, when a call's feeds are exactly
        # `feed_tensors` (no duplicate) and none is fetched: `_run_flat`'s work then reduces
        # to one lookup of the built step (a served model's batch-of-one run is ~100 us).
        plain = len(set(feed_tensors)) == len(feed_tensors) and \
            not set(feed_tensors) & set(mapper.tensors)
        key = (tuple(feed_tensors), tuple(mapper.tensors), tuple(mapper.targets))

        def call(*feed_values, options=None, run_metadata=None):
            if len(feed_values) != len(feed_tensors):
                raise TypeError(f"Callable expected {len(feed_tensors)} feed values, got "
                                f"{len(feed_values)}")
            if plain and options is None and run_metadata is None and self._remote is None:
                step = steps.get(key + (graph._mutation_version,))
                if step is not None and (not step.rebuild_on_new_costs
                                         or step.cost_version == self._cost_model.version):
                    args = [convert(t, v) for t, v in zip(feed_tensors, feed_values, strict=True)]
                    return mapper.build_results(_results(mapper.tensors, _NO_FEEDS,
                                                         step.run(self, args, None)))
            feed_map = {t: convert(t, v) for t, v in zip(feed_tensors, feed_values, strict=True)}
            values = self._run_flat(mapper.tensors, mapper.targets, feed_map, options,
                                    run_metadata)
            return mapper.build_results(values)

        return call

    # ---- partial runs -------------------------------------------------------------------
    @traceback_utils.filter_traceback
    def partial_run_setup(self, fetches, feeds=None):
        """Starts a partial run: one step of `fetches` that `partial_run` calls then feed
        and fetch in pieces (runtime/partial_run.py).

        Args:
          fetches: a graph element or a nested structure of them, as for `run`; the
            Operations among them run as the step's targets.
          feeds: a graph element or a list of them: the tensors the calls may feed.

        Returns:
          The handle (a string) of the partial run, for `partial_run`. The run ends when
          everything is fed and fetched, when the Session closes, or when the handle
          object is garbage collected.

        Raises:
          RuntimeError: the Session is closed or its graph is empty.
          TypeError, ValueError: a bad fetch or feed.
          InvalidArgumentError: a tensor both fed and fetched, a feed named twice, or
            nothing to fetch or run.
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if not self._graph._ops:
            raise RuntimeError("The Session graph is empty. Add operations to the graph "
                               "before calling run().")
        feed_tensors = partial_run.setup_feeds(self._graph, feeds)
        mapper = fetching.mapper_for(self._graph, fetches)
        partial_run.check_signature([t.name for t in feed_tensors],
                                    [t.name for t in mapper.tensors],
                                    [op.name for op in mapper.targets])
        if self._remote is not None:  # the master runs it (distributed/dist_partial_run.py)
            key = self._remote.partial_run_setup(feed_tensors, mapper.tensors, mapper.targets,
                                                 self._operation_timeout_ms)
            handle = partial_run.PartialRunHandle(key)
            # (not at exit: the session's end frees it on the master)
            weakref.finalize(handle, self._remote.release_partial_run, key).atexit = False
            return handle
        step = self._partial_step(feed_tensors, mapper.tensors, mapper.targets)
        key = partial_run.handle_string(feed_tensors, mapper.tensors, mapper.targets,
                                        next(self._partial_count))
        handle = partial_run.PartialRunHandle(key)
        runs = self._partial_runs
        runs[key] = run = partial_run.PartialRun(step, self, next(self._step_ids),
                                                 lambda: runs.pop(key, None))
        if self._closed:  # closed meanwhile, by another thread
            run.release()
        weakref.finalize(handle, _release_partial_run, weakref.ref(self), key)
        return handle

    @traceback_utils.filter_traceback
    def partial_run(self, handle, fetches, feed_dict=None):
        """Continues the partial run `handle`: feeds `feed_dict` and fetches `fetches`.

        Args:
          handle: what `partial_run_setup` returned.
          fetches: tensors given to `partial_run_setup` (a nested structure, as for `run`),
            none fetched before.
          feed_dict: values of tensors given to `partial_run_setup` as feeds, none fed
            before.

        Returns:
          The fetched values in the structure of `fetches`.

        Raises:
          RuntimeError: the Session is closed, or `fetches` holds an Operation.
          TypeError, ValueError: a bad fetch or feed (as for `run`).
          InvalidArgumentError: an unknown or ended handle; a feed or fetch not set up, or
            given before; a fetch needing a feed not given yet.
          tf.errors.OpError: the step failed (a kernel's error, naming its node).
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        mapper = fetching.mapper_for(self._graph, fetches)
        if mapper.targets:
            raise RuntimeError("partial_run() requires empty `target_list`. Received: "
                               f"target_list={mapper.targets} (non-empty)")
        feed_map = fetching.process_feeds(self._graph, feed_dict) if feed_dict else {}
        wanted = [t for t in mapper.tensors if t not in feed_map]
        values = []
        if (wanted or feed_map) and self._remote is not None:  # (else TF asks nothing)
            if not isinstance(handle, str) or not handle:
                raise partial_run.no_setup_error(master=True)
            values = self._remote.partial_run(str(handle), feed_map, wanted,
                                              self._operation_timeout_ms)
        elif wanted or feed_map:
            run = self._partial_runs.get(handle) if isinstance(handle, str) else None
            if run is None:
                raise partial_run.no_setup_error()
            timeout = self._operation_timeout_ms / 1000.0 \
                if self._operation_timeout_ms > 0 else None
            values = run.exchange(feed_map, wanted, timeout)
        results = _results(mapper.tensors, feed_map, values)
        for i, t in enumerate(mapper.tensors):
            if t.op.type in session_ops.HANDLE_OPS and t not in feed_map:
                results[i] = session_ops.TensorHandle(results[i], t.op.inputs[0].dtype, self)
        return mapper.build_results(results)

    def _partial_step(self, feeds, fetches, targets) -> partial_run.PartialRunStep:
        """The PartialRunStep of a signature, built on first use."""
        key = (tuple(feeds), tuple(fetches), tuple(targets), self._graph._mutation_version)
        step = self._partial_steps.get(key)
        if step is None:
            with self._build_lock:
                step = self._partial_steps.get(key)
                if step is None:
                    with gc_pause.paused():
                        parts, costs, _ = _partitioned(self, feeds, fetches, targets,
                                                       partial=True)
                        step = partial_run.PartialRunStep(
                            parts, self._device_mgr, self._exec_options, feeds, fetches,
                            self._graph, costs)
                    self._partial_steps[key] = step
        return step

    # ---- lifetime -----------------------------------------------------------------------
    def _register_step(self, cm: CancellationManager) -> None:
        self._active_steps[id(cm)] = cm

    def _deregister_step(self, cm: CancellationManager) -> None:
        self._active_steps.pop(id(cm), None)

    def _drop_persistent_tensor(self, handle: str) -> None:
        """A TensorHandle of this session was garbage collected: its tensor goes too (on
        a server: by the next `run`, which first deletes the handles collected since, as
        TF1's sessions do; never from the collector's thread)."""
        if self._remote is None:
            session_state.drop(self, handle)
        elif not self._closed:
            self._dead_handles.append(handle)

    def _delete_dead_handles(self) -> None:
        """Deletes the persistent tensors of collected handles on the server (up to
        `_DELETERS_PER_DEVICE` DeleteSessionTensor ops per device, made once in the graph,
        the rest by the next run; none when the graph is finalized: those stay until the
        session closes, which frees them all)."""
        handles = []
        while self._dead_handles:
            handles.append(self._dead_handles.pop())
        feeds, ops, used = {}, [], {}
        for handle in handles:
            device = session_ops.device_of(handle)
            deleters = self._handle_deleters.setdefault(device, [])
            k = used[device] = used.get(device, -1) + 1
            if k == len(deleters):
                if self._graph.finalized or k == _DELETERS_PER_DEVICE:
                    if not self._graph.finalized:
                        self._dead_handles.append(handle)  # the next run's
                    continue
                with self._graph.as_default():
                    deleters.append(session_ops.delete_session_tensor(handle))
            holder, op = deleters[k]
            feeds[holder] = handle
            ops.append(op)
        if ops:
            try:
                self._remote.run(feeds, [], ops, None, None)
            except errors.OpError:
                pass  # already gone (deleted through another handle, or the server restarted)

    def close(self) -> None:
        """Cancels running steps (blocked ones fail with CancelledError) and frees resources."""
        if self._closed:
            return
        self._closed = True
        if self._remote is not None:
            self._remote.close()
        for run in list(self._partial_runs.values()):
            run.release(errors.CancelledError(None, None, "The Session was closed"))
        active = list(self._active_steps.values())
        for cm in active:
            cm.start_cancel()
        self._closing.start_cancel()
        self._steps.clear()
        self._partial_steps.clear()
        session_state.clear(self)  # the persistent tensors it held
        self._device_mgr.shutdown()
        release_free_memory()  # the heap keeps its peak while steps run (kernels/cpu/_blas.py)

    def __enter__(self):
        if self._default_session_context is None:
            self._default_session_context = self.as_default()
        self._graph_context = self._graph.as_default()
        self._graph_context.__enter__()
        return self._default_session_context.__enter__()

    def __exit__(self, exc_type, exc, tb):
        self._default_session_context.__exit__(exc_type, exc, tb)
        self._default_session_context = None
        self._graph_context.__exit__(exc_type, exc, tb)
        self.close()

    def as_default(self):
        """A context manager making this the default session (for `Tensor.eval`)."""
        return _DefaultSessionContext(self)

    def __del__(self):
        try:
            if not self._closed:
                self._closed = True
                self._device_mgr.shutdown()
                if self._remote is not None:
                    self._remote.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    @staticmethod
    def reset(target: str = "", containers=None, config=None) -> None:
        """Clears resource containers (default: the default one) in every session on
        `target` (the local process for ""; a "grpc://" target: every task of that
        master's cluster, and its sessions are closed)."""
        if isinstance(target, bytes):
            target = target.decode()
        if target.startswith("grpc://") and "grpc" in _remote_backends:
            _remote_backends["grpc"].reset(target, containers, config)
            return
        for s in list(_live_sessions):
            if s._target != target and not (target in ("", "local")
                                             and s._target in ("", "local")):
                continue
            for d in s._device_mgr.devices:
                if containers:
                    for c in containers:
                        d.resource_mgr.cleanup(c)
                else:
                    d.resource_mgr.cleanup("")


def _release_partial_run(session_ref, key: str) -> None:
    """A partial run's handle object was collected: the run ends (if it has not)."""
    session = session_ref()
    run = session._partial_runs.get(key) if session is not None else None
    if run is not None:
        run.release()


# scheme -> factory(target, graph, config) of the backend running a session's steps
# elsewhere (set by tensorflux.distributed.client for "grpc"); the backend has `run`,
# `list_devices`, `close` and a static `reset(target, containers, config)`.
_remote_backends: dict = {}
_DELETERS_PER_DEVICE = 16  # DeleteSessionTensor ops made per device for collected handles


def register_remote_backend(scheme: str, factory) -> None:
    """Lets `tf.Session("<scheme>://...")` run its steps through `factory`'s backend."""
    _remote_backends[scheme] = factory


class Session(BaseSession):
    """`tf.Session(target='', graph=None, config=None)`."""


class InteractiveSession(BaseSession):
    """A Session that installs itself as the default on construction (for shells)."""

    def __init__(self, target: str = "", graph=None, config=None, *,
                 exec_options: ExecOptions | None = None):
        super().__init__(target, graph, config, exec_options=exec_options)
        self._interactive_ctx = self.as_default()
        self._interactive_ctx.__enter__()
        self._interactive_graph_ctx = self._graph.as_default()
        self._interactive_graph_ctx.__enter__()

    def close(self) -> None:
        super().close()
        if self._interactive_ctx is not None:
            ctx, self._interactive_ctx = self._interactive_ctx, None
            try:
                self._interactive_graph_ctx.__exit__(None, None, None)
                ctx.__exit__(None, None, None)
            except Exception:  # noqa: BLE001 - closed from another thread
                pass


def _optimizer_options(config):
    if config is None or not config.HasField("graph_options"):
        return None
    return config.graph_options.optimizer_options


_NO_FEEDS: dict = {}


class _FetchHandler:
    """TF's private `session._FetchHandler`, which libraries (tensorpack) use to learn what a
    `Session.run` fetch structure runs: `fetches()` its unique tensors, `targets()` its
    operations, `build_results(session, values)` the structure again from the values.
    `feeds` and `feed_handles` are taken for TF's signature; fetches keep their order."""

    def __init__(self, graph: graph_lib.Graph, fetches, feeds, feed_handles=None):
        del feeds, feed_handles
        self._mapper = fetching.mapper_for(graph, fetches)

    def fetches(self) -> list[Tensor]:
        return list(self._mapper.tensors)

    def targets(self) -> list[Operation]:
        return list(self._mapper.targets)

    def build_results(self, session, tensor_values):
        del session
        return self._mapper.build_results(list(tensor_values))


def _results(fetch_tensors: list[Tensor], feed_map: dict, raw: list) -> list:
    """Values for `fetch_tensors`: fed ones answer with the feed; arrays that anything else
    holds (a variable, a constant) are copied, so the caller owns what it gets."""
    out = []
    it = iter(raw)
    for t in fetch_tensors:
        if t in feed_map:
            out.append(feed_map[t])
            continue
        v = next(it)
        if type(v) is np.ndarray:
            if v.ndim == 0:
                v = v[()]
            elif not v.flags.writeable or not exclusively_owned(v, 2):  # raw list + local
                v = v.copy()
        elif not isinstance(v, np.generic):
            v = np.asarray(v, dtype=t.dtype.as_numpy_dtype)
            if v.ndim == 0:
                v = v[()]
        out.append(v)
    return out


# ------------------------------------------------------------------------------------------
# The default session stack (per thread).


class _SessionStack(threading.local):
    def __init__(self):
        self.stack: list[BaseSession] = []


_session_stack = _SessionStack()


class _DefaultSessionContext:
    def __init__(self, session: BaseSession):
        self._session = session

    def __enter__(self):
        _session_stack.stack.append(self._session)
        return self._session

    def __exit__(self, *exc):
        stack = _session_stack.stack
        if stack and stack[-1] is self._session:
            stack.pop()
        elif self._session in stack:
            stack.remove(self._session)


def get_default_session() -> BaseSession | None:
    stack = _session_stack.stack
    return stack[-1] if stack else None


def run_in_session(element, feed_dict=None, session=None):
    """`Tensor.eval` / `Operation.run`: runs in `session` or the default session."""
    if session is None:
        session = get_default_session()
        if session is None:
            raise ValueError("Cannot evaluate tensor using `eval()`: No default session is "
                             "registered. Use `with sess.as_default()` or pass an explicit "
                             "session to `eval(session=sess)`")
    if session.graph is not element.graph:
        raise ValueError("Cannot use the given session to evaluate tensor: the tensor's graph "
                         "is different from the session's graph.")
    return session.run(element, feed_dict)


register_session_runner(run_in_session)
