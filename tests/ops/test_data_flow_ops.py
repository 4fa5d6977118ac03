"""Queues, accumulators, Barrier and concurrent steps (tensorflux/ops/data_flow_ops.py).

Every blocking case is bounded: steps that must block run with a RunOptions timeout or are
cancelled by a close, and every thread is joined with a timeout.
"""

import threading
import time

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf
from tests.threads_util import blocked_steps, join, start, wait_until

TIMEOUT = tf.RunOptions(timeout_in_ms=300)


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


# ---- FIFO order and structure ------------------------------------------------------------


def test_fifo_order_single_and_many(graph):
    q = tf.FIFOQueue(100, [tf.int32, tf.string], shapes=[[], [2]])
    enq = q.enqueue([7, ["a", "b"]])
    enq_many = q.enqueue_many([[1, 2, 3], [["c", "d"], ["e", "f"], ["g", "h"]]])
    x, s = q.dequeue()
    xs, ss = q.dequeue_many(2)
    assert xs.shape.as_list() == [2] and ss.shape.as_list() == [2, 2]
    with tf.Session() as sess:
        sess.run(enq)
        sess.run(enq_many)
        assert sess.run(q.size()) == 4
        got = sess.run([x, s])
        assert got[0] == 7 and got[1].tolist() == [b"a", b"b"]
        got = sess.run([xs, ss])
        assert got[0].tolist() == [1, 2]
        assert got[1].tolist() == [[b"c", b"d"], [b"e", b"f"]]
        got = sess.run([x, s])
        assert got[0] == 3 and got[1].tolist() == [b"g", b"h"]


def test_dequeue_many_spans_batches_in_order(graph):
    q = tf.FIFOQueue(100, tf.int64, shapes=[[]])
    p = tf.placeholder(tf.int64, [None])
    enq = q.enqueue_many([p])
    deq = q.dequeue_many(5)
    with tf.Session() as sess:
        for chunk in ([0, 1], [2], [3, 4, 5, 6], [7, 8, 9]):
            sess.run(enq, {p: chunk})
        assert sess.run(deq).tolist() == [0, 1, 2, 3, 4]
        assert sess.run(deq).tolist() == [5, 6, 7, 8, 9]


def test_enqueued_values_are_copies(graph):
    q = tf.FIFOQueue(10, tf.float32, shapes=[[3]])
    p = tf.placeholder(tf.float32, [3])
    enq = q.enqueue([p])
    with tf.Session() as sess:
        value = np.array([1, 2, 3], np.float32)
        sess.run(enq, {p: value})
        value[:] = 0  # the caller changes its array afterwards
        assert sess.run(q.dequeue()).tolist() == [1, 2, 3]


def test_named_components(graph):
    q = tf.FIFOQueue(10, [tf.int32, tf.float32], names=["a", "b"], shapes=[[], []])
    enq = q.enqueue({"a": 1, "b": 2.0})
    out = q.dequeue()
    assert sorted(out) == ["a", "b"]
    with pytest.raises(ValueError, match="You must enqueue a dictionary"):
        q.enqueue((1, 2.0))
    with pytest.raises(ValueError, match="Keys in dictionary to enqueue do not match"):
        q.enqueue({"a": 1, "c": 2.0})
    with tf.Session() as sess:
        sess.run(enq)
        got = sess.run(out)
        assert got["a"] == 1 and got["b"] == 2.0


def test_op_names_and_attrs(graph):
    q = tf.FIFOQueue(10, tf.float32, shared_name="shq", name="named")
    assert q.queue_ref.op.type == "FIFOQueueV2"
    assert q.name == "named"
    assert q.queue_ref.op.get_attr("shared_name") == b"shq"
    assert q.enqueue(1.0).name == "named_enqueue"
    assert q.dequeue().op.name == "named_Dequeue"
    assert q.close().name == "named_Close"
    assert q.size().op.name == "named_Size"
    assert q.is_closed().op.name == "named_Is_Closed"


