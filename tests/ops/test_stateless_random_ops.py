"""Stateless random ops (tensorflux/ops/stateless_random_ops.py) and tf.random.Generator:
TensorFlow's values bit for bit (oracle tests), distribution sanity, determinism, seed
errors and gradients."""

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle

SEEDS = [[1, 2], [0, 0], [-7, 123456789], [2**31 - 1, -(2**31)]]

# One program run under TensorFlow and tensorflux: half and bfloat16 come back as float32.
_VALUES_PROGRAM = """
R = tf.random
result = {}
outs = {}
for i, seed in enumerate(SEEDS):
    for dt in (tf.float16, tf.bfloat16, tf.float32, tf.float64):
        for shape in ([7], [3, 5]):
            key = f"{i}/{dt.name}/{len(shape)}"
            outs["u" + key] = tf.cast(R.stateless_uniform(shape, seed, dtype=dt), tf.float64)
            outs["n" + key] = tf.cast(R.stateless_normal(shape, seed, dtype=dt), tf.float64)
            outs["t" + key] = tf.cast(R.stateless_truncated_normal(shape, seed, dtype=dt),
                                      tf.float64)
    outs[f"r{i}"] = R.stateless_uniform([9], seed, minval=-2.5, maxval=4.0)
    outs[f"m{i}"] = R.stateless_normal([2, 3], seed, mean=3.0, stddev=0.5, dtype=tf.float64)
    for dt in (tf.int32, tf.int64):
        outs[f"i{i}/{dt.name}"] = R.stateless_uniform([11], seed, minval=-5, maxval=1000003,
                                                      dtype=dt)
        outs[f"f{i}/{dt.name}"] = R.stateless_uniform([5], seed, minval=None, maxval=None,
                                                      dtype=dt)
    outs[f"c{i}"] = R.stateless_categorical([[1.0, 2.0, 3.0], [0.0, -1.0, 5.0]], 6, seed)
    outs[f"mn{i}"] = R.stateless_multinomial(np.log([[0.2, 0.3, 0.5]]), 4, seed,
                                             output_dtype=tf.int32)
    outs[f"fold{i}"] = R.fold_in(seed, 17)
    outs[f"split{i}"] = R.split(tf.constant(seed, tf.int64), 3)
outs["seed64"] = R.stateless_uniform([6], tf.constant([5, -6], tf.int64))
outs["big"] = R.stateless_truncated_normal([1003], [3, 4])
with tf.Session() as sess:
    result = sess.run(outs)
"""


@pytest.mark.oracle
def test_values_equal_tensorflow_bit_for_bit():
    program = f"SEEDS = {SEEDS!r}\n" + _VALUES_PROGRAM
    ours, theirs = oracle.run_both(program, tf)
    assert set(ours) == set(theirs)
    for key in sorted(theirs):
        want = np.asarray(theirs[key])
        got = np.asarray(ours[key])
        assert got.shape == want.shape, key
        np.testing.assert_array_equal(got.astype(want.dtype), want, err_msg=key)


_SAMPLERS_PROGRAM = """
R = tf.random
outs = {}
for i, seed in enumerate(SEEDS[:2]):
    outs[f"poisson{i}"] = R.stateless_poisson([300, 4], seed, [0.5, 3.0, 9.99, 0.0])
    outs[f"poisson_big{i}"] = R.stateless_poisson([200, 3], seed, [10.0, 47.5, 1e4],
                                                  dtype=tf.float32)
    outs[f"gamma{i}"] = R.stateless_gamma([300, 5], seed, [0.3, 1.0, 2.5, 0.999, 40.0],
                                          dtype=tf.float64)
    outs[f"gamma_beta{i}"] = R.stateless_gamma([200, 2], seed, [0.05, 7.0], beta=[2.0, 0.5])
    outs[f"binomial{i}"] = R.stateless_binomial(
        [300, 6], seed, counts=[5.0, 100.0, 100.0, 1000.0, 0.0, 7.0],
        probs=[0.3, 0.05, 0.5, 0.9, 0.5, 1.0])
    outs[f"binomial_b{i}"] = R.stateless_binomial(
        [50, 2, 3], seed, counts=[[10.0], [200.0]], probs=[0.2, 0.6, 0.99],
        output_dtype=tf.float32)
    outs[f"ptn{i}"] = R.stateless_parameterized_truncated_normal(
        [50, 4], seed, means=[0.0, 1.0, -2.0, 0.5], stddevs=[1.0, 2.0, 0.5, 1.0],
        minvals=[-2.0, 0.0, 1.0, 3.0], maxvals=[2.0, 0.5, 5.0, 10.0])
    outs[f"ptn64{i}"] = R.stateless_parameterized_truncated_normal(
        [30, 3], seed, means=tf.constant([0.0, 1.0, -2.0], tf.float64),
        stddevs=tf.constant(1.0, tf.float64),
        minvals=tf.constant([-np.inf, 2.0, 0.0], tf.float64),
        maxvals=tf.constant([0.0, np.inf, 0.3], tf.float64))
outs["gamma16"] = tf.cast(R.stateless_gamma([64], [5, 6], 1.5, dtype=tf.float16), tf.float32)
with tf.Session() as sess:
    result = sess.run(outs)
"""


