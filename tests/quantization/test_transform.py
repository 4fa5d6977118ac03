"""Post-training quantization (tensorflux/quantization/transform.py): the digits CNN trained
here, frozen, calibrated and rewritten to eight bits keeps its accuracy within 1% with
weights at least 3.5x smaller, fused (the default) or not; the unfused rewrite runs bit for
bit the same in TensorFlow (TF's kernels for the fused ops are oneDNN's, for qint8 filters);
graphs with float-only ops, Relu6 and non-constant weights are rewritten where they can be
and copied where they cannot."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.quantization import transform
from tests import oracle
from tests.quantization import digits_cnn


@pytest.fixture(scope="module")
def digits():
    """(float GraphDef, {fused: quantized GraphDef}, test images, test labels)."""
    (train_x, train_y), (test_x, test_y) = digits_cnn.load_data()
    params = digits_cnn.train((train_x, train_y))
    float_gd = digits_cnn.frozen_graph_def(params)
    ranges = transform.calibrate(float_gd, {"input": train_x})
    quant = {fuse: transform.quantize_graph_def(float_gd, ["logits"], ranges, fuse=fuse)
             for fuse in (True, False)}
    return float_gd, quant, test_x, test_y


def _ops(graph_def):
    return {n.op for n in graph_def.node}


@pytest.mark.parametrize("fuse", [True, False])
def test_digits_cnn_loses_at_most_one_percent_and_weights_shrink(digits, fuse):
    float_gd, quant, test_x, test_y = digits
    quant_gd = quant[fuse]
    float_acc = np.mean(digits_cnn.predict(float_gd, test_x).argmax(1) == test_y)
    quant_acc = np.mean(digits_cnn.predict(quant_gd, test_x).argmax(1) == test_y)
    assert float_acc > 0.93, float_acc
    assert quant_acc >= float_acc - 0.01, (float_acc, quant_acc)
    assert transform.const_bytes(float_gd) >= 3.5 * transform.const_bytes(quant_gd)


def test_the_fused_rewrite_has_one_op_per_layer(digits):
    _, quant, _, _ = digits
    ops = [n.op for n in quant[True].node if n.op != "Const"]
    # conv-bias-relu twice and fc-bias-relu fused; the logits layer keeps its qint32 sum
    assert ops.count("QuantizedConv2DWithBiasAndReluAndRequantize") == 2
    assert ops.count("QuantizedMatMulWithBiasAndReluAndRequantize") == 1
    assert ops.count("QuantizedMatMul") == 1
    assert not set(ops) & {"Conv2D", "MatMul", "BiasAdd", "Relu", "QuantizedConv2D",
                           "QuantizedRelu"}
    assert ops.count("Requantize") == 1 and ops.count("QuantizeV2") == 1  # (the logits')


def test_the_rewrite_is_eight_bit_end_to_end(digits):
    _, quant, _, _ = digits
    quant_gd = quant[False]
    ops = _ops(quant_gd)
    assert {"QuantizeV2", "QuantizedConv2D", "QuantizedMatMul", "QuantizedBiasAdd",
            "QuantizedRelu", "Requantize", "Dequantize"} <= ops
    assert not ops & {"Conv2D", "MatMul", "BiasAdd", "Relu"}
    weights = [n for n in quant_gd.node if n.op == "Const" and n.name.endswith("/weights")]
    assert len(weights) == 8  # four layers' weights and biases
    assert all(n.attr["dtype"].type == tf.quint8.as_datatype_enum for n in weights)
    # the TensorProto names the quantized type too (TensorFlow checks it against dtype)
    assert all(n.attr["value"].tensor.dtype == tf.quint8.as_datatype_enum for n in weights)
    # one QuantizeV2 (the input): layers hand each other quint8 values
    assert sum(n.op == "QuantizeV2" for n in quant_gd.node) == 1
    logits = [n for n in quant_gd.node if n.name == "logits"]
    assert logits[0].op == "Dequantize"


@pytest.mark.oracle
def test_the_quantized_graph_gives_the_same_bits_in_tensorflow(digits, tmp_path):
    _, quant, test_x, _ = digits
    quant_gd = quant[False]
    path = tmp_path / "quantized.pb"
    path.write_bytes(quant_gd.SerializeToString())
    images = test_x[:64]
    theirs = oracle.run_tf(f"""
