"""GPU steps as CUDA graphs (runtime/gpu_graphs.py, kernels/gpu/graphs.py).

On CPU machines these run on simulated GPUs, where a capture runs the step and a replay
runs it again from the fixed feed buffers: the runtime's side (signatures, warm-up, feed
buffers, the variable checks, fallbacks) is tested. On a machine with CuPy and a GPU the
same tests capture real CUDA graphs (benchmarks/gpu/run_device.py runs this file there).
"""

from __future__ import annotations

import contextlib
import os

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels.gpu import backend, graphs
from tests import threads_util

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def gpus():
    n = backend.simulate_gpus(1)
    assert n == 1
    graphs.simulate(True)
    yield
    graphs.simulate(False)
    backend.simulate_gpus(0)


def _mlp(opt, seed=3):
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(seed)
        x = tf.placeholder(tf.float32, [None, 12])
        y = tf.placeholder(tf.int64, [None])
        h = tf.layers.dense(x, 16, activation=tf.nn.relu)
        logits = tf.layers.dense(h, 4)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y, logits=logits))
        gs = tf.train.get_or_create_global_step()
        train = opt().minimize(loss, global_step=gs)
        init = tf.global_variables_initializer()
    return g, x, y, loss, train, init


def _graphs_of(sess):
    return [s._gpu_graphs for s in sess._steps.values() if s._gpu_graphs is not None]


@contextlib.contextmanager
def _graphs_on(capture: bool):
    """TENSORFLUX_GPU_GRAPHS for the sessions made inside (the previous value after)."""
    before = os.environ.get("TENSORFLUX_GPU_GRAPHS")
    os.environ["TENSORFLUX_GPU_GRAPHS"] = "1" if capture else "0"
    try:
        yield
    finally:
        if before is None:
            del os.environ["TENSORFLUX_GPU_GRAPHS"]
        else:
            os.environ["TENSORFLUX_GPU_GRAPHS"] = before


def _train(opt, capture: bool, steps=8, batch=10):
    with _graphs_on(capture):
        return _train_steps(opt, steps, batch)


def _train_steps(opt, steps, batch):
    g, x, y, loss, train, init = _mlp(opt)
    rng = np.random.default_rng(0)
    losses = []
    with tf.Session(graph=g) as s:
        s.run(init)
        for _ in range(steps):
            feed = {x: rng.standard_normal((batch, 12)).astype(np.float32),
                    y: rng.integers(0, 4, batch)}
            losses.append(s.run([loss, train], feed)[0])
        weights = s.run(g.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES))
        step = s.run(g.get_collection(tf.GraphKeys.GLOBAL_STEP)[0])
        captured = [(sg.captures, sg.replays, list(sg.failures)) for sg in _graphs_of(s)]
    return np.array(losses), weights, step, captured


@pytest.mark.parametrize("opt", [lambda: tf.train.AdamOptimizer(0.01),
                                 lambda: tf.train.MomentumOptimizer(0.1, 0.9),
                                 lambda: tf.train.GradientDescentOptimizer(0.1)],
                         ids=["adam", "momentum", "sgd"])
def test_a_captured_training_step_trains_as_kernel_by_kernel(opt):
    losses, weights, step, captured = _train(opt, capture=True)
    ref_losses, ref_weights, ref_step, _ = _train(opt, capture=False)
    assert step == ref_step == 8
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5, atol=1e-6)
    for w, r in zip(weights, ref_weights, strict=True):
        np.testing.assert_allclose(w, r, rtol=1e-5, atol=1e-6)
    train_steps = [c for c in captured if c[0] or c[1]]
    assert train_steps, captured
    caps, replays, failures = train_steps[0]
    assert caps == 1 and replays == 8 - graphs_warmup() - 1 and not failures


def graphs_warmup():
    from tensorflux.runtime import gpu_graphs
    return gpu_graphs.WARMUP_RUNS


def test_each_feed_signature_is_captured_apart_and_a_new_batch_size_still_runs():
    g, x, y, loss, train, init = _mlp(lambda: tf.train.GradientDescentOptimizer(0.1))
    rng = np.random.default_rng(1)
    with tf.Session(graph=g) as s:
        s.run(init)
        for batch in (4, 4, 4, 4, 6, 6, 6, 6, 4):
            out = s.run([loss, train], {x: rng.standard_normal((batch, 12)).astype(
                np.float32), y: rng.integers(0, 4, batch)})[0]
            assert np.isfinite(out)
        (sg,) = [sg for sg in _graphs_of(s) if sg.captures]
        assert sg.captures == 2 and sg.replays == 3