def test_graph_time_checks(graph):
    q = tf.FIFOQueue(10, tf.float32, shapes=[[2]])
    with pytest.raises(ValueError, match="are incompatible"):
        q.enqueue(tf.constant([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="Expected 1 components to enqueue, got 3"):
        q.enqueue([1.0, 2.0, 3.0])  # TensorFlow would silently keep the first only
    with pytest.raises(ValueError, match="All shapes must be fully defined"):
        tf.FIFOQueue(10, tf.float32, shapes=[[None]])
    with pytest.raises(ValueError, match="Shapes must be provided for all components"):
        tf.PaddingFIFOQueue(10, [tf.float32, tf.int32], shapes=[[None]])
    with pytest.raises(TypeError):
        tf.PriorityQueue(10, [tf.string])


# ---- bad input at run time ---------------------------------------------------------------


def test_wrong_shape_names_queue_and_component(graph):
    q = tf.FIFOQueue(10, [tf.float32, tf.float32], shapes=[[], [2]], name="q")
    p = tf.placeholder(tf.float32)
    enq = q.enqueue([1.0, p])
    enq_many = q.enqueue_many([[1.0, 2.0], p])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run(enq, {p: [1.0, 2.0, 3.0]})
        assert "Shape mismatch in tuple component 1. Expected [2], got [3] (FIFOQueue " \
               "'_" in str(e.value) and "_q')" in str(e.value)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"component 1. Expected \[2,2\], got \[1,2\]"):
            sess.run(enq_many, {p: [[1.0, 2.0]]})
        assert sess.run(q.size()) == 0  # nothing half-enqueued


def test_wrong_dtype_names_queue(graph):
    from tensorflux.framework.op_def_library import apply_op

    q = tf.FIFOQueue(2, tf.float32, name="q4")
    pi = tf.placeholder(tf.int32)
    raw = apply_op("QueueEnqueueV2", handle=q.queue_ref, components=[pi])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run(raw, {pi: 3})
    msg = str(e.value)
    assert msg.startswith("Signature mismatch, have: resource, int32-> expected: resource, "
                          "float-> (FIFOQueue '_")
    assert "_q4' holds float)" in msg


def test_dequeue_many_needs_shapes(graph):
    q = tf.FIFOQueue(10, tf.int32)
    deq = q.dequeue_many(1)
    with tf.Session() as sess:
        sess.run(q.enqueue(1))
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="FIFOQueue's DequeueMany and DequeueUpTo require the "
                                 "components to have specified shapes."):
            sess.run(deq)


# ---- close and cancel --------------------------------------------------------------------


def test_closed_queue_errors(graph):
    q = tf.FIFOQueue(10, tf.float32)
    enq, deq, close = q.enqueue(1.0), q.dequeue(), q.close()
    with tf.Session() as sess:
        assert not sess.run(q.is_closed())
        sess.run(enq)
        sess.run(close)
        assert sess.run(q.is_closed())
        with pytest.raises(tf.errors.CancelledError, match="^FIFOQueue '_.*' is closed."):
            sess.run(enq)
        assert sess.run(deq) == 1.0  # what is left drains
        with pytest.raises(tf.errors.OutOfRangeError) as e:
            sess.run(deq)
        assert e.value.message.splitlines()[0].endswith(
            "is closed and has insufficient elements (requested 1, current size 0)")
        with pytest.raises(tf.errors.CancelledError, match="is already closed"):
            sess.run(close)
        sess.run(q.close(cancel_pending_enqueues=True))  # closing again with cancel is fine


