"""tf.contrib.rnn's block cells (tensorflux/contrib/rnn_block_cells.py): TF's variable names
and shapes, the same values and gradients as the core cells with equal weights, dynamic_rnn
and static_rnn over them, LSTMBlockFusedCell with sequence lengths, and (marked `oracle`) a
GraphDef that TensorFlow writes with the fused ops imported and run."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle

B, T, D, N = 3, 4, 5, 6


def _inputs(seed=0):
    return np.random.default_rng(seed).standard_normal((B, T, D)).astype(np.float32)


def _var_names(scope):
    return sorted((v.op.name, v.shape.as_list()) for v in tf.global_variables()
                  if v.op.name.startswith(scope))


def test_variable_names_and_shapes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [B, T, D])
        tf.nn.dynamic_rnn(tf.contrib.rnn.LSTMBlockCell(N, use_peephole=True), x,
                          dtype=tf.float32, scope="a")
        tf.nn.dynamic_rnn(tf.contrib.rnn.GRUBlockCell(N), x, dtype=tf.float32, scope="b")
        tf.nn.dynamic_rnn(tf.contrib.rnn.GRUBlockCellV2(N), x, dtype=tf.float32, scope="c")
        tf.contrib.rnn.LSTMBlockFusedCell(N)(tf.transpose(x, [1, 0, 2]), dtype=tf.float32,
                                             scope="d")
        assert _var_names("a/") == [
            ("a/lstm_cell/bias", [4 * N]), ("a/lstm_cell/kernel", [D + N, 4 * N]),
            ("a/lstm_cell/w_f_diag", [N]), ("a/lstm_cell/w_i_diag", [N]),
            ("a/lstm_cell/w_o_diag", [N])]
        assert _var_names("b/") == [
            ("b/gru_cell/b_c", [N]), ("b/gru_cell/b_ru", [2 * N]),
            ("b/gru_cell/w_c", [D + N, N]), ("b/gru_cell/w_ru", [D + N, 2 * N])]
        assert _var_names("c/") == [
            ("c/gru_cell/candidate/bias", [N]), ("c/gru_cell/candidate/kernel", [D + N, N]),
            ("c/gru_cell/gates/bias", [2 * N]), ("c/gru_cell/gates/kernel", [D + N, 2 * N])]
        # a scope passed to the call replaces the layer's own, as for tf.layers
        assert _var_names("d/") == [("d/bias", [4 * N]), ("d/kernel", [D + N, 4 * N])]
        tf.contrib.rnn.LSTMBlockFusedCell(N)(tf.transpose(x, [1, 0, 2]), dtype=tf.float32)
        assert _var_names("lstm_fused_cell/") == [("lstm_fused_cell/bias", [4 * N]),
                                                 ("lstm_fused_cell/kernel", [D + N, 4 * N])]


def _compare_cells(make_block, make_core, seed=1, use_dynamic=True):
    """Runs both cells over the same inputs with the same weights (the block cell's values
    assigned to the core cell's variables in order); returns outputs, states and the
    gradients of a loss w.r.t. the inputs and the variables, for each."""
    x_val = _inputs(seed)
    results = []
    for make, scope in ((make_block, "block"), (make_core, "core")):
        with tf.Graph().as_default():
            tf.set_random_seed(seed)
            x = tf.constant(x_val)
            cell = make()
            if use_dynamic:
                out, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32, scope=scope)
            else:
                outs, state = tf.contrib.rnn.static_rnn(cell, tf.unstack(x, axis=1),
                                                        dtype=tf.float32, scope=scope)
                out = tf.stack(outs, 1)
            loss = tf.reduce_sum(out * out) + tf.add_n(
                [tf.reduce_sum(s) for s in tf.nest.flatten(state)])
            variables = tf.trainable_variables()
            grads = tf.gradients(loss, [x] + variables)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                if results:
                    for v, value in zip(variables, results[0]["weights"], strict=True):
                        v.load(value, sess)
                weights = sess.run(variables)
                got = sess.run({"out": out, "state": tf.nest.flatten(state), "grads": grads})
                got["weights"] = weights
                results.append(got)
    return results


def _assert_same(a, b, tol=2e-5):
    np.testing.assert_allclose(a["out"], b["out"], rtol=tol, atol=tol)
    for u, v in zip(a["state"], b["state"], strict=True):
        np.testing.assert_allclose(u, v, rtol=tol, atol=tol)
    for u, v in zip(a["grads"], b["grads"], strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("use_dynamic", [True, False])
def test_lstm_block_cell_equals_basic_lstm_cell(use_dynamic):
    block, core = _compare_cells(lambda: tf.contrib.rnn.LSTMBlockCell(N, forget_bias=0.5),
                                 lambda: tf.nn.rnn_cell.BasicLSTMCell(N, forget_bias=0.5),
                                 use_dynamic=use_dynamic)
    _assert_same(block, core)


def test_lstm_block_cell_peepholes_and_clip_equal_lstm_cell():
    def make_block():
        return tf.contrib.rnn.LSTMBlockCell(N, cell_clip=0.8, use_peephole=True)

    def make_core():
        return tf.nn.rnn_cell.LSTMCell(N, use_peepholes=True, cell_clip=0.8)

    x_val = _inputs(2)
    vals = []
    for make in (make_block, make_core):
        with tf.Graph().as_default():
            cell = make()
            out, state = tf.nn.dynamic_rnn(cell, tf.constant(x_val), dtype=tf.float32)
            variables = {v.op.name.split("/")[-1]: v for v in tf.global_variables()}
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                rng = np.random.default_rng(3)
                for name in sorted(variables):
                    v = variables[name]
                    v.load(rng.standard_normal(v.shape.as_list()).astype(np.float32), sess)
                vals.append(sess.run([out, state]))
    np.testing.assert_allclose(vals[0][0], vals[1][0], rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(vals[0][1].c, vals[1][1].c, rtol=2e-5, atol=2e-5)
    assert np.abs(vals[0][1].c).max() <= 0.8 + 1e-6


@pytest.mark.parametrize("cls", ["GRUBlockCell", "GRUBlockCellV2"])
def test_gru_block_cells_equal_gru_cell(cls):
    block, core = _compare_cells(lambda: getattr(tf.contrib.rnn, cls)(N),
                                 lambda: tf.nn.rnn_cell.GRUCell(N))
    # GRUBlockCell's variables come in the order w_ru, b_ru, w_c, b_c; GRUCell's likewise
    _assert_same(block, core)


def _fused_vs_cell(sequence_length, list_inputs=False):
    x_val = np.transpose(_inputs(4), [1, 0, 2])  # time-major
    vals = []
    for fused in (True, False):
        with tf.Graph().as_default():
            x = tf.constant(x_val)
            c0 = tf.constant(np.full((B, N), 0.3, np.float32))
            h0 = tf.constant(np.full((B, N), -0.2, np.float32))
            if fused:
                cell = tf.contrib.rnn.LSTMBlockFusedCell(N, use_peephole=True)
                inputs = tf.unstack(x) if list_inputs else x
                out, state = cell(inputs, initial_state=(c0, h0),
                                  sequence_length=sequence_length)
                if list_inputs:
                    assert isinstance(out, list) and len(out) == T
                    out = tf.stack(out)
            else:
                cell = tf.contrib.rnn.LSTMBlockCell(N, use_peephole=True)
                outs, state = tf.contrib.rnn.static_rnn(
                    cell, tf.unstack(x), initial_state=tf.nn.rnn_cell.LSTMStateTuple(c0, h0),
                    sequence_length=sequence_length)
                out = tf.stack(outs)
            variables = tf.trainable_variables()
            grads = tf.gradients(tf.reduce_sum(out * out) + tf.reduce_sum(state.c), variables)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                if vals:
                    for v, value in zip(variables, vals[0][3], strict=True):
                        v.load(value, sess)
                vals.append(sess.run([out, state, grads, variables]))
    (o1, s1, g1, _), (o2, s2, g2, _) = vals
    np.testing.assert_allclose(o1, o2, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(s1.c, s2.c, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(s1.h, s2.h, rtol=2e-5, atol=2e-5)
    for u, v in zip(g1, g2, strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-4, atol=1e-4)
    return o1


def test_lstm_block_fused_cell_equals_block_cell():
    _fused_vs_cell(None)
    _fused_vs_cell(None, list_inputs=True)


def test_lstm_block_fused_cell_sequence_length():
    out = _fused_vs_cell([2, 4, 0])
    assert not out[2:, 0].any() and not out[:, 2].any()


def test_fused_cell_errors():
    with tf.Graph().as_default():
        cell = tf.contrib.rnn.LSTMBlockFusedCell(N)
        with pytest.raises(ValueError):
            cell(tf.zeros([T, B, D]))
        with pytest.raises(ValueError):
            tf.contrib.rnn.LSTMBlockFusedCell(N)(tf.placeholder(tf.float32, [T, B, None]),
                                                 dtype=tf.float32)


def test_block_cell_trains():
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        x = tf.constant(_inputs(5))
        out, _ = tf.nn.dynamic_rnn(tf.contrib.rnn.LSTMBlockCell(N), x, dtype=tf.float32)
        loss = tf.reduce_mean(tf.square(out - 0.5))
        step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(loss)
            for _ in range(20):
                sess.run(step)
            assert sess.run(loss) < first * 0.7


@pytest.mark.oracle
def test_tensorflow_graphdef_with_fused_ops_imports_and_runs():
    """TF writes a GraphDef with LSTMBlockCell, BlockLSTM and GRUBlockCell nodes (and the
    BlockLSTMGrad node of tf.gradients); tensorflux imports it and gives TF's values."""
    theirs = oracle.run_tf("""
import base64
rng = np.random.RandomState(0)
c = lambda *s: tf.constant(rng.standard_normal(s).astype(np.float32))
x = tf.placeholder(tf.float32, [3, 5], name="x")
n = 6
w, b, p = c(5 + n, 4 * n), c(4 * n), c(n)
z = tf.zeros([3, n])
cell = tf.raw_ops.LSTMBlockCell(x=x, cs_prev=z, h_prev=z, w=w, wci=p, wcf=p, wco=p, b=b,
                                forget_bias=1.0, cell_clip=-1.0, use_peephole=False)
tf.identity(cell.h, name="cell_h")
seq = tf.raw_ops.BlockLSTM(seq_len_max=np.int64(4), x=tf.stack([x] * 4), cs_prev=z,
                           h_prev=z, w=w, wci=p, wcf=p, wco=p, b=b, use_peephole=True)
tf.identity(seq.h, name="seq_h")
tf.identity(tf.gradients(tf.reduce_sum(seq.h), x)[0], name="seq_dx")
gru = tf.raw_ops.GRUBlockCell(x=x, h_prev=z, w_ru=c(5 + n, 2 * n), w_c=c(5 + n, n),
                              b_ru=c(2 * n), b_c=c(n))
tf.identity(gru.h, name="gru_h")
feed = rng.standard_normal((3, 5)).astype(np.float32)
with tf.Session() as sess:
    vals = sess.run(["cell_h:0", "seq_h:0", "seq_dx:0", "gru_h:0"], {"x:0": feed})
g = tf.get_default_graph().as_graph_def()
result = {"graph": base64.b64encode(g.SerializeToString()).decode(), "feed": feed,
          "vals": vals, "ops": sorted({n.op for n in g.node})}
""")
    import base64

    assert {"LSTMBlockCell", "BlockLSTM", "BlockLSTMGrad", "GRUBlockCell"} <= set(theirs["ops"])
    graph_def = tf.GraphDef.FromString(base64.b64decode(theirs["graph"]))
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess:
            got = sess.run(["cell_h:0", "seq_h:0", "seq_dx:0", "gru_h:0"],
                           {"x:0": np.asarray(theirs["feed"], np.float32)})
    for g, w in zip(got, theirs["vals"], strict=True):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-4, atol=1e-5)


