"""Quantized vs float inference of the digits CNN (issue 19 part 4): conv3x3x16-ReLU,
conv3x3x32/2-ReLU, fc64-ReLU, fc10 on 8x8x1 images, batch 1024, as a frozen graph (weights
as Consts, fixed random values). Under tensorflux the float graph is calibrated on the same
images and rewritten to eight bits by tensorflux.quantization.transform (QuantizeV2 ->
QuantizedConv2D/QuantizedMatMul -> Requantize -> QuantizedBiasAdd -> QuantizedRelu ... ->
Dequantize); both graphs run in one process, interleaved. Figures: median inference time of
each (ms) and the speed-up float / int8 (issue target >= 1.5). TensorFlow runs the float
graph only (the transform is tensorflux's).

    python benchmarks/programs/quantized_inference.py --backend tensorflux|tensorflow
"""

import time

import numpy as np
from _bench import BACKEND, emit, emit_error, guarded

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

BATCH = 1024
REPS = 15
TARGET = 1.5  # int8 inference at least 1.5x faster than float (issue 19)
SHAPES = {"conv1/w": [3, 3, 1, 16], "conv1/b": [16], "conv2/w": [3, 3, 16, 32],
          "conv2/b": [32], "fc1/w": [512, 64], "fc1/b": [64], "fc2/w": [64, 10],
          "fc2/b": [10]}


def float_graph_def(rng):
    g = tf.Graph()
    with g.as_default():
        p = {k: tf.constant(rng.normal(0, (2.0 / np.prod(s[:-1])) ** 0.5 if len(s) > 1
                                       else 0.05, s).astype(np.float32), name=k)
             for k, s in SHAPES.items()}
        x = tf.placeholder(tf.float32, [None, 8, 8, 1], name="input")
        h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, p["conv1/w"], [1, 1, 1, 1], "SAME"),
                                      p["conv1/b"]))
        h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(h, p["conv2/w"], [1, 2, 2, 1], "SAME"),
                                      p["conv2/b"]))
        h = tf.nn.relu(tf.matmul(tf.reshape(h, [-1, 512]), p["fc1/w"]) + p["fc1/b"])
        tf.add(tf.matmul(h, p["fc2/w"]), p["fc2/b"], name="logits")
    return g.as_graph_def()


def session_for(graph_def):
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(graph_def, name="")
    return tf.Session(graph=g)


def interleaved_medians(sessions, images):
    """Median ms per session, the sessions' runs interleaved (fair under load)."""
    for sess in sessions:
        for _ in range(3):
            sess.run("logits:0", {"input:0": images})
    times = [[] for _ in sessions]
    for _ in range(REPS):
        for i, sess in enumerate(sessions):
            t = time.perf_counter()
            sess.run("logits:0", {"input:0": images})
            times[i].append(time.perf_counter() - t)
    return [float(np.median(t)) * 1e3 for t in times]


def images_of(rng):
    try:
        from sklearn.datasets import load_digits

        x = (load_digits().images / 16.0).astype(np.float32)[..., None]
    except ImportError:
        x = rng.uniform(0, 1, (1797, 8, 8, 1)).astype(np.float32)
    return x[rng.integers(0, len(x), BATCH)]


FLOAT_LABEL = f"digits CNN frozen graph, float32, batch {BATCH}: inference (median)"
INT8_LABEL = f"the same rewritten to eight bits (post-training transform), batch {BATCH}"
with guarded("quantized_inference_float", "quantized_inference_int8",
             "quantized_inference_speedup", label=FLOAT_LABEL):
    rng = np.random.default_rng(0)
    float_gd = float_graph_def(rng)
    images = images_of(rng)
    if BACKEND == "tensorflow":
        with session_for(float_gd) as fs:
            (float_ms,) = interleaved_medians([fs], images)
        emit("quantized_inference_float", float_ms, "ms", "lower", label=FLOAT_LABEL)
        emit_error("quantized_inference_int8",
                   RuntimeError("the post-training transform is tensorflux's"))
    else:
        from tensorflux.quantization import transform

        ranges = transform.calibrate(float_gd, {"input": images})
        quant_gd = transform.quantize_graph_def(float_gd, ["logits"], ranges)
        with session_for(float_gd) as fs, session_for(quant_gd) as qs:
            want, got = fs.run("logits:0", {"input:0": images}), qs.run(
                "logits:0", {"input:0": images})
            agree = float(np.mean(want.argmax(1) == got.argmax(1)))
            float_ms, int8_ms = interleaved_medians([fs, qs], images)
        ratio = float_ms / int8_ms
        met = "met" if ratio >= TARGET else "not met"
        emit("quantized_inference_float", float_ms, "ms", "lower", label=FLOAT_LABEL)
        emit("quantized_inference_int8", int8_ms, "ms", "lower", label=INT8_LABEL,
             compare_to="quantized_inference_float",
             note=f"top-1 agreement with float {agree:.1%}; const bytes "
                  f"{transform.const_bytes(float_gd)} -> {transform.const_bytes(quant_gd)}")
        emit("quantized_inference_speedup", ratio, "x", "higher",
             label="float time / int8 time, same process, interleaved runs",
             note=f"tensorflux's own speed-up; issue target >= {TARGET} ({met})")
