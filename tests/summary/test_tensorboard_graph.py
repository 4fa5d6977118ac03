"""TensorBoard (the registry's package, no TensorFlow) serves the GraphDef tensorflux writes:
its graph plugin lists the run and returns the nodes with their name scopes and requested
devices (scripts/tensorboard_graph.py; with a browser it also takes the screenshot in
docs/tensorboard_graph.png). The server binds loopback on a free port and is always stopped.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.timeout(180),
              pytest.mark.skipif(importlib.util.find_spec("tensorboard") is None,
                                 reason="tensorboard is not installed")]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))


def test_tensorboard_serves_our_graph_with_scopes_and_devices(tmp_path):
    import tensorboard_graph as tg

    tg.write_model(str(tmp_path))
    tb = shutil.which("tensorboard") or os.path.join(os.path.dirname(sys.executable),
                                                      "tensorboard")
    port = tg.free_port()
    proc = subprocess.Popen([tb, "--logdir", str(tmp_path), "--host", "127.0.0.1", "--port",
                             str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        graph = tg.check_served(f"http://127.0.0.1:{port}")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    assert 'device: "/device:CPU:0"' in graph and 'name: "input/images"' in graph
