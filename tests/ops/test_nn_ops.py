"""Tests of the neural-network ops (tensorflux/ops/nn_ops.py, nn_impl.py) and their CPU
kernels: one record per op configuration against an independent NumPy reference (explicit
loops for LRN on tiny shapes), finite-difference gradients in float32 and float64, static
shape inference (convolution and pooling included), TF's errors, and an oracle comparison
with TensorFlow on the same inputs.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework.op_def_library import apply_op
from tests import oracle
from tests.op_test_util import OpCase, away_from
from tests.ops.nn_cases import (
    SOFT_LABELS,
    LABELS_2x3,
    LABELS_2x5,
    _distinct,
    _distribution,
    _f64,
    _kinked,
    _relu6_make,
    _run,
    ref_log_softmax,
    ref_lrn,
    ref_lrn_grad,
    ref_max_pool_grad,
    ref_pool,
    ref_selu,
    ref_softmax,
    ref_xent,
    table_tests,
)

# Each test runs on a fresh default graph (tests/ops/conftest.py).
pytestmark = pytest.mark.usefixtures("fresh_graph")

CASES = [
    OpCase("relu", tf.nn.relu, lambda x: np.maximum(x, 0), shapes=[(3, 4)], make=_kinked),
    OpCase("relu6", tf.nn.relu6, lambda x: np.clip(x, 0, 6), shapes=[(3, 4)],
           make=_relu6_make),
    OpCase("elu", tf.nn.elu, lambda x: np.where(x > 0, x, np.expm1(_f64(x))).astype(x.dtype),
           shapes=[(3, 4)], make=_kinked),
    OpCase("selu", tf.nn.selu, ref_selu, shapes=[(3, 4)], make=_kinked),
    OpCase("softplus", tf.nn.softplus,
           lambda x: np.log1p(np.exp(_f64(x))).astype(x.dtype), shapes=[(3, 4)]),
    OpCase("softplus_large", lambda x: tf.nn.softplus(x * 20.0),
           lambda x: np.logaddexp(0, _f64(x) * 20).astype(x.dtype), shapes=[(3, 4)],
           grad=False),
    OpCase("leaky_relu", tf.nn.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * _f64(x))
           .astype(x.dtype), shapes=[(3, 4)], make=_kinked),
    OpCase("leaky_relu_0.3", lambda x: tf.nn.leaky_relu(x, alpha=0.3),
           lambda x: np.where(x > 0, x, 0.3 * _f64(x)).astype(x.dtype), shapes=[(3, 4)],
           make=_kinked),
    OpCase("softmax", tf.nn.softmax, ref_softmax, shapes=[(3, 5)]),
    OpCase("softmax_rank3", tf.nn.softmax, ref_softmax, shapes=[(2, 3, 4)]),
    OpCase("softmax_axis0", lambda x: tf.nn.softmax(x, axis=0),
           lambda x: ref_softmax(x, 0), shapes=[(3, 4)], unknown_shapes=False),
    OpCase("softmax_dim1", lambda x: tf.nn.softmax(x, dim=1),
           lambda x: ref_softmax(x, 1), shapes=[(2, 3, 4)], unknown_shapes=False),
    OpCase("log_softmax", tf.nn.log_softmax, ref_log_softmax, shapes=[(3, 5)]),
    OpCase("log_softmax_axis0", lambda x: tf.nn.log_softmax(x, axis=0),
           lambda x: ref_log_softmax(x, 0), shapes=[(3, 4)], unknown_shapes=False),
    OpCase("bias_add", tf.nn.bias_add, lambda x, b: (x + b).astype(x.dtype),
           shapes=[(2, 3, 4), (4,)]),
    OpCase("bias_add_nchw", lambda x, b: tf.nn.bias_add(x, b, data_format="NCHW"),
           lambda x, b: (x + b.reshape(3, 1, 1)).astype(x.dtype), shapes=[(2, 3, 2, 2), (3,)]),
    OpCase("bias_add_grad", lambda g: apply_op("BiasAddGrad", out_backprop=g),
           lambda g: _f64(g).sum(axis=(0, 1)).astype(g.dtype), shapes=[(2, 3, 4)]),
    OpCase("bias_add_grad_nchw",
           lambda g: apply_op("BiasAddGrad", out_backprop=g, data_format="NCHW"),
           lambda g: _f64(g).sum(axis=(0, 2, 3)).astype(g.dtype), shapes=[(2, 3, 2, 2)]),
    OpCase("l2_loss", tf.nn.l2_loss, lambda x: np.asarray((_f64(x) ** 2).sum() / 2, x.dtype),
           shapes=[(3, 4)]),
    OpCase("lrn", lambda x: tf.nn.lrn(x, 2, 1.5, 0.3, 0.75),
           lambda x: ref_lrn(x, 2, 1.5, 0.3, 0.75), shapes=[(2, 2, 3, 7)]),
    OpCase("lrn_defaults", tf.nn.local_response_normalization,
           lambda x: ref_lrn(x, 5, 1.0, 1.0, 0.5), shapes=[(1, 2, 2, 12)]),
    OpCase("softmax_xent_v2",
           lambda l, x: tf.nn.softmax_cross_entropy_with_logits_v2(labels=l, logits=x),
           lambda l, x: ref_xent(x, l), shapes=[(2, 5), (2, 5)], make=_distribution),
    OpCase("softmax_xent_tf1",
           lambda x: tf.nn.softmax_cross_entropy_with_logits(labels=SOFT_LABELS, logits=x),
           lambda x: ref_xent(x, SOFT_LABELS), shapes=[(2, 5)]),
    OpCase("softmax_xent_axis0",
           lambda x: tf.nn.softmax_cross_entropy_with_logits_v2(labels=SOFT_LABELS.T, logits=x,
                                                                axis=0),
           lambda x: ref_xent(x.T, SOFT_LABELS), shapes=[(5, 2)], unknown_shapes=False),
    OpCase("softmax_xent_rank3",
           lambda x: tf.nn.softmax_cross_entropy_with_logits_v2(
               labels=np.stack([SOFT_LABELS] * 3), logits=x),
           lambda x: ref_xent(x, np.stack([SOFT_LABELS] * 3)), shapes=[(3, 2, 5)]),
    OpCase("softmax_xent_raw",  # both outputs: exercises the second-order term
           lambda x, l: list(apply_op("SoftmaxCrossEntropyWithLogits", features=x, labels=l)),
           lambda x, l: [ref_xent(x, l), (_f64(ref_softmax(x)) - l).astype(x.dtype)],
           shapes=[(2, 5), (2, 5)], make=_distribution,
           grad_inputs=[0]),  # TF's labels gradient ignores the backprop output
    OpCase("sparse_xent",
           lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=LABELS_2x5,
                                                                    logits=x),
           lambda x: ref_xent(x, np.eye(5)[LABELS_2x5]), shapes=[(2, 5)]),
    OpCase("sparse_xent_int32_rank3",
           lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(
               labels=LABELS_2x3.astype(np.int32), logits=x),
           lambda x: ref_xent(x, np.eye(5)[LABELS_2x3]), shapes=[(2, 3, 5)]),
    OpCase("sparse_xent_raw",
           lambda x: list(apply_op("SparseSoftmaxCrossEntropyWithLogits", features=x,
                                   labels=LABELS_2x5)),
           lambda x: [ref_xent(x, np.eye(5)[LABELS_2x5]),
                      (_f64(ref_softmax(x)) - np.eye(5)[LABELS_2x5]).astype(x.dtype)],
           shapes=[(2, 5)]),
    # Backward ops as ops (their own gradients are the second-order rules).
    OpCase("relu_grad", lambda g, x: apply_op("ReluGrad", gradients=g, features=x),
           lambda g, x: (g * (x > 0)).astype(g.dtype), shapes=[(3, 4), (3, 4)], make=_kinked),
    OpCase("relu6_grad", lambda g, x: apply_op("Relu6Grad", gradients=g, features=x),
           lambda g, x: (g * ((x > 0) & (x < 6))).astype(g.dtype), shapes=[(3, 4), (3, 4)],
           make=_relu6_make),
    OpCase("leaky_relu_grad",
           lambda g, x: apply_op("LeakyReluGrad", gradients=g, features=x, alpha=0.1),
           lambda g, x: np.where(x > 0, g, _f64(g) * 0.1).astype(g.dtype),
           shapes=[(3, 4), (3, 4)], make=_kinked),
    OpCase("elu_grad", lambda g, y: apply_op("EluGrad", gradients=g, outputs=y),
           lambda g, y: np.where(y < 0, _f64(g) * (_f64(y) + 1), g).astype(g.dtype),
           shapes=[(3, 4), (3, 4)], make=_kinked),
    OpCase("selu_grad", lambda g, y: apply_op("SeluGrad", gradients=g, outputs=y),
           lambda g, y: np.where(y < 0, _f64(g) * (_f64(y) + 1.0507009873554805 *
                                                   1.6732632423543772),
                                 _f64(g) * 1.0507009873554805).astype(g.dtype),
           shapes=[(3, 4), (3, 4)], make=_kinked),
    OpCase("softplus_grad", lambda g, x: apply_op("SoftplusGrad", gradients=g, features=x),
           lambda g, x: (_f64(g) / (1 + np.exp(-_f64(x)))).astype(g.dtype),
           shapes=[(3, 4), (3, 4)]),
    OpCase("lrn_grad",
           lambda g, x: apply_op("LRNGrad", input_grads=g, input_image=x,
                                 output_image=tf.nn.lrn(x, 1, 1.0, 0.5, 0.75), depth_radius=1,
                                 bias=1.0, alpha=0.5, beta=0.75),
           ref_lrn_grad, shapes=[(1, 2, 2, 4), (1, 2, 2, 4)], grad=False),
    # Compositions (tensorflux/nn/nn_impl.py).
    OpCase("sigmoid_xent",
           lambda z, x: tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x),
           lambda z, x: (np.maximum(x, 0) - _f64(x) * z + np.log1p(np.exp(-np.abs(_f64(x)))))
           .astype(x.dtype), shapes=[(3, 4), (3, 4)],
           make=lambda rng, s, d: away_from(rng, s, d, 0.0, 0.1) * 3),
    OpCase("weighted_xent",
           lambda z, x: tf.nn.weighted_cross_entropy_with_logits(z, x, 2.0),
           lambda z, x: ((1 - _f64(z)) * x + (1 + _f64(z)) * np.log1p(np.exp(-_f64(x))))
           .astype(x.dtype), shapes=[(3, 4), (3, 4)]),
    OpCase("l2_normalize", lambda x: tf.nn.l2_normalize(x, 1),
           lambda x: (_f64(x) / np.linalg.norm(_f64(x), axis=1, keepdims=True))
           .astype(x.dtype), shapes=[(3, 4)]),
    OpCase("moments", lambda x: list(tf.nn.moments(x, [0, 1])),
           lambda x: [_f64(x).mean((0, 1)).astype(x.dtype), _f64(x).var((0, 1)).astype(x.dtype)],
           shapes=[(3, 2, 4)]),
    OpCase("xw_plus_b", tf.nn.xw_plus_b,
           lambda x, w, b: (_f64(x) @ w + b).astype(x.dtype), shapes=[(3, 4), (4, 5), (5,)]),
    OpCase("batch_normalization",
           lambda x, m, v, o, s: tf.nn.batch_normalization(x, m, v, o, s, 1e-3),
           lambda x, m, v, o, s: ((_f64(x) - m) * s / np.sqrt(_f64(v) + 1e-3) + o)
           .astype(x.dtype), shapes=[(3, 4), (4,), (4,), (4,), (4,)],
           make=lambda rng, s, d: rng.uniform(0.5, 2.0, s).astype(d)),
]
test_value, test_value_low_precision, test_gradient = table_tests(CASES)


# ---- integer and special values ----------------------------------------------------------


def test_integer_activations_and_conv():
    x = np.array([[-3, 0, 2, 9]], np.int32)
    assert _run(tf.nn.relu(x)).dtype == np.int32
    np.testing.assert_array_equal(_run(tf.nn.relu(x)), [[0, 0, 2, 9]])
    np.testing.assert_array_equal(_run(tf.nn.relu6(x.astype(np.int64))), [[0, 0, 2, 6]])
    c = tf.nn.conv2d(np.ones((1, 3, 3, 1), np.int32), np.ones((2, 2, 1, 1), np.int32),
                     [1, 1, 1, 1], "VALID")
    out = _run(c)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out.reshape(2, 2), [[4, 4], [4, 4]])
    m = _run(tf.nn.max_pool(np.arange(16, dtype=np.int64).reshape(1, 4, 4, 1), 2, 2, "VALID"))
    np.testing.assert_array_equal(m.reshape(2, 2), [[5, 7], [13, 15]])
    assert tf.nn.leaky_relu(tf.constant([1, -2])).dtype == tf.float32


def test_nan_semantics():
    nan = np.nan
    r = _run([tf.nn.relu([nan, -1.0, 2.0]), tf.nn.relu6([nan, 7.0]), tf.nn.elu([nan]),
              tf.nn.leaky_relu([nan, -1.0])])
    np.testing.assert_array_equal(r[0], [nan, 0, 2])
    np.testing.assert_array_equal(r[1], [nan, 6])
    assert np.isnan(r[2][0])
    np.testing.assert_allclose(r[3], [nan, -0.2])
    # MaxPool ignores NaN, as TF's comparisons do.
    x = np.array([1, nan, 2, 3], np.float32).reshape(1, 2, 2, 1)
    assert _run(tf.nn.max_pool(x, 2, 2, "VALID")).item() == 3.0


def test_in_top_k():
    p = np.array([[0.1, 0.3, 0.3, 0.2], [0.5, 0.1, 0.2, 0.2]], np.float32)
    out = _run([tf.nn.in_top_k(p, [1, 0], 1), tf.nn.in_top_k(p, [2, 3], 1),
                tf.nn.in_top_k(p, np.array([3, 3], np.int64), 2),
                tf.nn.in_top_k([[np.nan, 1.0]], [0], 1), tf.nn.in_top_k([[np.inf, 1.0]], [0], 1),
                tf.nn.in_top_k(p, [4, -1], 1)])
    want = [[True, True], [True, False], [False, True], [False], [False], [False, False]]
    for got, w in zip(out, want, strict=True):
        np.testing.assert_array_equal(got, w)
    t = tf.nn.in_top_k(p, [1, 0], 1)
    assert t.op.type == "InTopKV2" and t.name == "in_top_k_6/InTopKV2:0"
    assert t.shape.as_list() == [2]


def test_softplus_thresholds_and_softmax_stability():
    x = np.array([-100.0, -20.0, 0.0, 20.0, 100.0], np.float32)
    np.testing.assert_allclose(_run(tf.nn.softplus(x)), np.logaddexp(0, x.astype(np.float64)),
                               rtol=1e-6, atol=1e-40)  # exp(-100) is a float32 denormal
    s = _run(tf.nn.softmax(np.array([[1000.0, 1000.0, -1000.0]], np.float32)))
    np.testing.assert_allclose(s, [[0.5, 0.5, 0.0]])
    ls = _run(tf.nn.log_softmax(np.array([[1000.0, 0.0]], np.float64)))
    np.testing.assert_allclose(ls, [[0.0, -1000.0]])


def test_kernels_do_not_write_inputs():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 4, 2)).astype(np.float32)
    w = rng.standard_normal((3, 3, 2, 2)).astype(np.float32)
    xp = tf.placeholder(tf.float32, x.shape)
    wp = tf.placeholder(tf.float32, w.shape)
    y = tf.nn.max_pool(tf.nn.relu(tf.nn.conv2d(xp, wp, 1, "SAME")), 2, 2, "VALID")
    loss = tf.reduce_sum(tf.nn.softmax(tf.reshape(y, [2, -1])) * 3.0) + tf.nn.l2_loss(xp)
    grads = tf.gradients(loss, [xp, wp])
    x0, w0 = x.copy(), w.copy()
    x.flags.writeable = w.flags.writeable = False
    _run(grads, {xp: x, wp: w})
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(w, w0)


def test_memory_bound_kernels_split_over_threads(monkeypatch):
    from tensorflux.kernels import intra_op

    monkeypatch.setattr(intra_op, "blas_threads", lambda: 1)
    monkeypatch.setattr(intra_op, "MIN_ELEMENTS", 0)
    monkeypatch.setattr(intra_op, "MIN_FLOPS", 0)
    rng = np.random.default_rng(4)
    x = _distinct(rng, (5, 6, 4, 3), np.float32)
    g = rng.standard_normal((5, 3, 2, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    y = rng.standard_normal(x.shape).astype(np.float32)
    got = _run([tf.nn.max_pool(x, 2, 2, "VALID"),
                apply_op("MaxPoolGrad", orig_input=x, orig_output=tf.zeros([5, 3, 2, 3]),
                         grad=g, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID"),
                tf.nn.relu(x), apply_op("ReluGrad", gradients=y, features=x),
                tf.nn.bias_add(x, b), apply_op("BiasAddGrad", out_backprop=y)])
    want = [ref_pool(x, (2, 2), (2, 2), "VALID", "max"),
            ref_max_pool_grad(x, g, (2, 2), (2, 2), "VALID"), np.maximum(x, 0),
            y * (x > 0), x + b, y.sum(axis=(0, 1, 2))]
    for gv, wv in zip(got, want, strict=True):
        np.testing.assert_allclose(gv, wv, rtol=1e-5, atol=1e-5)


# ---- dropout -----------------------------------------------------------------------------


def test_dropout_keep_prob_one_is_identity():
    x = tf.ones([3, 4])
    assert tf.nn.dropout(x, keep_prob=1.0) is x
    assert tf.nn.dropout(x, rate=0.0) is x
    assert tf.nn.dropout(x, keep_prob=tf.constant(1.0)) is x


def test_dropout_values_and_scale():
    x = tf.ones([200, 50])
    y = tf.nn.dropout(x, keep_prob=0.4)
    assert y.shape.as_list() == [200, 50] and y.dtype == tf.float32
    assert y.op.type == "SelectV2" and y.name.startswith("dropout/")
    v = _run(y)
    assert set(np.unique(v)) <= {0.0, np.float32(1 / 0.4)}
    assert abs(np.mean(v > 0) - 0.4) < 0.03
    (dx,) = tf.gradients(tf.reduce_sum(y), x)
    dv, yv = _run([dx, y])
    np.testing.assert_allclose(dv, yv)  # x is ones: the gradient is the scaled mask


def test_dropout_noise_shape_rate_tensor_and_seed():
    x = tf.ones([6, 40])
    v = _run(tf.nn.dropout(x, rate=0.5, noise_shape=[1, 40]))
    assert np.all(v == v[0:1])  # one decision per column
    rate = tf.placeholder(tf.float32, [])
    y = tf.nn.dropout(x, rate=rate)
    with tf.Session() as sess:
        out = sess.run(y, {rate: 0.75})
        assert set(np.unique(out)) <= {0.0, 4.0}
        assert 0 < np.mean(out > 0) < 0.5
    runs = []
    for _ in range(2):
        with tf.Graph().as_default():
            tf.set_random_seed(7)
            runs.append(_run(tf.nn.dropout(tf.ones([5, 5]), rate=0.5, seed=3)))
    np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.parametrize("kwargs, message", [
    (dict(keep_prob=1.5), r"`rate` must be a scalar tensor or a float in the range \[0, 1\). "
                          r"Received: rate=-0.5"),
    (dict(rate=1.0), r"range \[0, 1\). Received: rate=1.0"),
    (dict(keep_prob=0.5, rate=0.5), "Cannot specify both 'keep_prob' and 'rate'."),
    (dict(), r"`rate` must be provided. Received: rate=None"),
])
def test_dropout_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tf.nn.dropout(tf.ones([3]), **kwargs)
    with pytest.raises(ValueError, match="must be a floating point tensor"):
        tf.nn.dropout(tf.ones([3], tf.int32), keep_prob=0.5)


# ---- static shapes -----------------------------------------------------------------------


def test_backprop_and_misc_static_shapes():
    w = tf.ones([3, 3, 3, 5])
    bi = apply_op("Conv2DBackpropInput", input_sizes=tf.placeholder(tf.int32, [4]), filter=w,
                  out_backprop=tf.ones([2, 4, 4, 5]), strides=[1, 2, 2, 1], padding="SAME")
    assert bi.shape.as_list() == [2, None, None, None]
    bi = apply_op("Conv2DBackpropInput", input_sizes=[2, 8, 8, 3], filter=w,
                  out_backprop=tf.placeholder(tf.float32), strides=[1, 2, 2, 1], padding="SAME")
    assert bi.shape.as_list() == [2, 8, 8, 3]
    bf = apply_op("Conv2DBackpropFilter", input=tf.placeholder(tf.float32, [None, 8, 8, 3]),
                  filter_sizes=tf.placeholder(tf.int32, [4]), out_backprop=tf.ones([2, 4, 4, 5]),
                  strides=[1, 2, 2, 1], padding="SAME")
    assert bf.shape.as_list() == [None] * 4
    assert tf.nn.bias_add(tf.placeholder(tf.float32, [None, 3]), tf.ones([3])).shape.as_list() \
        == [None, 3]
    assert apply_op("BiasAddGrad", out_backprop=tf.placeholder(tf.float32, [None, 2, 7])) \
        .shape.as_list() == [7]
    xe = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.placeholder(tf.int64, [None]), logits=tf.placeholder(tf.float32, [None, 10]))
    assert xe.shape.as_list() == [None]
    assert xe.name == "SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits:0"
    assert tf.nn.l2_loss(tf.ones([2, 2])).shape.as_list() == []
    assert tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.ones([4]), logits=tf.ones([4])) \
        .shape.as_list() == []
    assert tf.nn.softmax(tf.placeholder(tf.float32, [None, 3])).shape.as_list() == [None, 3]


def test_op_names_follow_tf():
    x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    names = [tf.nn.relu(x).name, tf.nn.softmax(x).name, tf.nn.bias_add(x, tf.ones([3])).name,
             tf.nn.l2_loss(x).name, tf.nn.max_pool(x, 2, 2, "VALID").name,
             tf.nn.avg_pool(x, 2, 2, "VALID").name, tf.nn.lrn(x).name,
             tf.nn.local_response_normalization(x).name, tf.nn.leaky_relu(x).name,
             tf.nn.conv2d(x, tf.ones([3, 3, 3, 5]), 1, "SAME").name]
    assert names == ["Relu:0", "Softmax:0", "BiasAdd:0", "L2Loss:0", "MaxPool:0", "AvgPool:0",
                     "LRN:0", "LRN_1:0", "LeakyRelu:0", "Conv2D:0"]
    s = tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.ones([3, 4]), logits=tf.ones([3, 4]))
    assert s.name == "logistic_loss:0"


# ---- errors ------------------------------------------------------------------------------


def test_bad_padding_and_strides():
    x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    w = tf.ones([3, 3, 3, 5])
    for fn, op in [(lambda p: tf.nn.conv2d(x, w, 1, p), "Conv2D"),
                   (lambda p: tf.nn.max_pool(x, 2, 2, p), "MaxPool"),
                   (lambda p: tf.nn.avg_pool(x, 2, 2, p), "AvgPool")]:
        for bad in ("FOO", "same"):
            with pytest.raises(ValueError, match=f"Attr 'padding' of '{op}' Op passed string "
                                                 f"'{bad}' not in"):
                fn(bad)
    with pytest.raises(ValueError, match=r"strides should be of length 1, 2 or 4\. Received: "
                                         r"strides=\[1, 1, 1\] of length 3"):
        tf.nn.conv2d(x, w, [1, 1, 1], "SAME")
    with pytest.raises(ValueError, match=r"ksize should be of length 1, 2 or 4"):
        tf.nn.max_pool(x, [1, 2, 2], [1, 2, 2, 1], "VALID")
    with pytest.raises(ValueError, match="'EXPLICIT' is not a valid value"):
        tf.nn.conv2d(x, w, 1, "EXPLICIT")


def test_shape_errors_at_construction():
    x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    with pytest.raises(ValueError, match=r"^Depth of input \(3\) is not a multiple of input "
                                         r"depth of filter \(4\) for '\{\{node Conv2D\}\}"):
        tf.nn.conv2d(x, tf.ones([3, 3, 4, 5]), [1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match=r"^Negative dimension size caused by subtracting 3 "
                                         r"from 2 for '\{\{node Conv2D"):
        tf.nn.conv2d(tf.ones([1, 2, 2, 3]), tf.ones([3, 3, 3, 5]), 1, "VALID")
    with pytest.raises(ValueError, match=r"^Shape must be rank 4 but is rank 3"):
        tf.nn.conv2d(tf.ones([2, 2, 3]), tf.ones([3, 3, 3, 5]), 1, "VALID")
    with pytest.raises(ValueError, match=r"^Negative dimension size caused by subtracting 3 "
                                         r"from 2 for '\{\{node MaxPool"):
        tf.nn.max_pool(tf.ones([1, 2, 2, 1]), 3, 1, "VALID")
    with pytest.raises(ValueError, match=r"^Dimensions must be equal, but are 3 and 4 for "
                                         r"'\{\{node BiasAdd"):
        tf.nn.bias_add(x, tf.ones([4]))
    with pytest.raises(ValueError, match=r"^Shape must be at least rank 2 but is rank 1"):
        tf.nn.bias_add(tf.ones([3]), tf.ones([3]))
    with pytest.raises(ValueError, match=r"^Shape must be at least rank 3 but is rank 2"):
        tf.nn.bias_add(tf.ones([2, 3]), tf.ones([3]), data_format="NCHW")
    with pytest.raises(ValueError, match=r"must be of the form `N...C` or `NC...`"):
        tf.nn.bias_add(tf.ones([2, 3]), tf.ones([3]), data_format="CHW")
    with pytest.raises(ValueError, match=r"^Shape must be rank 4 but is rank 3 for "
                                         r"'\{\{node LRN\}\}"):
        tf.nn.lrn(tf.ones([2, 3, 4]))
    with pytest.raises(ValueError, match=r"^Shape must be at least rank 1 but is rank 0"):
        tf.nn.softmax(tf.constant(1.0))
    with pytest.raises(ValueError, match=r"^Shape must be rank 2 but is rank 1"):
        tf.nn.in_top_k(tf.ones([4]), [1], 1)
    with pytest.raises(ValueError, match=r"^Dimensions must be equal, but are 3 and 2"):
        tf.nn.in_top_k(tf.ones([3, 4]), [1, 2], 1)
    with pytest.raises(ValueError, match=r"^Dimensions must be equal, but are 4 and 5"):
        tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.ones([3, 5]), logits=tf.ones([3, 4]))
    with pytest.raises(ValueError, match=r"must have the same shape, received \(\(3, 4\) vs "
                                         r"\(3, 5\)\)"):
        tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.ones([3, 5]), logits=tf.ones([3, 4]))


def test_type_errors():
    with pytest.raises(TypeError, match="Value passed to parameter 'logits' has DataType int32 "
                                        "not in list of allowed values"):
        tf.nn.softmax(tf.constant([1, 2]))
    with pytest.raises(TypeError, match="parameter 't' has DataType int32"):
        tf.nn.l2_loss(tf.constant([1, 2]))
    with pytest.raises(TypeError, match="parameter 'input' has DataType float64"):
        tf.nn.lrn(tf.ones([2, 3, 4, 5], tf.float64))
    with pytest.raises(TypeError, match="'predictions' of 'InTopKV2' Op has type float64"):
        tf.nn.in_top_k(tf.ones([3, 4], tf.float64), [1, 2, 3], 1)
    with pytest.raises(TypeError, match="parameter 'labels' has DataType float32 not in list"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.ones([3]), logits=tf.ones([3, 4]))


def test_xent_argument_guards():
    lg, lb = tf.ones([3, 10]), tf.zeros([3], tf.int64)
    for fn in (tf.nn.sparse_softmax_cross_entropy_with_logits,
               tf.nn.softmax_cross_entropy_with_logits, tf.nn.sigmoid_cross_entropy_with_logits):
        name = fn.__name__
        with pytest.raises(ValueError, match=f"Only call `{name}` with named arguments"):
            fn(lb, lg)
        with pytest.raises(ValueError, match="Both labels and logits must be provided"):
            fn(labels=lb)
    with pytest.raises(ValueError, match=r"`labels.shape.rank` must equal `logits.shape.rank - "
                                         r"1`. Received: labels.shape=\(3, 2\) of rank 2"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.ones([3, 2], tf.int32),
                                                       logits=tf.ones([3, 4]))
    with pytest.raises(ValueError, match=r"`labels.shape` must equal `logits.shape` except for "
                                         r"the last dimension"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.ones([3], tf.int32),
                                                       logits=tf.ones([4, 4]))


def test_bad_label_names_node_and_session_survives():
    logits = tf.placeholder(tf.float32, [None, 10])
    labels = tf.placeholder(tf.int64, [None])
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    with tf.Session() as sess:
        for bad, first in (([1, 10, 2], 10), ([1, -1, 2], -1)):
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(loss, {logits: np.zeros((3, 10)), labels: bad})
            msg = str(info.value)
            assert f"Received a label value of {first} which is outside the valid range of " \
                   f"[0, 10).  Label values: 1 {first} 2" in msg
            assert "SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits" \
                in msg
            assert info.value.op is None or info.value.node_name.endswith(
                "SparseSoftmaxCrossEntropyWithLogits")
        ok = sess.run(loss, {logits: np.zeros((2, 10)), labels: [1, 2]})
        np.testing.assert_allclose(ok, [np.log(10)] * 2, rtol=1e-6)


# ---- TensorFlow oracle -------------------------------------------------------------------

_ORACLE_SEED = 11


def _oracle_inputs():
    rng = np.random.default_rng(_ORACLE_SEED)
    n = lambda *s: rng.standard_normal(s).round(3)  # noqa: E731
    return {
        "x": n(2, 7, 6, 3), "w": n(3, 2, 3, 4), "xc": n(2, 3, 5, 4), "w2": n(2, 2, 3, 2),
        "dy_same_s2": n(2, 4, 3, 4), "ties": rng.integers(0, 3, (2, 6, 6, 2)).astype(float),
        "gp": n(2, 3, 3, 2), "gp3": n(2, 6, 6, 2), "logits": n(4, 7),
        "soft": rng.uniform(0, 1, (4, 7)).round(3), "labels": [0, 6, 3, 3],
        "lrn_x": n(2, 3, 3, 9), "lrn_g": n(2, 3, 3, 9), "bias": n(4), "vec": n(3, 5),
    }


_ORACLE_CODE = """
inp = {k: np.array(v, np.float32) if k != "labels" else np.array(v) for k, v in
       json.loads(INPUTS).items()}
