"""Every function of TensorFlow 2.21's ragged dispatch list (`ragged_op_list(tf_version=1)`,
the list tf.ragged's documentation prints), under each tf.compat.v1 name TensorFlow gives
it, dispatches on RaggedTensors in tensorflux too (tensorflux/ragged/dispatch.py)."""

from __future__ import annotations

import pytest

import tensorflux as tf
from tests import oracle

# tf.nn.experimental is TF2's (tests/api/not_implemented.txt: tf.*.experimental)
NOT_PROVIDED = {"tf.nn.experimental.stateless_dropout"}

_LISTED_NAMES = """
import re
from tensorflow.python.ops.ragged import ragged_dispatch
text = ragged_dispatch.ragged_op_list(tf_version=1)
listed = sorted(set(re.findall(r"`(tf\\.[A-Za-z0-9_.]+)`\\(", text)))

def resolve(name):
    obj = tf
    for part in name.split(".")[1:]:
        obj = getattr(obj, part)
    return obj

functions = {id(resolve(n)) for n in listed}
names = set(listed)
for ns in ["", "math", "math.special", "nn", "strings", "io", "image", "debugging",
           "bitwise", "dtypes", "linalg", "sparse", "manip"]:
    module = resolve("tf." + ns) if ns else tf
    for attr in dir(module):
        try:
            value = getattr(module, attr)
        except Exception:  # noqa: BLE001 - properties that refuse (DType limits)
            continue
        if not attr.startswith("_") and id(value) in functions:
            names.add("tf." + (ns + "." if ns else "") + attr)
result = sorted(names)
"""


def _resolve(name):
    obj = tf
    for part in name.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


@pytest.mark.oracle
def test_every_listed_function_dispatches():
    names = oracle.run_tf(_LISTED_NAMES, timeout=120)
    assert len(names) > 250  # the list and its aliases, not an empty answer
    missing = [n for n in names if _resolve(n) is None and n not in NOT_PROVIDED]
    plain = [n for n in names if _resolve(n) is not None
             and not getattr(_resolve(n), "_ragged_dispatch", False)]
    assert not missing, missing
    assert not plain, plain
