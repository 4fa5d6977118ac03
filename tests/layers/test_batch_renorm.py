"""Batch normalization's TF1 options beyond the plain one: Batch Renormalization (`renorm`,
`renorm_clipping`, `renorm_momentum`), ghost batches (`virtual_batch_size`) and
`adjustment` in tf.layers (and Keras's class over it), and tf.contrib.layers.batch_norm's
`renorm`, `adjustment` and `batch_weights`: variables, collections and update ops as TF
names them, training steps against NumPy, inference, gradients with r and d held
constant, and (oracle) one program run here and in TensorFlow."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle

EPS = 1e-3
RNG = np.random.RandomState(7)


def _op_names(tensors):
    """Update ops' names without the variable reads that follow our assigns."""
    return [re.sub(r"/ReadVariableOp(_[0-9]+)?$", "", getattr(t, "op", t).name)
            for t in tensors]


def _variables(prefix="batch_normalization"):
    return {v.op.name[len(prefix) + 1:]: v for v in tf.global_variables()
            if v.op.name.startswith(prefix + "/")}


# ---- NumPy references ----------------------------------------------------------------------

def _clip(r, d, clipping):
    if clipping.get("rmin") is not None:
        r = np.maximum(r, clipping["rmin"])
    if clipping.get("rmax") is not None:
        r = np.minimum(r, clipping["rmax"])
    if clipping.get("dmax") is not None:
        d = np.clip(d, -clipping["dmax"], clipping["dmax"])
    return r, d


def _renorm_step(x, state, momentum, renorm_momentum, clipping, axes=(0,)):
    """One training step of batch renorm: the output and the next state (gamma, beta,
    moving_mean, moving_variance, moving_stddev, renorm_mean, renorm_stddev)."""
    s = dict(state)
    mean, var = x.mean(axis=axes), x.var(axis=axes)
    std = np.sqrt(var + EPS)
    floor = np.maximum(s["renorm_stddev"], np.sqrt(EPS))
    r, d = _clip(std / floor, (mean - s["renorm_mean"]) / floor, clipping)
    y = ((x - mean) / std * r + d) * s.get("gamma", 1.0) + s.get("beta", 0.0)
    s["renorm_mean"] = s["renorm_mean"] - (s["renorm_mean"] - mean) * (1 - renorm_momentum)
    s["renorm_stddev"] = s["renorm_stddev"] - (s["renorm_stddev"] - std) * (
        1 - renorm_momentum)
    s["moving_mean"] = s["moving_mean"] - (s["moving_mean"] - mean) * (1 - momentum)
    s["moving_stddev"] = s["moving_stddev"] - (s["moving_stddev"] - std) * (1 - momentum)
    s["moving_variance"] = np.maximum(s["moving_stddev"] ** 2 - EPS, 0.0)
    return y, s


def _ghost_step(x, mm, mv, vbs, momentum, feature_axis=-1):
    """Ghost batch norm: rows i, i + N/V, ... form one virtual batch (TF's [V, N/V, ...]
    view); the moving statistics move toward the virtual batches' mean statistics."""
    v = x.reshape((vbs, -1) + x.shape[1:])
    feature = feature_axis % x.ndim + 1
    axes = tuple(a for a in range(v.ndim) if a not in (1, feature))
    mean, var = v.mean(axis=axes, keepdims=True), v.var(axis=axes, keepdims=True)
    y = ((v - mean) / np.sqrt(var + EPS)).reshape(x.shape)
    mean_all, var_all = mean.mean(axis=1, keepdims=True), var.mean(axis=1, keepdims=True)
    return y, mm - (mm - mean_all) * (1 - momentum), mv - (mv - var_all) * (1 - momentum)


# ---- tf.layers: variables, collections, update ops ------------------------------------------