g = tf.Graph()
out = {}
with g.as_default():
    c = lambda k: tf.constant(inp[k])
    x, w = c("x"), c("w")
    out["conv_same"] = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
    out["conv_valid_s2"] = tf.nn.conv2d(x, w, [1, 2, 2, 1], "VALID")
    out["conv_same_s2"] = tf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME")
    out["conv_dil"] = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", dilations=[1, 2, 2, 1])
    out["conv_explicit"] = tf.nn.conv2d(x, w, [1, 1, 2, 1], [[0, 0], [2, 1], [1, 0], [0, 0]])
    if tf.__name__.startswith("tensorflux"):
        out["conv_nchw"] = tf.nn.conv2d(c("xc"), c("w2"), [1, 1, 1, 1], "SAME",
                                        data_format="NCHW")
    else:  # TF's CPU kernels run NCHW only with oneDNN (off on some CPUs): its NHWC value
        out["conv_nchw"] = tf.transpose(tf.nn.conv2d(tf.transpose(c("xc"), [0, 2, 3, 1]),
                                                     c("w2"), [1, 1, 1, 1], "SAME"),
                                        [0, 3, 1, 2])
    dy = c("dy_same_s2")
    out["conv_bi"] = tf.nn.conv2d_backprop_input([2, 7, 6, 3], w, dy, [1, 2, 2, 1], "SAME")
    out["conv_bf"] = tf.nn.conv2d_backprop_filter(x, [3, 2, 3, 4], dy, [1, 2, 2, 1], "SAME")
    t = c("ties")
    mp = tf.nn.max_pool(t, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    out["maxpool_ties"] = mp
    out["maxpool_grad_ties"] = tf.gradients(mp, t, c("gp"))[0]
    mp3 = tf.nn.max_pool(t, [1, 3, 3, 1], [1, 1, 1, 1], "SAME")
    out["maxpool_3x3_grad_ties"] = tf.gradients(mp3, t, c("gp3"))[0]
    out["maxpool_same_s2"] = tf.nn.max_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
    ap = tf.nn.avg_pool(x, [1, 3, 2, 1], [1, 2, 2, 1], "SAME")
    out["avgpool_same"] = ap
    out["avgpool_grad"] = tf.gradients(ap, x, tf.ones_like(ap) * 1.5)[0]
    lg = c("logits")
    out["xent"] = tf.nn.softmax_cross_entropy_with_logits_v2(labels=c("soft"), logits=lg)
    out["xent_grad"] = tf.gradients(out["xent"], lg)[0]
    sx = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=inp["labels"], logits=lg)
    out["sparse_xent"] = sx
    out["sparse_xent_grad"] = tf.gradients(sx, lg)[0]
    lx = c("lrn_x")
    l = tf.nn.lrn(lx, 3, 1.5, 0.2, 0.6)
    out["lrn"] = l
    out["lrn_grad"] = tf.gradients(l, lx, c("lrn_g"))[0]
    bias = c("bias")
    ba = tf.nn.bias_add(tf.constant(inp["vec"][None, :, :4]), bias)
    out["bias_add"] = ba
    out["bias_add_grad"] = tf.gradients(ba, bias, tf.ones_like(ba) * 2.0)[0]
    v = c("vec")
    out["selu"], out["elu"], out["softplus"] = tf.nn.selu(v), tf.nn.elu(v), tf.nn.softplus(v)
    out["leaky"], out["relu6"] = tf.nn.leaky_relu(v, 0.1), tf.nn.relu6(v * 5)
    out["l2"] = tf.nn.l2_loss(v)
    out["log_softmax"] = tf.nn.log_softmax(v)
    out["in_top_k"] = tf.nn.in_top_k(lg, [0, 6, 3, 2], 3)
    with tf.Session() as s:
        vals = s.run(out)
