"""tf.train.Supervisor: managed sessions that initialize or restore, the checkpoint
service, errors from the block, queue runners and loops, a chief and a worker on a
cluster."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import tensorflux as tf
from tests.distributed.conftest import Cluster
from tests.threads_util import wait_until

pytestmark = pytest.mark.timeout(60)


def _model():
    """A regression with a global step; returns (train_op, w, global_step)."""
    x = tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
    step = tf.train.get_or_create_global_step()
    return tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step), w, step


def test_managed_session_initializes_checkpoints_and_restores(tmp_path):
    logdir = str(tmp_path / "logs")
    with tf.Graph().as_default() as g:
        train_op, w, step = _model()
        sv = tf.train.Supervisor(logdir=logdir, save_model_secs=3600)
        assert g.finalized and sv.is_chief and sv.global_step is step
        assert sv.save_path == os.path.join(logdir, "model.ckpt")
        with sv.managed_session() as sess:
            # The checkpoint service saves once when it starts, then every hour.
            wait_until(lambda: tf.train.latest_checkpoint(logdir) is not None)
            assert tf.train.latest_checkpoint(logdir).endswith("model.ckpt-0")
            for _ in range(5):
                sess.run(train_op)
            trained = sess.run(w)
            sv.saver.save(sess, sv.save_path, global_step=sv.global_step)
            assert not sv.should_stop()
        assert sv.should_stop() and sess._closed
    assert os.path.exists(os.path.join(logdir, "graph.pbtxt"))
    with tf.Graph().as_default():
        train_op, w, step = _model()
        sv = tf.train.Supervisor(logdir=logdir, save_model_secs=0)
        with sv.managed_session() as sess:  # restored: the init op does not run
            assert sess.run(step) == 5
            np.testing.assert_array_equal(sess.run(w), trained)


def test_errors_from_the_block_are_raised_after_closing_and_out_of_range_is_quiet():
    with tf.Graph().as_default():
        train_op, _, step = _model()
        sv = tf.train.Supervisor(logdir=None)
        with pytest.raises(ValueError, match="boom"):
            with sv.managed_session() as sess:
                sess.run(train_op)
                raise ValueError("boom")
        assert sess._closed
        with sv.managed_session() as sess:  # a new session: the stop was cleared
            assert not sv.should_stop()
            assert sess.run(step) == 0  # initialized again: no logdir, nothing restored
            raise tf.errors.OutOfRangeError(None, None, "input exhausted")
        assert sv.should_stop()


def test_queue_runners_loops_and_stop_requests():
    with tf.Graph().as_default():
        queue = tf.FIFOQueue(10, tf.int32, shapes=[[]])
        counter = tf.Variable(0, name="counter")
        tf.train.add_queue_runner(tf.train.QueueRunner(queue, [queue.enqueue(
            counter.assign_add(1))]))
        dequeue = queue.dequeue()
        sv = tf.train.Supervisor(logdir=None)
        ticks = []
        with sv.managed_session() as sess:
            got = [sess.run(dequeue) for _ in range(3)]
            sv.loop(0.01, ticks.append, args=(1,))
            wait_until(lambda: len(ticks) >= 2)
            sv.request_stop()
            assert sv.should_stop()
        assert got == sorted(got) and len(set(got)) == 3
        assert not any(t.name.startswith("QueueRunnerThread") and t.is_alive()
                       for t in threading.enumerate())


def test_defaults_summaries_and_errors(tmp_path):
    class Writer:
        def __init__(self):
            self.summaries, self.closed = [], False

        def add_summary(self, summary, step):
            self.summaries.append((summary, step))

        def add_session_log(self, log, step=None):
            self.summaries.append((log.status, step))

        def add_graph(self, graph):
            self.summaries.append(("graph", None))

        def close(self):
            self.closed = True

    assert tf.train.Supervisor.USE_DEFAULT == 0
    with tf.Graph().as_default():
        _, _, step = _model()
        worker = tf.train.Supervisor(is_chief=False, logdir=str(tmp_path))
        assert worker.save_path is None and worker.summary_writer is None
        assert isinstance(worker.saver, tf.train.Saver)
        assert worker.ready_op is tf.get_collection(tf.GraphKeys.READY_OP)[0]
        assert worker.init_op is tf.get_collection(tf.GraphKeys.INIT_OP)[0]
        with pytest.raises(RuntimeError, match="Only chief supervisor can start standard "
                           "services"):
            worker.start_standard_services(None)
    with tf.Graph().as_default():
        _model()
        writer = Writer()
        sv = tf.train.Supervisor(logdir=str(tmp_path), summary_writer=writer,
                                 summary_op=None, save_model_secs=0, saver=None)
        assert sv.saver is None and sv.summary_op is None
        with sv.managed_session() as sess:
            sv.summary_computed(sess, b"summary")
        # The graph, START, then (in either order) the summary and the step-rate
        # service's first record (it runs at once), and STOP without a step.
        events = writer.summaries
        assert events[:2] == [("graph", None), (tf.SessionLog.START, 0)]
        assert events[-1] == (tf.SessionLog.STOP, None) and writer.closed
        rates = [e for e in events[2:-1] if e[0] != b"summary"]
        assert (b"summary", 0) in events and len(events) == 5
        assert rates[0][0].value[0].tag == "global_step/sec" and rates[0][1] == 0
    with tf.Graph().as_default():
        _model()
        sv = tf.train.Supervisor(logdir=None)
        with sv.managed_session() as sess:
            with pytest.raises(RuntimeError, match="^Writing a summary requires a summary "
                               "writer.$"):
                sv.summary_computed(sess, b"summary")


def test_chief_and_worker_on_a_cluster():
    cluster = Cluster(2, 1)
    seen, failures = [], []

    def graph(task):
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(4.0, name="v")
            step = tf.train.get_or_create_global_step()
        with tf.device(f"/job:worker/task:{task}"):
            inc = tf.group(v.assign_add(1.0), step.assign_add(1))
        return v, inc

    def worker():
        try:
            with tf.Graph().as_default():
                v, inc = graph(1)
                sv = tf.train.Supervisor(is_chief=False, recovery_wait_secs=0.05)
                with sv.managed_session(cluster.workers[1].target) as sess:
                    sess.run(inc)
                    seen.append(sess.run(v))
        except BaseException as e:  # noqa: BLE001 - re-raised below
            failures.append(e)

    try:
        thread = threading.Thread(target=worker, daemon=True)
        thread.start()
        with tf.Graph().as_default():
            v, _ = graph(0)
            sv = tf.train.Supervisor(is_chief=True)
            with sv.managed_session(cluster.workers[0].target) as sess:
                thread.join(30)
                final = sess.run(v)
    finally:
        cluster.stop()
    assert not failures and not thread.is_alive()
    assert seen == [5.0] and final == 5.0


def _events(logdir):
    files = sorted(f for f in os.listdir(logdir) if f.startswith("events.out.tfevents"))
    return [e for f in files for e in tf.train.summary_iterator(os.path.join(logdir, f))]


def test_chief_writes_summaries_step_rate_checkpoint_logs_and_the_graph(tmp_path):
    """The chief's standard services as TF's: the graph and START at the session's start,
    the summary op's value and `global_step/sec` every save_summaries_secs (the first at
    once), a CHECKPOINT log with each timed checkpoint, STOP when the block ends."""
    logdir = str(tmp_path)
    with tf.Graph().as_default():
        train_op, w, step = _model()
        tf.summary.scalar("w0", w[0, 0])
        sv = tf.train.Supervisor(logdir=logdir, save_summaries_secs=3600,
                                 save_model_secs=3600)
        assert isinstance(sv.summary_writer, tf.summary.FileWriter)
        with sv.managed_session() as sess:
            for _ in range(3):
                sess.run(train_op)
            sv.summary_writer.flush()

            def services_wrote():
                sv.summary_writer.flush()
                tags = {v.tag for e in _events(logdir) for v in e.summary.value}
                logs = {e.session_log.status for e in _events(logdir)
                        if e.HasField("session_log")}
                return {"w0", "global_step/sec"} <= tags and tf.SessionLog.CHECKPOINT in logs
            wait_until(services_wrote, timeout=20)
    events = _events(logdir)
    kinds = [e.WhichOneof("what") for e in events]
    assert kinds[0] == "file_version" and "graph_def" in kinds
    logs = [e.session_log for e in events if e.HasField("session_log")]
    assert logs[0].status == tf.SessionLog.START and logs[-1].status == tf.SessionLog.STOP
    checkpoint = [s for s in logs if s.status == tf.SessionLog.CHECKPOINT][0]
    assert checkpoint.checkpoint_path == os.path.join(logdir, "model.ckpt")
    w0 = [e for e in events for v in e.summary.value if v.tag == "w0"]
    assert w0 and all(e.step in (0, 1, 2, 3) for e in w0)
    assert os.path.exists(os.path.join(logdir, "graph.pbtxt"))


def test_no_logdir_no_writer_and_non_chief_writes_nothing(tmp_path):
    with tf.Graph().as_default():
        _model()
        assert tf.train.Supervisor(logdir=None).summary_writer is None
        worker = tf.train.Supervisor(logdir=str(tmp_path), is_chief=False)
        assert worker.summary_writer is None
    assert not os.listdir(tmp_path)