def test_closed_dequeue_many_too_large_keeps_elements(graph):
    q = tf.FIFOQueue(10, tf.int32, shapes=[[]])
    deq_many = q.dequeue_many(5)
    deq_up_to = q.dequeue_up_to(5)
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[1, 2, 3]]))
        sess.run(q.close())
        with pytest.raises(tf.errors.OutOfRangeError,
                           match=r"insufficient elements \(requested 5, current size 3\)"):
            sess.run(deq_many)
        assert sess.run(deq_up_to).tolist() == [1, 2, 3]
        with pytest.raises(tf.errors.OutOfRangeError, match="requested 5, current size 0"):
            sess.run(deq_up_to)


def test_partial_dequeue_many_is_restored_when_closed(graph):
    q = tf.FIFOQueue(10, tf.int32, shapes=[[]])
    deq = q.dequeue_many(4)
    enq = q.enqueue_many([[1, 2]])
    with tf.Session() as sess:
        errors_seen = []

        def consume():
            try:
                sess.run(deq)
            except tf.errors.OutOfRangeError as e:
                errors_seen.append(e)

        t = start(consume)
        wait_until(blocked_steps(sess, 1))
        sess.run(enq)  # taken by the waiting dequeue_many (2 of 4)
        time.sleep(0.05)
        sess.run(q.close())
        join(t)
        assert len(errors_seen) == 1
        assert sess.run(q.dequeue_up_to(4)).tolist() == [1, 2]


def test_cancel_pending_enqueues(graph):
    q = tf.FIFOQueue(1, tf.float32)
    enq = q.enqueue(1.0)
    cancel = q.close(cancel_pending_enqueues=True)
    with tf.Session() as sess:
        sess.run(enq)
        caught = []

        def blocked():
            try:
                sess.run(enq)
            except tf.errors.CancelledError as e:
                caught.append(e)

        t = start(blocked)
        wait_until(blocked_steps(sess, 1))
        sess.run(cancel)
        join(t)
        assert caught and caught[0].message.startswith("Enqueue operation was cancelled")
        assert sess.run(q.size()) == 1
        assert sess.run(q.dequeue()) == 1.0


def test_close_waits_for_pending_enqueues(graph):
    q = tf.FIFOQueue(1, tf.float32)
    enq, close, deq = q.enqueue(2.0), q.close(), q.dequeue()
    with tf.Session() as sess:
        sess.run(enq)
        t1 = start(sess.run, enq)
        wait_until(blocked_steps(sess, 1))
        t2 = start(sess.run, close)
        wait_until(blocked_steps(sess, 2))
        assert not sess.run(q.is_closed())  # the close waits behind the enqueue
        assert sess.run(deq) == 2.0
        join(t1, t2)
        assert sess.run(q.is_closed())
        assert sess.run(deq) == 2.0
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(deq)


def test_session_close_cancels_blocked_dequeue_and_enqueue(graph):
    q = tf.FIFOQueue(1, tf.float32)
    deq = q.dequeue()
    q2 = tf.FIFOQueue(1, tf.float32)
    enq2 = q2.enqueue(1.0)
    sess = tf.Session()
    sess.run(enq2)
    caught = []

    def run(fetch):
        try:
            sess.run(fetch)
        except tf.errors.CancelledError as e:
            caught.append(e.message.splitlines()[0])

    threads = [start(run, deq), start(run, enq2)]
    wait_until(blocked_steps(sess, 2))
    sess.close()
    join(*threads)
    assert sorted(caught) == ["Dequeue operation was cancelled",
                              "Enqueue operation was cancelled"]


def test_deadline_exceeded_leaves_queue_intact(graph):
    q = tf.FIFOQueue(2, tf.float32, shapes=[[]])
    enq = q.enqueue(1.0)
    deq_many = q.dequeue_many(3)
    with tf.Session() as sess:
        sess.run(enq)
        sess.run(enq)
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(enq, options=TIMEOUT)  # full
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(deq_many, options=TIMEOUT)  # takes 2 of 3, then gives them back
        assert sess.run(q.size()) == 2
        assert sess.run(q.dequeue_many(2)).tolist() == [1.0, 1.0]


