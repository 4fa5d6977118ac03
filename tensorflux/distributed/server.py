"""`tf.train.Server`: one task of a cluster, serving the master and worker services.

    cluster = tf.train.ClusterSpec({"ps": ["localhost:2222"],
                                    "worker": ["localhost:2223", "localhost:2224"]})
    server = tf.train.Server(cluster, job_name="worker", task_index=0)
    with tf.Session(server.target) as sess: ...        # grpc://localhost:2223

Every task runs both services, as TensorFlow's do: a client may use any task as its
master, and the master runs the part of each step placed on its own task in-process.
The cluster and this task's place in it come from the arguments, else from `TF_CONFIG`
(cluster.resolve: TensorFlow's precedence). A task binds its address's port on loopback
when its host is loopback ("localhost", 127.x, ::1) and on every interface otherwise
(port 0 picks a free port; `target` then names the real one).

Besides TensorFlow's two services, a server answers `/tensorflux.ServerControl/Shutdown`
(control.py): `Server.shutdown_job(cluster, "ps")` stops the PS tasks of a finished job.
"""

from __future__ import annotations

import threading
import weakref

from tensorflux.distributed import cluster as cluster_lib
from tensorflux.distributed import control, push, rpc, services
from tensorflux.distributed.dist_step import TaskClient
from tensorflux.distributed.master import Master
from tensorflux.distributed.worker import Worker, WorkerEnv
from tensorflux.framework import errors
from tensorflux.protos import tensorflow_server_pb2
from tensorflux.runtime import device as device_lib

# target -> Master of the servers of this process (a Session on one of them skips gRPC).
_local_masters: dict[str, Master] = {}
_LOOPBACK = ("localhost", "127.", "[::1]", "::1")


def _bind_address(address: str) -> str:
    host, _, port = address.rpartition(":")
    if not host or host.startswith(_LOOPBACK):
        return f"{host or 'localhost'}:{port}"
    return f"[::]:{port}"