gd = tf.GraphDef()
gd.ParseFromString(open({str(path)!r}, "rb").read())
tf.import_graph_def(gd, name="")
images = np.array({images.tolist()!r}, np.float32)
from tensorflow.core.protobuf import rewriter_config_pb2
# Grappler's constant folding aborts on quint8 Consts in TF 2.21 (IsZeros' dtype check).
off = rewriter_config_pb2.RewriterConfig(disable_meta_optimizer=True)
config = tf.ConfigProto(graph_options=tf.GraphOptions(rewrite_options=off))
result = tf.Session(config=config).run("logits:0", {{"input:0": images}})
""")
    ours = digits_cnn.predict(quant_gd, images)
    np.testing.assert_array_equal(ours, theirs)


def _small_graph(with_pool=True, relu6=False, pool=None):
    rng = np.random.RandomState(4)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 6, 6, 2], name="input")
        w = tf.constant(rng.normal(0, 0.5, (3, 3, 2, 4)).astype(np.float32))
        h = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
        h = tf.nn.relu6(h) if relu6 else tf.nn.relu(h)
        if with_pool:
            h = (pool or tf.nn.max_pool)(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        h = tf.reshape(h, [-1, 36 if with_pool else 144])
        v = tf.constant(rng.normal(0, 0.3, (36 if with_pool else 144, 3)).astype(np.float32))
        tf.identity(tf.matmul(h, v), name="out")
    return g.as_graph_def(), rng.uniform(0, 1, (32, 6, 6, 2)).astype(np.float32)


def _run(graph_def, x, fetch="out:0"):
    with tf.Graph().as_default() as g:
        tf.import_graph_def(graph_def, name="")
        with tf.Session(graph=g) as sess:
            return sess.run(fetch, {"input:0": x})


@pytest.mark.parametrize("fuse", [True, False])  # (no bias add here: nothing to fuse)
@pytest.mark.parametrize("pool,relu6", [("max", False), ("avg", False), (None, True)])
def test_float_only_ops_are_copied_between_quantized_layers(pool, relu6, fuse):
    pool_fn = {"max": tf.nn.max_pool, "avg": tf.nn.avg_pool}.get(pool)
    gd, x = _small_graph(pool is not None, relu6, pool_fn)
    qgd = transform.quantize_graph_def(gd, ["out"], transform.calibrate(gd, {"input": x}),
                                       fuse=fuse)
    ops = _ops(qgd)
    assert "QuantizedConv2D" in ops and "QuantizedMatMul" in ops
    assert ("QuantizedMaxPool" in ops) == (pool == "max")
    assert ("AvgPool" in ops) == (pool == "avg")  # copied: a Dequantize feeds it
    assert ("Dequantize" in ops and "QuantizeV2" in ops)
    assert ("QuantizedRelu6" in ops) == relu6
    want, got = _run(gd, x), _run(qgd, x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=0.05 * np.abs(want).max())


@pytest.mark.parametrize("shape,want", [
    ("conv-bias-relu", {"QuantizedConv2DWithBiasAndReluAndRequantize"}),
    ("conv-bias", {"QuantizedConv2DWithBiasAndRequantize"}),
    ("conv-bias-relu6", {"QuantizedConv2D", "QuantizedBiasAdd", "QuantizedRelu6"}),
    ("conv-bias-relu, bias also fetched",  # the Relu apart, in the bias add's range
     {"QuantizedConv2DWithBiasAndRequantize", "QuantizedRelu"}),
    ("conv-bias-relu, conv also used", {"QuantizedConv2D", "QuantizedBiasAdd"}),
])
def test_fusion_takes_only_single_consumer_chains(shape, want):
    rng = np.random.RandomState(5)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 5, 5, 2], name="input")
        w = tf.constant(rng.normal(0, 0.5, (3, 3, 2, 4)).astype(np.float32))
        conv = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
        h = tf.nn.bias_add(conv, tf.constant(rng.normal(0, 0.2, 4).astype(np.float32)))
        fetches = ["out"]
        if "relu6" in shape:
            h = tf.nn.relu6(h)
        elif "relu" in shape:
            if "bias also" in shape:
                tf.identity(h, name="bias_out")
                fetches.append("bias_out")
            h = tf.nn.relu(h)
        if "conv also" in shape:
            h = h + tf.reduce_mean(conv)
        tf.identity(tf.reduce_sum(h, axis=[1, 2]), name="out")
    gd = g.as_graph_def()
    images = rng.uniform(0, 1, (16, 5, 5, 2)).astype(np.float32)
    qgd = transform.quantize_graph_def(gd, fetches, transform.calibrate(gd, {"input": images}))
    fused = {op for op in _ops(qgd) if "WithBias" in op}
    assert want <= _ops(qgd) and fused == (want & fused), _ops(qgd)
    want_v, got_v = _run(gd, images), _run(qgd, images)
    np.testing.assert_allclose(got_v, want_v, atol=0.05 * np.abs(want_v).max())


def test_products_without_constant_weights_stay_float():
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [None, 3], name="input")
        b = tf.placeholder_with_default(np.eye(3, dtype=np.float32), [3, 3], name="b")
        tf.nn.relu(tf.matmul(a, b), name="out")
    gd = g.as_graph_def()
    x = np.random.RandomState(0).normal(size=(5, 3)).astype(np.float32)
    qgd = transform.quantize_graph_def(gd, ["out"], transform.calibrate(gd, {"input": x}))
    assert _ops(qgd) == _ops(gd)
    np.testing.assert_array_equal(_run(qgd, x), _run(gd, x))


def test_a_tensor_without_a_calibrated_range_is_a_key_error():
    gd, x = _small_graph()
    with pytest.raises(KeyError):
        transform.quantize_graph_def(gd, ["out"], {})
