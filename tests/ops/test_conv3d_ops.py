"""Conv3D, its backprops, MaxPool3D and AvgPool3D (tensorflux/ops/conv3d_ops.py) against
plain NumPy references (tests/ops/nd_reference.py), with finite-difference gradients."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import op_registry
from tensorflux.kernels import registry as kernel_registry
from tensorflux.kernels.cpu import _windows_nd
from tests import oracle
from tests.op_test_util import OpCase, check_gradient, check_value
from tests.ops import nd_reference as ref

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _conv3d_case(name, x, w, strides=(1, 1, 1), padding="SAME", dilations=(1, 1, 1)):
    return OpCase(name, lambda a, b: tf.nn.conv3d(a, b, [1, *strides, 1], padding,
                                                  dilations=[1, *dilations, 1]),
                  lambda a, b: ref.conv(a, b, strides, padding, dilations), shapes=[x, w])


def _ncdhw(x):
    return np.moveaxis(x, -1, 1)


CASES = [
    _conv3d_case("conv3d_same", (2, 3, 4, 3, 2), (2, 3, 2, 2, 3)),
    _conv3d_case("conv3d_valid_strided", (1, 5, 4, 5, 2), (2, 2, 3, 2, 2), (2, 1, 2), "VALID"),
    _conv3d_case("conv3d_dilated", (1, 5, 5, 4, 1), (2, 2, 2, 1, 2), dilations=(2, 2, 1)),
    OpCase("conv3d_ncdhw",
           lambda a, b: tf.nn.conv3d(a, b, [1, 1, 1, 1, 1], "SAME", data_format="NCDHW"),
           lambda a, b: _ncdhw(ref.conv(np.moveaxis(a, 1, -1), b, (1, 1, 1), "SAME")),
           shapes=[(1, 2, 3, 3, 3), (2, 2, 2, 2, 2)]),
    OpCase("conv3d_transpose",
           lambda v, w: tf.nn.conv3d_transpose(v, w, [1, 4, 3, 4, 2], [1, 2, 1, 2, 1]),
           lambda v, w: ref.adjoint(lambda x: ref.conv(x, w, (2, 1, 2), "SAME"),
                                    (1, 4, 3, 4, 2), v),
           shapes=[(1, 2, 3, 2, 3), (3, 2, 2, 2, 3)]),
    OpCase("conv3d_backprop_filter",
           lambda x, dy: tf.nn.conv3d_backprop_filter_v2(x, [2, 2, 2, 2, 3], dy,
                                                         [1, 1, 1, 1, 1], "VALID"),
           lambda x, dy: ref.adjoint(lambda w: ref.conv(x, w, (1, 1, 1), "VALID"),
                                     (2, 2, 2, 2, 3), dy),
           shapes=[(1, 3, 3, 3, 2), (1, 2, 2, 2, 3)]),
    OpCase("max_pool3d_same", lambda x: tf.nn.max_pool3d(x, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1],
                                                         "SAME"),
           lambda x: ref.pool(x, (2, 2, 2), (2, 2, 2), "SAME", "max"),
           shapes=[(2, 3, 4, 5, 2)]),
    OpCase("max_pool3d_valid", lambda x: tf.nn.max_pool3d(x, 3, 1, "VALID"),
           lambda x: ref.pool(x, (3, 3, 3), (1, 1, 1), "VALID", "max"),
           shapes=[(1, 4, 4, 3, 2)]),
    OpCase("avg_pool3d_same", lambda x: tf.nn.avg_pool3d(x, [1, 2, 3, 2, 1], [1, 2, 2, 1, 1],
                                                         "SAME"),
           lambda x: ref.pool(x, (2, 3, 2), (2, 2, 1), "SAME", "avg"),
           shapes=[(2, 3, 5, 3, 2)]),
    OpCase("avg_pool3d_ncdhw",
           lambda x: tf.nn.avg_pool3d(x, 2, 2, "VALID", data_format="NCDHW"),
           lambda x: _ncdhw(ref.pool(np.moveaxis(x, 1, -1), (2, 2, 2), (2, 2, 2), "VALID",
                                     "avg")),
           shapes=[(1, 2, 4, 4, 5)]),
]


# MaxPool3D takes half, bfloat16 and float32 only (as TF's).
F32_ONLY = {"max_pool3d_same", "max_pool3d_valid"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_value(case, dtype):
    if case.name in F32_ONLY and dtype == np.float64:
        pytest.skip("float32 only")
    check_value(case, dtype)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_gradient(case):
    check_gradient(case, np.float32 if case.name in F32_ONLY else np.float64)


def test_max_pool3d_gradient_goes_to_every_tied_maximum():
    # As TF's CPU kernel: all 27 ones of a 3x3x3 input tie in their windows.
    x = tf.constant(np.ones((1, 3, 3, 3, 1), np.float32))
    g = tf.gradients(tf.nn.max_pool3d(x, 2, 2, "SAME"), x)[0]
    np.testing.assert_array_equal(tf.Session().run(g), np.ones((1, 3, 3, 3, 1)))


def test_static_shapes_and_bad_input():
    x = tf.placeholder(tf.float32, [None, 8, 7, 6, 3])
    assert tf.nn.conv3d(x, tf.zeros([3, 3, 3, 3, 4]), [1, 2, 2, 2, 1], "SAME").shape.as_list() \
        == [None, 4, 4, 3, 4]
    assert tf.nn.max_pool3d(x, 2, 2, "VALID").shape.as_list() == [None, 4, 3, 3, 3]
    with pytest.raises(ValueError, match="Depth of input"):
        tf.nn.conv3d(x, tf.zeros([3, 3, 3, 2, 4]), [1, 1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="rank 5"):
        tf.nn.conv3d(tf.zeros([2, 3, 3, 3]), tf.zeros([1, 1, 1, 3, 1]), [1, 1, 1, 1, 1],
                     "SAME")
    with pytest.raises(ValueError):
        tf.nn.conv3d(x, tf.zeros([3, 3, 3, 3, 4]), [1, 2], "SAME")
    with pytest.raises(ValueError, match="must match"):
        tf.nn.conv3d_transpose(tf.zeros([1, 2, 2, 2, 3]), tf.zeros([2, 2, 2, 4, 5]),
                               [1, 4, 4, 4, 4], [1, 2, 2, 2, 1])


def test_max_pool3d_second_derivative():
    # d/dv of <MaxPool3DGrad(x, y, v), u> is MaxPool3DGradGrad(x, y, u): check the adjoint
    # identity <MaxPool3DGrad(v), u> == <v, MaxPool3DGradGrad(u)> on random data.
    rng = np.random.RandomState(0)
    xv = rng.randn(1, 3, 4, 3, 2).astype(np.float32)
    x = tf.constant(xv)
    y = tf.nn.max_pool3d(x, 2, [1, 1, 2, 1, 1], "SAME")
    v = tf.constant(rng.randn(*y.shape.as_list()).astype(np.float32))
    u = tf.constant(rng.randn(*xv.shape).astype(np.float32))
    gx = tf.gradients(y, x, grad_ys=v)[0]
    gv = tf.gradients(tf.reduce_sum(gx * u), v)[0]
    assert gv.op.type == "MaxPool3DGradGrad"
    ggx = tf.gradients(tf.reduce_sum(gv * v), u)[0]  # back through MaxPool3DGradGrad
    a, b, c, d = tf.Session().run([tf.reduce_sum(gx * u), tf.reduce_sum(gv * v), ggx, gx])
    np.testing.assert_allclose(a, b, rtol=1e-5)
    np.testing.assert_allclose(c, d, rtol=1e-5)


@pytest.mark.oracle
def test_matches_tensorflow():
    rng = np.random.RandomState(1)
    x = rng.randn(2, 4, 5, 3, 2).astype(np.float32)
    w = rng.randn(2, 3, 2, 2, 3).astype(np.float32)
    code = f"""
