"""`tensorflux-serve --rest_api_processes 2`: two processes on one port (SO_REUSEPORT), each
picking up new versions, stopping together on SIGTERM, the second ending with the first."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.serving import models
from tests.serving.conftest import Client, write_version

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
X = [[1.0, 2.0, 3.0]]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="SO_REUSEPORT spreading connections: Linux")


def _children(pid: int) -> list[int]:
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            out += [int(c) for c in f.read().split()]
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _biases(client: Client, n: int) -> set[float]:
    """The model's bias as `n` requests on fresh connections see it."""
    seen = set()
    for _ in range(n):
        status, body = client.predict({"instances": X}, model="p")
        assert status == 200, body
        y = np.asarray(body["predictions"], np.float32)
        seen.add(round(float((y - models.expected_y(X, 0.0))[0, 0]), 3))
    return seen


@pytest.fixture
def two_processes(tmp_path, export_root):
    write_version(str(tmp_path), 1, 1.0, export_root)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tensorflux.serving.server", "--model_name", "p",
         "--model_base_path", str(tmp_path), "--rest_api_port", "0",
         "--rest_api_processes", "2", "--file_system_poll_wait_seconds", "0.2"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert line.startswith("tensorflux-serve: model p at http://127.0.0.1:"), line
        yield proc, Client(line.split(" at ")[1].strip().removesuffix("/v1/models/p")), \
            str(tmp_path)
    finally:
        for pid in _children(proc.pid) if _alive(proc.pid) else []:
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        proc.stdout.close()


def test_two_processes_serve_swap_versions_and_stop_together(two_processes, export_root):
    proc, client, base = two_processes
    [child] = _children(proc.pid)
    assert _biases(client, 16) == {1.0}
    write_version(base, 2, 2.0, export_root)
    deadline = time.monotonic() + 60
    while _biases(client, 16) != {2.0}:  # both processes swapped (16 fresh connections)
        assert time.monotonic() < deadline
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    assert not _alive(child)


@pytest.mark.slow  # two more server processes to start (10-25 s on the loaded machine)
def test_the_second_process_ends_with_the_first(two_processes):
    proc, client, _ = two_processes
    [child] = _children(proc.pid)
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while _alive(child):
        assert time.monotonic() < deadline
        time.sleep(0.1)