def test_renorm_variables_collections_and_update_ops_as_tf():
    """TF 2.21's tf.compat.v1.layers.batch_normalization(renorm=True): seven variables in
    this order, the three renorm ones non-trainable and only in GLOBAL_VARIABLES; the
    UPDATE_OPS are the moving mean's assign and moving_variance's AssignNewValue."""
    with tf.Graph().as_default():
        y = tf.layers.batch_normalization(tf.zeros([4, 3]), training=True, renorm=True)
        assert [(v.name, v.shape.as_list()) for v in tf.global_variables()] == [
            (f"batch_normalization/{n}:0", [3]) for n in (
                "gamma", "beta", "moving_mean", "moving_variance", "moving_stddev",
                "renorm_mean", "renorm_stddev")]
        assert [v.op.name for v in tf.trainable_variables()] == [
            "batch_normalization/gamma", "batch_normalization/beta"]
        assert not tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)
        assert not tf.get_collection(tf.GraphKeys.MOVING_AVERAGE_VARIABLES)
        assert _op_names(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == [
            "batch_normalization/AssignMovingAvg_2", "batch_normalization/AssignNewValue"]
        assert y.shape.as_list() == [4, 3]
    with tf.Graph().as_default():
        tf.layers.batch_normalization(tf.zeros([4, 3]), renorm=True,
                                      training=tf.placeholder(tf.bool, []))
        assert _op_names(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == [
            "batch_normalization/cond_6/Merge", "batch_normalization/cond_7/Merge"]
    with tf.Graph().as_default():
        tf.layers.batch_normalization(tf.zeros([4, 3]), training=False, renorm=True)
        assert len(tf.global_variables()) == 7
        assert not tf.get_collection(tf.GraphKeys.UPDATE_OPS)


@pytest.mark.parametrize("shape,axis,want", [
    ([4, 3], -1, [1, 1, 3]),
    ([4, 2, 2, 3], -1, [1, 1, 1, 1, 3]),
    ([4, 3, 2, 2], 1, [1, 1, 3, 1, 1]),
])
def test_virtual_batch_variables_gain_two_leading_axes(shape, axis, want):
    with tf.Graph().as_default():
        y = tf.layers.batch_normalization(tf.zeros(shape), axis=axis, training=True,
                                          virtual_batch_size=2, fused=True)
        assert [v.shape.as_list() for v in tf.global_variables()] == [want] * 4
        assert _op_names(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == [
            "batch_normalization/AssignMovingAvg", "batch_normalization/AssignMovingAvg_1"]
        assert y.shape.as_list() == shape
        assert not any(op.type.startswith("FusedBatchNorm")
                       for op in tf.get_default_graph().get_operations())


def test_fused_true_with_renorm_falls_back_to_unfused():
    with tf.Graph().as_default():
        tf.layers.batch_normalization(tf.zeros([4, 2, 2, 3]), training=True, renorm=True,
                                      fused=True)
        types = {op.type for op in tf.get_default_graph().get_operations()}
        assert "Rsqrt" in types and not any(t.startswith("FusedBatchNorm") for t in types)


@pytest.mark.parametrize("build,error,message", [
    (lambda: tf.layers.batch_normalization(tf.zeros([4, 3]), training=True,
                                           virtual_batch_size=3),
     ValueError, "does not divide"),
    (lambda: tf.layers.batch_normalization(tf.zeros([4, 3]), virtual_batch_size=0),
     ValueError, "must be a positive integer"),
    (lambda: tf.layers.batch_normalization(tf.zeros([4, 3]), axis=0, virtual_batch_size=2),
     ValueError, "axis cannot include 0"),
    (lambda: tf.layers.batch_normalization(tf.zeros([4, 3]), virtual_batch_size=2,
                                           adjustment=lambda s: (1.0, 0.0)),
     ValueError, "adjustment cannot be specified"),
    (lambda: tf.layers.BatchNormalization(renorm=True, renorm_clipping={"rmx": 1.0}),
     ValueError, "invalid keys for `renorm_clipping`"),
    (lambda: tf.keras.layers.BatchNormalization(fused=True, renorm=True), ValueError,
     "`fused=True` and `renorm=True`"),
    (lambda: tf.keras.layers.BatchNormalization(fused=True, virtual_batch_size=2),
     ValueError, "`virtual_batch_size` is specified"),
])
def test_bad_options(build, error, message):
    with tf.Graph().as_default(), pytest.raises(error, match=message):
        build()


def test_virtual_batch_not_dividing_a_dynamic_batch_fails_at_run():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        y = tf.layers.batch_normalization(x, training=True, virtual_batch_size=3)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(y, {x: np.ones([6, 3], np.float32)}).shape == (6, 3)
            with pytest.raises(tf.errors.InvalidArgumentError):
                sess.run(y, {x: np.ones([4, 3], np.float32)})


# ---- tf.layers: values against NumPy --------------------------------------------------------

def _set(sess, variables, values):
    for name, value in values.items():
        sess.run(variables[name].assign(np.asarray(value, np.float32).reshape(
            variables[name].shape.as_list())))


RENORM_STATE = {
    "gamma": [1.5, 0.5, -1.0, 2.0], "beta": [0.1, -0.3, 0.2, 0.0],
    "moving_mean": [0.2, -0.1, 0.0, 0.4], "moving_variance": [1.0, 2.0, 0.5, 1.5],
    "moving_stddev": [1.0, 1.4, 0.7, 1.2], "renorm_mean": [0.5, 2.0, -1.0, 0.0],
    "renorm_stddev": [0.5, 2.0, 5.0, 1e-4],
}


@pytest.mark.parametrize("clip_as_tensors", [False, True])
def test_renorm_training_steps_match_numpy(clip_as_tensors):
    clipping = {"rmax": 1.5, "rmin": 0.8, "dmax": 0.6}
    batches = [(RNG.randn(8, 4) * 2 + 1).astype(np.float32) for _ in range(3)]
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [8, 4])
        clip = ({k: tf.placeholder_with_default(np.float32(v), []) for k, v in clipping.items()}
                if clip_as_tensors else clipping)
        y = tf.layers.batch_normalization(x, training=True, momentum=0.7, renorm=True,
                                          renorm_momentum=0.6, renorm_clipping=clip)
        variables = _variables()
        updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            _set(sess, variables, RENORM_STATE)
            state = {k: np.asarray(v, np.float64) for k, v in RENORM_STATE.items()}
            for batch in batches:
                got, _ = sess.run([y, updates], {x: batch})
                want, state = _renorm_step(batch.astype(np.float64), state, 0.7, 0.6,
                                           clipping)
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
                now = sess.run(variables)
                for name, value in state.items():
                    np.testing.assert_allclose(now[name], value, rtol=1e-5, atol=1e-6,
                                               err_msg=name)


def test_renorm_inference_and_training_flag():
    """training=False normalizes with moving_mean/moving_variance (no r, d); a false flag
    leaves every statistic as it was; a true one moves them."""
    batch = (RNG.randn(6, 4) * 2).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [6, 4])
        flag = tf.placeholder(tf.bool, [])
        y = tf.layers.batch_normalization(x, training=flag, renorm=True, name="bn",
                                          renorm_clipping={"rmax": 1.2, "dmax": 0.1})
        y_inf = tf.layers.batch_normalization(x, training=False, renorm=True, name="bn",
                                              reuse=True)
        variables = _variables("bn")
        updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            _set(sess, variables, RENORM_STATE)
            s = {k: np.asarray(v) for k, v in RENORM_STATE.items()}
            want = ((batch - s["moving_mean"]) / np.sqrt(s["moving_variance"] + EPS)
                    * s["gamma"] + s["beta"])
            np.testing.assert_allclose(sess.run(y_inf, {x: batch}), want, rtol=1e-5, atol=1e-5)
            got, _ = sess.run([y, updates], {x: batch, flag: False})
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
            for name, value in sess.run(variables).items():
                np.testing.assert_allclose(value, s[name], rtol=1e-6, err_msg=name)
            got, _ = sess.run([y, updates], {x: batch, flag: True})
            want, after = _renorm_step(batch.astype(np.float64), s, 0.99, 0.99,
                                       {"rmax": 1.2, "dmax": 0.1})
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(sess.run(variables["renorm_mean"]),
                                       after["renorm_mean"], rtol=1e-5)


@pytest.mark.parametrize("shape,axis,vbs", [((8, 3), -1, 2), ((6, 3, 2, 2), 1, 3),
                                            ((4, 2, 2, 3), -1, 2)])
def test_virtual_batches_match_numpy(shape, axis, vbs):
    batches = [(RNG.randn(*shape) * 3 + 1).astype(np.float32) for _ in range(2)]
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, shape)
        y = tf.layers.batch_normalization(x, axis=axis, training=True, momentum=0.6,
                                          virtual_batch_size=vbs, center=False, scale=False)
        variables = _variables()
        updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            mm, mv = sess.run([variables["moving_mean"], variables["moving_variance"]])
            for batch in batches:
                got, _ = sess.run([y, updates], {x: batch})
                want, mm, mv = _ghost_step(batch.astype(np.float64), mm, mv, vbs, 0.6, axis)
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
                np.testing.assert_allclose(sess.run(variables["moving_mean"]), mm, rtol=1e-5,
                                           atol=1e-6)
                np.testing.assert_allclose(sess.run(variables["moving_variance"]), mv,
                                           rtol=1e-5)