result = {k: np.asarray(vv) for k, vv in vals.items()}
"""


@pytest.mark.oracle
def test_matches_tensorflow():
    inp = {k: np.asarray(v).tolist() for k, v in _oracle_inputs().items()}
    ours, theirs = oracle.run_both(f"INPUTS = {json.dumps(inp)!r}\n" + _ORACLE_CODE, tf)
    oracle.assert_results_close(ours, theirs, rtol=1e-4, atol=1e-4)


# ---- semantics checked against TensorFlow 2.21 (issue 21); expected values from the oracle --


def test_leaky_relu_applies_alpha_as_float32():
    x = np.array([-1.3, 2.0, -0.7, -3.3e-5], np.float64)
    y, g = _run([tf.nn.leaky_relu(x, alpha=0.1),
                 apply_op("LeakyReluGrad", gradients=tf.constant(np.ones(4)), features=x,
                          alpha=0.1)])
    a = float(np.float32(0.1))
    assert y.tolist() == [-1.3 * a, 2.0, -0.7 * a, -3.3e-5 * a]  # -0.13000000193715097, ...
    assert g.dtype == np.float64 and g.tolist() == [a, 1.0, a, a]


def test_softmax_cross_entropy_broadcasts_labels_and_logits():
    logits = np.array([[1.0, 2, 3], [1, 1, 1]], np.float32)
    labels = np.array([[0.2, 0.3, 0.5]], np.float32)
    loss, backprop = apply_op("SoftmaxCrossEntropyWithLogits", features=logits, labels=labels)
    assert loss.shape.as_list() == [2] and backprop.shape.as_list() == [2, 3]
    loss2, _ = apply_op("SoftmaxCrossEntropyWithLogits", features=logits[:1],
                        labels=np.array([[0.2, 0.3, 0.5], [1, 0, 0]], np.float32))
    got = _run([loss, backprop, loss2])
    # Values from TF 2.21.
    np.testing.assert_allclose(got[0], [1.1076059, 1.0986123], rtol=1e-6)
    np.testing.assert_allclose(got[1], [[-0.10996943, -0.05527154, 0.16524094],
                                        [0.13333334, 0.03333333, -0.16666666]], atol=1e-6)
    np.testing.assert_allclose(got[2], [1.1076059, 2.407606], rtol=1e-6)
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
        apply_op("SoftmaxCrossEntropyWithLogits", features=np.ones((2, 3), np.float32),
                 labels=np.ones((3, 3), np.float32))


@pytest.mark.parametrize("radius", [-1, 2**31 - 1, 2**31])
def test_lrn_depth_radius_out_of_int_range_is_invalid_as_in_tf(radius):
    # issue 21: TF's LRN kernels take depth_radius in [0, INT_MAX); -1 used to run.
    with tf.Graph().as_default():
        x = tf.ones([1, 2, 2, 3])
        y = tf.nn.lrn(x, depth_radius=radius)
        dx = tf.gradients(y, x)[0]
        with tf.Session() as s:
            for t in (y, dx):
                with pytest.raises(tf.errors.InvalidArgumentError,
                                   match=f"depth_radius = {radius} larger than int max"):
                    s.run(t)


@pytest.mark.parametrize("shape", [(4, 7), (None, 7)])
def test_xent_gradient_skips_the_softmax_term_of_a_zero_backprop_gradient(shape):
    """The driver's zeros for the unused backprop output (a Fill of 0 when its shape is
    known) add nothing: no Softmax and no [batch, classes] temporaries in the gradient, as
    TF skips `_is_zeros_tensor` (the LSTM LM step's largest arrays); the same values."""
    rng = np.random.default_rng(1)
    x_value = rng.standard_normal((4, 7)).astype(np.float32)
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, shape)
        loss = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=[1, 0, 6, 3], logits=x))
        (dx,) = tf.gradients(loss, [x])
        with tf.Session() as s:
            got = s.run(dx, {x: x_value})
    assert "Softmax" not in {op.type for op in g.get_operations()}
    e = np.exp(x_value - x_value.max(1, keepdims=True))
    want = e / e.sum(1, keepdims=True) - np.eye(7, dtype=np.float32)[[1, 0, 6, 3]]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_softmax_xent_flattens_labels_of_another_rank():
    """Labels of rank 3 ([1, n, c], e.g. `labels=[y]`, a list around the tensor) against
    rank-2 logits are flattened to [n, c], as TF's Python wrapper does (a public TF1
    tutorial passes labels that way); the values are the rank-2 call's."""
    rng = np.random.RandomState(0)
    x = rng.randn(4, 7).astype(np.float32)
    y = np.eye(7, dtype=np.float32)[[1, 2, 3, 4]]
    with tf.Graph().as_default():
        logits = tf.placeholder(tf.float32, [None, 7])
        ref = tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits)
        wrapped = tf.nn.softmax_cross_entropy_with_logits_v2(labels=[tf.constant(y)],
                                                             logits=logits)
        folded = tf.nn.softmax_cross_entropy_with_logits_v2(labels=y.reshape(2, 2, 7),
                                                            logits=logits)
        assert wrapped.shape.as_list() == folded.shape.as_list() == [4]  # as in TF
        with tf.Session() as s:
            a, b, c = s.run([ref, wrapped, folded], {logits: x})
    np.testing.assert_array_equal(b, a)
    np.testing.assert_array_equal(c, a)
