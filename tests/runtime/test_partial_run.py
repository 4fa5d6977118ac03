"""Session.partial_run_setup / partial_run on the local runtime (runtime/partial_run.py).

The rules and messages were read off TensorFlow 2.21 (tf.compat.v1.Session) for the same
programs; the oracle tests run the programs under both.
"""

import gc
import threading

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.runtime.exec_options import ExecOptions
from tests.oracle import run_both

_THREAD_PREFIX = "tfx-partial-run-"


def _partial_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(_THREAD_PREFIX)]


def _wait_no_partial_threads(timeout: float = 10.0) -> None:
    """Every partial run's thread ends within `timeout` seconds."""
    for t in _partial_threads():
        t.join(timeout)
    assert not _partial_threads()


@pytest.fixture
def abc():
    """The example of TF's docstring: r1 = a + b, r2 = r1 * c (and the graph)."""
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, shape=[], name="a")
        b = tf.placeholder(tf.float32, shape=[], name="b")
        c = tf.placeholder(tf.float32, shape=[], name="c")
        r1 = tf.add(a, b, name="r1")
        r2 = tf.multiply(r1, c, name="r2")
        yield g, a, b, c, r1, r2
    _wait_no_partial_threads()


def test_the_classic_example(abc):
    g, a, b, c, r1, r2 = abc
    with tf.Session(graph=g) as sess:
        h = sess.partial_run_setup([r1, r2], [a, b, c])
        assert isinstance(h, str) and h == "a:0,b:0,c:0->r1:0,r2:0//1/;0"  # TF's handle
        res = sess.partial_run(h, r1, feed_dict={a: 1, b: 2})
        assert res == 3.0 and isinstance(res, np.float32)
        res = sess.partial_run(h, r2, feed_dict={c: res})
        assert res == 9.0
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Must run 'setup' before performing partial runs!"):
            sess.partial_run(h, r2)  # done: every feed fed, every fetch fetched


def test_structures_names_and_fed_fetches(abc):
    g, a, b, c, r1, r2 = abc
    with tf.Session(graph=g) as sess:
        h = sess.partial_run_setup({"one": r1, "two": [r2]}, (a, b, c))
        out = sess.partial_run(h, {"x": "r1:0", "y": (a,)}, feed_dict={"a:0": 1, b: 2})
        assert out["x"] == 3.0 and out["y"][0] == 1.0  # a fed fetch answers with the feed
        assert sess.partial_run(h, [r2], feed_dict={c: 4}) == [12.0]
    with tf.Session(graph=g) as sess:
        h = sess.partial_run_setup(r2, r1)  # a single feed; a non-placeholder
        with pytest.raises(tf.errors.InvalidArgumentError, match="^Fetch r1:0 can't be"):
            sess.partial_run(h, r2)
        h = sess.partial_run_setup(r2, [r1, c])
        assert sess.partial_run(h, r2, feed_dict={r1: 10, c: 2}) == 20.0
        assert sess.partial_run("no such handle", []) == []  # nothing asked: no check


def test_each_feed_and_fetch_once_and_only_declared(abc):
    g, a, b, c, r1, r2 = abc
    with g.as_default():
        r3 = r2 + 1.0
    with tf.Session(graph=g) as sess:
        h = sess.partial_run_setup([r1, r2], [a, b, c])
        assert sess.partial_run(h, r1, feed_dict={a: 1, b: 2}) == 3.0
        cases = [
            ({a: 3.0}, [], "The feed a:0 has already been fed."),
            ({}, [r1], "The fetch r1:0 has already been fetched."),
            ({c: 1.0, "a:0": 1.0}, [], "The feed a:0 has already been fed."),
            ({}, [r3], "The fetch add:0 was not specified in partial_run_setup."),
        ]
        for feeds, fetches, message in cases:
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.partial_run(h, fetches, feed_dict=feeds)
            assert info.value.message == message
        # None of those fed anything: c is still open, and the run goes on.
        assert sess.partial_run(h, r2, feed_dict={c: 3.0}) == 9.0
    g2 = tf.Graph()
    with g2.as_default():
        x = tf.placeholder(tf.float32, name="x")
        z = tf.placeholder(tf.float32, name="z")
        y = x * 2.0
        with tf.Session() as sess:
            h = sess.partial_run_setup([y], [x])
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="^The feed z:0 was not specified in partial_run_setup"):
                sess.partial_run(h, y, feed_dict={z: 1.0})
            assert sess.partial_run(h, y, feed_dict={x: 1.0}) == 2.0


