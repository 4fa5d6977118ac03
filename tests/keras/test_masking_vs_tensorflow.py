"""Keras masks against tf_keras (graph mode, one oracle run per test): `Embedding(
mask_zero=True)` and `Masking` make a mask that the recurrent layers (masked steps keep
their state and repeat the previous output, or zeros under Bidirectional), the wrappers,
GlobalAveragePooling1D, the merge layers, Lambda(mask=...) and Softmax use, and that the
layers without masking support drop. Compared: variable names, every output, its mask
(or its absence), and the gradients with respect to the float input and every variable;
then a masked sequence model trained by train_on_batch/fit/evaluate (masked losses and
stateful masked metrics)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle
from tests.keras.test_layers_vs_tensorflow import VALUE_HELPERS

IDS = np.array([[3, 1, 4, 0, 0], [0, 0, 2, 7, 1], [5, 0, 9, 2, 0]], np.int32)
_rng = np.random.RandomState(11)
XM = _rng.randn(3, 5, 4).astype(np.float32)
XM[0, 3:] = 0.0
XM[1, :2] = 0.0
XM[2, 1] = 0.0

L = "L."
CASES = [
    "emb()",
    "msk()",
    L + "LSTM(3)(emb())",
    L + "LSTM(3, return_sequences=True, return_state=True)(emb())",
    L + "GRU(2, return_sequences=True, go_backwards=True)(msk())",
    L + "GRU(2, go_backwards=True)(emb())",
    L + "SimpleRNN(2, return_sequences=True)(msk())",
    L + "GRU(2, reset_after=True, recurrent_activation='sigmoid', "
        "return_sequences=True)(emb())",
    L + "LSTM(2, return_sequences=True, zero_output_for_mask=True)(emb())",
    L + "Bidirectional(L.LSTM(2, return_sequences=True))(emb())",
    L + "Bidirectional(L.GRU(2), merge_mode='ave')(msk())",
    L + "Bidirectional(L.SimpleRNN(2, return_sequences=True), merge_mode=None)(emb())",
    L + "Bidirectional(L.LSTM(2, return_state=True))(msk())",
    L + "TimeDistributed(L.Dense(2))(msk())",
    L + "LSTM(2)(L.TimeDistributed(L.Dense(3))(emb()))",
    L + "GlobalAveragePooling1D()(emb())",
    L + "GlobalAveragePooling1D()(L.Dense(3, activation='tanh')(msk()))",
    L + "LSTM(2)(L.Dropout(0.5)(L.Dense(3, activation='relu')(emb()), training=False))",
    L + "LSTM(2)(L.Activation('tanh')(L.BatchNormalization()(emb(), training=False)))",
    L + "SimpleRNN(2)(L.Concatenate()([emb(), msk()]))",
    L + "SimpleRNN(2)(L.Concatenate()([emb(), L.Conv1D(2, 1)(emb())]))",
    L + "SimpleRNN(2)(L.Add()([emb(), L.Dense(3)(msk())]))",
    L + "LSTM(2, return_sequences=True)(L.Conv1D(3, 1)(emb()))",
    L + "LSTM(2)(L.Lambda(lambda t: t * 2.0)(emb()))",
    L + "LSTM(2)(L.Lambda(lambda t: t * 2.0, mask=lambda i, m: m)(emb()))",
    L + "GRU(2)(L.LeakyReLU(0.2)(msk()))",
    L + "Softmax()(xm, mask=xm > 0.0)",
]

PROGRAM = VALUE_HELPERS + """
with tf.Graph().as_default():
    L = tf.keras.layers
    ids = tf.keras.Input(tensor=tf.constant(IDS))
    xm_in = tf.keras.Input(tensor=tf.constant(XM))
    xm = tf.constant(XM)
    env = {'L': L, 'tf': tf, 'xm': xm,
           'emb': lambda: L.Embedding(10, 3, mask_zero=True)(ids),
           'msk': lambda: L.Masking()(xm_in)}
    pairs = [(c, t) for c in CASES for t in _flat(eval(c, env))]
    outs = [t for _, t in pairs]
    masks = [getattr(t, '_keras_mask', None) for t in outs]
    variables = tf.global_variables()
    loss = tf.add_n([tf.reduce_sum(tf.square(o)) for o in outs])
    wrt = [xm_in] + tf.trainable_variables()
    grads = [tf.convert_to_tensor(g) for g in tf.gradients(loss, wrt)]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for v in variables:
            sess.run(tf.assign(v, _value(v)))
        values = sess.run(outs + grads)
        mask_values = sess.run([m for m in masks if m is not None])
    result = [[v.name + str(v.shape.as_list()) for v in variables],
              [np.asarray(a) for a in values],
              [m is not None for m in masks],
              [np.asarray(m).astype(np.int32) for m in mask_values],
              [c for c, _ in pairs]]
