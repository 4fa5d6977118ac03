"""Where a Table 1 net's training step spends its time, per op type (convolutions also by
window and stride), from one traced step's RunMetadata.step_stats, on either backend:

    PYTHONPATH=$PWD python benchmarks/profile_ops.py tensorflux|tensorflow NET [STEPS]

NET is one of benchmarks/programs/_convnets.py's CPU_NETS. Times are each node's elapsed
time (with inter-op parallelism and other processes on the cores they overlap and stretch),
so compare shares rather than sums; the step's wall and CPU times are printed first. With
TensorFlow, convolutions fused with their bias and ReLU by its graph optimizer are counted
under the last node of the fused chain (Relu)."""

import collections
import os
import sys
import time

import numpy as np

sys.argv = [sys.argv[0], "--backend", *sys.argv[1:]]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs"))
from _bench import BACKEND  # noqa: E402

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

import _convnets as convnets  # noqa: E402


def _key(op):
    if op.type.startswith("Conv2D"):
        k = (op.outputs[0] if op.type == "Conv2DBackpropFilter" else op.inputs[1]).shape[0]
        return f"{op.type}[{k}x{k}/{op.get_attr('strides')[1]}]"
    return op.type


def main():
    net, steps = sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 2
    batch = int(os.environ.get("TFX_TABLE1_BATCH", "8"))
    g, x, y, init, train, _ = convnets.build(tf, net, batch)
    size = convnets.IMAGE[net]
    rng = np.random.default_rng(0)
    feed = {x: rng.standard_normal((batch, size, size, 3)).astype(np.float32),
            y: rng.integers(0, 1000, batch)}
    total, count = collections.Counter(), collections.Counter()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        sess.run(train, feed)
        for _ in range(steps):
            md = tf.RunMetadata()
            t, c = time.perf_counter(), time.process_time()
            sess.run(train, feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                     run_metadata=md)
            print(f"{BACKEND} {net}: step wall {1e3 * (time.perf_counter() - t):.0f} ms, "
                  f"cpu {1e3 * (time.process_time() - c):.0f} ms")
            for dev in md.step_stats.dev_stats:
                for ns in dev.node_stats:
                    try:
                        key = _key(g.get_operation_by_name(ns.node_name.split(":")[0]))
                    except (KeyError, ValueError):
                        key = ns.node_name
                    total[key] += ns.all_end_rel_micros / 1e3
                    count[key] += 1
    whole = sum(total.values()) or 1.0
    for key, ms in total.most_common(25):
        print(f"  {key:36s} {ms / steps:9.1f} ms {100 * ms / whole:5.1f}%  "
              f"n={count[key] // steps}")


main()