def test_a_fetch_needing_a_feed_not_given_fails_at_once(abc):
    g, a, b, c, r1, r2 = abc
    with tf.Session(graph=g) as sess:
        h = sess.partial_run_setup([r1, r2], [a, b, c])
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.partial_run(h, r2, feed_dict={a: 1, b: 2})
        assert info.value.message == ("Fetch c:0 can't be computed from the feeds that have "
                                      "been fed so far.")
        for feeds, missing in [({}, "a:0"), ({a: 1.0}, "b:0"), ({b: 1.0}, "a:0")]:
            with pytest.raises(tf.errors.InvalidArgumentError, match=f"^Fetch {missing} "):
                sess.partial_run(h, r1, feed_dict=feeds)
        # The failed calls fed nothing.
        assert sess.partial_run(h, [r1, r2], feed_dict={a: 1, b: 2, c: 2}) == [3.0, 6.0]


def test_setup_errors(abc):
    g, a, b, c, r1, r2 = abc
    with tf.Session(graph=g) as sess:
        cases = [
            (([a, r1], [a, b]), tf.errors.InvalidArgumentError, "a:0 is both fed and fetched."),
            (([r1], [a, a]), tf.errors.InvalidArgumentError,
             'Endpoint "a:0" fed more than once.'),
            (([], [a]), tf.errors.InvalidArgumentError,
             "Must specify at least one target to fetch or execute."),
            (([3], [a]), TypeError, "must be a string or Tensor"),
            (([r1], [3]), TypeError, "Cannot interpret argument `feed` key as Tensor"),
            (([r1], ["nope:0"]), KeyError, "Cannot interpret argument `feed` key as Tensor"),
        ]
        for args, cls, message in cases:
            with pytest.raises(cls) as info:
                sess.partial_run_setup(*args)
            assert message in str(info.value)
        h = sess.partial_run_setup([r1, r2.op], [a, b])
        with pytest.raises(RuntimeError, match="partial_run\\(\\) requires empty"):
            sess.partial_run(h, r2.op, feed_dict={a: 1.0})
        with pytest.raises(ValueError, match="Cannot feed value of shape"):
            sess.partial_run(h, r1, feed_dict={a: [1.0, 2.0]})
    with pytest.raises(RuntimeError, match="Attempted to use a closed Session."):
        sess.partial_run_setup([r1], [a, b])
    with pytest.raises(RuntimeError, match="Attempted to use a closed Session."):
        sess.partial_run(h, r1, feed_dict={a: 1.0, b: 1.0})
    with tf.Session(graph=tf.Graph()) as empty, pytest.raises(RuntimeError,
                                                               match="graph is empty"):
        empty.partial_run_setup([r1])


def test_the_run_is_done_when_everything_is_fed_and_fetched(abc):
    g, a, b, c, r1, r2 = abc
    with tf.Session(graph=g) as sess:
        h = sess.partial_run_setup([r1], [a, b, c])
        assert sess.partial_run(h, r1, feed_dict={a: 1, b: 2}) == 3.0
        assert sess.partial_run(h, [], feed_dict={c: 2}) == []  # c was still declared
        with pytest.raises(tf.errors.InvalidArgumentError, match="Must run 'setup'"):
            sess.partial_run(h, [], feed_dict={c: 2})
        assert not sess._partial_runs


def test_stateful_ops_run_once_per_partial_run():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, shape=[], name="x")
        counter = tf.Variable(0.0, name="counter", use_resource=False)
        bump = tf.assign_add(counter, 1.0)
        noise = tf.random_uniform([4], seed=3)
        shifted = noise + x
        q = tf.FIFOQueue(10, tf.float32, shapes=[])
        fill = q.enqueue_many([[1.0, 2.0, 3.0]])
        item = q.dequeue()
        twice = item * 2.0
        with tf.Session() as sess:
            sess.run([counter.initializer, fill])
            for k in range(2):
                h = sess.partial_run_setup([bump, noise, shifted, item, twice], [x])
                first = sess.partial_run(h, [noise, item])
                np.testing.assert_array_equal(sess.partial_run(h, shifted, {x: 10.0}),
                                              first[0] + 10.0)
                assert sess.partial_run(h, twice) == 2.0 * first[1] == 2.0 * (k + 1)
                assert sess.partial_run(h, bump) == k + 1.0
            assert sess.run(counter) == 2.0


