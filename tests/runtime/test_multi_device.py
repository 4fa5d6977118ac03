"""The same models on 1, 2 and 4 devices give identical results.

Each model (the MLP and CNN of the benchmarks, models of the gradients, optimizer and
control-flow tests, an LSTM under dynamic_rnn) is built three ways on n devices: placed by
the cost model (no device scopes), model-parallel (explicit blocks per layer), and
scattered (a device function sending every op to the next device in turn, with soft
placement for colocated ones). The last puts a Send/Recv pair on nearly every edge and
splits while loops across devices (per-device control loops). Values after several
training steps must equal the single-device run exactly.
"""

import contextlib
import itertools

import numpy as np
import pytest

import tensorflux as tf

MODES = ("free", "layers", "scatter")


def _device_fn(mode, n):
    if mode == "scatter":
        counter = itertools.count()
        return lambda op: f"/cpu:{next(counter) % n}"
    return None


def _layer_scope(mode, n, i):
    return tf.device(f"/cpu:{i % n}") if mode == "layers" else contextlib.nullcontext()


def _run(model, n, mode, steps):
    g = tf.Graph()
    with g.as_default(), tf.device(_device_fn(mode, n)):
        tf.set_random_seed(7)
        train, fetches = model(lambda i: _layer_scope(mode, n, i))
        init = tf.global_variables_initializer()
    config = tf.ConfigProto(device_count={"CPU": n}, allow_soft_placement=True)
    with tf.Session(graph=g, config=config) as s:
        s.run(init)
        for _ in range(steps):
            if train is not None:
                s.run(train)
        values = s.run(fetches)
        partitions = max(len(st.partition_graphs) for st in s._steps.values())
    return values, partitions


def _mlp(layer):
    rng = np.random.RandomState(0)
    x = tf.constant(rng.randn(32, 20).astype(np.float32))
    y = tf.constant(rng.randint(0, 5, 32).astype(np.int64))
    h = x
    for i, width in enumerate([24, 16]):
        with layer(i):
            w = tf.Variable(rng.randn(int(h.shape[-1]), width).astype(np.float32) * 0.3,
                            name=f"w{i}")
            b = tf.Variable(np.zeros(width, np.float32), name=f"b{i}")
            h = tf.nn.relu(tf.matmul(h, w) + b)
    with layer(2):
        w = tf.Variable(rng.randn(16, 5).astype(np.float32) * 0.3, name="wo")
        logits = tf.matmul(h, w)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train = tf.train.AdamOptimizer(0.01).minimize(loss)
    return train, tf.trainable_variables() + [loss]