def test_adjustment_applies_in_training_only():
    batch = (RNG.randn(5, 4) + 2).astype(np.float32)
    adj_scale = np.array([0.9, 1.1, 1.2, 0.8], np.float32)
    adj_bias = np.array([0.1, -0.2, 0.0, 0.3], np.float32)
    seen = []

    def adjustment(shape):
        seen.append(shape)
        return tf.constant(adj_scale), tf.constant(adj_bias)

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [5, 4])
        flag = tf.placeholder(tf.bool, [])
        y = tf.layers.batch_normalization(
            x, training=flag, adjustment=adjustment, momentum=0.5,
            gamma_initializer=tf.constant_initializer(2.0),
            beta_initializer=tf.constant_initializer(0.5))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            train = sess.run(y, {x: batch, flag: True})
            infer = sess.run(y, {x: batch, flag: False})
            assert list(sess.run(seen[0], {x: batch})) == [5, 4]
    xhat = (batch - batch.mean(0)) / np.sqrt(batch.var(0) + EPS)
    np.testing.assert_allclose(train, (xhat * adj_scale + adj_bias) * 2.0 + 0.5,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(infer, batch / np.sqrt(1 + EPS) * 2.0 + 0.5, rtol=1e-5,
                               atol=1e-5)


# ---- gradients: r and d are constants ------------------------------------------------------

def test_renorm_gradient_finite_differences_with_saturated_corrections():
    """r and d clipped at their bounds stay put under a small perturbation, so the
    finite-difference Jacobian is the one stop_gradient gives."""
    x0 = (RNG.randn(6, 3) * 2).astype(np.float64)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [6, 3])
        y = tf.layers.batch_normalization(
            x, training=True, renorm=True, renorm_clipping={"rmax": 1.3, "rmin": 1.3,
                                                             "dmax": 0.25},
            moving_mean_initializer=tf.constant_initializer(-50.0),
            gamma_initializer=tf.constant_initializer(1.7))
        with tf.Session():
            tf.global_variables_initializer().run()
            err = tf.test.compute_gradient_error(x, [6, 3], y, [6, 3], x_init_value=x0)
    assert err < 1e-6