def test_targets_run_in_the_step():
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, shape=[], name="a")
        b = tf.placeholder(tf.float32, shape=[], name="b")
        r1 = a + b
        v = tf.Variable(0.0, name="v", use_resource=False)
        inc = tf.assign_add(v, 1.0)
        inc_by_a = tf.assign_add(v, a)
        plus_v = v + a  # reads v when the feed has come, as TF's aliased ref does
        check = tf.Assert(a < 0, [a], name="check")
        with tf.Session() as sess:
            sess.run(v.initializer)
            h = sess.partial_run_setup([r1, inc.op], [a, b])
            assert sess.partial_run(h, r1, feed_dict={a: 1, b: 2}) == 3.0  # the last call
            assert sess.run(v) == 1.0  # ... waited for the target
            h = sess.partial_run_setup([r1, inc_by_a.op], [a, b])
            assert sess.partial_run(h, r1, feed_dict={a: 10, b: 2}) == 12.0
            assert sess.run(v) == 11.0
            h = sess.partial_run_setup([inc, r1, plus_v], [a, b])
            assert sess.partial_run(h, inc) == 12.0
            assert sess.partial_run(h, [r1, plus_v], feed_dict={a: 1, b: 2}) == [3.0, 13.0]
            # A failing target fails the last call, which waits for it (as in TF).
            h = sess.partial_run_setup([r1, check], [a, b])
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"assertion failed: \[1\]\n\t \[\[node check/Assert"):
                sess.partial_run(h, r1, feed_dict={a: 1, b: 2})
            with pytest.raises(tf.errors.InvalidArgumentError, match="Must run 'setup'"):
                sess.partial_run(h, [], feed_dict={a: 1})


