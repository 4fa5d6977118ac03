"""Ask the real TensorFlow (installed by ../shared/anchors/setup_tf.sh in its own venv).

TensorFlow never shares a process with tensorflux: a snippet runs in the oracle venv's python
with `tf` bound to `tensorflow.compat.v1` (v2 behaviour off) and `np` to NumPy, and whatever it
assigns to `result` comes back through JSON. Tests that use this are marked `oracle` and are
skipped when the venv is absent.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest

ORACLE_PYTHON = Path(
    os.environ.get(
        "TENSORFLUX_ORACLE_PYTHON",
        Path.home() / ".cache" / "tensorflux-oracle-venv" / "bin" / "python",
    )
)

_PRELUDE = """
import json, os, sys, base64
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
tf.logging.set_verbosity(tf.logging.ERROR)
result = None
"""

_EPILOGUE = """
def _enc(o):
    if isinstance(o, np.ndarray):
        return {"__nd__": o.tolist(), "dtype": str(o.dtype)}
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, bytes):
        return {"__b64__": base64.b64encode(o).decode()}
    raise TypeError(type(o))
sys.stdout.write("\\n@@RESULT@@" + json.dumps(result, default=_enc))
"""


def available() -> bool:
    return ORACLE_PYTHON.exists()


def _dec(o):
    import base64

    import numpy as np

    if isinstance(o, dict):
        if "__nd__" in o:
            return np.array(o["__nd__"], dtype=o["dtype"])
        if "__b64__" in o:
            return base64.b64decode(o["__b64__"])
        return {k: _dec(v) for k, v in o.items()}
    if isinstance(o, list):
        return [_dec(v) for v in o]
    return o


# Snippets that may change process-wide state (eager mode, resource variables, environment,
# servers, Keras' global session) run in a process of their own; the rest share one.
_OWN_PROCESS_TOKENS = ("enable_", "disable_", "os.environ", "sys.", "keras", "compat.v2",
                       "Server(", "thread", "subprocess", "signal", "set_floatx", "atexit")

_SERVER = _PRELUDE + _EPILOGUE.split("sys.stdout.write", 1)[0] + """
import traceback
_out = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr
_base = {k: v for k, v in globals().items() if not k.startswith("_") or k == "_enc"}
while True:
    _line = sys.stdin.readline()
    if not _line:
        break
    tf.reset_default_graph()
    _ns = dict(_base, __name__="__oracle__", result=None)
    try:
        exec(json.loads(_line), _ns)
        _reply = "ok " + json.dumps(_ns.get("result"), default=_enc)
    except BaseException:
        _reply = "error " + json.dumps(traceback.format_exc())
    _out.write(_reply + "\\n")
    _out.flush()
"""


def _environment() -> dict:
    """The environment the TensorFlow process starts with, but for pytest's own per-test
    variable (which names the running test and would otherwise restart the process for
    every test)."""
    env = dict(os.environ)
    env.pop("PYTEST_CURRENT_TEST", None)
    return env


class _SharedOracle:
    """One TensorFlow process answering snippets in turn (TensorFlow's import takes ~3 s of a
    fresh process; the suite asks hundreds of snippets). A snippet that times out or kills
    the process takes the process with it; the next one starts another."""

    def __init__(self):
        self._lock = threading.Lock()
        self._proc = None
        self._stderr = None
        self._environ: dict = {}

    def _start(self):
        self._environ = _environment()
        self._stderr = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            [str(ORACLE_PYTHON), "-c", _SERVER], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._stderr, text=True, bufsize=1)

    def close(self):
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.wait()
            proc.stdin.close()
            proc.stdout.close()
            self._stderr.close()

    def _stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read()[-4000:].decode(errors="replace")

    def run(self, code: str, timeout: float):
        with self._lock:
            if (self._proc is None or self._proc.poll() is not None
                    or self._environ != _environment()):  # a test set a variable TF reads
                self.close()
                self._start()
            reply: list[str] = []
            reader = threading.Thread(
                target=lambda: reply.append(self._proc.stdout.readline()), daemon=True)
            self._proc.stdin.write(json.dumps(code) + "\n")
            self._proc.stdin.flush()
            reader.start()
            reader.join(timeout)
            timed_out = reader.is_alive()
            if timed_out or not reply or not reply[0]:
                tail = self._stderr_tail()
                self.close()
                if timed_out:
                    raise subprocess.TimeoutExpired("oracle snippet", timeout)
                raise RuntimeError(f"oracle process died:\n{tail}")
            kind, _, body = reply[0].partition(" ")
            if kind != "ok":
                raise RuntimeError(f"oracle snippet failed:\n{json.loads(body)[-4000:]}")
            return _dec(json.loads(body))


_shared = _SharedOracle()
atexit.register(_shared.close)


def run_tf(code: str, timeout: float = 90.0):
    """Runs `code` under TensorFlow; returns the JSON-decoded value of `result`.

    Skips the calling test when the oracle venv does not exist. Raises RuntimeError with
    TensorFlow's error when the snippet fails. Snippets share one TensorFlow process, each
    in a fresh namespace and default graph, unless they may change process-wide state
    (`_OWN_PROCESS_TOKENS`).
    """
    if not available():
        pytest.skip("TensorFlow oracle venv not installed (../shared/anchors/setup_tf.sh)")
    code = textwrap.dedent(code)
    if os.environ.get("TENSORFLUX_ORACLE_SHARED", "1") != "0" and not any(
            token in code for token in _OWN_PROCESS_TOKENS):
        # The snippet's first run in a fresh process includes TensorFlow's import.
        return _shared.run(code, timeout=timeout + 30.0)
    src = _PRELUDE + code + _EPILOGUE
    proc = subprocess.run(
        [str(ORACLE_PYTHON), "-c", src], capture_output=True, text=True, timeout=timeout
    )
    if proc.returncode != 0 or "@@RESULT@@" not in proc.stdout:
        raise RuntimeError(f"oracle snippet failed:\n{proc.stderr[-4000:]}")
    return _dec(json.loads(proc.stdout.rsplit("@@RESULT@@", 1)[1]))


def run_both(program: str, tensorflux_module, timeout: float = 120.0):
    """Runs one TF1 `program` (which assigns `result`) under TensorFlow and under tensorflux.

    The program sees `tf`, `np` and `json`; under tensorflux it runs in a fresh default
    graph. Returns (tensorflux result, TensorFlow result). Skips without the oracle venv.
    """
    theirs = run_tf("import json\ng_ = tf.Graph()\nwith g_.as_default():\n" +
                    textwrap.indent(textwrap.dedent(program), "    "), timeout=timeout)
    import json

    import numpy as np

    ns = {"tf": tensorflux_module, "np": np, "json": json}
    with tensorflux_module.Graph().as_default():
        exec(textwrap.dedent(program), ns)  # noqa: S102 - the shared test program
    return ns["result"], theirs


def assert_results_close(ours: dict, theirs: dict, rtol: float, atol: float) -> None:
    """Same keys, and per key the same shape and values within tolerance (bools exact)."""
    import numpy as np

    assert set(ours) == set(theirs)
    for key in sorted(theirs):
        w, g = np.asarray(theirs[key]), np.asarray(ours[key])
        assert g.shape == w.shape, f"{key}: shape {g.shape} vs TF {w.shape}"
        if w.dtype == bool:
            np.testing.assert_array_equal(g, w, err_msg=key)
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=key)
