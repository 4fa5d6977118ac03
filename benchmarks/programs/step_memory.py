"""Memory of a training step (issue 20 part 5): the MLP, the CNN and the LSTM LM (dynamic_rnn
and static_rnn) of mlp_step.py, cnn_step.py and lstm_lm.py, each in a fresh process.

Figures per model, in MiB:
  - peak step memory: the process's peak resident set during the training steps (VmHWM,
    reset through /proc/self/clear_refs once the variables are initialized) minus its
    resident set just before the first step: what the steps themselves add (activations,
    gradients, temporaries, and whatever the first run builds). Target: <= TensorFlow's.
  - growth: resident set after the last step minus after a warm-up mark (10,000 MLP steps,
    marked at step 1,000; 1,000 CNN steps from step 200; 300 LSTM steps from step 100: the
    LSTM's malloc arenas are still growing over its first ~100 steps, on both backends). A
    leak of even a few hundred bytes a step shows as MiB here.

    python benchmarks/programs/step_memory.py --backend tensorflux|tensorflow [--model M]
        [--quick] [--steps N] [--every K]

Without --model the program runs itself once per model and passes the figures on. --quick
runs a tenth of the growth steps (the peak figure is the same measure; the growth figure is
then only indicative): for iterating. --steps N runs N growth steps instead (marked at
N / 10), and --every K prints the resident set every K steps as it goes (JSON lines
{"curve": model, "step", "rss_mib", "seconds"}, no "name": the harness ignores them), the
curve BENCHMARKS.md's "Steady steps" shows. Linux only (it reads /proc/self/status).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
from _bench import BACKEND, emit, emit_error, guarded

MODELS = ("mlp", "cnn", "lstm_dynamic", "lstm_static")
LABELS = {"mlp": "MLP 784-512-512-10, batch 128, Adam",
          "cnn": "CNN 2x(conv5x5+pool) fc256 fc10, batch 64, Momentum",
          "lstm_dynamic": "LSTM-512 LM dynamic_rnn 20 steps, batch 32, Adam",
          "lstm_static": "LSTM-512 LM static_rnn 20 steps, batch 32, Adam"}
# (steps for the growth figure, the step after which the resident set is marked)
GROWTH = {"mlp": (10000, 1000), "cnn": (1000, 200), "lstm_dynamic": (300, 100),
          "lstm_static": (300, 100)}
PEAK_STEPS = 10
QUICK = "--quick" in sys.argv


def _int_option(flag: str) -> int:
    return int(sys.argv[sys.argv.index(flag) + 1]) if flag in sys.argv else 0


STEPS = _int_option("--steps")
EVERY = _int_option("--every")
MIB = 1 << 20


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"/proc/self/status has no {field}")


def rss_bytes() -> int:
    return _status_kib("VmRSS") * 1024


def reset_peak() -> None:
    """Resets VmHWM to the current resident set (Linux >= 4.0)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def peak_bytes() -> int:
    return _status_kib("VmHWM") * 1024


def _import_tf():
    if BACKEND == "tensorflow":
        import tensorflow.compat.v1 as tf
        from tensorflow.python.keras.layers.legacy_rnn import rnn_cell_impl as rnn_cell

        tf.disable_v2_behavior()
        return tf, rnn_cell
    import tensorflux as tf

    return tf, tf.nn.rnn_cell


def _build(tf, rnn_cell, model: str, rng):
    import _models

    if model == "mlp":
        g, x, y, init, train = _models.mlp(tf)
        feed = (rng.standard_normal((128, 784)).astype(np.float32), rng.integers(0, 10, 128))
    elif model == "cnn":
        g, x, y, init, train = _models.cnn(tf)
        feed = (rng.standard_normal((64, 32, 32, 3)).astype(np.float32),
                rng.integers(0, 10, 64))
    else:
        g, x, y, init, train = _models.lstm_lm(tf, rnn_cell, model.split("_")[1])
        feed = (rng.integers(0, 10000, (32, 20)).astype(np.int32),
                rng.integers(0, 10000, (32, 20)).astype(np.int32))
    return g, init, train, {x: feed[0], y: feed[1]}


def measure(model: str) -> None:
    tf, rnn_cell = _import_tf()
    g, init, train, feed = _build(tf, rnn_cell, model, np.random.default_rng(0))
    label = LABELS[model]
    with tf.Session(graph=g) as sess:
        sess.run(init)
        before = rss_bytes()
        reset_peak()
        for _ in range(PEAK_STEPS):
            sess.run(train, feed)
        peak = peak_bytes() - before
        emit(f"peak_step_memory_{model}", peak / MIB, "MiB", "lower", target=1.0,
             label=f"{label}: peak memory the steps add ({PEAK_STEPS} steps)")
        emit(f"process_peak_{model}", peak_bytes() / MIB, "MiB", "lower",
             label=f"{label}: the process's whole resident set at its peak (info)")
        steps, mark_step = GROWTH[model]
        if QUICK:
            steps, mark_step = steps // 10, mark_step // 10
        if STEPS:
            steps, mark_step = STEPS, max(PEAK_STEPS, STEPS // 10)
        start = time.monotonic()
        for done in range(PEAK_STEPS, steps):
            if done == mark_step:
                mark = rss_bytes()
            if EVERY and done % EVERY == 0:
                print(json.dumps({"curve": model, "step": done, "rss_mib": rss_bytes() / MIB,
                                  "seconds": round(time.monotonic() - start, 1)}), flush=True)
            sess.run(train, feed)
        growth = rss_bytes() - mark
        emit(f"growth_{model}", growth / MIB, "MiB", "lower", steps=steps,
             label=f"{label}: resident set growth from step {mark_step} to step {steps} "
                   "(info)")


def run_all() -> None:
    here = os.path.abspath(__file__)
    for model in MODELS:
        proc = subprocess.run([sys.executable, here, "--backend", BACKEND, "--model", model]
                              + (["--quick"] if QUICK else [])
                              + [a for flag, v in (("--steps", STEPS), ("--every", EVERY)) if v
                                 for a in (flag, str(v))],
                              capture_output=True, text=True, check=False)
        sys.stdout.write(proc.stdout)
        sys.stdout.flush()
        if proc.returncode != 0:
            tail = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
            err = RuntimeError(tail[-1] if tail else f"exit status {proc.returncode}")
            emit_error(f"peak_step_memory_{model}", err, target=1.0,
                       label=f"{LABELS[model]}: peak memory the steps add")


if __name__ == "__main__":
    if "--model" in sys.argv:
        model = sys.argv[sys.argv.index("--model") + 1]
        with guarded(f"peak_step_memory_{model}", target=1.0,
                     label=f"{LABELS[model]}: peak memory the steps add"):
            measure(model)
    else:
        run_all()
