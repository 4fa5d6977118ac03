"""`tensorflux-serve`: TensorFlow Serving's REST API over a tensorflux SavedModel.

    tensorflux-serve --model_name digits --model_base_path /models/digits --rest_api_port 8501

Routes (TF Serving's, https://www.tensorflow.org/tfx/serving/api_rest):

    GET  /v1/models/NAME[/versions/V|/labels/L]             {"model_version_status": [...]}
    GET  /v1/models/NAME[/versions/V|/labels/L]/metadata    {"model_spec": ..., "metadata":
                                                              {"signature_def": ...}}
    POST /v1/models/NAME[/versions/V|/labels/L]:predict     instances/inputs (codec.py)
    POST /v1/models/NAME[/versions/V|/labels/L]:classify    examples -> {"result": ...}
    POST /v1/models/NAME[/versions/V|/labels/L]:regress     examples -> {"result": ...}
    GET  /healthz  (live)   GET /readyz  (200 once a version is AVAILABLE, else 503)

With `--grpc_port`, TF Serving's gRPC `PredictionService/Predict` too (grpc_service.py).

Errors are `{"error": "..."}` with the HTTP code of the TensorFlow error code (400 invalid
argument, 404 not found, ...). Bodies above `--max_request_bytes` get 413 before they are
read whole (Content-Length checked first; a chunked body is cut off once it passes the
limit). A client has `--rest_api_timeout_in_ms` to send a request's headers and body (408
after that for a body; a connection that never completes its headers, or stays idle that
long between requests, is closed), so a client that sends half a request and stalls holds
nothing for long. Connections start on a fast path (fastpath.py: a whole small request of
the plain form is read and answered without aiohttp's request machinery, ~40-50 us less CPU
a request) and move to aiohttp's handler at their first request of any other form
(`--no_fast_path`: aiohttp reads every request); on the fast path the common `:predict` is
answered without a task or coroutines when it needs no wait (`ModelServer.handle_now`:
unbatched with a model run kept on the loop; batched, decoded and queued at once, its answer
written when its batch's future is set). The event loop parses HTTP and decodes
and encodes small JSON bodies (tens of microseconds, less than a thread hop; the common
predict body through a small C reader,
codec.predict_inputs_fast); model runs measured cheaper than `--inline_run_micros` of CPU
run there too (a small model's batch-of-one run is mostly Python: on a worker it would
only trade the GIL with the loop), other model runs and large bodies go to `--num_threads`
worker threads (workers.py). SIGTERM or SIGINT: stop accepting, let in-flight requests
finish (up to `--shutdown_grace_seconds`), unload the model, exit 0. Binds 127.0.0.1 unless
`--rest_api_host` says otherwise. `--rest_api_processes N` (not a TF Serving flag) serves the
REST port from N processes (SO_REUSEPORT), each loading the model and following new versions
itself: one Python process runs one request's Python at a time, so a small model's latency
under concurrent clients is otherwise bounded by one core.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import functools
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import weakref

import numpy as np
from aiohttp import http_exceptions, web
from aiohttp.web_protocol import RequestPayloadError
from google.protobuf import json_format

from tensorflux.framework import errors
from tensorflux.serving import codec
from tensorflux.serving.batching import BatchScheduler
from tensorflux.serving.fastpath import RestSite
from tensorflux.serving.grpc_service import start_grpc_server
from tensorflux.serving.manager import ModelManager
from tensorflux.serving.workers import ModelRuns, WorkerThreads

__all__ = ["BackgroundServer", "ModelServer", "build_app", "main"]

PROG = "tensorflux-serve"
_log = logging.getLogger("tensorflux.serving")

# TF Serving's mapping of error codes to HTTP statuses.
_HTTP_STATUS = {
    errors.INVALID_ARGUMENT: 400, errors.FAILED_PRECONDITION: 400, errors.OUT_OF_RANGE: 400,
    errors.NOT_FOUND: 404, errors.ALREADY_EXISTS: 409, errors.ABORTED: 409,
    errors.PERMISSION_DENIED: 403, errors.UNAUTHENTICATED: 401,
    errors.RESOURCE_EXHAUSTED: 429, errors.UNIMPLEMENTED: 501, errors.UNAVAILABLE: 503,
    errors.DEADLINE_EXCEEDED: 504, errors.CANCELLED: 499,
}

# Request bodies up to this size are decoded, and answers with up to this many values are
# encoded, on the event loop (tens of microseconds); larger ones on the thread pool.
_INLINE_DECODE_BYTES = 16 << 10
_INLINE_ENCODE_VALUES = 4096

_PATH = re.compile(r"^/v1/models/(?P<name>[^/:]+)"
                   r"(?:/versions/(?P<version>[^/:]+)|/labels/(?P<label>[^/:]+))?"
                   r"(?:(?P<metadata>/metadata)|:(?P<verb>[A-Za-z]+))?$")


def _error_body(message: str) -> bytes:
    """TF Serving's error answer's JSON."""
    return codec.to_json({"error": message})


def _error(status: int, message: str) -> web.Response:
    return web.Response(status=status, body=_error_body(message),
                        content_type="application/json")


def _error_answer(e: Exception, path: str) -> tuple[int, bytes, bool]:
    """TF Serving's answer to a request that failed with `e`: the HTTP status of a
    tf.errors code, 500 for anything else (logged: the server lives on)."""
    if isinstance(e, errors.OpError):
        return _HTTP_STATUS.get(e.error_code, 500), _error_body(e.message), False
    _log.exception("Internal error serving %s", path)
    return 500, _error_body(f"{type(e).__name__}: {e}"), False


def _chain(answer: asyncio.Future, task: asyncio.Future) -> None:
    """`answer` takes `task`'s outcome."""
    if answer.done():
        return
    if task.cancelled():
        answer.cancel()
    elif task.exception() is not None:
        answer.set_exception(task.exception())
    else:
        answer.set_result(task.result())


