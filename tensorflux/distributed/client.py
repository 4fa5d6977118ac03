"""The client side of `tf.Session("grpc://host:port")`: a session on a remote master.

The Session class is the same as for local sessions (fetch and feed handling are shared);
what differs is where steps run, which is this backend's job:
- the first run sends the graph (CreateSession), later runs send only the nodes added
  since (ExtendSession), as a TensorFlow client does;
- each run is one RunStep with feeds (NamedTensorProtos), fetch and target names and the
  RunOptions; errors come back as the status code and message of the master's error, and
  are raised as that error class;
- a target served by a Server of this process is called in-process (the same messages,
  no socket), as TensorFlow's LocalMaster does, unless the ConfigProto sets
  `rpc_options.use_rpc_for_inprocess_master`;
- partial runs as TensorFlow's grpc session makes them: PartialRunSetup (feed, fetch and
  target names) returns the master's handle, and each `partial_run` is a RunStep with
  `partial_run_handle` (its timeout the ConfigProto's operation_timeout_in_ms); the master
  checks each call (dist_partial_run.py). When the handle object is collected before the
  run is done, the run is released (ReleasePartialRun, a tensorflux method a TensorFlow
  master does not have: it keeps the run until the session closes).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from tensorflux.distributed import push, rpc, wire
from tensorflux.distributed.server import local_master
from tensorflux.framework import errors
from tensorflux.protos import master_pb2
from tensorflux.runtime import device as device_lib
from tensorflux.runtime import session as session_lib

_METHODS = {
    "CreateSession": ("create_session", master_pb2.CreateSessionResponse),
    "ExtendSession": ("extend_session", master_pb2.ExtendSessionResponse),
    "RunStep": ("run_step", master_pb2.RunStepResponse),
    "CloseSession": ("close_session", master_pb2.CloseSessionResponse),
    "ListDevices": ("list_devices", master_pb2.ListDevicesResponse),
    "Reset": ("reset", master_pb2.ResetResponse),
    "PartialRunSetup": ("partial_run_setup", master_pb2.PartialRunSetupResponse),
    # tensorflux's own method (services.py): a RunStepRequest naming the partial run
    "ReleasePartialRun": ("release_partial_run", master_pb2.RunStepResponse),
}

# Releases of partial runs whose handles were collected: sent from here, not from the
# garbage collector's thread.
_release_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tfx-release-partial-run")


class MasterClient:
    """Calls of one master: in-process when the target is served here, else gRPC."""

    def __init__(self, target: str, rpc_config: rpc.RpcConfig | None = None,
                 use_rpc: bool = False):
        self.target = target
        self._local = None if use_rpc else local_master(target)
        self._stub = None if self._local is not None else rpc.Stub(
            target, rpc.MASTER_SERVICE, rpc_config or rpc.RpcConfig.from_env(),
            task=f"master {target}")
        # RunStep on a tensorflux master's push listener (push.py), else gRPC.
        self._calls = None if self._stub is None else push.CallConnection(self._stub)

    def call(self, method: str, request, timeout: float | None = None):
        fn_name, response_cls = _METHODS[method]
        if self._local is not None:
            return getattr(self._local, fn_name)(request)
        return self._stub.call(method, request, response_cls, timeout=timeout)

    def run_step(self, request, feeds: list, timeout: float | None):
        """RunStep: (response without `tensor`, [(fetch name, array)]); the tensors cross
        as raw bytes read and written by hand (an in-process master gets the arrays)."""
        if self._local is not None:
            return self._local.run_step_values(request, feeds)
        if not request.partial_run_handle:
            result = self._calls.call(request, timeout or 7 * 24 * 3600.0,
                                      _RunStepDecoder.FromString, feeds)
            if result is not None:
                return result
        data = wire.encode_with_named_tensors(request, 2, feeds)
        return self._stub.call("RunStep", data, _RunStepDecoder, timeout=timeout)

    def close(self) -> None:
        if self._calls is not None:
            self._calls.close()


class GrpcSessionBackend:
    """Steps of one Session on a remote master (see the module docstring)."""

    def __init__(self, target: str, graph, config):
        self.target = target
        self.graph = graph
        self.config = config
        self.master = MasterClient(target, use_rpc=bool(
            config is not None and config.rpc_options.use_rpc_for_inprocess_master))
        self.handle: str | None = None
        self._sent_version = 0
        self._lock = threading.Lock()
        # Partial runs not done: handle -> (feed names, fetch names) not given yet.
        self._partial_left: dict[str, tuple[set, set]] = {}
        self._can_release = True  # False once the master says it has no ReleasePartialRun

    def _sync_graph(self) -> None:
        """Creates the remote session on first use, then extends it with new nodes."""
        version = self.graph.version
        if self.handle is not None and version == self._sent_version:
            return
        with self._lock:
            if self.handle is None:
                request = master_pb2.CreateSessionRequest(
                    graph_def=self.graph.as_graph_def(), target=self.target)
                if self.config is not None:
                    request.config.CopyFrom(self.config)
                response = self.master.call("CreateSession", request)
                self.handle = response.session_handle
                self._graph_version = response.graph_version
                self._sent_version = version
            elif version != self._sent_version:
                request = master_pb2.ExtendSessionRequest(
                    session_handle=self.handle,
                    graph_def=self.graph.as_graph_def(from_version=self._sent_version),
                    current_graph_version=self._graph_version)
                response = self.master.call("ExtendSession", request)
                self._graph_version = response.new_graph_version
                self._sent_version = version

    def run(self, feed_map: dict, fetch_tensors: list, targets: list, options,
            run_metadata) -> list:
        """Values of the fetches that are not fed (the Session answers fed ones)."""
        self._sync_graph()
        request = master_pb2.RunStepRequest(
            session_handle=self.handle, store_errors_in_response_body=True,
            fetch=[t.name for t in fetch_tensors if t not in feed_map],
            target=[op.name for op in targets])
        if options is not None:
            request.options.CopyFrom(options)
        response, tensors = self.master.run_step(
            request, [(t.name, v) for t, v in feed_map.items()], _call_timeout(options))
        if response.status_code:
            raise wire.error_from_status(response.status_code, response.status_error_message)
        if run_metadata is not None and response.HasField("metadata"):
            run_metadata.CopyFrom(response.metadata)
        by_name = dict(tensors)
        try:
            return [by_name[name] for name in request.fetch]
        except KeyError as e:
            raise errors.InternalError(None, None, f"RunStep did not return {e}") from None

    def partial_run_setup(self, feeds: list, fetches: list, targets: list,
                          timeout_ms: int = 0) -> str:
        """PartialRunSetup of the tensors `feeds` and `fetches` and the operations
        `targets`; returns the master's handle."""
        self._sync_graph()
        request = master_pb2.PartialRunSetupRequest(
            session_handle=self.handle, feed=[t.name for t in feeds],
            fetch=[t.name for t in fetches], target=[op.name for op in targets])
        response = self.master.call("PartialRunSetup", request,
                                    timeout=timeout_ms / 1000.0 if timeout_ms > 0 else None)
        handle = response.partial_run_handle
        self._partial_left[handle] = (set(request.feed), set(request.fetch))
        return handle

    def partial_run(self, handle: str, feed_map: dict, fetches: list,
                    timeout_ms: int = 0) -> list:
        """One call of partial run `handle`: RunStep feeding `feed_map` ({Tensor: array})
        and fetching `fetches` (tensors not fed); returns their values."""
        self._sync_graph()
        request = master_pb2.RunStepRequest(
            session_handle=self.handle, store_errors_in_response_body=True,
            fetch=[t.name for t in fetches], partial_run_handle=handle)
        if timeout_ms > 0:
            request.options.timeout_in_ms = timeout_ms
        response, tensors = self.master.run_step(
            request, [(t.name, v) for t, v in feed_map.items()], _call_timeout(request.options))
        if response.status_code:
            raise wire.error_from_status(response.status_code, response.status_error_message)
        left = self._partial_left.get(handle)
        if left is not None:
            left[0].difference_update(t.name for t in feed_map)
            left[1].difference_update(request.fetch)
            if not left[0] and not left[1]:  # done: the master has ended it
                self._partial_left.pop(handle, None)
        by_name = dict(tensors)
        try:
            return [by_name[name] for name in request.fetch]
        except KeyError as e:
            raise errors.InternalError(None, None, f"RunStep did not return {e}") from None

    def release_partial_run(self, handle: str) -> None:
        """The handle object of a partial run was collected: a run not done is released
        on the master (in the background; errors ignored)."""
        if self._partial_left.pop(handle, None) is None or self.handle is None or \
                not self._can_release:
            return
        request = master_pb2.RunStepRequest(session_handle=self.handle,
                                            partial_run_handle=handle)

        def send():
            try:
                self.master.call("ReleasePartialRun", request, timeout=10.0)
            except errors.OpError:
                # A TensorFlow master (UNIMPLEMENTED), or one that is gone (and its runs
                # with it): no more releases.
                self._can_release = False

        try:
            _release_pool.submit(send)
        except RuntimeError:
            pass  # the interpreter is shutting down

    def list_devices(self) -> list:
        request = master_pb2.ListDevicesRequest(session_handle=self.handle or "")
        response = self.master.call("ListDevices", request)
        return [_Attributes(a) for a in list(response.local_device) +
                list(response.remote_device)]

    def close(self) -> None:
        self._partial_left.clear()  # CloseSession ends them
        if self.handle is None:
            return
        handle, self.handle = self.handle, None
        try:
            self.master.call("CloseSession",
                             master_pb2.CloseSessionRequest(session_handle=handle),
                             timeout=10.0)
        except errors.OpError:
            pass  # the master is gone or restarted: nothing is left to free
        finally:
            self.master.close()

    @staticmethod
    def reset(target: str, containers=None, config=None) -> None:
        request = master_pb2.ResetRequest(container=list(containers or ()))
        if config is not None:
            request.device_filters.extend(config.device_filters)
        MasterClient(target).call("Reset", request)


class _RunStepDecoder:
    """Reads a RunStepResponse with its tensors apart (`wire.decode_with_named_tensors`)."""

    @staticmethod
    def FromString(data: bytes):  # noqa: N802 - protobuf's name
        return wire.decode_with_named_tensors(data, 1, master_pb2.RunStepResponse)


def _call_timeout(options) -> float | None:
    if options is not None and options.timeout_in_ms > 0:
        return options.timeout_in_ms / 1000.0 + 5.0  # the master reports the deadline
    return 7 * 24 * 3600.0


class _Attributes(device_lib.DeviceAttributes):
    """`list_devices()` entries of a remote session."""

    def __init__(self, attrs):  # noqa: D107 - fills the slots from a DeviceAttributes proto
        self.name = attrs.name
        self.device_type = attrs.device_type
        self.memory_limit_bytes = attrs.memory_limit
        self.incarnation = attrs.incarnation


session_lib.register_remote_backend("grpc", GrpcSessionBackend)