def test_loaded_variables_are_used_and_reinitialized_ones_drop_the_graph():
    g, x, y, loss, train, init = _mlp(lambda: tf.train.GradientDescentOptimizer(0.1))
    feed = {x: np.ones((5, 12), np.float32), y: np.arange(5) % 4}
    with tf.Session(graph=g) as s:
        s.run(init)
        variables = g.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)
        start = s.run(variables)
        first = [s.run([loss, train], feed)[0] for _ in range(5)]
        # Loading writes into the variables' buffers (the load is a capturable step
        # itself): the graph stays and replays from the loaded values.
        for v, value in zip(variables, start, strict=True):
            v.load(value, s)
        again = [s.run([loss, train], feed)[0] for _ in range(5)]
        (sg,) = [sg for sg in _graphs_of(s) if sg.captures]
        assert (sg.captures, sg.replays) == (1, 7)
        # The initializers (random ops: not captured) store new arrays: the graph is
        # dropped, and training goes on from the new values.
        s.run(init)
        fresh = s.run(loss, feed)
        after = [s.run([loss, train], feed)[0] for _ in range(5)]
        assert sg.captures == 2
    np.testing.assert_allclose(again, first, rtol=1e-6)
    assert after[0] == pytest.approx(fresh, rel=1e-6)
    assert after[-1] < after[0]


def test_steps_with_random_ops_or_fetching_feeds_are_not_captured():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4, 3])
        w = tf.Variable(tf.ones([3, 2]))
        drop = tf.nn.dropout(tf.matmul(x, w), rate=0.5)
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as s:
        s.run(init)
        for _ in range(5):
            s.run(drop, {x: np.ones((4, 3), np.float32)})
        assert all(sg.captures == 0 for sg in _graphs_of(s))
        assert not any(step._gpu_graphs is not None and step._gpu_graphs.captures
                       for step in s._steps.values())


def test_graphs_are_off_with_the_environment_switch(monkeypatch):
    monkeypatch.setenv("TENSORFLUX_GPU_GRAPHS", "0")
    g, x, y, loss, train, init = _mlp(lambda: tf.train.GradientDescentOptimizer(0.1))
    with tf.Session(graph=g) as s:
        s.run(init)
        for _ in range(4):
            s.run(train, {x: np.ones((3, 12), np.float32), y: np.zeros(3, np.int64)})
        assert not _graphs_of(s)


def test_a_feed_of_the_wrong_shape_is_still_an_error_after_capture():
    g, x, y, loss, train, init = _mlp(lambda: tf.train.GradientDescentOptimizer(0.1))
    with tf.Session(graph=g) as s:
        s.run(init)
        for _ in range(4):
            s.run(train, {x: np.ones((3, 12), np.float32), y: np.zeros(3, np.int64)})
        with pytest.raises(ValueError):
            s.run(train, {x: np.ones((3, 11), np.float32), y: np.zeros(3, np.int64)})


def test_out_of_range_labels_give_nan_in_a_captured_step_as_tensorflow_gpu_kernel():
    # Labels are in device memory in a captured step and are not read on the host there:
    # out-of-range rows get NaN (TensorFlow's GPU kernel), the others their loss.
    g = tf.Graph()
    with g.as_default():
        logits = tf.placeholder(tf.float32, [3, 4])
        labels = tf.placeholder(tf.int64, [3])
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                              logits=logits * 1.0)
    z = np.zeros((3, 4), np.float32)
    with tf.Session(graph=g) as s:
        for _ in range(4):
            out = s.run(loss, {logits: z, labels: np.array([0, 1, 2])})
        np.testing.assert_allclose(out, np.log(4.0) * np.ones(3), rtol=1e-6)
        out = s.run(loss, {logits: z, labels: np.array([0, 7, 2])})
        assert np.isnan(out[1]) and np.isfinite(out[[0, 2]]).all()
        (sg,) = [sg for sg in _graphs_of(s) if sg.captures]
        assert sg.replays >= 1


