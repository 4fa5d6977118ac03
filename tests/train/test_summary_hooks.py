"""SummarySaverHook, ProfilerHook, StepCounterHook's summary, GlobalStepWaiterHook, and the
summary hooks MonitoredTrainingSession adds (the same events as TensorFlow's)."""

from __future__ import annotations

import glob
import json
import os

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle


@pytest.fixture(autouse=True)
def _close_cached_writers():
    yield
    tf.summary.FileWriterCache.clear()


def _model():
    x = tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
    step = tf.train.get_or_create_global_step()
    return tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step), loss


def _events(logdir) -> list:
    paths = sorted(glob.glob(os.path.join(str(logdir), "events.out.tfevents.*")))
    return [e for p in paths for e in tf.train.summary_iterator(p)]


def _train(hooks, steps):
    with tf.train.SingularMonitoredSession(hooks=hooks) as sess:
        train_op = tf.get_collection(tf.GraphKeys.TRAIN_OP)[0]
        for _ in range(steps):
            sess.run(train_op)


def _model_with_train_op():
    train_op, loss = _model()
    tf.add_to_collection(tf.GraphKeys.TRAIN_OP, train_op)
    return loss


def test_summary_saver_hook_writes_every_n_steps(tmp_path):
    with tf.Graph().as_default():
        loss = _model_with_train_op()
        summary = tf.summary.scalar("loss", loss)
        writer = tf.summary.FileWriter(str(tmp_path))
        _train([tf.train.SummarySaverHook(save_steps=3, summary_writer=writer,
                                          summary_op=summary)], 7)
        writer.close()
    events = _events(tmp_path)
    assert [(e.step, e.session_log.status) for e in events if e.HasField("session_log")] == \
        [(1, tf.SessionLog.START)]
    assert [e.step for e in events if e.HasField("summary")] == [1, 4, 7]
    assert events[-1].summary.value[0].tag == "loss"


def test_summary_saver_hook_arguments():
    with pytest.raises(ValueError, match="Exactly one of scaffold or summary_op"):
        tf.train.SummarySaverHook(save_steps=1)
    with pytest.raises(ValueError, match="Either every_secs or every_steps"):
        tf.train.SummarySaverHook(summary_op=tf.constant(""))


def test_step_counter_hook_writes_global_step_per_sec(tmp_path):
    with tf.Graph().as_default():
        _model_with_train_op()
        hook = tf.train.StepCounterHook(every_n_steps=2, output_dir=str(tmp_path))
        _train([hook], 5)
        tf.summary.FileWriterCache.get(str(tmp_path)).flush()
    rates = [(e.step, e.summary.value[0]) for e in _events(tmp_path) if e.HasField("summary")]
    assert [(step, v.tag) for step, v in rates] == [(3, "global_step/sec"),
                                                    (5, "global_step/sec")]
    assert [v.simple_value for _, v in rates] == pytest.approx(hook.rates, rel=1e-6)


def test_profiler_hook_writes_chrome_traces_and_run_metadata(tmp_path):
    with tf.Graph().as_default():
        _model_with_train_op()
        _train([tf.train.ProfilerHook(save_steps=2, output_dir=str(tmp_path))], 5)
        tf.summary.FileWriterCache.get(str(tmp_path)).flush()
    assert sorted(os.listdir(tmp_path))[1:] == ["timeline-2.json", "timeline-4.json"]
    trace = json.loads((tmp_path / "timeline-2.json").read_text())
    assert any(e.get("cat") == "Op" for e in trace["traceEvents"])
    tagged = [e.tagged_run_metadata for e in _events(tmp_path)
              if e.HasField("tagged_run_metadata")]
    assert [t.tag for t in tagged] == ["step_2", "step_4"]
    assert tf.RunMetadata.FromString(tagged[0].run_metadata).step_stats.dev_stats


def test_global_step_waiter_hook():
    with tf.Graph().as_default():
        _model_with_train_op()
        _train([tf.train.GlobalStepWaiterHook(0)], 1)
        set_step = tf.assign(tf.train.get_global_step(), 10)
        hook = tf.train.GlobalStepWaiterHook(10)
        hook.begin()
        with tf.train.SingularMonitoredSession() as sess:
            sess.run(set_step)
            assert hook.before_run(tf.train.SessionRunContext(None, sess.raw_session())) is None
            assert hook._worker_is_started


@pytest.mark.oracle
def test_monitored_training_session_writes_tensorflows_events():
    program = r"""
import tempfile, glob, os
d = tempfile.mkdtemp()
x = tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
tf.summary.scalar("loss", loss)
tf.summary.histogram("w", w)
step = tf.train.get_or_create_global_step()
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
with tf.train.MonitoredTrainingSession(checkpoint_dir=d, save_summaries_steps=2,
        log_step_count_steps=3, save_checkpoint_steps=4,
        hooks=[tf.train.StopAtStepHook(last_step=7)]) as sess:
    while not sess.should_stop():
        sess.run(train)
events = []
for f in sorted(glob.glob(os.path.join(d, "events.out.tfevents.*"))):
    for e in tf.train.summary_iterator(f):
        kind = e.WhichOneof("what")
        tags = [v.tag for v in e.summary.value] if kind == "summary" else []
        status = e.session_log.status if kind == "session_log" else None
        events.append([kind, e.step, tags, status])
result = events
"""
    try:
        ours, theirs = oracle.run_both(program, tf)
    finally:
        tf.summary.FileWriterCache.clear()
    # TensorFlow's last event (the final checkpoint's session log, added after the last
    # flush) is still in its writer's buffer when the program reads the file; ours may be
    # on disk already.
    assert ours[:len(theirs)] == theirs
    assert ours[len(theirs):] in ([], [["session_log", 7, [], tf.SessionLog.CHECKPOINT]])
    assert ["summary", 7, ["loss", "w_1"], None] in theirs
