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