def _rows(inputs: dict) -> int:
    """The size of the first input along dimension 0 (0 for a scalar): what ModelRuns
    keys a run's measured cost by."""
    first = next(iter(inputs.values()), None)
    return first.shape[0] if getattr(first, "ndim", 0) else 0


def _output_values(outputs: dict) -> int:
    return sum(v.size if type(v) is np.ndarray else np.size(v) for v in outputs.values())


class _BodyNotRead(Exception):
    """A request body refused before it was read whole: answered, then the connection
    closes."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def _json(doc) -> web.Response:
    return web.Response(body=codec.to_json(doc), content_type="application/json")


class ModelServer:
    """The HTTP side of one model: routes requests to its ModelManager.

    Args:
      manager: the ModelManager of the served model.
      enable_batching, max_batch_size, batch_timeout_micros: server-side batching, as
        TF Serving does it (a batch waits until full or timed out).
      batch_close_when_idle: also close a batch as soon as no other request is on its way
        (lower latency under light load; batching.py).
      batch_when_model_idle: also close a batch at once when no batch is running, and the
        requests that gathered while one ran as soon as it finishes (batching.py).
      max_request_bytes: the largest request body accepted.
      num_threads: the worker threads running model runs and large JSON (workers.py).
      inline_run_micros: model runs measured below this thread CPU time (microseconds)
        run on the event loop instead (workers.ModelRuns); 0: never.
      request_timeout_seconds: the time a client has to send a request's headers and body,
        and the longest a connection may stay idle between requests.
    """

    def __init__(self, manager: ModelManager, *, enable_batching: bool = False,
                 max_batch_size: int = 32, batch_timeout_micros: int = 1000,
                 batch_close_when_idle: bool = False, batch_when_model_idle: bool = False,
                 max_request_bytes: int = 64 << 20,
                 num_threads: int = 8, request_timeout_seconds: float = 30.0,
                 inline_run_micros: float = 5000.0):
        self.manager = manager
        self.max_request_bytes = max_request_bytes
        self.request_timeout_seconds = float(request_timeout_seconds)
        self.workers = WorkerThreads(num_threads, name="serve")
        self.model_runs = ModelRuns(self.workers, inline_run_micros)
        self.batcher = (BatchScheduler(max_batch_size, batch_timeout_micros, self._in_pool,
                                       when_model_idle=batch_when_model_idle,
                                       run_model=self._run_model)
                        if enable_batching else None)
        if self.batcher is not None and batch_close_when_idle:
            self.batcher.incoming = 0  # counted from now on: batches close when idle
        self._incoming: set = set()  # handler tasks counted in batcher.incoming
        self._fast_inputs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        # The common request's exact path (handle_now); other spellings go to `handle`.
        self._predict_path = (f"/v1/models/{manager.name}:predict"
                              if re.fullmatch(r"[A-Za-z0-9_.-]+", manager.name) else None)

    async def _in_pool(self, fn, *args):
        return await self.workers.run(fn, *args)

    def runner_options(self) -> dict:
        """Keyword arguments for the web.AppRunner serving `app()`: idle connections and
        connections that never complete their headers close after the request timeout; the
        unread rest of a refused body (413, 408) is drained for at most that long too
        (aiohttp's lingering close, 10 s by default), so the client still reads the answer
        and nothing waits longer."""
        return {"keepalive_timeout": self.request_timeout_seconds,
                "lingering_time": min(self.request_timeout_seconds, 10.0),
                "access_log": None, "handle_signals": False}

    def app(self) -> web.Application:
        app = web.Application(client_max_size=self.max_request_bytes)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        if re.fullmatch(r"[A-Za-z0-9_.-]+", self.manager.name):
            # The common request by its exact path: aiohttp finds a plain route in one
            # dict lookup, where the pattern below costs ~10-25 us a request to match.
            app.router.add_post(f"/v1/models/{self.manager.name}:predict", self._models)
        app.router.add_route("*", "/v1/models/{tail:.*}", self._models)
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        return app

    async def _healthz(self, request):
        return _json({"status": "ok"})

    async def _readyz(self, request):
        if self.manager.ready:
            return _json({"status": "ready"})
        return _error(503, f"Model {self.manager.name} has no available version yet")

    async def _not_found(self, request):
        return _error(404, f"Malformed request: {request.method} {request.path}")

    async def _models(self, request: web.Request) -> web.Response:
        status, body, close = await self.handle(request.method, request.path,
                                                lambda: self._read_body(request))
        response = web.Response(status=status, body=body, content_type="application/json")
        if close:
            response.force_close()
        return response

    async def handle(self, method: str, path: str, body) -> tuple[int, bytes, bool]:
        """(HTTP status, JSON answer, close the connection after it) of a request to a
        /v1/models/ path, whichever HTTP side read it: `body` is the body's bytes
        (fastpath.py) or an async function reading it (the aiohttp handler)."""
        if self.batcher is not None and self.batcher.incoming is not None and \
                method == "POST":
            self._incoming.add(asyncio.current_task())
            self.batcher.incoming += 1
        try:
            return 200, await self._dispatch(method, path, body), False
        except _BodyNotRead as e:
            return e.status, _error_body(e.message), True
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as e:  # noqa: BLE001 - an internal error answers 500, server lives
            return _error_answer(e, path)
        finally:
            self._arrived()

    def handle_now(self, method: str, path: str, body: bytes):
        """`handle`'s answer to the common request, computed without a task or a wait:
        a small `:predict` body POSTed to the model's latest version, no batching, and a
        model run that `ModelRuns` keeps on the event loop. Returns the (status, JSON,
        close) tuple `handle` would give; an awaitable of it when the outputs are large
        enough to be encoded on a worker; None for every other request (before anything
        was done: it goes to `handle`). The steps, checks and errors are `handle`'s; only
        its coroutines, task and route lookup are left out."""
        if method != "POST" or path != self._predict_path or len(body) > _INLINE_DECODE_BYTES:
            return None
        if self.batcher is not None:
            return self._batched_now(path, body)
        try:
            with self.manager.acquire() as servable:
                name, inputs, rows = self._decode_predict(servable, body)
                key = self.model_runs.inline_key(servable, name, _rows(inputs))
                if key is None:
                    return None  # a run for the workers: `handle` decodes again
                outputs = self.model_runs.run_inline(servable, key, servable.run, name,
                                                     inputs)
            if _output_values(outputs) > _INLINE_ENCODE_VALUES:
                return self._answer_later(self._encode(codec.predict_response, outputs,
                                                       rows), path)
            return 200, codec.to_json(codec.predict_response(outputs, rows)), False
        except Exception as e:  # noqa: BLE001 - an internal error answers 500, server lives
            if isinstance(e, ConnectionResetError):
                raise  # as `handle` lets it through
            return _error_answer(e, path)

    def _batched_now(self, path: str, body: bytes):
        """handle_now with batching: the request decoded and submitted here; a future of
        the answer, set when its batch has run (the servable stays acquired till then)."""
        acquired = self.manager.acquire()
        try:
            servable = acquired.__enter__()
        except Exception as e:  # noqa: BLE001 - no version loaded: the error answer
            return _error_answer(e, path)
        try:
            name, inputs, rows = self._decode_predict(servable, body)
            outputs = self.batcher.submit_now(servable, name, inputs)
        except BaseException as e:
            acquired.__exit__(None, None, None)
            if not isinstance(e, Exception) or isinstance(e, ConnectionResetError):
                raise
            return _error_answer(e, path)
        if outputs is None:  # a request that runs alone: `handle` runs it
            acquired.__exit__(None, None, None)
            return None
        answer = asyncio.get_running_loop().create_future()
        outputs.add_done_callback(functools.partial(self._batched_answer, acquired, rows,
                                                    path, answer))
        return answer

    def _batched_answer(self, acquired, rows: bool, path: str, answer: asyncio.Future,
                        outputs: asyncio.Future) -> None:
        acquired.__exit__(None, None, None)
        if answer.done():
            return
        try:
            values = outputs.result()
            if _output_values(values) > _INLINE_ENCODE_VALUES:
                task = asyncio.get_running_loop().create_task(self._answer_later(
                    self._encode(codec.predict_response, values, rows), path))
                task.add_done_callback(functools.partial(_chain, answer))
                return
            result = 200, codec.to_json(codec.predict_response(values, rows)), False
        except Exception as e:  # noqa: BLE001 - the run's error answers, the server lives
            result = _error_answer(e, path)
        answer.set_result(result)

    @staticmethod
    async def _answer_later(encoded, path: str) -> tuple[int, bytes, bool]:
        try:
            return 200, await encoded, False
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as e:  # noqa: BLE001 - an internal error answers 500, server lives
            return _error_answer(e, path)

    async def _dispatch(self, method: str, path: str, body) -> bytes:
        m = _PATH.match(path)
        if m is None:
            raise errors.NotFoundError(None, None, f"Malformed request: {method} {path}")
        name, version, label = m["name"], m["version"], m["label"]
        if name != self.manager.name:
            raise errors.NotFoundError(None, None, f"Servable not found for request: "
                                       f"Latest({name})")
        if version is not None:
            if not version.isdigit():
                raise errors.InvalidArgumentError(
                    None, None, f"Failed to convert version: {version} to numeric.")
            version = int(version)
        verb = m["verb"]
        if method == "GET" and verb is None:
            if m["metadata"]:
                return codec.to_json(self._metadata(version, label))
            return codec.to_json(
                {"model_version_status": self.manager.status(version, label)})
        if method != "POST" or verb not in ("predict", "classify", "regress"):
            raise errors.NotFoundError(None, None, f"Malformed request: {method} {path}")
        if not isinstance(body, bytes):
            body = await body()
        with self.manager.acquire(version, label) as servable:
            return await getattr(self, "_" + verb)(servable, body)

    async def _read_body(self, request: web.Request) -> bytes:
        """The whole body, within the size limit and the request timeout.

        Raises:
          _BodyNotRead: 413 over the limit (a Content-Length above it, before reading),
            408 not sent in time, 400 a body that cannot be decoded (bad chunked framing,
            a corrupt Content-Encoding).
        """
        too_large = _BodyNotRead(413, f"Request body larger than the limit of "
                                 f"{self.max_request_bytes} bytes")
        if (request.content_length or 0) > self.max_request_bytes:
            raise too_large
        try:
            if request.content.is_eof():  # all of it is here (a small body): no timer needed
                return await request.read()
            async with asyncio.timeout(self.request_timeout_seconds):
                return await request.read()
        except web.HTTPRequestEntityTooLarge:
            raise too_large from None
        except TimeoutError:
            raise _BodyNotRead(408, f"Request body not received within "
                               f"{self.request_timeout_seconds:g} s") from None
        except (RequestPayloadError, http_exceptions.HttpProcessingError) as e:
            raise _BodyNotRead(400, "Malformed request body: " + " ".join(str(e).split())) \
                from None

    def _metadata(self, version, label) -> dict:
        with self.manager.acquire(version, label) as servable:
            sigs = {k: json_format.MessageToDict(
                        v, preserving_proto_field_name=True,
                        always_print_fields_with_no_presence=True)
                    for k, v in servable.signatures.items()}
            return {"model_spec": {"name": self.manager.name, "signature_name": "",
                                   "version": str(servable.version)},
                    "metadata": {"signature_def": {"signature_def": sigs}}}

    async def _run(self, servable, signature_name, inputs) -> dict:
        if self.batcher is not None:
            return await self.batcher.submit(servable, signature_name, inputs)
        return await self._run_model(servable, signature_name, inputs)

    async def _run_model(self, servable, signature_name, inputs) -> dict:
        """One model run, on the loop or a worker (workers.ModelRuns decides)."""
        return await self.model_runs.run(servable, signature_name, _rows(inputs),
                                         servable.run, signature_name, inputs)

    async def _decode(self, fn, body: bytes):
        """fn(body) on the event loop for small bodies (cheaper than a thread hop), on the
        pool for large ones."""
        try:
            if len(body) <= _INLINE_DECODE_BYTES:
                return fn(body)
            return await self._in_pool(fn, body)
        finally:
            self._arrived()

    def _arrived(self) -> None:
        """The current request is no longer on its way to the batcher (once per request)."""
        task = asyncio.current_task()
        if task in self._incoming:
            self._incoming.discard(task)
            self.batcher.incoming -= 1

    def _fast_input(self, servable):
        """codec.fast_input of the servable's default signature, asked once."""
        try:
            return self._fast_inputs[servable]
        except KeyError:
            sig = servable.signatures.get("serving_default")
            fast = self._fast_inputs[servable] = None if sig is None else codec.fast_input(sig)
            return fast

    def _decode_predict(self, servable, body: bytes) -> tuple[str, dict, bool]:
        """(signature name, inputs, row format) of a predict body."""
        fast = codec.predict_inputs_fast(body, self._fast_input(servable))
        if fast is not None:  # the common body, read without json (codec.py)
            return ("serving_default", *fast)
        doc = codec.parse_json(body)
        name = codec.signature_name(doc)
        inputs, rows = codec.predict_inputs(doc, servable.signature(name), body)
        return name, inputs, rows

    async def _predict(self, servable, body: bytes) -> bytes:
        name, inputs, rows = await self._decode(
            lambda body: self._decode_predict(servable, body), body)
        outputs = await self._run(servable, name, inputs)
        return await self._encode(codec.predict_response, outputs, rows)

    async def _encode(self, fn, outputs, *args) -> bytes:
        """JSON bytes of fn(outputs, *args): on the loop for small outputs, else the pool."""
        def encode():
            return codec.to_json(fn(outputs, *args))
        if _output_values(outputs) <= _INLINE_ENCODE_VALUES:
            return encode()
        return await self._in_pool(encode)

    async def _examples(self, servable, body: bytes, input_key):
        def decode(body):
            doc = codec.parse_json(body)
            name = codec.signature_name(doc)
            key = input_key(servable.signature(name))
            return name, {key: codec.examples_tensor(doc, body)}
        name, inputs = await self._decode(decode, body)
        n = len(next(iter(inputs.values())))
        return await self._run(servable, name, inputs), n

    async def _classify(self, servable, body: bytes) -> bytes:
        outputs, n = await self._examples(servable, body, codec.classify_input)
        return await self._encode(codec.classify_response, outputs, n)

    async def _regress(self, servable, body: bytes) -> bytes:
        outputs, n = await self._examples(servable, body, codec.regress_input)
        return await self._encode(codec.regress_response, outputs, n)


def build_app(manager: ModelManager, **kwargs) -> tuple[ModelServer, web.Application]:
    server = ModelServer(manager, **kwargs)
    return server, server.app()


class BackgroundServer:
    """A ModelServer on its own event loop in a daemon thread (tests, benchmarks, notebooks).

        with BackgroundServer(manager, port=0) as srv:
            urllib.request.urlopen(f"{srv.url}/v1/models/{manager.name}")

    `stop()` (or leaving the `with`) shuts the HTTP side down gracefully; the manager is
    the caller's to stop.
    """

    def __init__(self, manager: ModelManager, host: str = "127.0.0.1", port: int = 0,
                 fast_path: bool = True, **kwargs):
        self.manager = manager
        self.server = ModelServer(manager, **kwargs)
        self._host, self._port, self._fast_path = host, port, fast_path
        self._started = concurrent.futures.Future()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()),
                                        name="serve-loop", daemon=True)
        self._thread.start()
        self.port = self._started.result(timeout=30)
        self.url = f"http://{host}:{self.port}"

    async def _main(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        runner = web.AppRunner(self.server.app(), shutdown_timeout=10.0,
                               **self.server.runner_options())
        try:
            site = await _start_site(self.server, runner, self._host, self._port,
                                     self._fast_path)
        except BaseException as e:
            self._started.set_exception(e)
            raise
        self._started.set_result(_port_of(site, runner))
        await self._stop.wait()
        await _stop_site(site, runner, 10.0)

    def stop(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout=30)
        self.server.workers.shutdown(wait=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


async def _start_site(server: ModelServer, runner: web.AppRunner, host: str, port: int,
                      fast_path: bool, reuse_port: bool = False,
                      sock: socket.socket | None = None):
    """Sets `runner` up and listens on host:port (or on the bound `sock`): through
    fastpath.RestSite, or with `fast_path` False aiohttp's own TCPSite (SockSite)."""
    await runner.setup()
    if fast_path:
        site = RestSite(server, runner, host, port, reuse_port=reuse_port, sock=sock)
    elif sock is not None:
        site = web.SockSite(runner, sock)
    else:
        site = web.TCPSite(runner, host, port, reuse_port=reuse_port or None)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    return site


def _port_of(site, runner: web.AppRunner) -> int:
    return site.port if isinstance(site, RestSite) else runner.addresses[0][1]


async def _stop_site(site, runner: web.AppRunner, grace_seconds: float) -> None:
    """Graceful shutdown: stop accepting, let in-flight requests finish, close."""
    if isinstance(site, RestSite):
        await site.stop(grace_seconds)
    else:
        await runner.cleanup()


def _labels(text: str) -> dict:
    out = {}
    for part in filter(None, (text or "").split(",")):
        label, _, version = part.partition("=")
        if not version.isdigit():
            raise argparse.ArgumentTypeError(f"bad --version_labels entry {part!r} "
                                             "(want label=version)")
        out[label] = int(version)
    return out


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description="Serve a SavedModel over TensorFlow "
                                "Serving's REST API.")
    p.add_argument("--model_name", required=True)
    p.add_argument("--model_base_path", required=True,
                   help="directory of numbered version directories (SavedModels)")
    p.add_argument("--rest_api_port", type=int, required=True, help="0 picks a free port")
    p.add_argument("--rest_api_host", default="127.0.0.1")
    p.add_argument("--grpc_port", type=int, default=0,
                   help="serve TF Serving's gRPC PredictionService/Predict on this port too "
                   "(same host as REST; 0: no gRPC)")
    p.add_argument("--enable_batching", action="store_true")
    p.add_argument("--max_batch_size", type=int, default=32)
    p.add_argument("--batch_timeout_micros", type=int, default=1000)
    p.add_argument("--batch_close_when_idle", action="store_true",
                   help="run a batch at once when no other request is on its way, instead "
                   "of waiting for --batch_timeout_micros")
    p.add_argument("--batch_when_model_idle", action="store_true",
                   help="run a batch at once when no batch is running, and the requests "
                   "that arrived while one ran as soon as it finishes (no fixed wait)")
    p.add_argument("--file_system_poll_wait_seconds", type=float, default=1.0)
    p.add_argument("--max_request_bytes", type=int, default=64 << 20)
    p.add_argument("--num_threads", type=int, default=8)
    p.add_argument("--inline_run_micros", type=float, default=5000.0,
                   help="model runs measured below this CPU time run on the event loop "
                   "instead of a worker thread (0: never)")
    p.add_argument("--rest_api_timeout_in_ms", type=int, default=30000,
                   help="time a client has to send a request's headers and body, and the "
                   "longest a connection may stay idle between requests")
    p.add_argument("--shutdown_grace_seconds", type=float, default=10.0)
    p.add_argument("--rest_api_processes", type=int, default=1,
                   help="serve REST from this many processes sharing the port "
                   "(SO_REUSEPORT, Linux): each loads the model and watches the base path "
                   "itself; gRPC is served by the first only. Not a TF Serving flag: one "
                   "Python process runs one request's Python at a time, so a small model's "
                   "latency under concurrent clients is bounded by one core without it")
    p.add_argument("--rest_api_reuse_port", action="store_true",
                   help="set SO_REUSEPORT on the REST socket (several servers on one port)")
    p.add_argument("--stop_on_stdin_eof", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--no_fast_path", action="store_true",
                   help="read every REST request through aiohttp's request handler (by "
                   "default the common small request is read and answered past it: "
                   "serving/fastpath.py)")
    p.add_argument("--version_labels", type=_labels, default={},
                   help="label=version pairs, comma-separated, for /labels/L requests")
    args = p.parse_args(argv)
    if args.rest_api_processes < 1:
        p.error("--rest_api_processes must be at least 1")
    return args


async def _serve(args) -> int:
    loop = asyncio.get_running_loop()
    sock, children = None, []
    if args.rest_api_processes > 1:
        # The port is bound (not listened on) first, so that the other processes load the
        # model at the same time as this one.
        try:
            sock = _bind_reusable(args.rest_api_host, args.rest_api_port)
        except OSError as e:
            print(f"{PROG}: cannot bind {args.rest_api_host}:{args.rest_api_port}: {e}",
                  file=sys.stderr)
            return 1
        children = _spawn_children(args, sock.getsockname()[1])
    try:
        manager = ModelManager(args.model_name, args.model_base_path,
                               poll_wait_seconds=args.file_system_poll_wait_seconds,
                               version_labels=args.version_labels)
        await loop.run_in_executor(None, manager.start)
    except BaseException:
        await loop.run_in_executor(None, _stop_children, children, 0.0)
        raise
    server, app = build_app(manager, enable_batching=args.enable_batching,
                            max_batch_size=args.max_batch_size,
                            batch_timeout_micros=args.batch_timeout_micros,
                            batch_close_when_idle=args.batch_close_when_idle,
                            batch_when_model_idle=args.batch_when_model_idle,
                            max_request_bytes=args.max_request_bytes,
                            num_threads=args.num_threads,
                            inline_run_micros=args.inline_run_micros,
                            request_timeout_seconds=args.rest_api_timeout_in_ms / 1000)
    runner = web.AppRunner(app, shutdown_timeout=args.shutdown_grace_seconds,
                           **server.runner_options())
    try:
        site = await _start_site(server, runner, args.rest_api_host, args.rest_api_port,
                                 not args.no_fast_path, args.rest_api_reuse_port, sock)
    except OSError as e:
        print(f"{PROG}: cannot bind {args.rest_api_host}:{args.rest_api_port}: {e}",
              file=sys.stderr)
        await loop.run_in_executor(None, _stop_children, children, 0.0)
        manager.stop()
        return 1
    port = _port_of(site, runner)
    stop = asyncio.Event()
    if children and not await _children_started(children):
        await _stop_site(site, runner, 0.0)
        manager.stop()
        return 1
    if args.stop_on_stdin_eof:  # a process of --rest_api_processes: ends with its parent
        _stop_at_eof(loop, sys.stdin.fileno(), stop)
    rpc_server = None
    if args.grpc_port:
        try:
            rpc_server, rpc_port = start_grpc_server(manager, args.rest_api_host,
                                                     args.grpc_port, args.num_threads,
                                                     args.max_request_bytes)
        except (OSError, RuntimeError) as e:
            print(f"{PROG}: cannot serve gRPC on {args.rest_api_host}:{args.grpc_port}: {e}",
                  file=sys.stderr)
            await _stop_site(site, runner, 0.0)
            _stop_children(children, 0.0)
            manager.stop()
            return 1
        print(f"{PROG}: gRPC PredictionService at {args.rest_api_host}:{rpc_port}",
              flush=True)
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"{PROG}: model {args.model_name} at http://{args.rest_api_host}:{port}/v1/models/"
          f"{args.model_name}", flush=True)
    await stop.wait()
    _log.info("Shutting down: finishing in-flight requests")
    for child in children:
        child.terminate()  # each shuts down gracefully, as this process does
    if rpc_server is not None:
        rpc_server.stop(args.shutdown_grace_seconds)
    await _stop_site(site, runner, args.shutdown_grace_seconds)
    await loop.run_in_executor(None, manager.stop)
    server.workers.shutdown(wait=True)
    failed = await loop.run_in_executor(None, _stop_children, children,
                                        args.shutdown_grace_seconds + 30)
    return 1 if failed else 0