def test_renorm_gradient_is_plain_batch_norm_gradient_times_r():
    """Unclipped: d(renorm output)/dx = r * d(batch norm output)/dx per channel, r held
    constant (stop_gradient), and gamma's gradient sees r * x_hat + d."""
    x0 = (RNG.randn(6, 3) * 2 + 1).astype(np.float32)
    w = RNG.randn(6, 3).astype(np.float32)
    renorm_stddev = np.array([0.5, 2.0, 4.0], np.float32)
    renorm_mean = np.array([0.3, -0.2, 1.0], np.float32)
    with tf.Graph().as_default():
        x = tf.constant(x0)
        y_re = tf.layers.batch_normalization(
            x, training=True, renorm=True, name="re",
            moving_mean_initializer=tf.constant_initializer(renorm_mean),
            moving_variance_initializer=tf.constant_initializer(renorm_stddev ** 2))
        y_bn = tf.layers.batch_normalization(x, training=True, fused=False, name="bn")
        g_re = tf.gradients(tf.reduce_sum(y_re * w), [x, _variables("re")["gamma"]])
        g_bn = tf.gradients(tf.reduce_sum(y_bn * w), x)[0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            (gx_re, gg_re), gx_bn = sess.run([g_re, g_bn])
    std = np.sqrt(x0.var(0) + EPS)
    r, d = std / renorm_stddev, (x0.mean(0) - renorm_mean) / renorm_stddev
    np.testing.assert_allclose(gx_re, gx_bn * r, rtol=1e-4, atol=1e-5)
    xhat = (x0 - x0.mean(0)) / std
    np.testing.assert_allclose(gg_re, ((xhat * r + d) * w).sum(0), rtol=1e-4, atol=1e-5)


# ---- Keras ----------------------------------------------------------------------------------

def test_keras_batch_normalization_renorm_and_virtual_batches():
    batch = (RNG.randn(4, 3) * 2).astype(np.float32)
    with tf.Graph().as_default():
        layer = tf.keras.layers.BatchNormalization(renorm=True, virtual_batch_size=2,
                                                   momentum=0.5)
        y = layer(tf.constant(batch), training=True)
        assert [w.name.split("/")[-1] for w in layer.weights] == [
            "gamma:0", "beta:0", "moving_mean:0", "moving_variance:0", "moving_stddev:0",
            "renorm_mean:0", "renorm_stddev:0"]
        assert layer.weights[0].shape.as_list() == [1, 1, 3]
        assert len(layer.updates) == 2 and not tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run(y)
    # renorm statistics at their initial values (0, 1): r = std_B, d = mean_B, the mean
    # of the two virtual batches' statistics (rows 0, 2 and rows 1, 3).
    v = batch.reshape(2, 2, 3)
    mean, var = v.mean(0), v.var(0)
    r, d = np.sqrt(var.mean(0) + EPS), mean.mean(0)
    want = ((v - mean) / np.sqrt(var + EPS) * r + d).reshape(4, 3)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ---- tf.contrib.layers.batch_norm -----------------------------------------------------------

def test_contrib_renorm_runs_the_layer_in_the_batch_norm_scope():
    batch = (RNG.randn(6, 4) * 2 + 1).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [6, 4])
        y = tf.contrib.layers.batch_norm(x, renorm=True, decay=0.7, renorm_decay=0.6,
                                         scale=True, variables_collections=["mine"],
                                         renorm_clipping={"rmax": 1.5, "rmin": 0.8,
                                                          "dmax": 0.6})
        names = ["gamma", "beta", "moving_mean", "moving_variance", "moving_stddev",
                 "renorm_mean", "renorm_stddev"]
        assert [v.op.name for v in tf.global_variables()] == [f"BatchNorm/{n}" for n in names]
        assert [v.op.name for v in tf.model_variables()] == [f"BatchNorm/{n}" for n in names]
        assert [v.op.name for v in tf.get_collection("mine")] == [
            f"BatchNorm/{n}" for n in names]
        assert [v.op.name for v in tf.get_collection(
            tf.GraphKeys.MOVING_AVERAGE_VARIABLES)] == ["BatchNorm/moving_mean",
                                                        "BatchNorm/moving_variance"]
        assert _op_names(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == [
            "BatchNorm/AssignMovingAvg_2", "BatchNorm/AssignNewValue"]
        variables = _variables("BatchNorm")
        updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            _set(sess, variables, RENORM_STATE)
            state = {k: np.asarray(v, np.float64) for k, v in RENORM_STATE.items()}
            got, _ = sess.run([y, updates], {x: batch})
            want, state = _renorm_step(batch.astype(np.float64), state, 0.7, 0.6,
                                       {"rmax": 1.5, "rmin": 0.8, "dmax": 0.6})
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
            for name, value in sess.run(variables).items():
                np.testing.assert_allclose(value, state[name], rtol=1e-5, atol=1e-6,
                                           err_msg=name)


def test_contrib_renorm_needs_the_core_layer_path():
    for kwargs in ({"updates_collections": None}, {"zero_debias_moving_mean": True},
                   {"batch_weights": tf.ones([4])}):
        with tf.Graph().as_default(), pytest.raises(ValueError, match="renorm is not "):
            tf.contrib.layers.batch_norm(tf.zeros([4, 3]), renorm=True, **kwargs)


@pytest.mark.parametrize("shape,data_format,updates", [
    ((8, 3), "NHWC", "collection"), ((4, 3, 3, 2), "NHWC", None),
    ((4, 2, 3, 3), "NCHW", "collection"),
])
def test_contrib_batch_weights_are_weighted_moments(shape, data_format, updates):
    batch = (RNG.randn(*shape) * 2 + 1).astype(np.float32)
    weights = RNG.uniform(0.1, 2.0, size=shape[0]).astype(np.float32)
    channel = 1 if data_format == "NCHW" else len(shape) - 1
    axes = tuple(a for a in range(len(shape)) if a != channel)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, shape)
        flag = tf.placeholder(tf.bool, [])
        kwargs = {} if updates == "collection" else {"updates_collections": None}
        y = tf.contrib.layers.batch_norm(x, decay=0.6, scale=True, is_training=flag,
                                         batch_weights=tf.constant(weights),
                                         data_format=data_format, **kwargs)
        assert [v.op.name for v in tf.global_variables()] == [
            "BatchNorm/beta", "BatchNorm/gamma", "BatchNorm/moving_mean",
            "BatchNorm/moving_variance"]
        update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        variables = _variables("BatchNorm")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got, _ = sess.run([y, update_ops], {x: batch, flag: True})
            mm, mv = sess.run([variables["moving_mean"], variables["moving_variance"]])
            infer = sess.run(y, {x: batch, flag: False})
    bshape = [1] * len(shape)
    bshape[channel] = shape[channel]
    w = weights.reshape([-1] + [1] * (len(shape) - 1)) * np.ones_like(batch)
    mean = (w * batch).sum(axes) / w.sum(axes)
    var = (w * (batch - mean.reshape(bshape)) ** 2).sum(axes) / w.sum(axes)
    want = (batch - mean.reshape(bshape)) / np.sqrt(var.reshape(bshape) + EPS)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mm, 0.4 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mv, 0.6 + 0.4 * var, rtol=1e-5)
    np.testing.assert_allclose(
        infer, (batch - mm.reshape(bshape)) / np.sqrt(mv.reshape(bshape) + EPS),
        rtol=1e-5, atol=1e-5)