def _cnn(layer):
    rng = np.random.RandomState(1)
    x = tf.constant(rng.randn(4, 8, 8, 2).astype(np.float32))
    y = tf.constant(rng.randn(4, 3).astype(np.float32))
    with layer(0):
        k = tf.Variable(rng.randn(3, 3, 2, 4).astype(np.float32) * 0.2, name="k")
        h = tf.nn.max_pool(tf.nn.relu(tf.nn.conv2d(x, k, [1, 1, 1, 1], "SAME")),
                           [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    with layer(1):
        w = tf.Variable(rng.randn(64, 3).astype(np.float32) * 0.1, name="w")
        out = tf.matmul(tf.reshape(h, [4, 64]), w)
        loss = tf.reduce_sum(tf.square(out - y))
    train = tf.train.MomentumOptimizer(0.01, 0.9).minimize(loss)
    return train, [k, w, loss]


def _gradients(layer):
    """Models of the gradients tests: broadcasting sums, second order, reductions (inputs
    are variables, so constant folding leaves the graphs to the devices)."""
    rng = np.random.RandomState(2)
    with layer(0):
        x = tf.Variable(rng.randn(3, 1).astype(np.float32))
        y = tf.Variable(rng.randn(1, 4).astype(np.float32))
        gx, gy = tf.gradients(tf.reduce_sum(x * y + tf.exp(x - y)), [x, y])
    with layer(1):
        z = tf.Variable(rng.randn(5).astype(np.float64))
        (g1,) = tf.gradients(tf.reduce_sum(tf.tanh(z) * tf.sin(z)), z)
        (g2,) = tf.gradients(tf.reduce_sum(g1), z)
    with layer(2):
        m = tf.Variable(rng.randn(4, 6).astype(np.float32))
        (gm,) = tf.gradients(tf.reduce_mean(tf.reduce_max(m, axis=1) *
                                            tf.reduce_sum(m * m, axis=1)), m)
    return None, [gx, gy, g1, g2, gm]


def _optimizers(layer):
    """The optimizer tests' program (dense and sparse gradients), one optimizer per layer."""
    rng = np.random.RandomState(0)
    x = tf.constant(rng.randn(4, 3).astype(np.float32))
    y = tf.constant(rng.randn(4, 2).astype(np.float32))
    ops, fetches = [], []
    for i, opt in enumerate([lambda: tf.train.AdagradOptimizer(0.3),
                             lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5),
                             lambda: tf.train.FtrlOptimizer(0.3,
                                                            l1_regularization_strength=0.01)]):
        with layer(i):
            w = tf.Variable(rng.randn(3, 2).astype(np.float32), name=f"w{i}")
            emb = tf.Variable(rng.randn(5, 3).astype(np.float32), name=f"emb{i}")
            rows = tf.gather(emb, tf.constant([0, 2, 2, 4]))
            loss = tf.reduce_sum(tf.square(tf.matmul(x, w) - y)) + \
                tf.reduce_sum(tf.square(rows - 1.0))
            ops.append(opt().minimize(loss))
            fetches += [w, emb]
    return tf.group(*ops), fetches


def _while_loops(layer):
    """Models of the control-flow tests: a loop, a nested loop, a cond inside a loop, a
    loop's gradient (stacks pushed in the forward frame, popped in the gradient frame)."""
    w = tf.Variable(np.array([0.5, -0.3, 0.8], np.float32), name="w")
    x0 = tf.Variable(np.linspace(0, 1, 3).astype(np.float32), name="x0")

    def body(i, x):
        with layer(0):
            y = tf.tanh(x * w)
        with layer(1):
            y = tf.cond(tf.equal(i % 2, 0), lambda: y * 2.0, lambda: y - 0.5) + x
        return i + 1, y

    steps, y = tf.while_loop(lambda i, x: i < 5, body, [0, x0])
    loss = tf.reduce_sum(y * y)
    (g,) = tf.gradients(loss, w)

    def outer(i, acc):
        with layer(2):
            _, inner = tf.while_loop(lambda j, a: j < i, lambda j, a: (j + 1, a * 0.9 + w),
                                     [0, acc])
        return i + 1, inner

    _, nested = tf.while_loop(lambda i, a: i < 4, outer, [0, x0])
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    return train, [steps, y, g, nested, w]


def _rnn(layer):
    """A two-layer LSTM under dynamic_rnn (a while loop), one layer per device."""
    rng = np.random.RandomState(3)
    x = tf.constant(rng.randn(3, 6, 4).astype(np.float32))
    cells = []
    for i in range(2):
        with layer(i):
            cells.append(tf.nn.rnn_cell.LSTMCell(5, name=f"lstm{i}"))
    with layer(0):
        outputs, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.MultiRNNCell(cells), x,
                                       dtype=tf.float32)
        loss = tf.reduce_sum(tf.square(outputs))
    train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
    return train, tf.trainable_variables() + [loss]


MODELS = {"mlp_adam": (_mlp, 5), "cnn_momentum": (_cnn, 3), "gradients": (_gradients, 0),
          "optimizers_sparse": (_optimizers, 3), "while_loops": (_while_loops, 3),
          "rnn": (_rnn, 2)}


@pytest.fixture(scope="module")
def single_device():
    return {name: _run(model, 1, "free", steps)[0] for name, (model, steps) in MODELS.items()}


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_identical_results_on_several_devices(name, mode, n, single_device):
    model, steps = MODELS[name]
    values, partitions = _run(model, n, mode, steps)
    for got, want in zip(values, single_device[name], strict=True):
        np.testing.assert_array_equal(got, want)
    if mode == "scatter":
        assert partitions == n
    if mode == "layers" and name not in ("gradients", "rnn"):
        assert partitions >= 2