def _stop_at_eof(loop, fd: int, stop: asyncio.Event) -> None:
    """Sets `stop` when the pipe `fd` reaches its end (the process at its other end is
    gone)."""
    def readable():
        try:
            data = os.read(fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(fd)
            stop.set()
    os.set_blocking(fd, False)
    loop.add_reader(fd, readable)


def _bind_reusable(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port with SO_REUSEPORT, not listening yet."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                        flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except BaseException:
        sock.close()
        raise
    return sock


def _spawn_children(args, port: int) -> list:
    """`--rest_api_processes` - 1 more servers of the same model on `port` (SO_REUSEPORT:
    the kernel spreads new connections over the processes' listening sockets), each with
    its own ModelManager watching the base path (a new version is picked up by each on its
    own poll) and no gRPC; each ends when this process does (its stdin pipe closes)."""
    argv = [*args.argv, "--rest_api_port", str(port), "--grpc_port", "0",
            "--rest_api_processes", "1", "--rest_api_reuse_port", "--stop_on_stdin_eof"]
    return [subprocess.Popen([sys.executable, "-m", "tensorflux.serving.server", *argv],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            for _ in range(args.rest_api_processes - 1)]


async def _children_started(children) -> bool:
    """Waits until each of `children` is listening (its ready line); False (after stopping
    them) when one is not."""
    loop = asyncio.get_running_loop()
    lines = await asyncio.gather(*[loop.run_in_executor(None, c.stdout.readline)
                                   for c in children])
    for child in children:
        child.stdout.close()
    if all(f"{PROG}: model " in line for line in lines):
        return True
    print(f"{PROG}: a serving process of --rest_api_processes did not start", file=sys.stderr)
    await loop.run_in_executor(None, _stop_children, children, 0.0)
    return False


def _stop_children(children, timeout: float) -> bool:
    """Waits for the processes of --rest_api_processes to end (SIGTERM sent before, or now
    with `timeout` 0), killing what outlives `timeout`; True if one ended badly."""
    failed = False
    for child in children:
        if timeout <= 0:
            child.terminate()
        try:
            code = child.wait(timeout=max(timeout, 10.0))
        except subprocess.TimeoutExpired:
            child.kill()
            code = child.wait()
        if child.stdin is not None:
            child.stdin.close()
        failed = failed or code != 0
    return failed


def main(argv=None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    args.argv = argv
    return asyncio.run(_serve(args))


if __name__ == "__main__":
    sys.exit(main())
