"""Math ops (tensorflux/ops/math_ops.py: binary arithmetic, AddN, Cast, complex parts, bitwise):
values against NumPy (table-driven, every listed dtype, known and unknown shapes, every
executor), gradients against finite differences (float32 and float64), TensorFlow's errors,
and a batch of results compared with TensorFlow itself."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tensorflux as tf
from tensorflux.ops import math_ops
from tests import oracle
from tests.op_test_util import OpCase, positive
from tests.ops.math_cases import (
    BCAST,
    BCAST3,
    BF16,
    F32_64,
    FLOATS,
    INTS,
    NUMERIC,
    distinct,
    in_f64,
    nonzero,
    np_floordiv,
    np_truediv,
    np_truncdiv,
    run,
    same,
    table_tests,
)

# The kernels give NaN/inf for 0/0, log(0), NaN casts as TensorFlow does; NumPy's warnings
# about them are silenced in the kernel module (pytest's own warning filters replace that).
# Each test runs on a fresh default graph (tests/ops/conftest.py).
pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning:tensorflux.kernels.cpu"),
              pytest.mark.usefixtures("fresh_graph")]

# (case, dtypes to check values for; gradients are checked for float32/float64 when
# case.grad is set).
CASES: list[tuple[OpCase, list]] = [
    (OpCase("add", tf.add, in_f64(np.add), BCAST), NUMERIC),
    (OpCase("add_op", lambda x, y: x + y, in_f64(np.add), BCAST3), [np.float32, np.int32]),
    (OpCase("radd_python", lambda x: 2 + x, lambda x: (2 + x).astype(x.dtype), [(3,)]),
     [np.float32, np.int64]),
    (OpCase("subtract", tf.subtract, in_f64(np.subtract), BCAST), NUMERIC),
    (OpCase("sub_op", lambda x, y: x - y, in_f64(np.subtract), BCAST3), [np.float64]),
    (OpCase("rsub_python", lambda x: 1.5 - x, lambda x: (1.5 - x).astype(x.dtype), [(3,)]),
     F32_64),
    (OpCase("multiply", tf.multiply, in_f64(np.multiply), BCAST), NUMERIC),
    (OpCase("mul_op", lambda x, y: x * y, in_f64(np.multiply), BCAST3), [np.float32]),
    (OpCase("realdiv", tf.realdiv, in_f64(np.true_divide), BCAST, make=nonzero),
     [np.float16, BF16, np.float32, np.float64, np.complex64]),
    (OpCase("truediv_op", lambda x, y: x / y, np_truediv, BCAST, make=nonzero),
     [np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8]),
    (OpCase("rtruediv_python", lambda x: 1.0 / x, lambda x: (1.0 / x).astype(x.dtype), [(3,)],
            make=nonzero), F32_64),
    (OpCase("div_tf1", tf.div, lambda x, y: np_floordiv(x, y) if x.dtype.kind in "iu"
            else np.true_divide(x, y), BCAST, make=nonzero), [np.float32, np.int32]),
    (OpCase("floordiv", tf.floordiv, np_floordiv, BCAST, make=nonzero, grad=False),
     [np.float32, np.float64, np.int8, np.int32, np.int64, np.uint8]),
    (OpCase("floordiv_op", lambda x, y: x // y, np_floordiv, BCAST, make=nonzero,
            grad=False), [np.int32]),
    (OpCase("floormod", tf.floormod, same(np.remainder), BCAST, make=nonzero),
     [np.float32, np.float64, np.int32, np.int64, np.uint8]),
    (OpCase("mod_op", lambda x, y: x % y, same(np.remainder), BCAST, make=nonzero,
            grad=False), [np.int32]),
    (OpCase("truncatediv", tf.truncatediv, np_truncdiv, BCAST, make=nonzero, grad=False),
     [np.float32, np.int32, np.int64, np.uint8]),
    (OpCase("truncatemod", tf.truncatemod, same(np.fmod), BCAST, make=nonzero),
     [np.float32, np.float64, np.int32, np.int64]),
    (OpCase("pow", tf.pow, in_f64(np.power), BCAST, make=positive),
     [np.float16, np.float32, np.float64, np.complex64]),
    (OpCase("pow_int", lambda x, y: x ** y, same(np.power), [(2, 3), (3,)], grad=False,
            make=lambda rng, s, d: rng.integers(0, 4, size=s).astype(d)), INTS),
    (OpCase("maximum", tf.maximum, same(np.maximum), BCAST, make=distinct),
     [np.float16, BF16, np.float32, np.float64, np.int32, np.int64, np.uint8]),
    (OpCase("minimum", tf.minimum, same(np.minimum), BCAST, make=distinct),
     [np.float16, BF16, np.float32, np.float64, np.int32, np.int64]),
    (OpCase("squared_difference", tf.squared_difference,
            in_f64(lambda x, y: (x - y) * np.conj(x - y)), BCAST),
     [np.float32, np.float64, np.int32, np.complex64]),
    (OpCase("div_no_nan", tf.div_no_nan,
            in_f64(lambda x, y: np.where(y == 0, 0, x / np.where(y == 0, 1, y))), BCAST,
            make=lambda rng, s, d: np.where(rng.random(s) < 0.3, 0,
                                            nonzero(rng, s, d)).astype(d), grad_inputs=[0]),
     [np.float32, np.float64]),
    (OpCase("atan2", tf.atan2, in_f64(np.arctan2), BCAST, make=nonzero), FLOATS),
    (OpCase("scalar_mul", lambda x: tf.scalar_mul(2.5, x), same(lambda x: 2.5 * x),
            [(2, 3)]), F32_64),
    (OpCase("add_legacy", lambda x, y: math_ops.apply_op("Add", x=x, y=y), np.add, BCAST),
     F32_64),
    (OpCase("div_legacy", lambda x, y: math_ops.apply_op("Div", x=x, y=y),
            lambda x, y: np_truncdiv(x, y) if x.dtype.kind in "iu" else x / y, BCAST,
            make=nonzero), [np.float32, np.float64, np.int32]),
    (OpCase("div_no_nan_y", tf.div_no_nan, np.true_divide, BCAST, make=nonzero), F32_64),
    (OpCase("xlogy", lambda x, y: math_ops.apply_op("Xlogy", x=x, y=y),
            lambda x, y: x * np.log(y), BCAST, make=positive), F32_64),
    (OpCase("xdivy", lambda x, y: math_ops.apply_op("Xdivy", x=x, y=y),
            lambda x, y: x / y, BCAST, make=positive), F32_64),
    (OpCase("real", tf.real, np.real, [(2, 3)], grad=False), [np.complex64, np.complex128]),
    (OpCase("imag", tf.imag, np.imag, [(2, 3)], grad=False), [np.complex64, np.complex128]),
    (OpCase("conj", tf.conj, np.conj, [(2, 3)], grad=False), [np.complex64]),
    (OpCase("angle", tf.angle, np.angle, [(2, 3)], grad=False), [np.complex128]),
    (OpCase("complex", tf.complex, lambda x, y: (x + 1j * y).astype(
        np.complex64 if x.dtype == np.float32 else np.complex128), BCAST, grad=False),
     F32_64),
    (OpCase("add_n", lambda x, y, z: tf.add_n([x, y, z]), in_f64(lambda x, y, z: x + y + z),
            [(2, 3)] * 3), [np.float16, BF16, np.float32, np.float64, np.int32]),
    (OpCase("add_n_one", lambda x: tf.add_n([x], name="one"), lambda x: x, [(2,)]),
     F32_64),
    (OpCase("cast_to_f32", lambda x: tf.cast(x, tf.float32),
            lambda x: x.real.astype(np.float32), [(2, 3)], grad_tol=1e-2),
     [np.float16, BF16, np.float64, np.int32, np.uint8, np.complex64]),
    (OpCase("cast_to_int", lambda x: tf.cast(x, tf.int32), lambda x: x.astype(np.int32),
            [(2, 3)], make=lambda rng, s, d: (rng.standard_normal(s) * 5).astype(d),
            grad=False), [np.float32, np.float64, np.int64, np.bool_]),
    (OpCase("cast_to_bool", lambda x: tf.cast(x, tf.bool), lambda x: x.astype(bool),
            [(5,)], make=lambda rng, s, d: np.array([0, 1, -2, 0, 3], d), grad=False),
     [np.float32, np.int32]),
    (OpCase("to_double", tf.to_double, lambda x: x.astype(np.float64), [(3,)]),
     [np.float32, np.int32]),
    (OpCase("and_or_xor_invert_int", lambda x, y: [x & y, x | y, x ^ y, ~x],
            lambda x, y: [x & y, x | y, x ^ y, ~x], [(2, 3)] * 2, grad=False), INTS),
]

test_value, test_gradient, test_kernel_dtypes_are_exact = table_tests(CASES)



def test_integer_division_semantics():
    a = tf.constant([7, -7, 7, -7])
    b = tf.constant([2, 2, -2, -2])
    got = run([a // b, a % b, tf.truncatediv(a, b), tf.truncatemod(a, b), tf.div(a, b),
               a / b])
    np.testing.assert_array_equal(got[0], [3, -4, -4, 3])
    np.testing.assert_array_equal(got[1], [1, 1, -1, -1])
    np.testing.assert_array_equal(got[2], [3, -3, -3, 3])
    np.testing.assert_array_equal(got[3], [1, -1, 1, -1])
    np.testing.assert_array_equal(got[4], [3, -4, -4, 3])
    assert got[5].dtype == np.float64
    np.testing.assert_array_equal(got[5], [3.5, -3.5, -3.5, 3.5])
    x = tf.constant([-7.5, 7.5, 1.0])
    y = tf.constant([2.0, -2.0, 0.1])
    np.testing.assert_allclose(run(tf.floordiv(x, y)), [-4.0, -4.0, 10.0])
    np.testing.assert_allclose(run(tf.floormod(x[:2], y[:2])), [0.5, -0.5])


def test_integer_division_by_zero_is_an_error_naming_the_node():
    p = tf.placeholder(tf.int32)
    q = tf.floordiv(p, p, name="my_div")
    ok = p + 1
    with tf.Session() as sess:
        for op in (q, tf.floormod(p, p), tf.div(p, p)):
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="Integer division by zero") as info:
                sess.run(op, {p: [3, 0]})
            assert op.op.name in str(info.value)
        # TF 2.21's TruncateDiv and TruncateMod report it as an InternalError.
        for op in (tf.truncatediv(p, p), tf.truncatemod(p, p)):
            with pytest.raises(tf.errors.InternalError,
                               match="only integer div and mod should have errors") as info:
                sess.run(op, {p: [3, 0]})
            assert op.op.name in str(info.value)
        assert "my_div" in str(pytest.raises(tf.errors.InvalidArgumentError, sess.run, q,
                                             {p: [0]}).value)
        assert sess.run(ok, {p: [1]}) == [2]  # the session still works
    np.testing.assert_array_equal(run(tf.floordiv(1.0, 0.0)), np.inf)


def test_pow_integer_negative_exponent():
    p = tf.placeholder(tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="negative integer powers"):
        run(tf.pow(p, p), {p: [2, -1]})
    np.testing.assert_array_equal(run(tf.pow(tf.constant([0, 2, -2]), [0, 0, 3])), [1, 1, -8])


def test_nan_propagates_through_maximum_and_minimum():
    x = tf.constant([np.nan, 1.0])
    y = tf.constant([1.0, np.nan])
    mx, mn, rmax = run([tf.maximum(x, y), tf.minimum(x, y), tf.reduce_max(x)])
    assert np.isnan(mx).all() and np.isnan(mn).all() and np.isnan(rmax)


def test_cast_semantics():
    f = tf.constant([np.nan, 1e10, -1e10, 2.7, -2.7])
    np.testing.assert_array_equal(run(tf.cast(f, tf.int32)),
                                  [-2**31, -2**31, -2**31, 2, -2])
    np.testing.assert_array_equal(run(tf.cast(tf.constant([0.0, 0.5, np.nan]), tf.bool)),
                                  [False, True, True])
    np.testing.assert_array_equal(run(tf.cast(tf.constant([300, -129]), tf.int8)), [44, 127])
    np.testing.assert_array_equal(run(tf.cast(tf.constant([1 + 2j]), tf.float32)), [1.0])
    x = tf.constant([1.0])
    assert tf.cast(x, tf.float32) is x
    assert tf.to_float(tf.constant([1])).op.name == "ToFloat"
    assert tf.cast(tf.constant(1), tf.float32).op.type == "Cast"
    b = tf.cast(tf.constant([1.00390625 + 2**-10], tf.float32), tf.bfloat16)
    assert run(b).dtype == ml_dtypes.bfloat16


def test_cast_string_is_unimplemented_at_run_time():
    s = tf.cast(tf.constant(["1"]), tf.int32)
    t = tf.cast(tf.constant([1]), tf.string)
    with pytest.raises(tf.errors.UnimplementedError, match="Cast string to int32 is not"):
        run(s)
    with pytest.raises(tf.errors.UnimplementedError, match="Cast int32 to string is not"):
        run(t)


def test_string_add_concatenates():
    a = tf.constant(["ab", "c"])
    out = a + tf.constant(["x", "yz"])
    assert out.op.type == "Add"
    assert list(run(out)) == [b"abx", b"cyz"]
    assert tf.add(tf.constant("p"), "q").op.type == "Add"
    assert list(run(tf.equal(a, "c"))) == [False, True]


def test_constant_evaluation_for_shapes():
    a = tf.constant([2, 3])
    assert tf._constant_value(a * 2 + 1).tolist() == [5, 7]
    assert tf._constant_value(tf.maximum(a, 3) - 1).tolist() == [2, 2]
    assert tf._constant_value(a // 2).tolist() == [1, 1]
    assert tf._constant_value(tf.reduce_prod(a)) == 6
    assert tf._constant_value(tf.reduce_sum(a, keepdims=True)).tolist() == [5]
    assert tf._constant_value(tf.cast(a, tf.int64)).dtype == np.int64
    assert tf._constant_value(a // tf.constant([0, 1])) is None  # an error at run time
    assert tf._constant_value(a + tf.placeholder(tf.int32)) is None


def test_mismatched_dtypes_are_type_errors_naming_the_argument():
    i = tf.constant([1])
    f = tf.constant([1.0])
    with pytest.raises(TypeError, match="Input 'y' of 'AddV2' Op has type float32 that does "
                                        "not match"):
        tf.add(i, f)
    with pytest.raises(TypeError, match="'y' of 'Mul' Op has type float32"):
        tf.multiply(i, f)
    with pytest.raises(TypeError, match="Input 'y' of 'AddV2' Op has type float32"):
        i + f
    with pytest.raises(TypeError, match="Input 'y' of 'Sub' Op has type float32"):
        f.__rsub__(i)
    with pytest.raises(TypeError):
        i + 1.5
    with pytest.raises(TypeError, match="`x` and `y` must have the same dtype"):
        tf.truediv(i, f)
    with pytest.raises(TypeError, match="Input 'b' of 'MatMul' Op has type int32"):
        tf.matmul(tf.constant([[1.0]]), tf.constant([[1]]))
    with pytest.raises(TypeError, match="not in list of allowed values"):
        tf.sqrt(tf.constant([4]))
    with pytest.raises(TypeError, match="Invalid dtype tf.bool in __truediv__"):
        tf.constant([True]) / tf.constant([True])


def test_incompatible_static_shapes_are_value_errors():
    with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 2 and 3 for "
                                         r"'\{\{node Add\}\} = AddV2"):
        tf.add(tf.ones([2]) if hasattr(tf, "ones") else tf.constant([1.0, 1.0]),
               tf.constant([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 2"):
        tf.matmul(tf.constant(np.ones((2, 3))), tf.constant(np.ones((2, 3))))
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
        tf.equal(tf.constant([1, 2]), tf.constant([1, 2, 3]))
    with pytest.raises(ValueError, match="Dimension 0 in both shapes must be equal, but are "
                                         "3 and 2"):
        tf.where(tf.constant([True, False, True]), tf.constant(np.ones((2, 3))),
                 tf.constant(np.zeros((2, 3))))
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
        tf.matrix_inverse(tf.constant(np.zeros((2, 3))))
    with pytest.raises(ValueError):
        tf.add_n([tf.constant([1.0, 2.0]), tf.constant([1.0, 2.0, 3.0])])


def test_broadcasting_with_unknown_dimensions():
    a = tf.placeholder(tf.float32, [None, 3])
    b = tf.placeholder(tf.float32, [4, 1])
    c = tf.placeholder(tf.float32, [None, 1, None])
    assert (a + b).shape.as_list() == [4, 3]
    assert (a * c).shape.as_list() == [None, None, 3]
    assert tf.maximum(a, 1.0).shape.as_list() == [None, 3]
    assert tf.equal(a, tf.placeholder(tf.float32)).shape.ndims is None
    assert tf.where_v2(tf.placeholder(tf.bool, [None, 1]), a, 0.0).shape.as_list() == [None, 3]
    assert tf.matmul(tf.placeholder(tf.float32, [None, 2, 3]),
                     tf.placeholder(tf.float32, [5, 1, 3, 4])).shape.as_list() == \
        [5, None, 2, 4]
    av = np.arange(6, dtype=np.float32).reshape(2, 3)
    cv = np.ones((5, 1, 3), np.float32)
    got = run([a * c, a + 1.0], {a: av, c: cv})
    np.testing.assert_array_equal(got[0], av * cv)
    assert got[0].shape == (5, 2, 3)


def test_runtime_shape_errors_name_the_node_and_session_survives():
    p = tf.placeholder(tf.float32, [None])
    q = tf.placeholder(tf.float32, [None])
    s = tf.add(p, q, name="sum_pq")
    m = tf.placeholder(tf.float32, [None, None])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Incompatible shapes: \[3\] vs. \[2\]") as info:
            sess.run(s, {p: [1, 2, 3], q: [1, 2]})
        assert "sum_pq" in str(info.value)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Incompatible shapes"):
            sess.run(tf.equal(p, q), {p: [1, 2, 3], q: [1, 2]})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Matrix size-incompatible: In\[0\]: \[2,3\], In\[1\]: "
                                 r"\[2,3\]"):
            sess.run(tf.matmul(m, m), {m: np.ones((2, 3))})
        with pytest.raises(tf.errors.InvalidArgumentError, match="must have the same size and "
                                                                 "shape"):
            sess.run(tf.add_n([p, q]), {p: [1, 2, 3], q: [1, 2]})
        np.testing.assert_array_equal(sess.run(s, {p: [1], q: [2]}), [3])
    ne = math_ops.apply_op("NotEqual", x=p, y=q, incompatible_shape_error=False)
    assert run(ne, {p: [1, 2, 3], q: [1, 2]}) == np.True_


def test_operator_names_follow_tensorflow():
    x = tf.constant(1.0)
    i = tf.constant(1)
    b = tf.constant(True)
    s = x + 1
    assert s.op.name == "add" and s.op.inputs[1].op.name == "add/y"
    r = 2 - x
    assert r.op.name == "sub" and r.op.inputs[0].op.name == "sub/x"
    assert (x * x).op.name == "mul"
    assert (i / i).op.name == "truediv" and (i / i).op.type == "RealDiv"
    assert (i // i).op.name == "floordiv"
    assert (i % i).op.name == "mod" and (i % i).op.type == "FloorMod"
    assert (x ** 2).op.name == "pow"
    assert (-x).op.type == "Neg" and abs(x).op.type == "Abs"
    assert (x < 2).op.type == "Less" and (x >= 2).op.type == "GreaterEqual"
    c = b & b
    assert c.op.type == "LogicalAnd" and c.op.name == "and"
    assert (~b).op.type == "LogicalNot" and (i & i).op.type == "BitwiseAnd"
    s = tf.add(x, x)
    assert s.op.name == "Add_1" and s.op.type == "AddV2"  # names are case-insensitive
    d = tf.div(1.0, 2.0)
    assert d.op.name == "div" and d.op.type == "RealDiv"
    assert tf.abs(tf.constant([1j])).op.type == "ComplexAbs"
    assert tf.matmul(tf.ones([3, 2, 2]) if hasattr(tf, "ones") else
                     tf.constant(np.ones((3, 2, 2))), np.ones((2, 2))).op.type == \
        "BatchMatMulV2"
    assert (x == x) is True  # TF1: == is identity
    assert x in {x: 1}


def test_add_n_single_input_is_returned():
    x = tf.constant([1.0])
    assert tf.add_n([x]) is x
    with pytest.raises(ValueError, match="Inputs must be an iterable"):
        tf.add_n([])


def test_scalar_mul_needs_a_scalar():
    with pytest.raises(ValueError, match="The input scalar must be a 0-D value"):
        tf.scalar_mul(tf.constant([1.0, 2.0]), tf.constant([1.0, 2.0]))


def test_gradients_of_broadcasting_ops_sum_back():
    x = tf.placeholder(tf.float32, [2, 3])
    y = tf.placeholder(tf.float32, [3])
    gx, gy = tf.gradients(tf.reduce_sum(x * y), [x, y])
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    yv = np.array([1, 2, 3], np.float32)
    got = run([gx, gy], {x: xv, y: yv})
    np.testing.assert_allclose(got[0], np.broadcast_to(yv, (2, 3)))
    np.testing.assert_allclose(got[1], xv.sum(0))


def test_gradients_with_unknown_shapes():
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.placeholder(tf.float32, [None, 1])
    loss = tf.reduce_mean(tf.square(x - y), axis=1)
    gx, gy = tf.gradients(tf.reduce_sum(loss), [x, y])
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    yv = np.array([[1.0], [2.0]], np.float32)
    got = run([gx, gy], {x: xv, y: yv})
    np.testing.assert_allclose(got[0], 2 * (xv - yv) / 3, rtol=1e-6)
    np.testing.assert_allclose(got[1], (-2 * (xv - yv) / 3).sum(1, keepdims=True), rtol=1e-6)


def test_complex_gradients():
    x = tf.placeholder(tf.float64, [3])
    y = tf.placeholder(tf.float64, [3])
    z = tf.complex(x, y)
    xv, yv = np.array([1.0, -2.0, 0.5]), np.array([0.5, 1.5, -3.0])
    r = np.hypot(xv, yv)
    for f, want in ((tf.real(z * tf.conj(z)), (2 * xv, 2 * yv)),
                    (tf.abs(z), (xv / r, yv / r)),
                    (tf.angle(z), (-yv / r ** 2, xv / r ** 2)),
                    (tf.imag(z * z), (2 * yv, 2 * xv))):
        got = run(tf.gradients(tf.reduce_sum(f), [x, y]), {x: xv, y: yv})
        np.testing.assert_allclose(got[0], want[0], rtol=1e-10, err_msg=f.op.type)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-10, err_msg=f.op.type)


def test_integer_paths_have_no_gradient():
    x = tf.placeholder(tf.float32, [2])
    y = tf.cast(tf.cast(x, tf.int32), tf.float32)
    assert tf.gradients(tf.reduce_sum(y), x) == [None]
    assert tf.gradients(tf.reduce_sum(tf.floor(x)), x) == [None]


# ---- the oracle --------------------------------------------------------------------------

ORACLE_SNIPPETS = {
    # name: expression using a (float32 [2,3]), b (float32 [3]), i (int32 [2,3]),
    # j (int32 [3], non-zero)
    "add": "a + b", "sub": "b - a", "mul": "a * b", "truediv": "a / b",
    "int_truediv": "i / j", "floordiv": "i // j", "mod": "i % j",
    "float_floordiv": "a // b", "float_mod": "a % b",
    "truncatediv": "tf.truncatediv(i, j)", "truncatemod": "tf.truncatemod(i, j)",
    "div": "tf.div(i, j)", "pow": "tf.pow(tf.abs(a) + 0.5, b)",
    "maximum": "tf.maximum(a, b)", "minimum": "tf.minimum(i, j)",
    "squared_difference": "tf.squared_difference(a, b)",
    "div_no_nan": "tf.div_no_nan(a, b * tf.cast(tf.abs(b) > 0.5, tf.float32))",
    "atan2": "tf.atan2(a, b)", "neg": "-i", "abs": "tf.abs(a)", "sign": "tf.sign(i)",
    "square": "tf.square(i)", "sqrt": "tf.sqrt(tf.abs(a))", "rsqrt": "tf.rsqrt(tf.abs(a))",
    "exp": "tf.exp(a)", "expm1": "tf.expm1(a)", "log": "tf.log(tf.abs(a))",
    "log1p": "tf.log1p(tf.abs(a))", "sin": "tf.sin(a)", "tan": "tf.tan(a)",
    "tanh": "tf.tanh(a)", "sigmoid": "tf.sigmoid(a * 10)", "reciprocal": "tf.reciprocal(b)",
    "floor": "tf.floor(a * 3)", "ceil": "tf.ceil(a * 3)", "round": "tf.round(a * 4)",
    "rint": "tf.rint(a * 4)", "erf": "tf.erf(a)", "erfc": "tf.erfc(a)",
    "lgamma": "tf.lgamma(tf.abs(a) + 0.1)", "digamma": "tf.digamma(tf.abs(a) + 0.1)",
    "cast_int": "tf.cast(a * 3, tf.int32)", "cast_uint8": "tf.cast(i * 50, tf.uint8)",
    "cast_bf16": "tf.cast(a, tf.bfloat16)", "equal": "tf.equal(i, j)",
    "less": "a < b", "where": "tf.where(a > 0)", "select": "tf.where(a > 0, a, -a)",
    "where_v2": "tf.where_v2(b > 0, a, 0.0)", "add_n": "tf.add_n([a, a, a])",
    "sum": "tf.reduce_sum(a, 1)", "sum_int": "tf.reduce_sum(i, [0, 1])",
    "mean": "tf.reduce_mean(a, 0)", "mean_int": "tf.reduce_mean(i, 1)",
    "max": "tf.reduce_max(a, -1, keepdims=True)", "min": "tf.reduce_min(i)",
    "prod": "tf.reduce_prod(a)", "all": "tf.reduce_all(a > -1, 1)",
    "any": "tf.reduce_any(a > 1, 0)", "logsumexp": "tf.reduce_logsumexp(a, 1)",
    "argmax": "tf.argmax(a, 1)", "argmin": "tf.argmin(i, 0, output_type=tf.int32)",
    "count_nonzero": "tf.count_nonzero(i, 1)",
    "matmul": "tf.matmul(a, a, transpose_b=True)",
    "batch_matmul": "tf.matmul(tf.reshape(a, [2, 1, 3]), tf.reshape(a, [2, 3, 1]))",
    "inverse": "tf.matrix_inverse(tf.matmul(a, a, transpose_b=True) + tf.eye(2))",
    "det": "tf.matrix_determinant(tf.matmul(a, a, transpose_b=True))",
    "cholesky": "tf.cholesky(tf.matmul(a, a, transpose_b=True) + tf.eye(2))",
    "range": "tf.range(1.0, 2.0, 0.3)", "range_int": "tf.range(10, 1, -3)",
    "cumsum": "tf.cumsum(a, 1, exclusive=True, reverse=True)",
    "cumprod": "tf.cumprod(a, 0, exclusive=True)",
    "segment_sum": "tf.unsorted_segment_sum(a, [1, -1], 3)",
}
GRAD_SNIPPETS = {
    # gradient of reduce_sum(expr * w) with respect to a, with w a fixed weight
    "g_mul": "a * b", "g_div": "a / b", "g_pow": "tf.pow(tf.abs(a) + 0.5, b)",
    "g_max": "tf.maximum(a, b)", "g_sqdiff": "tf.squared_difference(a, b)",
    "g_tanh": "tf.tanh(a)", "g_sigmoid": "tf.sigmoid(a)", "g_sqrt": "tf.sqrt(tf.abs(a))",
    "g_erf": "tf.erf(a)", "g_mean": "tf.reduce_mean(a, 1)",
    "g_max_red": "tf.reduce_max(a, 0)", "g_prod": "tf.reduce_prod(a, 1)",
    "g_logsumexp": "tf.reduce_logsumexp(a, 1)", "g_matmul": "tf.matmul(a, a, "
    "transpose_b=True)", "g_cumprod": "tf.cumprod(a, 1, reverse=True)",
    "g_inverse": "tf.matrix_inverse(tf.matmul(a, a, transpose_b=True) + tf.eye(2))",
    "g_cholesky": "tf.cholesky(tf.matmul(a, a, transpose_b=True) + tf.eye(2))",
}

_A = np.array([[0.3, -1.2, 2.1], [-0.7, 1.5, 0.05]], np.float32)
_B = np.array([1.3, -0.4, 0.8], np.float32)
_I = np.array([[7, -7, 3], [-2, 9, 0]], np.int32)
_J = np.array([2, -3, 4], np.int32)

_ORACLE_PROGRAM = """
a = tf.constant(np.array({a}, np.float32))
b = tf.constant(np.array({b}, np.float32))
i = tf.constant(np.array({i}, np.int32))
j = tf.constant(np.array({j}, np.int32))
exprs = {exprs}
grads = {grads}
fetch = {{k: eval(v) for k, v in exprs.items()}}
for k, v in grads.items():
    y = eval(v)
    w = tf.constant(np.linspace(-1, 1, int(np.prod(y.shape.as_list()))).reshape(
        y.shape.as_list()).astype(np.float32))
    fetch[k] = tf.gradients(tf.reduce_sum(y * w), a)[0]
