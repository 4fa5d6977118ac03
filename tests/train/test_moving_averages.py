"""tf.train.ExponentialMovingAverage and assign_moving_average against TensorFlow 1's
names and numbers (the expected values below were computed by TF 2.21's compat.v1; the
oracle test recomputes them when TensorFlow is installed)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

pytestmark = pytest.mark.timeout(60)

PROGRAM = """
v = tf.Variable([1.0, 2.0], name="v")
with tf.variable_scope("s"):
    w = tf.Variable(3.0, name="w")
t = tf.constant([4.0, 5.0]) * 2.0
u = tf.constant([1.0, -1.0]) * 3.0
step = tf.Variable(0, trainable=False, name="step")
ema = tf.train.ExponentialMovingAverage(0.9, num_updates=step)
op = ema.apply([v, w, t])
ema2 = tf.train.ExponentialMovingAverage(0.5, zero_debias=True, name="zd")
op2 = ema2.apply([v, u])
names = [x.name for x in tf.global_variables()]
averaged = [x.name for x in tf.moving_average_variables()]
ops = [op.name, op2.name, ema.average_name(v), ema.average(t).name]
restore = sorted(ema.variables_to_restore().keys())
with tf.Session() as s:
    s.run(tf.global_variables_initializer())
    for i in range(3):
        s.run([op, op2]); s.run(v.assign_add([1.0, 1.0])); s.run(step.assign_add(1))
    values = s.run([ema.average(v), ema.average(w), ema.average(t), ema2.average(v),
                    ema2.average(u)])
result = [names, averaged, ops, restore, [np.asarray(x).tolist() for x in values]]
"""


def _run_here():
    scope = {"tf": tf, "np": np}
    with tf.Graph().as_default():
        exec(PROGRAM, scope)  # noqa: S102 - the test's own program
    return scope["result"]


def test_names_and_averages_match_tensorflow_1():
    names, averaged, ops, restore, values = _run_here()
    assert [n for n in names if "biased" not in n and "local_step" not in n] == [
        "v:0", "s/w:0", "step:0", "v/ExponentialMovingAverage:0",
        "s/w/ExponentialMovingAverage:0", "mul/ExponentialMovingAverage:0", "v/zd:0",
        "mul_1/zd:0"]
    assert averaged == ["v:0", "s/w:0", "v:0"]
    assert ops == ["ExponentialMovingAverage", "zd", "v/ExponentialMovingAverage",
                   "mul/ExponentialMovingAverage:0"]
    assert "v/ExponentialMovingAverage" in restore and "step" in restore
    np.testing.assert_allclose(values[0], [2.7045455, 3.7045455], rtol=1e-6)
    np.testing.assert_allclose(values[1], 3.0)
    np.testing.assert_allclose(values[2], [7.9636364, 9.954546], rtol=1e-6)
    np.testing.assert_allclose(values[3], [2.25, 3.25], rtol=1e-6)
    np.testing.assert_allclose(values[4], [3.0, -3.0], rtol=1e-6)  # zero-debiased


def test_restoring_the_averages_into_the_model(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable([0.0, 0.0], name="v")
        ema = tf.train.ExponentialMovingAverage(0.5)
        update = ema.apply([v])
        saver = tf.train.Saver()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(v.assign([4.0, 8.0]))
            s.run(update)  # shadow = 0.5 * 0 + 0.5 * [4, 8]
            path = saver.save(s, str(tmp_path / "m"))
    with tf.Graph().as_default():
        v = tf.Variable([0.0, 0.0], name="v")
        ema = tf.train.ExponentialMovingAverage(0.5)
        with tf.Session() as s:
            tf.train.Saver(ema.variables_to_restore()).restore(s, path)
            np.testing.assert_allclose(s.run(v), [2.0, 4.0])


def test_bad_input_is_refused_as_tensorflow_does():
    with tf.Graph().as_default():
        i = tf.Variable(1, name="i")
        v = tf.Variable(1.0, name="v")
        ema = tf.train.ExponentialMovingAverage(0.9)
        with pytest.raises(TypeError, match="half, float, or double"):
            ema.apply([i])
        ema.apply([v])
        with pytest.raises(ValueError, match="already computed"):
            ema.apply([v])


@pytest.mark.oracle
def test_against_tensorflow():
    names, averaged, ops, restore, values = run_tf(PROGRAM)
    h_names, h_averaged, h_ops, h_restore, h_values = _run_here()
    assert (h_names, h_averaged, h_ops, h_restore) == (names, averaged, ops, restore)
    for a, b in zip(h_values, values, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
