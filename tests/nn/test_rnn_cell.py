"""Tests of the RNN cells (tensorflux/nn/rnn_cell_impl.py, rnn_cell_wrapper_impl.py) and
static_rnn: variable names, shapes and scoping as TensorFlow 1.x makes them, values against
NumPy references written from the papers' equations (gate orders i, j, f, o and r, u),
finite-difference gradients, errors, and an oracle comparison that runs the same weights in
TensorFlow's cells.
"""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle
from tests.op_test_util import STRATEGIES

rc = tf.nn.rnn_cell

# Cell configurations, as expressions over `rc` (tf.nn.rnn_cell here, TF's legacy module in
# the oracle) and `tf`.
CONFIGS = {
    "basic_rnn": "rc.BasicRNNCell(4)",
    "basic_rnn_relu": "rc.BasicRNNCell(4, activation=tf.nn.relu)",
    "gru": "rc.GRUCell(4)",
    "basic_lstm": "rc.BasicLSTMCell(4)",
    "basic_lstm_concat": "rc.BasicLSTMCell(4, forget_bias=0.5, state_is_tuple=False)",
    "lstm": "rc.LSTMCell(4)",
    "lstm_peep_clip": "rc.LSTMCell(4, use_peepholes=True, cell_clip=0.3)",
    "lstm_proj": "rc.LSTMCell(4, num_proj=3, proj_clip=0.2, use_peepholes=True, "
                 "forget_bias=0.0)",
    "lstm_proj_concat": "rc.LSTMCell(4, num_proj=3, state_is_tuple=False)",
    "lstm_shards": "rc.LSTMCell(4, num_unit_shards=2, num_proj=3, num_proj_shards=3)",
    "multi": "rc.MultiRNNCell([rc.LSTMCell(4), rc.GRUCell(3)])",
    "multi_concat": "rc.MultiRNNCell([rc.GRUCell(4), rc.BasicRNNCell(3)], "
                    "state_is_tuple=False)",
}

# What TensorFlow 1.x names the variables (checked by test_oracle_static_rnn).
EXPECTED_VARIABLES = {
    "basic_rnn": [("basic_rnn_cell/kernel", [9, 4]), ("basic_rnn_cell/bias", [4])],
    "gru": [("gru_cell/gates/kernel", [9, 8]), ("gru_cell/gates/bias", [8]),
            ("gru_cell/candidate/kernel", [9, 4]), ("gru_cell/candidate/bias", [4])],
    "basic_lstm": [("basic_lstm_cell/kernel", [9, 16]), ("basic_lstm_cell/bias", [16])],
    "lstm_proj": [("lstm_cell/kernel", [8, 16]), ("lstm_cell/bias", [16]),
                  ("lstm_cell/w_f_diag", [4]), ("lstm_cell/w_i_diag", [4]),
                  ("lstm_cell/w_o_diag", [4]), ("lstm_cell/projection/kernel", [4, 3])],
    "lstm_shards": [("lstm_cell/kernel/part_0", [4, 16]), ("lstm_cell/kernel/part_1", [4, 16]),
                    ("lstm_cell/bias", [16]), ("lstm_cell/projection/kernel/part_0", [2, 3]),
                    ("lstm_cell/projection/kernel/part_1", [1, 3]),
                    ("lstm_cell/projection/kernel/part_2", [1, 3])],
    "multi": [("multi_rnn_cell/cell_0/lstm_cell/kernel", [9, 16]),
              ("multi_rnn_cell/cell_0/lstm_cell/bias", [16]),
              ("multi_rnn_cell/cell_1/gru_cell/gates/kernel", [7, 6]),
              ("multi_rnn_cell/cell_1/gru_cell/gates/bias", [6]),
              ("multi_rnn_cell/cell_1/gru_cell/candidate/kernel", [7, 3]),
              ("multi_rnn_cell/cell_1/gru_cell/candidate/bias", [3])],
}

T, B, D = 3, 2, 5  # time steps, batch, input depth
SEQ_LEN = [3, 1]


def weights_for(name: str, shape) -> np.ndarray:
    """Deterministic values for the variable `name` (the same in the oracle snippet)."""
    rng = np.random.RandomState(zlib.crc32(name.encode()) % (2 ** 31))
    return rng.uniform(-0.6, 0.6, size=shape)


