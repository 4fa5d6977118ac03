"""tf.train.SessionManager: prepare, recover and wait for sessions, locally and on an
in-process cluster (a chief initializes, a worker waits for it).

The argument errors and outcomes of the local cases are compared with TensorFlow 2.21
(`tf.compat.v1.train.SessionManager`) by running one probe under both.
"""

from __future__ import annotations

import logging
import threading

import numpy as np
import pytest

import tensorflux as tf
from tests.distributed.conftest import Cluster
from tests.oracle import run_tf
from tests.threads_util import wait_until

pytestmark = pytest.mark.timeout(60)


def _model():
    """Two global variables and a local one initialized from them."""
    a = tf.Variable(3.0, name="a")
    b = tf.Variable([1.0, 2.0], name="b")
    local = tf.Variable(0.0, name="local", collections=[tf.GraphKeys.LOCAL_VARIABLES])
    return a, b, local


def test_prepare_session_initializes_runs_local_init_and_checks_readiness():
    with tf.Graph().as_default():
        a, b, local = _model()
        local_init = local.assign(a + 1.0)
        p = tf.placeholder(tf.float32, [])
        init = tf.group(a.initializer, b.initializer)
        feed_init = tf.group(a.assign(p), b.initializer)
        sm = tf.train.SessionManager(
            local_init_op=local_init, ready_op=tf.report_uninitialized_variables(),
            ready_for_local_init_op=tf.report_uninitialized_variables(tf.global_variables()))
        sess = sm.prepare_session("", init_op=init)
        assert sess.run([a, local]) == [3.0, 4.0]
        sess.close()
        called = []
        sess = sm.prepare_session("", init_op=feed_init, init_feed_dict={p: 7.0},
                                  init_fn=called.append)
        assert sess.run(local) == 8.0 and called == [sess]
        sess.close()
        # b is never initialized: local init cannot start.
        with pytest.raises(RuntimeError, match=r"^Init operations did not make model ready "
                           r"for local_init.  Init op: a/Assign, init fn: None, error: "
                           r"Variables not initialized: b$"):
            sm.prepare_session("", init_op=a.initializer)


def test_prepare_session_restores_the_latest_checkpoint(tmp_path):
    with tf.Graph().as_default():
        a, b, _ = _model()
        saver = tf.train.Saver([a, b])
        sm = tf.train.SessionManager(ready_op=tf.report_uninitialized_variables([a, b]))
        sess = sm.prepare_session("", init_op=tf.global_variables_initializer())
        sess.run(a.assign(11.0))
        path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=1)
        sess.close()
        # Restored, so the init op (which would reset a to 3) does not run.
        init_runs = tf.global_variables_initializer()
        sess = sm.prepare_session("", init_op=init_runs, saver=saver,
                                  checkpoint_dir=str(tmp_path))
        assert sess.run(a) == 11.0
        sess.close()
        sess, restored = sm.recover_session("", saver=saver,
                                            checkpoint_filename_with_path=path)
        assert restored and sess.run(a) == 11.0
        sess.close()
        sess, restored = sm.recover_session("", saver=saver,
                                            checkpoint_dir=str(tmp_path / "none"))
        assert not restored
        sess.close()
        with pytest.raises(ValueError, match="^Can not provide both checkpoint_dir and "
                           "checkpoint_filename_with_path.$"):
            sm.prepare_session("", saver=saver, checkpoint_dir=str(tmp_path),
                               checkpoint_filename_with_path=path)


def test_wait_for_checkpoint_gives_up_after_max_wait(tmp_path):
    with tf.Graph().as_default():
        a, _, _ = _model()
        sm = tf.train.SessionManager(recovery_wait_secs=0.05)
        sess, restored = sm.recover_session("", saver=tf.train.Saver([a]),
                                            checkpoint_dir=str(tmp_path),
                                            wait_for_checkpoint=True, max_wait_secs=0.2)
        assert not restored
        sess.close()


def test_wait_for_session_times_out_with_deadline_exceeded(caplog):
    with tf.Graph().as_default():
        tf.Variable(1.0, name="v")
        # Each try is a new local session, whose variables nobody initializes.
        sm = tf.train.SessionManager(ready_op=tf.report_uninitialized_variables(),
                                     recovery_wait_secs=0.05)
        with caplog.at_level(logging.INFO, logger="tensorflux"):
            with pytest.raises(tf.errors.DeadlineExceededError,
                               match="^Session was not ready after waiting 0.3 secs.$"):
                sm.wait_for_session("", max_wait_secs=0.3)
        waits = [r for r in caplog.records if "Waiting for model to be ready" in r.message]
        assert waits and "Variables not initialized: v" in waits[0].message


# ---- on a cluster: the chief initializes, a worker waits ---------------------------------


def _cluster_model(task):
    with tf.device("/job:ps/task:0"):
        a = tf.Variable(3.0, name="a")
        step = tf.train.get_or_create_global_step()
    with tf.device(f"/job:worker/task:{task}"):
        local = tf.Variable(0.0, name="local", collections=[tf.GraphKeys.LOCAL_VARIABLES])
        local_init = local.assign(a * 2.0)
    return a, step, local, local_init


