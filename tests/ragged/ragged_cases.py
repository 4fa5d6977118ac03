"""The harness of the table-driven ragged tests: each case is (name, expression, expected),
the expression evaluated after a shared setup program in a fresh graph, `expected` being
what TensorFlow 2.21 (tf.compat.v1, graph mode) gives: its value (`to_list()` for ragged
results, `tolist()` for dense ones), static shape and ragged_rank, or the error's class
name. The same program runs under TensorFlow in the oracle tests.
"""

from __future__ import annotations

import math
import textwrap

from tests import oracle

# Evaluates CASES (name, expression) after SETUP; runs under TensorFlow and tensorflux.
EVAL_SOURCE = """
def _plain(v):
    if isinstance(v, (list, tuple)):
        return [_plain(i) for i in v]
    if hasattr(v, "to_list"):
        return v.to_list()
    if hasattr(v, "tolist"):
        return v.tolist()
    return v

def _evaluate(cases, env):
    out = {}
    for name, expr in cases:
        try:
            t = eval(expr, env)
            with tf.Session() as sess:
                v = sess.run(t)
        except Exception as e:  # noqa: BLE001 - the error's class is the answer
            out[name] = {"error": type(e).__name__}
            continue
        static = getattr(t, "shape", None)  # None: an op, a list of results
        shape = static.as_list() if static is not None and static.ndims is not None else None
        out[name] = {"value": _plain(v), "shape": shape,
                     "ragged_rank": getattr(t, "ragged_rank", 0)}
    return out
"""


def program(setup: str, cases) -> str:
    """The TF1 program that evaluates `cases` (name, expression, ...) after `setup`."""
    pairs = [(c[0], c[1]) for c in cases]
    return (textwrap.dedent(setup) + EVAL_SOURCE +
            f"result = _evaluate({pairs!r}, globals())\n")


def evaluate(tf, setup: str, cases) -> dict:
    """Each case's answer under `tf` (tensorflux), in a fresh default graph."""
    import json

    import numpy as np
    ns = {"tf": tf, "np": np, "json": json}
    with tf.Graph().as_default():
        exec(program(setup, cases), ns)  # noqa: S102 - the shared test program
    return ns["result"]


def same_value(a, b) -> bool:
    """Nested lists equal, floats within 1e-5 (NaN equal to NaN)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
            return False
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6)
    return a == b


def compatible_shapes(ours, theirs) -> bool:
    """Same rank, and equal dims where both are known (tensorflux may know more: it keeps
    uniform row lengths and constant nrows in places where TF drops them)."""
    if ours is None or theirs is None:
        return ours is None and theirs is None
    return len(ours) == len(theirs) and all(
        a is None or b is None or a == b for a, b in zip(ours, theirs, strict=True))


def check(answer: dict, expected, name: str) -> None:
    """`answer` (from `evaluate`) against the table's expected value: a class name for
    errors, else the value (shape and ragged rank checked by the oracle tests)."""
    if isinstance(expected, type) or isinstance(expected, str) and expected.endswith("Error"):
        want = expected if isinstance(expected, str) else expected.__name__
        assert answer.get("error") == want, f"{name}: {answer} (want {want})"
        return
    assert "error" not in answer, f"{name}: {answer}"
    assert same_value(answer["value"], expected), f"{name}: {answer['value']} != {expected}"


def check_against_tensorflow(tf, setup: str, cases) -> None:
    """Runs the cases under TensorFlow and tensorflux: the same values (and the recorded
    ones), ragged ranks and error classes; compatible static shapes."""
    theirs = oracle.run_tf(program(setup, cases), timeout=180)
    ours = evaluate(tf, setup, cases)
    for name, _, expected in cases:
        t, o = theirs[name], ours[name]
        check(t, expected, f"{name} (TensorFlow)")
        if "error" in t:
            assert o.get("error") == t["error"], f"{name}: {o} vs TF {t}"
            continue
        assert "error" not in o, f"{name}: {o} vs TF {t}"
        assert same_value(o["value"], t["value"]), f"{name}: {o['value']} vs TF {t['value']}"
        assert o["ragged_rank"] == t["ragged_rank"], f"{name}: {o} vs TF {t}"
        assert compatible_shapes(o["shape"], t["shape"]), f"{name}: {o} vs TF {t}"


# The tensors every ragged case table starts from (its SETUP adds its own).
BASE_SETUP = """
RT = tf.RaggedTensor
r = tf.ragged.constant([[1, 2], [], [3, 4, 5]])
q = tf.ragged.constant([[6], [7, 8], []])
r3 = tf.ragged.constant([[[1, 2], [3]], [], [[4], [5, 6, 7]]])
q3 = tf.ragged.constant([[[8], []], [[9]], [[10, 11]]])
ri = tf.ragged.constant([[[1, 2]], [[3, 4], [5, 6]]], ragged_rank=1)
qi = tf.ragged.constant([[[7, 8], [9, 10]], [[11, 12]]], ragged_rank=1)
d = tf.constant([[1, 2, 3], [4, 5, 6]])
d3 = tf.reshape(tf.range(1, 13), [2, 2, 3])
u = RT.from_tensor(d3)
u2 = RT.from_tensor(d3, ragged_rank=2)
"""