# ---- LayerNormBasicLSTMCell (plain ops) ------------------------------------------------------

def _ln(v, gamma, beta):
    mean = v.mean(1, keepdims=True)
    var = v.var(1, keepdims=True)
    return (v - mean) / np.sqrt(var + 1e-12) * gamma + beta


def _ln_lstm_reference(x, c, h, weights, forget_bias):
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    g = np.concatenate([x, h], 1) @ weights["kernel"]
    i, j, f, o = np.split(g, 4, axis=1)
    i, j, f, o = (_ln(v, weights[f"{s}/gamma"], weights[f"{s}/beta"])
                  for v, s in zip((i, j, f, o), ("input", "transform", "forget", "output"),
                                  strict=True))
    new_c = c * sig(f + forget_bias) + sig(i) * np.tanh(j)
    new_c = _ln(new_c, weights["state/gamma"], weights["state/beta"])
    return np.tanh(new_c) * sig(o), new_c


def test_layer_norm_basic_lstm_cell_values_and_names():
    rng = np.random.default_rng(6)
    x, c, h = (rng.standard_normal(s).astype(np.float32) for s in ((B, D), (B, N), (B, N)))
    with tf.Graph().as_default():
        cell = tf.contrib.rnn.LayerNormBasicLSTMCell(N, forget_bias=0.3, norm_gain=1.5,
                                                     norm_shift=0.1)
        out, state = cell(tf.constant(x), tf.nn.rnn_cell.LSTMStateTuple(
            tf.constant(c), tf.constant(h)))
        variables = {v.op.name.split("layer_norm_basic_lstm_cell/")[1]: v
                     for v in tf.global_variables()}
        assert sorted(variables) == sorted(
            ["kernel"] + [f"{s}/{p}" for s in ("input", "transform", "forget", "output",
                                               "state") for p in ("gamma", "beta")])
        assert variables["kernel"].shape.as_list() == [D + N, 4 * N]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_allclose(sess.run(variables["input/gamma"]), np.full(N, 1.5))
            weights = {}
            for name, v in variables.items():
                weights[name] = rng.standard_normal(v.shape.as_list()).astype(np.float32)
                v.load(weights[name], sess)
            got_h, got_state = sess.run([out, state])
    want_h, want_c = _ln_lstm_reference(x, c, h, weights, 0.3)
    np.testing.assert_allclose(got_h, want_h, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_state.c, want_c, rtol=1e-4, atol=1e-5)


