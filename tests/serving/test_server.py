"""tensorflux-serve's REST API through a real HTTP client on loopback, against SavedModels
written by tensorflux's SavedModel builder; response shapes as TF Serving documents them
(https://www.tensorflow.org/tfx/serving/api_rest)."""

from __future__ import annotations

import base64
import socket

import numpy as np
import pytest

from tensorflux.serving.manager import ModelManager
from tensorflux.serving.server import BackgroundServer
from tests.serving import models
from tests.serving.conftest import Client, write_version

X = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


@pytest.fixture(scope="module")
def served(tmp_path_factory, export_root):
    base = str(tmp_path_factory.mktemp("models"))
    write_version(base, 1, 1.0, export_root)
    manager = ModelManager("m", base, poll_wait_seconds=0, version_labels={"stable": 1})
    manager.start()
    try:
        with BackgroundServer(manager, max_request_bytes=4096) as srv:
            yield Client(srv.url), manager
    finally:
        manager.stop()


@pytest.fixture
def client(served):
    return served[0]


def test_model_status(client):
    assert client.call("GET", "/v1/models/m") == (200, {"model_version_status": [
        {"version": "1", "state": "AVAILABLE",
         "status": {"error_code": "OK", "error_message": ""}}]})
    status, body = client.call("GET", "/v1/models/m/versions/1")
    assert status == 200 and body["model_version_status"][0]["state"] == "AVAILABLE"
    status, body = client.call("GET", "/v1/models/m/versions/9")
    assert status == 404 and "error" in body


def test_metadata(client):
    status, body = client.call("GET", "/v1/models/m/metadata")
    assert status == 200
    assert body["model_spec"] == {"name": "m", "signature_name": "", "version": "1"}
    sigs = body["metadata"]["signature_def"]["signature_def"]
    assert set(sigs) == {"serving_default", "two", "echo", "classify", "regress"}
    x = sigs["serving_default"]["inputs"]["x"]
    assert x["dtype"] == "DT_FLOAT" and x["name"] == "x:0"
    assert [d["size"] for d in x["tensor_shape"]["dim"]] == ["-1", "3"]
    assert sigs["serving_default"]["method_name"] == "tensorflow/serving/predict"
    assert sigs["classify"]["method_name"] == "tensorflow/serving/classify"
    assert client.call("GET", "/v1/models/m/versions/1/metadata")[0] == 200


def test_predict_row_format(client):
    status, body = client.predict({"instances": X})
    assert status == 200 and set(body) == {"predictions"}
    np.testing.assert_allclose(body["predictions"], models.expected_y(X, 1.0))
    # Named instances, an explicit signature, a version and a label give the same.
    named = {"signature_name": "serving_default", "instances": [{"x": r} for r in X]}
    for where in ("", "/versions/1", "/labels/stable"):
        status, body2 = client.predict(named, where=where)
        assert (status, body2) == (200, body)


def test_predict_columnar_format(client):
    status, body = client.predict({"inputs": X})
    assert status == 200 and set(body) == {"outputs"}
    np.testing.assert_allclose(body["outputs"], models.expected_y(X, 1.0))
    assert client.predict({"inputs": {"x": X}}) == (200, body)


def test_predict_several_inputs_and_outputs(client):
    rows = {"signature_name": "two", "instances": [{"a": 1.5, "b": 2}, {"a": -1.0, "b": 7}]}
    assert client.predict(rows) == (200, {"predictions": [{"sum": 3.5, "twice": 4},
                                                          {"sum": 6.0, "twice": 14}]})
    cols = {"signature_name": "two", "inputs": {"a": [1.5, -1.0], "b": [2, 7]}}
    assert client.predict(cols) == (200, {"outputs": {"sum": [3.5, 6.0], "twice": [4, 14]}})


def test_predict_b64_bytes(client):
    raw = b"\xff\x00bin"
    b64 = base64.b64encode(raw).decode()
    status, body = client.predict({"signature_name": "echo",
                                   "instances": [{"b64": b64}, "hello"]})
    assert status == 200
    assert body["predictions"] == [{"s_bytes": {"b64": b64}, "text": {"b64": b64}},
                                   {"s_bytes": {"b64": base64.b64encode(b"hello").decode()},
                                    "text": "hello"}]
    status, body = client.predict({"signature_name": "echo", "inputs": {"s": [{"b64": b64}]}})
    assert (status, body["outputs"]["s_bytes"]) == (200, [{"b64": b64}])


def test_classify_and_regress(client):
    req = {"signature_name": "classify", "examples": [{"x": [1.0, 2.0]}, {"x": [3, 1.5]}]}
    status, body = client.call("POST", "/v1/models/m:classify", req)
    assert status == 200
    [[n0, s0], [p0, s1]], [[n1, s2], [p1, s3]] = body["result"]
    assert (n0, p0, n1, p1) == ("neg", "pos", "neg", "pos")
    e = np.exp([1.0, 2.0])
    np.testing.assert_allclose([s0, s1], e / e.sum(), rtol=1e-5)
    req = {"signature_name": "regress", "context": {"x": [0.5, 0.25]}, "examples": [{}, {}]}
    assert client.call("POST", "/v1/models/m:regress", req) == (200, {"result": [0.75, 0.75]})
    req = {"signature_name": "regress", "examples": [{"x": [1.0, 2.0]}, {"x": [3, 1.5]}]}
    assert client.call("POST", "/v1/models/m/versions/1:regress", req) == \
        (200, {"result": [3.0, 4.5]})


