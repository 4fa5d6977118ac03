"""Version directories: hot swap under concurrent load, corrupt versions skipped, the
command line's startup (REST and gRPC) and graceful shutdown."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import grpc
import numpy as np

from tensorflux.framework import tensor_util
from tensorflux.protos import serving_predict_pb2 as pb
from tensorflux.serving.manager import ModelManager
from tensorflux.serving.server import BackgroundServer
from tests.serving import models
from tests.serving.conftest import Client, exported, write_version

X = [[1.0, 2.0, 3.0]]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _bias_of(body) -> float:
    return round(body["predictions"][0][0] - models.expected_y(X, 0.0)[0][0], 3)


def test_hot_swap_under_concurrent_load_fails_no_request(tmp_path, export_root):
    base = str(tmp_path)
    write_version(base, 1, 1.0, export_root)
    exported(2.0, export_root)  # exported before the load starts
    manager = ModelManager("m", base, poll_wait_seconds=0.05)
    manager.start()
    failures, biases, stop = [], set(), threading.Event()

    def load(client):
        while not stop.is_set():
            status, body = client.predict({"instances": X})
            if status != 200:
                failures.append((status, body))
            else:
                biases.add(_bias_of(body))

    try:
        with BackgroundServer(manager) as srv:
            client = Client(srv.url)
            threads = [threading.Thread(target=load, args=(client,)) for _ in range(4)]
            for t in threads:
                t.start()
            time.sleep(0.2)
            write_version(base, 2, 2.0, export_root)
            deadline = time.monotonic() + 60
            while 2.0 not in biases and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.2)
            stop.set()
            for t in threads:
                t.join(timeout=30)
            assert failures == []
            assert biases == {1.0, 2.0}
            status = client.call("GET", "/v1/models/m")[1]["model_version_status"]
            assert [(s["version"], s["state"]) for s in status] == [("2", "AVAILABLE"),
                                                                    ("1", "END")]
            assert client.predict({"instances": X}, where="/versions/1")[0] == 404
    finally:
        stop.set()
        manager.stop()


def test_corrupt_version_is_skipped_and_retried_once_complete(tmp_path, export_root, caplog):
    base = str(tmp_path)
    write_version(base, 1, 1.0, export_root)
    manager = ModelManager("m", base, poll_wait_seconds=0)
    manager.start()
    try:
        with BackgroundServer(manager) as srv:
            client = Client(srv.url)
            # A half-written version: the directory exists, its saved_model.pb is garbage.
            os.makedirs(tmp_path / "2" / "variables")
            (tmp_path / "2" / "saved_model.pb").write_bytes(b"\x0a\xff\xff garbage")
            with caplog.at_level(logging.ERROR, logger="tensorflux.serving"):
                manager.poll()
                manager.poll()  # unchanged: neither retried nor logged again
            errors = [r for r in caplog.records if "version 2" in r.getMessage()]
            assert len(errors) == 1
            status, body = client.predict({"instances": X})
            assert status == 200 and _bias_of(body) == 1.0
            states = {s["version"]: s for s in
                      client.call("GET", "/v1/models/m")[1]["model_version_status"]}
            assert states["1"]["state"] == "AVAILABLE"
            assert states["2"]["state"] == "END" and states["2"]["status"]["error_message"]
            # An empty directory (an export just begun) is skipped too.
            os.makedirs(tmp_path / "3")
            manager.poll()
            assert _bias_of(client.predict({"instances": X})[1]) == 1.0
            # The export of version 3 completes: the next poll serves it.
            shutil.rmtree(tmp_path / "3")
            write_version(base, 3, 3.0, export_root)
            manager.poll()
            assert _bias_of(client.predict({"instances": X})[1]) == 3.0
    finally:
        manager.stop()


def test_startup_skips_a_corrupt_newest_version(tmp_path, export_root):
    write_version(str(tmp_path), 4, 1.0, export_root)
    os.makedirs(tmp_path / "5")
    (tmp_path / "5" / "saved_model.pb").write_bytes(b"not a proto")
    manager = ModelManager("m", str(tmp_path), poll_wait_seconds=0)
    manager.start()
    try:
        with manager.acquire() as servable:
            assert servable.version == 4
    finally:
        manager.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_command_line_serves_and_shuts_down_on_sigterm(tmp_path, export_root):
    write_version(str(tmp_path), 1, 1.0, export_root)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    grpc_port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tensorflux.serving.server", "--model_name", "cli",
         "--model_base_path", str(tmp_path), "--rest_api_port", "0",
         "--grpc_port", str(grpc_port),
         "--enable_batching", "--max_batch_size", "4", "--batch_timeout_micros", "500"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == \
            f"tensorflux-serve: gRPC PredictionService at 127.0.0.1:{grpc_port}"
        line = proc.stdout.readline()
        assert line.startswith("tensorflux-serve: model cli at http://127.0.0.1:"), \
            line + proc.stderr.read() if not line else line
        url = line.split(" at ")[1].strip().removesuffix("/v1/models/cli")
        client = Client(url)
        status, body = client.predict({"instances": X}, model="cli")
        assert status == 200
        np.testing.assert_allclose(body["predictions"], models.expected_y(X, 1.0))
        with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            call = channel.unary_unary("/tensorflow.serving.PredictionService/Predict",
                                       request_serializer=pb.PredictRequest.SerializeToString,
                                       response_deserializer=pb.PredictResponse.FromString)
            req = pb.PredictRequest()
            req.model_spec.name = "cli"
            req.inputs["x"].CopyFrom(tensor_util.make_tensor_proto(np.float32(X)))
            out = tensor_util.MakeNdarray(call(req, timeout=30).outputs["y"])
        np.testing.assert_allclose(out, models.expected_y(X, 1.0))
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()