"""


def _run_here(cases=CASES):
    scope = {"tf": tf, "np": np, "IDS": IDS, "XM": XM, "CASES": cases}
    exec(PROGRAM, scope)  # noqa: S102 - our own program text
    return scope["result"]


def test_masks_reach_the_layers_that_use_them():
    names, values, has_mask, mask_values, labels = _run_here()
    assert "embedding/embeddings:0[10, 3]" in names
    by_label = dict(zip(labels, has_mask, strict=False))
    assert by_label["emb()"] and by_label["msk()"]
    assert not by_label[L + "LSTM(3)(emb())"]  # the last output has no time axis
    assert not by_label[L + "LSTM(2, return_sequences=True)(L.Conv1D(3, 1)(emb()))"]
    np.testing.assert_array_equal(mask_values[0], (IDS != 0).astype(np.int32))
    np.testing.assert_array_equal(mask_values[1], np.any(XM != 0, -1).astype(np.int32))
    # A masked step repeats the previous output; an all-masked prefix gives zeros.
    seq = values[labels.index(L + "SimpleRNN(2, return_sequences=True)(msk())")]
    np.testing.assert_array_equal(seq[0, 3], seq[0, 2])
    np.testing.assert_array_equal(seq[0, 4], seq[0, 2])
    np.testing.assert_array_equal(seq[1, :2], np.zeros((2, 2), np.float32))
    assert all(np.all(np.isfinite(v)) for v in values)


@pytest.mark.oracle
@pytest.mark.slow
@pytest.mark.timeout(420)
@pytest.mark.parametrize("half", [0, 1])
def test_masked_layers_match_tf_keras(monkeypatch, half):
    """(In two halves: building TF's gradients of many while loops is slow.)"""
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    cases = CASES[:14] if half == 0 else CASES[14:]
    ours = _run_here(cases)
    theirs = oracle.run_tf(f"IDS = np.array({IDS.tolist()!r}, np.int32)\n"
                           f"XM = np.array({XM.tolist()!r}, np.float32)\n"
                           f"CASES = {cases!r}\n{PROGRAM}", timeout=300)
    names, values, has_mask, mask_values, labels = ours
    assert names == theirs[0]
    assert has_mask == theirs[2], [lab for lab, a, b in zip(labels, has_mask, theirs[2],
                                                            strict=True) if a != b]
    value_labels = labels + ["grad xm"] + ["grad " + n for n in names]
    assert len(values) == len(theirs[1])
    for label, a, b in zip(value_labels, values, theirs[1], strict=False):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5, err_msg=label)
    masked_labels = [lab for lab, m in zip(labels, has_mask, strict=True) if m]
    for label, a, b in zip(masked_labels, mask_values, theirs[3], strict=True):
        np.testing.assert_array_equal(a, b, err_msg=label)


