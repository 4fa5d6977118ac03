"""Models, layers and timing shared by the model programs (mlp_step.py, cnn_step.py,
lstm_lm.py, step_memory.py, ...), written against a `tf` module passed in (the programs
choose the backend). Copied in structure from
../shared/anchors/tf_models.py.
"""

from __future__ import annotations

import time

import numpy as np

WARMUP = 5
BUDGET_S = 20.0  # timed steps stop early past this, keeping a program well under a minute


def dense(tf, h, n, act=None):
    d = int(h.shape[-1])
    w = tf.Variable(tf.random_normal([d, n], stddev=0.05))
    b = tf.Variable(tf.zeros([n]))
    o = tf.matmul(h, w) + b
    return act(o) if act else o


def conv(tf, h, n, k, act=None):
    d = int(h.shape[-1])
    w = tf.Variable(tf.random_normal([k, k, d, n], stddev=0.05))
    b = tf.Variable(tf.zeros([n]))
    o = tf.nn.conv2d(h, w, strides=[1, 1, 1, 1], padding="SAME") + b
    return act(o) if act else o


def mlp(tf, device_fn=None):
    """The MLP of ../shared/anchors/tf_models.py: 784-512-512-10 (ReLU), sparse softmax
    cross-entropy, Adam(1e-3), in a new Graph under `tf.device(device_fn)`.

    Returns (graph, x, y, init, train).
    """
    g = tf.Graph()
    with g.as_default(), tf.device(device_fn):
        x = tf.placeholder(tf.float32, [None, 784])
        y = tf.placeholder(tf.int64, [None])
        h = dense(tf, dense(tf, x, 512, tf.nn.relu), 512, tf.nn.relu)
        logits = dense(tf, h, 10)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        train = tf.train.AdamOptimizer(1e-3).minimize(loss)
        init = tf.global_variables_initializer()
    return g, x, y, init, train


def cnn(tf):
    """The CNN of ../shared/anchors/tf_models.py on 32x32x3 images: conv5x5x32-ReLU, max
    pool, conv5x5x64-ReLU, max pool, fc256-ReLU, fc10, sparse softmax cross-entropy,
    Momentum(0.01, 0.9), in a new Graph.

    Returns (graph, x, y, init, train).
    """
    def pool(h):
        return tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")

    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 32, 32, 3])
        y = tf.placeholder(tf.int64, [None])
        h = pool(conv(tf, pool(conv(tf, x, 32, 5, tf.nn.relu)), 64, 5, tf.nn.relu))
        h = tf.reshape(h, [-1, 8 * 8 * 64])
        logits = dense(tf, dense(tf, h, 256, tf.nn.relu), 10)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        train = tf.train.MomentumOptimizer(0.01, 0.9).minimize(loss)
        init = tf.global_variables_initializer()
    return g, x, y, init, train


def lstm_lm(tf, rnn_cell, unroll: str, vocab: int = 10000, hidden: int = 512,
            steps: int = 20, batch: int = 32):
    """An LSTM language model: embedding lookup on a [vocab, hidden] variable,
    BasicLSTMCell(hidden) unrolled over `steps` time steps by tf.nn.dynamic_rnn (`unroll`
    "dynamic") or tf.nn.static_rnn ("static"), full softmax over the vocabulary (sparse
    softmax cross-entropy), Adam(1e-3), in a new Graph. `rnn_cell` is the backend's TF1 cell
    module.

    Returns (graph, x, y, init, train).
    """
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(0)
        x = tf.placeholder(tf.int32, [batch, steps])
        y = tf.placeholder(tf.int32, [batch, steps])
        embedding = tf.get_variable("embedding", [vocab, hidden],
                                    initializer=tf.random_uniform_initializer(-0.05, 0.05))
        inputs = tf.nn.embedding_lookup(embedding, x)
        cell = rnn_cell.BasicLSTMCell(hidden, forget_bias=0.0)
        if unroll == "dynamic":
            outputs, _ = tf.nn.dynamic_rnn(cell, inputs, dtype=tf.float32)
        else:
            outs, _ = tf.nn.static_rnn(cell, tf.unstack(inputs, axis=1), dtype=tf.float32)
            outputs = tf.stack(outs, axis=1)
        output = tf.reshape(outputs, [-1, hidden])
        softmax_w = tf.get_variable("softmax_w", [hidden, vocab],
                                    initializer=tf.random_uniform_initializer(-0.05, 0.05))
        softmax_b = tf.get_variable("softmax_b", [vocab], initializer=tf.zeros_initializer())
        logits = tf.matmul(output, softmax_w) + softmax_b
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.reshape(y, [-1]), logits=logits))
        train = tf.train.AdamOptimizer(1e-3).minimize(loss)
        init = tf.global_variables_initializer()
    return g, x, y, init, train