def inputs_array(t=T, b=B, d=D, seed=7) -> np.ndarray:
    """Time-major inputs [t, b, d]."""
    return np.random.RandomState(seed).uniform(-1.0, 1.0, size=(t, b, d))


def set_weights(sess, variables=None) -> dict:
    """Loads `weights_for` into every global variable; returns {name: array}."""
    values = {}
    for v in variables if variables is not None else tf.global_variables():
        name = v.name.split(":")[0]
        values[name] = weights_for(name, v.shape.as_list()).astype(v.dtype.as_numpy_dtype)
        v.load(values[name], sess)
    return values


# ---- NumPy references ---------------------------------------------------------------------

def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def ref_basic_rnn(w, x, h, act=np.tanh):
    out = act(np.concatenate([x, h], 1) @ w["kernel"] + w["bias"])
    return out, out


def ref_gru(w, x, h):
    value = _sigmoid(np.concatenate([x, h], 1) @ w["gates/kernel"] + w["gates/bias"])
    r, u = np.split(value, 2, axis=1)
    c = np.tanh(np.concatenate([x, r * h], 1) @ w["candidate/kernel"] + w["candidate/bias"])
    new_h = u * h + (1 - u) * c
    return new_h, new_h


def ref_lstm(w, x, state, forget_bias=1.0, peepholes=False, cell_clip=None, proj=False,
             proj_clip=None):
    """One LSTM step, gates i, j, f, o; `state` is (c, h)."""
    c, h = state
    z = np.concatenate([x, h], 1) @ w["kernel"] + w["bias"]
    i, j, f, o = np.split(z, 4, axis=1)
    if peepholes:
        c = (_sigmoid(f + forget_bias + w["w_f_diag"] * c) * c
             + _sigmoid(i + w["w_i_diag"] * c) * np.tanh(j))
    else:
        c = _sigmoid(f + forget_bias) * c + _sigmoid(i) * np.tanh(j)
    if cell_clip is not None:
        c = np.clip(c, -cell_clip, cell_clip)
    m = _sigmoid(o + (w["w_o_diag"] * c if peepholes else 0)) * np.tanh(c)
    if proj:
        m = m @ w["projection/kernel"]
        if proj_clip is not None:
            m = np.clip(m, -proj_clip, proj_clip)
    return m, (c, m)


def ref_static_rnn(step, xs, state, seq_len=None):
    """Unrolls `step(x, state) -> (out, state)` with TF's sequence-length masking."""
    outputs = []
    for t, x in enumerate(xs):
        out, new_state = step(x, state)
        if seq_len is not None:
            alive = (t < np.asarray(seq_len))[:, None]
            out = np.where(alive, out, 0.0)
            new_state = tuple(np.where(alive, n, s) for n, s in
                              zip(_flat(new_state), _flat(state), strict=True))
            new_state = new_state if isinstance(state, tuple) else new_state[0]
        outputs.append(out)
        state = new_state
    return outputs, state


def _flat(s):
    if isinstance(s, (tuple, list)):
        return [leaf for x in s for leaf in _flat(x)]
    return [s]


def _scoped(values, prefix):
    return {k[len(prefix):]: v for k, v in values.items() if k.startswith(prefix)}


# ---- names and scoping ---------------------------------------------------------------------

def _static(cell_expr, scope, seq_len=None, dtype=tf.float32):
    x = tf.placeholder(dtype, [T, B, D], name="x")
    cell = eval(cell_expr, {"rc": rc, "tf": tf})  # noqa: S307 - fixed test table
    outputs, state = tf.nn.static_rnn(cell, tf.unstack(x), dtype=dtype,
                                      sequence_length=seq_len, scope=scope)
    return x, cell, outputs, state


@pytest.mark.parametrize("config", sorted(EXPECTED_VARIABLES))
def test_variable_names_and_shapes(config):
    with tf.Graph().as_default():
        _static(CONFIGS[config], "s")
        got = [(v.name, v.shape.as_list()) for v in tf.global_variables()]
    assert got == [(f"s/{n}:0", shape) for n, shape in EXPECTED_VARIABLES[config]]