@pytest.mark.oracle
def test_rejection_samplers_equal_tensorflow_bit_for_bit():
    ours, theirs = oracle.run_both(f"SEEDS = {SEEDS!r}\n" + _SAMPLERS_PROGRAM, tf)
    assert set(ours) == set(theirs)
    for key in sorted(theirs):
        want = np.asarray(theirs[key])
        np.testing.assert_array_equal(np.asarray(ours[key]).astype(want.dtype), want,
                                      err_msg=key)


_GENERATOR_PROGRAM = """
result = {}
for seed in (1, 12345):
    g = tf.random.Generator.from_seed(seed)
    ops = [g.uniform([3]), g.normal([2, 2], dtype=tf.float64), g.truncated_normal([5]),
           g.uniform_full_int([4], dtype=tf.int64),
           g.uniform([4], minval=3, maxval=9, dtype=tf.int32), g.make_seeds(2),
           g.normal([3], dtype=tf.float16), g.uniform_full_int([2])]
    with tf.Session() as sess:
        sess.run(g.state.initializer)
        result[f"{seed}/state0"] = sess.run(g.state.value())
        for i, op in enumerate(ops):
            value = np.asarray(sess.run(op))
            result[f"{seed}/{i}"] = value.astype(np.float64) if op.dtype.is_floating else value
        result[f"{seed}/state"] = sess.run(g.state.value())
        result[f"{seed}/rng"] = sess.run(tf.random.create_rng_state(2**70 + seed, "philox"))
    result[f"{seed}/name"] = g.state.name
"""


@pytest.mark.oracle
def test_generator_from_seed_equals_tensorflow():
    ours, theirs = oracle.run_both(_GENERATOR_PROGRAM, tf)
    assert set(ours) == set(theirs)
    for key in sorted(theirs):
        np.testing.assert_array_equal(np.asarray(ours[key]), np.asarray(theirs[key]),
                                      err_msg=key)


_SEED_OPS = [  # (op, extra inputs, attrs): TF's older ops that take the seed directly
    ("StatelessRandomUniform", {}, {"dtype": "float64"}),
    ("StatelessRandomNormal", {}, {"dtype": "float32"}),
    ("StatelessTruncatedNormal", {}, {"dtype": "float16"}),
    ("StatelessRandomUniformInt", {"minval": -9, "maxval": 40}, {}),
    ("StatelessRandomUniformFullInt", {}, {"dtype": "int64"}),
]


@pytest.mark.oracle
def test_seed_ops_equal_tensorflow_raw_ops():
    from tensorflux.framework.op_def_library import apply_op

    program = f"""
result = {{}}
with tf.Session() as sess:
    for op, extra, attrs in {_SEED_OPS!r}:
        kwargs = {{k: tf.constant(v) for k, v in extra.items()}}
        kwargs.update({{k: tf.as_dtype(v) for k, v in attrs.items()}})
        out = getattr(tf.raw_ops, op)(shape=[3, 5], seed=tf.constant([7, -8], tf.int64),
                                      **kwargs)
        result[op] = sess.run(tf.cast(out, tf.float64) if out.dtype.is_floating else out)
"""
    theirs = oracle.run_tf(program)
    with tf.Graph().as_default():
        outs = {}
        for op, extra, attrs in _SEED_OPS:
            kwargs = {k: tf.constant(v) for k, v in extra.items()}
            kwargs.update({k: tf.as_dtype(v) for k, v in attrs.items()})
            out = apply_op(op, shape=tf.constant([3, 5]), seed=tf.constant([7, -8], tf.int64),
                           **kwargs)
            outs[op] = tf.cast(out, tf.float64) if out.dtype.is_floating else out
        ours = _run(outs)
    for op in theirs:
        np.testing.assert_array_equal(ours[op], np.asarray(theirs[op]), err_msg=op)


