"""Ask the real TensorFlow (installed by ../shared/anchors/setup_tf.sh in its own venv).

TensorFlow never shares a process with tensorflux: a snippet runs in the oracle venv's python
with `tf` bound to `tensorflow.compat.v1` (v2 behaviour off) and `np` to NumPy, and whatever it
assigns to `result` comes back through JSON. Tests that use this are marked `oracle` and are
skipped when the venv is absent.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
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


def run_tf(code: str, timeout: float = 90.0):
    """Runs `code` under TensorFlow; returns the JSON-decoded value of `result`.

    Skips the calling test when the oracle venv does not exist. Raises RuntimeError with
    TensorFlow's stderr when the snippet fails.
    """
    if not available():
        pytest.skip("TensorFlow oracle venv not installed (../shared/anchors/setup_tf.sh)")
    src = _PRELUDE + textwrap.dedent(code) + _EPILOGUE
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
