"""The paper's Table 1 convnets on this CPU: one SGD training step (forward, backward,
update) of AlexNet, Overfeat, OxfordNet (VGG-A) and GoogLeNet v1 (benchmarks/programs/
_convnets.py), and a ResNet-50-style step, at batch 8, fed from the host. Figure: median
step time in ms over a few steps after one warm-up step (these steps take seconds on two
cores), with the median CPU time of the process per step beside it (`cpu_ms`).

    python benchmarks/programs/table1_convnets.py --backend tensorflux|tensorflow [--nets a,b]

(nets: alexnet, overfeat, vgg_a, googlenet, resnet50)
"""

import os
import sys
import time

import numpy as np
from _bench import BACKEND, emit, guarded

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

import _convnets as convnets

BATCH = int(os.environ.get("TFX_TABLE1_BATCH", "8"))
TARGET = 1.0  # issue 20: the Table 1 nets >= 1.0x TF


def _nets():
    for k, arg in enumerate(sys.argv):
        if arg == "--nets" and k + 1 < len(sys.argv):
            return sys.argv[k + 1].split(",")
    return list(convnets.CPU_NETS)


for net in _nets():
    name = f"table1_{net}"
    label = f"Table 1 {net}, batch {BATCH}, SGD: one training step (median)"
    with guarded(name, label=label, target=TARGET):
        g, x, y, init, train, _ = convnets.build(tf, net, BATCH)
        size = convnets.IMAGE[net]
        rng = np.random.default_rng(0)
        feed = {x: rng.standard_normal((BATCH, size, size, 3)).astype(np.float32),
                y: rng.integers(0, 1000, BATCH)}
        with tf.Session(graph=g) as sess:
            sess.run(init)
            sess.run(train, feed)
            times, cpu = [], []
            start = time.perf_counter()
            while len(times) < 5 and (len(times) < 2 or time.perf_counter() - start < 60):
                t, c = time.perf_counter(), time.process_time()
                sess.run(train, feed)
                times.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
        # cpu_ms: the process's CPU time per step (all threads), steadier than the wall
        # time when other processes share the cores.
        emit(name, float(np.median(times)) * 1e3, "ms", "lower", label=label, target=TARGET,
             steps=len(times), cpu_ms=round(float(np.median(cpu)) * 1e3, 1))