def test_thousand_blocked_dequeues_hold_no_threads(graph):
    """One step with 1,000 dequeue ops waiting on an empty queue, on a session whose device
    pool has 2 threads: no thread per waiting dequeue; all finish once elements arrive."""
    q = tf.FIFOQueue(2000, tf.int32, shapes=[[]])
    deqs = [q.dequeue() for _ in range(1000)]
    total = tf.add_n(deqs)
    enq = q.enqueue_many([tf.range(1000)])
    sess = tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=2))
    result = []
    before = threading.active_count()
    t = start(lambda: result.append(sess.run(total)))
    wait_until(lambda: q_waiting(sess) == 1000)
    assert threading.active_count() <= before + 3  # the caller thread, not 1,000
    sess.run(enq)
    join(t)
    assert result == [sum(range(1000))]
    sess.close()


def q_waiting(sess) -> int:
    """How many dequeue attempts wait in the session's queues (white box)."""
    n = 0
    for d in sess._device_mgr.devices:
        for c in d.resource_mgr.containers():
            for res in list(d.resource_mgr._containers.get(c, {}).values()):
                n += len(getattr(res, "_dequeue_attempts", ()))
    return n


# ---- padding, shuffling, priority --------------------------------------------------------


def test_padding_fifo_queue(graph):
    q = tf.PaddingFIFOQueue(10, [tf.int32, tf.string], shapes=[[None], [None, 2]])
    pe = tf.placeholder(tf.int32, [None])
    ps = tf.placeholder(tf.string, [None, 2])
    enq = q.enqueue([pe, ps])
    deq = q.dequeue_many(2)
    assert deq[0].shape.as_list() == [2, None]
    with tf.Session() as sess:
        sess.run(enq, {pe: [1, 2, 3], ps: [["a", "b"]]})
        sess.run(enq, {pe: [4], ps: [["c", "d"], ["e", "f"]]})
        ints, strs = sess.run(deq)
    assert ints.tolist() == [[1, 2, 3], [4, 0, 0]]
    assert strs.tolist() == [[[b"a", b"b"], [b"", b""]], [[b"c", b"d"], [b"e", b"f"]]]


def test_random_shuffle_queue_is_seeded_and_complete(graph):
    def order(seed):
        g = tf.Graph()
        with g.as_default():
            q = tf.RandomShuffleQueue(100, 0, tf.int32, shapes=[[]], seed=seed)
            enq = q.enqueue_many([tf.range(50)])
            deq = q.dequeue_many(50)
            with tf.Session() as sess:
                sess.run(enq)
                return sess.run(deq).tolist()

    a, b, c = order(7), order(7), order(8)
    assert a == b and a != c
    assert sorted(a) == list(range(50)) and a != list(range(50))
    assert q_seed_attrs() == (87654321, 7)


def q_seed_attrs():
    with tf.Graph().as_default():
        q = tf.RandomShuffleQueue(10, 0, tf.int32, seed=7)
        return q.queue_ref.op.get_attr("seed"), q.queue_ref.op.get_attr("seed2")


def test_random_shuffle_queue_min_after_dequeue(graph):
    q = tf.RandomShuffleQueue(100, 5, tf.int32, shapes=[[]], seed=1)
    deq = q.dequeue()
    with tf.Session() as sess:
        sess.run(q.enqueue_many([list(range(7))]))
        got = [sess.run(deq), sess.run(deq)]  # 7 -> 5 elements left
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(deq, options=TIMEOUT)  # would go below min_after_dequeue
        sess.run(q.close())  # closed: the rest drains
        got += [sess.run(deq) for _ in range(5)]
        assert sorted(got) == list(range(7))
        with pytest.raises(tf.errors.OutOfRangeError, match="^RandomShuffleQueue '_"):
            sess.run(deq)
    with pytest.raises(ValueError):
        tf.train.shuffle_batch([tf.constant(1)], 2, capacity=5, min_after_dequeue=5)


