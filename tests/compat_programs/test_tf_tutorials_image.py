"""Gaps that TensorFlow's own TF1 image tutorials hit (tensorflow/models tutorials/image:
mnist/convolutional.py, cifar10/*, alexnet/alexnet_benchmark.py; tensorflow/examples/tutorials/
mnist/*). Each test is the smallest program with the tutorial's pattern."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tensorflux as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def test_slim_prefetch_queue_of_a_batch_is_filled_by_its_queue_runner():
    # cifar10_multi_gpu_train.py: prefetch_queue([images, labels], capacity=2 * num_gpus),
    # then one dequeue per tower.
    counter = tf.train.range_input_producer(100, shuffle=False).dequeue()
    images, labels = tf.train.batch([tf.fill([2, 2], tf.cast(counter, tf.float32)), counter],
                                    batch_size=4, num_threads=1)
    batch_queue = tf.contrib.slim.prefetch_queue.prefetch_queue([images, labels], capacity=4)
    assert batch_queue.queue_ref.op.name == "prefetch_queue/fifo_queue"
    assert tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)[-1].queue is batch_queue
    summary = tf.get_collection(tf.GraphKeys.SUMMARIES)[-1]
    image_batch, label_batch = batch_queue.dequeue()
    assert image_batch.shape.as_list() == [4, 2, 2] and label_batch.dtype == tf.int32
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        first, second = sess.run(label_batch), sess.run(label_batch)
        got_images, got_labels = sess.run([image_batch, label_batch])
        np.testing.assert_array_equal(np.concatenate([first, second]), np.arange(8))
        np.testing.assert_array_equal(got_images[:, 0, 0], got_labels.astype(np.float32))
        assert "prefetch_queue/fraction_of_4_full" in str(sess.run(summary))
        coord.request_stop()
        coord.join(threads)


def test_slim_prefetch_queue_of_a_dict_names_components_in_sorted_order():
    tensors = {"b": tf.constant([1, 2]), "a": tf.constant(3.0)}
    queue = tf.contrib.slim.prefetch_queue.prefetch_queue(tensors, num_threads=2,
                                                          dynamic_pad=True, name="pf")
    assert queue.names == ["a", "b"] and queue.queue_ref.op.type == "PaddingFIFOQueueV2"
    assert len(tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)[-1].enqueue_ops) == 2
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        out = sess.run(queue.dequeue())
        coord.request_stop()
        sess.run(queue.close(cancel_pending_enqueues=True))
        coord.join(threads)
    assert out["a"] == 3.0 and list(out["b"]) == [1, 2]


@pytest.mark.parametrize("transpose_a,transpose_b", [(False, False), (True, False),
                                                     (False, True)])
def test_float16_matmul_is_the_float32_product_rounded_once(transpose_a, transpose_b):
    # convolutional.py --use_fp16: its fully connected layers in float16 took 0.7 s a
    # product (NumPy's float16 matmul has no BLAS). TF 2.21 gives the float32 product rounded
    # to float16 once (4096 ones sum to 4096, not to float16's 2048 + 1 == 2048).
    rng = np.random.default_rng(0)
    a = rng.random((64, 300)).astype(np.float16)
    b = rng.random((300, 20)).astype(np.float16)
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    product = tf.matmul(a.T.copy() if transpose_a else a, b.T.copy() if transpose_b else b,
                        transpose_a=transpose_a, transpose_b=transpose_b)
    ones = tf.matmul(np.ones((2, 4096), np.float16), np.ones((4096, 3), np.float16))
    batched = tf.matmul(np.stack([a, a]), np.stack([b, b]))
    with tf.Session() as sess:
        got, got_ones, got_batched = sess.run([product, ones, batched])
    assert got.dtype == np.float16 and got_batched.dtype == np.float16
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_ones, np.full((2, 3), 4096, np.float16))
    np.testing.assert_array_equal(got_batched, np.stack([want, want]))


def test_float16_products_never_reach_numpys_float16_matmul(monkeypatch):
    # convolutional.py --use_fp16's fc1: [64, 3136] x [3136, 512] took 0.7 s in NumPy's
    # float16 matmul (no BLAS), about 0.01 s through float32 BLAS. No timing here: the
    # kernels must hand NumPy float32 operands, whatever path they take.
    seen = []
    matmul = np.matmul

    def spy(x, y, *args, **kwargs):
        seen.append((np.asarray(x).dtype, np.asarray(y).dtype))
        return matmul(x, y, *args, **kwargs)

    monkeypatch.setattr(np, "matmul", spy)
    a = np.ones((64, 3136), np.float16)
    product = tf.matmul(a, np.full((3136, 512), 0.5, np.float16))
    batched = tf.matmul(np.stack([a[:, :8], a[:, :8]]), np.ones((2, 8, 3), np.float16))
    with tf.Session() as sess:
        got, got_batched = sess.run([product, batched])
    assert got.dtype == np.float16 and got[0, 0] == 1568.0 and got_batched[0, 0, 0] == 8.0
    assert seen and np.dtype(np.float16) not in {d for pair in seen for d in pair}


def test_python_client_timeline_traces_a_full_trace_step():
    # mnist_softmax_xla.py (beside the MNIST tutorials): `from tensorflow.python.client
    # import timeline`, then the last training step traced into a Chrome trace file.
    from tensorflux.python.client import timeline
    x = tf.placeholder(tf.float32, [None, 3])
    w = tf.Variable(tf.zeros([3, 2]))
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
    train_step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    run_metadata = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train_step, {x: np.ones((4, 3), np.float32)},
                 options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                 run_metadata=run_metadata)
    trace = timeline.Timeline(step_stats=run_metadata.step_stats)
    events = json.loads(trace.generate_chrome_trace_format())["traceEvents"]
    assert "MatMul" in {e["name"] for e in events if e["ph"] == "X"}
