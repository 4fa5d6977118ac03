"""The README's TF1 example runs as shown and prints what its comment says."""

import contextlib
import io
import re
from pathlib import Path

import numpy as np

import tensorflux as tf

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_trains():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    program = next(b for b in blocks if "tf.Session" in b)
    out = io.StringIO()
    with tf.Graph().as_default(), contextlib.redirect_stdout(out):
        exec(compile(program, "README.md", "exec"), {})
    # NumPy prints an exact 1.0 inside an array as "1.": the digits after the point are optional.
    numbers = [float(v) for v in re.findall(r"-?\d+\.\d*(?:e-?\d+)?", out.getvalue())]
    assert len(numbers) == 4, out.getvalue()
    np.testing.assert_allclose(numbers, [1.0, -2.0, 0.5, 3.0], atol=1e-2)