def test_priority_queue(graph):
    q = tf.PriorityQueue(10, [tf.string], shapes=[[]])
    assert q.dtypes == [tf.int64, tf.string]
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[5, 1, 3], ["a", "b", "c"]]))
        sess.run(q.enqueue((tf.constant(2, tf.int64), "x")))
        prio, vals = sess.run(q.dequeue_many(4))
    assert prio.tolist() == [1, 2, 3, 5]
    assert vals.tolist() == [b"b", b"x", b"c", b"a"]


@pytest.mark.oracle
def test_queue_semantics_match_tensorflow(graph):
    code = """
result = {}
q = tf.FIFOQueue(10, tf.float32)
d = q.dequeue()
with tf.Session() as s:
    s.run(q.close())
    try:
        s.run(d)
    except tf.errors.OutOfRangeError as e:
        result["closed"] = [l for l in e.message.splitlines() if "is closed" in l][0]
pq = tf.PaddingFIFOQueue(10, [tf.int32], shapes=[[None]])
p = tf.placeholder(tf.int32, [None])
with tf.Session() as s:
    s.run(pq.enqueue([p]), {p: [1, 2, 3]}); s.run(pq.enqueue([p]), {p: [4]})
    result["pad"] = s.run(pq.dequeue_many(2))
prq = tf.PriorityQueue(10, [tf.string], shapes=[[]])
with tf.Session() as s:
    s.run(prq.enqueue_many([[5, 1, 3], ["a", "b", "c"]]))
    result["prio"] = s.run(prq.dequeue_many(3))[0]
"""
    want = run_tf(code)
    got = {}
    q = tf.FIFOQueue(10, tf.float32)
    d = q.dequeue()
    with tf.Session() as s:
        s.run(q.close())
        with pytest.raises(tf.errors.OutOfRangeError) as e:
            s.run(d)
        got["closed"] = e.value.message.splitlines()[0]
    pq = tf.PaddingFIFOQueue(10, [tf.int32], shapes=[[None]])
    p = tf.placeholder(tf.int32, [None])
    with tf.Session() as s:
        s.run(pq.enqueue([p]), {p: [1, 2, 3]})
        s.run(pq.enqueue([p]), {p: [4]})
        got["pad"] = s.run(pq.dequeue_many(2))
    prq = tf.PriorityQueue(10, [tf.string], shapes=[[]])
    with tf.Session() as s:
        s.run(prq.enqueue_many([[5, 1, 3], ["a", "b", "c"]]))
        got["prio"] = s.run(prq.dequeue_many(3))[0]
    # The unique id differs between processes; the text around it does not.
    def strip(m):
        return m.split("'")[0] + m.split("'")[2]

    assert strip(got["closed"]) == strip(want["closed"]) == \
        "FIFOQueue  is closed and has insufficient elements (requested 1, current size 0)"
    np.testing.assert_array_equal(got["pad"], want["pad"])
    np.testing.assert_array_equal(got["prio"], want["prio"])


# ---- sharing, containers, reset ----------------------------------------------------------


def test_shared_name_shares_within_a_session(graph):
    q1 = tf.FIFOQueue(10, tf.float32, shared_name="S", name="a")
    q2 = tf.FIFOQueue(10, tf.float32, shared_name="S", name="b")
    q3 = tf.FIFOQueue(5, tf.float32, shared_name="S", name="c")
    with tf.Session() as sess:
        sess.run(q1.enqueue(1.0))
        assert sess.run(q2.size()) == 1
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Shared queue 'S' has capacity 10 but requested capacity "
                                 "was 5"):
            sess.run(q3.size())
    with tf.Session() as other:  # another local session has its own resources
        assert other.run(q2.size()) == 0