class Server:
    """An in-process server: one task of a cluster (`tf.train.Server`).

    Args:
      server_or_cluster_def: a ServerDef, ClusterSpec, ClusterDef or dict (None: from
        TF_CONFIG).
      job_name, task_index: this task (default: from the ServerDef or TF_CONFIG, or the
        cluster's only job/task).
      protocol: "grpc" (the only one).
      config: a ConfigProto: the default session config and this task's devices
        (`device_count`).
      start: start serving now.
      rpc_config: TLS, token and timeouts (default: `RpcConfig.from_env()`).
      log: `log(event, message)` of the master: "session_created", "session_closed",
        "step_failed" (default: none).
      shutdown_grace: the grace period (seconds) of a stop that a Shutdown call asks for.

    Raises:
      ValueError: a malformed cluster or TF_CONFIG, or an unknown job/task.
      UnavailableError: the address cannot be bound.
    """

    def __init__(self, server_or_cluster_def=None, job_name=None, task_index=None,
                 protocol=None, config=None, start=True, *, rpc_config=None, log=None,
                 shutdown_grace: float = 5.0):
        if isinstance(server_or_cluster_def, tensorflow_server_pb2.ServerDef):
            sd = server_or_cluster_def
            job_name = job_name or sd.job_name
            task_index = sd.task_index if task_index is None else task_index
            protocol = protocol or sd.protocol or None
            if config is None and sd.HasField("default_session_config"):
                config = sd.default_session_config
            server_or_cluster_def = sd.cluster
        target = cluster_lib.resolve(server_or_cluster_def, job_name, task_index, protocol)
        if target.protocol not in ("grpc", "grpc+loas"):
            raise ValueError(f"Unknown protocol {target.protocol!r}: tensorflux servers speak "
                             "grpc")
        self._rpc_config = rpc_config or rpc.RpcConfig.from_env()
        jobs = {job: dict(zip(target.cluster_spec.task_indices(job),
                              (target.cluster_spec.task_address(job, i)
                               for i in target.cluster_spec.task_indices(job)), strict=True))
                for job in target.cluster_spec.jobs}
        self._job, self._task = target.job_name, target.task_index
        address = jobs[self._job][self._task]
        self._config = config
        handlers_box: list = []
        self._grpc, port = rpc.make_server(
            [_Deferred(handlers_box)], _bind_address(address), self._rpc_config)
        host = address.rpartition(":")[0]
        jobs[self._job][self._task] = f"{host}:{port}"
        self._cluster = jobs
        self._server_def = tensorflow_server_pb2.ServerDef(
            cluster=cluster_lib.ClusterSpec(
                {j: dict(t) for j, t in jobs.items()}).as_cluster_def(),
            job_name=self._job, task_index=self._task, protocol="grpc", port=port)
        if config is not None:
            self._server_def.default_session_config.CopyFrom(config)
        devices = device_lib.DeviceMgr(device_lib.make_local_devices(
            config, job=self._job, task=self._task))
        env = WorkerEnv(self._job, self._task, devices, jobs, self._stub_for_task,
                        max_push_bytes=self._rpc_config.max_request_bytes)
        self._worker = Worker(env, config=config)
        self._master = Master(self._worker, self._task_client, self._server_def, log=log)
        self._shutdown_grace = shutdown_grace
        self._push = push.PushService(self._worker.rendezvous_mgr.deliver,
                                      self._worker.rendezvous_mgr.push_stream_ended,
                                      self._rpc_config, _bind_address(address),
                                      {push.RUN_GRAPH: services.pushed_run_graph(self._worker),
                                       push.RUN_STEP: services.pushed_run_step(self._master)})
        handlers_box.extend([services.worker_handler(self._worker, self._rpc_config),
                             services.master_handler(self._master, self._rpc_config),
                             control.control_handler(_stopper(self), self._rpc_config),
                             self._push.handler()])
        self._stubs: dict[str, rpc.Stub] = {}
        self._started = False
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        if start:
            self.start()

    # ---- what other tasks are -----------------------------------------------------------
    def _address_of(self, task: str) -> str:
        parts = dict(p.split(":", 1) for p in task.strip("/").split("/"))
        try:
            return self._cluster[parts["job"]][int(parts["task"])]
        except (KeyError, ValueError):
            tasks = ", ".join(f"/job:{j}/task:{i}" for j in sorted(self._cluster)
                              for i in sorted(self._cluster[j]))
            raise errors.InvalidArgumentError(
                None, None, f"Task {task} is not in the cluster; its tasks are: {tasks}"
            ) from None

    def _stub_for_task(self, task: str) -> rpc.Stub:
        stub = self._stubs.get(task)
        if stub is None:
            stub = rpc.Stub(self._address_of(task), rpc.WORKER_SERVICE, self._rpc_config,
                            task=task)
            self._stubs[task] = stub
        return stub

    def _task_client(self, task: str) -> TaskClient:
        return TaskClient.remote(task, self._stub_for_task(task))

    # ---- tf.train.Server ----------------------------------------------------------------
    @property
    def target(self) -> str:
        """The session target of this task's master: "grpc://host:port"."""
        return f"grpc://{self._cluster[self._job][self._task]}"

    @property
    def server_def(self) -> tensorflow_server_pb2.ServerDef:
        return self._server_def

    def start(self) -> None:
        with self._lock:
            if self._stopped.is_set():
                raise errors.FailedPreconditionError(None, None, "The server was stopped")
            if not self._started:
                self._grpc.start()
                self._started = True
                _local_masters[self.target] = self._master

    def join(self) -> None:
        """Blocks until the server stops (`stop()`, or a shutdown request)."""
        self._stopped.wait()

    def stop(self, grace: float | None = 5.0) -> None:
        """Stops serving: in-flight calls get `grace` seconds to finish, running steps are
        cancelled, devices freed; `join()` returns."""
        with self._lock:
            if self._stopped.is_set():
                return
            _local_masters.pop(self.target, None)
            self._master.shutdown()
            self._worker.shutdown()
            self._push.cancel_all()  # incoming push streams would hold the grace period
            stopped = self._grpc.stop(grace)
            self._push.cancel_all()  # one that came in between
            stopped.wait()
            self._worker.env.device_mgr.shutdown()
            for address in {s.address for s in self._stubs.values()}:
                rpc.CHANNELS.forget(address)
            self._stopped.set()

    @staticmethod
    def shutdown_job(cluster, job_name: str, rpc_config=None) -> list[str]:
        """Asks every task of `job_name` in `cluster` to stop (control.shutdown_job); tasks
        already gone are fine. Returns the names of the tasks that accepted."""
        return control.shutdown_job(cluster, job_name, rpc_config)

    @staticmethod
    def create_local_server(config=None, start=True) -> Server:
        """A one-task cluster on a free loopback port (`tf.train.Server.create_local_server`)."""
        return Server({"localhost": ["localhost:0"]}, job_name="localhost", task_index=0,
                      config=config, start=start)

    def __del__(self):
        try:
            if self._started and not self._stopped.is_set():
                self.stop(0)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def _stopper(server: Server):
    """`stop()` of `server` with its shutdown grace, holding it weakly (so an unreferenced
    server is still collected, and stopped, by `__del__`)."""
    ref = weakref.ref(server)

    def stop() -> None:
        s = ref()
        if s is not None:
            s.stop(s._shutdown_grace)

    return stop


class _Deferred:
    """A generic handler that forwards to handlers made after the server (which must exist
    first, to know its port)."""

    def __init__(self, box: list):
        self._box = box

    def service(self, handler_call_details):
        for h in self._box:
            found = h.service(handler_call_details)
            if found is not None:
                return found
        return None


def local_master(target: str) -> Master | None:
    """The Master of a server of this process at `target`, if any."""
    return _local_masters.get(target)


def create_local_cluster(num_workers: int, num_ps: int, protocol: str = "grpc",
                         worker_config=None, ps_config=None):
    """Starts `num_workers` worker and `num_ps` ps tasks in this process on free loopback
    ports (`tf.test.create_local_cluster`). Returns (workers, ps_servers)."""
    import socket

    def free_port() -> int:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    spec = {"worker": [f"localhost:{free_port()}" for _ in range(num_workers)]}
    if num_ps:
        spec["ps"] = [f"localhost:{free_port()}" for _ in range(num_ps)]
    cluster = cluster_lib.ClusterSpec(spec)
    workers = [Server(cluster, "worker", i, protocol, worker_config) for i in
               range(num_workers)]
    ps = [Server(cluster, "ps", i, protocol, ps_config) for i in range(num_ps)]
    return workers, ps

