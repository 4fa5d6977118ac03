"""tf.keras's recurrent layers over a long sequence: `Sequential([SimpleRNN(100,
input_shape=(784, 1)), Dense(10)])` (the batch dimension unknown, as Keras builds it),
sparse categorical cross-entropy from logits, SGD(0.001); `train_on_batch` of batch 32.
Figure: the median step over 10 steps after 5 warm-up, in ms, with the median CPU time of
the process per step. TensorFlow's side is tf_keras (Keras 2) in TensorFlow 2's default
mode (its train function a tf.function); tensorflux's is its graph-mode tf.keras.

    python benchmarks/programs/keras_rnn.py --backend tensorflux|tensorflow
"""

import os
import time

import numpy as np
from _bench import BACKEND, emit, guarded
from _models import BUDGET_S, WARMUP

if BACKEND == "tensorflow":
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tf_keras as keras
else:
    import tensorflux as tf

    keras = tf.keras

STEPS, BATCH, UNITS = 784, 32, 100
REPS = 10

NAME = "keras_simple_rnn_step"
LABEL = ("tf.keras SimpleRNN(100) over 784 steps (batch None), Dense(10), SGD: "
         "train_on_batch of 32 (median)")
TARGET = 1.0  # step time <= tf_keras's (issue 20)
with guarded(NAME, label=LABEL, target=TARGET):
    rng = np.random.default_rng(0)
    model = keras.Sequential([keras.layers.SimpleRNN(UNITS, input_shape=(STEPS, 1)),
                              keras.layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.SGD(0.001),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    xb = rng.standard_normal((BATCH, STEPS, 1)).astype(np.float32)
    yb = rng.integers(0, 10, BATCH)
    for _ in range(WARMUP):
        model.train_on_batch(xb, yb)
    times, cpu = [], []
    start = time.perf_counter()
    while len(times) < REPS and (len(times) < 3 or time.perf_counter() - start < BUDGET_S):
        t, c = time.perf_counter(), time.process_time()
        model.train_on_batch(xb, yb)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    emit(NAME, float(np.median(times)) * 1e3, "ms", "lower", label=LABEL, target=TARGET,
         steps=len(times), cpu_ms=float(np.median(cpu)) * 1e3)
