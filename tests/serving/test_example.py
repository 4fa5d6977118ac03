"""examples/serving: export the digits CNN, serve it, query it with the example's client."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys

from tensorflux.serving.manager import ModelManager
from tensorflux.serving.server import BackgroundServer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "serving")


def test_export_serve_query(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, os.path.join(EXAMPLE, "export_digits.py"),
                          "--export_dir", str(tmp_path), "--epochs", "2"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert os.path.isfile(tmp_path / "1" / "saved_model.pb")
    sys.path.insert(0, EXAMPLE)
    try:
        import query
    finally:
        sys.path.remove(EXAMPLE)
    manager = ModelManager("digits", str(tmp_path), poll_wait_seconds=0)
    manager.start()
    try:
        with BackgroundServer(manager) as srv:
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                assert query.main(["--url", srv.url, "--model", "digits",
                                   "--count", "50"]) == 0
    finally:
        manager.stop()
    text = printed.getvalue()
    assert "version 1 AVAILABLE" in text
    accuracy = float(re.search(r"accuracy (\d\.\d+) on 50 digits", text)[1])
    assert accuracy >= 0.8, text
