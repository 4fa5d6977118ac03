"""Fuzzing the model server: TF Serving's REST API and gRPC PredictionService on loopback.

One server (REST and gRPC over one ModelManager, a 64 KiB body limit, a 1 s request timeout,
two worker threads) serves the test model of models.py. The cases:

- REST, seeded hypothesis: JSON documents built from the API's keys with values of every
  kind (good rows, wrong shapes and dtypes, ragged lists, nulls, huge integers, NaN and
  Infinity, `{"b64": ...}` garbage, objects where lists go), non-string signature names,
  unknown signatures, versions, labels, models and verbs, other HTTP methods; the bytes then
  get huge number literals, lone surrogate escapes or deep nesting spliced in, or are
  mutated and truncated. Every answer is 200 (the case happened to be valid) or a 4xx with
  TF Serving's `{"error": "..."}` body; never a 5xx (none is TF Serving's answer for this
  model), never past the per-case deadline.
- HTTP framing: mutated raw requests (request line, headers, Content-Length, chunks).
- Oversized bodies are refused before being read whole (a lying Content-Length, a chunked
  body still streaming, a gzip bomb); a body or headers that stop halfway get 408 or a
  closed connection within the request timeout, and stalled clients outnumbering the worker
  threads do not keep a good request from its answer; many concurrent bad requests.
- gRPC Predict with malformed TensorProtos (dtype/content mismatch, negative dims, huge
  declared shapes with little content, unknown dtypes) and mutated wire bytes: a gRPC status
  of TensorFlow's codes, never UNKNOWN, INTERNAL or a hang.
After each run the server answers a good request correctly, and the process's RSS has grown
by less than a bound.
"""

from __future__ import annotations

import base64
import concurrent.futures
import contextlib
import gc
import gzip
import http.client
import json
import random
import re
import socket
import time
import urllib.parse

import grpc
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tensorflux.framework import tensor_util
from tensorflux.protos import serving_predict_pb2 as pb
from tensorflux.protos import tensor_pb2
from tensorflux.serving.grpc_service import start_grpc_server
from tensorflux.serving.manager import ModelManager
from tensorflux.serving.server import BackgroundServer
from tests.fuzz.fuzz_util import byte_mutations, fuzz_settings, mutate_bytes
from tests.serving import models
from tests.serving.conftest import write_version

pytestmark = pytest.mark.timeout(180)

LIMIT = 64 << 10          # the server's max_request_bytes
TIMEOUT_S = 1.0           # the server's request timeout
DEADLINE_S = 15.0         # per case: a hang, not a slow answer, fails it
RSS_GROWTH = 128 << 20    # bound on the process's RSS growth over one fuzz run
X = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


class Served:
    def __init__(self, rest: BackgroundServer, rpc_port: int):
        self.rest, self.host, self.port = rest, "127.0.0.1", rest.port
        self.channel = grpc.insecure_channel(f"127.0.0.1:{rpc_port}")
        self.predict = self.channel.unary_unary(
            "/tensorflow.serving.PredictionService/Predict",
            request_serializer=pb.PredictRequest.SerializeToString,
            response_deserializer=pb.PredictResponse.FromString)
        self.predict_raw = self.channel.unary_unary(
            "/tensorflow.serving.PredictionService/Predict")

    def http(self, method: str, path: str, body: bytes | None = None,
             headers: dict | None = None) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=DEADLINE_S)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def assert_healthy(self) -> None:
        """A good REST request and a good gRPC request are answered correctly."""
        status, body = self.http("POST", "/v1/models/m:predict",
                                 json.dumps({"instances": X}).encode())
        assert status == 200, body
        np.testing.assert_allclose(json.loads(body)["predictions"], models.expected_y(X, 1.0))
        resp = self.predict(_grpc_request(x=tensor_util.make_tensor_proto(
            np.array(X, np.float32))), timeout=DEADLINE_S)
        np.testing.assert_allclose(tensor_util.MakeNdarray(resp.outputs["y"]),
                                   models.expected_y(X, 1.0))