TRAINING = """
keras = tf.keras
rs = np.random.RandomState(0)
ids = rs.randint(1, 8, size=(12, 6)).astype('int32')
lengths = rs.randint(2, 7, size=12)
for i, n in enumerate(lengths):
    ids[i, n:] = 0
tags = (ids % 3).astype('int32')[..., None]
xf = rs.randn(12, 6, 3).astype('float32')
for i, n in enumerate(lengths):
    xf[i, :6 - n] = 0.0
yf = rs.randn(12, 2).astype('float32')
result = []
with tf.Graph().as_default():
    model = keras.Sequential([
        keras.layers.Embedding(8, 4, mask_zero=True, input_length=6),
        keras.layers.LSTM(5, return_sequences=True),
        keras.layers.TimeDistributed(keras.layers.Dense(3, activation='softmax'))])
    model.compile(keras.optimizers.Adam(0.05), 'sparse_categorical_crossentropy',
                  metrics=['acc'])
    for i, w in enumerate(model.weights):
        model.weights[i].load(
            np.random.RandomState(i).randn(*w.shape.as_list()).astype('float32') * 0.3,
            keras.backend.get_session())
    steps = [model.train_on_batch(ids, tags) for _ in range(2)]
    batch_logs = []
    cb = keras.callbacks.LambdaCallback(
        on_batch_end=lambda b, logs: batch_logs.append([logs['loss'], logs['acc']]))
    np.random.seed(5)  # (Keras shuffles the validation batches with NumPy's global draws)
    hist = model.fit(ids, tags, batch_size=5, epochs=2, shuffle=False, verbose=0,
                     callbacks=[cb], validation_data=(ids[:7], tags[:7])).history
    result.append([np.array(steps), np.array([hist[k] for k in sorted(hist)]),
                   np.array(batch_logs),
                   np.array(model.evaluate(ids, tags, batch_size=5, verbose=0)),
                   model.predict(ids)] + model.get_weights())
with tf.Graph().as_default():
    inp = keras.Input((6, 3))
    h = keras.layers.Masking()(inp)
    h = keras.layers.Bidirectional(keras.layers.GRU(3))(h)
    out = keras.layers.Dense(2)(h)
    model = keras.Model(inp, out)
    model.compile(keras.optimizers.SGD(0.1), 'mse', metrics=['mae'])
    for i, w in enumerate(model.weights):
        model.weights[i].load(
            np.random.RandomState(i).randn(*w.shape.as_list()).astype('float32') * 0.3,
            keras.backend.get_session())
    hist = model.fit(xf, yf, batch_size=5, epochs=2, shuffle=False, verbose=0).history
    result.append([np.array([hist[k] for k in sorted(hist)]), model.predict(xf)]
                  + model.get_weights())
"""


def _train_here():
    ns = {"tf": tf, "np": np}
    exec(TRAINING, ns)  # noqa: S102 - our own program text
    return ns["result"]


def test_masked_training_runs():
    seq, rnn = _train_here()
    steps, hist, batch_logs, evaluated, predicted = seq[:5]
    assert steps.shape == (2, 2) and hist.shape == (4, 2) and batch_logs.shape == (6, 2)
    assert np.all(np.isfinite(evaluated)) and predicted.shape == (12, 6, 3)
    assert np.all(np.isfinite(rnn[0]))


@pytest.mark.oracle
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_masked_training_matches_tf_keras(monkeypatch):
    """Masked per-step losses (sum over the unmasked steps / all steps), stateful masked
    accuracy (running values in the batch logs, epoch values over all unmasked steps),
    and the updates they give, as tf_keras."""
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    ours = _train_here()
    theirs = oracle.run_tf(TRAINING, timeout=240)
    labels = [["train_on_batch", "fit history", "batch logs", "evaluate", "predict"],
              ["fit history", "predict"]]
    for run, (a_run, b_run) in enumerate(zip(ours, theirs, strict=True)):
        assert len(a_run) == len(b_run)
        for i, (a, b) in enumerate(zip(a_run, b_run, strict=True)):
            names = labels[run]
            label = f"model {run}: {names[i] if i < len(names) else f'weight {i}'}"
            np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5, err_msg=label)
