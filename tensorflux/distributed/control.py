"""Shutting servers down from the job: the `tensorflux.ServerControl` service.

TensorFlow has no way to stop a parameter server from the training program (its PS
processes `join()` forever, and jobs kill them). Every tensorflux `Server` also serves

    /tensorflux.ServerControl/Shutdown     request: empty bytes   response: empty bytes

(no proto message: both bodies are empty). A call that passes the server's checks (the
token, like every other call of the server, and TLS) makes the server stop once the call
has returned: running steps are cancelled, in-flight calls get the server's grace period,
and `join()` returns, so a `tensorflux-server` process exits with code 0.

    tf.train.Server.shutdown_job(cluster, "ps")   # every PS task; tasks already gone are fine

Anyone who can call a server can run graphs on it, so this adds no new power; protect a
cluster with a token (`--token_file`, TENSORFLUX_RPC_TOKEN) and TLS.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from tensorflux.distributed import cluster as cluster_lib
from tensorflux.distributed import rpc
from tensorflux.framework import errors

CONTROL_SERVICE = "tensorflux.ServerControl"


class _RawBytes:
    """The request "message" of the control methods: the bytes as they came."""

    @staticmethod
    def FromString(data: bytes) -> bytes:  # noqa: N802 - the protobuf method name
        return data


def _empty(_response) -> bytes:
    return b""


def control_handler(request_stop: Callable[[], None], config: rpc.RpcConfig):
    """The `/tensorflux.ServerControl/*` handler of a server.

    Args:
      request_stop: called (on a thread of its own) once a Shutdown call has returned; it
        stops the server.
      config: the server's RpcConfig (its token is checked).

    Returns:
      A grpc generic handler.
    """

    def shutdown(request, context):
        def after_response():
            threading.Thread(target=request_stop, name="tfx-shutdown", daemon=True).start()

        if not context.add_callback(after_response):  # the call has ended already
            after_response()
        return b""

    methods = {"Shutdown": (shutdown, _RawBytes, _empty)}
    return rpc.service_handler(CONTROL_SERVICE, methods, config)


def shutdown(target_or_address: str, rpc_config: rpc.RpcConfig | None = None,
             timeout: float = 10) -> None:
    """Asks the server at `target_or_address` to stop.

    Args:
      target_or_address: "grpc://host:port" or "host:port".
      rpc_config: token and TLS settings (default: `RpcConfig.from_env()`).
      timeout: seconds to wait for the answer.

    Raises:
      UnavailableError: the server cannot be reached (it may be gone already).
      UnauthenticatedError: the server wants another token.
      OpError: other failures of the call.
    """
    config = rpc_config or rpc.RpcConfig.from_env()
    stub = rpc.Stub(target_or_address, CONTROL_SERVICE, config,
                    task=f"server {target_or_address}")
    stub.call("Shutdown", b"", None, timeout=timeout, retry_unavailable=False)


def shutdown_job(cluster_spec, job_name: str, rpc_config: rpc.RpcConfig | None = None,
                 timeout: float = 10) -> list[str]:
    """Asks every task of `job_name` to stop (in parallel); tasks already gone are fine.

    Args:
      cluster_spec: a ClusterSpec, dict or ClusterDef.
      job_name: the job, e.g. "ps".
      rpc_config: token and TLS settings (default: `RpcConfig.from_env()`).
      timeout: seconds to wait for each task's answer.

    Returns:
      The names (`/job:J/task:T`) of the tasks that accepted the request.

    Raises:
      ValueError: `job_name` is not a job of the cluster.
      OpError: a task refused the request (e.g. UnauthenticatedError: wrong token).
    """
    spec = cluster_lib.ClusterSpec(cluster_spec)
    if job_name not in spec.jobs:
        raise ValueError(f"Job {job_name!r} is not in the cluster, whose jobs are "
                         f"{spec.jobs!r}")
    config = rpc_config or rpc.RpcConfig.from_env()
    tasks = {f"/job:{job_name}/task:{i}": spec.task_address(job_name, i)
             for i in spec.task_indices(job_name)}

    def one(address: str) -> bool:
        try:
            shutdown(address, config, timeout)
        except errors.UnavailableError:
            return False  # not running (any more)
        return True

    with ThreadPoolExecutor(max_workers=min(32, max(1, len(tasks)))) as pool:
        answers = dict(zip(tasks, pool.map(one, tasks.values()), strict=True))
    return [task for task, accepted in answers.items() if accepted]