x = tf.constant(np.array({x.tolist()}, np.float32))
w = tf.constant(np.array({w.tolist()}, np.float32))
y = tf.nn.conv3d(x, w, [1, 2, 1, 2, 1], "SAME")
m = tf.nn.max_pool3d(x, [1, 2, 2, 2, 1], [1, 1, 2, 1, 1], "SAME")
a = tf.nn.avg_pool3d(x, [1, 3, 2, 2, 1], [1, 2, 2, 2, 1], "SAME")
loss = tf.reduce_sum(y * y) + tf.reduce_sum(m * a[:, :1, :1, :1, :])
gx = tf.gradients(loss, [x, w])
result = tf.Session().run([y, m, a] + gx + tf.gradients(tf.reduce_sum(gx[0] ** 2), [x]))
"""
    theirs = oracle.run_tf(code)
    xt, wt = tf.constant(x), tf.constant(w)
    y = tf.nn.conv3d(xt, wt, [1, 2, 1, 2, 1], "SAME")
    m = tf.nn.max_pool3d(xt, [1, 2, 2, 2, 1], [1, 1, 2, 1, 1], "SAME")
    a = tf.nn.avg_pool3d(xt, [1, 3, 2, 2, 1], [1, 2, 2, 2, 1], "SAME")
    loss = tf.reduce_sum(y * y) + tf.reduce_sum(m * a[:, :1, :1, :1, :])
    gx = tf.gradients(loss, [xt, wt])
    ours = tf.Session().run([y, m, a] + gx + tf.gradients(tf.reduce_sum(gx[0] ** 2), [xt]))
    for got, want in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.oracle
def test_backprop_ops_and_their_gradients_match_tensorflow():
    # Conv3DBackpropInputV2 (conv3d_transpose, int64 sizes) and Conv3DBackpropFilterV2,
    # their values and their gradients w.r.t. every input. TF 1.x and 2.21 export no
    # tf.nn.conv3d_backprop_input_v2 (tf.compat.v1.nn has conv3d_backprop_filter[_v2] only):
    # the op is reached through conv3d_transpose and gradients.
    rng = np.random.RandomState(2)
    v = rng.randn(2, 2, 3, 1, 3).astype(np.float32)
    w = rng.randn(2, 2, 3, 2, 3).astype(np.float32)
    x = rng.randn(2, 3, 4, 3, 2).astype(np.float32)
    program = f"""