def test_containers_and_reset(graph):
    with tf.container("ctr"):
        q = tf.FIFOQueue(10, tf.float32, name="qc")
    assert q.queue_ref.op.get_attr("container") == b"ctr"
    keep = tf.FIFOQueue(10, tf.float32, name="keep")
    with tf.Session() as sess:
        sess.run([q.enqueue(1.0), keep.enqueue(1.0)])
        tf.Session.reset("", ["ctr"])
        assert sess.run(q.size()) == 0  # a fresh queue in the cleared container
        assert sess.run(keep.size()) == 1


# ---- accumulators ------------------------------------------------------------------------


def test_conditional_accumulator(graph):
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2])
    g = tf.placeholder(tf.float32, [2])
    step = tf.placeholder(tf.int64, [])
    apply = acc.apply_grad(g, local_step=step)
    take = acc.take_grad(2)
    gs = tf.placeholder(tf.int64, [])
    set_step = acc.set_global_step(gs)
    assert acc.accumulator_ref.op.type == "ResourceConditionalAccumulator"
    with tf.Session() as sess:
        sess.run(apply, {g: [1, 2], step: 0})
        sess.run(apply, {g: [3, 4], step: 0})
        assert sess.run(acc.num_accumulated()) == 2
        assert sess.run(take).tolist() == [2.0, 3.0]
        sess.run(apply, {g: [1, 1], step: 0})  # stale: the global step is now 1
        assert sess.run(acc.num_accumulated()) == 0
        sess.run(set_step, {gs: 5})
        sess.run(apply, {g: [1, 1], step: 4})  # stale
        sess.run(apply, {g: [1, 1], step: 5})
        assert sess.run(acc.num_dropped()) == 2  # the stale ones are counted (not in TF)
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(take, options=TIMEOUT)  # 1 of 2
        result = []
        t = start(lambda: result.append(sess.run(take)))
        wait_until(blocked_steps(sess, 1))
        sess.run(apply, {g: [3, 3], step: 7})
        join(t)
        assert result[0].tolist() == [2.0, 2.0]
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Argument num_required must be positive, but was 0"):
            sess.run(acc.take_grad(0))


def test_conditional_accumulator_sum_and_shape_check(graph):
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2], reduction_type="SUM")
    p = tf.placeholder(tf.float32)
    with tf.Session() as sess:
        sess.run(acc.apply_grad([1.0, 2.0]))
        sess.run(acc.apply_grad([1.0, 2.0]))
        assert sess.run(acc.take_grad(1)).tolist() == [2.0, 4.0]
        with pytest.raises(tf.errors.InvalidArgumentError, match="Shape mismatch"):
            sess.run(acc.apply_grad(p, local_step=1), {p: [1.0, 2.0, 3.0]})


def test_sparse_conditional_accumulator(graph):
    acc = tf.SparseConditionalAccumulator(tf.float32, shape=[3, 2])
    a1 = acc.apply_indexed_slices_grad(tf.IndexedSlices(
        tf.constant([[1.0, 1.0], [2.0, 2.0]]), tf.constant([0, 2], tf.int64),
        tf.constant([3, 2], tf.int64)))
    a2 = acc.apply_grad(grad_indices=[2], grad_values=[[4.0, 4.0]], grad_shape=[3, 2])
    take = acc.take_indexed_slices_grad(2)
    stale = acc.apply_grad(grad_indices=[1], grad_values=[[9.0, 9.0]], local_step=-1)
    assert acc.num_dropped().op.type == "AccumulatorNumDropped"
    with tf.Session() as sess:
        sess.run(a1)
        sess.run([a2, stale])
        assert sess.run([acc.num_accumulated(), acc.num_dropped()]) == [2, 1]
        idx, vals, shape = sess.run([take.indices, take.values, take.dense_shape])
    assert idx.tolist() == [0, 2]
    assert vals.tolist() == [[1.0, 1.0], [3.0, 3.0]]  # row 2 averaged over its 2 gradients
    assert shape.tolist() == [3, 2]


