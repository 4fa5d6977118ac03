"""slim.learning and tf.contrib.training's train ops: create_train_op's step against NumPy
(the loss returned is the one before the update; clipping, multipliers, update ops, the
numerics check), the Supervisor loop of `slim.learning.train` (number_of_steps, the final
checkpoint, resuming, summaries in the event file, OutOfRangeError ending it, argument
errors) and tf.contrib.training.train; one oracle case runs the same steps in TensorFlow."""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle

slim = tf.contrib.slim

_X = np.array([[1., 2.], [3., -1.], [0.5, 0.5]], np.float32)
_Y = np.array([[1.], [0.], [2.]], np.float32)
_W0 = np.array([[0.3], [-0.2]], np.float32)


def _model():
    w = tf.get_variable("w", initializer=tf.constant(_W0))
    loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(_X), w) - _Y))
    return w, loss


def _np_grad(w):
    return 2 * _X.T @ (_X @ w - _Y) / len(_X)


def _np_loss(w):
    return float(np.mean((_X @ w - _Y) ** 2))


@pytest.mark.parametrize("clip,multiplier", [(0, None), (0.5, None), (0, 3.0), (0.5, 3.0)])
def test_create_train_op_step_matches_numpy(clip, multiplier):
    with tf.Graph().as_default():
        w, loss = _model()
        train_op = slim.learning.create_train_op(
            loss, tf.train.GradientDescentOptimizer(0.1), clip_gradient_norm=clip,
            gradient_multipliers={"w": multiplier} if multiplier else None)
        assert train_op in tf.get_collection(tf.GraphKeys.TRAIN_OP)
        step = tf.train.get_global_step()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            expected_w = _W0.copy()
            for i in range(3):
                grad = _np_grad(expected_w) * (multiplier or 1.0)
                if clip and np.linalg.norm(grad) > clip:
                    grad = grad * clip / np.linalg.norm(grad)
                got_loss = sess.run(train_op)
                assert got_loss == pytest.approx(_np_loss(expected_w), rel=1e-5)
                expected_w = expected_w - 0.1 * grad
                np.testing.assert_allclose(sess.run(w), expected_w, rtol=1e-5)
                assert sess.run(step) == i + 1


def test_update_ops_run_and_global_step_none():
    with tf.Graph().as_default():
        _, loss = _model()
        counter = tf.Variable(0, name="counter")
        tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, tf.assign_add(counter, 1))
        train_op = slim.learning.create_train_op(
            loss, tf.train.GradientDescentOptimizer(0.1), global_step=None)
        assert tf.train.get_global_step() is None
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train_op)
            sess.run(train_op)
            assert sess.run(counter) == 2


def test_check_numerics_and_gradient_summaries():
    with tf.Graph().as_default():
        w = tf.get_variable("w", initializer=tf.constant([1.0]))
        loss = tf.reduce_sum(tf.log(w - 1.0))
        train_op = slim.learning.create_train_op(
            loss, tf.train.GradientDescentOptimizer(0.1), summarize_gradients=True)
        tags = {op.name for op in tf.get_collection(tf.GraphKeys.SUMMARIES)}
        assert any("w/gradient" in t for t in tags) and any("gradient_norm" in t for t in tags)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError, match="LossTensor is inf or nan"):
                sess.run(train_op)


def test_gradient_transform_errors():
    with tf.Graph().as_default():
        w, _ = _model()
        with pytest.raises(ValueError, match="is empty"):
            slim.learning.multiply_gradients([(tf.ones([2, 1]), w)], {})
        with pytest.raises(ValueError, match="must be a list"):
            slim.learning.multiply_gradients(((tf.ones([2, 1]), w),), {"w": 2.0})
        with pytest.raises(ValueError, match="`None` gradient"):
            slim.learning.multiply_gradients([(None, w)], {w: 2.0})
        clipped = slim.learning.clip_gradient_norms([(None, w)], 1.0)
        assert clipped == [(None, w)]


def _train(logdir, number_of_steps, **kwargs):
    with tf.Graph().as_default():
        w, loss = _model()
        tf.summary.scalar("loss", loss)
        train_op = slim.learning.create_train_op(loss, tf.train.GradientDescentOptimizer(0.1))
        final_loss = slim.learning.train(train_op, logdir, number_of_steps=number_of_steps,
                                         save_summaries_secs=1000, save_interval_secs=1000,
                                         **kwargs)
        return final_loss


def _event_tags(logdir):
    tags = {}
    for path in glob.glob(os.path.join(logdir, "events.out.tfevents.*")):
        for event in tf.train.summary_iterator(path):
            for value in event.summary.value:
                tags.setdefault(value.tag, []).append(event.step)
    return tags


def test_train_runs_number_of_steps_and_resumes(tmp_path):
    logdir = str(tmp_path)
    final_loss = _train(logdir, 4)
    w = _W0.copy()
    losses = []
    for _ in range(4):
        losses.append(_np_loss(w))
        w = w - 0.1 * _np_grad(w)
    assert final_loss == pytest.approx(losses[-1], rel=1e-5)
    assert tf.train.latest_checkpoint(logdir).endswith("model.ckpt-4")
    assert os.path.exists(os.path.join(logdir, "graph.pbtxt"))
    assert tf.train.load_variable(logdir, "w") == pytest.approx(w, rel=1e-5)
    assert tf.train.load_variable(logdir, "global_step") == 4
    tags = _event_tags(logdir)
    assert len(tags["loss"]) == 1  # the summary service ran once, when it started
    assert len(tags["global_step/sec"]) == 1
    # a second run restores step 4 and runs until the global step reaches 6
    _train(logdir, 6)
    assert tf.train.latest_checkpoint(logdir).endswith("model.ckpt-6")
    for _ in range(2):
        w = w - 0.1 * _np_grad(w)
    np.testing.assert_allclose(tf.train.load_variable(logdir, "w"), w, rtol=1e-5)


