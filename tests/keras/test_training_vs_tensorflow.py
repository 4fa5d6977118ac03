"""compile/fit/evaluate/predict against tf_keras (the oracle): the same model with the
same weights, trained by each optimizer for a few steps, gives the same losses, metrics,
predictions and weights (within float32 noise), so the losses, metrics, optimizers (Keras
defaults), batch-norm updates and the epoch means agree with Keras."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle

OPTIMIZERS = ["'sgd'", "keras.optimizers.SGD(0.1, momentum=0.9, nesterov=True)",
              "keras.optimizers.Adam(0.01)", "keras.optimizers.RMSprop(0.01)",
              "keras.optimizers.Adadelta(1.0)", "keras.optimizers.Adagrad(0.1)", "'adam'",
              "'rmsprop'"]

PROGRAM = """
keras = tf.keras
rs = np.random.RandomState(0)
x = rs.randn(16, 5).astype('float32')
y = np.eye(3, dtype='float32')[rs.randint(0, 3, 16)]
result = []
for opt in OPTIMIZERS:
    with tf.Graph().as_default():
        model = keras.Sequential([
            keras.layers.Dense(4, activation='tanh', input_shape=(5,)),
            keras.layers.BatchNormalization(),
            keras.layers.Dense(3, activation='softmax')])
        model.compile(eval(opt), 'categorical_crossentropy', metrics=['acc'])
        weights = []
        for i, w in enumerate(model.weights):
            r = np.random.RandomState(i).rand(*w.shape.as_list()).astype('float32')
            weights.append(r + 0.5 if 'variance' in w.name else r - 0.5)
        model.set_weights(weights)
        steps = [model.train_on_batch(x, y) for _ in range(3)]
        hist = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0,
                         validation_data=(x[:4], y[:4])).history
        result.append([np.array(steps), np.array([hist[k] for k in sorted(hist)]),
                       np.array(model.evaluate(x, y, verbose=0)), model.predict(x)]
                      + model.get_weights())
"""


def _run_here():
    ns = {"tf": tf, "np": np, "OPTIMIZERS": OPTIMIZERS}
    exec(PROGRAM, ns)  # noqa: S102 - our own program text
    return ns["result"]


def test_training_program_runs():
    results = _run_here()
    assert len(results) == len(OPTIMIZERS)
    for steps, *_ in results:
        assert steps.shape == (3, 2) and np.all(np.isfinite(steps))


@pytest.mark.oracle
@pytest.mark.slow
@pytest.mark.timeout(400)
def test_training_matches_tf_keras(monkeypatch):
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    ours = _run_here()
    theirs = oracle.run_tf(f"OPTIMIZERS = {OPTIMIZERS!r}\n{PROGRAM}", timeout=240)
    labels = ["train_on_batch", "fit history", "evaluate", "predict"]
    for opt, a_run, b_run in zip(OPTIMIZERS, ours, theirs, strict=True):
        assert len(a_run) == len(b_run)
        for i, (a, b) in enumerate(zip(a_run, b_run, strict=True)):
            label = f"{opt}: {labels[i] if i < 4 else f'weight {i - 4}'}"
            np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5, err_msg=label)
