"""gRPC plumbing shared by the master and worker services: servers, channels, calls.

Method paths are TensorFlow's (`/tensorflow.MasterService/RunStep`,
`/tensorflow.WorkerService/RecvTensor`, ...): handlers are registered by path, so the
package of our .proto files does not matter on the wire. Messages have no size cap either
way (TensorFlow sets the same), unless `RpcConfig.max_request_bytes` bounds what a server
accepts.

Every call has a deadline. A call that finds its task unreachable is retried with
exponential backoff for `RpcConfig.unavailable_timeout` seconds (default 60), then fails
with UnavailableError naming the task and address; the calls of a running step fail at
once (the task was reachable when the step began).

Security (`RpcConfig`, from flags or the environment): servers bind to loopback unless
given a host; optional TLS (server key and certificate, and a CA to check client
certificates); an optional shared token that every call carries in its metadata and every
server checks (UNAUTHENTICATED otherwise).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from concurrent import futures

import grpc

from tensorflux.distributed import wire
from tensorflux.framework import errors

MASTER_SERVICE = "tensorflow.MasterService"
WORKER_SERVICE = "tensorflow.WorkerService"
TOKEN_METADATA = "tensorflux-token"
_UNLIMITED = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
# A peer that vanishes without closing its connections (a machine lost, a network split)
# is noticed by keepalive pings within ~1 minute, failing the calls waiting on it; servers
# accept the pings of such clients. Channels retry a lost task at least once a second
# (gRPC's default backoff grows to 120 s, so a restarted task would look unavailable for
# minutes); TensorFlow sets the same.
_CHANNEL_OPTIONS = _UNLIMITED + [("grpc.keepalive_time_ms", 30_000),
                                 ("grpc.keepalive_timeout_ms", 20_000),
                                 ("grpc.max_reconnect_backoff_ms", 1000)]
# No SO_REUSEPORT (TensorFlow's servers disable it too): with it, a second server on a port
# that is in use binds as well and the kernel splits connections between them.
_SERVER_OPTIONS = [("grpc.http2.min_recv_ping_interval_without_data_ms", 10_000),
                   ("grpc.http2.max_ping_strikes", 0), ("grpc.so_reuseport", 0)]


@dataclasses.dataclass(frozen=True)
class RpcConfig:
    """Transport settings of a server and of the channels it (or a client) opens.

    Attributes:
      token: a shared secret every call must carry (None: no check).
      server_cert, server_key: PEM bytes; both set: the server speaks TLS.
      client_ca: PEM bytes; set: the server requires client certificates signed by it.
      root_ca: PEM bytes the client checks server certificates against (TLS channels).
      client_cert, client_key: PEM bytes a client presents (mutual TLS).
      unavailable_timeout: seconds a call waits for an unreachable task before
        UnavailableError.
      max_request_bytes: the largest request a server accepts (0: unlimited).
    """

    token: str | None = None
    server_cert: bytes | None = None
    server_key: bytes | None = None
    client_ca: bytes | None = None
    root_ca: bytes | None = None
    client_cert: bytes | None = None
    client_key: bytes | None = None
    unavailable_timeout: float = 60.0
    max_request_bytes: int = 0

    @classmethod
    def from_env(cls, environ=None) -> RpcConfig:
        """From `TENSORFLUX_RPC_TOKEN`, `TENSORFLUX_TLS_CERT`/`_KEY`/`_CLIENT_CA`/`_ROOT_CA`/
        `_CLIENT_CERT`/`_CLIENT_KEY` (file paths), `TENSORFLUX_RPC_UNAVAILABLE_TIMEOUT`
        (seconds) and `TENSORFLUX_RPC_MAX_REQUEST_BYTES`."""
        env = os.environ if environ is None else environ

        def read(name):
            path = env.get(f"TENSORFLUX_TLS_{name}")
            if not path:
                return None
            with open(path, "rb") as f:
                return f.read()

        return cls(token=env.get("TENSORFLUX_RPC_TOKEN") or None,
                   server_cert=read("CERT"), server_key=read("KEY"),
                   client_ca=read("CLIENT_CA"), root_ca=read("ROOT_CA"),
                   client_cert=read("CLIENT_CERT"), client_key=read("CLIENT_KEY"),
                   unavailable_timeout=float(env.get("TENSORFLUX_RPC_UNAVAILABLE_TIMEOUT",
                                                     60.0)),
                   max_request_bytes=int(env.get("TENSORFLUX_RPC_MAX_REQUEST_BYTES", 0)))

    @property
    def tls(self) -> bool:
        return self.root_ca is not None or self.server_cert is not None


# ---- servers ---------------------------------------------------------------------------

class _Malformed:
    """What a request deserializer returns for bytes that do not parse."""

    def __init__(self, error: str):
        self.error = error


def _deserializer(cls):
    def parse(data: bytes):
        try:
            return cls.FromString(data)
        except Exception as e:  # noqa: BLE001 - any parse failure is the client's
            return _Malformed(f"{type(e).__name__}: {e}")

    return parse


def _wrap(fn, config: RpcConfig, method: str):
    """A handler that checks the token and the request, and turns errors into a status."""

    def handle(request, context):
        if config.token is not None:
            sent = dict(context.invocation_metadata()).get(TOKEN_METADATA)
            if sent != config.token:
                context.abort(grpc.StatusCode.UNAUTHENTICATED,
                              f"{method}: missing or wrong {TOKEN_METADATA} metadata")
        if isinstance(request, _Malformed):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          f"{method}: malformed request ({request.error})")
        try:
            return fn(request, context)
        except errors.OpError as e:
            context.abort(grpc.StatusCode(grpc_code(e.error_code)), e.message)
        except Exception as e:  # noqa: BLE001 - the server keeps serving
            code, message = wire.status_of(e)
            context.abort(grpc.StatusCode(grpc_code(code)), f"{method}: {message}")

    return handle


def grpc_code(code: int):
    """The (code, name) value of grpc.StatusCode for a TensorFlow error code."""
    for c in grpc.StatusCode:
        if c.value[0] == code:
            return c.value
    return grpc.StatusCode.UNKNOWN.value



def service_handler(service: str, methods: dict, config: RpcConfig):
    """A generic handler for `service`: `methods` maps a method name to
    (function(request, context), request class, response serializer)."""
    handlers = {
        name: grpc.unary_unary_rpc_method_handler(
            _wrap(fn, config, f"/{service}/{name}"), request_deserializer=_deserializer(req),
            response_serializer=serialize)
        for name, (fn, req, serialize) in methods.items()}
    return grpc.method_handlers_generic_handler(service, handlers)


def make_server(handlers: list, bind: str, config: RpcConfig, max_workers: int = 256
                ) -> tuple[grpc.Server, int]:
    """A started-later gRPC server bound to `bind` ("host:port", port 0 picks one).

    Returns:
      (server, the bound port).

    Raises:
      UnavailableError: the address cannot be bound.
    """
    options = list(_UNLIMITED) + _SERVER_OPTIONS
    if config.max_request_bytes:
        options[1] = ("grpc.max_receive_message_length", config.max_request_bytes)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers,
                                                    thread_name_prefix="tfx-rpc"),
                         handlers=handlers, options=options)
    try:
        if config.server_cert is not None and config.server_key is not None:
            creds = grpc.ssl_server_credentials(
                [(config.server_key, config.server_cert)], root_certificates=config.client_ca,
                require_client_auth=config.client_ca is not None)
            port = server.add_secure_port(bind, creds)
        else:
            port = server.add_insecure_port(bind)
    except RuntimeError as e:
        raise errors.UnavailableError(None, None, f"Could not bind {bind}: {e}") from None
    if port == 0:
        raise errors.UnavailableError(None, None, f"Could not bind {bind}")
    return server, port


# ---- clients ---------------------------------------------------------------------------

class Channels:
    """One channel per address, shared by every stub of a process (thread-safe)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._channels: dict[tuple, grpc.Channel] = {}

    def get(self, address: str, config: RpcConfig) -> grpc.Channel:
        key = (address, config.root_ca, config.client_cert)
        with self._lock:
            ch = self._channels.get(key)
            if ch is None:
                if config.tls:
                    creds = grpc.ssl_channel_credentials(config.root_ca, config.client_key,
                                                         config.client_cert)
                    ch = grpc.secure_channel(address, creds, options=_CHANNEL_OPTIONS)
                else:
                    ch = grpc.insecure_channel(address, options=_CHANNEL_OPTIONS)
                self._channels[key] = ch
            return ch

    def forget(self, address: str) -> None:
        """Drops the channels to `address` from the cache: new stubs get fresh ones. The
        channels are not closed here: stubs of other servers in this process may be calling
        through them at this moment (closing a channel under a call crashes gRPC's C core);
        each is closed when its last stub lets go of it."""
        with self._lock:
            for key in [k for k in self._channels if k[0] == address]:
                del self._channels[key]


