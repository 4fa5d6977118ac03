"""The stateful random ops draw TensorFlow's own streams: a seeded RandomUniform,
RandomStandardNormal, TruncatedNormal or RandomUniformInt gives TF's values, run after run
(kernels/cpu/random_ops.py; the C loops of lib/_philox.c against lib/philox.py's NumPy ones
are in tests/lib/test_philox_native.py)."""

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels import interrupt
from tests import oracle

# (op, dtype, graph seed, op seed, [first run, second run]) as TensorFlow 2.21 gives them
# (tf.compat.v1, CPU): each run's [6] values as the hex of their bytes (little-endian).
TF_VALUES = [
    ('uniform', 'float32', 1, 7,
     ['62b0493f464d333f7479673f44b52e3f284e193fc45be23e',
      'c0b80c3e56fb0a3fa6df073f44d40a3f1088f53e32097f3f']),
    ('uniform', 'float64', 3, 0,
     ['80f3117ac75d933fc83f311fd662c73f7a8e621a43a9e43f'
      'f0f139b999e0b33fc04f2b43b29b933f80d01fe37287c13f',
      'be79bd95a1fcea3f30ca0a23a1d3d13f829a30620760ee3f'
      'b626bf5cec65ee3f08902e1f61cfe93f1834b5196fabc83f']),
    ('uniform', 'float16', 5, 9,
     ['dc3b8239f02f8e3a88346439',
      'b63ada3a6037c23ae0351a38']),
    ('normal', 'float32', 1, 7,
     ['9e4528bf35d758be9965d1be863d3dbe6878b83e8a4772bf',
      '39d007bf8ecff5bfc05f97be87038bbf85faeabc40239b3f']),
    ('normal', 'float64', 2, 11,
     ['600da0ad919cc4bfdef96794b331dabfe2a9a89ab064ecbf'
      '5d63b6420a0dea3fa9f7e7a049aff7bfc38b99de3cd6ce3f',
      'd760eb92be0fd43f664dbb21f317fabf94bf6e3e517bf9bf'
      'eaa8bf4af4c7d4bf77213502f396d0bfca8b7795788ceb3f']),
    ('normal', 'bfloat16', 4, 4,
     ['5dbf5c3fd4bf57bf09bf0e3e',
      'd03fb1bf743fbfbef4bc97bf']),
    ('truncated', 'float32', 1, 7,
     ['9e4528bf35d758be9965d1be863d3dbe31d7f63ed8dee33c',
      '39d007bf8ecff5bfc05f97be87038bbf35e9d0beac1b6abe']),
    ('truncated', 'float64', 6, 1,
     ['d17ae0a01399f2bfea72c7d4eba8fbbf03bf1babece1fa3f'
      'cfcf1d2c36c2df3f8c7bb0ac1c5febbfb8c6ed2c0b3ae93f',
      'e1f164b1992ce03f8bef3c852c21e0bfc29b01530b19e83f'
      '5e04d539d59ef83f81eaa74820aee33f448776b9257ed4bf']),
    ('int32', 'int32', 1, 7,
     ['0c0000000600000009000000fdffffff0500000004000000',
      'ffffffff00000000000000000100000003000000fcffffff']),
    ('int64', 'int64', 8, 2,
     ['93d8207ea28901003fa41c0ccffb0200a33eeae1ecfc0100'
      '4a2ca0f5f5c50000dce006b29ace01007b30d13252fe0100',
      'b5ebfd7652630100d8ceea88665f03004a2cc245f6d90000'
      '6cf3b6eedfed0100319ada0ba6bf030025daf67644360200']),
]


def _build(name, dtype, op_seed):
    if name == "uniform":
        return tf.random_uniform([6], dtype=getattr(tf, dtype), seed=op_seed)
    if name == "normal":
        return tf.random_normal([6], dtype=getattr(tf, dtype), seed=op_seed)
    if name == "truncated":
        return tf.truncated_normal([6], dtype=getattr(tf, dtype), seed=op_seed)
    if name == "int32":
        return tf.random_uniform([6], -5, 17, dtype=tf.int32, seed=op_seed)
    return tf.random_uniform([6], -(2**40), 2**50, dtype=tf.int64, seed=op_seed)


@pytest.mark.parametrize("name,dtype,graph_seed,op_seed,runs", TF_VALUES)
def test_seeded_ops_give_tensorflows_values(name, dtype, graph_seed, op_seed, runs):
    with tf.Graph().as_default():
        tf.set_random_seed(graph_seed)
        t = _build(name, dtype, op_seed)
        for _ in range(2):  # a new Session starts the stream again
            with tf.Session() as sess:
                for want in runs:  # and each run continues it
                    got = sess.run(t)
                    assert got.dtype == np.dtype(t.dtype.as_numpy_dtype) and got.shape == (6,)
                    assert got.tobytes().hex() == want


