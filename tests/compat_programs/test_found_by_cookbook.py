"""Behaviour TF1 programs rely on, found by running nfmcclure/tensorflow_cookbook's programs
under tensorflux.

- Floating-point exceptions in the elementwise kernels (the loss-functions recipe plots
  `log(x)` and `log(1 - x)` over a range that reaches 0 and beyond): TensorFlow gives
  -inf/NaN and says nothing; the kernels built on _math_common's wrappers let NumPy's
  RuntimeWarnings through (they come from that module, which had no filter), and a
  program run with warnings as errors failed its step.
- The shape of a random op is converted as TF's `shape_tensor` does, its dtype inferred:
  MNIST's uint8 labels made `max(labels) + 1` a uint8, and `tf.truncated_normal([n])` is
  TF's TypeError (the production chapter's unit-test recipe fails so under TensorFlow);
  tensorflux took it as int32.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

# Each fetch hits a floating-point exception in NumPy; under `-W error::RuntimeWarning`
# a warning that escapes a kernel fails the step.
_QUIET_KERNELS = """
import json
import numpy as np
import tensorflux as tf
x = tf.constant([0.0, -1.0, 2.0])
fetches = [tf.log(x), tf.pow(x, -1.0), tf.div(1.0, x), tf.sqrt(x), tf.exp(x * 1000.0),
           tf.rsqrt(x), tf.reciprocal(x), tf.floordiv(x, 0.0), tf.acos(x), tf.lgamma(x),
           tf.reduce_sum(tf.log(x)), tf.square(x * 1e30), tf.log(1.0 - x),
           tf.nn.sigmoid_cross_entropy_with_logits(labels=x, logits=x * 1e30)]
with tf.Session() as sess:
    out = sess.run(fetches)
print(json.dumps([np.asarray(v).tolist() for v in out[:3]]))
"""


def test_float_exceptions_give_inf_and_nan_without_warnings():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", _QUIET_KERNELS],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr, proc.stderr
    log, inverse, quotient = json.loads(proc.stdout.strip().splitlines()[-1])
    np.testing.assert_equal(log, [-np.inf, np.nan, np.log(np.float32(2.0))])
    np.testing.assert_equal(inverse, [np.inf, -1.0, 0.5])
    np.testing.assert_equal(quotient, [np.inf, -1.0, 0.5])


RANDOM_SHAPES = """
out = []
shapes = [[np.uint8(10)], np.array([2, 3], np.uint8), [np.int16(3)], [np.int64(3)],
          [3, np.int64(2)], np.array([2, 3]), (2, 3), [2.0], []]
for make in (tf.random_uniform, tf.random_normal, tf.truncated_normal):
    for shape in shapes:
        with tf.Graph().as_default():
            try:
                out.append(make(shape).shape.as_list())
            except TypeError:
                out.append("TypeError")
result = out
"""


@pytest.mark.oracle
def test_random_op_shapes_convert_as_tf():
    scope = {"tf": tf, "np": np}
    exec(RANDOM_SHAPES, scope)
    assert scope["result"] == run_tf(RANDOM_SHAPES)
    assert scope["result"][:3] == ["TypeError"] * 3