CHANNELS = Channels()


class Stub:
    """Calls of one service on one task.

    Args:
      address: "host:port" (a "grpc://" prefix is dropped).
      service: MASTER_SERVICE or WORKER_SERVICE.
      config: the RpcConfig (token, TLS, timeouts).
      task: the task's name for error messages (default: the address).
    """

    def __init__(self, address: str, service: str, config: RpcConfig, task: str = ""):
        self.address = address.removeprefix("grpc://")
        self.service = service
        self.config = config
        self.task = task or self.address
        self._channel = CHANNELS.get(self.address, config)
        self._metadata = ((TOKEN_METADATA, config.token),) if config.token else None
        self._callables: dict[str, object] = {}

    def _callable(self, method: str, response_deserializer):
        fn = self._callables.get(method)
        if fn is None:
            fn = self._channel.unary_unary(
                f"/{self.service}/{method}",
                request_serializer=lambda m: m if isinstance(m, bytes) else
                m.SerializeToString(),
                response_deserializer=response_deserializer, _registered_method=True)
            self._callables[method] = fn
        return fn

    def call(self, method: str, request, response_cls, timeout: float | None = None,
             retry_unavailable: bool = True):
        """The response of one call; OpError (by gRPC status) on failure.

        A task that cannot be reached is retried with exponential backoff (from 20 ms to
        1 s) until `config.unavailable_timeout` has passed, then UnavailableError."""
        fn = self._callable(method, response_cls.FromString if response_cls else None)
        give_up = time.monotonic() + self.config.unavailable_timeout
        pause = 0.02
        while True:
            try:
                return fn(request, timeout=timeout or self.config.unavailable_timeout,
                          metadata=self._metadata)
            except grpc.RpcError as e:
                err = self.error(e, method)
                if not (retry_unavailable and isinstance(err, errors.UnavailableError)
                        and time.monotonic() + pause < give_up):
                    raise err from None
            time.sleep(pause)
            pause = min(pause * 2, 1.0)

    def future(self, method: str, request, response_deserializer,
               timeout: float | None = None):
        """A grpc Future of one call, failing fast if the task is unreachable (`error`
        maps its exception)."""
        fn = self._callable(method, response_deserializer)
        return fn.future(request, timeout=timeout or self.config.unavailable_timeout,
                         metadata=self._metadata)

    def raw_call(self, path: str, data: bytes, timeout: float) -> bytes:
        """One unary call at `path` (full method path), bytes in and out, no retry.

        Raises:
          OpError: by the call's gRPC status.
        """
        try:
            return self._channel.unary_unary(path)(data, timeout=timeout,
                                                   metadata=self._metadata)
        except grpc.RpcError as e:
            raise self.error(e, path.rpartition("/")[2]) from None

    def stream_future(self, path: str, requests, metadata=()):
        """A grpc Future of a client-streaming call at `path` (full method path): the
        messages are the bytes `requests` yields; no deadline."""
        fn = self._channel.stream_unary(path)
        return fn.future(requests, metadata=(self._metadata or ()) + tuple(metadata))

    def error(self, e: grpc.RpcError, method: str) -> errors.OpError:
        """The OpError of a failed call, naming the task for transport failures."""
        code = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
        details = (e.details() if hasattr(e, "details") else str(e)) or ""
        if code == grpc.StatusCode.UNAVAILABLE:
            return errors.UnavailableError(
                None, None, f"Task {self.task} ({self.address}) is unavailable: {method} "
                f"failed: {details}")
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return errors.DeadlineExceededError(
                None, None, f"{method} on task {self.task} ({self.address}) did not finish "
                f"before its deadline: {details}")
        return wire.error_from_status(code.value[0], details)