def _run(t, feed=None):
    with tf.Session() as sess:
        return sess.run(t, feed)


def test_same_seed_same_values_across_sessions_and_different_seeds_differ():
    with tf.Graph().as_default():
        a = tf.random.stateless_normal([100], [3, 4])
        b = tf.random.stateless_normal([100], [3, 4])
        c = tf.random.stateless_normal([100], [4, 3])
        first = _run([a, b, c])
        second = _run(a)
    np.testing.assert_array_equal(first[0], first[1])
    np.testing.assert_array_equal(first[0], second)
    assert not np.array_equal(first[0], first[2])


_N = 200_000


@pytest.mark.parametrize("dtype", [tf.float16, tf.bfloat16, tf.float32, tf.float64])
def test_float_distributions_have_the_right_moments(dtype):
    with tf.Graph().as_default():
        u, n, t = (tf.cast(f([_N], [11, 12], dtype=dtype), tf.float64) for f in (
            tf.random.stateless_uniform, tf.random.stateless_normal,
            tf.random.stateless_truncated_normal))
        u, n, t = _run([u, n, t])
    assert 0 <= u.min() and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.01
    assert abs(n.mean()) < 0.02 and abs(n.var() - 1) < 0.03
    assert np.abs(t).max() <= 2 and abs(t.mean()) < 0.02 and abs(t.var() - 0.774) < 0.03


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_integer_ranges(dtype):
    with tf.Graph().as_default():
        r = tf.random.stateless_uniform([_N], [1, 2], minval=-3, maxval=7, dtype=dtype)
        full = tf.random.stateless_uniform([_N], [1, 2], minval=None, maxval=None,
                                           dtype=dtype)
        r, full = _run([r, full])
    assert r.dtype == dtype.as_numpy_dtype and set(np.unique(r)) == set(range(-3, 7))
    assert (full < 0).mean() == pytest.approx(0.5, abs=0.01)