def test_scope_capture_and_uniquification():
    with tf.Graph().as_default():
        x = tf.zeros([B, D])
        h = tf.zeros([B, 3])
        with tf.variable_scope("s"):
            a = rc.BasicRNNCell(3)
            out1, _ = a(x, h)
            out2, _ = a(x, h)   # second call reuses
            b = rc.BasicRNNCell(3)
            b(x, h)
            c = rc.BasicRNNCell(3)
            c(x, h, scope="mine")
            c(x, h, scope="ignored")  # the first call's scope stays
            d = rc.BasicRNNCell(3, name="named")
            d(x, h)
            e = rc.BasicRNNCell(3, name="named", reuse=True)
            e(x, h)
        names = [v.name for v in tf.global_variables()]
        assert names == ["s/basic_rnn_cell/kernel:0", "s/basic_rnn_cell/bias:0",
                         "s/basic_rnn_cell_1/kernel:0", "s/basic_rnn_cell_1/bias:0",
                         "s/mine/kernel:0", "s/mine/bias:0",
                         "s/named/kernel:0", "s/named/bias:0"]
        assert (out1.name, out2.name) == ("s/basic_rnn_cell/Tanh:0",
                                          "s/basic_rnn_cell/Tanh_1:0")
        assert (a.scope_name, c.scope_name, e.scope_name) == ("s/basic_rnn_cell", "s/mine",
                                                              "s/named")
        assert [v.name for v in a.trainable_weights] == ["s/basic_rnn_cell/kernel:0",
                                                         "s/basic_rnn_cell/bias:0"]


def test_static_rnn_shares_variables_across_steps_and_names_ops():
    with tf.Graph().as_default():
        _, cell, outputs, state = _static(CONFIGS["basic_lstm"], None)
        assert len(tf.global_variables()) == 2
        assert [o.shape.as_list() for o in outputs] == [[B, 4]] * T
        assert isinstance(state, rc.LSTMStateTuple)
        assert outputs[0].name.startswith("rnn/basic_lstm_cell/")
        assert cell.scope_name == "rnn/basic_lstm_cell"


def test_zero_state_shapes_and_names():
    with tf.Graph().as_default():
        lstm = rc.LSTMCell(4, num_proj=3)
        z = lstm.zero_state(5, tf.float64)
        assert isinstance(z, rc.LSTMStateTuple)
        assert [t.shape.as_list() for t in z] == [[5, 4], [5, 3]]
        assert z.c.dtype == tf.float64 and z.dtype == tf.float64
        assert z.c.name.startswith("LSTMCellZeroState/")
        n = tf.placeholder(tf.int32, [])
        multi = rc.MultiRNNCell([rc.GRUCell(2), rc.BasicLSTMCell(3)])
        zs = multi.zero_state(n, tf.float32)
        assert zs[0].shape.as_list() == [None, 2]
        assert [t.shape.as_list() for t in zs[1]] == [[None, 3], [None, 3]]
        with tf.Session() as sess:
            got = sess.run(zs, {n: 2})
        assert got[1].c.shape == (2, 3) and not got[1].c.any()
        concat = rc.MultiRNNCell([rc.GRUCell(2), rc.BasicRNNCell(3)], state_is_tuple=False)
        assert concat.state_size == 5
        assert concat.zero_state(4, tf.float32).shape.as_list() == [4, 5]
        x = tf.placeholder(tf.float32, [None, 6])
        assert rc.GRUCell(2).get_initial_state(inputs=x).shape.as_list() == [None, 2]


def test_sizes():
    assert rc.BasicLSTMCell(4).state_size == (4, 4)
    assert rc.BasicLSTMCell(4, state_is_tuple=False).state_size == 8
    assert rc.LSTMCell(4, num_proj=2).state_size == rc.LSTMStateTuple(4, 2)
    assert rc.LSTMCell(4, num_proj=2).output_size == 2
    assert rc.LSTMCell(4, num_proj=2, state_is_tuple=False).state_size == 6
    assert rc.MultiRNNCell([rc.GRUCell(2), rc.LSTMCell(3)]).state_size == (2, (3, 3))
    assert rc.MultiRNNCell([rc.GRUCell(2), rc.LSTMCell(3)]).output_size == 3


# ---- values against NumPy -----------------------------------------------------------------

