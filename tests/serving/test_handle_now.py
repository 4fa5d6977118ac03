"""ModelServer.handle_now (the common :predict answered without a task) gives exactly
`handle`'s answers, and declines every request it does not take."""

from __future__ import annotations

import asyncio
import json

import pytest

from tensorflux.serving.manager import ModelManager
from tensorflux.serving.server import ModelServer
from tests.serving.conftest import write_version

X = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
PREDICT = "/v1/models/m:predict"

BODIES = [
    {"instances": X},                                             # the fast decode
    {"instances": [[1, 2, 3]]},                                   # integers
    {"inputs": X},                                                # columnar
    {"signature_name": "serving_default", "instances": X},       # json's decode
    {"signature_name": "two", "instances": [{"a": [1.0], "b": [2.0]}]},  # several in/out
    {"instances": [[1.0, 2.0]]},                                  # 400: shape
    {"instances": [[1, 2, 3], [4, 5]]},                           # 400: ragged
    {"instances": [["a", "b", "c"]]},                             # 400: dtype
    {"signature_name": "nope", "instances": X},                   # 400: signature
    {"inputs": {"z": X}},                                         # 400: alias
    b"{not json",                                                 # 400: malformed
]


def _body(doc) -> bytes:
    return doc if isinstance(doc, bytes) else json.dumps(doc).encode()


@pytest.fixture(scope="module")
def manager(tmp_path_factory, export_root):
    base = str(tmp_path_factory.mktemp("now"))
    write_version(base, 1, 1.0, export_root)
    manager = ModelManager("m", base, poll_wait_seconds=0)
    manager.start()
    yield manager
    manager.stop()


async def _now(server: ModelServer, method: str, path: str, body: bytes):
    answer = server.handle_now(method, path, body)
    if answer is None or type(answer) is tuple:
        return answer
    return await answer


@pytest.mark.parametrize("batching", [False, True])
def test_answers_equal_handles(manager, batching):
    server = ModelServer(manager, enable_batching=batching, max_batch_size=8,
                         batch_timeout_micros=0)

    async def main():
        for doc in BODIES:
            body = _body(doc)
            for _ in range(3):  # the first run of a kind is measured on a worker
                await server.handle("POST", PREDICT, body)
            want = await server.handle("POST", PREDICT, body)
            got = await _now(server, "POST", PREDICT, body)
            assert got == want, doc
    try:
        asyncio.run(asyncio.wait_for(main(), 60))
    finally:
        server.workers.shutdown(wait=True)


@pytest.mark.parametrize("method, path, body, batching", [
    ("GET", "/v1/models/m", b"", False),
    ("POST", "/v1/models/m/versions/1:predict", _body({"instances": X}), False),
    ("POST", "/v1/models/m:classify", _body({"examples": [{"x": [1.0]}]}), False),
    ("POST", PREDICT, _body({"instances": [[0.5, 1.0, 2.0]] * 3000}), False),  # > 16 KiB
    ("POST", PREDICT, _body({"instances": [[1.0, 2.0, 3.0]] * 8}), True),  # runs alone
])
def test_other_requests_are_left_to_handle(manager, method, path, body, batching):
    server = ModelServer(manager, enable_batching=batching, max_batch_size=8)

    async def main():
        for _ in range(3):
            await server.handle(method, path, body)
        return server.handle_now(method, path, body)
    try:
        assert asyncio.run(asyncio.wait_for(main(), 60)) is None
    finally:
        server.workers.shutdown(wait=True)


def test_a_run_not_measured_cheap_is_left_to_handle(manager):
    server = ModelServer(manager, inline_run_micros=0)  # every run on a worker
    try:
        assert server.handle_now("POST", PREDICT, _body({"instances": X})) is None
    finally:
        server.workers.shutdown(wait=True)
