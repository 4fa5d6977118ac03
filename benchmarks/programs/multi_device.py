"""Several CPU devices in one process (ConfigProto(device_count={"CPU": n})).

1. MLP 784-512-512-10 (ReLU), batch 128, Momentum(0.01, 0.9): one step on one device, and
   model-parallel on two (layer 1 and the output layer on /cpu:0, layer 2 on /cpu:1,
   gradients colocated with their ops). Figures: median step ms over 30 steps after 5
   warm-up; and their ratio (2 devices / 1 device; target <= 1.10). (Momentum, as the
   figures of the founding session were measured with; Adam places across devices too.)
2. Two independent heavy branches: two chains of 3 MatMuls of 1024x1024 float32 (inputs
   fed), summed at the end. Figures: best of 7 step times on one device, on two devices
   with one chain per device (explicit tf.device), and on two devices placed by the cost
   model (no tf.device); and the speed-ups 1 device / 2 devices (target >= 1.6). Measured
   three ways: the default threads; intra_op_parallelism_threads=1 (every kernel on one
   core, so only inter-op parallelism can use the second core); and a child process with
   OPENBLAS_NUM_THREADS=1 in its environment (default threads otherwise). (tensorflux's
   cost model keeps everything on one CPU device unless intra_op_parallelism_threads is 1:
   otherwise each kernel already spreads over the cores the CPU devices share.)
3. The machine's ceiling: the same MatMuls in plain NumPy, two threads against one, since
   the cores are shared with other work and a busy core caps any speed-up.

    python benchmarks/programs/multi_device.py --backend tensorflux|tensorflow
"""

import json
import os
import subprocess
import sys
import time

import numpy as np
from _bench import BACKEND, emit, guarded
from _models import dense, median_step_ms

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

N, DEPTH, REPS = 1024, 3, 7
BRANCH_TARGET = 1.6
MLP_TARGET = 1.10


def mlp_ms(two_devices: bool) -> float:
    rng = np.random.default_rng(0)
    g = tf.Graph()
    dev = (lambda i: tf.device(f"/cpu:{i}")) if two_devices else (lambda i: tf.device(None))
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 784])
        y = tf.placeholder(tf.int64, [None])
        with dev(0):
            h = dense(tf, x, 512, tf.nn.relu)
        with dev(1):
            h = dense(tf, h, 512, tf.nn.relu)
        with dev(0):
            logits = dense(tf, h, 10)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        train = tf.train.MomentumOptimizer(0.01, 0.9).minimize(
            loss, colocate_gradients_with_ops=True)
        init = tf.global_variables_initializer()
    config = tf.ConfigProto(device_count={"CPU": 2 if two_devices else 1})
    with tf.Session(graph=g, config=config) as sess:
        sess.run(init)
        feed = {x: rng.standard_normal((128, 784)).astype(np.float32),
                y: rng.integers(0, 10, 128)}
        ms, _ = median_step_ms(sess, train, feed, 30)
    return ms


def branches_ms(devices: int, placement: str, intra: int) -> float:
    """Best step time of the two-chain graph; placement: 'one', 'explicit' or 'auto'."""
    rng = np.random.default_rng(1)
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [N, N])
        b = tf.placeholder(tf.float32, [N, N])
        chains = []
        for k, m in enumerate((a, b)):
            with tf.device(f"/cpu:{k}" if placement == "explicit" else None):
                x = m
                for _ in range(DEPTH):
                    x = tf.matmul(x, m) * (1.0 / N)
                chains.append(x)
        out = chains[0] + chains[1]
    config = tf.ConfigProto(device_count={"CPU": devices}, intra_op_parallelism_threads=intra)
    feed = {a: rng.random((N, N), dtype=np.float32), b: rng.random((N, N), dtype=np.float32)}
    with tf.Session(graph=g, config=config) as sess:
        sess.run(out, feed)
        best = float("inf")
        for _ in range(REPS):
            t = time.perf_counter()
            sess.run(out, feed)
            best = min(best, time.perf_counter() - t)
    return best * 1e3