def test_worker_waits_in_wait_for_session_until_the_chief_is_done(caplog):
    cluster = Cluster(2, 1)
    got, failures = {}, []

    def worker():
        try:
            with tf.Graph().as_default():
                a, step, local, local_init = _cluster_model(1)
                sm = tf.train.SessionManager(
                    local_init_op=local_init, ready_op=tf.report_uninitialized_variables(),
                    ready_for_local_init_op=tf.report_uninitialized_variables(
                        tf.global_variables()), recovery_wait_secs=0.05)
                sess = sm.wait_for_session(cluster.workers[1].target, max_wait_secs=30)
                got["values"] = sess.run([a, step, local])
                sess.close()
        except BaseException as e:  # noqa: BLE001 - re-raised below
            failures.append(e)

    try:
        with caplog.at_level(logging.INFO, logger="tensorflux"):
            thread = threading.Thread(target=worker, daemon=True)
            thread.start()
            # The worker has found the model not ready before the chief initializes it.
            wait_until(lambda: any("Waiting for model to be ready" in r.message
                                   for r in caplog.records), timeout=20)
            with tf.Graph().as_default():
                a, step, _, local_init = _cluster_model(0)
                sm = tf.train.SessionManager(local_init_op=local_init)
                sess = sm.prepare_session(cluster.workers[0].target,
                                          init_op=tf.global_variables_initializer())
                thread.join(30)
                sess.close()
    finally:
        cluster.stop()
    assert not failures and not thread.is_alive()
    # The chief's initial values, and the worker's local variable from its local init.
    assert got["values"] == [3.0, 0, 6.0]


def test_monitored_worker_waits_for_the_chief(caplog):
    cluster = Cluster(2, 1)
    failures, seen = [], []

    def worker():
        try:
            with tf.Graph().as_default():
                a, step, local, _ = _cluster_model(1)
                with tf.train.MonitoredTrainingSession(
                        master=cluster.workers[1].target, is_chief=False,
                        max_wait_secs=30) as sess:
                    seen.append(sess.run([a, local]))
        except BaseException as e:  # noqa: BLE001 - re-raised below
            failures.append(e)

    try:
        with caplog.at_level(logging.INFO, logger="tensorflux"):
            thread = threading.Thread(target=worker, daemon=True)
            thread.start()
            wait_until(lambda: any("Waiting for model to be ready" in r.message
                                   for r in caplog.records), timeout=20)
            assert thread.is_alive()
            with tf.Graph().as_default():
                a, step, _, _ = _cluster_model(0)
                with tf.train.MonitoredTrainingSession(master=cluster.workers[0].target,
                                                       is_chief=True,
                                                       log_step_count_steps=0) as sess:
                    thread.join(30)
                    assert sess.run(a) == 3.0
    finally:
        cluster.stop()
    assert not failures and not thread.is_alive()
    # The worker's local variable was initialized by its own local init (to 0).
    assert seen == [[3.0, 0.0]]


# ---- against TensorFlow ------------------------------------------------------------------

PROBE = '''
def probe(tf):
    def attempt(f):
        try:
            return repr(f())
        except Exception as e:
            return "!" + type(e).__name__ + ": " + str(e).split("\\n")[0]

    out = {}
    with tf.Graph().as_default():
        a = tf.Variable(3.0, name="a")
        b = tf.Variable(4.0, name="b")
        ready = tf.report_uninitialized_variables()
        out["no_local_init"] = attempt(lambda: tf.train.SessionManager(
            ready_for_local_init_op=ready)).split(" [")[0]  # then the op's repr
        sm = tf.train.SessionManager(ready_op=ready)
        out["nothing_to_init"] = attempt(lambda: sm.prepare_session(""))
        out["partly"] = attempt(lambda: sm.prepare_session("", init_op=a.initializer))
        out["fully"] = attempt(lambda: sm.prepare_session(
            "", init_op=tf.global_variables_initializer()).run(a + b))
        out["recover"] = attempt(lambda: sm.recover_session("")[1])
        out["wait"] = attempt(lambda: tf.train.SessionManager(
            ready_op=ready, recovery_wait_secs=1).wait_for_session("", max_wait_secs=0))
        out["no_check"] = attempt(lambda: type(tf.train.SessionManager().wait_for_session(
            "", max_wait_secs=0)).__name__)
        out["both"] = attempt(lambda: sm.prepare_session(
            "", saver=tf.train.Saver(), checkpoint_dir="x",
            checkpoint_filename_with_path="y"))
    return out
'''


@pytest.mark.oracle
def test_session_manager_behaves_as_tensorflows():
    ours_ns: dict = {}
    exec(PROBE, ours_ns)  # noqa: S102 - the same probe runs under TensorFlow
    ours = ours_ns["probe"](tf)
    theirs = run_tf(PROBE + "\nresult = probe(tf)\n")
    assert ours == theirs
    assert ours["fully"] == repr(np.float32(7.0))
