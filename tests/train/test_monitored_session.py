"""MonitoredSession, SingularMonitoredSession, MonitoredTrainingSession, Scaffold, hooks."""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import errors


def _model():
    """A tiny regression with a global step; returns (train_op, loss, global_step)."""
    x = tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
    step = tf.train.get_or_create_global_step()
    return tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step), loss, step


class _Recorder(tf.train.SessionRunHook):
    """Records the calls it gets; asks for `fetch` on every run."""

    def __init__(self, fetch=None, feeds=None):
        self.calls, self.results, self.sessions = [], [], []
        self._fetch, self._feeds = fetch, feeds

    def begin(self):
        self.calls.append("begin")

    def after_create_session(self, session, coord):
        self.calls.append("after_create_session")
        self.sessions.append(session)
        assert coord is not None

    def before_run(self, run_context):
        self.calls.append("before_run")
        assert isinstance(run_context.original_args, tf.train.SessionRunArgs)
        if self._fetch is not None or self._feeds:
            return tf.train.SessionRunArgs(self._fetch, feed_dict=self._feeds)
        return None

    def after_run(self, run_context, run_values):
        self.calls.append("after_run")
        self.results.append(run_values.results)

    def end(self, session):
        self.calls.append("end")


def test_hook_protocol_order_fetches_and_feeds():
    with tf.Graph().as_default():
        train_op, loss, step = _model()
        p = tf.placeholder(tf.float32, [], name="p")
        doubled = p * 2
        hook = _Recorder(fetch=step, feeds={p: 21.0})
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            assert tf.get_default_graph().finalized
            for _ in range(2):
                assert sess.run(doubled) == 42.0
            assert not sess.should_stop()
        assert not tf.get_default_graph().finalized  # unfinalized again on close
    assert hook.calls == ["begin", "after_create_session", "before_run", "after_run",
                          "before_run", "after_run", "end"]
    assert hook.results == [0, 0]


def test_feed_conflict_between_hook_and_user_is_an_error():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [])
        q = p * 1
        _model()
        with tf.train.MonitoredSession(hooks=[_Recorder(feeds={p: 1.0})]) as sess:
            with pytest.raises(RuntimeError, match="Same tensor is fed by a SessionRunHook and "
                               "user"):
                sess.run(q, {p: 2.0})


def test_training_session_saves_restores_and_stops(tmp_path):
    directory = str(tmp_path)
    for expected_start, last in ((0, 10), (10, 15)):
        with tf.Graph().as_default():
            train_op, _, step = _model()
            rec = _Recorder(fetch=step)
            hooks = [tf.train.StopAtStepHook(last_step=last), rec]
            with tf.train.MonitoredTrainingSession(checkpoint_dir=directory, hooks=hooks,
                                                   save_checkpoint_steps=4) as sess:
                while not sess.should_stop():
                    sess.run(train_op)
            # restored from the last checkpoint (the fetch shows the first run's increment)
            assert rec.results[0] == expected_start + 1
    assert tf.train.load_variable(directory, "global_step") == 15
    state = tf.train.get_checkpoint_state(directory)
    # The Scaffold's default saver keeps 5 checkpoints, across the restart too.
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
        f"model.ckpt-{i}" for i in (4, 8, 10, 14, 15)]
    assert not tf.train.checkpoint_exists(os.path.join(directory, "model.ckpt-0"))
    assert os.path.basename(state.model_checkpoint_path) == "model.ckpt-15"
    assert os.path.exists(os.path.join(directory, "graph.pbtxt"))
    assert os.path.exists(state.model_checkpoint_path + ".meta")


class _Preempt(tf.train.SessionRunHook):
    """Raises `error_class` once, after the run that reaches step `at`."""

    def __init__(self, error_class, step_tensor, at):
        self.error_class, self.step, self.at, self.fired = error_class, step_tensor, at, False

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(self.step)

    def after_run(self, run_context, run_values):
        if not self.fired and run_values.results >= self.at:  # (read after the update)
            self.fired = True
            raise self.error_class(None, None, "worker preempted")


@pytest.mark.parametrize("error_class", [errors.AbortedError, errors.UnavailableError])
def test_preemption_recreates_the_session_and_restores(tmp_path, error_class):
    with tf.Graph().as_default():
        train_op, _, step = _model()
        rec = _Recorder(fetch=step)
        hooks = [tf.train.StopAtStepHook(last_step=12), _Preempt(error_class, step, at=7), rec]
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), hooks=hooks,
                                               save_checkpoint_steps=5,
                                               log_step_count_steps=0) as sess:
            steps = []
            while not sess.should_stop():
                steps.append(sess.run([train_op, step])[1])
    assert rec.calls.count("after_create_session") == 2
    assert rec.sessions[0] is not rec.sessions[1] and rec.sessions[0]._closed
    # The run that took the step from 6 to 7 failed (the recorder, after the failing hook,
    # never saw it); the new session restored the checkpoint of step 5 (saved by the
    # CheckpointSaverHook), so training goes on from there.
    # A fetched global step shows the run's own increment, as in TF1.
    assert rec.results[:8] == [1, 2, 3, 4, 5, 6, 6, 7]
    assert tf.train.load_variable(str(tmp_path), "global_step") == 12


def test_other_errors_propagate_and_skip_end():
    class Boom(tf.train.SessionRunHook):
        def after_run(self, run_context, run_values):
            raise ValueError("boom")

    with tf.Graph().as_default():
        train_op, _, _ = _model()
        rec = _Recorder()
        with pytest.raises(ValueError, match="boom"):
            with tf.train.MonitoredSession(hooks=[rec, Boom()]) as sess:
                sess.run(train_op)
    assert "end" not in rec.calls