def _input_model(make_batch, opt=lambda: tf.train.AdamOptimizer(0.01)):
    """The MLP of _mlp on batches that host work produces (a dataset or a queue)."""
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(5)
        x, y, extra = make_batch()
        h = tf.layers.dense(x, 16, activation=tf.nn.relu)
        logits = tf.layers.dense(h, 4)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y, logits=logits))
        train = opt().minimize(loss)
        init = tf.global_variables_initializer()
    return g, loss, train, init, x, extra


def _dataset_batch():
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((35, 12)).astype(np.float32)
    ys = rng.integers(0, 4, 35)
    ds = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(10)  # 10, 10, 10, then 5
    x, y = tf.data.make_one_shot_iterator(ds.repeat(3)).get_next()
    return x, y, None


def _train_on_dataset(capture: bool):
    with _graphs_on(capture):
        g, loss, train, init, x, _ = _input_model(_dataset_batch)
        with tf.Session(graph=g) as s:
            s.run(init)
            losses, batches = [], []
            for _ in range(12):
                lv, xv, _ = s.run([loss, x, train])
                losses.append(lv)
                batches.append(xv.shape[0])
            with pytest.raises(tf.errors.OutOfRangeError):
                s.run(train)
            weights = s.run(g.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES))
            stats = [(sg.captures, sg.replays, list(sg.failures)) for sg in _graphs_of(s)
                     if sg.captures or sg.replays or sg.failures]
        return np.array(losses), batches, weights, stats


def test_a_step_fed_by_a_dataset_iterator_is_captured_and_trains_as_kernel_by_kernel():
    losses, batches, weights, stats = _train_on_dataset(capture=True)
    ref_losses, ref_batches, ref_weights, _ = _train_on_dataset(capture=False)
    assert batches == ref_batches == [10, 10, 10, 5] * 3
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5, atol=1e-6)
    for w, r in zip(weights, ref_weights, strict=True):
        np.testing.assert_allclose(w, r, rtol=1e-5, atol=1e-6)
    # Each batch size is a signature of its own: run, warm-up, capture, then replays (the
    # runs of the other size kernel by kernel keep the variables' buffers, so neither
    # graph is dropped): 9 batches of 10 -> 1 capture + 6 replays, 3 of 5 -> 1 capture.
    assert stats == [(2, 6, [])], stats


def test_a_step_fed_by_a_queue_is_captured_and_a_closed_session_cancels_its_wait():
    def queue_batch():
        q = tf.FIFOQueue(100, [tf.float32, tf.int64], shapes=[[12], []])
        x, y = q.dequeue_many(8)
        xs = tf.placeholder(tf.float32, [None, 12])
        ys = tf.placeholder(tf.int64, [None])
        return x, y, (q.enqueue_many([xs, ys]), xs, ys)

    g, loss, train, init, x, (enqueue, xs, ys) = _input_model(queue_batch)
    rng = np.random.default_rng(4)
    s = tf.Session(graph=g)
    s.run(init)
    s.run(enqueue, {xs: rng.standard_normal((48, 12)).astype(np.float32),
                    ys: rng.integers(0, 4, 48)})
    losses = [s.run([loss, train])[0] for _ in range(6)]
    assert all(np.isfinite(losses))
    (sg,) = [sg for sg in _graphs_of(s) if sg.captures]
    assert (sg.captures, sg.replays) == (1, 3)
    # The queue is empty now: a step waits in its dequeue until the session closes.
    threads_util.assert_close_cancels_blocked_runs(s, train, 1)


def test_a_restored_checkpoint_is_what_the_replays_train_from(tmp_path):
    g, x, y, loss, train, init = _mlp(lambda: tf.train.MomentumOptimizer(0.1, 0.9))
    with g.as_default():
        saver = tf.train.Saver()
    feed = {x: np.linspace(-1, 1, 60, dtype=np.float32).reshape(5, 12), y: np.arange(5) % 4}
    with tf.Session(graph=g) as s:
        s.run(init)
        for _ in range(4):
            s.run(train, feed)
        path = saver.save(s, str(tmp_path / "ckpt"))
        at_save = [s.run([loss, train], feed)[0] for _ in range(3)]
        saver.restore(s, path)
        after = [s.run([loss, train], feed)[0] for _ in range(3)]
        step = [sg for sg in _graphs_of(s) if sg.captures and sg.replays >= 3]
        assert step and not any(sg.failures for sg in _graphs_of(s))
    np.testing.assert_allclose(after, at_save, rtol=1e-6)