def _reshape_graph():
    """y = reshape(x, s) fails for a shape of another size; z = x + 1 does not."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, name="x")
        s = tf.placeholder(tf.int32, name="s")
        y = tf.reshape(x, s, name="y")
        z = tf.add(x, 1.0, name="z")
        w = tf.add(y, 1.0, name="w")
        q = tf.placeholder(tf.float32, name="q")
        needs_q = tf.add(x, q, name="needs_q")
    return g, x, s, y, z, w, needs_q


def test_a_kernel_error_fails_the_call_that_needs_it_naming_the_node():
    g, x, s, y, z, w, needs_q = _reshape_graph()
    with tf.Session(graph=g) as sess:
        h = sess.partial_run_setup([z, y, w], [x, s])
        np.testing.assert_array_equal(sess.partial_run(h, z, feed_dict={x: [1, 2, 3]}),
                                      [2, 3, 4])
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.partial_run(h, y, feed_dict={s: [2, 2]})
        e = info.value
        assert "Input to reshape is a tensor with 3 values" in e.message
        assert "[[node y (defined at" in e.message and e.op is not None and e.op.name == "y"
        with pytest.raises(tf.errors.InvalidArgumentError, match="Must run 'setup'"):
            sess.partial_run(h, w)  # the failed step ended the run
        # An error in a node only a later call needs: that call (or the first feeding
        # or fetching after the failure) raises it.
        h = sess.partial_run_setup([z, w], [x, s])
        with pytest.raises(tf.errors.InvalidArgumentError, match="Input to reshape"):
            sess.partial_run(h, [z], feed_dict={x: [1, 2, 3], s: [2, 2]})
            sess.partial_run(h, [w])
        # A placeholder nobody feeds fails as in Session.run.
        h = sess.partial_run_setup([needs_q], [x])
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="You must feed a value for placeholder tensor 'q'") as info:
            sess.partial_run(h, needs_q, feed_dict={x: 1.0})
        assert "[[node q (defined at" in info.value.message
        assert not sess._partial_runs
    _wait_no_partial_threads()


def test_close_and_dropped_handles_release_the_step(abc):
    g, a, b, c, r1, r2 = abc
    sess = tf.Session(graph=g)
    handles = [sess.partial_run_setup([r1, r2], [a, b, c]) for _ in range(5)]
    for h in handles:
        assert sess.partial_run(h, r1, feed_dict={a: 1, b: 2}) == 3.0
    assert len(_partial_threads()) == 5  # each waits for its c
    del h
    handles.pop()  # the last reference to a handle object: its run ends
    gc.collect()
    for _ in range(100):
        if len(_partial_threads()) == 4:
            break
        threading.Event().wait(0.05)
    assert len(_partial_threads()) == 4 and len(sess._partial_runs) == 4
    assert sess.partial_run(str(handles[0]), r2, feed_dict={c: 2}) == 6.0  # a copy works
    sess.close()  # ends the other three
    _wait_no_partial_threads()
    assert not sess._partial_runs


def test_close_cancels_a_call_that_waits():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, shape=[], name="x")
        q = tf.FIFOQueue(4, tf.float32, shapes=[])
        item = q.dequeue() + x
    sess = tf.Session(graph=g)
    h = sess.partial_run_setup([item], [x])
    errors = []

    def call():
        try:
            sess.partial_run(h, item, feed_dict={x: 1.0})  # the queue stays empty
        except tf.errors.OpError as e:
            errors.append(e)

    caller = threading.Thread(target=call)
    caller.start()
    caller.join(0.3)
    assert caller.is_alive()
    sess.close()
    caller.join(10.0)
    assert not caller.is_alive() and isinstance(errors[0], tf.errors.CancelledError)
    assert "Dequeue operation was cancelled" in errors[0].message  # as Session.run
    # With ConfigProto.operation_timeout_in_ms, the call gives up at the deadline.
    config = tf.ConfigProto(operation_timeout_in_ms=200)
    with tf.Session(graph=g, config=config) as sess:
        h = sess.partial_run_setup([item], [x])
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.partial_run(h, item, feed_dict={x: 1.0})
        assert not sess._partial_runs
    _wait_no_partial_threads()


def interleaved_partial_runs(sess, a, b, c, r1, r2, threads: int, rounds: int) -> list:
    """Runs `threads` threads, each keeping three partial runs of `r1 = a + b`, `r2 = r1 *
    c` open at once and interleaving their calls, `rounds` times; the wrong results and
    errors seen (empty when all is well). Also used by the grpc session's test."""
    failures = []

    def work(k):
        try:
            for i in range(rounds):
                hs = [sess.partial_run_setup([r1, r2], [a, b, c]) for _ in range(3)]
                firsts = [sess.partial_run(h, r1, feed_dict={a: k, b: i + j})
                          for j, h in enumerate(hs)]
                for j, h in enumerate(hs):
                    got = sess.partial_run(h, r2, feed_dict={c: 2.0})
                    if firsts[j] != k + i + j or got != 2.0 * (k + i + j):
                        failures.append((k, i, j, firsts[j], got))
        except Exception as e:  # noqa: BLE001 - reported by the test
            failures.append(e)

    workers = [threading.Thread(target=work, args=(100 * k,)) for k in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(60.0)
    if any(t.is_alive() for t in workers):
        failures.append("a thread did not finish in 60 s")
    return failures


def test_many_partial_runs_at_once_from_several_threads(abc):
    g, a, b, c, r1, r2 = abc
    with tf.Session(graph=g) as sess:
        assert not interleaved_partial_runs(sess, a, b, c, r1, r2, threads=6, rounds=5)
        assert not sess._partial_runs


def test_interactive_session_and_other_strategies():
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, shape=[2], name="a")
        b = tf.placeholder(tf.float32, shape=[2], name="b")
        with tf.device("/cpu:1"):
            r1 = a * 2.0
        r2 = tf.reduce_sum(r1 + b)
        i = tf.constant(0)
        loop = tf.while_loop(lambda i, acc: i < 3, lambda i, acc: (i + 1, acc + r1),
                             [i, tf.zeros([2])])[1]
        picked = tf.cond(r2 > 5.0, lambda: r2 * 10.0, lambda: r2)
    config = tf.ConfigProto(device_count={"CPU": 2})
    sessions = [tf.InteractiveSession(graph=g, config=config),
                tf.Session(graph=g, config=config,
                           exec_options=ExecOptions(strategy="reference"))]
    for sess in sessions:
        h = sess.partial_run_setup([r1, loop, r2, picked], [a, b])
        np.testing.assert_array_equal(sess.partial_run(h, r1, {a: [1.0, 2.0]}), [2.0, 4.0])
        np.testing.assert_array_equal(sess.partial_run(h, loop), [6.0, 12.0])
        assert sess.partial_run(h, [r2, picked], {b: [1.0, 1.0]}) == [8.0, 80.0]
        sess.close()
    _wait_no_partial_threads()