@pytest.fixture(scope="module")
def served(tmp_path_factory, export_root):
    base = str(tmp_path_factory.mktemp("fuzz_models"))
    write_version(base, 1, 1.0, export_root)
    manager = ModelManager("m", base, poll_wait_seconds=0, version_labels={"stable": 1})
    manager.start()
    rpc_server = None
    try:
        rpc_server, rpc_port = start_grpc_server(manager, "127.0.0.1", 0, 4, LIMIT)
        with BackgroundServer(manager, max_request_bytes=LIMIT, num_threads=2,
                              request_timeout_seconds=TIMEOUT_S) as rest:
            s = Served(rest, rpc_port)
            try:
                s.assert_healthy()
                yield s
            finally:
                s.channel.close()
    finally:
        if rpc_server is not None:
            rpc_server.stop(None)
        manager.stop()


def _rss() -> int:
    gc.collect()
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


@contextlib.contextmanager
def _rss_bounded():
    before = _rss()
    yield
    grown = _rss() - before
    assert grown < RSS_GROWTH, f"RSS grew by {grown >> 20} MiB over the run"


def _check_answer(method: str, status: int, body: bytes) -> None:
    """200 or a 4xx with TF Serving's error body; never a 5xx."""
    assert status < 500, (status, body[:300])
    if method == "HEAD":
        return
    doc = json.loads(body)
    assert isinstance(doc, dict), body[:300]
    if status != 200:
        assert 400 <= status < 500 and set(doc) == {"error"}, (status, body[:300])
        assert isinstance(doc["error"], str) and doc["error"]


# ---- REST documents -------------------------------------------------------------------
_SIGNATURES = ["", "serving_default", "two", "echo", "classify", "regress", "nope"]
_ALIASES = ["x", "a", "b", "s", "b64", "inputs", ""]
_b64 = st.one_of(st.builds(lambda b: base64.b64encode(b).decode(), st.binary(max_size=6)),
                 st.text(max_size=8), st.integers(), st.none())
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70),
    st.sampled_from([0, 1, -1, 2**24, 2**24 + 1, 2**31, -(2**31) - 1, 2**53 + 1, 2**63,
                     2**64, 3.5e38, 1e300, -0.0, float("nan"), float("inf"), float("-inf")]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6),
    st.builds(lambda v: {"b64": v}, _b64))
_values = st.recursive(
    _scalars, lambda kids: st.one_of(
        st.lists(kids, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(_ALIASES), st.text(max_size=4)), kids,
                        max_size=3)),
    max_leaves=12)
_numbers = st.one_of(st.floats(-1e6, 1e6), st.integers(-100, 100), st.integers(-100, 100),
                     st.floats(-1e6, 1e6), _scalars)
_rows = st.one_of(
    st.lists(st.lists(_numbers, min_size=3, max_size=3), min_size=1, max_size=3),  # x rows
    st.lists(st.lists(_numbers, min_size=0, max_size=4), min_size=0, max_size=3),  # ragged
    st.lists(st.fixed_dictionaries({"a": _numbers, "b": _numbers}), min_size=1, max_size=3),
    st.lists(st.one_of(st.text(max_size=4), st.builds(lambda v: {"b64": v}, _b64)),
             min_size=1, max_size=3),                                                # echo
    _values)
_features = st.dictionaries(st.sampled_from(["x", "x", "y", ""]), st.one_of(
    st.lists(_numbers, min_size=2, max_size=2), _values), max_size=2)
_PREDICT_SIGNATURES = [None, None, "", "serving_default", "two", "echo"]


def _docs(verb: str):
    if verb == "predict":
        names = st.one_of(st.sampled_from(_PREDICT_SIGNATURES), st.sampled_from(_SIGNATURES),
                          _values)
        keys = st.sampled_from([("instances",)] * 6 + [("inputs",)] * 3 +
                               [("instances", "inputs"), ()])
    else:
        names = st.one_of(st.just(verb), st.just(verb), st.sampled_from(_SIGNATURES), _values)
        keys = st.sampled_from([("examples",)] * 3 + [("examples", "context"), ("context",)])

    @st.composite
    def build(draw):
        doc = {}
        name = draw(names)
        if name is not None:
            doc["signature_name"] = name
        for key in draw(keys):
            doc[key] = draw({
                "instances": _rows,
                "inputs": st.one_of(_rows, st.dictionaries(st.sampled_from(_ALIASES), _rows,
                                                           max_size=3)),
                "examples": st.one_of(st.lists(_features, min_size=1, max_size=3), _values),
                "context": st.one_of(_features, _values)}[key])
        return doc
    return build()