def test_out_of_range_ends_the_with_block_quietly():
    with tf.Graph().as_default():
        train_op, _, _ = _model()
        rec = _Recorder()
        with tf.train.MonitoredSession(hooks=[rec]) as sess:
            sess.run(train_op)
            raise errors.OutOfRangeError(None, None, "input exhausted")
    assert rec.calls[-1] == "end"


def test_nan_tensor_hook():
    with tf.Graph().as_default():
        _model()
        nan = tf.constant(float("nan"))
        with tf.train.MonitoredSession(hooks=[tf.train.NanTensorHook(nan)]) as sess:
            with pytest.raises(tf.train.NanLossDuringTrainingError, match="NaN loss during "
                               "training."):
                sess.run(nan)
        with tf.train.MonitoredSession(
                hooks=[tf.train.NanTensorHook(nan, fail_on_nan_loss=False)]) as sess:
            sess.run(nan)
            assert sess.should_stop()


def test_logging_and_step_counter_hooks(caplog):
    with tf.Graph().as_default():
        train_op, loss, step = _model()
        counter = tf.train.StepCounterHook(every_n_steps=2)
        hooks = [tf.train.LoggingTensorHook({"loss": loss, "step": step}, every_n_iter=3),
                 counter, tf.train.StopAtStepHook(num_steps=7)]
        with caplog.at_level(logging.INFO, logger="tensorflux"):
            with tf.train.SingularMonitoredSession(hooks=hooks) as sess:
                assert isinstance(sess.raw_session(), tf.Session)
                n = 0
                while not sess.should_stop():
                    sess.run(train_op)
                    n += 1
    assert n == 7
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("loss = ")]
    # TF1's lines: the fetched step variable shows the run's own increment
    assert logged[0] == "loss = 1.0, step = 1"
    assert len(logged) == 3 and ", step = 4" in logged[1]
    assert len(counter.rates) == 3 and all(r > 0 for r in counter.rates)


def test_hook_argument_errors_are_tensorflows():
    with pytest.raises(ValueError, match="One of num_steps or last_step must be specified."):
        tf.train.StopAtStepHook()
    with pytest.raises(ValueError, match="Only one of num_steps or last_step can be specified."):
        tf.train.StopAtStepHook(1, 2)
    with pytest.raises(ValueError, match="exactly one of every_n_iter and every_n_secs"):
        tf.train.LoggingTensorHook(["a"])
    with pytest.raises(ValueError, match="You cannot provide both saver and scaffold."):
        tf.train.CheckpointSaverHook("/tmp", save_steps=1, saver=object(),
                                     scaffold=tf.train.Scaffold())
    with pytest.raises(ValueError, match="Either every_secs or every_steps should be provided."):
        tf.train.CheckpointSaverHook("/tmp")
    with tf.Graph().as_default():
        tf.Variable(1.0)
        with pytest.raises(RuntimeError, match="Global step should be created to use "
                           "StopAtStepHook."):
            tf.train.MonitoredSession(hooks=[tf.train.StopAtStepHook(num_steps=1)])


def test_scaffold_init_fn_feed_and_readiness():
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        u = tf.Variable(5.0, name="u")
        called = []

        def init_fn(scaffold, sess):
            called.append(scaffold)
            sess.run(u.initializer)

        scaffold = tf.train.Scaffold(init_op=v.initializer, init_fn=init_fn)
        with tf.train.MonitoredSession(
                tf.train.ChiefSessionCreator(scaffold=scaffold)) as sess:
            assert sess.run(u) == 5.0 and called == [scaffold]
    with tf.Graph().as_default():
        tf.Variable(1.0, name="v")
        w = tf.Variable(2.0, name="never")
        scaffold = tf.train.Scaffold(init_op=tf.no_op())
        with pytest.raises(RuntimeError, match="Init operations did not make model ready.*"
                           "Variables not initialized: v, never"):
            tf.train.MonitoredSession(tf.train.ChiefSessionCreator(scaffold=scaffold))
        del w


def test_worker_waits_for_a_ready_model_and_times_out():
    with tf.Graph().as_default():
        tf.Variable(1.0)
        creator = tf.train.WorkerSessionCreator(max_wait_secs=0.2)
        with pytest.raises(errors.DeadlineExceededError, match="Session was not ready after "
                           "waiting 0.2 secs."):
            tf.train.MonitoredSession(session_creator=creator)


def test_checkpoint_saver_listener_and_run_step_fn(tmp_path):
    class Listener(tf.train.CheckpointSaverListener):
        def __init__(self):
            self.saved = []

        def after_save(self, session, global_step_value):
            self.saved.append(global_step_value)
            return global_step_value >= 4  # ask to stop

    with tf.Graph().as_default():
        train_op, _, step = _model()
        listener = Listener()
        hook = tf.train.CheckpointSaverHook(str(tmp_path), save_steps=2, listeners=[listener])
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            while not sess.should_stop():
                sess.run_step_fn(lambda step_context: step_context.run_with_hooks(train_op))
        assert listener.saved == [0, 2, 4]
        with tf.train.MonitoredSession() as sess:
            sess.run_step_fn(lambda step_context: step_context.request_stop())
            assert sess.should_stop()
            with pytest.raises(ValueError, match="`step_fn` may either have one "
                               "`step_context` argument"):
                sess.run_step_fn(lambda a, b: None)


@pytest.mark.skipif(not hasattr(tf.train, "QueueRunner"), reason="no queue runners yet")
def test_queue_runners_are_started_and_stopped():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(10, tf.float32)
        tf.train.add_queue_runner(tf.train.QueueRunner(q, [q.enqueue(tf.constant(2.0))]))
        x = q.dequeue()
        _, _, step = _model()
        with tf.train.MonitoredSession() as sess:
            assert [sess.run(x) for _ in range(3)] == [2.0, 2.0, 2.0]
