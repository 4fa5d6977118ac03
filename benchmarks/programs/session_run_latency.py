"""Latency of one tiny `Session.run`: `b = a + 1.0` for a float32 scalar placeholder `a`,
fed 1.0 on every call. Graph optimizations off, one thread (the same config as null_ops).
200 warm-up calls, then 3,000 timed calls; figure: wall time / 3,000, in microseconds.

    python benchmarks/programs/session_run_latency.py --backend tensorflux|tensorflow
"""

import time

from _bench import BACKEND, emit, guarded, optimizations_off

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

WARMUP = 200
RUNS = 3000
OFF = optimizations_off(tf)

NAME = "session_run_latency"
LABEL = "Session.run(b, {a: 1.0}), b = a + 1.0, float32 scalar (3,000 calls)"
with guarded(NAME, label=LABEL, target=2.0):
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [])
        b = a + 1.0
    with tf.Session(graph=g, config=OFF) as sess:
        got = sess.run(b, {a: 1.0})
        if got != 2.0:
            raise RuntimeError(f"wrong result: expected 2.0, got {got!r}")
        for _ in range(WARMUP):
            sess.run(b, {a: 1.0})
        t = time.perf_counter()
        for _ in range(RUNS):
            sess.run(b, {a: 1.0})
        elapsed = time.perf_counter() - t
    emit(NAME, elapsed / RUNS * 1e6, "us", "lower", label=LABEL, target=2.0)