# tf.random_shuffle's row orders in TensorFlow 2.21 (graph seed 3): two runs each.
SHUFFLES = [
    (10, 5, [[1, 2, 6, 5, 0, 3, 7, 4, 8, 9], [1, 9, 3, 6, 0, 8, 4, 7, 5, 2]]),
    (7, 1, [[1, 2, 5, 4, 0, 6, 3], [4, 2, 1, 0, 6, 5, 3]]),
    (1000, None, [[551, 263, 16, 226, 37, 562, 7, 808], [175, 209, 572, 844, 914, 560, 655, 213]]),
]


@pytest.mark.parametrize("rows,op_seed,orders", SHUFFLES)
def test_shuffle_takes_tensorflows_row_order(rows, op_seed, orders):
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        value = tf.reshape(tf.range(2 * rows), [rows, 2])
        t = tf.random_shuffle(value, seed=op_seed)
        with tf.Session() as sess:
            for want in orders:
                got = sess.run(t)
                assert (got[:, 0] // 2)[:len(want)].tolist() == want
                np.testing.assert_array_equal(got[:, 1], got[:, 0] + 1)  # whole rows moved


def test_multinomial_and_categorical_give_tensorflows_samples():
    """TF 2.21's samples for two seeded draws, run twice (graph seed 5)."""
    with tf.Graph().as_default():
        tf.set_random_seed(5)
        probs = np.array([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1]])
        a = tf.multinomial(tf.constant(np.log(probs), tf.float32), 7, seed=3)
        b = tf.random.categorical(tf.constant([[1.0, 2.0, -np.inf, 0.5]]), 5)
        with tf.Session() as sess:
            assert sess.run(a).tolist() == [[2, 2, 3, 3, 3, 3, 2], [0, 0, 0, 0, 3, 1, 0]]
            assert sess.run(b).tolist() == [[1, 1, 0, 3, 1]]  # never the -inf class
            assert sess.run(a).tolist() == [[2, 3, 3, 2, 2, 1, 3], [0, 0, 0, 0, 3, 0, 3]]
            assert sess.run(b).tolist() == [[0, 1, 0, 1, 0]]


def test_gamma_and_poisson_give_tensorflows_samples():
    """TF 2.21's samples (graph seed 1), two runs: gamma in float64 and float32 (with beta,
    graph seed only), Poisson as float32 and int64."""
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        g64 = tf.random_gamma([6], [0.5, 1.0, 2.5, 7.0], dtype=tf.float64, seed=3)
        g32 = tf.random_gamma([2, 3], [[0.3], [4.0]], beta=2.0, dtype=tf.float32)
        p32 = tf.random_poisson([0.5, 3.0, 25.0, 300.0], [6], dtype=tf.float32, seed=3)
        p64 = tf.random_poisson([[0.5, 3.0, 25.0]], [2, 3], dtype=tf.int64)
        with tf.Session() as sess:
            first = sess.run([g64, g32, p32, p64])
            second = sess.run([g64, g32, p32, p64])
    np.testing.assert_array_equal(first[0][:2], [
        [1.1771567670960672, 1.4856289304495245, 0.962074160237649, 10.09443058539592],
        [0.48187455927017886, 1.2193950261354602, 2.8415802124127865, 7.006528273283923]])
    np.testing.assert_array_equal(second[0][0], [
        0.17003526862683105, 1.5076972750874944, 3.723035989993334, 5.120395380929705])
    np.testing.assert_array_equal(first[1][0].reshape(-1), np.float32([
        0.1005730852484703, 2.3400778770446777, 0.0003736830549314618, 1.315565586090088,
        0.0002180431765737012, 1.3910408020019531]))
    assert first[2][:2].tolist() == [[1, 4, 27, 274], [0, 1, 18, 328]]
    assert second[2][0].tolist() == [0, 3, 31, 292]
    assert first[3].reshape(2, 9).tolist() == [[0, 1, 24, 1, 2, 25, 2, 1, 32],
                                               [0, 2, 29, 0, 2, 22, 1, 2, 25]]
    assert first[3].dtype == np.int64


def _draws(op):
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        t = {
            "uniform": lambda: tf.random_uniform([4099], seed=1),
            "normal": lambda: tf.random_normal([4099], dtype=tf.float64, seed=1),
            "truncated": lambda: tf.truncated_normal([4099], seed=1),
            "int": lambda: tf.random_uniform([4099], 0, 1000, dtype=tf.int64, seed=1),
        }[op]()
        with tf.Session() as sess:
            return [sess.run(t) for _ in range(2)]


