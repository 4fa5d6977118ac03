"""One training step of an MLP 784-512-512-10 (ReLU), batch 128, sparse softmax
cross-entropy, Adam(1e-3); default session config. Figure: median step time over 30 steps
after 5 warm-up steps, in ms. The model of ../shared/anchors/tf_models.py.

A second figure makes the step's speed comparable across machines: the rate of its matrix
products (410.8 MFLOP a step, `_models.mlp_product_flops`) as a share of this machine's
float32 GEMM peak measured in the same run (NumPy's 1024^2 sgemm with its BLAS's default
threads or one, the better, best of 16: `_models.sgemm_peak_gflops`); the goal is 0.65
of the peak (issue 20: on the reference host, whose sgemm reached ~470 GFLOP/s, a 1.3 ms
step).

    python benchmarks/programs/mlp_step.py --backend tensorflux|tensorflow
"""

import numpy as np
from _bench import BACKEND, emit, guarded
from _models import median_step_ms, mlp, mlp_product_flops, sgemm_peak_gflops

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

NAME = "mlp_step"
LABEL = "MLP 784-512-512-10, batch 128, Adam: one training step (median)"
TARGET = 1.0  # step time <= 1.0x TensorFlow's
SHARE = "mlp_step_peak_share"
SHARE_LABEL = "MLP step: product rate / this machine's sgemm peak (same run)"
GOAL = 0.65  # an absolute goal on the share, whatever TensorFlow reaches
with guarded(NAME, SHARE, label=LABEL, target=TARGET):
    rng = np.random.default_rng(0)
    g, x, y, init, train = mlp(tf)
    with tf.Session(graph=g) as sess:
        sess.run(init)
        feed = {x: rng.standard_normal((128, 784)).astype(np.float32),
                y: rng.integers(0, 10, 128)}
        ms, steps, cpu = median_step_ms(sess, train, feed, 30, with_cpu=True)
    peak, threads = sgemm_peak_gflops()
    emit(NAME, ms, "ms", "lower", label=LABEL, target=TARGET, steps=steps,
         cpu_ms=round(cpu, 2))
    emit(SHARE, mlp_product_flops() / (ms * 1e-3) / (peak * 1e9), "x", "higher",
         label=SHARE_LABEL, goal=GOAL, peak_gflops=round(peak, 1), peak_threads=threads,
         note=f"peak {peak:.0f} GFLOP/s (NumPy 1024^2 sgemm, BLAS threads {threads or 'as is'}"
              f"); goal {GOAL} of it")
