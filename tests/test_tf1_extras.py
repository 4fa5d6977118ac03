"""The small TF1 names: tf.test.TestCase, tf.queue, tf.arg_max & co., the learning-rate
decays added for issue 17 (against TensorFlow's numbers), tf.data.Options, helpers."""

from __future__ import annotations

import unittest

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

pytestmark = pytest.mark.timeout(60)

DECAYS = """
step = tf.placeholder(tf.int64, [])
lrs = [tf.train.linear_cosine_decay(0.1, step, 100, num_periods=2.0, alpha=0.1, beta=0.01),
       tf.train.cosine_decay_restarts(0.1, step, 10, t_mul=2.0, m_mul=0.5, alpha=0.1),
       tf.train.cosine_decay_restarts(0.1, step, 10, t_mul=1.0),
       tf.train.piecewise_constant_decay(step, [10, 50], [1.0, 0.5, 0.1])]
with tf.Session() as s:
    result = [[float(s.run(lr, {step: k})) for k in (0, 5, 10, 31, 77, 150)] for lr in lrs]
"""


def _decays_here():
    scope = {"tf": tf, "np": np}
    with tf.Graph().as_default():
        exec(DECAYS, scope)  # noqa: S102 - the test's own program
    return scope["result"]


def test_decays_have_tensorflows_values():
    got = _decays_here()
    # TF 2.21 (compat.v1), computed once with the oracle.
    np.testing.assert_allclose(got[3], [1.0, 1.0, 1.0, 0.5, 0.1, 0.1])
    assert got[2][0] == pytest.approx(0.1) and got[2][2] == pytest.approx(0.1)
    assert got[0][-1] == pytest.approx(0.1 * (0.1 + 0.01), rel=1e-5)  # past decay_steps


@pytest.mark.oracle
def test_decays_against_tensorflow():
    np.testing.assert_allclose(_decays_here(), run_tf(DECAYS), rtol=1e-5, atol=1e-7)


def test_tf_test_testcase_runs_a_tf1_style_test():
    class Case(tf.test.TestCase):
        def test_double(self):
            with self.test_session() as sess:
                x = tf.constant([1.0, 2.0])
                self.assertAllClose(sess.run(x * 2), [2.0, 4.0])
                self.assertAllEqual(self.evaluate(tf.shape(x)), [2])
                self.assertShapeEqual(np.zeros(2), x)
                self.assertTrue(self.get_temp_dir())

    names = unittest.TestLoader().getTestCaseNames(Case)
    assert names == ["test_double"]  # no test_session picked up as a test
    result = unittest.TextTestRunner(stream=open("/dev/null", "w")).run(  # noqa: SIM115
        unittest.TestLoader().loadTestsFromTestCase(Case))
    assert result.wasSuccessful(), result.failures + result.errors


def test_aliases_and_small_helpers():
    with tf.Graph().as_default():
        x = tf.constant([[1.0, 5.0, 2.0], [7.0, 0.0, 1.0]])
        q = tf.queue.FIFOQueue(3, tf.float32)
        with tf.op_scope([x], None, "scoped") as scope:
            assert scope == "scoped/"
        uninit = tf.Variable(1.0)
        check = tf.assert_variables_initialized([uninit])
        with tf.Session() as s:
            assert s.run(tf.arg_max(x, 1)).tolist() == [1, 0]
            assert s.run(tf.arg_min(x, 1)).tolist() == [0, 1]
            s.run(q.enqueue(3.0))
            assert s.run(q.dequeue()) == 3.0
            with pytest.raises(tf.errors.InvalidArgumentError):
                s.run(check)
            s.run(uninit.initializer)
            s.run(check)
    assert tf.dimension_value(tf.TensorShape([3, None])[0]) == 3
    assert tf.get_static_value(tf.constant([1, 2])).tolist() == [1, 2]
    assert tf.UnconnectedGradients.ZERO.value == "zero"
    assert tf.initializers.tables_initializer is tf.tables_initializer
    with tf.errors.raise_exception_on_not_ok_status():
        pass


def test_dataset_options_are_recorded():
    with tf.Graph().as_default():
        opts = tf.data.Options()
        opts.experimental_deterministic = False
        ds = tf.data.Dataset.range(3).with_options(opts)
        assert ds.options().experimental_deterministic is False
        it = tf.data.make_one_shot_iterator(ds)
        with tf.Session() as s:
            assert [s.run(it.get_next()) for _ in range(3)] == [0, 1, 2]
    assert tf.data.INFINITE_CARDINALITY == -1 and tf.data.UNKNOWN_CARDINALITY == -2


def test_train_helpers():
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        tf.train.assert_global_step(step)
        with pytest.raises(TypeError):
            tf.train.assert_global_step(tf.constant(1.0))


def test_structure_utilities_and_pass_through_gradients():
    assert tf.nest.flatten({"b": 3, "a": [1, 2]}) == [1, 2, 3]
    assert tf.nest.map_structure(lambda v: v * 2, (1, [2])) == (2, [4])
    assert tf.GRAPH_DEF_VERSION > 0 and tf.sysconfig.get_lib()
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0])
        y = tf.grad_pass_through(lambda v: tf.round(v * 3.3))(x)
        g = tf.gradients(tf.reduce_sum(y * 2.0), x)[0]
        assert tf.is_symbolic_tensor(x)
        with tf.Session() as s:
            got_y, got_g = s.run([y, g])
    assert got_y.tolist() == [3.0, 7.0] and got_g.tolist() == [2.0, 2.0]
