"""Every program in examples/ runs to completion in a subprocess and prints its result
line (the digits demo with `--epochs 2`; its accuracy target is the demo's own concern).
linear_regression.py and lbfgs.py exit non-zero themselves when they miss the optimum."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# (script, arguments, a regex its output must contain)
EXAMPLES = [
    ("figure1_whitepaper.py", [], r"Figure 1 program ran 10 steps; last cost \d+\.\d+"),
    ("linear_regression.py", [], r"fitted w=\d\.\d+ b=\d\.\d+ \(true w=3\.0, b=0\.5\)"),
    ("lbfgs.py", [], r"L-BFGS \(m=\d+\) minimized the 10-d Rosenbrock function in \d+ "
                     r"iterations: f = [\d.e+-]+, max \|x - 1\| = [\d.e+-]+"),
    ("digits_cnn.py", ["--epochs", "2"], r"test accuracy 0\.\d+"),
    ("estimator_digits.py", ["--steps", "100"],
     r"after 100 steps: held-out accuracy 0\.\d+, average loss [\d.]+; SavedModel at "),
]


@pytest.mark.parametrize("script,args,pattern", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_example_runs_and_prints_its_result(script, args, pattern):
    if script in ("digits_cnn.py", "estimator_digits.py"):
        pytest.importorskip("sklearn")
        pytest.importorskip("tqdm")
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / script), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=45)
    assert proc.returncode == 0, f"{script} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert re.search(pattern, proc.stdout), f"{script} printed no result line:\n{proc.stdout}"
