"""DepthwiseConv2dNative and its backprops (tensorflux/ops/depthwise_conv_ops.py), and the
compositions tf.nn.depthwise_conv2d, separable_conv2d, conv1d, max_pool1d, avg_pool1d
(tensorflux/nn/conv_impl.py), against NumPy references and finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import op_registry
from tensorflux.kernels import registry as kernel_registry
from tests import oracle
from tests.op_test_util import OpCase, check_gradient, check_value
from tests.ops import nd_reference as ref

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _nchw(x):
    return np.moveaxis(x, -1, 1)


CASES = [
    OpCase("depthwise_same", lambda x, w: tf.nn.depthwise_conv2d_native(x, w, [1, 1, 1, 1],
                                                                        "SAME"),
           lambda x, w: ref.depthwise(x, w, (1, 1), "SAME"), shapes=[(2, 4, 5, 3), (3, 2, 3, 2)]),
    OpCase("depthwise_valid_s2", lambda x, w: tf.nn.depthwise_conv2d_native(
        x, w, [1, 2, 2, 1], "VALID"),
           lambda x, w: ref.depthwise(x, w, (2, 2), "VALID"), shapes=[(1, 5, 6, 2), (2, 2, 2, 3)]),
    OpCase("depthwise_rate", lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME",
                                                                 rate=[2, 2]),
           lambda x, w: ref.depthwise(x, w, (1, 1), "SAME", (2, 2)),
           shapes=[(1, 6, 6, 2), (2, 2, 2, 1)]),
    OpCase("depthwise_nchw", lambda x, w: tf.nn.depthwise_conv2d_native(
        x, w, [1, 1, 1, 1], "SAME", data_format="NCHW"),
           lambda x, w: _nchw(ref.depthwise(np.moveaxis(x, 1, -1), w, (1, 1), "SAME")),
           shapes=[(1, 2, 4, 4), (3, 3, 2, 2)]),
    OpCase("depthwise_backprop_input", lambda w, dy: tf.nn.depthwise_conv2d_native_backprop_input(
        [1, 5, 5, 2], w, dy, [1, 2, 2, 1], "SAME"),
           lambda w, dy: ref.adjoint(lambda x: ref.depthwise(x, w, (2, 2), "SAME"),
                                     (1, 5, 5, 2), dy),
           shapes=[(3, 3, 2, 2), (1, 3, 3, 4)]),
    OpCase("depthwise_backprop_filter", lambda x, dy:
           tf.nn.depthwise_conv2d_native_backprop_filter(x, [2, 3, 2, 2], dy, [1, 1, 1, 1],
                                                         "VALID"),
           lambda x, dy: ref.adjoint(lambda w: ref.depthwise(x, w, (1, 1), "VALID"),
                                     (2, 3, 2, 2), dy),
           shapes=[(2, 4, 4, 2), (2, 3, 2, 4)]),
    OpCase("separable", lambda x, d, p: tf.nn.separable_conv2d(x, d, p, [1, 1, 1, 1], "SAME"),
           lambda x, d, p: ref.conv(ref.depthwise(x, d, (1, 1), "SAME"), p, (1, 1), "VALID"),
           shapes=[(2, 4, 4, 3), (3, 3, 3, 2), (1, 1, 6, 4)]),
    OpCase("conv1d", lambda x, w: tf.nn.conv1d(x, w, 2, "SAME"),
           lambda x, w: ref.conv(x, w, (2,), "SAME"), shapes=[(2, 7, 3), (3, 3, 4)]),
    OpCase("conv1d_ncw", lambda x, w: tf.nn.conv1d(x, w, 1, "VALID", data_format="NCW"),
           lambda x, w: _nchw(ref.conv(np.moveaxis(x, 1, -1), w, (1,), "VALID")),
           shapes=[(2, 3, 6), (2, 3, 2)]),
    OpCase("max_pool1d", lambda x: tf.nn.max_pool1d(x, 3, 2, "SAME"),
           lambda x: ref.pool(x, (3,), (2,), "SAME", "max"), shapes=[(2, 7, 3)]),
    OpCase("avg_pool1d", lambda x: tf.nn.avg_pool1d(x, 2, 1, "VALID"),
           lambda x: ref.pool(x, (2,), (1,), "VALID", "avg"), shapes=[(2, 5, 2)]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_value(case, dtype):
    check_value(case, dtype)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_gradient(case):
    check_gradient(case, np.float64)


def test_second_derivatives_and_shapes():
    x = tf.placeholder(tf.float64, [1, 4, 4, 2])
    w = tf.placeholder(tf.float64, [2, 2, 2, 3])
    y = tf.nn.depthwise_conv2d_native(x, w, [1, 1, 1, 1], "SAME")
    assert y.shape.as_list() == [1, 4, 4, 6]
    gx = tf.gradients(tf.reduce_sum(y * y), x)[0]
    assert tf.gradients(tf.reduce_sum(gx), w)[0] is not None  # backprop ops differentiate
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        tf.nn.depthwise_conv2d_native(x, tf.zeros([2, 2, 3, 1], tf.float64), [1, 1, 1, 1],
                                      "SAME")
    with pytest.raises(ValueError, match="Pointwise filter"):
        tf.nn.separable_conv2d(x, w, tf.zeros([2, 2, 6, 1], tf.float64), [1, 1, 1, 1], "SAME")
    assert tf.nn.conv1d(tf.zeros([2, 9, 3]), tf.zeros([3, 3, 5]), 1, "SAME").name == \
        "conv1d/Squeeze:0"


@pytest.mark.oracle
def test_matches_tensorflow():
    rng = np.random.RandomState(2)
    x = rng.randn(2, 5, 6, 3).astype(np.float32)
    d = rng.randn(3, 3, 3, 2).astype(np.float32)
    p = rng.randn(1, 1, 6, 4).astype(np.float32)
    body = """
y = tf.nn.separable_conv2d(x, d, p, [1, 2, 2, 1], "SAME")  # equal: TF without oneDNN refuses others
z = tf.nn.depthwise_conv2d(x, d, [1, 1, 1, 1], "VALID", rate=[2, 1])
c = tf.nn.conv1d(x[:, 0], d[0], 1, "SAME")
loss = tf.reduce_sum(y * y) + tf.reduce_sum(tf.sin(z)) + tf.reduce_sum(c * c)
out = [y, z, c] + tf.gradients(loss, [x, d, p])
"""
    theirs = oracle.run_tf(
        f"x, d, p = [tf.constant(np.array(v, np.float32)) for v in "
        f"{[x.tolist(), d.tolist(), p.tolist()]}]\n{body}\nresult = tf.Session().run(out)")
    scope = {"tf": tf, "x": tf.constant(x), "d": tf.constant(d), "p": tf.constant(p)}
    exec(body, scope)  # noqa: S102 - the same program as the oracle's
    ours = tf.Session().run(scope["out"])
    for got, want in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


MY_OPS = [
    "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
    "DepthwiseConv2dNativeBackpropFilter",
]


@pytest.mark.parametrize("op_type", MY_OPS)
def test_every_op_has_shape_fn_kernel_and_gradient(op_type):
    assert op_registry.get(op_type).shape_fn is not None
    assert kernel_registry.has_kernel(op_type, "CPU")
    assert op_registry.get_gradient(op_type) is not None
