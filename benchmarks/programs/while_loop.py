"""Per-iteration cost of a trivial tf.while_loop: `i = 0; while i < n: i = i + 1` with
n = 10,000 fed as an int32 scalar placeholder (so nothing can be folded away). Each
iteration runs Merge, Less, LoopCond, Switch, Identity, Add and NextIteration (plus the
loop-invariant Enter of n). Two configurations: the default session config, and one
inter-op thread with graph optimizations off (as null_ops). Figure: the best of 5 runs
after one warm-up run, divided by 10,000, in microseconds per iteration.

tensorflux runs such a cheap loop as one generated Python `while` (runtime/compiled_loops.py);
a third, informational figure is the same loop on the dataflow executor's frames (loop
compilation off), the path of loops with conds inside or expensive kernels.

    python benchmarks/programs/while_loop.py --backend tensorflux|tensorflow
"""

import time

from _bench import BACKEND, emit, guarded, optimizations_off

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

N = 10_000
REPS = 5
OFF = optimizations_off(tf)


def per_iteration_us(config, **session_kwargs) -> float:
    g = tf.Graph()
    with g.as_default():
        n = tf.placeholder(tf.int32, [], name="n")
        out = tf.while_loop(lambda i: i < n, lambda i: i + 1, [tf.constant(0)])
    with tf.Session(graph=g, config=config, **session_kwargs) as sess:
        got = sess.run(out, {n: N})
        if got != N:
            raise RuntimeError(f"wrong result: expected {N}, got {got!r}")
        best = float("inf")
        for _ in range(REPS):
            t = time.perf_counter()
            sess.run(out, {n: N})
            best = min(best, time.perf_counter() - t)
    return best / N * 1e6


for name, label, config in (
        ("while_loop_iteration", "tf.while_loop, 10,000 trivial iterations (i < n; i + 1), "
         "default config, per iteration", None),
        ("while_loop_iteration_1thread", "tf.while_loop, 10,000 trivial iterations, one "
         "thread, optimizations off, per iteration", OFF)):
    with guarded(name, label=label, target=1.0):
        emit(name, per_iteration_us(config), "us", "lower", label=label, target=1.0)

if BACKEND == "tensorflux":
    NAME = "while_loop_iteration_frames"
    LABEL = ("tf.while_loop, 10,000 trivial iterations - dataflow executor frames, loop "
             "compilation off (info)")
    with guarded(NAME, label=LABEL, compare_to="while_loop_iteration"):
        from tensorflux.runtime.exec_options import ExecOptions

        frames = ExecOptions(compile_loops=False)
        emit(NAME, per_iteration_us(None, exec_options=frames), "us", "lower", label=LABEL,
             compare_to="while_loop_iteration")
