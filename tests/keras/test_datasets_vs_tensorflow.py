"""fit/evaluate/predict on tf.data against tf_keras (graph mode): a Dataset (a full pass
an epoch, started over each epoch; evaluate/predict over it), a repeated dataset with
`steps_per_epoch` (the iterator goes on across epochs), a dataset as validation data.
Compared: the History, the batch logs, evaluate and predict, the weights, and what
verbose=1 and verbose=2 print (the final state of each progress line, with times and
numbers taken out and the numbers compared within float noise).

tf_keras 2.21 refuses tf.data iterators (TF 1.x Keras took them, with steps): here one-
shot and initializable iterators train as the same batches from a dataset do."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle

PROGRAM = """
import contextlib, io
keras = tf.keras
rs = np.random.RandomState(0)
x = rs.randn(50, 4).astype('float32')
y = np.eye(3, dtype='float32')[rs.randint(0, 3, 50)]
result = []
with tf.Graph().as_default():
    model = keras.Sequential([keras.layers.Dense(5, activation='tanh', input_shape=(4,)),
                              keras.layers.Dense(3, activation='softmax')])
    model.compile(keras.optimizers.SGD(0.2), 'categorical_crossentropy', metrics=['acc'])
    sess = keras.backend.get_session()
    for i, w in enumerate(model.weights):
        w.load(np.random.RandomState(i).randn(*w.shape.as_list()).astype('float32') * 0.5,
               sess)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    seen = []
    cb = keras.callbacks.LambdaCallback(
        on_batch_end=lambda b, logs: seen.append([b, logs['size'], logs['loss'], logs['acc']]))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        h1 = model.fit(ds, epochs=2, verbose=1, callbacks=[cb]).history
        h2 = model.fit(ds.repeat(), epochs=2, steps_per_epoch=3, verbose=2,
                       validation_data=ds).history
        h3 = model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(10).repeat(),
                       epochs=2, steps_per_epoch=4, verbose=0).history
        h4 = model.fit(tf.data.Dataset.from_tensor_slices((x[:30], y[:30])).batch(8),
                       epochs=1, steps_per_epoch=3, verbose=2).history
        h5 = model.fit(x, y, batch_size=16, epochs=2, verbose=1,
                       validation_split=0.2, shuffle=False).history
        h6 = model.fit(x, y, batch_size=16, epochs=1, verbose=2, shuffle=False).history
        ev = model.evaluate(ds, verbose=1)
        ev_steps = model.evaluate(ds.repeat(), steps=2, verbose=0)
        pred = model.predict(tf.data.Dataset.from_tensor_slices(x).batch(7))
    hists = [np.array([h[k] for k in sorted(h)]) for h in (h1, h2, h3, h4, h5, h6)]
    result = [out.getvalue(), [sorted(h) for h in (h1, h2, h3, h4, h5, h6)],
              hists + [np.array(seen), np.array(ev), np.array(ev_steps), pred]
              + model.get_weights()]
