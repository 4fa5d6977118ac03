"""Quantized vs float inference of the digits CNN (issue 19 part 4): conv3x3x16-ReLU,
conv3x3x32/2-ReLU, fc64-ReLU, fc10 on 8x8x1 images, batch 1024, as a frozen graph (weights
as Consts, fixed random values). Under tensorflux the float graph is calibrated on the same
images and rewritten to eight bits by tensorflux.quantization.transform (QuantizeV2 ->
QuantizedConv2DWithBiasAndReluAndRequantize x2 -> QuantizedMatMulWithBiasAndReluAnd
Requantize -> QuantizedMatMul -> Requantize -> QuantizedBiasAdd -> Dequantize; with
`quantize_graph_def(fuse=False)` the unfused chain QuantizedConv2D -> Requantize ->
QuantizedBiasAdd -> Requantize -> QuantizedRelu per layer); both graphs run in one process,
interleaved. Figures: median inference time of
each (ms) and the speed-up float / int8 (issue target >= 1.5). Under TensorFlow (which has
no such transform in TF1) the program builds the same eight-bit graph op by op with
tf.raw_ops from the same calibration (`raw_int8_graph_def`, the unfused chain: TF's
kernels for the fused ops are oneDNN's, for qint8 filters), so TF's own int8 kernels
(gemmlowp) are timed against its float ones on the same CPU; grappler is off for both
graphs there (its constant folding aborts on quint8 Consts in TF 2.21).

    python benchmarks/programs/quantized_inference.py --backend tensorflux|tensorflow
"""

import time

import numpy as np
from _bench import BACKEND, emit, guarded

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


def session_for(graph_def, config=None):
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(graph_def, name="")
    return tf.Session(graph=g, config=config)


# The float graph's tensors whose calibrated ranges the eight-bit graph uses.
CALIBRATED = ["input:0", "Conv2D:0", "Relu:0", "Conv2D_1:0", "Relu_1:0", "MatMul:0",
              "Relu_2:0", "MatMul_1:0"]


def raw_int8_graph_def(params, ranges):
    """The eight-bit graph tensorflux's transform makes, built with tf.raw_ops (TF only)."""
    raw = tf.raw_ops

    def rng_of(name, floor_zero=False):
        lo, hi = ranges[name]
        return (0.0 if floor_zero else min(lo, 0.0)), max(hi, 0.0)

    def weights(v):
        with tf.Graph().as_default(), tf.Session() as s:
            q = raw.QuantizeV2(input=v, min_range=float(min(v.min(), 0)),
                               max_range=float(max(v.max(), 0)), T=tf.quint8,
                               mode="MIN_FIRST")
            data, lo, hi = s.run(list(q))
        return tf.constant(data.view(np.uint8), tf.quint8), tf.constant(lo), tf.constant(hi)

    def layer(x, kind, w, b, out_name, relu_name=None, **kw):
        wq, wlo, whi = weights(w)
        if kind == "conv":
            acc = raw.QuantizedConv2D(input=x[0], filter=wq, min_input=x[1], max_input=x[2],
                                      min_filter=wlo, max_filter=whi, **kw)
        else:
            acc = raw.QuantizedMatMul(a=x[0], b=wq, min_a=x[1], max_a=x[2], min_b=wlo,
                                      max_b=whi)
        h = raw.Requantize(input=acc[0], input_min=acc[1], input_max=acc[2],
                           requested_output_min=rng_of(out_name)[0],
                           requested_output_max=rng_of(out_name)[1], out_type=tf.quint8)
        bq, blo, bhi = weights(b)
        acc = raw.QuantizedBiasAdd(input=h[0], bias=bq, min_input=h[1], max_input=h[2],
                                   min_bias=blo, max_bias=bhi, out_type=tf.qint32)
        if relu_name is None:
            return acc
        lo, hi = rng_of(relu_name, floor_zero=True)
        h = raw.Requantize(input=acc[0], input_min=acc[1], input_max=acc[2],
                           requested_output_min=lo, requested_output_max=hi,
                           out_type=tf.quint8)
        return raw.QuantizedRelu(features=h[0], min_features=h[1], max_features=h[2])

    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 8, 8, 1], name="input")
        lo, hi = rng_of("input:0")
        h = raw.QuantizeV2(input=x, min_range=lo, max_range=hi, T=tf.quint8, mode="MIN_FIRST")
        h = layer(h, "conv", params["conv1/w"], params["conv1/b"], "Conv2D:0", "Relu:0",
                  strides=[1, 1, 1, 1], padding="SAME")
        h = layer(h, "conv", params["conv2/w"], params["conv2/b"], "Conv2D_1:0", "Relu_1:0",
                  strides=[1, 2, 2, 1], padding="SAME")
        h = (tf.reshape(h[0], [-1, 512]), h[1], h[2])
        h = layer(h, "fc", params["fc1/w"], params["fc1/b"], "MatMul:0", "Relu_2:0")
        acc = layer(h, "fc", params["fc2/w"], params["fc2/b"], "MatMul_1:0")
        raw.Dequantize(input=acc[0], min_range=acc[1], max_range=acc[2], mode="MIN_FIRST",
                       name="logits")
    return g.as_graph_def()


