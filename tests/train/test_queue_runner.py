"""QueueRunner and Coordinator (tensorflux/train/queue_runner.py, coordinator.py)."""

import threading
import time

import pytest

import tensorflux as tf


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def _join(threads, timeout=20):
    for t in threads:
        t.join(timeout)
        assert not t.is_alive()


# ---- Coordinator -------------------------------------------------------------------------


def test_request_stop_and_should_stop():
    coord = tf.train.Coordinator()
    assert not coord.should_stop()
    assert not coord.wait_for_stop(0.01)
    coord.request_stop()
    assert coord.should_stop() and coord.wait_for_stop(0.01)
    coord.clear_stop()
    assert not coord.should_stop()


def test_join_reraises_first_exception_from_a_thread():
    coord = tf.train.Coordinator()

    def worker(i):
        with coord.stop_on_exception():
            if i == 1:
                raise RuntimeError("boom")
            while not coord.should_stop():
                time.sleep(0.005)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    with pytest.raises(RuntimeError, match="boom"):
        coord.join(threads, stop_grace_period_secs=5)
    assert coord.joined
    with pytest.raises(ValueError, match="late"):  # after join, request_stop re-raises
        coord.request_stop(ValueError("late"))


def test_clean_stop_exception_types():
    coord = tf.train.Coordinator()
    coord.request_stop(tf.errors.OutOfRangeError(None, None, "end of input"))
    coord.join([])  # not re-raised
    strict = tf.train.Coordinator(clean_stop_exception_types=[])
    strict.request_stop(tf.errors.OutOfRangeError(None, None, "end of input"))
    with pytest.raises(tf.errors.OutOfRangeError):
        strict.join([])


def test_join_grace_period_reports_stragglers():
    coord = tf.train.Coordinator()
    release = threading.Event()
    t = threading.Thread(target=release.wait, args=(10,), name="straggler")
    t.start()
    coord.request_stop()
    with pytest.raises(RuntimeError, match="threads still running: straggler"):
        coord.join([t], stop_grace_period_secs=0.05)
    release.set()
    t.join(5)
    coord2 = tf.train.Coordinator()
    coord2.request_stop()
    release.clear()
    t2 = threading.Thread(target=release.wait, args=(10,))
    t2.start()
    coord2.join([t2], stop_grace_period_secs=0.05, ignore_live_threads=True)
    release.set()
    t2.join(5)


def test_looper_thread():
    coord = tf.train.Coordinator()
    calls = []
    looper = tf.train.LooperThread.loop(coord, 0.01, calls.append, args=(1,))
    time.sleep(0.1)
    coord.request_stop()
    coord.join([looper], stop_grace_period_secs=5)
    assert len(calls) >= 2


# ---- QueueRunner -------------------------------------------------------------------------


def test_queue_runner_fills_queue_until_stopped(graph):
    counter = tf.Variable(0, dtype=tf.int64)
    inc = tf.assign_add(counter, 1)
    q = tf.FIFOQueue(10, tf.int64, shapes=[[]])
    qr = tf.train.QueueRunner(q, [q.enqueue(inc)] * 2)
    assert qr.queue is q and len(qr.enqueue_ops) == 2 and qr.name == q.name
    deq = q.dequeue()
    with tf.Session() as sess:
        sess.run(counter.initializer)
        coord = tf.train.Coordinator()
        threads = qr.create_threads(sess, coord=coord, start=True)
        assert len(threads) == 3  # two runners and the closer
        assert qr.create_threads(sess, coord=coord) == []  # already running for sess
        got = sorted(sess.run(deq) for _ in range(20))
        assert len(set(got)) == 20
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)  # the cancel op unblocks full queues
        assert sess.run(q.is_closed())


def test_input_exhaustion_closes_the_queue_and_consumers_see_out_of_range(graph):
    src = tf.FIFOQueue(100, tf.int32, shapes=[[]])
    dst = tf.FIFOQueue(100, tf.int32, shapes=[[]])
    qr = tf.train.QueueRunner(dst, [dst.enqueue(src.dequeue() * 10)] * 3)
    tf.train.add_queue_runner(qr)
    assert tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS) == [qr]
    deq = dst.dequeue()
    with tf.Session() as sess:
        sess.run(src.enqueue_many([list(range(30))]))
        sess.run(src.close())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        got = []
        try:
            while not coord.should_stop():
                got.append(sess.run(deq))
        except tf.errors.OutOfRangeError as e:
            coord.request_stop(e)  # a clean stop: join does not re-raise it
        coord.join(threads, stop_grace_period_secs=10)
    assert sorted(got) == [10 * i for i in range(30)]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_runner_errors_reach_the_coordinator(graph):
    q = tf.FIFOQueue(10, tf.float32, shapes=[[2]])
    p = tf.placeholder_with_default(tf.constant([[1.0, 2.0, 3.0]]), None)
    qr = tf.train.QueueRunner(q, [q.enqueue_many([p])])
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = qr.create_threads(sess, coord=coord, start=True)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Shape mismatch"):
            coord.join(threads, stop_grace_period_secs=10)
    # without a coordinator the error is kept in exceptions_raised
    with tf.Session() as sess:
        threads = qr.create_threads(sess, start=True, daemon=True)
        _join(threads)
        assert len(qr.exceptions_raised) == 1


def test_start_queue_runners_uses_default_session(graph):
    q = tf.FIFOQueue(10, tf.int32, shapes=[[]])
    tf.train.add_queue_runner(tf.train.QueueRunner(q, [q.enqueue(1)]))
    with pytest.raises(ValueError, match="No default session"):
        tf.train.start_queue_runners()
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(coord=coord)
        assert all(t.daemon for t in threads)
        assert sess.run(q.dequeue()) == 1
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
    with pytest.raises(ValueError):
        tf.train.QueueRunner(q, [])


def test_session_close_ends_runner_threads(graph):
    q = tf.FIFOQueue(2, tf.int32, shapes=[[]])
    qr = tf.train.QueueRunner(q, [q.enqueue(1)])
    sess = tf.Session()
    coord = tf.train.Coordinator()
    threads = qr.create_threads(sess, coord=coord, start=True, daemon=True)
    time.sleep(0.05)  # the runner is now blocked on the full queue
    sess.close()  # cancels its step; the CancelledError goes to the coordinator
    with pytest.raises(tf.errors.CancelledError):
        coord.join(threads, stop_grace_period_secs=10)