"""

_NUM = re.compile(r"-?\d+\.\d+(?:e[-+]\d+)?")


def _screen(text):
    """What a terminal shows: each line's text after its last carriage return, without
    backspaces and trailing blanks; times replaced by T, numbers with decimals by N (the
    numbers returned apart)."""
    lines, numbers = [], []
    for line in text.split("\n"):
        line = line.split("\r")[-1].replace("\b", "").rstrip()
        line = re.sub(r"\d+(?:ms|us|s)/(sample|step|epoch)", r"T/\1", line)
        line = re.sub(r" - \d+s\b", " - Ts", line)
        line = re.sub(r"ETA: \S+", "ETA: T", line)
        numbers += [float(v) for v in _NUM.findall(line)]
        lines.append(_NUM.sub("N", line))
    return lines, np.array(numbers)


def _run_here():
    ns = {"tf": tf, "np": np}
    exec(PROGRAM, ns)  # noqa: S102 - our own program text
    return ns["result"]


def test_fit_on_datasets_and_iterators():
    printed, keys, values = _run_here()
    lines, _ = _screen(printed)
    assert keys[0] == ["acc", "loss"] and keys[1] == ["acc", "loss", "val_acc", "val_loss"]
    assert lines[:2] == ["Train on 4 steps", "Epoch 1/2"]
    assert lines[2].startswith("4/4 [==============================] - Ts T/step - batch: N")
    assert "Train on 40 samples, validate on 10 samples" in lines
    assert values[6].shape == (8, 4) and list(values[6][:4, 1]) == [1, 1, 1, 1]
    assert values[9].shape == (50, 3)


@pytest.mark.oracle
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_fit_on_datasets_matches_tf_keras(monkeypatch):
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    printed, keys, values = _run_here()
    theirs = oracle.run_tf(PROGRAM, timeout=240)
    lines, numbers = _screen(printed)
    their_lines, their_numbers = _screen(theirs[0])
    assert lines == their_lines
    np.testing.assert_allclose(numbers, their_numbers, rtol=0, atol=2e-4)
    assert keys == theirs[1]
    labels = ["history", "history steps", "history steps 2", "history steps 3",
              "history arrays", "history arrays 2", "batch logs", "evaluate",
              "evaluate steps", "predict"]
    assert len(values) == len(theirs[2])
    for i, (a, b) in enumerate(zip(values, theirs[2], strict=True)):
        label = labels[i] if i < len(labels) else f"weight {i - len(labels)}"
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5, err_msg=label)


ITERATORS = """
keras = tf.keras
rs = np.random.RandomState(1)
x = rs.randn(40, 4).astype('float32')
y = rs.randn(40, 2).astype('float32')
result = []
for kind in ('dataset', 'one-shot', 'initializable'):
    with tf.Graph().as_default():
        model = keras.Sequential([keras.layers.Dense(2, input_shape=(4,))])
        model.compile(keras.optimizers.SGD(0.1), 'mse', metrics=['mae'])
        sess = keras.backend.get_session()
        for i, w in enumerate(model.weights):
            w.load(np.random.RandomState(i).randn(*w.shape.as_list()).astype('float32'),
                   sess)
        ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(6).repeat()
        if kind == 'one-shot':
            ds = ds.make_one_shot_iterator()
        elif kind == 'initializable':
            ds = ds.make_initializable_iterator()
            sess.run(ds.initializer)
        hist = model.fit(ds, epochs=3, steps_per_epoch=4, verbose=0).history
        result.append([np.array(hist['loss']), np.array(hist['mae'])] + model.get_weights())
"""


def test_iterators_train_as_their_dataset():
    ns = {"tf": tf, "np": np}
    exec(ITERATORS, ns)  # noqa: S102 - our own program text
    dataset, one_shot, initializable = ns["result"]
    for other in (one_shot, initializable):
        for a, b in zip(dataset, other, strict=True):
            np.testing.assert_array_equal(a, b)
    assert dataset[0][2] < dataset[0][0]


def test_an_iterator_needs_steps_and_running_out_stops_training():
    with tf.Graph().as_default():
        model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))])
        model.compile("sgd", "mse")
        data = tf.data.Dataset.from_tensor_slices(
            (np.ones((10, 2), np.float32), np.ones((10, 1), np.float32))).batch(5)
        with pytest.raises(ValueError, match="steps_per_epoch"):
            model.fit(data.make_one_shot_iterator(), epochs=1, verbose=0)
        with pytest.raises(ValueError, match="infinitely repeating"):
            model.fit(data.repeat(), epochs=1, verbose=0)
        with pytest.raises(ValueError, match="contains 2 batches"):
            model.fit(data, epochs=2, steps_per_epoch=2, verbose=0)
        hist = model.fit(data.make_one_shot_iterator(), epochs=3, steps_per_epoch=2,
                         verbose=0).history
        assert len(hist["loss"]) == 1  # the second epoch found no data
