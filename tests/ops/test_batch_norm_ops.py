"""FusedBatchNorm, V2, V3 and their gradient ops (tensorflux/ops/batch_norm_ops.py):
training and inference against NumPy, the running-average blend, finite-difference
gradients in both modes, and TensorFlow's values."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import op_registry
from tensorflux.kernels import registry as kernel_registry
from tests import oracle
from tests.op_test_util import OpCase, check_gradient, check_value, positive

pytestmark = pytest.mark.usefixtures("fresh_graph")
EPS = 0.001


def _ref_train(x, scale, offset, axes=(0, 1, 2), shape=(1, 1, 1, -1)):
    m, v = x.mean(axes), x.var(axes)
    y = (x - m.reshape(shape)) / np.sqrt(v.reshape(shape) + EPS) * scale.reshape(shape) \
        + offset.reshape(shape)
    n = x.size / m.size
    return [y, m, v * n / (n - 1)]


def _ref_infer(x, scale, offset, mean, var):
    return [(x - mean) / np.sqrt(var + EPS) * scale + offset, mean, var]


def _make(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype) * 2 + 0.5


def _var(rng, shape, dtype):
    return positive(rng, shape, dtype) + 0.5


CASES = [
    OpCase("train_nhwc", lambda x, s, o: list(tf.nn.fused_batch_norm(x, s, o, epsilon=EPS)),
           _ref_train, shapes=[(3, 2, 4, 3), (3,), (3,)], make=_make),
    OpCase("train_nchw", lambda x, s, o: list(tf.nn.fused_batch_norm(
        x, s, o, epsilon=EPS, data_format="NCHW")),
           lambda x, s, o: _ref_train(x, s, o, (0, 2, 3), (1, -1, 1, 1)),
           shapes=[(2, 3, 3, 4), (3,), (3,)], make=_make),
    OpCase("train_ndhwc", lambda x, s, o: list(tf.nn.fused_batch_norm(
        x, s, o, epsilon=EPS, data_format="NDHWC")),
           lambda x, s, o: _ref_train(x, s, o, (0, 1, 2, 3), (1, 1, 1, 1, -1)),
           shapes=[(2, 2, 3, 2, 2), (2,), (2,)], make=_make),
    OpCase("inference", lambda x, s, o, m, v: list(tf.nn.fused_batch_norm(
        x, s, o, m, v, epsilon=EPS, is_training=False)),
           _ref_infer, shapes=[(2, 3, 2, 4), (4,), (4,), (4,), (4,)],
           make=lambda rng, shape, dt: _var(rng, shape, dt)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_value(case):
    check_value(case, np.float32)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_gradient(case):
    # The y output's gradient w.r.t. x, scale and offset; as in TF, none flows to the
    # mean and variance inputs (population statistics are constants of the step).
    first = OpCase(case.name, lambda *a: case.build(*a)[0], case.ref, shapes=case.shapes,
                   make=case.make, grad_tol=5e-3, grad_inputs=[0, 1, 2])
    check_gradient(first, np.float32)


def _first_derivatives(x, dy, s, training, data_format="NHWC"):
    c = s.shape.as_list()[0]
    mean, var = (None, None) if training else (tf.fill([c], 0.3), tf.fill([c], 1.7))
    y = tf.nn.fused_batch_norm(x, s, tf.zeros([c]), mean, var, epsilon=EPS,
                               is_training=training, data_format=data_format)[0]
    return tf.gradients(y, [x, s], grad_ys=dy)


SECOND_ORDER = [
    OpCase("grad_train", lambda x, dy, s: _first_derivatives(x, dy, s, True), None,
           shapes=[(2, 3, 2, 3), (2, 3, 2, 3), (3,)], make=_make, grad_tol=5e-3),
    OpCase("grad_train_nchw", lambda x, dy, s: _first_derivatives(x, dy, s, True, "NCHW"),
           None, shapes=[(2, 3, 2, 3), (2, 3, 2, 3), (3,)], make=_make, grad_tol=5e-3),
    OpCase("grad_inference", lambda x, dy, s: _first_derivatives(x, dy, s, False), None,
           shapes=[(2, 2, 3, 4), (2, 2, 3, 4), (4,)], make=_make, grad_tol=5e-3),
]


@pytest.mark.parametrize("case", SECOND_ORDER, ids=lambda c: c.name)
def test_second_derivatives(case):
    check_gradient(case, np.float32)


def test_exponential_average_and_half_precision():
    rng = np.random.RandomState(0)
    x = rng.rand(2, 2, 2, 3).astype(np.float32)
    ones, zeros = np.ones(3, np.float32), np.zeros(3, np.float32)
    y, m, v = tf.nn.fused_batch_norm(x, ones, zeros, zeros + 0.5, ones, epsilon=EPS,
                                     exponential_avg_factor=0.3)
    yh = tf.nn.fused_batch_norm(x.astype(np.float16), ones, zeros, epsilon=EPS)[0]
    got = tf.Session().run([m, v, yh])
    np.testing.assert_allclose(got[0], 0.35 + 0.3 * x.mean((0, 1, 2)), rtol=1e-5)
    np.testing.assert_allclose(got[1], 0.7 + 0.3 * x.var((0, 1, 2)) * 8 / 7, rtol=1e-5)
    assert got[2].dtype == np.float16
    np.testing.assert_allclose(got[2], _ref_train(x, ones, zeros)[0], atol=5e-3)


def test_bad_input():
    x = tf.zeros([2, 3, 3, 4])
    with pytest.raises(ValueError, match="must be a 1D tensor"):
        tf.nn.fused_batch_norm(x, tf.ones(4), tf.zeros(4), is_training=False)
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        tf.nn.fused_batch_norm(x, tf.ones(3), tf.zeros(3))
    with pytest.raises(ValueError, match="rank 4"):
        tf.nn.fused_batch_norm(tf.zeros([2, 4]), tf.ones(4), tf.zeros(4))


@pytest.mark.oracle
def test_matches_tensorflow():
    rng = np.random.RandomState(3)
    x = rng.randn(3, 4, 2, 5).astype(np.float32)
    s, o = rng.rand(5).astype(np.float32) + 0.5, rng.randn(5).astype(np.float32)
    body = """