_REFS = {
    "basic_rnn": lambda w: lambda x, s: ref_basic_rnn(_scoped(w, "s/basic_rnn_cell/"), x, s),
    "basic_rnn_relu": lambda w: lambda x, s: ref_basic_rnn(
        _scoped(w, "s/basic_rnn_cell/"), x, s, act=lambda v: np.maximum(v, 0)),
    "gru": lambda w: lambda x, s: ref_gru(_scoped(w, "s/gru_cell/"), x, s),
    "basic_lstm": lambda w: lambda x, s: ref_lstm(_scoped(w, "s/basic_lstm_cell/"), x, s),
    "lstm_peep_clip": lambda w: lambda x, s: ref_lstm(
        _scoped(w, "s/lstm_cell/"), x, s, peepholes=True, cell_clip=0.3),
    "lstm_proj": lambda w: lambda x, s: ref_lstm(
        _scoped(w, "s/lstm_cell/"), x, s, forget_bias=0.0, peepholes=True, proj=True,
        proj_clip=0.2),
}
_REF_STATE = {"basic_rnn": 4, "basic_rnn_relu": 4, "gru": 4, "basic_lstm": (4, 4),
              "lstm_peep_clip": (4, 4), "lstm_proj": (4, 3)}


@pytest.mark.parametrize("seq_len", [None, SEQ_LEN], ids=["full", "seq_len"])
@pytest.mark.parametrize("config", sorted(_REFS))
def test_static_rnn_values(config, seq_len):
    with tf.Graph().as_default():
        x, _, outputs, state = _static(CONFIGS[config], "s", seq_len=seq_len,
                                       dtype=tf.float64)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            w = set_weights(sess)
            xv = inputs_array()
            got_out, got_state = sess.run((outputs, state), {x: xv})
    size = _REF_STATE[config]
    init = tuple(np.zeros((B, n)) for n in size) if isinstance(size, tuple) \
        else np.zeros((B, size))
    want_out, want_state = ref_static_rnn(_REFS[config](w), list(xv), init, seq_len)
    np.testing.assert_allclose(np.array(got_out), np.array(want_out), atol=1e-10)
    for g, e in zip(_flat(got_state), _flat(want_state), strict=True):
        np.testing.assert_allclose(g, e, atol=1e-10)


def test_multi_rnn_cell_concatenated_state_matches_tuple_state():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [B, D])
        with tf.variable_scope("a"):
            tup = rc.MultiRNNCell([rc.GRUCell(4), rc.BasicRNNCell(3)])
            out_t, st_t = tup(x, tup.zero_state(B, tf.float64))
        with tf.variable_scope("b"):
            cat = rc.MultiRNNCell([rc.GRUCell(4), rc.BasicRNNCell(3)], state_is_tuple=False)
            out_c, st_c = cat(x, cat.zero_state(B, tf.float64))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for v in tf.global_variables():  # same weights in both
                v.load(weights_for(v.name[2:], v.shape.as_list()), sess)
            got = sess.run([out_t, st_t, out_c, st_c], {x: inputs_array()[0]})
    np.testing.assert_allclose(got[0], got[2])
    np.testing.assert_allclose(np.concatenate(got[1], 1), got[3])


def test_every_strategy_agrees():
    """static_rnn's graph (no control flow) on the compiled static path, on the plain
    dataflow executor and on the reference executor, forward and backward."""
    with tf.Graph().as_default():
        x, _, outputs, state = _static(CONFIGS["multi"], "s", seq_len=SEQ_LEN)
        loss = tf.reduce_sum(tf.stack(outputs)) + tf.reduce_sum(state[0].c)
        fetches = [outputs, _flat(state), tf.gradients(loss, tf.trainable_variables())]
        got = []
        for strategy in ("auto", "dataflow", "reference"):
            with tf.Session(exec_options=STRATEGIES[strategy]) as sess:
                sess.run(tf.global_variables_initializer())
                set_weights(sess)
                got.append(sess.run(fetches, {x: inputs_array()}))
    for other in got[1:]:
        for a, b in zip(_flat(got[0]), _flat(other), strict=True):
            np.testing.assert_array_equal(a, b)


# ---- gradients ----------------------------------------------------------------------------

def numeric_gradient_check(loss, params, feed, sess, n_checks=12, delta=1e-6, seed=0):
    """Compares tf.gradients of scalar `loss` with central differences on up to `n_checks`
    random elements of each variable in `params` (float64); returns the worst relative
    error."""
    grads = sess.run(tf.gradients(loss, params), feed)
    rng = np.random.RandomState(seed)
    worst = 0.0
    for v, g in zip(params, grads, strict=True):
        value = sess.run(v)
        g = np.asarray(g)
        for idx in rng.choice(value.size, size=min(n_checks, value.size), replace=False):
            up, down = value.copy(), value.copy()
            up.flat[idx] += delta
            down.flat[idx] -= delta
            v.load(up, sess)
            f_up = sess.run(loss, feed)
            v.load(down, sess)
            f_down = sess.run(loss, feed)
            v.load(value, sess)
            numeric = (f_up - f_down) / (2 * delta)
            err = abs(numeric - g.flat[idx]) / max(1e-2, abs(numeric))
            worst = max(worst, err)
    return worst


