"""Queue throughput: enqueue_many / dequeue_many of float32 [128, 784] batches between two
threads.

A FIFOQueue of float32 [784] elements (capacity 10 batches). A producer thread runs
`q.enqueue_many([x])` 2,000 times, `x` a [128, 784] float32 variable; the main thread runs
`q.dequeue_many(128)` 2,000 times and receives each batch as a NumPy array. 100 warm-up
batches first. Figure: batches / wall time of the 2,000 timed dequeues.

A second figure feeds each batch from Python instead (`q.enqueue_many([x_placeholder])`,
the same NumPy array every time), the way input code without a reader fills a queue.

    python benchmarks/programs/queue_throughput.py --backend tensorflux|tensorflow
"""

import threading
import time

import numpy as np
from _bench import BACKEND, emit, guarded

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

BATCH, WIDTH = 128, 784
WARMUP, RUNS = 100, 2000


def measure(feed: bool) -> float:
    data = np.random.default_rng(0).standard_normal((BATCH, WIDTH)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        q = tf.FIFOQueue(10 * BATCH, tf.float32, shapes=[[WIDTH]])
        if feed:
            x = tf.placeholder(tf.float32, [BATCH, WIDTH])
        else:
            x = tf.Variable(data)
        enqueue = q.enqueue_many([x])
        dequeue = q.dequeue_many(BATCH)
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        feed_dict = {x: data} if feed else None
        total = WARMUP + RUNS

        def produce():
            for _ in range(total):
                sess.run(enqueue, feed_dict)

        producer = threading.Thread(target=produce)
        producer.start()
        for _ in range(WARMUP):
            sess.run(dequeue)
        start = time.perf_counter()
        for _ in range(RUNS):
            out = sess.run(dequeue)
        elapsed = time.perf_counter() - start
        producer.join()
        if out.shape != (BATCH, WIDTH) or not np.array_equal(out, data):
            raise RuntimeError("wrong batch dequeued")
    return RUNS / elapsed


CASES = [
    ("queue_throughput", "enqueue_many/dequeue_many float32 [128, 784], producer + consumer "
     "threads (2,000 batches)", False),
    ("queue_throughput_feed", "the same, each batch fed from NumPy to enqueue_many", True),
]
for name, label, feed in CASES:
    target = 1.0 if not feed else None
    extra = {"label": label}
    if target:
        extra["target"] = target
    with guarded(name, **extra):
        emit(name, measure(feed), "batches/s", "higher", **extra)
