"""Buffer forwarding (kernels/buffers.py, "donated inputs"): an elementwise kernel writes its
output into an input whose value dies at it and that nothing else holds. No value a user or
another node can see may ever change: feeds, fetches, variables, constants, values read by
two consumers, values held by a TensorArray or a queue. Checked under every strategy (the
reference executor donates nothing; the others must give its results) with arrays large
enough to be donated, plus the two executors' unread-output and Shape-scheduling rules
that keep large values from living longer than they must."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels import buffers
from tensorflux.runtime.exec_options import ExecOptions
from tests.op_test_util import STRATEGIES

N = 128 * 1024  # float32 elements: 512 KiB, above buffers.DONATE_MIN_BYTES


@pytest.fixture
def donated(monkeypatch):
    """Counts the outputs kernels wrote into donated inputs."""
    calls = []
    real = buffers.donated_output

    def counting(inputs, positions, shape, dtype):
        out = real(inputs, positions, shape, dtype)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(buffers, "donated_output", counting)
    return calls


# ---- buffers.donatable: who else holds it -------------------------------------------------

def test_donatable_counts_every_other_holder():
    a = np.ones(N, np.float32)
    assert buffers.donatable(a)
    b = a  # noqa: F841 - a second holder
    assert not buffers.donatable(a)
    del b
    assert buffers.donatable(a)
    assert not buffers.donatable(np.ones(16, np.float32))  # too small to be worth it
    ro = np.ones(N, np.float32)
    ro.flags.writeable = False
    assert not buffers.donatable(ro)
    assert not buffers.donatable(np.empty(N, object))
    view = np.ones(2 * N, np.float32)[:N]  # a view whose base only it holds
    assert buffers.donatable(view)
    base = np.ones(2 * N, np.float32)
    held = base[:N]
    assert not buffers.donatable(held)  # `base` is held here too
    assert not buffers.donatable(np.broadcast_to(np.ones(N, np.float32), (2, N)))
    holders = [a]
    assert buffers.donations(holders, (0,)) == ()  # `a` is also a local here
    del a
    assert buffers.donations(holders, (0,)) == (0,)


def test_the_interpreter_counts_references_as_donatable_assumes():
    """`donatable(v)` for a local or a list slot: the count it expects (tests pin it for the
    interpreter in use, as for `exclusively_owned`)."""
    def probe(arr):
        return sys.getrefcount(arr)

    a = np.ones(N, np.float32)
    slots = [np.ones(N, np.float32)]
    counts = probe(a), probe(slots[0])  # (outside `assert`: pytest keeps its operands)
    assert counts == (3, 3)  # the local or the slot, the parameter, getrefcount's argument


# ---- whole steps: nothing visible changes --------------------------------------------------

def _graph(queue: bool):
    """A chain of large elementwise ops whose inputs are of every kind that must never be
    written: a feed, a constant, a variable's value, a value with two consumers, a fetched
    intermediate, a value kept by a TensorArray and (with `queue`) one kept by a queue."""
    rng = np.random.default_rng(0)
    const = rng.standard_normal(N).astype(np.float32)
    init = rng.standard_normal(N).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [N])
        c = tf.constant(const)
        v = tf.Variable(init)
        a = tf.exp(x * 0.5)  # x: a feed; a: dies in b
        b = tf.sqrt(tf.abs(a - c)) + v  # c: a constant; v: a variable's value
        shared = tf.tanh(b)
        left = shared * 2.0  # shared: two consumers
        right = tf.nn.relu(shared)
        fetched = left + 1.0
        total = tf.maximum(fetched, right) - 3.0  # fetched: also fetched
        ta = tf.TensorArray(tf.float32, size=1).write(0, total)
        from_ta = ta.read(0)
        kept = tf.square(from_ta)
        if queue:
            q = tf.FIFOQueue(2, [tf.float32], shapes=[[N]])
            with tf.control_dependencies([q.enqueue([kept])]):
                after = tf.negative(kept) / 2.0
            deq = q.dequeue()
        else:
            after = tf.negative(kept) / 2.0
            deq = tf.identity(kept)
    fetches = [fetched, after, deq, x * 1.0, v.read_value()]
    return g, x, v, fetches, const, init


def _reference(feed, const, init):
    a = np.exp(feed * np.float32(0.5))
    b = np.sqrt(np.abs(a - const)) + init
    shared = np.tanh(b)
    fetched = shared * np.float32(2.0) + np.float32(1.0)
    total = np.maximum(fetched, np.maximum(shared, 0)) - np.float32(3.0)
    kept = np.square(total)
    return [fetched, -kept / np.float32(2.0), kept, feed, init]


@pytest.mark.parametrize("queue", [False, True], ids=["compiled", "queue"])
@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_no_visible_value_is_overwritten(strategy, queue, donated):
    g, x, v, fetches, const, init = _graph(queue)
    feed = np.random.default_rng(1).standard_normal(N).astype(np.float32)
    feed_copy = feed.copy()
    with tf.Session(graph=g, exec_options=STRATEGIES[strategy]) as sess:
        sess.run(v.initializer)
        for _ in range(2):  # the second run reuses the built step
            got = sess.run(fetches, {x: feed})
            want = _reference(feed_copy, const, init)
            for k, (a, b) in enumerate(zip(got, want, strict=True)):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"fetch {k}")
        np.testing.assert_array_equal(feed, feed_copy)
        np.testing.assert_array_equal(sess.run(v), init)
        np.testing.assert_array_equal(sess.run(g.get_tensor_by_name("Const:0")), const)
    if strategy == "reference":
        assert not any(donated)  # the specification forwards nothing
    elif not queue:  # (a step with a queue runs in a fixed order that does not forward)
        assert any(donated)  # the fast paths do forward


@pytest.mark.parametrize("strategy", ["auto", "dataflow"])
def test_fetched_arrays_stay_the_users(strategy):
    """A value the user fetched in one run is never a buffer a later run writes into."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [N])
        y = tf.exp(x) * 2.0
        z = y + 1.0
    feed = np.zeros(N, np.float32)
    with tf.Session(graph=g, exec_options=STRATEGIES[strategy]) as sess:
        first_y, first_z = sess.run([y, z], {x: feed})
        keep = first_y.copy(), first_z.copy()
        sess.run([y, z], {x: feed + 1.0})
        np.testing.assert_array_equal(first_y, keep[0])
        np.testing.assert_array_equal(first_z, keep[1])