@pytest.mark.oracle
def test_values_and_messages_match_tensorflow():
    program = """
def attempt(f):
    try:
        return f()
    except Exception as e:
        return [type(e).__name__, str(e).strip().splitlines()[-1]]
a = tf.placeholder(tf.float32, shape=[], name="a")
b = tf.placeholder(tf.float32, shape=[], name="b")
c = tf.placeholder(tf.float32, shape=[], name="c")
r1 = tf.add(a, b, name="r1")
r2 = tf.multiply(r1, c, name="r2")
sp = tf.sparse_placeholder(tf.float32, shape=[2, 2], name="sp")
dense = tf.sparse_tensor_to_dense(sp) * 2.0
result = []
with tf.Session() as sess:
    h = sess.partial_run_setup([r1, r2], [a, b, c])
    result.append(str(h))
    res = sess.partial_run(h, r1, feed_dict={a: 1, b: 2})
    result.append(float(res))
    result.append(attempt(lambda: sess.partial_run(h, [], feed_dict={a: 3})))
    result.append(attempt(lambda: sess.partial_run(h, r1)))
    result.append(attempt(lambda: sess.partial_run(h, dense, feed_dict={c: 1})))
    spv = ([[0, 0]], [1.0], [2, 2])
    result.append(attempt(lambda: sess.partial_run(h, r2, feed_dict={sp: spv})))
    result.append(float(sess.partial_run(h, r2, feed_dict={c: res})))
    result.append(attempt(lambda: sess.partial_run(h, r2)))
    h = sess.partial_run_setup([r1, r2], [a, b, c])
    result.append(attempt(lambda: sess.partial_run(h, r2, feed_dict={a: 1, b: 2})))
    result.append(attempt(lambda: sess.partial_run(h, r1, feed_dict={b: 1})))
    needs_c = tf.multiply(c, 2.0, name="needs_c")
    h = sess.partial_run_setup([r1, needs_c], [a, b, c])
    result.append(attempt(lambda: sess.partial_run(h, [r1, needs_c])))  # the last fetch's
    result.append(attempt(lambda: sess.partial_run(h, [needs_c, r1])))
    h = sess.partial_run_setup([r2], [r1, a, c])  # the walk goes through fed r1 to a
    result.append(attempt(lambda: sess.partial_run(h, r2, feed_dict={r1: 10, c: 2})))
    result.append(attempt(lambda: sess.partial_run_setup([a, r1], [a, b])))
    result.append(attempt(lambda: sess.partial_run_setup([r1], [a, a])))
    result.append(attempt(lambda: sess.partial_run_setup([], [a])))
    h = sess.partial_run_setup([dense], [sp])
    result.append(sess.partial_run(h, dense, feed_dict={sp: ([[0, 1]], [3.0], [2, 2])}).tolist())
"""
    ours, theirs = run_both(program, tf)
    assert ours == theirs


@pytest.mark.oracle
def test_variables_and_targets_match_tensorflow():
    program = """
a = tf.placeholder(tf.float32, shape=[], name="a")
b = tf.placeholder(tf.float32, shape=[], name="b")
r1 = a + b
v = tf.Variable(0.0, name="v", use_resource=False)
inc = tf.assign_add(v, 1.0)
inc_by_a = tf.assign_add(v, a)
plus_v = v + a
result = []
with tf.Session() as sess:
    sess.run(v.initializer)
    h = sess.partial_run_setup([r1, inc.op], [a, b])
    result.append([float(sess.partial_run(h, r1, feed_dict={a: 1, b: 2})), float(sess.run(v))])
    h = sess.partial_run_setup([r1, inc_by_a.op], [a, b])
    result.append([float(sess.partial_run(h, r1, feed_dict={a: 10, b: 2})), float(sess.run(v))])
    h = sess.partial_run_setup([inc, r1, plus_v], [a, b])
    result.append(float(sess.partial_run(h, inc)))
    result.append([float(x) for x in sess.partial_run(h, [r1, plus_v], feed_dict={a: 1, b: 2})])
    result.append(float(sess.run(v)))
"""
    ours, theirs = run_both(program, tf)
    assert ours == theirs == [[3.0, 1.0], [12.0, 11.0], 12.0, [3.0, 13.0], 12.0]
