"""Quantization ops (tensorflux/ops/quantization_ops.py): values bit for bit against
TensorFlow over one table of cases (tests/ops/quantization_cases.py, one oracle run), NumPy
references for the meaning of each op, typed errors, and the fake-quant gradients
(straight-through estimator) by finite differences and against TF's tf.gradients."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import errors, op_registry
from tensorflux.framework.op_def_library import apply_op
from tensorflux.kernels import registry as kernel_registry
from tests import oracle
from tests.ops import quantization_cases as qc

q = tf.quantization

MY_OPS = [
    "QuantizeV2", "Dequantize", "FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxArgsGradient",
    "FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsGradient",
    "FakeQuantWithMinMaxVarsPerChannel", "FakeQuantWithMinMaxVarsPerChannelGradient",
    "QuantizedMatMul", "QuantizedConv2D", "QuantizedBiasAdd", "QuantizedRelu", "QuantizedRelu6",
    "QuantizedMaxPool", "RequantizationRange", "Requantize", "QuantizeDownAndShrinkRange",
    "QuantizeAndDequantizeV2", "QuantizeAndDequantizeV4", "QuantizeAndDequantizeV4Grad",
]


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


# ---- the oracle table --------------------------------------------------------------------


def _build_case(c):
    kw = {k: tf.constant(np.array(v, qc.CARRIER[dt]), dtype=getattr(tf, dt))
          for k, (v, dt) in c["inputs"].items()}
    for k, v in c["attrs"].items():
        kw[k] = tf.as_dtype(v[6:]) if isinstance(v, str) and v.startswith("dtype:") else v
    out = apply_op(c["op"], **kw)
    return list(out) if isinstance(out, (tuple, list)) else [out]


@pytest.mark.oracle
def test_every_case_matches_tensorflow_bit_for_bit(tmp_path):
    cases = qc.all_cases()
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(cases))
    runner = qc.ORACLE_RUNNER + f"\nresult = run_cases(json.load(open({str(path)!r})))\n"
    theirs = oracle.run_tf(runner, timeout=300)
    with tf.Graph().as_default():
        fetches = [_build_case(c) for c in cases]
        ours = _run(fetches)
    bad = []
    for c, got, want in zip(cases, ours, theirs, strict=True):
        assert not isinstance(want, dict), f"TF failed on {c['op']} {c['attrs']}: {want}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            g = np.asarray(g).astype(np.float64)
            w = np.asarray(w).astype(np.float64)
            if g.shape != w.shape or not np.array_equal(g, w):
                bad.append(f"{c['op']} {c['attrs']} output {i}")
    assert not bad, f"{len(bad)} of {len(cases)} cases differ from TF:\n" + "\n".join(bad[:20])


GRAD_PROGRAM = """
rng = np.random.RandomState(5)
x = tf.constant(rng.uniform(-2, 2, (4, 3)).astype(np.float32))
w = tf.constant(rng.normal(0, 1, (4, 3)).astype(np.float32))
lo, hi = tf.constant(-1.2), tf.constant(0.9)
los, his = tf.constant([-1.0, -0.5, 0.0]), tf.constant([1.0, 0.3, 1.5])
ya = tf.quantization.fake_quant_with_min_max_args(x, min=-1.5, max=1.1, num_bits=6)
yv = tf.quantization.fake_quant_with_min_max_vars(x, lo, hi, narrow_range=True)
yc = tf.quantization.fake_quant_with_min_max_vars_per_channel(x, los, his, num_bits=5)
y2 = tf.quantization.quantize_and_dequantize(x, -1.0, 1.0, range_given=True, num_bits=4)
y4 = tf.quantization.quantize_and_dequantize_v2(x, -1.0, 1.5, range_given=True)
loss = tf.reduce_sum(ya * w) + tf.reduce_sum(yv * w * w) + tf.reduce_sum(yc * w)
loss += tf.reduce_sum(y2 * w) + tf.reduce_sum(y4 * w * w)
result = tf.Session().run([ya, yv, yc, y2, y4] + tf.gradients(loss, [x, lo, hi, los, his]))
"""


@pytest.mark.oracle
def test_fake_quant_gradients_match_tensorflow():
    ours, theirs = oracle.run_both(GRAD_PROGRAM, tf)
    for got, want in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# ---- meaning, against NumPy --------------------------------------------------------------


@pytest.mark.parametrize("dtype", [tf.quint8, tf.qint8, tf.quint16, tf.qint16])
@pytest.mark.parametrize("mode", ["MIN_COMBINED", "MIN_FIRST", "SCALED"])
def test_quantize_dequantize_round_trip_within_half_a_step(dtype, mode):
    lo = 0.0 if mode == "SCALED" and dtype in (tf.quint8, tf.quint16) else -2.5
    x = np.linspace(lo, 3.5, 101).astype(np.float32)
    out = q.quantize(x, lo, 3.5, dtype, mode=mode)
    back = q.dequantize(out.output, out.output_min, out.output_max, mode=mode)
    values, lo, hi, got = _run([out.output, out.output_min, out.output_max, back])
    assert values.dtype == dtype.numpy_dtype
    levels = (1 << (8 * dtype.size)) - 1
    step = (hi - lo) / levels
    assert np.max(np.abs(got - x)) <= 0.51 * step + 1e-6


def test_min_first_represents_zero_exactly():
    out = q.quantize([0.0, -0.3, 1.7], -0.37, 1.9, tf.quint8, mode="MIN_FIRST")
    back = q.dequantize(*out, mode="MIN_FIRST")
    assert _run(back)[0] == 0.0


def test_scaled_is_symmetric_and_per_axis_has_its_own_ranges():
    x = np.array([[-1.0, 0.5], [4.0, -2.0], [0.25, 0.1]], np.float32)
    out = q.quantize(x, [-1.0, -2.0], [1.0, 4.0], tf.qint8, mode="SCALED", axis=1)
    values, lo, hi = _run(list(out))
    np.testing.assert_array_equal(values[:, 0], [-127, 127, 32])  # scale 127, 4 clamps
    assert lo.shape == hi.shape == (2,)
    np.testing.assert_allclose(hi, [1.0, 4.0])
    np.testing.assert_allclose(lo, [-128 / 127, -4 * 128 / 127], rtol=1e-6)


def test_half_to_even_rounding():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5], np.float32)
    even = q.quantize(x, -127.0, 127.0, tf.qint8, mode="SCALED", round_mode="HALF_TO_EVEN")
    away = q.quantize(x, -127.0, 127.0, tf.qint8, mode="SCALED")
    e, a = _run([even.output, away.output])
    np.testing.assert_array_equal(e, [0, 2, 2, 0, -2])
    np.testing.assert_array_equal(a, [1, 2, 3, -1, -3])


def _dequant(values, lo, hi):
    """MIN_FIRST-style float value of quint8 values (for products' references)."""
    step = (hi - lo) / 255.0
    zero = np.round(-lo / step)
    return (values.astype(np.float64) - zero) * step


def test_quantized_matmul_is_the_float_product_of_the_dequantized_inputs():
    rng = np.random.RandomState(0)
    a, b = rng.randint(0, 256, (5, 7)).astype(np.uint8), rng.randint(0, 256, (7, 3)).astype(
        np.uint8)
    out = q.quantized_mat_mul(tf.constant(a, tf.quint8), tf.constant(b, tf.quint8), -1.0, 2.0,
                              -0.5, 0.5)
    c, lo, hi = _run(list(out))
    assert c.dtype == np.int32
    step = (hi - lo) / (2.0 ** 32 - 1)
    want = _dequant(a, -1.0, 2.0) @ _dequant(b, -0.5, 0.5)
    np.testing.assert_allclose(c * step, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("k,high", [(64, 255), (3000, 255), (3000, 40)])
def test_quantized_matmul_is_exact_in_integers(k, high):
    """Exact whether the product rides on float32 (small sums) or float64 (large ones)."""
    rng = np.random.RandomState(k + high)
    a = rng.randint(0, high + 1, (9, k)).astype(np.uint8)
    b = rng.randint(0, 256, (k, 5)).astype(np.uint8)
    a[0], b[:, 0] = high, 255  # the extreme sums
    out = _run(q.quantized_mat_mul(tf.constant(a, tf.quint8), tf.constant(b, tf.quint8),
                                   -1.0, 3.0, -2.0, 0.5).out)
    za = np.round(1.0 / (4.0 * 256 / 255 / 256))  # TF's zero points of the two ranges
    zb = np.round(2.0 / (2.5 * 256 / 255 / 256))
    want = (a.astype(np.int64) - za.astype(np.int64)) @ (b.astype(np.int64) - int(zb))
    np.testing.assert_array_equal(out, want)


def test_quantized_conv2d_is_the_float_conv_of_the_dequantized_inputs():
    rng = np.random.RandomState(1)
    x = rng.randint(0, 256, (2, 7, 6, 3)).astype(np.uint8)
    w = rng.randint(0, 256, (3, 3, 3, 4)).astype(np.uint8)
    out = q.quantized_conv2d(tf.constant(x, tf.quint8), tf.constant(w, tf.quint8), 0.0, 6.0,
                             -1.0, 1.0, strides=[1, 2, 2, 1], padding="SAME")
    xf = tf.constant(_dequant(x, 0.0, 6.0).astype(np.float32))
    wf = tf.constant(_dequant(w, -1.0, 1.0).astype(np.float32))
    ref = tf.nn.conv2d(xf, wf, strides=[1, 2, 2, 1], padding="SAME")
    (c, lo, hi), want = _run([list(out), ref])
    np.testing.assert_allclose(c * (hi - lo) / (2.0 ** 32 - 1), want, rtol=1e-4, atol=1e-4)


def test_relu_bias_add_and_requantize_keep_the_float_meaning():
    x = np.array([[-2.0, -0.1, 0.0, 0.7, 3.0, 7.0]], np.float32)
    qx = q.quantize(x, -2.0, 7.0, tf.quint8, mode="MIN_FIRST")
    relu = q.quantized_relu(*qx)
    relu6 = q.quantized_relu6(*qx)
    bias = q.quantize(np.full(6, 0.5, np.float32), -1.0, 1.0, tf.quint8, mode="MIN_FIRST")
    added = q.quantized_bias_add(qx.output, bias.output, qx.output_min, qx.output_max,
                                 bias.output_min, bias.output_max, out_type=tf.qint32)
    lo, hi = q.requantization_range(*added)
    req = q.requantize(*added, lo, hi, out_type=tf.quint8)
    shrunk = q.quantize_down_and_shrink_range(*added, out_type=tf.quint8)
    outs = [q.dequantize(*t, mode="MIN_FIRST") for t in (relu, relu6, req, shrunk)]
    r, r6, s, sh = _run(outs)
    step = 9.0 / 255
    np.testing.assert_allclose(r, np.maximum(x, 0), atol=step)
    np.testing.assert_allclose(r6, np.clip(x, 0, 6), atol=step)
    np.testing.assert_allclose(s, x + 0.5, atol=2 * 9.5 / 255)
    np.testing.assert_allclose(sh, x + 0.5, atol=2 * 9.5 / 255)


def test_quantize_and_dequantize_rounds_to_a_symmetric_grid():
    x = np.array([-3.0, -1.0, -0.3, 0.0, 0.26, 0.9, 2.0], np.float32)
    y = _run(q.quantize_and_dequantize(x, -1.0, 1.0, range_given=True))
    np.testing.assert_allclose(y, np.rint(np.clip(x, -128 / 127, 1.0) * 127) / 127, rtol=1e-6)
    data_range = _run(q.quantize_and_dequantize_v2(x, 0.0, 0.0, num_bits=4))  # range from x
    # 4 bits over the data's [-3, 2]: the min side binds (scale 8 / 3), so steps of 3 / 8
    np.testing.assert_allclose(data_range, np.rint(x * 8 / 3) * 0.375, rtol=1e-6)


def test_quantize_and_dequantize_gradients():
    x = tf.constant(np.array([-2.0, -0.5, 0.3, 1.2], np.float32))
    g2 = tf.gradients(q.quantize_and_dequantize(x, -1.0, 1.0, range_given=True), x)[0]
    g4 = tf.gradients(q.quantize_and_dequantize_v2(x, -1.0, 1.0, range_given=True), x)[0]
    np.testing.assert_array_equal(_run(g2), [1, 1, 1, 1])  # V2: straight through
    np.testing.assert_array_equal(_run(g4), [0, 1, 1, 0])  # V4: zero outside the range


def test_quantize_and_dequantize_refuses_what_tensorflow_refuses():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(errors.InvalidArgumentError, match="must be a scalar"):
        _run(q.quantize_and_dequantize_v2(x, [0.0] * 3, [1.0] * 3, range_given=True, axis=1))
    with pytest.raises(errors.InvalidArgumentError, match="Invalid range"):
        _run(q.quantize_and_dequantize(x, 1.0, -1.0, range_given=True))
    with pytest.raises(errors.OpError):  # no half kernel on CPU, as in TF
        _run(q.quantize_and_dequantize(x.astype(np.float16), 0.0, 1.0))


def test_quantized_max_pool_is_the_max_pool_of_the_integers():
    rng = np.random.RandomState(3)
    x = rng.randint(0, 256, (2, 5, 7, 3)).astype(np.uint8)
    out = q.quantized_max_pool(tf.constant(x, tf.quint8), -1.0, 2.0, [1, 3, 3, 1],
                               [1, 2, 2, 1], "SAME")
    ref = tf.nn.max_pool(tf.constant(x.astype(np.float32)), [1, 3, 3, 1], [1, 2, 2, 1],
                         "SAME")
    (got, lo, hi), want = _run([list(out), ref])
    assert got.dtype == np.uint8 and (lo, hi) == (-1.0, 2.0)
    np.testing.assert_array_equal(got, want)


def test_fake_quant_rounds_to_a_grid_with_an_exact_zero():
    x = np.array([-7.0, -0.01, 0.0, 0.012, 2.4, 9.0], np.float32)
    y = _run(q.fake_quant_with_min_max_args(x, min=-6.0, max=6.0))
    scale = 12.0 / 255
    assert y[2] == 0.0
    np.testing.assert_allclose(y[[0, -1]], [-128 * scale, 127 * scale], rtol=1e-6)
    grid = y / scale
    np.testing.assert_allclose(grid, np.round(grid), atol=1e-4)
    assert np.all(np.abs(y[1:-1] - x[1:-1]) <= scale / 2 + 1e-6)


# ---- gradients ---------------------------------------------------------------------------


def _finite_difference(f, x, eps=1e-3):
    grad = np.zeros_like(x, dtype=np.float64)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        grad[i] = (f(xp) - f(xm)) / (2 * eps)
    return grad


def test_fake_quant_gradient_is_the_clamp_derivative_by_finite_differences():
    """The straight-through estimator: the op is treated as clip(x, nudged_min, nudged_max),
    whose finite-difference derivative (away from the two kinks) is the gradient."""
    x = np.array([-8.0, -3.1, -0.4, 0.2, 2.9, 5.5, 7.0], np.float32)
    w = np.linspace(0.5, 2.0, 7).astype(np.float32)
    xt = tf.constant(x)
    lo, hi = tf.constant(-4.0), tf.constant(5.0)
    y = q.fake_quant_with_min_max_vars(xt, lo, hi)
    gx, glo, ghi = tf.gradients(tf.reduce_sum(y * w), [xt, lo, hi])
    gx, glo, ghi = _run([gx, glo, ghi])
    nmin, nmax = -4.0, 5.0  # 0 is on this grid already: no nudge
    fd = _finite_difference(lambda v: float(np.sum(np.clip(v, nmin, nmax) * w)), x.astype(
        np.float64))
    np.testing.assert_allclose(gx, fd, atol=1e-6)
    # min and max move the clamped values: d/dmin = sum of w below, d/dmax = sum above
    fd_lo = _finite_difference(lambda v: float(np.sum(np.clip(x, v[0], nmax) * w)),
                               np.array([nmin]))
    fd_hi = _finite_difference(lambda v: float(np.sum(np.clip(x, nmin, v[0]) * w)),
                               np.array([nmax]))
    np.testing.assert_allclose([glo, ghi], [fd_lo[0], fd_hi[0]], rtol=1e-6)


def test_per_channel_gradients_have_one_entry_per_channel():
    x = tf.constant(np.array([[-3.0, 0.5], [2.0, 9.0], [0.1, -1.0]], np.float32))
    lo, hi = tf.constant([-1.0, -2.0]), tf.constant([1.0, 2.0])
    y = q.fake_quant_with_min_max_vars_per_channel(x, lo, hi)
    gx, glo, ghi = _run(tf.gradients(tf.reduce_sum(y), [x, lo, hi]))
    np.testing.assert_array_equal(gx, [[0, 1], [0, 0], [1, 1]])
    np.testing.assert_array_equal(glo, [1, 0])
    np.testing.assert_array_equal(ghi, [1, 1])


def test_quantization_aware_training_learns_weights_and_ranges():
    rng = np.random.RandomState(2)
    xs = rng.normal(0, 1, (64, 3)).astype(np.float32)
    ys = xs @ np.array([[1.5], [-2.0], [0.5]], np.float32)
    with tf.Graph().as_default():
        w = tf.Variable(tf.zeros([3, 1]))
        lo, hi = tf.Variable(-0.5), tf.Variable(0.5)
        wq = q.fake_quant_with_min_max_vars(w, lo, hi)
        loss = tf.reduce_mean(tf.square(tf.matmul(xs, wq) - ys))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(loss)
            for _ in range(150):
                sess.run(train)
            last, lo_v, hi_v = sess.run([loss, lo, hi])
    assert last < 0.05 * first
    assert lo_v < -1.5 and hi_v > 1.0  # the range grew to hold the weights


# ---- errors and registry -----------------------------------------------------------------


def test_bad_arguments_are_typed_errors():
    with pytest.raises(errors.InvalidArgumentError, match="HALF_TO_EVEN"):
        _run(q.quantize([1.0], -1.0, 1.0, tf.quint8, round_mode="HALF_TO_EVEN").output)
    with pytest.raises(errors.InvalidArgumentError, match="larger than"):
        _run(q.quantize([1.0], 1.0, -1.0, tf.quint8).output)
    with pytest.raises(errors.InvalidArgumentError, match="max_a must be larger"):
        one = np.ones((1, 1), np.uint8)
        _run(q.quantized_mat_mul(tf.constant(one, tf.quint8), tf.constant(one, tf.quint8),
                                 1.0, 1.0, 0.0, 1.0).out)
    with pytest.raises(errors.InvalidArgumentError, match="min has to be smaller"):
        _run(q.fake_quant_with_min_max_args([1.0], min=2.0, max=1.0))
    with pytest.raises(errors.InvalidArgumentError, match="num_bits"):
        _run(q.fake_quant_with_min_max_args([1.0], num_bits=1))
    with pytest.raises(errors.InvalidArgumentError, match="requested_output_min"):
        _run(q.requantize(tf.constant(np.ones(1, np.int32), tf.qint32), -1.0, 1.0, 0.5, 1.0,
                          tf.quint8).output)
    with pytest.raises(errors.UnimplementedError, match="MIN_FIRST"):
        _run(q.quantize(np.ones((2, 3), np.float32), [0.0] * 3, [1.0] * 3, tf.quint8,
                        mode="MIN_FIRST", axis=1).output)
    with pytest.raises(ValueError):
        q.quantized_mat_mul(tf.constant(np.zeros((2, 3), np.uint8), tf.quint8),
                            tf.constant(np.zeros((2, 3), np.uint8), tf.quint8), 0.0, 1.0, 0.0,
                            1.0)
    with pytest.raises(ValueError, match="known rank"):
        q.quantize(tf.placeholder(tf.float32), 0.0, 1.0, tf.quint8, axis=-1)
    with pytest.raises(TypeError):
        q.quantize([1.0], 0.0, 1.0, tf.float32)


def test_shapes_are_inferred():
    x = tf.placeholder(tf.float32, [None, 4, 5])
    out = q.quantize(x, [0.0] * 4, [1.0] * 4, tf.qint8, mode="SCALED", axis=1)
    assert out.output.shape.as_list() == [None, 4, 5]
    assert out.output_min.shape.as_list() == [4]
    img = tf.placeholder(tf.quint8, [2, 9, 9, 3])
    filt = tf.placeholder(tf.quint8, [3, 3, 3, 8])
    conv = q.quantized_conv2d(img, filt, 0.0, 1.0, 0.0, 1.0, [1, 2, 2, 1], "VALID")
    assert conv.output.shape.as_list() == [2, 4, 4, 8]
    assert conv.output.dtype == tf.qint32
    mm = q.quantized_mat_mul(tf.placeholder(tf.quint8, [5, 7]), tf.placeholder(tf.quint8, [3, 7]),
                             0.0, 1.0, 0.0, 1.0, transpose_b=True)
    assert mm.out.shape.as_list() == [5, 3]


def test_tf1_names_exist():
    assert tf.quantize is q.quantize and tf.dequantize is q.dequantize
    assert tf.quantize_v2 is not None and tf.fake_quant_with_min_max_vars is not None
    assert tf.compat.v1.quantization.fake_quant_with_min_max_args is not None


@pytest.mark.parametrize("op_type", MY_OPS)
def test_every_op_has_shape_fn_kernel_and_gradient(op_type):
    assert op_registry.get(op_type).shape_fn is not None
    assert kernel_registry.has_kernel(op_type, "CPU")
    assert op_registry.get_gradient(op_type) is not None