PEAK_SIDE = 1024  # the square float32 product whose rate is taken as the machine's peak
PEAK_REPS = 16


def sgemm_peak_gflops(reps: int = PEAK_REPS) -> tuple[float, int]:
    """`peak_here`, measured in a child process of this interpreter: BLAS threads started in
    the measuring process keep spinning after the product and take a core from the steps
    timed next (on a 2-core Zen 5 host the MLP step ran at ~1.9-2.5 ms for the next 20
    steps against 1.3 ms: `mlp_step.py`'s share read 0.33 in every round but the first). In
    this process when the child cannot run."""
    import json
    import os
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    code = (f"import sys; sys.path.insert(0, {here!r}); import json, _models; "
            f"print(json.dumps(_models.peak_here({int(reps)})))")
    try:
        child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               timeout=120, check=True)
        gflops, threads = json.loads(child.stdout.strip().splitlines()[-1])
        return float(gflops), int(threads)
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return peak_here(reps)


def peak_here(reps: int = PEAK_REPS) -> tuple[float, int]:
    """The machine's float32 GEMM peak now: (GFLOP/s, BLAS threads that reached it).
    NumPy's PEAK_SIDE^2 product, best of `reps`, with its BLAS's default thread count (the
    cores this process may run on, which OpenBLAS takes when nothing limits it) and with
    one thread, the better of the two: on a loaded machine OpenBLAS's spinning threads
    stall each other and one thread can be faster (e.g. 60 GFLOP/s with two threads
    against 91 with one, at a load average of 4 on 2 cores). Through threadpoolctl, so that
    tensorflux's one-thread BLAS policy (kernels/cpu/_blas.py) does not hide it; the
    previous count is restored afterwards (without threadpoolctl, as in TensorFlow's venv,
    only NumPy's BLAS as it is: nothing there limits it). Taken in the same run as a step's
    time, so that a share of it compares runs on machines (or loads) of different speeds."""
    import os

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        threadpool_limits = None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((PEAK_SIDE, PEAK_SIDE), dtype=np.float32)
    b = rng.standard_normal((PEAK_SIDE, PEAK_SIDE), dtype=np.float32)
    out = np.empty((PEAK_SIDE, PEAK_SIDE), np.float32)

    def best_time() -> float:
        np.matmul(a, b, out=out)  # the BLAS threads start
        best = float("inf")
        for _ in range(reps):
            t = time.perf_counter()
            np.matmul(a, b, out=out)
            best = min(best, time.perf_counter() - t)
        return best

    if threadpool_limits is None:
        times = {0: best_time()}
    else:
        times = {}
        for threads in sorted({cores, 1}, reverse=True):
            with threadpool_limits(limits=threads, user_api="blas"):
                times[threads] = best_time()
    threads = min(times, key=times.get)
    return 2.0 * PEAK_SIDE ** 3 / times[threads] / 1e9, threads


def mlp_product_flops(batch: int = 128, sizes=(784, 512, 512, 10)) -> float:
    """The FLOPs of an MLP training step's matrix products (`mlp`): every layer's forward
    product and weight gradient, and the input gradient of every layer but the first
    (the placeholder needs none). 410.8e6 for 784-512-512-10 at batch 128."""
    layers = [2.0 * batch * d * n for d, n in zip(sizes[:-1], sizes[1:], strict=True)]
    return 2 * sum(layers) + sum(layers[1:])


def median_step_ms(sess, op, feed, reps, with_cpu: bool = False):
    """Median wall time of `sess.run(op, feed)` over `reps` steps after WARMUP steps.

    Returns (median in ms, number of timed steps); fewer than `reps` (at least 3) when the
    steps are slow enough to pass BUDGET_S. With `with_cpu`, also the median CPU time of the
    process per step in ms (all threads: steadier than the wall time on a shared machine).
    """
    for _ in range(WARMUP):
        sess.run(op, feed)
    times, cpu = [], []
    start = time.perf_counter()
    while len(times) < reps and (len(times) < 3 or time.perf_counter() - start < BUDGET_S):
        t, c = time.perf_counter(), time.process_time()
        sess.run(op, feed)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    ms = float(np.median(times)) * 1e3
    if with_cpu:
        return ms, len(times), float(np.median(cpu)) * 1e3
    return ms, len(times)