@pytest.mark.parametrize("op", ["uniform", "normal", "truncated", "int"])
def test_a_large_output_drawn_in_blocks_equals_one_call(monkeypatch, op):
    whole = _draws(op)
    monkeypatch.setattr(interrupt, "BLOCKED_BYTES", 16)
    monkeypatch.setattr(interrupt, "BLOCK_BYTES", 1000)
    for a, b in zip(whole, _draws(op), strict=True):
        np.testing.assert_array_equal(a, b)


def test_an_empty_integer_draw_needs_no_valid_range():
    with tf.Graph().as_default():
        t = tf.random_uniform([0, 3], 5, 5, dtype=tf.int32, seed=1)
        bad = tf.random_uniform([2], 5, 5, dtype=tf.int64, seed=1)
        with tf.Session() as sess:
            assert sess.run(t).shape == (0, 3)
            with pytest.raises(tf.errors.InvalidArgumentError, match="minval < maxval"):
                sess.run(bad)


def test_unseeded_ops_still_differ_between_sessions():
    with tf.Graph().as_default():
        t = tf.random_normal([8])
        with tf.Session() as s1, tf.Session() as s2:
            assert not np.array_equal(s1.run(t), s2.run(t))


_PROGRAM = """
tf.set_random_seed(1234)
x = tf.placeholder(tf.float32, [None, 5])
w1 = tf.get_variable("w1", [5, 7], initializer=tf.glorot_uniform_initializer())
h = tf.nn.dropout(tf.nn.relu(tf.matmul(x, w1)), keep_prob=0.5)
w2 = tf.get_variable("w2", [7, 3], initializer=tf.truncated_normal_initializer(stddev=0.1))
y = tf.matmul(h, w2) + tf.Variable(tf.random_uniform([3], -1.0, 1.0))
emb = tf.get_variable("emb", [11, 4], initializer=tf.random_normal_initializer())
idx = tf.random_uniform([3], 0, 11, dtype=tf.int32)
gam = tf.random_gamma([4], [0.2, 1.0, 3.0])
poi = tf.random_poisson([2.0, 40.0], [3], dtype=tf.int32)
with tf.Session() as s:
    s.run(tf.global_variables_initializer())
    feed = {x: np.linspace(-1, 1, 10, dtype=np.float32).reshape(2, 5)}
    result = {"y": s.run(y, feed), "y2": s.run(y, feed), "emb": s.run(emb), "idx": s.run(idx),
              "gamma": s.run(gam), "poisson": s.run(poi)}
"""


@pytest.mark.oracle
@pytest.mark.timeout(300)
def test_a_seeded_program_matches_tensorflow():
    """Initializers, dropout masks, sampled indices, gamma and Poisson samples of a seeded
    TF1 program are TF's."""
    ours, theirs = oracle.run_both(_PROGRAM, tf)
    oracle.assert_results_close(ours, theirs, rtol=1e-6, atol=1e-7)


def test_a_one_shot_iterator_takes_an_op_seed_as_tensorflow_does():
    with tf.Graph().as_default():
        tf.set_random_seed(42)
        tf.data.make_one_shot_iterator(tf.data.Dataset.range(3))
        assert tf.random_uniform([1]).op.get_attr("seed2") == 1


_TRAINING = """
rng = np.random.RandomState(0)
X = rng.rand(300, 16).astype(np.float32)
y = (X[:, :4].sum(1) * 2.5).astype(np.int64) % 10
tf.set_random_seed(42)
ds = tf.data.Dataset.from_tensor_slices((X, y)).shuffle(500, seed=1).repeat().batch(32)
xb, yb = tf.data.make_one_shot_iterator(ds).get_next()
w1 = tf.get_variable("w1", [16, 32], initializer=tf.glorot_uniform_initializer())
h = tf.nn.dropout(tf.nn.relu(tf.matmul(xb, w1)), keep_prob=0.8)
w2 = tf.get_variable("w2", [32, 10], initializer=tf.truncated_normal_initializer(stddev=0.1))
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
    labels=yb, logits=tf.matmul(h, w2)))
train = tf.train.AdamOptimizer(1e-2).minimize(loss)
with tf.Session() as s:
    s.run(tf.global_variables_initializer())
    result = {"losses": np.array([s.run([loss, train])[0] for _ in range(40)])}
"""


@pytest.mark.oracle
@pytest.mark.timeout(300)
def test_a_seeded_training_run_follows_tensorflows_loss_curve():
    """Shuffled batches, initial weights and dropout masks are TF's, so the losses are TF's
    up to float rounding in the products."""
    ours, theirs = oracle.run_both(_TRAINING, tf)
    oracle.assert_results_close(ours, theirs, rtol=1e-4, atol=1e-5)