y, m, v = tf.nn.fused_batch_norm(x, s, o, epsilon=0.01, data_format="NHWC")
yi, _, _ = tf.nn.fused_batch_norm(x, s, o, m * 0 + 0.1, v * 0 + 2.0, is_training=False)
loss = tf.reduce_sum(tf.sin(y)) + tf.reduce_sum(yi * yi)
grads = tf.gradients(loss, [x, s, o])
second = tf.gradients(tf.reduce_sum(grads[0] ** 2) + tf.reduce_sum(tf.sin(grads[1])), [x, s])
out = [y, m, v, yi] + grads + second
"""
    theirs = oracle.run_tf(
        f"x, s, o = [tf.constant(np.array(a, np.float32)) for a in "
        f"{[x.tolist(), s.tolist(), o.tolist()]}]\n{body}\nresult = tf.Session().run(out)")
    scope = {"tf": tf, "x": tf.constant(x), "s": tf.constant(s), "o": tf.constant(o)}
    exec(body, scope)  # noqa: S102 - the same program as the oracle's
    ours = tf.Session().run(scope["out"])
    for got, want in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


MY_OPS = [
    "FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", "FusedBatchNormGrad",
    "FusedBatchNormGradV2", "FusedBatchNormGradV3",
]


@pytest.mark.parametrize("op_type", MY_OPS)
def test_every_op_has_shape_fn_kernel_and_gradient(op_type):
    assert op_registry.get(op_type).shape_fn is not None
    assert kernel_registry.has_kernel(op_type, "CPU")
    assert op_registry.get_gradient(op_type) is not None


@pytest.mark.parametrize("training", [True, False])
def test_channel_last_chunked_path_matches_general_path(training):
    """NHWC float32 data large enough to be cut into row blocks over the intra-op threads
    (the chunked channel-last path) gives the values and gradients of the general path
    (NCHW, the same data transposed)."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((8, 24, 24, 64)) * 3 + 1).astype(np.float32)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    s, o = rng.uniform(0.5, 2, 64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    m, v = rng.standard_normal(64).astype(np.float32), rng.uniform(0.5, 2, 64).astype(np.float32)
    stats = {} if training else {"mean": m, "variance": v}
    results = []
    for fmt, xx, dd in (("NHWC", x, dy), ("NCHW", x.transpose(0, 3, 1, 2),
                                          dy.transpose(0, 3, 1, 2))):
        xt = tf.constant(xx)
        st, ot = tf.constant(s), tf.constant(o)
        y, bm, bv = tf.nn.fused_batch_norm(xt, st, ot, epsilon=EPS, data_format=fmt,
                                           is_training=training, **stats)
        grads = tf.gradients(y, [xt, st, ot], grad_ys=tf.constant(dd))
        with tf.Session() as sess:
            out = sess.run([y, bm, bv] + grads)
        if fmt == "NCHW":
            out[0], out[3] = out[0].transpose(0, 2, 3, 1), out[3].transpose(0, 2, 3, 1)
        results.append(out)
    for got, want in zip(*results, strict=True):
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-3)