v = tf.constant(np.array({v.tolist()}, np.float32))
w = tf.constant(np.array({w.tolist()}, np.float32))
x = tf.constant(np.array({x.tolist()}, np.float32))
t = tf.nn.conv3d_transpose(v, w, tf.constant([2, 3, 4, 3, 2], tf.int64), [1, 1, 1, 1, 1],
                           "VALID")
f = tf.nn.conv3d_backprop_filter_v2(x, [2, 2, 3, 2, 3], v, [1, 1, 1, 1, 1], "VALID")
loss = tf.reduce_sum(t * t * x) + tf.reduce_sum(f * f * w)
result = tf.Session().run([t, f] + tf.gradients(loss, [v, w, x]))
"""
    ours, theirs = oracle.run_both(program, tf)
    for got, want in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


MY_OPS = [
    "Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2", "MaxPool3D", "MaxPool3DGrad",
    "MaxPool3DGradGrad", "AvgPool3D", "AvgPool3DGrad",
]


@pytest.mark.parametrize("op_type", MY_OPS)
def test_every_op_has_shape_fn_kernel_and_gradient(op_type):
    assert op_registry.get(op_type).shape_fn is not None
    assert kernel_registry.has_kernel(op_type, "CPU")
    assert op_registry.get_gradient(op_type) is not None


def test_batch_chunks_give_the_same_results(monkeypatch):
    """The kernels bound their temporaries by cutting the batch into chunks: one item per
    chunk gives the values of one chunk for all."""
    rng = np.random.RandomState(4)
    x = tf.constant(rng.randn(3, 3, 4, 3, 2).astype(np.float32))
    w = tf.constant(rng.randn(2, 2, 2, 2, 3).astype(np.float32))
    x4 = tf.constant(rng.randn(3, 5, 4, 2).astype(np.float32))
    d = tf.constant(rng.randn(2, 3, 2, 2).astype(np.float32))
    y = tf.nn.conv3d(x, w, [1, 1, 2, 1, 1], "SAME")
    m = tf.nn.max_pool3d(x, 2, 1, "SAME")
    z = tf.nn.depthwise_conv2d_native(x4, d, [1, 2, 1, 1], "SAME")
    loss = tf.reduce_sum(y * y) + tf.reduce_sum(m * m) + tf.reduce_sum(z * z)
    fetches = [y, m, z] + tf.gradients(loss, [x, w, x4, d])
    whole = tf.Session().run(fetches)
    monkeypatch.setattr(_windows_nd, "_CHUNK_BYTES", 1)
    chunked = tf.Session().run(fetches)
    for a, b in zip(whole, chunked, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("build, feeds", [
    (lambda p: tf.nn.conv3d(p[0], p[1], [1] * 5, "SAME"),
     [np.zeros((1, 2, 2, 2, 3)), np.zeros((1, 1, 1, 2, 1))]),
    (lambda p: tf.nn.conv3d(p[0], p[1], [1] * 5, "VALID"),
     [np.zeros((1, 2, 2, 2)), np.zeros((1, 1, 1, 2, 1))]),
    (lambda p: tf.nn.conv3d(p[0], p[1], [1] * 5, "VALID"),
     [np.zeros((1, 2, 2, 2, 1)), np.zeros((4, 1, 1, 1, 1))]),
    (lambda p: tf.nn.max_pool3d(p[0], 2, 2, "VALID"), [np.zeros((1, 4, 4, 4))]),
    (lambda p: tf.nn.avg_pool3d(p[0], 2, 2, "SAME"), [np.zeros((2, 3))]),
    (lambda p: tf.nn.conv3d_transpose(p[0], p[1], [1, 4, 4, 4, 2], [1, 2, 2, 2, 1]),
     [np.zeros((1, 3, 2, 2, 1)), np.zeros((2, 2, 2, 2, 1))]),
    (lambda p: tf.nn.depthwise_conv2d_native(p[0], p[1], [1] * 4, "SAME"),
     [np.zeros((1, 3, 3, 2)), np.zeros((2, 2, 3, 1))]),
    (lambda p: tf.nn.depthwise_conv2d_native(p[0], p[1], [1] * 4, "SAME"),
     [np.zeros((1, 3, 3, 2)), np.zeros((2, 2, 2))]),
    (lambda p: tf.nn.depthwise_conv2d_native_backprop_input([1, 4, 4, 2], p[0], p[1],
                                                            [1] * 4, "SAME"),
     [np.zeros((2, 2, 2, 1)), np.zeros((1, 3, 4, 2))]),
    (lambda p: tf.nn.fused_batch_norm(p[0], p[1], p[2])[0],
     [np.zeros((2, 2, 2, 3)), np.ones(2), np.zeros(3)]),
    (lambda p: tf.nn.fused_batch_norm(p[0], p[1], p[2])[0],
     [np.zeros((2, 3)), np.ones(3), np.zeros(3)]),
])
def test_bad_shapes_at_run_time_are_invalid_argument(build, feeds):
    placeholders = [tf.placeholder(tf.float32) for _ in feeds]
    y = build(placeholders)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.Session().run(y, dict(zip(placeholders, feeds, strict=True)))


@pytest.mark.parametrize("build, message", [
    (lambda x5, x4: tf.nn.max_pool3d(x5, [1, 2**31, 1, 1, 1], [1] * 5, "SAME"),
     "Attr ksize has value 2147483648 out of range for an int32"),
    (lambda x5, x4: tf.nn.conv3d(x5, tf.ones([2, 2, 2, 1, 1]), [1, 2**31, 1, 1, 1], "SAME"),
     "Attr strides has value 2147483648 out of range for an int32"),
    (lambda x5, x4: tf.nn.conv3d(x5, tf.ones([2, 2, 2, 1, 1]), [1] * 5, "SAME",
                                 dilations=[1, 1, 2**31, 1, 1]),
     "Attr dilations has value 2147483648 out of range for an int32"),
    (lambda x5, x4: tf.nn.conv2d(x4, tf.ones([2, 2, 1, 1]), [1] * 4, "SAME",
                                 dilations=[1, 0, 1, 1]),
     "Dilation rate must be >= 1, but got 0"),
])
def test_window_attrs_validated_at_construction_as_tf(build, message):
    # issue 21: TF's shape functions reject these when the graph is built (a GraphDef's
    # attrs included), before any kernel could loop over such a window.
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=message):
            build(tf.ones([1, 4, 4, 4, 1]), tf.ones([1, 4, 4, 1]))


@pytest.mark.parametrize("pool", ["max", "avg"])
def test_3d_pool_windows_larger_than_the_input_are_cut_to_it(pool):
    # issue 21: a window of 2^31 - 1 used to pad the input to 192 GiB; TF answers at once.
    x = np.arange(64, dtype=np.float32).reshape(1, 4, 4, 4, 1)
    fn = tf.nn.max_pool3d if pool == "max" else tf.nn.avg_pool3d
    with tf.Graph().as_default():
        y = fn(tf.constant(x), [1, 2**31 - 1, 3, 1, 1], [1, 1, 1, 1, 1], "SAME")
        got = tf.Session().run(y)
    # Over D the window covers all 4 planes; over H 3 rows (SAME: 1 before, 1 after).
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (0, 0), (0, 0)],
                constant_values=-np.inf if pool == "max" else np.nan)
    taps = np.stack([xp[:, :, i:i + 4] for i in range(3)], axis=-1)  # (1, 4, 4, 4, 1, 3)
    if pool == "max":
        want = np.broadcast_to(taps.max(axis=(1, -1), keepdims=True)[..., 0], x.shape)
    else:
        want = np.broadcast_to(np.nanmean(taps, axis=(1, -1), keepdims=True)[..., 0],
                               x.shape)
    np.testing.assert_allclose(got, want, rtol=1e-6)
