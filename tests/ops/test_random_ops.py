"""Random ops and the graph/op seed rules: determinism across Sessions, distinct sequences
per op, distribution sanity (generous bounds), dtypes, shapes, errors and threads."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import tensorflux as tf
import tensorflux.kernels.cpu.random_ops  # noqa: F401 - registers the kernels
import tensorflux.ops.random_ops as random_ops
from tensorflux.framework import errors, op_registry, random_seed
from tensorflux.kernels import registry as kernel_registry
from tests import oracle
from tests.op_test_util import STRATEGIES

RANDOM_OPS = ["RandomUniform", "RandomUniformInt", "RandomStandardNormal", "TruncatedNormal",
              "RandomShuffle", "Multinomial"]


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def run(fetches, graph=None, feed_dict=None):
    sess = tf.Session(graph=graph or tf.get_default_graph())
    with sess:
        return sess.run(fetches, feed_dict)


@pytest.mark.parametrize("op_type", RANDOM_OPS)
def test_registered_stateful_with_kernel_and_no_gradient(op_type):
    opdef = op_registry.get(op_type)
    assert opdef.is_stateful and opdef.shape_fn is not None
    assert kernel_registry.has_kernel(op_type, "CPU")
    assert op_registry.get_gradient(op_type) == op_registry.NOT_DIFFERENTIABLE


# ---- seed rules --------------------------------------------------------------------------

# (graph seed, op seeds asked in order) -> the (seed, seed2) pairs TensorFlow 2.21 returns.
SEED_RULES = [
    (None, [None, None], [(None, None), (None, None)]),
    (None, [5, 0], [(87654321, 5), (87654321, 0)]),
    (7, [None, None, 3], [(7, 0), (7, 1), (7, 3)]),
    (0, [None, 0], [(0, 2**31 - 1), (0, 2**31 - 1)]),
    (2**40, [2**35], [(2**40 % (2**31 - 1), 2**35 % (2**31 - 1))]),
]


@pytest.mark.parametrize("graph_seed,op_seeds,expected", SEED_RULES)
def test_get_seed_rules(graph, graph_seed, op_seeds, expected):
    tf.set_random_seed(graph_seed)
    assert graph.seed == graph_seed
    assert [random_seed.get_seed(s) for s in op_seeds] == expected


def test_seed_attributes_of_ops(graph):
    a = tf.random_uniform([2])
    tf.set_random_seed(7)
    b = tf.random_uniform([2])
    c = tf.random_normal([2], seed=11)
    normal = next(op for op in graph.get_operations() if op.type == "RandomStandardNormal")
    assert (a.op.get_attr("seed"), a.op.get_attr("seed2")) == (0, 0)
    assert (b.op.get_attr("seed"), b.op.get_attr("seed2")) == (7, 0)
    assert (normal.get_attr("seed"), normal.get_attr("seed2")) == (7, 11)
    assert c.op.type == "AddV2"


@pytest.mark.oracle
def test_seed_rules_match_tensorflow():
    cases = [(g, s) for g, s, _ in SEED_RULES]
    theirs = oracle.run_tf(f"""
    from tensorflow.python.framework import random_seed
    out = []
    for graph_seed, op_seeds in {cases!r}:
        with tf.Graph().as_default():
            tf.set_random_seed(graph_seed)
            out.append([list(random_seed.get_seed(s)) for s in op_seeds])
    result = out
    """)
    assert theirs == [[list(p) for p in e] for _, _, e in SEED_RULES]


@pytest.mark.oracle
def test_determinism_rules_match_tensorflow():
    program = """
    out = []
    for graph_seed in (None, 1):
        def build():
            tf.set_random_seed(graph_seed)
            return [tf.random_uniform([4], seed=2), tf.random_uniform([4], seed=2),
                    tf.random_uniform([4]), tf.random_normal([4])]
        runs = []
        for _ in range(2):
            g = tf.Graph()
            with g.as_default():
                ts = build()
                with tf.Session() as s:
                    runs.append([s.run(ts), s.run(ts[0])])
        (first, again), (other, _) = runs
        out.append([bool((first[0] == first[1]).all()),   # same seeds, same sequence
                    bool((first[0] != first[2]).any()),   # different ops differ
                    bool((first[0] != again).any()),      # successive runs differ
                    bool((first[0] == other[0]).all()),   # a new Session repeats (seeded)
                    bool((first[2] == other[2]).all())])  # ...even op-seedless, with a graph seed
    result = out
    """
    import textwrap

    theirs = oracle.run_tf(textwrap.dedent(program))
    ns = {"tf": tf}
    exec(textwrap.dedent(program), ns)  # noqa: S102 - the same program in tensorflux
    assert ns["result"] == theirs == [[True, True, True, True, False],
                                      [True, True, True, True, True]]


def test_same_seeds_repeat_in_a_new_session_and_runs_continue(graph):
    tf.set_random_seed(42)
    x = tf.random_uniform([5], seed=3)
    y = tf.random_uniform([5], seed=3)
    z = tf.random_normal([5])
    with tf.Session() as s1:
        a1 = s1.run([x, y, z])
        a2 = s1.run(x)
        a3 = s1.run([x, z])  # another step signature: x continues its sequence
    with tf.Session() as s2:
        b1 = s2.run([x, y, z])
        b2 = s2.run(x)
        b3 = s2.run([x, z])
    np.testing.assert_array_equal(a1[0], a1[1])
    assert not np.array_equal(a1[0], a2) and not np.array_equal(a2, a3[0])
    for a, b in zip(a1 + [a2] + a3, b1 + [b2] + b3, strict=True):
        np.testing.assert_array_equal(a, b)


def test_unseeded_ops_differ_between_sessions(graph):
    x = tf.random_uniform([8])
    with tf.Session() as s1, tf.Session() as s2:
        assert not np.array_equal(s1.run(x), s2.run(x))


def test_every_strategy_gives_the_same_sequence(graph):
    tf.set_random_seed(5)
    ts = [tf.random_uniform([3]), tf.truncated_normal([3]), tf.random_shuffle([0, 1, 2, 3]),
          tf.multinomial([[0.0, 1.0, 2.0]], 4)]
    seqs = []
    for options in STRATEGIES.values():
        with tf.Session(exec_options=options) as sess:
            seqs.append([sess.run(ts) for _ in range(2)])
    for seq in seqs[1:]:
        for a, b in zip(seqs[0], seq, strict=True):
            for x, y in zip(a, b, strict=True):
                np.testing.assert_array_equal(x, y)


# ---- distributions -----------------------------------------------------------------------


def test_uniform_float_statistics(graph):
    x = run(tf.random_uniform([20000], seed=1)).astype(np.float64)
    assert x.dtype == np.float64 and x.min() >= 0.0 and x.max() < 1.0
    assert abs(x.mean() - 0.5) < 0.02 and abs(x.var() - 1 / 12) < 0.01
    y = run(tf.random_uniform([20000], -3.0, 5.0, seed=1))
    assert y.min() >= -3.0 and y.max() < 5.0 and abs(y.mean() - 1.0) < 0.1


def test_uniform_int(graph):
    t = tf.random_uniform([5000], minval=-3, maxval=4, dtype=tf.int64, seed=1)
    assert t.op.type == "RandomUniformInt" and t.op.name == "random_uniform"
    x = run(t)
    assert x.dtype == np.int64 and set(np.unique(x)) == set(range(-3, 4))
    with pytest.raises(ValueError, match="Must specify maxval for integer dtype tf.int32"):
        tf.random_uniform([3], dtype=tf.int32)
    with pytest.raises(ValueError, match="Invalid dtype"):
        tf.random_uniform([3], dtype=tf.string)
    lo = tf.placeholder(tf.int32, [])
    bad = tf.random_uniform([3], minval=lo, maxval=5, dtype=tf.int32)
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match="Need minval < maxval: 5 >= 5"):
            sess.run(bad, {lo: 5})
        assert sess.run(bad, {lo: 4}).tolist() == [4, 4, 4]


def test_normal_and_truncated_normal_statistics(graph):
    n = run(tf.random_normal([20000], mean=2.0, stddev=3.0, seed=1)).astype(np.float64)
    assert abs(n.mean() - 2.0) < 0.1 and abs(n.std() - 3.0) < 0.1
    assert np.abs(n - 2.0).max() > 6.0  # untruncated: some values beyond 2 sigma
    t = run(tf.truncated_normal([20000], mean=-1.0, stddev=0.5, seed=1)).astype(np.float64)
    assert np.abs(t + 1.0).max() <= 1.0  # within 2 sigma
    assert abs(t.mean() + 1.0) < 0.02 and abs(t.std() - 0.5 * 0.8796) < 0.02


def test_shuffle_is_a_permutation_of_rows(graph):
    value = np.arange(40).reshape(20, 2)
    t = tf.random_shuffle(value, seed=3)
    assert t.op.name == "RandomShuffle" and t.shape.as_list() == [20, 2]
    a, b = run([t, t])
    for out in (a, b):
        assert sorted(map(tuple, out)) == sorted(map(tuple, value))
        assert all(r[1] == r[0] + 1 for r in out)
    assert not np.array_equal(a, value) or not np.array_equal(b, value)
    assert run(tf.random_shuffle(7)) == 7


def test_multinomial_frequencies(graph):
    logits = np.array([np.log([0.1, 0.2, 0.7]), [0.0, 0.0, -np.inf]])
    t = tf.multinomial(logits, 6000, seed=2)
    assert t.dtype == tf.int64 and t.shape.as_list() == [2, 6000]
    assert t.op.type == "Multinomial" and t.op.name == "multinomial/Multinomial"
    x = run(t)
    assert x.dtype == np.int64
    np.testing.assert_allclose(np.bincount(x[0], minlength=3) / 6000, [0.1, 0.2, 0.7],
                               atol=0.03)
    assert set(np.unique(x[1])) == {0, 1}  # probability zero is never drawn
    i32 = tf.multinomial([[0.0, 0.0]], 3, output_dtype=tf.int32)
    assert i32.dtype == tf.int32 and run(i32).dtype == np.int32
    with pytest.raises(ValueError, match="Shape must be rank 2 but is rank 1"):
        tf.multinomial([0.0, 1.0], 2)


@pytest.mark.parametrize("dtype", [tf.float16, tf.bfloat16, tf.float32, tf.float64])
def test_floating_dtypes(graph, dtype):
    for t in (tf.random_uniform([500], dtype=dtype, seed=1),
              tf.random_normal([500], dtype=dtype, seed=1),
              tf.truncated_normal([500], dtype=dtype, seed=1)):
        assert t.dtype == dtype
        x = run(t)
        assert x.dtype == dtype.as_numpy_dtype and x.shape == (500,)
    u = run(tf.random_uniform([5000], dtype=dtype, seed=4)).astype(np.float64)
    assert u.min() >= 0.0 and u.max() < 1.0


# ---- shapes and errors -------------------------------------------------------------------


def test_static_and_dynamic_shapes(graph):
    assert tf.random_uniform([2, 3]).shape.as_list() == [2, 3]
    assert tf.random_normal((4,)).shape.as_list() == [4]
    assert tf.truncated_normal(tf.TensorShape([1, 5])).shape.as_list() == [1, 5]
    assert tf.random_uniform(tf.constant([4, 2])).shape.as_list() == [4, 2]
    assert tf.random_uniform([]).shape.as_list() == []
    p = tf.placeholder(tf.int32, [2])
    t = tf.random_uniform(p)
    assert t.shape.as_list() == [None, None]
    assert run(t, feed_dict={p: [3, 1]}).shape == (3, 1)
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match="Dimension -2 must be >= 0"):
            sess.run(t, {p: [3, -2]})
        assert sess.run(t, {p: [0, 2]}).shape == (0, 2)  # the session stays usable


# ---- threads -----------------------------------------------------------------------------


def test_concurrent_runs_draw_distinct_values(graph):
    tf.set_random_seed(9)
    t = tf.random_uniform([4], seed=1)
    seen: list[np.ndarray] = []
    failures: list[BaseException] = []
    lock = threading.Lock()
    with tf.Session() as sess:

        def work():
            try:
                vals = [sess.run(t) for _ in range(50)]
                with lock:
                    seen.extend(vals)
            except BaseException as e:  # noqa: BLE001 - reported below
                failures.append(e)

        threads = [threading.Thread(target=work) for _ in range(16)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=60)
    assert not failures and len(seen) == 800
    assert len({v.tobytes() for v in seen}) == 800  # one generator, never a value twice
    with tf.Session() as sess:  # the same 800 draws, in some order, in a new Session
        again = [sess.run(t) for _ in range(800)]
    assert {v.tobytes() for v in seen} == {v.tobytes() for v in again}


def test_random_ops_module_exports():
    assert set(random_ops.__all__) >= {"random_uniform", "random_normal", "truncated_normal",
                                       "random_shuffle", "multinomial", "set_random_seed"}
    assert tf.set_random_seed is random_seed.set_random_seed


@pytest.mark.parametrize("value", [
    np.array([b"a", b"b", b"c", b"d", b"e"], dtype=object),
    np.array([[b"a", b"b"], [b"c", b"d"], [b"e", b"f"]], dtype=object),
    np.arange(24, dtype=np.int32).reshape(6, 2, 2),
])
def test_random_shuffle_permutes_rows_of_any_dtype(value):
    """Strings too (string_input_producer shuffles file names): rows are kept whole."""
    with tf.Graph().as_default(), tf.Session() as sess:
        got = sess.run(tf.random_shuffle(tf.constant(value), seed=3))
    assert got.shape == value.shape
    assert sorted(map(repr, got.reshape(len(value), -1).tolist())) == \
        sorted(map(repr, value.reshape(len(value), -1).tolist()))