@pytest.mark.parametrize("config", ["basic_lstm", "lstm_proj", "gru", "multi_concat"])
def test_static_rnn_gradients(config):
    with tf.Graph().as_default():
        x, _, outputs, state = _static(CONFIGS[config], "s", seq_len=SEQ_LEN,
                                       dtype=tf.float64)
        proj = tf.constant(np.random.RandomState(1).standard_normal(
            (T, B, int(outputs[0].shape[1]))))
        loss = tf.reduce_sum(tf.stack(outputs) * proj) + tf.add_n(
            [tf.reduce_sum(s * s) for s in _flat(state)])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            set_weights(sess)
            feed = {x: inputs_array()}
            worst = numeric_gradient_check(loss, tf.trainable_variables(), feed, sess)
    assert worst < 1e-6


# ---- wrappers -----------------------------------------------------------------------------

def test_dropout_wrapper():
    with tf.Graph().as_default():
        x = tf.ones([64, 8], tf.float64)
        base = rc.BasicLSTMCell(8)
        keep_all = rc.DropoutWrapper(base)
        out_a, st_a = keep_all(x, base.zero_state(64, tf.float64))
        assert out_a.op.name.startswith("basic_lstm_cell/")  # the wrapper adds no scope
        drop = rc.DropoutWrapper(base, input_keep_prob=0.5, output_keep_prob=0.5,
                                 state_keep_prob=0.5, seed=3)
        out_b, st_b = drop(x, base.zero_state(64, tf.float64))
        assert len(tf.global_variables()) == 2  # the wrapped cell's, shared
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            a, sa, b, sb = sess.run([out_a, st_a, out_b, st_b])
        zero = b == 0
        assert 0.2 < zero.mean() < 0.8
        # Output and h dropped out (kept entries scaled by 1/keep); c never dropped.
        assert np.all(np.isclose(b[~zero] * 0.5, b[~zero] / 2))
        assert (sb.h == 0).mean() > 0.2 and (sb.c == 0).mean() < 0.05
        assert (sa.c != 0).all()
    with pytest.raises(ValueError, match="between 0 and 1"):
        rc.DropoutWrapper(base, output_keep_prob=1.5)
    with pytest.raises(ValueError, match="dtype must be provided"):
        rc.DropoutWrapper(base, state_keep_prob=0.5, variational_recurrent=True)


def test_variational_dropout_same_mask_each_step():
    with tf.Graph().as_default():
        x = tf.ones([16, 4], tf.float32)
        cell = rc.DropoutWrapper(rc.BasicRNNCell(6), output_keep_prob=0.5,
                                 variational_recurrent=True, dtype=tf.float32, seed=1)
        outputs, _ = tf.nn.static_rnn(cell, [x, x, x], dtype=tf.float32)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run(outputs)
        masks = [g == 0 for g in got]
        assert masks[0].any() and (masks[0] == masks[1]).all() and (masks[1] == masks[2]).all()


def test_residual_and_device_wrappers():
    with tf.Graph().as_default():
        x = tf.constant(np.ones((2, 3)), tf.float64)
        res = rc.ResidualWrapper(rc.BasicRNNCell(3))
        out, _ = res(x, res.zero_state(2, tf.float64))
        dev = rc.DeviceWrapper(rc.GRUCell(3), "/cpu:0")
        out_d, _ = dev(x, dev.zero_state(2, tf.float64))
        assert "CPU" in out_d.op.device.upper()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            set_weights(sess)
            got = sess.run(out)
            w = {k.split("/", 1)[1]: v for k, v in set_weights(sess).items()
                 if k.startswith("basic_rnn_cell/")}
        np.testing.assert_allclose(got, ref_basic_rnn(w, np.ones((2, 3)),
                                                      np.zeros((2, 3)))[0] + 1.0)


# ---- errors -------------------------------------------------------------------------------