def params_of(graph_def):
    return {n.name: tf.make_ndarray(n.attr["value"].tensor) for n in graph_def.node
            if n.name in SHAPES}


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
    """Synthetic 8x8 images in [0, 1] (the same under both backends; the oracle venv has no
    scikit-learn): smooth strokes, so the activations have digit-like ranges."""
    yy, xx = np.mgrid[0:8, 0:8]
    cy, cx, r = rng.uniform(2, 6, (3, BATCH, 1, 1))
    img = np.exp(-((np.hypot(yy - cy, xx - cx) - r / 2) ** 2))
    return (img + 0.1 * rng.uniform(0, 1, img.shape)).astype(np.float32)[..., None]


FLOAT_LABEL = f"digits CNN frozen graph, float32, batch {BATCH}: inference (median)"
INT8_LABEL = f"the same rewritten to eight bits (post-training transform), batch {BATCH}"
with guarded("quantized_inference_float", "quantized_inference_int8",
             "quantized_inference_speedup", label=FLOAT_LABEL):
    rng = np.random.default_rng(0)
    float_gd = float_graph_def(rng)
    images = images_of(rng)
    if BACKEND == "tensorflow":
        from tensorflow.core.protobuf import rewriter_config_pb2

        off = rewriter_config_pb2.RewriterConfig(disable_meta_optimizer=True)
        config = tf.ConfigProto(graph_options=tf.GraphOptions(rewrite_options=off))
        with session_for(float_gd) as cs:
            values = cs.run(CALIBRATED[1:], {"input:0": images})
        ranges = {n: (float(v.min()), float(v.max()))
                  for n, v in zip(CALIBRATED, [images] + values, strict=True)}
        quant_gd = raw_int8_graph_def(params_of(float_gd), ranges)
        with session_for(float_gd, config) as fs, session_for(quant_gd, config) as qs:
            want, got = fs.run("logits:0", {"input:0": images}), qs.run(
                "logits:0", {"input:0": images})
            agree = float(np.mean(want.argmax(1) == got.argmax(1)))
            float_ms, int8_ms = interleaved_medians([fs, qs], images)
        ratio = float_ms / int8_ms
        emit("quantized_inference_float", float_ms, "ms", "lower", label=FLOAT_LABEL,
             note="grappler off")
        emit("quantized_inference_int8", int8_ms, "ms", "lower", label=INT8_LABEL,
             note=f"the same eight-bit graph built with tf.raw_ops; top-1 agreement "
                  f"{agree:.1%}")
        emit("quantized_inference_speedup", ratio, "x", "higher",
             label="float time / int8 time, same process, interleaved runs",
             note=f"{BACKEND}'s own speed-up (TF's int8 kernels vs its float ones)")
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