def test_contrib_batch_weights_of_the_wrong_length():
    with tf.Graph().as_default(), pytest.raises(ValueError):
        tf.contrib.layers.batch_norm(tf.zeros([4, 3]), batch_weights=tf.ones([5]))


def test_contrib_adjustment():
    batch = (RNG.randn(5, 4) + 2).astype(np.float32)
    with tf.Graph().as_default():
        y = tf.contrib.layers.batch_norm(
            tf.constant(batch),
            adjustment=lambda s: (tf.fill(s[-1:], 2.0), tf.fill(s[-1:], 0.5)))
        assert [v.op.name for v in tf.model_variables()] == [
            "BatchNorm/beta", "BatchNorm/moving_mean", "BatchNorm/moving_variance"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run(y)
    xhat = (batch - batch.mean(0)) / np.sqrt(batch.var(0) + EPS)
    np.testing.assert_allclose(got, xhat * 2.0 + 0.5, rtol=1e-5, atol=1e-5)


# ---- against TensorFlow ---------------------------------------------------------------------

CASES = [
    "tf.layers.batch_normalization(x, training=True, renorm=True, momentum=0.7, "
    "renorm_momentum=0.6, renorm_clipping={'rmax': 1.2, 'rmin': 0.8, 'dmax': 0.3})",
    "tf.layers.batch_normalization(x, training=True, renorm=True, momentum=0.5, center=False)",
    "tf.layers.batch_normalization(x4, axis=1, training=True, renorm=True, fused=True, "
    "renorm_clipping={'rmax': tf.constant(1.1), 'dmax': tf.constant(0.2)})",
    "tf.layers.batch_normalization(x, training=True, virtual_batch_size=2, momentum=0.6)",
    "tf.layers.batch_normalization(x4, axis=1, training=True, virtual_batch_size=3, "
    "renorm=True, momentum=0.6, renorm_clipping={'rmax': 1.3, 'dmax': 0.5}, scale=False)",
    "tf.layers.batch_normalization(x, training=True, momentum=0.6, adjustment=lambda s: "
    "(tf.constant([0.9, 1.1, 1.2, 0.8]), tf.constant([0.1, -0.2, 0.0, 0.3])))",
    "tf.layers.batch_normalization(x, training=flag, renorm=True, momentum=0.8, "
    "renorm_clipping={'rmax': 1.5, 'rmin': 0.5, 'dmax': 0.4})",
    "tf.layers.batch_normalization(x, training=flag, virtual_batch_size=3, momentum=0.8)",
]

# The same program for both libraries: every case built on placeholders, each variable
# set from a generator seeded by its name, three steps (outputs, gradients, then the
# update ops; the second with the flag false), then inference through the flag cases.
PROGRAM = """
import re, zlib
def _value(v):
    shape = v.shape.as_list()
    r = np.random.RandomState(zlib.crc32(v.op.name.encode()) % 2**31)
    if 'variance' in v.op.name or 'stddev' in v.op.name:
        return (r.rand(*shape) + 0.5).astype(np.float32)
    return (r.randn(*shape) * 0.5).astype(np.float32)

def _feed(step):
    r = np.random.RandomState(100 + step)
    return {x: (r.randn(6, 4) * 2 + 1).astype(np.float32),
            x4: r.randn(6, 3, 2, 2).astype(np.float32), flag: step != 1}

with tf.Graph().as_default():
    x = tf.placeholder(tf.float32, [6, 4], name='x')
    x4 = tf.placeholder(tf.float32, [6, 3, 2, 2], name='x4')
    flag = tf.placeholder(tf.bool, [], name='flag')
    env = dict(tf=tf, x=x, x4=x4, flag=flag)
    outs = [eval(c, env) for c in CASES]
    variables = tf.global_variables()
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    weights = [tf.constant(np.random.RandomState(i).randn(*o.shape.as_list())
                           .astype(np.float32)) for i, o in enumerate(outs)]
    loss = tf.add_n([tf.reduce_sum(o * w) for o, w in zip(outs, weights)])
    grads = tf.gradients(loss, [x, x4] + tf.trainable_variables())
    values = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for v in variables:
            sess.run(tf.assign(v, _value(v)))
        for step in range(3):
            values += sess.run(outs + grads, _feed(step))
            sess.run(updates, _feed(step))
            values += sess.run(variables)
        final = _feed(3)
        final[flag] = False
        values += sess.run(outs[-2:], final)
    names = [re.sub(r'/ReadVariableOp(_[0-9]+)?$', '', getattr(u, 'op', u).name)
             for u in updates]
    result = [[[v.name, v.shape.as_list()] for v in variables],
              [v.name for v in tf.trainable_variables()], names,
              [np.asarray(a) for a in values]]
"""


def _run_here():
    scope = {"tf": tf, "np": np, "CASES": CASES}
    exec(PROGRAM, scope)  # noqa: S102 - our own program text
    return scope["result"]


def test_program_runs_here():
    variables, trainable, updates, values = _run_here()
    assert len(variables) == 45 and len(trainable) == 14 and len(updates) == 16
    assert all(np.all(np.isfinite(v)) for v in values)


@pytest.mark.oracle
def test_every_case_matches_tensorflow(monkeypatch):
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")  # tf.layers lives in tf_keras
    ours = _run_here()
    theirs = oracle.run_tf(f"CASES = {CASES!r}\n{PROGRAM}", timeout=180)
    assert ours[:3] == theirs[:3]
    assert len(ours[3]) == len(theirs[3])
    for k, (a, b) in enumerate(zip(ours[3], theirs[3], strict=True)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"value {k}")
