"""A fetched variable shows the step's own updates of it, as TF1 shows them.

TF1's reference variables alias their buffer: a fetched `v` (or `v.value()`,
`tf.identity(v)`, `v.read_value()`) is copied out when the step ends, after the step's
in-place updates. `sess.run([train_op, global_step])` therefore prints the incremented step.
tensorflux reads such a fetch after every update of the variable in the step
(runtime/step_graph.py `_read_fetched_variables_last`), for both variable kinds.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_both

KINDS = [pytest.param(True, id="resource"), pytest.param(False, id="ref")]
FETCHES = {
    "variable": lambda v: v,
    "value": lambda v: v.value(),
    "read_value": lambda v: v.read_value(),
    "identity": lambda v: tf.identity(tf.identity(v)),
}


@pytest.mark.parametrize("use_resource", KINDS)
@pytest.mark.parametrize("fetch", sorted(FETCHES))
def test_a_fetched_variable_shows_the_update_of_its_run(use_resource, fetch):
    with tf.Graph().as_default():
        v = tf.Variable(0, use_resource=use_resource)
        up = v.assign_add(1).op
        got = FETCHES[fetch](v)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert [sess.run([up, got])[1] for _ in range(3)] == [1, 2, 3]
            assert sess.run(got) == 3  # no update in the run: the value
            # The same fetch twice, and beside the update's own result.
            a, b, c = sess.run([got, v.assign_add(5), got])
            assert a == c == 8 and b == 8


@pytest.mark.parametrize("use_resource", KINDS)
def test_a_read_the_update_waits_for_stays_its_snapshot(use_resource):
    """`w.assign(w * 2)`: a fresh read of w shows 20; the read the product took (and one
    the program ordered before an update by a control dependency) is the value that
    update used."""
    with tf.Graph().as_default():
        w = tf.Variable(10.0, use_resource=use_resource)
        used = w.read_value()
        doubled = tf.assign(w, used * 2.0).op
        fresh = w.read_value()
        v = tf.Variable([1.0, 2.0], use_resource=use_resource)
        r = v.read_value()
        with tf.control_dependencies([r]):
            add = tf.assign_add(v, [10.0, 10.0])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run([doubled, used, fresh])[1:] == [10.0, 20.0]
            got_r, got_add = sess.run([r, add])
            np.testing.assert_array_equal(got_r, [1.0, 2.0])
            np.testing.assert_array_equal(got_add, [11.0, 12.0])


@pytest.mark.parametrize("use_resource", KINDS)
def test_global_step_beside_train_op_and_the_hooks_read(use_resource):
    with tf.Graph().as_default():
        x = tf.constant(np.ones((2, 3), np.float32))
        w = tf.get_variable("w", [3, 1], initializer=tf.ones_initializer(),
                            use_resource=use_resource)
        step = tf.train.get_or_create_global_step()
        loss = tf.reduce_sum(tf.matmul(x, w))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        global_step_lib = importlib.import_module("tensorflux.train.global_step")
        hooks_read = global_step_lib._get_or_create_global_step_read()
        assert global_step_lib._get_or_create_global_step_read() is hooks_read
        assert hooks_read.name.startswith("global_step/")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = [sess.run([train, step, w, hooks_read])[1:] for _ in range(2)]
        assert [g[0] for g in got] == [1, 2]
        np.testing.assert_allclose(got[0][1], np.full((3, 1), 0.8, np.float32))
        # the hooks' read is the step before the run's increment (StopAtStepHook adds 1)
        assert [g[2] for g in got] == [0, 1]


def test_updates_in_a_cond_or_after_a_loop():
    """An update in a cond branch orders nothing (it may not run: the fetch must not be
    dead); one after a while loop in the step's own frame does."""
    with tf.Graph().as_default():
        c = tf.placeholder(tf.bool, [])
        cv = tf.Variable(0)
        maybe = tf.cond(c, lambda: cv.assign_add(5), lambda: tf.identity(cv))
        lv = tf.Variable(0)
        loop = tf.while_loop(lambda i: i < 3, lambda i: i + 1, [tf.constant(0)])
        with tf.control_dependencies([loop]):
            after_loop = lv.assign_add(7)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for pred in (True, False, True):
                assert sess.run([maybe, cv], {c: pred})[1] in (0, 5, 10)
            assert sess.run(cv) == 10
            assert sess.run([after_loop, lv])[1] == 7


def test_across_devices_and_partial_runs():
    config = tf.ConfigProto(device_count={"CPU": 2})
    with tf.Graph().as_default():
        with tf.device("/cpu:1"):
            v = tf.Variable(1.0)
        with tf.device("/cpu:0"):
            step = tf.assign_add(v, tf.constant(2.0) * 3.0).op
        p = tf.placeholder(tf.float32, [])
        later = tf.assign_add(v, p)
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run([step, v])[1] == 7.0
            # A partial run's fetch is not held for an update a later call may run.
            h = sess.partial_run_setup([v, later], [p])
            assert sess.partial_run(h, v) == 7.0
            assert sess.partial_run(h, later, feed_dict={p: 1.0}) == 8.0
            assert sess.run(v) == 8.0


@pytest.mark.oracle
def test_same_values_as_tensorflow():
    ours, theirs = run_both("""
v = tf.Variable(0)
up = v.assign_add(1).op
w = tf.Variable(10.0)
doubled = tf.assign(w, w * 2.0).op
fresh = w.read_value()
step = tf.train.get_or_create_global_step()
x = tf.constant(np.ones((2, 3), np.float32))
m = tf.get_variable("m", [3, 1], initializer=tf.ones_initializer())
train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(tf.matmul(x, m)),
                                                        global_step=step)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    out = [int(sess.run([up, v])[1]) for _ in range(2)]
    out += [int(sess.run([up, v.value()])[1]), int(sess.run([up, tf.identity(v)])[1])]
    out += [float(sess.run([doubled, fresh])[1])]
    out += [int(sess.run([train, step])[1]) for _ in range(2)]
    result = out
""", tf)
    assert ours == theirs == [1, 2, 3, 4, 20.0, 1, 2]
