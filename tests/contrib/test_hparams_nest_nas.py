"""tf.contrib.training.HParams, tf.contrib.framework.nest (TF1's nest), contrib.learn's
ModeKeys and contrib.rnn's NASCell (against a NumPy step), as tensorflow/nmt and GPT-2 use
them."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tensorflux as tf

HParams = tf.contrib.training.HParams
nest = tf.contrib.framework.nest


def test_hparams_values_types_and_overrides():
    hp = HParams(lr=0.1, layers=3, name="gnmt", use_x=False, sizes=[1, 2])
    assert hp.lr == 0.1 and hp.layers == 3 and "sizes" in hp and "other" not in hp
    hp.set_hparam("lr", 1)            # an int may become a float
    assert hp.lr == 1.0 and isinstance(hp.lr, float)
    hp.parse("layers=5,name=big,use_x=true,sizes=[4,5,6],lr=2e-3")
    assert hp.values() == {"lr": 0.002, "layers": 5, "name": "big", "use_x": True,
                           "sizes": [4, 5, 6]}
    hp.parse("sizes[1]=9")
    assert hp.sizes == [4, 9, 6]
    assert json.loads(hp.to_json()) == hp.values()
    hp.parse_json('{"layers": 2}')
    assert hp.layers == 2 and hp.get("layers", 7) == 2 and hp.get("missing", 7) == 7
    hp.add_hparam("extra", 0.5)
    hp.del_hparam("extra")
    assert "extra" not in hp and not hasattr(hp, "extra")
    assert repr(hp).startswith("HParams([('layers', 2)")
    hp.override_from_dict({"layers": 4})
    assert hp.layers == 4


@pytest.mark.parametrize("action, error", [
    (lambda hp: hp.set_hparam("layers", 2.5), "Could not cast hparam 'layers'"),
    (lambda hp: hp.set_hparam("use_x", 1), "Could not cast hparam 'use_x'"),
    (lambda hp: hp.set_hparam("name", 3), "Could not cast hparam 'name'"),
    (lambda hp: hp.set_hparam("layers", [1]), "Must not pass a list"),
    (lambda hp: hp.set_hparam("sizes", 1), "Must pass a list"),
    (lambda hp: hp.parse("nope=1"), "Unknown hyperparameter type for nope"),
    (lambda hp: hp.parse("layers=x"), "Could not parse hparam 'layers'"),
    (lambda hp: hp.parse("layers=1,layers=2"), "Multiple assignments"),
    (lambda hp: hp.parse("use_x=maybe"), "Could not parse hparam 'use_x'"),
    (lambda hp: hp.add_hparam("layers", 1), "reserved"),
    (lambda hp: hp.add_hparam("parse", 1), "reserved"),
    (lambda hp: hp.add_hparam("empty", []), "cannot be empty"),
    (lambda hp: hp.get("layers", "text"), "incompatible with default"),
])
def test_hparams_errors(action, error):
    hp = HParams(layers=3, name="a", use_x=False, sizes=[1, 2])
    with pytest.raises(ValueError, match=error):
        action(hp)
    with pytest.raises(KeyError):
        hp.set_hparam("unknown", 1)


def test_mode_keys():
    keys = tf.contrib.learn.ModeKeys
    assert (keys.TRAIN, keys.EVAL, keys.INFER) == ("train", "eval", "infer")


def test_nest_tf1_forms():
    assert nest.is_sequence((1, 2)) and not nest.is_sequence(np.zeros(3))
    shallow = {"a": 0, "b": (0, 0)}
    deep = {"a": [1, 2], "b": ([3], {"c": 4})}
    assert nest.flatten_up_to(shallow, deep) == [[1, 2], [3], {"c": 4}]
    assert nest.map_structure_up_to(shallow, lambda x: len(str(x)), deep) == \
        {"a": 6, "b": (3, 8)}
    with pytest.raises(ValueError, match="same sequence length"):
        nest.assert_shallow_structure((0, 0), (1, 2, 3))
    with pytest.raises(TypeError, match="same sequence type"):
        nest.assert_shallow_structure((0, 0), [1, 2])
    with pytest.raises(ValueError, match="same keys"):
        nest.assert_shallow_structure({"a": 0}, {"b": 1})
    assert nest.flatten_dict_items({(1, (2, 3)): ("a", ("b", "c")), 4: "d"}) == \
        {1: "a", 2: "b", 3: "c", 4: "d"}
    with pytest.raises(ValueError, match="not unique"):
        nest.flatten_dict_items({(1, 2): ("a", "b"), 1: "c"})
    assert tf.nest.flatten({"b": 1, "a": (2, 3)}) == [2, 3, 1]
    from tensorflux.python.util import nest as internal

    assert internal.map_structure_up_to is nest.map_structure_up_to


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _nas_reference(p, x, c, m, proj):
    mm = m @ p["recurrent_kernel"]
    if "bias" in p:
        mm = mm + p["bias"]
    xs, ms = np.split(x @ p["kernel"], 8, 1), np.split(mm, 8, 1)
    a = [_sig(xs[0] + ms[0]), np.maximum(xs[1] + ms[1], 0), _sig(xs[2] + ms[2]),
         np.maximum(xs[3] * ms[3], 0), np.tanh(xs[4] + ms[4]), _sig(xs[5] + ms[5]),
         np.tanh(xs[6] + ms[6]), _sig(xs[7] + ms[7])]
    b0 = np.tanh(np.tanh(a[0] * a[1]) + c)
    new_c = b0 * np.tanh(a[2] + a[3])
    new_m = np.tanh(new_c * np.tanh(np.tanh(a[4] * a[5]) + _sig(a[6] + a[7])))
    return (new_m @ p["projection_weights"] if proj else new_m), new_c


@pytest.mark.parametrize("num_proj, use_biases", [(None, False), (3, True)])
def test_nas_cell_against_numpy(num_proj, use_biases):
    rng = np.random.default_rng(0)
    units, batch, depth = 4, 2, 5
    x = rng.standard_normal((batch, depth))
    with tf.Graph().as_default():
        cell = tf.contrib.rnn.NASCell(units, num_proj=num_proj, use_biases=use_biases)
        out_size = num_proj or units
        assert cell.output_size == out_size and cell.state_size == (units, out_size)
        c0 = rng.standard_normal((batch, units))
        m0 = rng.standard_normal((batch, out_size))
        state = tf.nn.rnn_cell.LSTMStateTuple(tf.constant(c0), tf.constant(m0))
        out, new_state = cell(tf.constant(x), state)
        names = sorted(v.op.name.split("/")[-1] for v in cell.variables)
        want = ["kernel", "recurrent_kernel"] + (["bias"] if use_biases else []) + \
            (["projection_weights"] if num_proj else [])
        assert names == sorted(want)
        loss = tf.reduce_sum(out)
        grads = tf.gradients(loss, cell.variables)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            p = {v.op.name.split("/")[-1]: sess.run(v) for v in cell.variables}
            got_out, got_state, got_grads = sess.run([out, new_state, grads])
    want_out, want_c = _nas_reference(p, x, c0, m0, num_proj)
    np.testing.assert_allclose(got_out, want_out, rtol=1e-10)
    np.testing.assert_allclose(got_state.c, want_c, rtol=1e-10)
    np.testing.assert_allclose(got_state.h, want_out, rtol=1e-10)
    assert all(g is not None and np.isfinite(g).all() for g in got_grads)


def test_nas_cell_trains_under_dynamic_rnn():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 6, 3)).astype(np.float32)
    y = x.sum(axis=(1, 2)).reshape(-1, 1) * 0.1
    with tf.Graph().as_default():
        tf.set_random_seed(2)
        outs, _ = tf.nn.dynamic_rnn(tf.contrib.rnn.NASCell(8), x, dtype=tf.float32)
        pred = tf.layers.dense(outs[:, -1], 1)
        loss = tf.reduce_mean(tf.square(pred - y))
        train = tf.train.AdamOptimizer(0.02).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(loss)
            for _ in range(60):
                sess.run(train)
            assert sess.run(loss) < 0.5 * first


def test_slim_model_analyzer(capsys):
    with tf.Graph().as_default() as g:
        a = tf.get_variable("a", [3, 4])
        b = tf.get_variable("b", [5], dtype=tf.float64)
        tf.matmul(tf.ones([2, 3]), a)
        size, nbytes = tf.contrib.slim.model_analyzer.analyze_vars([a, b], print_info=True)
        ops_total = tf.contrib.slim.model_analyzer.analyze_ops(g)
    assert (size, nbytes) == (17, 12 * 4 + 5 * 8)
    out = capsys.readouterr().out
    assert "a:0 (float32 3x4) [12, bytes: 48]" in out and "Total size of variables: 17" in out
    assert ops_total >= 12 + 5 + 6 + 8
