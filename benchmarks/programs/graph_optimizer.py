"""The graph optimizer on a graph with 1,000 duplicated subexpressions (whitepaper §5.1).

The graph: a float32 placeholder p of 64 elements and 1,000 copies of
`reduce_sum(tanh(p * 3.0 + 1.0))` (each copy its own Mul, Add, Tanh, Sum and constants,
as code that builds the same layer twice produces), added with one AddN. With L1
(TensorFlow's default) common subexpression elimination leaves one copy; with L0 (and, on
TensorFlow, the grappler meta optimizer off too) all 1,000 run. Figures: best of 7 step
times after a warm-up for each level, and their ratio L0 / L1 (target >= 5). The first
run's time (step build, optimizer included, plus one run) is reported too.

    python benchmarks/programs/graph_optimizer.py --backend tensorflux|tensorflow
"""

import time

import numpy as np
from _bench import BACKEND, emit, guarded

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf
    from tensorflow.core.protobuf import rewriter_config_pb2

    tf.disable_v2_behavior()
else:
    import tensorflux as tf
    from tensorflux.protos import rewriter_config_pb2

COPIES, REPS, TARGET = 1000, 7, 5.0
L0 = tf.ConfigProto(graph_options=tf.GraphOptions(
    optimizer_options=tf.OptimizerOptions(opt_level=tf.OptimizerOptions.L0,
                                          do_common_subexpression_elimination=False,
                                          do_constant_folding=False),
    rewrite_options=rewriter_config_pb2.RewriterConfig(disable_meta_optimizer=True)))
L1 = tf.ConfigProto()


def build():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [64], name="p")
        copies = [tf.reduce_sum(tf.tanh(p * 3.0 + 1.0)) for _ in range(COPIES)]
        total = tf.add_n(copies)
    return g, p, total


def measure(config):
    g, p, total = build()
    x = np.linspace(-1, 1, 64).astype(np.float32)
    expected = COPIES * np.tanh(x * 3 + 1).sum()
    with tf.Session(graph=g, config=config) as sess:
        t = time.perf_counter()
        got = sess.run(total, {p: x})
        first = time.perf_counter() - t
        if abs(got - expected) > 1e-3 * abs(expected):
            raise RuntimeError(f"wrong result: {got} instead of {expected}")
        best = float("inf")
        for _ in range(REPS):
            t = time.perf_counter()
            sess.run(total, {p: x})
            best = min(best, time.perf_counter() - t)
    return best * 1e3, first * 1e3


with guarded("cse_l0", "cse_l1", "cse_speedup"):
    l0, l0_first = measure(L0)
    l1, l1_first = measure(L1)
    what = f"{COPIES:,} duplicated reduce_sum(tanh(p*3+1)), p: 64 floats"
    emit("cse_l0", l0, "ms", "lower", label=f"{what}: step with L0 (best of {REPS})")
    emit("cse_l1", l1, "ms", "lower", label=f"{what}: step with L1 (best of {REPS})")
    met = "met" if l0 / l1 >= TARGET else "not met"
    emit("cse_speedup", l0 / l1, "x", "higher", label="the same: L0 step / L1 step",
         note=f"{BACKEND}'s own speed-up; target >= {TARGET} ({met})")
    emit("cse_l1_first_run", l1_first, "ms", "lower",
         label="the same with L1: first run (step build incl. optimizer, one run)")
    emit("cse_l0_first_run", l0_first, "ms", "lower",
         label="the same with L0: first run (step build, one run)")