@pytest.mark.oracle
def test_accumulators_match_tensorflow(graph):
    code = """
acc = tf.ConditionalAccumulator(tf.float32, shape=[2])
sacc = tf.SparseConditionalAccumulator(tf.float32, shape=[3, 2])
ops = [acc.apply_grad([1., 2.]), acc.apply_grad([3., 5.], local_step=1),
       sacc.apply_grad([0, 2], [[1., 1.], [2., 2.]], [3, 2]),
       sacc.apply_grad([2], [[4., 4.]], [3, 2])]
t = acc.take_grad(2)
st = sacc.take_grad(2)
with tf.Session() as s:
    s.run(ops)
    result = [s.run(t), *s.run(list(st))]
"""
    want = run_tf(code)
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2])
    sacc = tf.SparseConditionalAccumulator(tf.float32, shape=[3, 2])
    ops = [acc.apply_grad([1., 2.]), acc.apply_grad([3., 5.], local_step=1),
           sacc.apply_grad([0, 2], [[1., 1.], [2., 2.]], [3, 2]),
           sacc.apply_grad([2], [[4., 4.]], [3, 2])]
    t = acc.take_grad(2)
    st = sacc.take_grad(2)
    with tf.Session() as s:
        s.run(ops)
        got = [s.run(t), *s.run(list(st))]
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


def test_barrier(graph):
    b = tf.Barrier((tf.float32, tf.int32), shapes=((), ()), name="B")
    keys = tf.constant([b"k1", b"k2"])
    i0 = b.insert_many(0, keys, [1.0, 2.0])
    i1 = b.insert_many(1, keys[:1], [10])
    i1b = b.insert_many(1, keys[1:], [20])
    take = b.take_many(1)
    take_small = b.take_many(2, allow_small_batch=True)
    with tf.Session() as sess:
        sess.run([i0, i1])
        assert sess.run([b.ready_size(), b.incomplete_size()]) == [1, 1]
        idx, k, vals = sess.run(take)
        assert idx.tolist() == [-(2**63)] and k.tolist() == [b"k1"]
        assert vals[0].tolist() == [1.0] and vals[1].tolist() == [10]
        with pytest.raises(tf.errors.InvalidArgumentError, match="already has a value for "
                                                                 "component 0"):
            sess.run(b.insert_many(0, keys[1:], [5.0]))
        sess.run(b.close())
        with pytest.raises(tf.errors.CancelledError, match="is closed"):
            sess.run(b.insert_many(0, [b"new"], [5.0]))
        sess.run(i1b)  # completing an existing key is still allowed
        idx, k, _ = sess.run(take_small)
        assert k.tolist() == [b"k2"] and idx.tolist() == [-(2**63) + 1]
        with pytest.raises(tf.errors.OutOfRangeError, match="Barrier '_.*_B' is closed"):
            sess.run(take)


# ---- concurrent steps (paper §3.2) -------------------------------------------------------


def test_hogwild_assign_add_with_locking_is_exact(graph):
    v = tf.Variable(0, dtype=tf.int64)
    inc = tf.assign_add(v, 1, use_locking=True)
    with tf.Session() as sess:
        sess.run(v.initializer)
        run = sess.make_callable(inc.op)

        def worker():
            for _ in range(500):
                run()

        threads = [start(worker) for _ in range(8)]
        join(*threads, timeout=50)
        assert sess.run(v) == 4000


def test_hundred_threads_run_one_session(graph):
    x = tf.placeholder(tf.float32, [])
    y = x * 2.0
    results = {}
    with tf.Session() as sess:
        def worker(i):
            results[i] = [sess.run(y, {x: float(i)}) for _ in range(5)]

        threads = [start(worker, i) for i in range(100)]
        join(*threads, timeout=50)
    assert all(results[i] == [2.0 * i] * 5 for i in range(100))


