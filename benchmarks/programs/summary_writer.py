"""What writing summaries costs the training loop (`tf.summary.FileWriter`).

1. `summary_add`: 10,000 `add_summary` calls of a serialized scalar summary (one
   ScalarSummary op's output) and the final `flush()`; wall time / 10,000, in µs per summary.
   `summary_add_cpu`: the same, in CPU time of the whole process (the caller's thread and
   the writer's), which other work on the machine disturbs less. Both writers serialize
   and write on a background thread.
2. `summary_step_overhead`: a ~2 ms step (four 256x256 float32 MatMuls; its own time is in
   the note) that also fetches a scalar summary, run with and without
   `writer.add_summary(...)` after it; 8 rounds of 250 steps each way, interleaved; the
   figure is (best round with - best round without) / best round without, in percent of
   the step (issue 16's target: under 5% for a 2 ms step).

    python benchmarks/programs/summary_writer.py --backend tensorflux|tensorflow
"""

import shutil
import tempfile
import time

import numpy as np
from _bench import BACKEND, emit, guarded

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

ADDS = 10_000
ROUNDS, STEPS = 8, 250


def _graph():
    g = tf.Graph()
    with g.as_default():
        w = tf.constant(np.random.default_rng(0).standard_normal((256, 256), np.float32) * 0.05)
        x = tf.placeholder(tf.float32, [256, 256])
        h = x
        for _ in range(4):
            h = tf.matmul(h, w)
        loss = tf.reduce_mean(h)
        summary = tf.summary.scalar("loss", loss)
    return g, x, loss, summary


def _round(sess, fetches, feed, writer):
    start = time.perf_counter()
    for step in range(STEPS):
        _, s = sess.run(fetches, feed)
        if writer is not None:
            writer.add_summary(s, step)
    return (time.perf_counter() - start) / STEPS


def main(logdir):
    g, x, loss, summary = _graph()
    feed = {x: np.ones((256, 256), np.float32)}
    with tf.Session(graph=g) as sess:
        serialized = sess.run(summary, feed)
        with guarded("summary_add", "summary_add_cpu",
                     label=f"add_summary of a scalar ({ADDS:,} + flush)"):
            writer = tf.summary.FileWriter(logdir + "/add")
            start, cpu = time.perf_counter(), time.process_time()
            for step in range(ADDS):
                writer.add_summary(serialized, step)
            writer.flush()
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
            writer.close()
            emit("summary_add", elapsed / ADDS * 1e6, "us", "lower",
                 label=f"add_summary of a serialized scalar summary ({ADDS:,} + flush)")
            emit("summary_add_cpu", cpu / ADDS * 1e6, "us", "lower",
                 label="the same, process CPU time (caller + writer thread)")
        label = "add_summary after each ~2 ms step, % of the step"
        with guarded("summary_step_overhead", label=label):
            writer = tf.summary.FileWriter(logdir + "/steps")
            fetches = [loss, summary]
            for _ in range(50):
                sess.run(fetches, feed)
            without, with_ = [], []
            for _ in range(ROUNDS):
                without.append(_round(sess, fetches, feed, None))
                with_.append(_round(sess, fetches, feed, writer))
            writer.close()
            base = min(without)
            emit("summary_step_overhead", (min(with_) - base) / base * 100, "%", "lower",
                 label=label, note=f"step {base * 1e3:.2f} ms without summaries")


if __name__ == "__main__":
    directory = tempfile.mkdtemp(prefix="summary_writer_bench")
    try:
        main(directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