def test_train_without_logdir_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _train(None, 2) == pytest.approx(_np_loss(_W0 - 0.1 * _np_grad(_W0)), rel=1e-5)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("kwargs,message", [
    ({"number_of_steps": 0}, "positive number"),
    ({"number_of_steps": -3}, "positive number"),
    ({"logdir": None, "saver": "a saver"}, "saver because logdir=None"),
    ({"logdir": None, "summary_op": None}, "summary_op because logdir=None"),
    ({"logdir": None, "trace_every_n_steps": 2}, "trace_every_n_steps"),
    ({"train_op": None}, "train_op cannot be None"),
])
def test_train_argument_errors(tmp_path, kwargs, message):
    with tf.Graph().as_default():
        _, loss = _model()
        train_op = slim.learning.create_train_op(loss, tf.train.GradientDescentOptimizer(0.1))
        args = {"train_op": train_op, "logdir": str(tmp_path)}
        args.update(kwargs)
        with pytest.raises(ValueError, match=message):
            slim.learning.train(args.pop("train_op"), args.pop("logdir"), **args)


def test_train_stops_at_end_of_input(tmp_path):
    with tf.Graph().as_default():
        data = tf.train.limit_epochs(tf.constant(_X), num_epochs=3)
        w = tf.get_variable("w", initializer=tf.constant(_W0))
        loss = tf.reduce_mean(tf.square(tf.matmul(data, w) - _Y))
        train_op = slim.learning.create_train_op(loss, tf.train.GradientDescentOptimizer(0.1))
        slim.learning.train(train_op, str(tmp_path), save_summaries_secs=1000,
                            save_interval_secs=1000)
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-3")


def test_train_step_fn_and_init_fn(tmp_path):
    calls = []

    def train_step_fn(sess, train_op, global_step, kwargs):
        loss, should_stop = slim.learning.train_step(sess, train_op, global_step, kwargs)
        calls.append(int(sess.run(global_step)))
        return loss, should_stop

    with tf.Graph().as_default():
        w, loss = _model()
        train_op = slim.learning.create_train_op(loss, tf.train.GradientDescentOptimizer(0.1))
        init_fn = slim.assign_from_values_fn({"w": np.zeros((2, 1), np.float32)})
        slim.learning.train(train_op, str(tmp_path), train_step_fn=train_step_fn,
                            number_of_steps=3, init_fn=init_fn, log_every_n_steps=0,
                            save_summaries_secs=1000, save_interval_secs=1000)
    assert calls == [1, 2, 3]
    w = np.zeros((2, 1), np.float32)
    for _ in range(3):
        w = w - 0.1 * _np_grad(w)
    np.testing.assert_allclose(tf.train.load_variable(str(tmp_path), "w"), w, rtol=1e-5)


def test_contrib_training_train_with_stop_hook(tmp_path):
    with tf.Graph().as_default():
        _, loss = _model()
        train_op = tf.contrib.training.create_train_op(
            loss, tf.train.GradientDescentOptimizer(0.1),
            transform_grads_fn=tf.contrib.training.clip_gradient_norms_fn(0.1))
        last = tf.contrib.training.train(train_op, str(tmp_path),
                                         hooks=[tf.train.StopAtStepHook(last_step=3)],
                                         save_summaries_steps=None, save_checkpoint_secs=None)
        assert last is not None
    with pytest.raises(ValueError, match="logdir cannot be None"):
        tf.contrib.training.train(train_op, None)


_ORACLE_STEPS = """
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
x = np.array(__X__, np.float32); y = np.array(__Y__, np.float32)
w = tf.get_variable("w", initializer=tf.constant(np.array(__W0__, np.float32)))
step = tf.train.get_or_create_global_step()
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
opt = tf.train.MomentumOptimizer(0.05, 0.9)
grads = opt.compute_gradients(loss, [w])
grads = [(tf.clip_by_norm(g * 2.0, 0.7), v) for g, v in grads]
apply = opt.apply_gradients(grads, global_step=step)
with tf.control_dependencies([apply]):
    train_op = tf.identity(tf.check_numerics(loss, "LossTensor is inf or nan"))
with tf.Session() as s:
    s.run(tf.global_variables_initializer())
    losses = [float(s.run(train_op)) for _ in range(4)]
    result = {"losses": losses, "w": s.run(w).tolist(), "step": int(s.run(step))}
"""


@pytest.mark.oracle
def test_create_train_op_matches_tensorflow():
    code = _ORACLE_STEPS.replace("__X__", repr(_X.tolist())).replace(
        "__Y__", repr(_Y.tolist())).replace("__W0__", repr(_W0.tolist()))
    want = oracle.run_tf(code)
    with tf.Graph().as_default():
        w, loss = _model()
        train_op = slim.learning.create_train_op(
            loss, tf.train.MomentumOptimizer(0.05, 0.9), clip_gradient_norm=0.7,
            gradient_multipliers={w: 2.0})
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            losses = [float(sess.run(train_op)) for _ in range(4)]
            np.testing.assert_allclose(losses, want["losses"], rtol=1e-5)
            np.testing.assert_allclose(sess.run(w), want["w"], rtol=1e-5)
            assert sess.run(tf.train.get_global_step()) == want["step"]


def test_trace_every_n_steps_names_traces_by_the_step_after(tmp_path):
    # as TF + tf_slim: steps 0 and 2 are traced, named after the incremented step
    _train(str(tmp_path), 4, trace_every_n_steps=2)
    traces = sorted(p for p in os.listdir(tmp_path) if p.startswith("tf_trace-"))
    assert traces == ["tf_trace-1.json", "tf_trace-3.json"]
