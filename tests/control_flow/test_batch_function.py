"""tf.nondifferentiable_batch_function (control_flow/batch_function.py) over the
BatchFunction op (ops/batch_ops.py, kernels/cpu/batch_ops.py): concurrent Session.run calls
gathered into one batch, padding to allowed sizes, splitting, errors as TensorFlow's."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf
from tests.threads_util import blocked_steps, join, start, wait_until


def _recording(seen: list):
    """f for the decorator: records the batch it is given (through a py_func)."""
    def rec(x):
        seen.append(x.copy())
        return x

    def f(x):
        y = tf.py_func(rec, [x], tf.float32, stateful=True)
        y.set_shape(x.shape)
        return y * 2.0
    return f


def test_concurrent_calls_run_as_one_batch(graph):
    seen: list = []
    threads = 8
    # The batch runs when full (8 rows) long before its timeout: one call of f, exactly.
    f = tf.nondifferentiable_batch_function(2, threads, 20_000_000)(_recording(seen))
    p = tf.placeholder(tf.float32, [None, 2])
    out = f(p)
    got = {}
    with tf.Session() as sess:
        def run(i):
            got[i] = sess.run(out, {p: np.full((1, 2), i, np.float32)})

        join(*[start(run, i) for i in range(threads)], timeout=60)
    assert len(seen) == 1 and sorted(seen[0][:, 0]) == list(range(threads))
    for i in range(threads):
        np.testing.assert_array_equal(got[i], np.full((1, 2), 2 * i, np.float32))


def test_many_threads_each_get_their_own_rows(graph):
    seen: list = []
    w = tf.get_variable("w", initializer=10.0, use_resource=True)

    @tf.nondifferentiable_batch_function(2, 8, 2000, allowed_batch_sizes=[2, 4])
    def f(x, k):
        return _recording(seen)(x) + w, k * 3

    p = tf.placeholder(tf.float32, [None, 2])
    q = tf.placeholder(tf.int64, [None])
    y, z = f(p, q)
    wrong = []
    with tf.Session() as sess:
        sess.run(w.initializer)

        def worker(t):
            try:
                calls(t)
            except Exception as e:  # noqa: BLE001 - reported below
                wrong.append(e)

        def calls(t):
            rng = np.random.default_rng(t)
            for r in range(10):
                n = int(rng.integers(1, 7))  # up to 6 rows: split across batches of 4
                x = rng.normal(size=(n, 2)).astype(np.float32)
                k = np.arange(n, dtype=np.int64) + 100 * t + 10 * r
                got_y, got_z = sess.run([y, z], {p: x, q: k})
                if not (np.array_equal(got_y, x * 2 + 10) and np.array_equal(got_z, k * 3)):
                    wrong.append((t, r))

        join(*[start(worker, t) for t in range(6)], timeout=100)
    assert not wrong
    assert {len(b) for b in seen} <= {2, 4}  # padded up to the allowed sizes


def test_a_failing_batch_fails_its_calls_and_the_next_ones_run(graph):
    def boom(x):
        if (x < 0).any():
            raise ValueError("negative row")
        return x

    @tf.nondifferentiable_batch_function(1, 4, 1000)
    def f(x):
        return tf.py_func(boom, [x], tf.float32, stateful=True)

    p = tf.placeholder(tf.float32, [None])
    out = f(p)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="negative row"):
            sess.run(out, {p: [1.0, -1.0]})
        np.testing.assert_array_equal(sess.run(out, {p: [1.0, 2.0]}), [1.0, 2.0])


def test_session_close_cancels_calls_waiting_for_their_batch(graph):
    f = tf.nondifferentiable_batch_function(1, 8, 60_000_000)(lambda x: x + 1.0)
    p = tf.placeholder(tf.float32, [None])
    out = f(p)
    sess = tf.Session()
    caught = []

    def run():
        try:
            sess.run(out, {p: [1.0]})
        except tf.errors.CancelledError as e:
            caught.append(e)

    threads = [start(run) for _ in range(2)]
    wait_until(blocked_steps(sess, 2))
    sess.close()
    join(*threads)
    assert len(caught) == 2


def test_building_checks(graph):
    f = tf.nondifferentiable_batch_function(1, 4, 10)(lambda x: x)
    with pytest.raises(ValueError, match="supposed to be Tensors"):
        f(np.ones((2, 2), np.float32))
    with pytest.raises(LookupError, match="No gradient defined"):
        p = tf.placeholder(tf.float32, [None])
        tf.gradients(f(p), p)
    op = graph.get_operation_by_name("batch/BatchFunction")
    assert op.get_attr("shared_name") == b"batch/"
    assert op.get_attr("enable_large_batch_splitting") is True


# ---- against TensorFlow ------------------------------------------------------------------

TABLE = """
seen = []
def rec(x):
    seen.append(list(x.shape))
    return x
