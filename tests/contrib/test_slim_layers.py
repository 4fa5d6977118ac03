"""TF-Slim's layers beyond conv2d/fully_connected (separable, in-plane, N-d and transposed
convolutions, 3-D pools, bias_add, softmax, unit/instance/group norm) and `slim.utils`'
end-point aliases: TF1 contrib's variable names, end_point keys and shapes; values against
TensorFlow's plain ops (the oracle) or NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

slim = tf.contrib.slim
layers = tf.contrib.layers


def _const(a):
    return tf.constant_initializer(np.asarray(a, np.float32))


def _run(fetches, feed=None):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(fetches, feed)


# ---- names, aliases, shapes (as tf_slim 1.1 under TF 2.21 builds them) --------------------

EXPECTED_VARIABLES = [
    ("sep/depthwise_weights", [3, 3, 4, 2]), ("sep/biases", [8]),
    ("SeparableConv2d/depthwise_weights", [3, 3, 4, 1]),
    ("SeparableConv2d/pointwise_weights", [1, 1, 4, 5]), ("SeparableConv2d/biases", [5]),
    ("ConvInPlane/weights", [3, 3, 1, 1]), ("ConvInPlane/biases", [4]),
    ("BiasAdd/biases", [4]), ("InstanceNorm/beta", [4]), ("InstanceNorm/gamma", [4]),
    ("GroupNorm/beta", [4]), ("GroupNorm/gamma", [4]),
    ("Conv/weights", [2, 3, 3, 3, 4]), ("Conv/biases", [4]),
    ("Conv2d_transpose/weights", [3, 3, 3, 4]), ("Conv2d_transpose/biases", [3]),
    ("net/fully_connected/weights", [196, 3]), ("net/fully_connected/biases", [3]),
    ("net/LayerNorm/beta", [3]), ("net/LayerNorm/gamma", [3]),
]
EXPECTED_END_POINTS = [
    ("sep", [None, 7, 7, 8]), ("SeparableConv2d", [None, 4, 4, 5]),
    ("ConvInPlane", [None, 7, 7, 4]), ("BiasAdd", [None, 7, 7, 4]),
    ("InstanceNorm", [None, 7, 7, 4]), ("GroupNorm", [None, 7, 7, 4]),
    ("Conv", [2, 5, 3, 4, 4]), ("p3", [2, 3, 1, 2, 4]), ("AvgPool3D", [2, 5, 3, 4, 4]),
    ("Conv2d_transpose", [None, 14, 14, 3]), ("avg_pool", [None, 3, 3, 4]),
    ("Dropout", [None, 7, 7, 4]), ("Flatten", [None, 196]), ("MaxPool2D", [None, 3, 3, 4]),
    ("net/fully_connected", [None, 3]), ("net/LayerNorm", [None, 3]),
]


def test_variable_names_and_end_points():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 7, 7, 4])
        ep = "end_points"
        slim.separable_conv2d(x, None, 3, depth_multiplier=2, rate=2, outputs_collections=ep,
                              scope="sep")
        slim.separable_conv2d(x, 5, [3, 3], stride=2, outputs_collections=ep)
        slim.conv2d_in_plane(x, 3, outputs_collections=ep)
        slim.bias_add(x, outputs_collections=ep)
        layers.instance_norm(x, outputs_collections=ep)
        layers.group_norm(x, groups=2, outputs_collections=ep)
        g = slim.conv3d(tf.placeholder(tf.float32, [2, 5, 6, 7, 3]), 4, [2, 3, 3],
                        stride=[1, 2, 2], outputs_collections=ep)
        slim.max_pool3d(g, [1, 2, 2], outputs_collections=ep, scope="p3")
        slim.avg_pool3d(g, 2, stride=1, padding="SAME", outputs_collections=ep)
        slim.conv2d_transpose(x, 3, 3, stride=2, outputs_collections=ep)
        soft = slim.softmax(tf.placeholder(tf.float32, [2, 3, 5]))
        unit = slim.unit_norm(x, 2)
        layers.pool(x, [2, 2], "AVG", stride=2, outputs_collections=ep)
        slim.dropout(x, 0.5, is_training=False, outputs_collections=ep)
        flat = slim.flatten(x, outputs_collections=ep)
        slim.max_pool2d(x, 2, outputs_collections=ep)
        with tf.variable_scope("net"):
            net = slim.fully_connected(flat, 3, outputs_collections=ep)
            slim.layer_norm(net, outputs_collections=ep)
        variables = [(v.op.name, v.shape.as_list()) for v in tf.global_variables()]
        end_points = [(k, v.shape.as_list())
                      for k, v in slim.utils.convert_collection_to_dict(ep).items()]
        assert (soft.op.name, soft.shape.as_list()) == ("softmax/Reshape_1", [2, 3, 5])
        assert unit.op.name == "UnitNorm/div"
        assert len(tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)) == len(variables)
        assert len(tf.trainable_variables()) == len(variables)
    assert variables == EXPECTED_VARIABLES
    assert end_points == EXPECTED_END_POINTS


# ---- values -------------------------------------------------------------------------------

_R = np.random.RandomState(0)
X = _R.normal(size=(2, 7, 7, 4)).astype(np.float32)
DW = _R.normal(size=(3, 3, 4, 2)).astype(np.float32)
PW = _R.normal(size=(1, 1, 8, 5)).astype(np.float32)
B5 = _R.normal(size=5).astype(np.float32)
PLANE = _R.normal(size=(3, 3, 1, 1)).astype(np.float32)
X3 = _R.normal(size=(2, 5, 6, 7, 3)).astype(np.float32)
W3 = _R.normal(size=(2, 3, 3, 3, 4)).astype(np.float32)
WT = _R.normal(size=(3, 3, 3, 4)).astype(np.float32)
NCHW_BIAS = _R.normal(size=7).astype(np.float32)

_ORACLE = f"""
x = tf.constant(np.array({X.tolist()}, np.float32))
dw = np.array({DW.tolist()}, np.float32)
pw = np.array({PW.tolist()}, np.float32)
b5 = np.array({B5.tolist()}, np.float32)
plane = np.array({PLANE.tolist()}, np.float32)
x3 = tf.constant(np.array({X3.tolist()}, np.float32))
w3 = np.array({W3.tolist()}, np.float32)
wt = np.array({WT.tolist()}, np.float32)
nb = np.array({NCHW_BIAS.tolist()}, np.float32)
c3 = tf.nn.conv3d(x3, w3, [1, 1, 2, 2, 1], "SAME")
ph = tf.placeholder(tf.float32, [None, None, None, 4])
out = {{
  "depthwise": tf.nn.relu(tf.nn.depthwise_conv2d(x, dw, [1, 1, 1, 1], "SAME", rate=[2, 2])),
  "separable": tf.nn.separable_conv2d(x, dw, pw, [1, 2, 2, 1], "VALID") + b5,
  "in_plane": tf.nn.depthwise_conv2d(x, np.tile(plane, [1, 1, 4, 1]), [1, 2, 2, 1],
                                     "SAME"),
  "conv3d": tf.nn.relu(c3),
  "max3d": tf.nn.max_pool3d(c3, [1, 1, 2, 2, 1], [1, 2, 2, 2, 1], "VALID"),
  "avg3d": tf.nn.avg_pool3d(c3, [1, 2, 2, 2, 1], [1, 1, 1, 1, 1], "SAME"),
  "bias_nchw": tf.nn.bias_add(tf.transpose(x, [0, 3, 1, 2]), tf.constant(nb[:4]),
                              data_format="NCHW"),
  "transpose": tf.nn.conv2d_transpose(ph, wt, tf.stack([tf.shape(ph)[0], 2 * tf.shape(ph)[1] + 1,
                                      2 * tf.shape(ph)[2] + 1, 3]), [1, 2, 2, 1], "VALID"),
}}
with tf.Session() as s:
    result = s.run(out, {{ph: np.array({X.tolist()}, np.float32)[:, :, :5]}})