# Literals and escapes json.dumps never writes, spliced over a number or at a random place.
_SPLICES = [b"1e400", b"-1e999", b"1" * 400, b"9" * 5000, b"NaN", b"-Infinity", b"Infinity",
            b"1e39", b'"\\ud800"', b'"\\udfff\\ud800"', b'"\\u0000"', b"[" * 3000,
            b"[" * 70 + b"1" + b"]" * 70, b"{" * 2000, b"\xff\xfe", b"", b"null", b"true",
            b'{"b64": "%%%"}', b"-", b"0x10", b"1.", b".5", b"01"]


def _segment(text: str) -> str:
    return urllib.parse.quote(text, safe="")


_other_paths = st.one_of(
    st.builds(lambda model, where, verb: f"/v1/models/{model}{where}{verb}",
              st.one_of(st.just("m"), st.sampled_from(["other", "M", "m%2Fx", ""]),
                        st.text(max_size=5).map(_segment)),
              st.one_of(st.just(""), st.sampled_from(["/versions/1", "/labels/stable"]),
                        st.builds("/versions/{}".format, st.one_of(
                            st.integers(-5, 2**70), st.text(max_size=4).map(_segment))),
                        st.builds("/labels/{}".format, st.text(max_size=4).map(_segment))),
              st.sampled_from([":predict", ":classify", ":regress", "", "/metadata",
                               ":explain", ":", "/versions", ":predict/x"])),
    st.sampled_from(["/", "/healthz", "/readyz", "/v1", "/v1/models", "/v1/models/",
                     "/v2/models/m:predict", "//v1/models/m:predict", "/v1/models/m/labels/"]))