def test_producers_and_consumers_share_a_queue(graph):
    q = tf.FIFOQueue(50, tf.int64, shapes=[[]])
    p = tf.placeholder(tf.int64, [None])
    enq = q.enqueue_many([p])
    deq = q.dequeue_many(10)
    seen = []
    lock = threading.Lock()
    with tf.Session() as sess:
        def produce(k):
            for j in range(20):
                base = (k * 20 + j) * 10
                sess.run(enq, {p: np.arange(base, base + 10)})

        def consume():
            for _ in range(20):
                got = sess.run(deq).tolist()
                with lock:
                    seen.extend(got)

        threads = [start(produce, k) for k in range(4)] + [start(consume) for _ in range(4)]
        join(*threads, timeout=50)
    assert sorted(seen) == list(range(800))


def test_one_blocked_step_does_not_stop_others(graph):
    q = tf.FIFOQueue(1, tf.float32)
    deq = q.dequeue()
    x = tf.placeholder(tf.float32, [])
    y = x + 1.0
    with tf.Session() as sess:
        out = []
        t = start(lambda: out.append(sess.run(deq)))
        wait_until(blocked_steps(sess, 1))
        assert [sess.run(y, {x: float(i)}) for i in range(50)] == [i + 1.0 for i in range(50)]
        sess.run(q.enqueue(3.0))
        join(t)
        assert out == [3.0]


def test_concurrent_apply_ops_with_locking_are_exact(graph):
    v = tf.Variable(tf.zeros([4]))
    opt = tf.train.GradientDescentOptimizer(0.5, use_locking=True)
    step = opt.apply_gradients([(tf.ones([4]), v)])
    with tf.Session() as sess:
        sess.run(v.initializer)
        run = sess.make_callable(step)

        def worker():
            for _ in range(200):
                run()

        threads = [start(worker) for _ in range(8)]
        join(*threads, timeout=50)
        assert sess.run(v).tolist() == [-800.0] * 4


def test_queue_from_list_picks_a_queue_when_the_step_runs():
    """TF1's switch between input queues (training and validation): handles stacked and
    gathered, every queue op through the chosen handle."""
    train = tf.FIFOQueue(10, [tf.float32, tf.int32], shapes=[[2], []], names=["x", "y"])
    valid = tf.PaddingFIFOQueue(10, [tf.float32, tf.int32], shapes=[[None], []],
                                names=["x", "y"])
    which = tf.placeholder(tf.int32, [])
    q = tf.QueueBase.from_list(which, [train, valid])
    assert q.dtypes == [tf.float32, tf.int32] and q.names == ["x", "y"]
    assert [s.as_list() for s in q.shapes] == [[None], []]  # what both queues' shapes have
    batch = q.dequeue_many(2)
    with tf.Session() as s:
        s.run(train.enqueue_many({"x": [[1, 1], [2, 2], [3, 3]], "y": [1, 2, 3]}))
        s.run(valid.enqueue({"x": [-1], "y": -1}))
        s.run(valid.enqueue({"x": [-2, -2, -2], "y": -2}))
        got = s.run(batch, {which: 0})
        np.testing.assert_array_equal(got["x"], [[1, 1], [2, 2]])
        got = s.run(batch, {which: 1})  # the padding queue pads
        np.testing.assert_array_equal(got["x"], [[-1, 0, 0], [-2, -2, -2]])
        assert s.run([q.size(), train.size()], {which: 0}) == [1, 1]
        s.run(q.close(), {which: 0})
        assert s.run(train.is_closed()) and not s.run(valid.is_closed())
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices = 2 is not in \[0, 2\)"):
            s.run(q.size(), {which: 2})
    with pytest.raises(TypeError, match="matching component dtypes"):
        tf.QueueBase.from_list(which, [train, tf.FIFOQueue(3, [tf.float32, tf.int64])])
    with pytest.raises(TypeError, match="A list of queues expected"):
        tf.QueueBase.from_list(which, (train, valid))
