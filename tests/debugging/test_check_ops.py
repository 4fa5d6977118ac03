"""The assertions (tensorflux/debugging/check_ops.py): graph-time checks on constants and
static shapes, run-time Assert ops, and their messages, against TensorFlow."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_both

# One program, run under TensorFlow and under tensorflux: for each case the error class and
# message (the "assertion failed" line of run-time failures), or what the call returned.
PROGRAM = r'''
def outcome(fn):
    try:
        r = fn()
    except (tf.errors.InvalidArgumentError, ValueError, TypeError) as e:
        text = e.message if isinstance(e, tf.errors.OpError) else str(e)
        failed = [l for l in text.split("\n") if l.startswith("assertion failed")]
        return [type(e).__name__, failed[0] if failed else text]
    if r is None or isinstance(r, (np.ndarray, np.generic)):
        return ["ok", None if r is None else r.tolist()]
    if hasattr(r, "type") and hasattr(r, "inputs"):
        return ["op", r.type, r.name]
    if hasattr(r, "dtype") and hasattr(r, "op"):
        return ["tensor", r.name]
    return ["ok", str(r)]

s = tf.Session()
x = tf.placeholder(tf.int32, [None], name="x")
y = tf.placeholder(tf.int32, [None], name="y")
z = tf.placeholder(tf.float32, None, name="z")
c = tf.constant
feed = {x: [1, 2, 3], y: [1, 5, 3]}
run = lambda op, f=feed: (lambda: s.run(op, f))
cases = {}
eq = tf.assert_equal(x, y)
cases["equal_op"] = [eq.type, eq.name]
cases["equal_run"] = outcome(run(eq))
cases["equal_holds"] = outcome(run(eq, {x: [1, 2], y: [1, 2]}))
cases["equal_custom"] = outcome(run(tf.assert_equal(x, y, message="custom", summarize=2,
                                                    data=[x])))
cases["equal_same"] = outcome(lambda: tf.assert_equal(x, x))
cases["less_run"] = outcome(run(tf.assert_less(x, y)))
cases["less_equal_run"] = outcome(run(tf.assert_less_equal(y, x, message="m")))
cases["greater_run"] = outcome(run(tf.assert_greater(x, y)))
cases["greater_equal_run"] = outcome(run(tf.assert_greater_equal(x, y)))
cases["none_equal_run"] = outcome(run(tf.assert_none_equal(x, y)))
cases["positive_run"] = outcome(run(tf.assert_positive(x - 2)))
cases["negative_run"] = outcome(run(tf.assert_negative(x - 2, message="neg")))
cases["non_negative_run"] = outcome(run(tf.assert_non_negative(x - 2)))
cases["non_positive_run"] = outcome(run(tf.assert_non_positive(x - 2)))
cases["near_run"] = outcome(lambda: s.run(tf.assert_near(tf.cast(x, tf.float32),
                                                         tf.cast(y, tf.float32)), feed))
cases["near_holds"] = outcome(lambda: s.run(tf.assert_near(z, z + 1e-7), {z: [1.0]}))
cases["equal_static"] = outcome(lambda: tf.assert_equal(c([1, 2]), c([1, 3])))
cases["equal_static_ok"] = outcome(lambda: tf.assert_equal(c([1, 2]), c([1, 2])))
cases["equal_static_msg"] = outcome(lambda: tf.assert_equal(c([1, 2]), c([1, 3]), message="hey"))
cases["equal_floats"] = outcome(lambda: tf.assert_equal(c([1.5, 2.25, 1e-7]), c([1.5, 2., 3.])))
cases["less_static"] = outcome(lambda: tf.assert_less(c([1, 5]), c([2, 3])))
cases["less_equal_static"] = outcome(lambda: tf.assert_less_equal(c([1, 5]), c([2, 3])))
cases["greater_static"] = outcome(lambda: tf.assert_greater(c([1, 5]), c([2, 3])))
cases["greater_equal_static"] = outcome(lambda: tf.assert_greater_equal(c([1, 5]), 2))
cases["none_equal_static"] = outcome(lambda: tf.assert_none_equal(c([1, 5]), c([1, 3])))
cases["negative_static"] = outcome(lambda: tf.assert_negative(c([1, -5])))
cases["positive_static"] = outcome(lambda: tf.assert_positive(c([1, -5]), message="pos"))
cases["non_negative_static"] = outcome(lambda: tf.assert_non_negative(c([1, -5])))
cases["non_positive_static"] = outcome(lambda: tf.assert_non_positive(c([1, -5])))
cases["near_static"] = outcome(lambda: tf.assert_near(c([1., 5.]), c([1., 3.])).type)
cases["shape_mismatch"] = outcome(lambda: tf.assert_equal(c([1, 2]), c([1, 2, 3])))
cases["rank_static"] = outcome(lambda: tf.assert_rank(c([1, 5]), 2))
cases["rank_static_msg"] = outcome(lambda: tf.assert_rank(c([1, 5]), 2, message="r"))
cases["rank_static_ok"] = outcome(lambda: tf.assert_rank(c([1, 5]), 1))
cases["rank_run"] = outcome(run(tf.assert_rank(z, 2), {z: [1.0]}))
cases["rank_at_least_static"] = outcome(lambda: tf.assert_rank_at_least(c([1, 5]), 2))
cases["rank_at_least_run"] = outcome(run(tf.assert_rank_at_least(z, 2), {z: [1.0]}))
cases["rank_in_static"] = outcome(lambda: tf.assert_rank_in(c([1, 5]), [0, 2]))
cases["rank_in_run"] = outcome(run(tf.assert_rank_in(z, [0, 2]), {z: [1.0]}))
cases["rank_not_scalar"] = outcome(lambda: tf.assert_rank(c([1]), c([1, 2])))
cases["rank_int64"] = outcome(lambda: tf.assert_rank(c([1]), c(1, tf.int64)))
cases["integer"] = outcome(lambda: tf.assert_integer(c([1., 5.])))
cases["integer_ok"] = outcome(lambda: tf.assert_integer(c([1, 5])))
cases["type"] = outcome(lambda: tf.assert_type(c([1., 5.]), tf.int32, message="ty"))
cases["type_ok"] = outcome(lambda: tf.assert_type(c([1., 5.]), tf.float32))
cases["scalar"] = outcome(lambda: tf.assert_scalar(c([1., 5.])))
cases["scalar_ok"] = outcome(lambda: tf.assert_scalar(c(1.)))
cases["iterable_str"] = outcome(lambda: tf.assert_proper_iterable("abc"))
cases["iterable_array"] = outcome(lambda: tf.assert_proper_iterable(np.array([1])))
cases["iterable_int"] = outcome(lambda: tf.assert_proper_iterable(3))
cases["iterable_ok"] = outcome(lambda: tf.assert_proper_iterable([1, 2]))
cases["same_float"] = outcome(lambda: tf.assert_same_float_dtype([c([1.]), c([1], tf.float64)]))
cases["same_float_int"] = outcome(lambda: tf.assert_same_float_dtype([c([1])]))
cases["same_float_ok"] = outcome(lambda: tf.assert_same_float_dtype([c([1.]), None]))
cases["same_float_default"] = outcome(lambda: tf.assert_same_float_dtype(None, tf.float64))
cases["shapes_static"] = outcome(lambda: tf.debugging.assert_shapes(
    [(c([[1, 2]]), ("N", "Q")), (c([1, 2, 3]), ("Q",))]))
cases["shapes_rank"] = outcome(lambda: tf.debugging.assert_shapes([(c([[1]]), (1,))]))
cases["shapes_run"] = outcome(run(tf.debugging.assert_shapes([(x, ("N",)), (y, ("N",))]),
                                  {x: [1], y: [1, 2]}))
cases["shapes_explicit_run"] = outcome(run(tf.debugging.assert_shapes({x: (2,)}),
                                           {x: [1, 2, 3], y: [1]}))
cases["shapes_ok"] = outcome(run(tf.debugging.assert_shapes(
    [(z, (..., "K")), (x, ("K",))]), {z: np.ones([2, 3]), x: [1, 2, 3]}))
cases["monotonic"] = s.run([tf.is_non_decreasing(c([1, 1, 3])), tf.is_non_decreasing(c([3, 1])),
                            tf.is_strictly_increasing(c([1, 1, 3])),
                            tf.is_strictly_increasing(c([[1, 2], [3, 4]])),
                            tf.is_strictly_increasing(c([7]))])
cases["numeric"] = [tf.is_numeric_tensor(c([1])), tf.is_numeric_tensor(c(["a"])),
                    tf.is_numeric_tensor(np.ones(2))]
result = cases
'''


@pytest.fixture(scope="module")
def both():
    return run_both(PROGRAM, tf)


# TensorFlow wraps an Assert whose data holds other than int32 and strings in a tf.cond
# ("AssertGuard"), so the data is computed only on failure, and returns the cond's Merge;
# ours runs the Assert unguarded (same outcome, no control flow in the step).
GUARDED = {"near_static": ["ok", "Merge"]}


@pytest.mark.oracle
def test_assertions_match_tensorflow(both):
    ours, theirs = both
    assert set(ours) == set(theirs)
    differ = {k: (ours[k], theirs[k]) for k in theirs
              if _normalized(ours[k]) != _normalized(theirs[k])}
    assert differ == {k: (["ok", "Assert"], v) for k, v in GUARDED.items()}


def _normalized(value):
    """Results as JSON gives them back (lists), with bools of NumPy made plain."""
    if isinstance(value, (list, tuple)):
        return [_normalized(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def test_dynamic_assert_guards_what_depends_on_it():
    x = tf.placeholder(tf.float32, [None])
    with tf.control_dependencies([tf.assert_non_negative(x, message="need x >= 0")]):
        y = tf.sqrt(x)
    with tf.Session() as s:
        np.testing.assert_allclose(s.run(y, {x: [4.0, 9.0]}), [2.0, 3.0])
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[need x >= 0.  \]"):
            s.run(y, {x: [4.0, -1.0]})


def test_rank_checks_with_a_rank_known_only_at_run_time():
    x = tf.placeholder(tf.float32)
    r = tf.placeholder(tf.int32)
    check = tf.assert_rank(x, r)
    with tf.Session() as s:
        s.run(check, {x: np.ones([2, 3]), r: 2})
        with pytest.raises(tf.errors.InvalidArgumentError, match="must have rank"):
            s.run(check, {x: np.ones([2]), r: 2})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Rank must be a scalar"):
            s.run(check, {x: np.ones([2]), r: [1, 2]})


def test_assert_shapes_with_unknown_rank_and_scalars():
    x = tf.placeholder(tf.float32)
    check = tf.debugging.assert_shapes([(x, ("N", 2)), (tf.constant(1.0), ())])
    with tf.Session() as s:
        s.run(check, {x: np.ones([3, 2])})
        with pytest.raises(tf.errors.InvalidArgumentError):
            s.run(check, {x: np.ones([3, 4])})
    with pytest.raises(ValueError, match=r"only allowed as the first entry"):
        tf.debugging.assert_shapes([(x, ("N", ...))])
    with pytest.raises(ValueError, match="must be an iterable"):
        tf.debugging.assert_shapes([(x, 3)])


def test_debugging_namespace():
    for name in ("Assert", "assert_all_finite", "assert_equal", "assert_shapes",
                 "check_numerics", "is_finite", "is_inf", "is_nan", "is_non_decreasing",
                 "is_numeric_tensor", "is_strictly_increasing", "assert_near", "assert_type"):
        assert callable(getattr(tf.debugging, name)), name
    assert not hasattr(tf, "assert_shapes")  # TF1 has it under tf.debugging only
    assert tf.debugging.assert_all_finite is tf.verify_tensor_all_finite