with tf.Session() as s:
    out = s.run(fetch)
result = {{k: np.asarray(v).astype(np.float64).tolist() if np.asarray(v).dtype.kind != "b"
          else np.asarray(v).tolist() for k, v in out.items()}}
result["__dtypes__"] = {{k: str(np.asarray(v).dtype) for k, v in out.items()}}
"""


@pytest.mark.oracle
def test_against_tensorflow():
    """One TensorFlow subprocess computes every snippet; tensorflux must agree."""
    program = _ORACLE_PROGRAM.format(a=_A.tolist(), b=_B.tolist(), i=_I.tolist(),
                                     j=_J.tolist(), exprs=ORACLE_SNIPPETS,
                                     grads=GRAD_SNIPPETS)
    want = oracle.run_tf(program, timeout=120)
    eye = np.eye(2, dtype=np.float32)
    a, b, i, j = (tf.constant(v) for v in (_A, _B, _I, _J))
    env = {"tf": tf, "np": np, "a": a, "b": b, "i": i, "j": j}
    fetch = {}
    for k, v in ORACLE_SNIPPETS.items():
        fetch[k] = eval(v.replace("tf.eye(2)", "eye"), {**env, "eye": eye})
    for k, v in GRAD_SNIPPETS.items():
        y = eval(v.replace("tf.eye(2)", "eye"), {**env, "eye": eye})
        n = int(np.prod(y.shape.as_list()))
        w = np.linspace(-1, 1, n).reshape(y.shape.as_list()).astype(np.float32)
        fetch[k] = tf.gradients(tf.reduce_sum(y * w), a)[0]
    got = run(fetch)
    dtypes_ = want.pop("__dtypes__")
    bad = []
    for k in fetch:
        g = np.asarray(got[k])
        w = np.asarray(want[k])
        tol = 2e-2 if dtypes_[k] == "bfloat16" else 1e-4
        if str(g.dtype) != dtypes_[k]:
            bad.append(f"{k}: dtype {g.dtype} != {dtypes_[k]}")
        elif g.shape != w.shape or not np.allclose(g.astype(np.float64), w, rtol=tol,
                                                   atol=tol, equal_nan=True):
            bad.append(f"{k}: {g.tolist()} != {w.tolist()}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("dtype", F32_64)
@pytest.mark.parametrize("xs, ys", [((6, 5, 4), (4,)), ((4,), (6, 5, 4)), ((6, 5, 4), (1, 1, 4)),
                                    ((6, 5, 4), (5, 4)), ((6, 5, 4), (6, 5, 4)),
                                    ((1, 4), (6, 5, 4)), ((6, 5, 4), (6, 1, 4))])
@pytest.mark.parametrize("op, ref", [(tf.add, np.add), (tf.subtract, np.subtract),
                                     (tf.multiply, np.multiply)])
@pytest.mark.usefixtures("split_everything")
def test_split_binary_arithmetic(dtype, xs, ys, op, ref):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(xs).astype(dtype)
    y = rng.standard_normal(ys).astype(dtype)
    with tf.Session() as s:
        got = s.run(op(x, y))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, ref(x, y))


@pytest.mark.usefixtures("split_everything")
def test_split_binary_on_non_contiguous_inputs():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = tf.transpose(tf.constant(x))
    with tf.Session() as s:
        np.testing.assert_array_equal(s.run(t + np.float32([1, 2, 3, 4])),
                                      x.T + np.float32([1, 2, 3, 4]))


@pytest.mark.parametrize("op", ["Real", "Imag", "Angle", "ComplexAbs"])
def test_complex_parts_need_tout_to_be_the_real_dtype(op):
    from tensorflux.framework.op_def_library import apply_op

    c = np.array([1 + 2j, -3 - 4j], np.complex64)
    c64, c128 = tf.constant(c), tf.constant(c.astype(np.complex128))
    arg = "x" if op == "ComplexAbs" else "input"
    wrong = [apply_op(op, **{arg: c64, "Tout": tf.float64}),
             apply_op(op, **{arg: c128, "Tout": tf.float32})]
    message = ("Signature mismatch, have: complex64->double expected: complex64->float"
               if op == "ComplexAbs" else
               f"No OpKernel was registered to support Op '{op}' with these attrs: "
               "[T=DT_COMPLEX64, Tout=DT_DOUBLE]")
    with tf.Session() as s:
        for t in wrong:
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                s.run(t)
            if t is wrong[0]:
                assert message in str(info.value)
        right = s.run(apply_op(op, **{arg: c128, "Tout": tf.float64}))
    assert right.dtype == np.float64
    want = {"Real": c.real, "Imag": c.imag, "Angle": np.angle(c), "ComplexAbs": np.abs(c)}[op]
    np.testing.assert_allclose(right, want.astype(np.float64), rtol=1e-6)


def test_found_by_the_differential_test():
    # Each of these differed from TF 2.21 (tests/ops/test_differential.py).
    with pytest.raises(ValueError, match="Invalid reduction dimension 0 for input with 0"):
        tf.reduce_sum(tf.constant(1.0), axis=0)
    scalar = tf.placeholder(tf.float32, [])
    assert tf.argmax(scalar, 0).shape.as_list() == []  # the kernel rejects it, not the shape
    x = np.zeros((0,), np.float32)
    ints = tf.placeholder(tf.int64, [1, 3])
    got = run([tf.cumsum(x, exclusive=True, reverse=True), tf.cumprod(x, exclusive=True),
               tf.pow(np.zeros((0, 3), np.int64), ints),
               tf.lgamma(np.array([-np.inf, np.inf], np.float32))], {ints: [[1, -1, 2]]})
    assert got[0].shape == got[1].shape == (0,) and got[2].shape == (0, 3)
    np.testing.assert_array_equal(got[3], [np.inf, np.inf])
    with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError):
        s.run(tf.argmax(scalar, 0), {scalar: 1.0})
