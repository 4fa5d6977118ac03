"""Persistent tensors: tf.get_session_handle / get_session_tensor / delete_session_tensor,
TensorHandle's eval/delete, garbage collection of handles, the store's lifetime and
concurrency; handles as TensorFlow writes them."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.ops.session_ops import TensorHandle
from tests.oracle import run_tf

CPU = "/job:localhost/replica:0/task:0/device:CPU:0"


def test_the_documented_example():
    with tf.Graph().as_default():
        c = tf.multiply(tf.constant(10.0), tf.constant(5.0))
        h = tf.get_session_handle(c)
        assert (h.op.type, h.dtype, h.shape.as_list()) == ("GetSessionHandle", tf.string, [])
        with tf.Session() as sess:
            held = sess.run(h)
            assert isinstance(held, TensorHandle)
            assert held.handle == f"GetSessionHandle;0;{CPU}" and str(held) == held.handle
            p, a = tf.get_session_tensor(held.handle, tf.float32)
            b = tf.multiply(a, 10.0)
            assert sess.run(b, feed_dict={p: held.handle}) == 500.0
            assert sess.run(b, feed_dict={p: held}) == 500.0  # a TensorHandle feeds its string
            assert held.eval() == 50.0
            fetched, value = sess.run([h, c])  # a handle fetched beside its value
            assert fetched.handle == f"GetSessionHandle;1;{CPU}" and value == 50.0


def test_values_kinds_and_chaining():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2])
        h = tf.get_session_handle(x * 2.0)
        strings = tf.get_session_handle(tf.constant([b"a", b"bc"]))
        with tf.Session() as sess:
            one = sess.run(h, {x: [[1, 2], [3, 4]]})
            text = sess.run(strings)
            np.testing.assert_array_equal(one.eval(), [[2, 4], [6, 8]])
            assert text.eval().tolist() == [b"a", b"bc"]
            # a step reading one persistent tensor and storing another
            p, t = tf.get_session_tensor(one.handle, tf.float32)
            h2 = tf.get_session_handle(tf.reduce_sum(t, 0))
            two = sess.run(h2, {p: one.handle})
            np.testing.assert_array_equal(two.eval(), [8, 12])
            assert one.dtype == tf.float32 and text.dtype == tf.string


def test_delete_and_its_errors():
    with tf.Graph().as_default():
        h = tf.get_session_handle(tf.constant(3.0))
        with tf.Session() as sess:
            held = sess.run(h)
            holder, deleter = tf.delete_session_tensor(held.handle)
            assert (holder.op.type, deleter.type) == ("Placeholder", "DeleteSessionTensor")
            sess.run(deleter, {holder: held.handle})
            p, t = tf.get_session_tensor(held.handle, tf.float32, name="reader")
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="is not in the session store") as e:
                sess.run(t, {p: held.handle})
            assert "reader" in str(e.value)
            with pytest.raises(tf.errors.InvalidArgumentError, match="not in the session"):
                sess.run(deleter, {holder: held.handle})
            other = sess.run(h)
            other.delete()
            with pytest.raises(TypeError, match="may have already been deleted"):
                other.eval()
            with pytest.raises(TypeError, match="must be of type Tensor"):
                tf.get_session_handle(3.0)


def test_garbage_collected_handles_and_closed_sessions():
    with tf.Graph().as_default():
        h = tf.get_session_handle(tf.constant(7.0))
        sess = tf.Session()
        name = sess.run(h).handle  # the TensorHandle itself is dropped at once
        gc.collect()
        p, t = tf.get_session_tensor(name, tf.float32)
        with pytest.raises(tf.errors.InvalidArgumentError, match="not in the session store"):
            sess.run(t, {p: name})
        kept = sess.run(h)
        assert sess.run(t, {p: kept.handle}) == 7.0
        sess.close()
        with tf.Session() as fresh:  # another session has a store of its own
            with pytest.raises(tf.errors.InvalidArgumentError, match="not in the session"):
                fresh.run(t, {p: kept.handle})


def test_many_threads_store_and_read():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3])
        h = tf.get_session_handle(x + 1.0)
        p, t = tf.get_session_tensor(f"GetSessionHandle;0;{CPU}", tf.float32)
        out = tf.reduce_sum(t)
        errors = []
        with tf.Session() as sess:
            def work(k):
                try:
                    for j in range(20):
                        held = sess.run(h, {x: [k, j, 1.0]})
                        assert sess.run(out, {p: held.handle}) == k + j + 4.0
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append(e)
            threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
            for th in threads:
                th.start()
            for th in threads:
                th.join(timeout=60)
            assert not any(th.is_alive() for th in threads) and not errors
            handles = {sess.run(h, {x: [0, 0, 0]}).handle for _ in range(3)}
            assert len(handles) == 3  # every stored tensor gets a handle of its own


@pytest.mark.oracle
def test_handles_and_values_as_tensorflow():
    program = """
c = tf.constant(10.0) * 5.0
h = tf.get_session_handle(c)
h2 = tf.get_session_handle(tf.constant([1, 2, 3]))
with tf.Session() as sess:
    first, second = sess.run([h, h2])
    result = [first.handle, second.handle, first.eval(), second.eval()]
"""
    theirs = run_tf(program)
    scope = {"tf": tf}
    with tf.Graph().as_default():
        exec(program, scope)  # noqa: S102 - the same program under tensorflux
    ours = scope["result"]
    def parts(handles):  # (node, device) of each, and the ids: the run's order decides
        split = [h.split(";") for h in handles]
        return sorted((p[0], p[2]) for p in split), sorted(int(p[1]) for p in split)

    assert parts(ours[:2]) == parts(theirs[:2]) == (parts(theirs[:2])[0], [0, 1])
    assert ours[2] == theirs[2] and list(ours[3]) == list(theirs[3])