def first_line(e):
    m = e.message
    k = m.find("Node: ")
    if k >= 0:
        m = m[k:].split("\\n", 1)[1]
    return m.split("\\n")[0]
def make(**kw):
    @tf.nondifferentiable_batch_function(**kw)
    def f(x, z):
        y = tf.py_func(rec, [x], tf.float32, stateful=True)
        y.set_shape(x.shape)
        return {"y": y * 2.0, "rows": [z + 1, tf.reshape(x, [tf.shape(x)[0], -1])[:, :1]]}
    return f
configs = [dict(max_batch_size=8, allowed_batch_sizes=[2, 4]),
           dict(max_batch_size=4, allowed_batch_sizes=[2, 3]),
           dict(max_batch_size=4, allowed_batch_sizes=[3, 2]),
           dict(max_batch_size=8, allowed_batch_sizes=[2, 4], enable_large_batch_splitting=False),
           dict(max_batch_size=4)]
px = tf.placeholder(tf.float32, None)
pz = tf.placeholder(tf.int32, None)
outs = [make(num_batch_threads=1, batch_timeout_micros=1000, **kw)(px, pz) for kw in configs]
feeds = [(np.arange(12, dtype=np.float32).reshape(6, 2), np.arange(6)),
         (np.arange(3, dtype=np.float32), np.arange(3)),
         (np.ones(3, np.float32), np.arange(2)),
         (np.float32(1), np.int32(2)),
         (np.ones((0, 3), np.float32), np.zeros((0,), np.int32))]
table = []
with tf.Session() as sess:
    for o in outs:
        for fx, fz in feeds:
            del seen[:]
            try:
                r = sess.run(o, {px: fx, pz: fz})
                table.append([r["y"].tolist(), r["rows"][0].tolist(), r["rows"][1].tolist(),
                              list(seen)])
            except tf.errors.OpError as e:
                table.append([type(e).__name__, first_line(e)])
"""


@pytest.mark.oracle
def test_batches_padding_splitting_and_errors_as_tensorflows(graph):
    want = run_tf(TABLE + "result = table")
    scope: dict = {"tf": tf, "np": np}
    exec(TABLE, scope)
    assert scope["table"] == want
    assert want[0][3] == [[4, 2], [2, 2]]  # 6 rows split into batches of 4 and 2
    assert want[1][3] == [[4]]  # 3 rows padded to 4


GRAPH = """
w = tf.get_variable("w", initializer=10.0, use_resource=True)
@tf.nondifferentiable_batch_function(1, 4, 1000, allowed_batch_sizes=[2, 4])
def f(x):
    return x * 2.0 + w
p = tf.placeholder(tf.float32, [None], name="p")
out = tf.identity(f(p), name="out")
"""

LOAD = """
tf.train.import_meta_graph({path!r})
g = tf.get_default_graph()
with tf.Session() as sess:
    sess.run(g.get_operation_by_name("w/Assign"))
    values = sess.run("out:0", {{"p:0": [1.0, 2.0, 3.0]}}).tolist()
"""


@pytest.mark.oracle
def test_meta_graphs_cross_both_ways(graph, tmp_path):
    theirs, ours = str(tmp_path / "theirs.meta"), str(tmp_path / "ours.meta")
    run_tf(GRAPH + f"tf.train.export_meta_graph({theirs!r})")
    exec(GRAPH, {"tf": tf})
    tf.train.export_meta_graph(ours)
    assert run_tf(LOAD.format(path=ours) + "result = values") == [12.0, 14.0, 16.0]
    with tf.Graph().as_default():
        scope: dict = {"tf": tf}
        exec(LOAD.format(path=theirs), scope)
        assert scope["values"] == [12.0, 14.0, 16.0]