def branch_figures(intra: int) -> dict:
    # Interleaved, best of two rounds, so that load from other processes hits all alike.
    figures: dict = {}
    for _ in range(2):
        for key, args in (("one", (1, "one")), ("explicit", (2, "explicit")),
                          ("auto", (2, "auto"))):
            ms = branches_ms(*args, intra)
            figures[key] = min(figures.get(key, ms), ms)
    return figures


def emit_branches(tag: str, what: str, figures: dict) -> None:
    names = {"one": "1 device", "explicit": "2 devices, one chain each",
             "auto": "2 devices, cost-model placement"}
    for key, label in names.items():
        emit(f"branches_{tag}_{key}", figures[key], "ms", "lower",
             label=f"two 3xMatMul 1024^2 chains, {what}: {label} (best of {REPS})")
    for key in ("explicit", "auto"):
        ratio = figures["one"] / figures[key]
        met = "met" if ratio >= BRANCH_TARGET else "not met"
        emit(f"branches_{tag}_speedup_{key}", ratio, "x", "higher",
             label=f"two chains, {what}: 1-device / {names[key]} time",
             note=f"{BACKEND}'s own speed-up; target >= {BRANCH_TARGET} ({met})")


if "--blas1-child" in sys.argv:
    print(json.dumps(branch_figures(0)))
    sys.exit(0)

with guarded("mlp_1dev", "mlp_2dev_model_parallel", "mlp_model_parallel_ratio"):
    one = min(mlp_ms(False), mlp_ms(False))
    two = min(mlp_ms(True), mlp_ms(True))
    emit("mlp_1dev", one, "ms", "lower",
         label="MLP 784-512-512-10, batch 128, Momentum: step on 1 device (median)")
    emit("mlp_2dev_model_parallel", two, "ms", "lower",
         label="the same MLP, model-parallel on 2 devices (median)")
    met = "met" if two / one <= MLP_TARGET else "not met"
    emit("mlp_model_parallel_ratio", two / one, "x", "lower",
         label="MLP model-parallel: 2-device step / 1-device step",
         note=f"{BACKEND}'s own ratio; target <= {MLP_TARGET} ({met})")

def numpy_ceiling() -> float:
    """Plain NumPy, no graph: two threads each doing one chain's MatMuls, against one
    thread doing both; what the machine allows right now."""
    import threading

    rng = np.random.default_rng(2)
    m = [rng.random((N, N), dtype=np.float32) for _ in range(2)]

    def chain(k):
        x = m[k]
        for _ in range(DEPTH):
            x = (x @ m[k]) * (1.0 / N)

    best1 = best2 = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        chain(0)
        chain(1)
        best1 = min(best1, time.perf_counter() - t)
        threads = [threading.Thread(target=chain, args=(k,)) for k in range(2)]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        best2 = min(best2, time.perf_counter() - t)
    return best1 / best2


with guarded("numpy_two_thread_ceiling"):
    emit("numpy_two_thread_ceiling", numpy_ceiling(), "x", "higher",
         label="plain NumPy, the same MatMuls: 1 thread / 2 threads time (machine ceiling)",
         note="what two concurrent chains can gain on this machine under its current load")

with guarded("branches_default_one"):
    emit_branches("default", "default threads", branch_figures(0))

with guarded("branches_intra1_one"):
    emit_branches("intra1", "intra_op_parallelism_threads=1", branch_figures(1))

with guarded("branches_blas1_one"):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    child = subprocess.run([sys.executable, __file__, "--backend", BACKEND, "--blas1-child"],
                           env=env, capture_output=True, text=True, timeout=300, check=True)
    emit_branches("blas1", "OPENBLAS_NUM_THREADS=1",
                  json.loads(child.stdout.strip().splitlines()[-1]))
