"""A compiled step's shape arithmetic memoized (codegen.Emitter.memo): Shape, Size and Rank
by their input's shape, the stateless nodes reading only them and constants by their
inputs; results as without it, for every batch size, in any order, from many threads."""

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.runtime import codegen, static_executor
from tests import threads_util


def _executors(sess):
    return [ex for step in sess._steps.values() for _, ex, _ in step.parts
            if hasattr(ex, "source")]


def _model():
    """A dense layer with a broadcasting bias and a mean loss, batch unknown: its gradients
    ask for the shapes of the activations (BroadcastGradientArgs, Mean's count)."""
    rng = np.random.default_rng(0)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 5])
        w = tf.Variable(rng.standard_normal((5, 3)).astype(np.float32))
        b = tf.Variable(rng.standard_normal(3).astype(np.float32))
        out = tf.nn.relu(tf.matmul(x, w) + b)
        loss = tf.reduce_mean(tf.square(out))
        grads = tf.gradients(loss, [x, w, b])
        init = tf.global_variables_initializer()
    return g, x, [loss] + grads, init


def _run(batches, memo: bool):
    g, x, fetches, init = _model()
    rng = np.random.default_rng(1)
    feeds = [rng.standard_normal((n, 5)).astype(np.float32) for n in batches]
    original = static_executor._memo_nodes
    if not memo:
        static_executor._memo_nodes = lambda order, fetches: set()
    try:
        with tf.Session(graph=g) as sess:
            sess.run(init)
            results = [sess.run(fetches, {x: f}) for f in feeds]
            sources = [ex.source for ex in _executors(sess)]
    finally:
        static_executor._memo_nodes = original
    return results, sources


def test_memoized_steps_equal_plain_ones_across_batch_sizes():
    # 300 rows: the mean's broadcast gradient (1200 bytes) is over MEMO_MAX_BYTES
    batches = [4, 7, 4, 1, 300, 7, 300, 4]
    (memo, sources), (plain, plain_sources) = _run(batches, True), _run(batches, False)
    for got, want in zip(memo, plain, strict=True):
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
    assert any("memo_by_shape" in s and "memo_by_inputs" in s for s in sources)
    assert not any("memo_by" in s for s in plain_sources)


def test_fetched_shapes_are_fresh_writable_arrays():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 2])
        shape = tf.shape(x)
        doubled = tf.shape(x) * 2 + 1
    with tf.Session(graph=g) as sess:
        first = sess.run(shape, {x: np.zeros((3, 2))})
        first[0] = 99  # the caller's to change
        assert sess.run(shape, {x: np.zeros((3, 2))}).tolist() == [3, 2]
        d = sess.run(doubled, {x: np.zeros((3, 2))})
        d[:] = 0
        assert sess.run(doubled, {x: np.zeros((3, 2))}).tolist() == [7, 5]


def test_memo_entries_are_bounded():
    g, x, fetches, init = _model()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        for n in range(1, 3 * codegen.MEMO_ENTRIES):
            loss, *_ = sess.run(fetches, {x: np.ones((n, 5), np.float32)})
            assert np.isfinite(loss)
        memos = [v for ex in _executors(sess) for k, v in ex._fn.__globals__.items()
                 if k.startswith("_m") and isinstance(v, dict)]
    assert all(len(m) <= codegen.MEMO_ENTRIES for m in memos)
    assert sum(len(m) > 0 for m in memos) >= 4


def test_memoized_outputs_are_read_only_and_held_inputs_keep_identities():
    memo = {}
    calls = []

    def add(ctx, a, b):
        calls.append(1)
        return a + b

    a, b = np.arange(3), np.ones(3, np.int64)
    out = codegen.memo_by_inputs(memo, add, None, a, b)
    assert not out.flags.writeable
    assert codegen.memo_by_inputs(memo, add, None, a, b) is out and len(calls) == 1
    with pytest.raises(ValueError):
        out[0] = 5
    big = np.ones(codegen.MEMO_MAX_BYTES, np.int64)  # over the bound: never kept
    codegen.memo_by_inputs(memo, add, None, big, big)
    codegen.memo_by_inputs(memo, add, None, big, big)
    assert len(calls) == 3 and len(memo) == 1


def test_many_threads_with_different_batches():
    g, x, fetches, init = _model()
    rng = np.random.default_rng(2)
    feeds = {n: rng.standard_normal((n, 5)).astype(np.float32) for n in (1, 2, 5, 9, 33)}
    with tf.Session(graph=g) as sess:
        sess.run(init)
        expected = {n: sess.run(fetches, {x: f}) for n, f in feeds.items()}
        errors = []

        def work(seed):
            order = np.random.default_rng(seed).permutation(list(feeds) * 6)
            try:
                for n in order:
                    got = sess.run(fetches, {x: feeds[n]})
                    for a, b in zip(got, expected[n], strict=True):
                        np.testing.assert_array_equal(a, b)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads_util.join(*(threads_util.start(work, i) for i in range(8)), timeout=60)
    assert not errors