"""


def _ours():
    x = tf.constant(X)
    c3 = slim.conv3d(tf.constant(X3), 4, [2, 3, 3], stride=[1, 2, 2],
                     weights_initializer=_const(W3), activation_fn=None)
    ph = tf.placeholder(tf.float32, [None, None, None, 4])
    transpose = slim.conv2d_transpose(ph, 3, 3, stride=2, padding="VALID",
                                      weights_initializer=_const(WT), activation_fn=None)
    # VALID of stride 2, kernel 3: out = 2 * in + 1 in both spatial dimensions.
    out = {
        "depthwise": slim.separable_conv2d(x, None, 3, depth_multiplier=2, rate=2,
                                           weights_initializer=_const(DW)),
        "separable": slim.separable_conv2d(x, 5, 3, depth_multiplier=2, stride=2,
                                           padding="VALID", weights_initializer=_const(DW),
                                           pointwise_initializer=_const(PW),
                                           biases_initializer=_const(B5),
                                           activation_fn=None),
        "in_plane": slim.conv2d_in_plane(x, 3, stride=2, weights_initializer=_const(PLANE),
                                         activation_fn=None),
        "conv3d": tf.nn.relu(c3),
        "max3d": slim.max_pool3d(c3, [1, 2, 2]),
        "avg3d": slim.avg_pool3d(c3, 2, stride=1, padding="SAME"),
        "bias_nchw": slim.bias_add(tf.transpose(x, [0, 3, 1, 2]), data_format="NCHW",
                                   initializer=_const(NCHW_BIAS[:4])),
        "transpose": transpose,
    }
    return out, ph


@pytest.mark.oracle
def test_convolutions_and_pools_match_tensorflow():
    theirs = run_tf(_ORACLE)
    with tf.Graph().as_default():
        out, ph = _ours()
        static_transpose = out["transpose"].shape.as_list()
        ours = _run(out, {ph: X[:, :, :5]})
    assert static_transpose == [None, None, None, 3]
    assert ours["transpose"].shape == (2, 15, 11, 3)
    for key in theirs:
        np.testing.assert_allclose(ours[key], np.asarray(theirs[key]), rtol=1e-4, atol=1e-4,
                                   err_msg=key)


def test_normalizations_against_numpy():
    gamma = np.linspace(0.5, 2.0, 4).astype(np.float32)
    beta = np.linspace(-1.0, 1.0, 4).astype(np.float32)
    inits = {"gamma": _const(gamma), "beta": _const(beta)}
    with tf.Graph().as_default():
        x = tf.constant(X)
        got = _run({
            "instance": layers.instance_norm(x, param_initializers=inits),
            "instance_nchw": layers.instance_norm(tf.transpose(x, [0, 3, 1, 2]),
                                                  data_format="NCHW",
                                                  param_initializers=inits),
            "group": layers.group_norm(x, groups=2, param_initializers=inits),
            "unit": slim.unit_norm(x, 3),
            "softmax": slim.softmax(x),
        })
    mean, var = X.mean((1, 2), keepdims=True), X.var((1, 2), keepdims=True)
    instance = (X - mean) / np.sqrt(var + 1e-6) * gamma + beta
    g = X.reshape(2, 7, 7, 2, 2)
    gm, gv = g.mean((1, 2, 4), keepdims=True), g.var((1, 2, 4), keepdims=True)
    group = ((g - gm) / np.sqrt(gv + 1e-6)).reshape(X.shape) * gamma + beta
    e = np.exp(X - X.max(-1, keepdims=True))
    np.testing.assert_allclose(got["instance"], instance, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got["instance_nchw"], instance.transpose(0, 3, 1, 2),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got["group"], group, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got["unit"], X / np.sqrt(1e-7 + (X * X).sum(3, keepdims=True)),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["softmax"], e / e.sum(-1, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("call, error", [
    (lambda x: layers.group_norm(x, groups=3), "not commensurate"),
    (lambda x: layers.group_norm(x, groups=8), "Invalid groups 8 for 4 channels"),
    (lambda x: slim.separable_conv2d(x, 2, 3, data_format="NWC"), "NCHW or NHWC"),
    (lambda x: slim.bias_add(tf.ones([2, 3]), data_format="NCHW"), "only supports 4D"),
    (lambda x: slim.conv3d(x, 2, 3), "rank 5, got 4"),
    (lambda x: slim.unit_norm(x, 4), "dim must be positive"),
    (lambda x: slim.softmax(tf.ones([3])), "rank of shape must be at least 2"),
    (lambda x: slim.conv2d(x, 3, 3, stride=2, rate=2), "not supported in conjunction"),
    (lambda x: slim.conv3d(tf.ones([1, 5, 5, 5, 2]), 3, 3, stride=[1, 2, 1], rate=2),
     "not supported in conjunction"),
])
def test_argument_errors(call, error):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=error):
            call(tf.ones([2, 5, 5, 4]))


# ---- slim.utils ---------------------------------------------------------------------------

def test_utils_aliases_and_collection_dict():
    utils = slim.utils
    with tf.Graph().as_default():
        a, b = tf.ones([2], name="a"), tf.split(tf.ones([4]), 2, name="b")[1]
        utils.collect_named_outputs("c", "scope/x/", a)
        utils.collect_named_outputs("c", "y", a)  # two aliases: two keys, one tensor
        tf.add_to_collection("c", b)  # no alias: keyed by its tensor name (not output 0)
        utils.collect_named_outputs(None, "ignored", b)
        assert a.aliases == ["scope/x", "y"] and not hasattr(b, "aliases")
        assert utils.gather_tensors_aliases([a, b]) == ["scope/x", "y", "b:1"]
        got = utils.convert_collection_to_dict("c", clear_collection=True)
        assert list(got) == ["scope/x", "y", "b:1"] and got["y"] is a
        assert tf.get_collection("c") == []
        assert utils.constant_value(tf.constant(3)) == 3
        assert utils.constant_value(tf.placeholder(tf.bool)) is None
        assert utils.smart_cond(tf.constant(True), lambda: 1, lambda: 2) == 1
        assert utils.last_dimension(tf.TensorShape([None, 5])) == 5
        with pytest.raises(ValueError, match="must be known"):
            utils.last_dimension(tf.TensorShape([2, None]))
    assert utils.two_element_tuple(3) == (3, 3)
    assert utils.two_element_tuple([1, 2]) == (1, 2)
    assert utils.n_positive_integers(3, 2) == (2, 2, 2)
    assert utils.n_positive_integers(2, tf.TensorShape([4, 5])) == (4, 5)
    assert utils.get_variable_collections({"weights": ["w"]}, "biases") is None
    for bad in ([1, 2, 3], "x"):
        with pytest.raises(ValueError):
            utils.two_element_tuple(bad)
    for n, bad in ((2, [1, 0]), (3, [1, 2]), (0, 1)):
        with pytest.raises(ValueError):
            utils.n_positive_integers(n, bad)
    with pytest.raises(TypeError, match="fn1 must be callable"):
        utils.static_cond(True, 1, lambda: 2)


def test_arg_scope_func_key_and_contrib_util():
    with slim.arg_scope([slim.separable_conv2d, slim.batch_norm], padding="VALID") as sc:
        assert "padding" in sc[slim.arg_scope_func_key(slim.separable_conv2d)]
        assert slim.arg_scope_func_key(slim.conv2d) not in sc
    with tf.Graph().as_default():
        assert list(tf.contrib.util.constant_value(tf.shape(tf.ones([2, 3])))) == [2, 3]
    assert slim.initializers.xavier_initializer is layers.xavier_initializer


class _Case(tf.test.TestCase):
    def runTest(self):  # noqa: N802
        pass


def test_testcase_device_and_same_elements():
    case = _Case()
    case.assertDeviceEqual("/cpu:0", "/device:CPU:0")
    case.assertSameElements([1, 2, 2], (2, 1))
    with pytest.raises(AssertionError):
        case.assertDeviceEqual("/gpu:0", "/cpu:0")
    with pytest.raises(AssertionError):
        case.assertSameElements([1, 2], [1])


_ZERO_DEBIAS = """
from tensorflow.python.training import moving_averages
with tf.variable_scope("net"):
    v = tf.get_variable("v", [2], initializer=tf.zeros_initializer(), trainable=False)
    with tf.variable_scope("inner"):
        w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
    first = moving_averages.assign_moving_average(v, tf.constant([1.0, 2.0]), 0.5)
    second = moving_averages.assign_moving_average(v, tf.constant([3.0, 5.0]), 0.5)