@pytest.mark.parametrize("method,path,body,raw,code", [
    ("POST", "/v1/models/m:predict", None, b"{not json", 400),
    ("POST", "/v1/models/m:predict", None, b"[1, 2]", 400),
    ("POST", "/v1/models/m:predict", {"instances": [[1.0, 2.0]]}, None, 400),       # shape
    ("POST", "/v1/models/m:predict", {"instances": [[1, 2, 3], [4, 5]]}, None, 400),  # ragged
    ("POST", "/v1/models/m:predict", {"instances": [["a", "b", "c"]]}, None, 400),  # dtype
    ("POST", "/v1/models/m:predict", {"instances": X, "inputs": X}, None, 400),
    ("POST", "/v1/models/m:predict", {"foo": X}, None, 400),
    ("POST", "/v1/models/m:predict", {"inputs": {"z": X}}, None, 400),
    ("POST", "/v1/models/m:predict", {"signature_name": "nope", "instances": X}, None, 400),
    ("POST", "/v1/models/m:predict", {"signature_name": "two", "instances": [{"a": 1.0}]},
     None, 400),
    ("POST", "/v1/models/m:predict", {"signature_name": "echo",
                                      "instances": [{"b64": "!!"}]}, None, 400),
    ("POST", "/v1/models/m:classify", {"examples": [{"x": [1.0, 2.0]}]}, None, 400),
    ("POST", "/v1/models/m:regress", {"signature_name": "regress", "examples": []}, None,
     400),
    ("POST", "/v1/models/m/versions/7:predict", {"instances": X}, None, 404),
    ("POST", "/v1/models/m/versions/x:predict", {"instances": X}, None, 400),
    ("POST", "/v1/models/m/labels/canary:predict", {"instances": X}, None, 404),
    ("POST", "/v1/models/other:predict", {"instances": X}, None, 404),
    ("POST", "/v1/models/m:explain", {"instances": X}, None, 404),
    ("GET", "/v1/models/other", None, None, 404),
    ("GET", "/v2/whatever", None, None, 404),
])
def test_bad_requests_answer_error_json(client, method, path, body, raw, code):
    status, answer = client.call(method, path, body, raw=raw)
    assert status == code and set(answer) == {"error"} and answer["error"]
    # ... and the server is unaffected.
    assert client.predict({"instances": X})[0] == 200


def test_request_over_the_limit_is_refused_before_it_is_read(served):
    client = served[0]
    status, answer = client.call("POST", "/v1/models/m:predict", raw=b" " * 10_000)
    assert status == 413 and "error" in answer
    # A client announcing a huge body gets its answer having sent only the headers.
    host, port = client.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"POST /v1/models/m:predict HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n{")
        head = s.recv(4096)
    assert head.startswith(b"HTTP/1.1 413") and b'"error"' in head
    # A chunked body (no Content-Length) is cut off once it passes the limit.
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"POST /v1/models/m:predict HTTP/1.1\r\nHost: x\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
        chunk = b"2000\r\n" + b" " * 0x2000 + b"\r\n"
        s.sendall(chunk)  # 8 KiB > the 4 KiB limit; the rest is never sent
        head = s.recv(4096)
    assert head.startswith(b"HTTP/1.1 413") and b'"error"' in head
    assert client.predict({"instances": X})[0] == 200


def test_readiness(served, tmp_path):
    client = served[0]
    assert client.call("GET", "/readyz") == (200, {"status": "ready"})
    assert client.call("GET", "/healthz")[0] == 200
    empty = ModelManager("e", str(tmp_path / "missing"), poll_wait_seconds=0)
    empty.start()
    empty.poll()  # the missing base path is logged once, and polling goes on
    with BackgroundServer(empty) as srv:
        status, body = Client(srv.url).call("GET", "/readyz")
        assert status == 503 and "error" in body
        status, body = Client(srv.url).call("GET", "/v1/models/e")
        assert status == 404 and "error" in body
        assert Client(srv.url).predict({"instances": X}, model="e")[0] == 404
    empty.stop()


def test_simple_save_model_is_served(tmp_path):
    models.export_simple(str(tmp_path / "3"), 0.5)
    manager = ModelManager("s", str(tmp_path), poll_wait_seconds=0)
    manager.start()
    try:
        with BackgroundServer(manager) as srv:
            status, body = Client(srv.url).predict({"instances": X}, model="s")
            assert status == 200
            np.testing.assert_allclose(body["predictions"], models.expected_y(X, 0.5))
            assert Client(srv.url).call("GET", "/v1/models/s")[1][
                "model_version_status"][0]["version"] == "3"
            # Large bodies and answers are decoded and encoded off the event loop.
            big = np.arange(3000 * 3, dtype=np.float32).reshape(3000, 3) / 100
            status, body = Client(srv.url).predict({"inputs": big.tolist()}, model="s")
            assert status == 200
            np.testing.assert_allclose(body["outputs"], models.expected_y(big, 0.5),
                                       rtol=1e-6)
    finally:
        manager.stop()


def test_bind_is_loopback_by_default(served):
    assert served[0].url.startswith("http://127.0.0.1:")