_methods = st.sampled_from(["POST"] * 3 + ["GET", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"])


@st.composite
def _requests(draw):
    """(method, path, body, doc): `doc` is the JSON the body holds, None when the body
    was spliced, mutated or truncated."""
    verb = draw(st.sampled_from(["predict"] * 4 + ["classify", "regress"]))
    if draw(st.integers(0, 9)) == 0:
        method, path = draw(_methods), draw(_other_paths)
    else:
        where = draw(st.sampled_from(["", "", "/versions/1", "/labels/stable"]))
        method, path = "POST", f"/v1/models/m{where}:{verb}"
    doc = draw(_docs(verb))
    body = json.dumps(doc).encode()
    how = draw(st.sampled_from(["plain"] * 4 + ["splice"] * 2 + ["mutate", "truncate"]))
    if how == "splice":
        splice = draw(st.sampled_from(_SPLICES))
        numbers = [i for i, c in enumerate(body) if c in b"0123456789"]
        at = draw(st.sampled_from(numbers)) if numbers and draw(st.booleans()) else \
            draw(st.integers(0, len(body)))
        body = body[:at] + splice + body[at + 1:]
    elif how == "mutate":
        body = mutate_bytes(body, draw(byte_mutations()))
    elif how == "truncate":
        body = body[:draw(st.integers(0, max(0, len(body) - 1)))]
    return method, path, body, doc if how == "plain" else None


# ---- what TF Serving answers, where the rules are simple --------------------------------
_F32_MAX = float(np.finfo(np.float32).max)


def _converts(v, kind: str) -> bool | None:
    """Whether TF Serving converts JSON number `v` to float32 ("f") or int32 ("i"); None:
    not a number at all (another check refuses it)."""
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return abs(v) <= 2**24 - 1 if kind == "f" else -(2**31) <= v < 2**31
    if isinstance(v, float):
        return kind == "f" and (not np.isfinite(v) or abs(v) <= _F32_MAX)
    return None


def _mixed(values) -> bool:
    """Integers beyond float32's exact range among floats: NumPy reads the list as floats,
    so tensorflux accepts what TF Serving (which sees each literal) refuses; no claim."""
    return any(isinstance(v, float) for v in values) and any(
        isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**24 - 1 for v in values)


def _expected(method: str, path: str, doc: dict | None):
    """("ok", predictions) or ("bad", None) where TF Serving's answer is known; else None.
    Covers row-format requests of the default signature (x: float32 [?, 3]) and of "two"
    (a: float32, b: int32)."""
    predict = re.fullmatch(r"/v1/models/m(/versions/1|/labels/stable)?:predict", path)
    if doc is None or method != "POST" or not predict or \
            set(doc) - {"signature_name", "instances"}:
        return None
    rows, name = doc.get("instances"), doc.get("signature_name")
    if not isinstance(rows, list) or not rows:
        return None
    if name in (None, "", "serving_default") and all(
            isinstance(r, list) and len(r) == 3 for r in rows):
        ok = [_converts(v, "f") for r in rows for v in r]
        if None in ok or _mixed([v for r in rows for v in r]):
            return None
        if not all(ok):
            return "bad", None
        with np.errstate(invalid="ignore", over="ignore"):
            return "ok", models.expected_y(np.array(rows, np.float64).astype(np.float32), 1.0)
    if name == "two" and all(isinstance(r, dict) and set(r) == {"a", "b"} for r in rows):
        ok = [_converts(r["a"], "f") for r in rows] + [_converts(r["b"], "i") for r in rows]
        if None in ok or _mixed([r["a"] for r in rows]):
            return None
        if not all(ok):
            return "bad", None
        a = np.array([r["a"] for r in rows], np.float64).astype(np.float32)
        b = np.array([r["b"] for r in rows], np.int64).astype(np.int32)
        with np.errstate(invalid="ignore", over="ignore"):
            return "ok", [{"sum": s, "twice": t} for s, t in zip(
                (a + b.astype(np.float32)).tolist(), (b * np.int32(2)).tolist(), strict=True)]
    return None


def _check_expected(expected, status: int, body: bytes) -> None:
    if expected is None:
        return
    kind, want = expected
    if kind == "bad":
        assert status == 400, body[:300]
        return
    assert status == 200, body[:300]
    got = json.loads(body)["predictions"]
    if isinstance(want, np.ndarray):
        np.testing.assert_allclose(np.array(got, np.float64), want, rtol=1e-5)
    else:
        assert [r["twice"] for r in got] == [r["twice"] for r in want]
        np.testing.assert_allclose([r["sum"] for r in got], [r["sum"] for r in want],
                                   rtol=1e-6)


def _fuzz_rest(served, n: int) -> None:
    @fuzz_settings(n)
    @given(_requests())
    def case(request):
        method, path, body, doc = request
        start = time.monotonic()
        status, answer = served.http(method, path, body,
                                     {"Content-Type": "application/json"})
        assert time.monotonic() - start < DEADLINE_S
        _check_answer(method, status, answer)
        _check_expected(_expected(method, path, doc), status, answer)

    with _rss_bounded():
        case()
    served.assert_healthy()


def test_fuzz_rest(served):
    _fuzz_rest(served, 100)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_fuzz_rest_long(served):
    _fuzz_rest(served, 4000)


# Each was a 500 or a silent wrong answer before the fuzzer found it.
@pytest.mark.parametrize("path,body", [
    (":predict", b'{"signature_name": ["x"], "instances": [[1, 2, 3]]}'),
    (":predict", b'{"signature_name": {}, "instances": [[1, 2, 3]]}'),
    (":predict", b'{"signature_name": "echo", "instances": ["\\ud800"]}'),
    (":predict", b'{"instances": [[1e400, 1, 2]]}'),
    (":predict", b'{"instances": [[3.5e38, 1, 2]]}'),
    (":predict", b'{"instances": [[16777217, 1, 2]]}'),
    (":predict", b'{"instances": [[true, false, true]]}'),
    (":predict", b'{"instances": [' + b"1" * 5000 + b"]}"),
    (":predict", b'{"instances": ' + b"[" * 3000 + b"]" * 3000 + b"}"),
    (":predict", b'{"signature_name": "echo", "instances": ' + b"[" * 40 + b'"a"' +
     b"]" * 40 + b"}"),
    (":predict", b'{"signature_name": "echo", "instances": ' + b"[" * 900 + b'"a"' +
     b"]" * 900 + b"}"),
    (":predict", b'{"signature_name": "two", "instances": [{"a": 1.0, "b": 3000000000}]}'),
    (":classify", b'{"signature_name": "classify", "examples": [{"x": [1e30, 99999999999999'
                  b'999999999]}]}'),
    (":classify", b'{"signature_name": "classify", "examples": [{"x": [1e39, 1.0]}]}'),
])
def test_found_by_the_fuzzer_answer_400(served, path, body):
    status, answer = served.http("POST", "/v1/models/m" + path, body)
    assert status == 400 and set(json.loads(answer)) == {"error"}, answer
    served.assert_healthy()


def test_values_within_range_still_convert(served):
    body = {"signature_name": "two", "instances": [{"a": 16777215, "b": -(2**31)},
                                                   {"a": float("nan"), "b": 2**31 - 1}]}
    status, answer = served.http("POST", "/v1/models/m:predict", json.dumps(body).encode())
    assert status == 200, answer
    rows = json.loads(answer)["predictions"]
    assert rows[0]["twice"] == 0 and rows[1]["twice"] == -2  # int32 wraps in the model
    assert rows[0]["sum"] == pytest.approx(16777215.0 - 2**31) and np.isnan(rows[1]["sum"])
    req = {"signature_name": "regress", "examples": [{"x": [True, 2]}]}  # booleans: int64s
    status, answer = served.http("POST", "/v1/models/m:regress", json.dumps(req).encode())
    assert status == 400 and "float" in json.loads(answer)["error"]  # int64s where floats go


# ---- HTTP framing ---------------------------------------------------------------------


def _raw_exchange(served, data: bytes, wait: float = TIMEOUT_S + 5.0) -> bytes:
    """Sends `data` on a fresh connection; returns what comes back until the server closes
    the connection or goes quiet after a complete answer."""
    with socket.create_connection((served.host, served.port), timeout=wait) as s:
        with contextlib.suppress(OSError):
            s.sendall(data)
        out = b""
        with contextlib.suppress(OSError):
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
                head, sep, rest = out.partition(b"\r\n\r\n")
                length = [int(v) for k, v in (line.split(b":", 1) for line in
                                              head.split(b"\r\n")[1:] if b":" in line)
                          if k.strip().lower() == b"content-length" and v.strip().isdigit()]
                if sep and length and len(rest) >= length[0]:
                    break
        return out


def _status_of(answer: bytes) -> int | None:
    line = answer.split(b"\r\n", 1)[0].split()
    return int(line[1]) if len(line) >= 2 and line[1].isdigit() else None


_GOOD_HTTP = (b"POST /v1/models/m:predict HTTP/1.1\r\nHost: x\r\n"
              b"Content-Type: application/json\r\nContent-Length: 25\r\n\r\n"
              b'{"instances": [[1,2,3]]}\n')


def _fuzz_framing(served, n: int) -> None:
    """`n` mutated raw requests, sixteen at a time (a case that breaks the framing waits
    for the request timeout); seeded."""
    rng = random.Random(2021)
    requests = [mutate_bytes(_GOOD_HTTP, [
        (rng.choice(["flip", "set", "insert", "delete", "truncate", "duplicate", "zero"]),
         rng.random(), rng.randrange(256), rng.randint(1, 16))
        for _ in range(rng.randint(1, 3))]) for _ in range(n)]

    def case(data):
        start = time.monotonic()
        answer = _raw_exchange(served, data)
        assert time.monotonic() - start < DEADLINE_S
        status = _status_of(answer)
        # An answer (200, or a 4xx: aiohttp's plain-text 400 for broken framing), or the
        # connection closed within the request timeout (headers never completed).
        assert status is None and answer == b"" or status is not None and status < 500, \
            (data, answer[:300])

    with _rss_bounded(), concurrent.futures.ThreadPoolExecutor(16) as pool:
        for f in [pool.submit(case, data) for data in requests]:
            f.result(timeout=60)
    served.assert_healthy()


def test_fuzz_http_framing(served):
    _fuzz_framing(served, 48)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_fuzz_http_framing_long(served):
    _fuzz_framing(served, 1000)


_HEAD = b"POST /v1/models/m:predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"


def test_oversized_bodies_are_refused_before_being_read(served):
    # A Content-Length over the limit: 413 having sent the headers only.
    answer = _raw_exchange(served, _HEAD + b"Content-Length: 10000000000\r\n\r\n")
    assert _status_of(answer) == 413 and b'"error"' in answer
    # A chunked body: 413 once it passes the limit, its end never sent.
    chunk = b"4000\r\n" + b" " * 0x4000 + b"\r\n"
    answer = _raw_exchange(served, _HEAD + b"Transfer-Encoding: chunked\r\n\r\n" +
                           chunk * (2 * LIMIT // 0x4000))
    assert _status_of(answer) == 413 and b"Connection: close" in answer, answer[:200]
    # A gzip body whose expansion passes the limit (16 KiB that inflate to 16 MiB).
    bomb = gzip.compress(b" " * (16 << 20))
    answer = _raw_exchange(served, _HEAD + b"Content-Encoding: gzip\r\nContent-Length: %d"
                           b"\r\n\r\n" % len(bomb) + bomb)
    assert _status_of(answer) == 413, answer[:200]
    served.assert_healthy()


def test_lying_content_length(served):
    good = b'{"instances": [[1,2,3]]}'
    # Shorter than the body: the first bytes are the request (bad JSON), the rest is read
    # as the next request, HTTP garbage: 400 (TF Serving's JSON error, or aiohttp's
    # plain-text one for the framing).
    answer = _raw_exchange(served, _HEAD + b"Content-Length: 5\r\n\r\n" + good)
    assert _status_of(answer) == 400, answer[:200]
    # Longer than what is sent: 408 once the request timeout passes, with a JSON error.
    start = time.monotonic()
    answer = _raw_exchange(served, _HEAD + b"Content-Length: 100\r\n\r\n" + good)
    assert _status_of(answer) == 408 and b'"error"' in answer, answer[:200]
    assert time.monotonic() - start < DEADLINE_S
    served.assert_healthy()


def test_stalled_clients_hold_nothing(served):
    """More half-sent requests than worker threads, stalled: a good request is still
    answered while they wait, and each stalled one ends within the request timeout."""
    stalls = [_HEAD + b"Content-Length: 1000\r\n\r\n{\"instances\": [[1,",  # half a body
              b"POST /v1/models/m:predict HTTP/1.1\r\nHost: x\r\nContent-Le",  # half headers
              b"POST /v1/models/m:predict HTTP/1.1\r\nHost: x\r\n"]
    socks = []
    try:
        for i in range(6):
            s = socket.create_connection((served.host, served.port), timeout=DEADLINE_S)
            socks.append(s)
            s.sendall(stalls[i % len(stalls)])
        served.assert_healthy()
        start = time.monotonic()
        for i, s in enumerate(socks):
            answer = b""
            with contextlib.suppress(OSError):
                while chunk := s.recv(4096):
                    answer += chunk
            assert time.monotonic() - start < DEADLINE_S
            if i % len(stalls) == 0:
                assert _status_of(answer) == 408 and b'"error"' in answer, answer[:200]
            else:
                assert answer == b"" or _status_of(answer) in (400, 408), answer[:200]
    finally:
        for s in socks:
            s.close()
    served.assert_healthy()


_BAD_BODIES = [b"{", b"[1]", b'{"instances": [[1, 2]]}', b'{"instances": [[1, 2, "x"]]}',
               b'{"inputs": {"z": 1}}', b'{"signature_name": 7, "instances": [[1,2,3]]}',
               b'{"instances": [[1e400, 1, 2]]}', b'{"instances": ' + b"[" * 2000,
               b'{"signature_name": "echo", "instances": [{"b64": "!"}]}', b" " * (LIMIT + 1)]


def test_many_concurrent_bad_requests(served):
    rng = random.Random(21)
    work = [(rng.choice(["POST", "POST", "GET", "PUT"]),
             rng.choice(["/v1/models/m:predict", "/v1/models/m:classify", "/v1/models/x",
                         "/v1/models/m/versions/9:predict", "/nowhere"]),
             rng.choice(_BAD_BODIES)) for _ in range(240)]

    def one(item):
        method, path, body = item
        status, answer = served.http(method, path, body)
        _check_answer(method, status, answer)
        return status

    with _rss_bounded(), concurrent.futures.ThreadPoolExecutor(24) as pool:
        futures = [pool.submit(one, item) for item in work]
        served.assert_healthy()  # answered while the flood is under way
        statuses = [f.result(timeout=60) for f in futures]
    assert all(400 <= s < 500 for s in statuses)
    served.assert_healthy()


# ---- gRPC Predict ---------------------------------------------------------------------


def _grpc_request(signature: str = "", model: str = "m", **inputs) -> pb.PredictRequest:
    req = pb.PredictRequest()
    req.model_spec.name = model
    req.model_spec.signature_name = signature
    for alias, proto in inputs.items():
        req.inputs[alias].CopyFrom(proto)
    return req


_DTYPES = [1, 1, 1, 2, 3, 7, 9, 10, 19, 8, 20, 21, 101, 0, 999, 23, 14]
_VAL_FIELDS = {"float_val": st.floats(width=32), "double_val": st.floats(),
               "int_val": st.integers(-(2**31), 2**31 - 1),
               "int64_val": st.integers(-(2**63), 2**63 - 1), "bool_val": st.booleans(),
               "string_val": st.binary(max_size=4), "half_val": st.integers(0, 65535),
               "scomplex_val": st.floats(width=32)}


@st.composite
def _tensor_protos(draw) -> tensor_pb2.TensorProto:
    t = tensor_pb2.TensorProto(dtype=draw(st.sampled_from(_DTYPES)))
    dims = draw(st.lists(st.one_of(st.integers(0, 4), st.sampled_from(
        [-1, -7, 2**31, 2**40, 2**62, 2**63 - 1])), max_size=draw(st.sampled_from([3, 3, 70]))))
    for d in dims:
        t.tensor_shape.dim.add().size = d
    if draw(st.booleans()):
        t.tensor_shape.unknown_rank = draw(st.booleans())
    if draw(st.booleans()):
        t.tensor_content = draw(st.binary(max_size=40))
    for field in draw(st.lists(st.sampled_from(sorted(_VAL_FIELDS)), max_size=2)):
        getattr(t, field).extend(draw(st.lists(_VAL_FIELDS[field], max_size=8)))
    return t


@st.composite
def _predict_requests(draw) -> pb.PredictRequest:
    req = _grpc_request(draw(st.sampled_from(_SIGNATURES)),
                        draw(st.sampled_from(["m", "m", "m", "other", ""])))
    choice = draw(st.sampled_from(["", "", "version", "label"]))
    if choice == "version":
        req.model_spec.version.value = draw(st.sampled_from([1, 1, 0, -1, 2**62]))
    elif choice == "label":
        req.model_spec.version_label = draw(st.sampled_from(["stable", "canary", ""]))
    for alias in draw(st.lists(st.sampled_from(_ALIASES), max_size=3, unique=True)):
        req.inputs[alias].CopyFrom(draw(_tensor_protos()))
    req.output_filter.extend(draw(st.lists(st.sampled_from(["y", "sum", "z"]), max_size=2)))
    return req


_SIGNATURE_DTYPES = {"serving_default": {"x": 1}, "two": {"a": 1, "b": 3}, "echo": {"s": 7},
                     "classify": {"inputs": 7}, "regress": {"inputs": 7}}
_GRPC_CODES = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND,
               grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.FAILED_PRECONDITION}


def _fuzz_grpc(served, n: int) -> None:
    good = _grpc_request(x=tensor_util.make_tensor_proto(np.array(X, np.float32)))
    good_bytes = good.SerializeToString()

    @fuzz_settings(n)
    @given(_predict_requests(), byte_mutations(), st.integers(0, 4))
    def case(req, mutations, how):
        try:
            if how == 0:  # mutated wire bytes of a good request
                served.predict_raw(mutate_bytes(good_bytes, mutations), timeout=DEADLINE_S)
            else:
                served.predict(req, timeout=DEADLINE_S)
                # Answered: every input had the signature's dtype (never cast).
                want = _SIGNATURE_DTYPES[req.model_spec.signature_name or "serving_default"]
                assert {k: v.dtype for k, v in req.inputs.items()} == want
        except grpc.RpcError as e:
            assert e.code() in _GRPC_CODES and e.details(), (e.code(), e.details())

    with _rss_bounded():
        case()
    served.assert_healthy()


def test_fuzz_grpc(served):
    _fuzz_grpc(served, 100)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_fuzz_grpc_long(served):
    _fuzz_grpc(served, 4000)


def test_bytes_that_are_not_a_request(served):
    # Were INTERNAL from grpcio's failed deserializer, which kept ~19 KB per call (a client
    # sending garbage grew the server without bound): now INVALID_ARGUMENT, memory flat.
    with _rss_bounded():
        for i in range(600):
            with pytest.raises(grpc.RpcError) as info:
                served.predict_raw(b"\x0a\xff\xff" + bytes([i % 256]), timeout=DEADLINE_S)
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    before = _rss()
    for _ in range(600):
        with contextlib.suppress(grpc.RpcError):
            served.predict_raw(b"\x12\xff", timeout=DEADLINE_S)
    assert _rss() - before < 6 << 20  # ~11 MiB with grpcio's path
    served.assert_healthy()


def _tensor(dtype: int, dims, **fields) -> tensor_pb2.TensorProto:
    t = tensor_pb2.TensorProto(dtype=dtype)
    for d in dims:
        t.tensor_shape.dim.add().size = d
    for name, values in fields.items():
        if name == "tensor_content":
            t.tensor_content = values
        else:
            getattr(t, name).extend(values)
    return t


@pytest.mark.parametrize("proto,code", [
    # A dtype other than the signature's was cast silently (resource and variant too).
    (_tensor(2, [1, 3], double_val=[1, 2, 3]), grpc.StatusCode.INVALID_ARGUMENT),
    (_tensor(3, [1, 3], int_val=[1, 2, 3]), grpc.StatusCode.INVALID_ARGUMENT),
    (_tensor(20, [1, 3]), grpc.StatusCode.INVALID_ARGUMENT),
    (_tensor(21, [1, 3]), grpc.StatusCode.INVALID_ARGUMENT),
    (_tensor(101, [1, 3], float_val=[1, 2, 3]), grpc.StatusCode.INVALID_ARGUMENT),
    (_tensor(999, [1, 3], float_val=[1, 2, 3]), grpc.StatusCode.INVALID_ARGUMENT),
    (_tensor(1, [1, 3], tensor_content=b"abc"), grpc.StatusCode.INVALID_ARGUMENT),
    (_tensor(1, [-1, 3], float_val=[1, 2, 3]), grpc.StatusCode.INVALID_ARGUMENT),
    (_tensor(1, [1] * 70, float_val=[1]), grpc.StatusCode.INVALID_ARGUMENT),
    # A huge shape with one value expanded up to half the machine's memory; now bounded
    # by the request size limit.
    (_tensor(1, [LIMIT, 3], float_val=[1]), grpc.StatusCode.RESOURCE_EXHAUSTED),
    (_tensor(1, [2**62, 2**62], float_val=[1]), grpc.StatusCode.RESOURCE_EXHAUSTED),
])
def test_malformed_tensor_protos(served, proto, code):
    with pytest.raises(grpc.RpcError) as info:
        served.predict(_grpc_request(x=proto), timeout=DEADLINE_S)
    assert info.value.code() == code and info.value.details()
    served.assert_healthy()


def test_grpc_content_of_another_field_reads_as_zeros(served):
    # TensorFlow reads only the dtype's own *_val field: a float tensor with int_val has
    # no values, so it is all zeros (TensorProto's rule for empty contents).
    resp = served.predict(_grpc_request(x=_tensor(1, [1, 3], int_val=[1, 2, 3])),
                          timeout=DEADLINE_S)
    np.testing.assert_allclose(tensor_util.MakeNdarray(resp.outputs["y"]),
                               models.expected_y([[0, 0, 0]], 1.0))