def test_other_distributions_are_deterministic_and_sane():
    with tf.Graph().as_default():
        R = tf.random
        outs = [R.stateless_poisson([_N // 10, 2], [1, 2], [3.0, 10.0]),
                R.stateless_gamma([_N // 10], [1, 2], alpha=4.0, beta=2.0),
                R.stateless_binomial([_N // 10], [1, 2], counts=20.0, probs=0.25),
                R.stateless_parameterized_truncated_normal([_N // 10], [1, 2], means=1.0,
                                                           stddevs=2.0, minvals=0.0,
                                                           maxvals=3.0),
                R.stateless_categorical(np.log([[0.1, 0.2, 0.7]]), _N // 10, [1, 2])]
        first, again = _run(outs), _run(outs)
    for x, y in zip(first, again, strict=True):
        np.testing.assert_array_equal(x, y)
    poisson, gamma, binomial, ptn, cat = first
    assert poisson.shape == (_N // 10, 2) and poisson.dtype == np.int32
    np.testing.assert_allclose(poisson.mean(0), [3.0, 10.0], rtol=0.03)
    assert gamma.mean() == pytest.approx(2.0, rel=0.03)
    assert binomial.mean() == pytest.approx(5.0, rel=0.03)
    assert ptn.min() >= 0 and ptn.max() <= 3
    np.testing.assert_allclose(np.bincount(cat[0], minlength=3) / cat.size, [0.1, 0.2, 0.7],
                               atol=0.01)


def test_bad_seeds_raise_what_tensorflow_raises():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Dimension must be 2 but is 3"):
            tf.random.stateless_uniform([2], [1, 2, 3])
        with pytest.raises(TypeError, match="int32, int64"):
            tf.random.stateless_uniform([2], [1.0, 2.0])
        with pytest.raises(ValueError, match="Dimension must be 2"):
            tf.random.stateless_normal([2], tf.placeholder(tf.int32, [3]))
        with pytest.raises(ValueError, match="Accepted dtypes"):
            tf.random.stateless_uniform([2], [1, 2], dtype=tf.string)
        with pytest.raises(ValueError, match="both None or not None"):
            tf.random.stateless_uniform([2], [1, 2], maxval=4, minval=None, dtype=tf.int32)
        with pytest.raises(ValueError, match="minval must be a scalar"):
            tf.random.stateless_uniform([3], [1, 2], minval=[1, 2], maxval=9, dtype=tf.int32)
        with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
            tf.random.stateless_uniform(tf.constant([[1]]), [1, 2])
        with pytest.raises(ValueError, match="unsigned"):
            tf.random.stateless_uniform([3], [1, 2], minval=2, maxval=9, dtype=tf.uint32)
        with pytest.raises(ValueError, match="unsupported value bogus"):
            tf.random.stateless_uniform([3], [1, 2], alg="bogus")
        threefry = tf.random.stateless_uniform([3], [1, 2], alg="threefry")
        with pytest.raises(tf.errors.InvalidArgumentError, match="algorithm"):
            _run(threefry)
        seed = tf.placeholder(tf.int32, [None])
        out = tf.random.stateless_uniform([2], seed)
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"seed must have shape \[2\]"):
            _run(out, {seed: [1, 2, 3]})
        bad_range = tf.random.stateless_uniform([2], [1, 2], minval=5, maxval=5,
                                                dtype=tf.int32)
        with pytest.raises(tf.errors.InvalidArgumentError, match="minval < maxval"):
            _run(bad_range)


def test_gradients_flow_through_gamma_alpha_and_not_uniform_bits():
    with tf.Graph().as_default():
        mean = tf.constant(1.0)
        alpha = tf.constant([2.0, 3.0])
        n = tf.random.stateless_normal([3], [1, 2], mean=mean)
        g = tf.random.stateless_gamma([4, 2], [1, 2], alpha)
        (d_mean,) = tf.gradients(tf.reduce_sum(n), [mean])
        (d_alpha,) = tf.gradients(tf.reduce_sum(g), [alpha])
        d_mean, d_alpha = _run([d_mean, d_alpha])
    assert d_mean == 3.0
    assert d_alpha.shape == (2,) and np.all(d_alpha > 0)


@pytest.mark.oracle
def test_gamma_and_truncated_normal_gradients_match_tensorflow():
    program = """
m = tf.constant([0.5, 0.0]); s = tf.constant(1.5)
lo = tf.constant([-1.0, 0.5]); hi = tf.constant(2.0); alpha = tf.constant([2.0, 0.7])
y = tf.random.stateless_parameterized_truncated_normal([6, 2], [3, 4], m, s, lo, hi)
g = tf.random.stateless_gamma([5, 2], [3, 4], alpha, beta=2.0)
grads = tf.gradients(tf.reduce_sum(y * y), [m, s, lo, hi]) + \\
    tf.gradients(tf.reduce_sum(g), [alpha])
with tf.Session() as sess:
    result = dict(zip("msluag", sess.run(grads)))
"""
    ours, theirs = oracle.run_both(program, tf)
    oracle.assert_results_close(ours, theirs, rtol=1e-4, atol=1e-5)


def test_generator_state_advances_and_global_generator():
    with tf.Graph().as_default():
        g = tf.random.Generator.from_seed(1)
        u = g.uniform([3])
        assert g.algorithm == tf.random.Algorithm.PHILOX.value
        tf.random.set_global_generator(g)
        assert tf.random.get_global_generator() is g
        with tf.Session() as sess:
            sess.run(g.state.initializer)
            a, b = sess.run(u), sess.run(u)
            state = sess.run(g.state.value())
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(state, [1 + 2 * 3 * 256, 0, 0])
    with tf.Graph().as_default():
        other = tf.random.get_global_generator()
        assert other is not g and isinstance(other, tf.random.Generator)


def test_experimental_names():
    e = tf.random.experimental
    assert e.stateless_fold_in is tf.random.fold_in and e.stateless_split is tf.random.split
    assert e.Generator is tf.random.Generator
    with tf.Graph().as_default():
        np.testing.assert_array_equal(_run(tf.random.create_rng_state(5, "philox")),
                                      [5, 0, 0])