top = moving_averages.assign_moving_average(w, tf.constant(4.0), 0.9)
with tf.Session() as s:
    s.run(tf.global_variables_initializer())
    values = [s.run([first, top]) for _ in range(2)] + [s.run(second)]
result = {"names": [x.op.name for x in tf.global_variables()],
          "shapes": [x.shape.as_list() for x in tf.global_variables()],
          "values": [np.asarray(values[0][0]), float(values[1][1]), np.asarray(values[2])]}
"""


@pytest.mark.oracle
def test_zero_debias_variables_named_as_tensorflow():
    """batch_norm(zero_debias_moving_mean=True) under scope s names the debiasing
    variables s/s/moving_mean/biased: TF opens a variable scope named after the average's
    full name inside the current one."""
    theirs = run_tf(_ZERO_DEBIAS)
    ns = {"tf": tf, "np": np}
    with tf.Graph().as_default():
        exec(_ZERO_DEBIAS.replace(  # noqa: S102 - the same program under tensorflux
            "from tensorflow.python.training import moving_averages",
            "from tensorflux.train import moving_averages"), ns)
        with tf.variable_scope("g"):
            slim.batch_norm(tf.ones([2, 3]), zero_debias_moving_mean=True, scope="bn")
        bn = [v.op.name for v in tf.global_variables() if v.op.name.startswith("g/")]
    ours = ns["result"]
    assert ours["names"] == theirs["names"]
    assert ours["shapes"] == theirs["shapes"]
    for got, want in zip(ours["values"], theirs["values"], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert "g/bn/g/bn/moving_mean/biased" in bn and "g/bn/g/bn/moving_mean/local_step" in bn


def test_slim_namespace_aliases():
    assert slim.layers.conv2d is slim.conv2d and slim.convolution2d_transpose is \
        slim.conv2d_transpose
    assert slim.regularizers.l2_regularizer is slim.l2_regularizer
    with tf.Graph().as_default():
        local = slim.local_variable([1.0, 2.0], name="counts")
        step = tf.contrib.framework.get_or_create_global_step()
        assert tf.local_variables() == [local] and tf.global_variables() == [step]
        assert local.op.name == "counts" and not tf.trainable_variables()


@pytest.mark.parametrize("shape, kwargs, unbiased", [
    ((6, 3), {}, True),  # rank 2 takes TF's fused kernel: Bessel-corrected variance
    ((6, 3), {"fused": False}, False),
    ((2, 3, 1, 3), {}, True),
    ((2, 3, 1, 1, 3), {}, False),  # rank 5: never fused
])
def test_batch_norm_moving_variance_update(shape, kwargs, unbiased):
    x = np.random.RandomState(0).normal(size=shape).astype(np.float32)
    with tf.Graph().as_default():
        y = slim.batch_norm(tf.constant(x), decay=0.5, **kwargs)
        updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        moving = tf.get_collection(tf.GraphKeys.MOVING_AVERAGE_VARIABLES)[1]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run([y] + updates)
            got = s.run(moving)
    flat = x.reshape(-1, 3)
    np.testing.assert_allclose(got, 0.5 + 0.5 * flat.var(0, ddof=1 if unbiased else 0),
                               rtol=1e-5)


def test_conv2d_transpose_nchw_equals_nhwc():
    x = np.random.RandomState(0).normal(size=(2, 5, 4, 3)).astype(np.float32)
    with tf.Graph().as_default():
        nhwc = slim.conv2d_transpose(tf.constant(x), 2, 3, stride=2, padding="VALID",
                                     activation_fn=None, scope="t",
                                     biases_initializer=tf.constant_initializer(0.3))
        nchw = slim.conv2d_transpose(tf.constant(x.transpose(0, 3, 1, 2)), 2, 3, stride=2,
                                     padding="VALID", activation_fn=None, scope="t",
                                     reuse=True, data_format="NCHW",
                                     biases_initializer=tf.constant_initializer(0.3))
        assert nhwc.shape.as_list() == [2, 11, 9, 2] and nchw.shape.as_list() == [2, 2, 11, 9]
        a, b = _run([nhwc, nchw])
    np.testing.assert_allclose(b.transpose(0, 2, 3, 1), a, rtol=1e-6)