def test_layer_norm_off_equals_basic_lstm_cell():
    block, core = _compare_cells(
        lambda: tf.contrib.rnn.LayerNormBasicLSTMCell(N, forget_bias=0.5, layer_norm=False),
        lambda: tf.nn.rnn_cell.BasicLSTMCell(N, forget_bias=0.5))
    _assert_same(block, core)


def test_layer_norm_cell_gradient_and_dropout():
    rng = np.random.default_rng(7)
    x_val = rng.standard_normal((2, 3, 3))
    with tf.Graph().as_default():
        # Seeded weights: with random ones, layer norm over 2 units is sometimes so
        # ill-conditioned that the finite differences themselves are off by ~2e-5.
        tf.set_random_seed(7)
        x = tf.placeholder(tf.float64, [2, 3, 3])
        out, _ = tf.nn.dynamic_rnn(tf.contrib.rnn.LayerNormBasicLSTMCell(2), x,
                                   dtype=tf.float64)
        y = tf.reduce_sum(out * tf.constant(rng.standard_normal((2, 3, 2))))
        with tf.Session():
            tf.global_variables_initializer().run()
            err = tf.test.compute_gradient_error(x, [2, 3, 3], y, [], x_init_value=x_val)
        assert err < 1e-5
        dropped = tf.contrib.rnn.LayerNormBasicLSTMCell(4, dropout_keep_prob=0.5,
                                                        dropout_prob_seed=3)
        out2, _ = tf.nn.dynamic_rnn(dropped, tf.ones([2, 3, 5]), dtype=tf.float32,
                                    scope="dropped")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert np.isfinite(sess.run(out2)).all()