def test_errors():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="is not an RNNCell"):
            tf.nn.static_rnn(object(), [tf.zeros([2, 3])], dtype=tf.float32)
        with pytest.raises(TypeError, match="must be a sequence"):
            tf.nn.static_rnn(rc.GRUCell(2), tf.zeros([2, 3]), dtype=tf.float32)
        with pytest.raises(ValueError, match="must not be empty"):
            tf.nn.static_rnn(rc.GRUCell(2), [], dtype=tf.float32)
        with pytest.raises(ValueError, match="dtype"):
            tf.nn.static_rnn(rc.GRUCell(2), [tf.zeros([2, 3])])
        with pytest.raises(ValueError, match="must be accessible via shape inference"):
            tf.nn.static_rnn(rc.GRUCell(2), [tf.placeholder(tf.float32, [2, None])],
                             dtype=tf.float32)
        with pytest.raises(ValueError, match="only supports floating point"):
            rc.GRUCell(2)(tf.zeros([2, 3], tf.int32), tf.zeros([2, 2], tf.int32))
        with pytest.raises(ValueError, match="expected ndim=2, found ndim=3"):
            rc.BasicLSTMCell(2)(tf.zeros([2, 3, 1]), rc.BasicLSTMCell(2).zero_state(
                2, tf.float32))
        with pytest.raises(ValueError, match="at least one cell"):
            rc.MultiRNNCell([])
        with pytest.raises(ValueError, match="state_is_tuple is not set"):
            rc.MultiRNNCell([rc.BasicLSTMCell(2)], state_is_tuple=False)
        with pytest.raises(ValueError, match="Unknown activation"):
            rc.BasicRNNCell(2, activation="nope")
        cell = rc.BasicRNNCell(2)
        with pytest.raises(ValueError, match="has not been used yet"):
            cell.scope_name  # noqa: B018


# ---- the oracle ---------------------------------------------------------------------------

_ORACLE_CODE = """
import zlib
from tensorflow.python.keras.layers.legacy_rnn import rnn_cell_impl as rc
CONFIGS = json.loads(CONFIGS_JSON)
T, B, D = 3, 2, 5
def weights_for(name, shape):
    rng = np.random.RandomState(zlib.crc32(name.encode()) % (2 ** 31))
    return rng.uniform(-0.6, 0.6, size=shape)
xv = np.random.RandomState(7).uniform(-1.0, 1.0, size=(T, B, D))
def flat(s):
    return [l for x in s for l in flat(x)] if isinstance(s, (tuple, list)) else [s]
result = {}
for key, expr in sorted(CONFIGS.items()):
    for seq in (None, [3, 1]):
        g = tf.Graph()
        with g.as_default():
            x = tf.placeholder(tf.float64, [T, B, D])
            cell = eval(expr)
            outputs, state = tf.nn.static_rnn(cell, tf.unstack(x), dtype=tf.float64,
                                              sequence_length=seq, scope="s")
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for v in tf.global_variables():
                    name = v.name.split(":")[0]
                    v.load(weights_for(name, v.shape.as_list()), sess)
                out, st = sess.run((outputs, flat(state)), {x: xv})
            result[key + ("" if seq is None else "/seq")] = {
                "vars": [[v.name, v.shape.as_list()] for v in tf.global_variables()],
                "outputs": np.array(out), "state": st}
"""


@pytest.mark.oracle
def test_oracle_static_rnn():
    """Names, shapes, outputs and states of every configuration against TensorFlow's cells
    with the same weights (full sequences and sequence_length=[3, 1])."""
    want = oracle.run_tf(f"CONFIGS_JSON = {json.dumps(CONFIGS)!r}\n" + _ORACLE_CODE,
                         timeout=180)
    for key, expr in sorted(CONFIGS.items()):
        for seq in (None, SEQ_LEN):
            label = key + ("" if seq is None else "/seq")
            with tf.Graph().as_default():
                x, _, outputs, state = _static(expr, "s", seq_len=seq, dtype=tf.float64)
                names = [[v.name, v.shape.as_list()] for v in tf.global_variables()]
                with tf.Session() as sess:
                    sess.run(tf.global_variables_initializer())
                    set_weights(sess)
                    out, st = sess.run((outputs, _flat(state)), {x: inputs_array()})
            assert names == want[label]["vars"], label
            np.testing.assert_allclose(np.array(out), want[label]["outputs"], atol=1e-10,
                                       err_msg=label)
            for g, e in zip(st, want[label]["state"], strict=True):
                np.testing.assert_allclose(g, e, atol=1e-10, err_msg=label)