def test_traced_runs_compute_the_same():
    g, x, v, fetches, const, init = _graph(queue=False)
    feed = np.random.default_rng(2).standard_normal(N).astype(np.float32)
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    with tf.Session(graph=g, exec_options=ExecOptions()) as sess:
        sess.run(v.initializer)
        plain = sess.run(fetches, {x: feed})
        traced = sess.run(fetches, {x: feed}, options=options,
                          run_metadata=tf.RunMetadata())
    for a, b in zip(plain, traced, strict=True):
        np.testing.assert_array_equal(a, b)


# ---- the executors let large values go early -----------------------------------------------

def _executors(sess):
    return [ex for step in sess._steps.values() for _, ex, _ in step.parts]


def test_the_static_schedule_runs_shape_ops_early_and_donates_dying_inputs():
    """The gradient's Shape of a forward value runs right after that value is made (not in
    the backward pass, which would keep the value alive until then), and a call whose
    input dies at it is given that input if nothing else holds it."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 1024])
        w = tf.constant(np.ones(1024, np.float32))
        pre = tf.exp(x)
        act = tf.nn.relu(pre + w)
        (grad,) = tf.gradients(tf.reduce_sum(act * act), [x])
    with tf.Session(graph=g) as sess:
        got = sess.run(grad, {x: np.zeros((128, 1024), np.float32)})
        ex = _executors(sess)[-1]
    np.testing.assert_allclose(got, np.full((128, 1024), 4.0), rtol=1e-6)
    lines = ex.source.splitlines()
    line_of = {ex._line_nodes[k + 1].name: k for k in range(len(lines))
               if ex._line_nodes.get(k + 1) is not None}
    # Exp, its donation-free `del`, then at once the gradient's Shape of Exp's output
    assert line_of["Exp"] < line_of["gradients/add_grad/Shape"] < line_of["add"]
    assert "_donatable(v0)" not in ex.source  # a feed: never donated, never checked
    assert any("donated=_d" in ln for ln in lines)


@pytest.mark.parametrize("strategy", ["dataflow", "frames"])
def test_the_dataflow_executor_drops_outputs_nobody_reads(strategy):
    """An assign's read of the variable that only a control dependency waits for is not
    kept until the step ends: a later in-place update of the variable finds its storage
    unshared and does not copy it (as Adam's sparse update does)."""
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(np.zeros(N, np.float32), use_resource=True)
        first = v.assign(v.read_value() + 1.0)  # its read value: a control input only
        with tf.control_dependencies([first]):
            second = v.assign_add(np.ones(N, np.float32), read_value=False)
        with tf.control_dependencies([second]):
            out = v.read_value()[:4]
    with tf.Session(graph=g, exec_options=STRATEGIES[strategy]) as sess:
        sess.run(v.initializer)
        storage = sess.run(out)
        np.testing.assert_array_equal(storage, np.full(4, 2.0, np.float32))
        ex = _executors(sess)[-1]
        unread = [it for it in ex.items if it.node.op == "ReadVariableOp"
                  and not any(idx >= 0 for _, idx in it.out_edges)]
        assert unread and all(it.num_outputs == 0 for it in unread)
