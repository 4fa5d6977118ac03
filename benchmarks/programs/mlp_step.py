"""One training step of an MLP 784-512-512-10 (ReLU), batch 128, sparse softmax
cross-entropy, Adam(1e-3); default session config. Figure: median step time over 30 steps
after 5 warm-up steps, in ms. The model of ../shared/anchors/tf_models.py.

A second figure makes the step's speed comparable across machines: the rate of its matrix
products (410.8 MFLOP a step, `_models.mlp_product_flops`) as a share of this machine's
float32 GEMM peak measured in the same run (NumPy's 1024^2 sgemm with its BLAS's default
threads or one, the better: `_models.sgemm_peak_gflops`); the goal is 0.65 of the peak
(issue 20: on the reference host, whose sgemm reached ~470 GFLOP/s, a 1.3 ms step). On a
host whose speed drifts between seconds a step timed now and a peak taken later do not
compare, so the share is the median over SHARE_ROUNDS rounds of (the median of 10 steps /
the peak, best of 4, right after them).

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
SHARE_ROUNDS = 7
with guarded(NAME, SHARE, label=LABEL, target=TARGET):
    rng = np.random.default_rng(0)
    g, x, y, init, train = mlp(tf)
    with tf.Session(graph=g) as sess:
        sess.run(init)
        feed = {x: rng.standard_normal((128, 784)).astype(np.float32),
                y: rng.integers(0, 10, 128)}
        ms, steps, cpu = median_step_ms(sess, train, feed, 30, with_cpu=True)
        rounds = []  # (share, peak, threads) per round: steps, then the peak right after
        for _ in range(SHARE_ROUNDS):
            round_ms, _ = median_step_ms(sess, train, feed, 10)
            peak, threads = sgemm_peak_gflops(reps=4)
            rounds.append((mlp_product_flops() / (round_ms * 1e-3) / (peak * 1e9), peak,
                           threads))
    emit(NAME, ms, "ms", "lower", label=LABEL, target=TARGET, steps=steps,
         cpu_ms=round(cpu, 2))
    share, peak, threads = sorted(rounds)[len(rounds) // 2]
    emit(SHARE, share, "x", "higher", label=SHARE_LABEL, goal=GOAL,
         peak_gflops=round(peak, 1), peak_threads=threads,
         rounds=[round(r[0], 3) for r in rounds],
         note=f"median of {SHARE_ROUNDS} rounds of 10 steps and the peak right after; that "
              f"round's peak {peak:.0f} GFLOP/s (NumPy 1024^2 sgemm, BLAS threads "
              f"{threads or 'as is'}); goal {GOAL} of it")
