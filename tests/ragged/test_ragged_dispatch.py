"""The functions of TensorFlow 2.21's ragged dispatch list that apply elementwise: tf.math's
(and tf.math.special's) unary and binary functions, tf.bitwise, casts, complex parts, tf.nn's
activations and dropout, tf.image's per-pixel adjustments, byte encodings, string functions
and check_numerics, called on RaggedTensors through tf, tf.math, tf.nn, tf.bitwise, tf.io,
tf.image and tf.debugging (tensorflux/ragged/dispatch.py).

Table-driven (tests/ragged/ragged_cases.py): each case's expected value is what TensorFlow
2.21 gives (tf.compat.v1, graph mode); the oracle tests ask it again and also compare
ragged ranks and static shapes."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.ragged import ragged_cases

NAN = float("nan")
INF = float("inf")

SETUP = ragged_cases.BASE_SETUP + """
f = tf.ragged.constant([[1.0, -2.0], [], [3.5, 4.0, -0.5]])
g = tf.ragged.constant([[0.5, 2.0], [], [1.5, 0.25, 3.0]])
p = tf.ragged.constant([[0.1, 0.5], [], [0.9, 0.3, 0.7]])
s = tf.ragged.constant([["a", "Bc"], [], [" De ", "1", "2.5"]])
bl = tf.ragged.constant([[True, False], [], [True, True, False]])
cx = RT.from_row_splits(tf.constant([1+2j, 3-1j, 2j], tf.complex64), [0, 2, 2, 3])
f3 = tf.ragged.constant([[[1.0, 2.0], [3.0]], [], [[4.0], [5.0, 6.0, 7.0]]])
img = RT.from_row_splits(tf.reshape(tf.range(8.0), [2, 2, 2, 1]) / 8.0, [0, 1, 2])
"""

MATH = [
    ('math.abs', 'tf.math.abs(f)', [[1.0, 2.0], [], [3.5, 4.0, 0.5]]),
    ('math.acos', 'tf.math.acos(p)', [[1.470629, 1.047198], [], [0.4510269, 1.266104, 0.7953988]]),
    ('math.acosh', 'tf.math.acosh(g + 1.0)',
     [[0.9624237, 1.762747], [], [1.566799, 0.6931472, 2.063437]]),
    ('math.asin', 'tf.math.asin(p)',
     [[0.1001674, 0.5235988], [], [1.119769, 0.3046927, 0.7753975]]),
    ('math.asinh', 'tf.math.asinh(f)',
     [[0.8813736, -1.443635], [], [1.965721, 2.094712, -0.4812118]]),
    ('math.atan', 'tf.math.atan(f)',
     [[0.7853982, -1.107149], [], [1.292497, 1.325818, -0.4636476]]),
    ('math.atanh', 'tf.math.atanh(p)',
     [[0.1003353, 0.5493062], [], [1.472219, 0.3095196, 0.8673005]]),
    ('math.ceil', 'tf.math.ceil(f)', [[1.0, -2.0], [], [4.0, 4.0, -0.0]]),
    ('math.cos', 'tf.math.cos(f)',
     [[0.5403023, -0.4161468], [], [-0.9364567, -0.6536436, 0.8775826]]),
    ('math.cosh', 'tf.math.cosh(f)', [[1.543081, 3.762196], [], [16.57282, 27.30823, 1.127626]]),
    ('math.digamma', 'tf.math.digamma(g)',
     [[-1.963511, 0.4227842], [], [0.03648996, -4.227454, 0.9227842]]),
    ('math.erf', 'tf.math.erf(f)', [[0.8427008, -0.9953223], [], [0.9999994, 1.0, -0.5204999]]),
    ('math.erfc', 'tf.math.erfc(f)',
     [[0.1572992, 1.995322], [], [7.430984e-07, 1.541726e-08, 1.5205]]),
    ('math.erfinv', 'tf.math.erfinv(p)',
     [[0.088856, 0.4769363], [], [1.163087, 0.2724627, 0.732869]]),
    ('math.erfcinv', 'tf.math.erfcinv(g)', [[0.4769363, -INF], [], [-0.4769363, 0.8134199, NAN]]),
    ('math.exp', 'tf.math.exp(f)', [[2.718282, 0.1353353], [], [33.11545, 54.59815, 0.6065307]]),
    ('math.expm1', 'tf.math.expm1(f)',
     [[1.718282, -0.8646647], [], [32.11545, 53.59815, -0.3934693]]),
    ('math.floor', 'tf.math.floor(f)', [[1.0, -2.0], [], [3.0, 4.0, -1.0]]),
    ('math.is_finite', 'tf.math.is_finite(f)', [[True, True], [], [True, True, True]]),
    ('math.is_inf', 'tf.math.is_inf(f)', [[False, False], [], [False, False, False]]),
    ('math.is_nan', 'tf.math.is_nan(f)', [[False, False], [], [False, False, False]]),
    ('math.lgamma', 'tf.math.lgamma(g)',
     [[0.5723649, 0.0], [], [-0.1207822, 1.288023, 0.6931472]]),
    ('math.log', 'tf.math.log(g)',
     [[-0.6931472, 0.6931472], [], [0.4054651, -1.386294, 1.098612]]),
    ('math.log1p', 'tf.math.log1p(f)', [[0.6931472, NAN], [], [1.504077, 1.609438, -0.6931472]]),
    ('math.log_sigmoid', 'tf.math.log_sigmoid(f)',
     [[-0.3132617, -2.126928], [], [-0.02975042, -0.01814993, -0.974077]]),
    ('math.ndtri', 'tf.math.ndtri(p)', [[-1.281552, 0.0], [], [1.281551, -0.5244005, 0.5244005]]),
    ('math.negative', 'tf.math.negative(f)', [[-1.0, 2.0], [], [-3.5, -4.0, 0.5]]),
    ('math.reciprocal', 'tf.math.reciprocal(f)', [[1.0, -0.5], [], [0.2857143, 0.25, -2.0]]),
    ('math.reciprocal_no_nan', 'tf.math.reciprocal_no_nan(f)',
     [[1.0, -0.5], [], [0.2857143, 0.25, -2.0]]),
    ('math.rint', 'tf.math.rint(f)', [[1.0, -2.0], [], [4.0, 4.0, -0.0]]),
    ('math.round', 'tf.math.round(f)', [[1.0, -2.0], [], [4.0, 4.0, -0.0]]),
    ('math.rsqrt', 'tf.math.rsqrt(g)', [[1.414214, 0.7071068], [], [0.8164966, 2.0, 0.5773503]]),
    ('math.sigmoid', 'tf.math.sigmoid(f)',
     [[0.7310586, 0.1192029], [], [0.9706877, 0.9820138, 0.3775407]]),
    ('math.sign', 'tf.math.sign(f)', [[1.0, -1.0], [], [1.0, 1.0, -1.0]]),
    ('math.sin', 'tf.math.sin(f)',
     [[0.841471, -0.9092974], [], [-0.3507832, -0.7568025, -0.4794255]]),
    ('math.sinh', 'tf.math.sinh(f)', [[1.175201, -3.62686], [], [16.54263, 27.28992, -0.5210953]]),
    ('math.softplus', 'tf.math.softplus(f)',
     [[1.313262, 0.126928], [], [3.52975, 4.01815, 0.474077]]),
    ('math.sqrt', 'tf.math.sqrt(g)', [[0.7071068, 1.414214], [], [1.224745, 0.5, 1.732051]]),
    ('math.square', 'tf.math.square(f)', [[1.0, 4.0], [], [12.25, 16.0, 0.25]]),
    ('math.tan', 'tf.math.tan(f)', [[1.557408, 2.18504], [], [0.3745856, 1.157821, -0.5463025]]),
    ('math.tanh', 'tf.math.tanh(f)',
     [[0.7615942, -0.9640276], [], [0.9981779, 0.9993293, -0.4621171]]),
    ('math.bessel_i0', 'tf.math.bessel_i0(f)',
     [[1.266066, 2.279585], [], [7.378204, 11.30192, 1.063483]]),
    ('math.bessel_i0e', 'tf.math.bessel_i0e(f)',
     [[0.4657596, 0.3085083], [], [0.2228025, 0.2070019, 0.6450354]]),
    ('math.bessel_i1', 'tf.math.bessel_i1(f)',
     [[0.5651591, -1.590637], [], [6.205835, 9.759467, -0.2578943]]),
    ('math.bessel_i1e', 'tf.math.bessel_i1e(f)',
     [[0.2079104, -0.2152693], [], [0.1874, 0.1787509, -0.1564208]]),
    ('top.abs', 'tf.abs(f)', [[1.0, 2.0], [], [3.5, 4.0, 0.5]]),
    ('top.ceil', 'tf.ceil(f)', [[1.0, -2.0], [], [4.0, 4.0, -0.0]]),
    ('top.exp', 'tf.exp(f)', [[2.718282, 0.1353353], [], [33.11545, 54.59815, 0.6065307]]),
    ('top.log', 'tf.log(g)', [[-0.6931472, 0.6931472], [], [0.4054651, -1.386294, 1.098612]]),
    ('top.negative', 'tf.negative(f)', [[-1.0, 2.0], [], [-3.5, -4.0, 0.5]]),
    ('top.sigmoid', 'tf.sigmoid(f)',
     [[0.7310586, 0.1192029], [], [0.9706877, 0.9820138, 0.3775407]]),
    ('top.tanh', 'tf.tanh(f)', [[0.7615942, -0.9640276], [], [0.9981779, 0.9993293, -0.4621171]]),
    ('top.sqrt', 'tf.sqrt(g)', [[0.7071068, 1.414214], [], [1.224745, 0.5, 1.732051]]),
    ('top.sin', 'tf.sin(f)', [[0.841471, -0.9092974], [], [-0.3507832, -0.7568025, -0.4794255]]),
    ('top.acos', 'tf.acos(p)', [[1.470629, 1.047198], [], [0.4510269, 1.266104, 0.7953988]]),
    ('top.erfc', 'tf.erfc(f)', [[0.1572992, 1.995322], [], [7.430984e-07, 1.541726e-08, 1.5205]]),
    ('top.lgamma', 'tf.lgamma(g)', [[0.5723649, 0.0], [], [-0.1207822, 1.288023, 0.6931472]]),
    ('top.log_sigmoid', 'tf.log_sigmoid(f)',
     [[-0.3132617, -2.126928], [], [-0.02975042, -0.01814993, -0.974077]]),
    ('math.add', 'tf.math.add(g + 1.0, g)', [[2.0, 5.0], [], [4.0, 1.5, 7.0]]),
    ('math.add_scalar', 'tf.math.add(g + 1.0, 2.0)', [[3.5, 5.0], [], [4.5, 3.25, 6.0]]),
    ('math.atan2', 'tf.math.atan2(g + 1.0, g)',
     [[1.249046, 0.9827937], [], [1.030377, 1.373401, 0.9272952]]),
    ('math.atan2_scalar', 'tf.math.atan2(g + 1.0, 2.0)',
     [[0.6435011, 0.9827937], [], [0.8960554, 0.5585993, 1.107149]]),
    ('math.divide', 'tf.math.divide(g + 1.0, g)', [[3.0, 1.5], [], [1.666667, 5.0, 1.333333]]),
    ('math.divide_scalar', 'tf.math.divide(g + 1.0, 2.0)', [[0.75, 1.5], [], [1.25, 0.625, 2.0]]),
    ('math.divide_no_nan', 'tf.math.divide_no_nan(g + 1.0, g)',
     [[3.0, 1.5], [], [1.666667, 5.0, 1.333333]]),
    ('math.divide_no_nan_scalar', 'tf.math.divide_no_nan(g + 1.0, 2.0)',
     [[0.75, 1.5], [], [1.25, 0.625, 2.0]]),
    ('math.equal', 'tf.math.equal(g + 1.0, g)', [[False, False], [], [False, False, False]]),
    ('math.equal_scalar', 'tf.math.equal(g + 1.0, 2.0)',
     [[False, False], [], [False, False, False]]),
    ('math.floordiv', 'tf.math.floordiv(g + 1.0, g)', [[3.0, 1.0], [], [1.0, 5.0, 1.0]]),
    ('math.floordiv_scalar', 'tf.math.floordiv(g + 1.0, 2.0)', [[0.0, 1.0], [], [1.0, 0.0, 2.0]]),
    ('math.floormod', 'tf.math.floormod(g + 1.0, g)', [[0.0, 1.0], [], [1.0, 0.0, 1.0]]),
    ('math.floormod_scalar', 'tf.math.floormod(g + 1.0, 2.0)', [[1.5, 1.0], [], [0.5, 1.25, 0.0]]),
    ('math.greater', 'tf.math.greater(g + 1.0, g)', [[True, True], [], [True, True, True]]),
    ('math.greater_scalar', 'tf.math.greater(g + 1.0, 2.0)',
     [[False, True], [], [True, False, True]]),
    ('math.greater_equal', 'tf.math.greater_equal(g + 1.0, g)',
     [[True, True], [], [True, True, True]]),
    ('math.greater_equal_scalar', 'tf.math.greater_equal(g + 1.0, 2.0)',
     [[False, True], [], [True, False, True]]),
    ('math.less', 'tf.math.less(g + 1.0, g)', [[False, False], [], [False, False, False]]),
    ('math.less_scalar', 'tf.math.less(g + 1.0, 2.0)', [[True, False], [], [False, True, False]]),
    ('math.less_equal', 'tf.math.less_equal(g + 1.0, g)',
     [[False, False], [], [False, False, False]]),
    ('math.less_equal_scalar', 'tf.math.less_equal(g + 1.0, 2.0)',
     [[True, False], [], [False, True, False]]),
    ('math.maximum', 'tf.math.maximum(g + 1.0, g)', [[1.5, 3.0], [], [2.5, 1.25, 4.0]]),
    ('math.maximum_scalar', 'tf.math.maximum(g + 1.0, 2.0)', [[2.0, 3.0], [], [2.5, 2.0, 4.0]]),
    ('math.minimum', 'tf.math.minimum(g + 1.0, g)', [[0.5, 2.0], [], [1.5, 0.25, 3.0]]),
    ('math.minimum_scalar', 'tf.math.minimum(g + 1.0, 2.0)', [[1.5, 2.0], [], [2.0, 1.25, 2.0]]),
    ('math.multiply', 'tf.math.multiply(g + 1.0, g)', [[0.75, 6.0], [], [3.75, 0.3125, 12.0]]),
    ('math.multiply_scalar', 'tf.math.multiply(g + 1.0, 2.0)', [[3.0, 6.0], [], [5.0, 2.5, 8.0]]),
    ('math.multiply_no_nan', 'tf.math.multiply_no_nan(g + 1.0, g)',
     [[0.75, 6.0], [], [3.75, 0.3125, 12.0]]),
    ('math.multiply_no_nan_scalar', 'tf.math.multiply_no_nan(g + 1.0, 2.0)',
     [[3.0, 6.0], [], [5.0, 2.5, 8.0]]),
    ('math.not_equal', 'tf.math.not_equal(g + 1.0, g)', [[True, True], [], [True, True, True]]),
    ('math.not_equal_scalar', 'tf.math.not_equal(g + 1.0, 2.0)',
     [[True, True], [], [True, True, True]]),
    ('math.pow', 'tf.math.pow(g + 1.0, g)', [[1.224745, 9.0], [], [3.952847, 1.057371, 64.0]]),
    ('math.pow_scalar', 'tf.math.pow(g + 1.0, 2.0)', [[2.25, 9.0], [], [6.25, 1.5625, 16.0]]),
    ('math.squared_difference', 'tf.math.squared_difference(g + 1.0, g)',
     [[1.0, 1.0], [], [1.0, 1.0, 1.0]]),
    ('math.squared_difference_scalar', 'tf.math.squared_difference(g + 1.0, 2.0)',
     [[0.25, 1.0], [], [0.25, 0.5625, 4.0]]),
    ('math.subtract', 'tf.math.subtract(g + 1.0, g)', [[1.0, 1.0], [], [1.0, 1.0, 1.0]]),
    ('math.subtract_scalar', 'tf.math.subtract(g + 1.0, 2.0)',
     [[-0.5, 1.0], [], [0.5, -0.75, 2.0]]),
    ('math.truediv', 'tf.math.truediv(g + 1.0, g)', [[3.0, 1.5], [], [1.666667, 5.0, 1.333333]]),
    ('math.truediv_scalar', 'tf.math.truediv(g + 1.0, 2.0)',
     [[0.75, 1.5], [], [1.25, 0.625, 2.0]]),
    ('math.xdivy', 'tf.math.xdivy(g + 1.0, g)', [[3.0, 1.5], [], [1.666667, 5.0, 1.333333]]),
    ('math.xdivy_scalar', 'tf.math.xdivy(g + 1.0, 2.0)', [[0.75, 1.5], [], [1.25, 0.625, 2.0]]),
    ('math.xlog1py', 'tf.math.xlog1py(g + 1.0, g)',
     [[0.6081976, 3.295837], [], [2.290727, 0.2789294, 5.545177]]),
    ('math.xlog1py_scalar', 'tf.math.xlog1py(g + 1.0, 2.0)',
     [[1.647918, 3.295837], [], [2.746531, 1.373265, 4.394449]]),
    ('math.xlogy', 'tf.math.xlogy(g + 1.0, g)',
     [[-1.039721, 2.079442], [], [1.013663, -1.732868, 4.394449]]),
    ('math.xlogy_scalar', 'tf.math.xlogy(g + 1.0, 2.0)',
     [[1.039721, 2.079442], [], [1.732868, 0.866434, 2.772589]]),
    ('math.zeta', 'tf.math.zeta(g + 1.0, g)',
     [[4.776538, 0.2020569], [], [0.5902565, 9.877309, 0.01982323]]),
    ('math.zeta_scalar', 'tf.math.zeta(g + 1.0, 2.0)',
     [[1.612375, 0.2020569], [], [0.3414873, 3.595112, 0.08232323]]),
    ('math.nextafter_scalar', 'tf.math.nextafter(g + 1.0, 2.0)',
     [[1.5, 3.0], [], [2.5, 1.25, 4.0]]),
    ('math.logical_and', 'tf.math.logical_and(bl, bl)', [[True, False], [], [True, True, False]]),
    ('math.logical_or', 'tf.math.logical_or(bl, tf.logical_not(bl))',
     [[True, True], [], [True, True, True]]),
    ('math.logical_xor', 'tf.math.logical_xor(bl, True)',
     [[False, True], [], [False, False, True]]),
    ('math.logical_not', 'tf.math.logical_not(bl)', [[False, True], [], [False, False, True]]),
    ('top.div', 'tf.div(r, 2)', [[0, 1], [], [1, 2, 2]]),
    ('top.floor_div', 'tf.floor_div(r, 2)', [[0, 1], [], [1, 2, 2]]),
    ('top.realdiv', 'tf.realdiv(f, 2.0)', [[0.5, -1.0], [], [1.75, 2.0, -0.25]]),
    ('top.truncatediv', 'tf.truncatediv(r - 3, 2)', [[-1, 0], [], [0, 0, 1]]),
    ('top.truncatemod', 'tf.truncatemod(r - 3, 2)', [[0, -1], [], [0, 1, 0]]),
    ('bitwise.and', 'tf.bitwise.bitwise_and(r, 3)', [[1, 2], [], [3, 0, 1]]),
    ('bitwise.or', 'tf.bitwise.bitwise_or(r, r)', [[1, 2], [], [3, 4, 5]]),
    ('bitwise.xor', 'tf.bitwise.bitwise_xor(r, 1)', [[0, 3], [], [2, 5, 4]]),
    ('bitwise.invert', 'tf.bitwise.invert(r)', [[-2, -3], [], [-4, -5, -6]]),
    ('bitwise.left_shift', 'tf.bitwise.left_shift(r, 1)', [[2, 4], [], [6, 8, 10]]),
    ('bitwise.right_shift', 'tf.bitwise.right_shift(r, 1)', [[0, 1], [], [1, 2, 2]]),
    ('special.bessel_j0', 'tf.math.special.bessel_j0(g)',
     [[0.9384699, 0.2238908], [], [0.5118277, 0.984436, -0.2600519]]),
    ('special.bessel_j1', 'tf.math.special.bessel_j1(g)',
     [[0.2422685, 0.5767248], [], [0.5579365, 0.124026, 0.339059]]),
    ('special.bessel_k0', 'tf.math.special.bessel_k0(g)',
     [[0.9244191, 0.1138939], [], [0.2138056, 1.541507, 0.03473951]]),
    ('special.bessel_k0e', 'tf.math.special.bessel_k0e(g)',
     [[1.524109, 0.8415684], [], [0.9582104, 1.979334, 0.6977617]]),
    ('special.bessel_k1', 'tf.math.special.bessel_k1(g)',
     [[1.656441, 0.1398659], [], [0.2773879, 3.747026, 0.04015643]]),
    ('special.bessel_k1e', 'tf.math.special.bessel_k1e(g)',
     [[2.731009, 1.033477], [], [1.243166, 4.811276, 0.8065635]]),
    ('special.bessel_y0', 'tf.math.special.bessel_y0(g)',
     [[-0.4445187, 0.5103757], [], [0.3824489, -0.931573, 0.37685]]),
    ('special.bessel_y1', 'tf.math.special.bessel_y1(g)',
     [[-1.471472, -0.1070324], [], [-0.4123086, -2.704105, 0.3246744]]),
    ('special.dawsn', 'tf.math.special.dawsn(g)',
     [[0.4244364, 0.3013404], [], [0.4282491, 0.2398392, 0.178271]]),
    ('special.expint', 'tf.math.special.expint(g)',
     [[0.4542198, 4.954234], [], [3.301286, -0.5425433, 9.933833]]),
    ('special.fresnel_cos', 'tf.math.special.fresnel_cos(g)',
     [[0.4923442, 0.4882534], [], [0.4452612, 0.2497591, 0.6057208]]),
    ('special.fresnel_sin', 'tf.math.special.fresnel_sin(g)',
     [[0.06473242, 0.3434157], [], [0.6975049, 0.008175599, 0.496313]]),
    ('special.spence', 'tf.math.special.spence(g)',
     [[0.5822403, -0.8224669], [], [-0.4484142, 0.9784694, -1.436746]]),
]

OTHERS = [
    ('bitcast', 'tf.bitcast(r, tf.float32)',
     [[1.401298e-45, 2.802597e-45], [], [4.203895e-45, 5.605194e-45, 7.006492e-45]]),
    ('clip_by_value', 'tf.clip_by_value(f, -1.0, 3.0)', [[1.0, -1.0], [], [3.0, 3.0, -0.5]]),
    ('check_numerics', "tf.debugging.check_numerics(f, 'bad')",
     [[1.0, -2.0], [], [3.5, 4.0, -0.5]]),
    ('check_numerics_top', "tf.check_numerics(f, 'bad')", [[1.0, -2.0], [], [3.5, 4.0, -0.5]]),
    ('complex', 'tf.math.imag(tf.dtypes.complex(f, g))', [[0.5, 2.0], [], [1.5, 0.25, 3.0]]),
    ('complex_top', 'tf.real(tf.complex(f, g))', [[1.0, -2.0], [], [3.5, 4.0, -0.5]]),
    ('saturate_cast', 'tf.dtypes.saturate_cast(f * 100.0, tf.int8)',
     [[100, -128], [], [127, 127, -50]]),
    ('adjust_brightness', 'tf.image.adjust_brightness(img, 0.1)',
     [[[[[0.1], [0.225]], [[0.35], [0.475]]]], [[[[0.6], [0.725]], [[0.85], [0.975]]]]]),
    ('adjust_gamma', 'tf.image.adjust_gamma(img, 2.0)',
     [[[[[0.0], [0.015625]], [[0.0625], [0.140625]]]],
      [[[[0.25], [0.390625]], [[0.5625], [0.765625]]]]]),
    ('convert_image_dtype', 'tf.image.convert_image_dtype(img, tf.uint8)',
     [[[[[0], [31]], [[63], [95]]]], [[[[127], [159]], [[191], [223]]]]]),
    ('random_brightness', 'tf.image.random_brightness(img, 0.0)',
     [[[[[0.0], [0.125]], [[0.25], [0.375]]]], [[[[0.5], [0.625]], [[0.75], [0.875]]]]]),
    ('decode_base64', 'tf.io.decode_base64(tf.io.encode_base64(s))',
     [[b'a', b'Bc'], [], [b' De ', b'1', b'2.5']]),
    ('encode_base64', 'tf.io.encode_base64(s)',
     [[b'YQ', b'QmM'], [], [b'IERlIA', b'MQ', b'Mi41']]),
    ('encode_base64_top', 'tf.encode_base64(s)',
     [[b'YQ', b'QmM'], [], [b'IERlIA', b'MQ', b'Mi41']]),
    ('decode_compressed', 'tf.io.decode_compressed(s)',
     [[b'a', b'Bc'], [], [b' De ', b'1', b'2.5']]),
    ('angle', 'tf.math.angle(cx)', [[1.107149, -0.3217506], [], [1.570796]]),
    ('conj', 'tf.math.imag(tf.math.conj(cx))', [[-2.0, 1.0], [], [-2.0]]),
    ('real', 'tf.math.real(cx)', [[1.0, 3.0], [], [0.0]]),
    ('imag', 'tf.math.imag(cx)', [[2.0, -1.0], [], [2.0]]),
    ('real_top', 'tf.real(cx)', [[1.0, 3.0], [], [0.0]]),
    ('scalar_mul', 'tf.math.scalar_mul(2.0, f)', [[2.0, -4.0], [], [7.0, 8.0, -1.0]]),
    ('scalar_mul_top', 'tf.scalar_mul(2, r)', [[2, 4], [], [6, 8, 10]]),
    ('dropout', 'tf.nn.dropout(f, rate=0.0)', [[1.0, -2.0], [], [3.5, 4.0, -0.5]]),
    ('dropout_keep', 'tf.nn.dropout(f, keep_prob=1.0)', [[1.0, -2.0], [], [3.5, 4.0, -0.5]]),
    ('elu', 'tf.nn.elu(f)', [[1.0, -0.8646647], [], [3.5, 4.0, -0.3934693]]),
    ('leaky_relu', 'tf.nn.leaky_relu(f)', [[1.0, -0.4], [], [3.5, 4.0, -0.1]]),
    ('relu6', 'tf.nn.relu6(f * 3.0)', [[3.0, 0.0], [], [6.0, 6.0, 0.0]]),
    ('relu', 'tf.nn.relu(f)', [[1.0, 0.0], [], [3.5, 4.0, 0.0]]),
    ('selu', 'tf.nn.selu(f)', [[1.050701, -1.520167], [], [3.677454, 4.202804, -0.6917582]]),
    ('silu', 'tf.nn.silu(f)', [[0.7310586, -0.2384058], [], [3.397407, 3.928055, -0.1887703]]),
    ('softsign', 'tf.nn.softsign(f)', [[0.5, -0.6666667], [], [0.7777778, 0.8, -0.3333333]]),
    ('softmax', 'tf.nn.softmax(f)', 'TypeError'),
    ('sigmoid_nn', 'tf.nn.sigmoid(f)',
     [[0.7310586, 0.1192029], [], [0.9706877, 0.9820138, 0.3775407]]),
    ('tanh_nn', 'tf.nn.tanh(f)',
     [[0.7615942, -0.9640276], [], [0.9981779, 0.9993293, -0.4621171]]),
    ('ones_like', 'tf.ones_like(r)', [[1, 1], [], [1, 1, 1]]),
    ('zeros_like', 'tf.zeros_like(r, dtype=tf.float32)', [[0.0, 0.0], [], [0.0, 0.0, 0.0]]),
    ('shape', 'tf.shape(r)', 'TypeError'),
    ('shape3', 'tf.shape(r3)', 'TypeError'),
    ('shape_i', 'tf.shape(ri)', 'TypeError'),
    ('as_string', 'tf.strings.as_string(r)', [[b'1', b'2'], [], [b'3', b'4', b'5']]),
    ('length', 'tf.strings.length(s)', [[1, 2], [], [4, 1, 3]]),
    ('lower', 'tf.strings.lower(s)', [[b'a', b'bc'], [], [b' de ', b'1', b'2.5']]),
    ('regex_full_match', "tf.strings.regex_full_match(s, '[a-z]+')",
     [[True, False], [], [False, False, False]]),
    ('regex_replace', "tf.strings.regex_replace(s, 'e', 'E')",
     [[b'a', b'Bc'], [], [b' DE ', b'1', b'2.5']]),
    ('strip', 'tf.strings.strip(s)', [[b'a', b'Bc'], [], [b'De', b'1', b'2.5']]),
    ('substr', 'tf.strings.substr(s, 0, 1)', [[b'a', b'B'], [], [b' ', b'1', b'2']]),
    ('substr_top', 'tf.substr(s, 0, 1)', [[b'a', b'B'], [], [b' ', b'1', b'2']]),
    ('to_hash_bucket_fast', 'tf.strings.to_hash_bucket_fast(s, 10)', [[9, 0], [], [5, 9, 5]]),
    ('to_hash_bucket_strong', 'tf.strings.to_hash_bucket_strong(s, 10, [1, 2])',
     [[6, 9], [], [3, 4, 6]]),
    ('to_hash_bucket', 'tf.strings.to_hash_bucket(s, 10)', [[8, 1], [], [3, 3, 2]]),
    ('string_to_hash_bucket', 'tf.string_to_hash_bucket(s, 10)', [[8, 1], [], [3, 3, 2]]),
    ('unicode_script', 'tf.strings.unicode_script(r)', [[0, 0], [], [0, 0, 0]]),
    ('unicode_transcode', "tf.strings.unicode_transcode(s, 'UTF-8', 'UTF-16-BE')",
     [[b'\x00a', b'\x00B\x00c'], [], [b'\x00 \x00D\x00e\x00 ', b'\x001', b'\x002\x00.\x005']]),
    ('upper', 'tf.strings.upper(s)', [[b'A', b'BC'], [], [b' DE ', b'1', b'2.5']]),
    ('to_bfloat16', 'tf.cast(tf.to_bfloat16(f), tf.float32)', [[1.0, -2.0], [], [3.5, 4.0, -0.5]]),
    ('to_complex128', 'tf.real(tf.to_complex128(f))', [[1.0, -2.0], [], [3.5, 4.0, -0.5]]),
    ('to_complex64', 'tf.real(tf.to_complex64(f))', [[1.0, -2.0], [], [3.5, 4.0, -0.5]]),
    ('to_double', 'tf.to_double(f)', [[1.0, -2.0], [], [3.5, 4.0, -0.5]]),
    ('to_float', 'tf.to_float(r)', [[1.0, 2.0], [], [3.0, 4.0, 5.0]]),
    ('to_int32', 'tf.to_int32(f)', [[1, -2], [], [3, 4, 0]]),
    ('to_int64', 'tf.to_int64(r)', [[1, 2], [], [3, 4, 5]]),
    ('zeros_like2', 'tf.zeros_like(r)', [[0, 0], [], [0, 0, 0]]),
    ('relu_r3', 'tf.nn.relu(f3 - 3.0)', [[[0.0, 0.0], [0.0]], [], [[1.0], [2.0, 3.0, 4.0]]]),
    ('elu_ri', 'tf.nn.elu(tf.cast(ri, tf.float32) - 4.0)',
     [[[-0.950213, -0.8646647]], [[-0.6321205, 0.0], [1.0, 2.0]]]),
    ('dropout_noise', 'tf.nn.dropout(f, rate=0.5, noise_shape=[5])', 'ValueError'),
    ('dropout_half', 'tf.size(tf.nn.dropout(f, rate=0.5, seed=1))', 5),
    ('leaky_relu_alpha', 'tf.nn.leaky_relu(f, alpha=0.5)', [[1.0, -1.0], [], [3.5, 4.0, -0.25]]),
    ('bitcast_i8', 'tf.bitcast(r, tf.int8)',
     [[[1, 0, 0, 0], [2, 0, 0, 0]], [], [[3, 0, 0, 0], [4, 0, 0, 0], [5, 0, 0, 0]]]),
    ('bitcast_f16_err', 'tf.bitcast(f, tf.int64)', 'ValueError'),
    ('xlogy_both_dense', 'tf.math.xlogy(g, tf.constant([1.0, 2.0, 3.0, 4.0, 5.0]))',
     'InvalidArgumentError'),
    ('divide_no_nan_zero', 'tf.math.divide_no_nan(f, f * 0.0)', [[0.0, 0.0], [], [0.0, 0.0, 0.0]]),
    ('truncatediv_rr', 'tf.truncatediv(r3 * 7, r3)', [[[7, 7], [7]], [], [[7], [7, 7, 7]]]),
    ('nextafter_rr', 'tf.math.nextafter(g, g)', 'TypeError'),
    ('check_numerics_bad', "tf.debugging.check_numerics(f / 0.0, 'bad')", 'InvalidArgumentError'),
    ('encode_base64_pad', 'tf.io.encode_base64(s, pad=True)',
     [[b'YQ==', b'QmM='], [], [b'IERlIA==', b'MQ==', b'Mi41']]),
    ('adjust_gamma_neg', 'tf.image.adjust_gamma(img, -1.0)', 'ValueError'),
    ('real_dense_imag', 'tf.math.imag(tf.dtypes.complex(f, 2.0))',
     [[2.0, 2.0], [], [2.0, 2.0, 2.0]]),
    ('bitwise_rr', 'tf.bitwise.bitwise_and(r3, r3 + 1)', [[[0, 2], [0]], [], [[4], [4, 6, 0]]]),
    ('scalar_mul_err', 'tf.math.scalar_mul(f, f)', 'ValueError'),
]


@pytest.mark.parametrize("name,expr,expected", MATH, ids=[c[0] for c in MATH])
def test_math(name, expr, expected):
    answer = ragged_cases.evaluate(tf, SETUP, [(name, expr)])[name]
    ragged_cases.check(answer, expected, name)


@pytest.mark.oracle
def test_math_against_tensorflow():
    ragged_cases.check_against_tensorflow(tf, SETUP, MATH)


@pytest.mark.parametrize("name,expr,expected", OTHERS, ids=[c[0] for c in OTHERS])
def test_others(name, expr, expected):
    answer = ragged_cases.evaluate(tf, SETUP, [(name, expr)])[name]
    ragged_cases.check(answer, expected, name)


@pytest.mark.oracle
def test_others_against_tensorflow():
    ragged_cases.check_against_tensorflow(tf, SETUP, OTHERS)


def test_namespaces_share_one_wrapper():
    assert tf.nn.softplus is tf.math.softplus
    assert tf.debugging.check_numerics is tf.check_numerics
    assert tf.bitwise.invert._ragged_dispatch
    assert not getattr(tf.sparse.reduce_sum, "_ragged_dispatch", False)  # another function


# tf.nn's activations on a ragged_rank-1 float64 RaggedTensor: their gradient flows
# through the flat values (checked by finite differences).
ACTIVATIONS = [tf.nn.relu, tf.nn.relu6, tf.nn.elu, tf.nn.selu, tf.nn.leaky_relu,
               tf.nn.softsign, tf.nn.softplus, tf.nn.silu, tf.math.log_sigmoid,
               tf.math.asinh, tf.math.xlogy, tf.math.divide_no_nan]


@pytest.mark.parametrize("fn", ACTIVATIONS, ids=[f.__name__ for f in ACTIVATIONS])
def test_gradients_match_finite_differences(fn):
    xv = np.array([0.3, -0.9, 1.2, -0.4, 0.7, 2.6, 7.1])
    with tf.Graph().as_default():
        x = tf.constant(xv)
        rt = tf.RaggedTensor.from_row_splits(x, [0, 2, 2, 5, 7])
        y = fn(rt, rt * rt + 1.0) if fn in (tf.math.xlogy, tf.math.divide_no_nan) else fn(rt)
        assert isinstance(y, tf.RaggedTensor)
        loss = tf.reduce_sum(y * y)
        with tf.Session():
            err = tf.test.compute_gradient_error(x, [7], loss, [], x_init_value=xv)
    assert err < 1e-4, fn.__name__
