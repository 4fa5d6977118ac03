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
              "'rmsprop'", "keras.optimizers.Adam(0.01, amsgrad=True)",
              "keras.optimizers.Adamax(0.02)", "keras.optimizers.Nadam(0.01)", "'nadam'",
              "keras.optimizers.Adamax(0.02, beta_1=0.8, decay=0.1)"]

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


SEEDED_FIT = """
rs = np.random.RandomState(0)
x = rs.rand(500, 20).astype('float32')
y = np.eye(4, dtype='float32')[(x[:, :4] * [1, 2, 3, 4]).argmax(1)]
with tf.Graph().as_default():
    tf.set_random_seed(3)
    np.random.seed(3)
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(16, activation='relu', input_shape=(20,)),
        tf.keras.layers.Dropout(0.2),
        tf.keras.layers.Dense(4, activation='softmax')])
    model.compile('adam', 'categorical_crossentropy', metrics=['accuracy'])
    hist = model.fit(x, y, batch_size=32, epochs=3, verbose=0, validation_split=0.2)
    result = {k: np.array(v) for k, v in hist.history.items()}
"""


@pytest.mark.oracle
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_seeded_fit_follows_tf_keras(monkeypatch):
    """With the same seeds, a model with dropout trained by fit (shuffled batches, a
    validation split) gives tf_keras's History: the same initial weights and dropout
    masks (TF's random streams), the same NumPy shuffles (validation included)."""
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    ns = {"tf": tf, "np": np}
    exec(SEEDED_FIT, ns)  # noqa: S102 - our own program text
    theirs = oracle.run_tf(SEEDED_FIT, timeout=200)
    assert sorted(ns["result"]) == sorted(theirs) == ["acc", "loss", "val_acc", "val_loss"]
    for key, value in theirs.items():
        np.testing.assert_allclose(ns["result"][key], value, rtol=1e-4, err_msg=key)


TEMPORAL = """
keras = tf.keras
rs = np.random.RandomState(1)
x = rs.randn(6, 4, 3).astype('float32')
labels = rs.randint(0, 5, (6, 4, 1))
w = rs.rand(6, 4).astype('float32')
w[:, 3] = 0.0  # padding steps
result = []
with tf.Graph().as_default():
    inp = keras.Input((4, 3))
    seq = keras.layers.SimpleRNN(5, return_sequences=True, kernel_initializer='ones',
                                 recurrent_initializer='orthogonal')(inp)
    dense = keras.layers.TimeDistributed(keras.layers.Dense(
        5, kernel_initializer='glorot_uniform'))(seq)
    model = keras.Model(inp, [dense, keras.layers.Dense(2, name='second')(seq)])
    model.compile('sgd', ['sparse_categorical_crossentropy', 'mse'],
                  sample_weight_mode={'time_distributed': 'temporal', 'second': 'temporal'})
    weights = [np.random.RandomState(i).rand(*v.shape.as_list()).astype('float32') - 0.5
               for i, v in enumerate(model.weights)]
    model.set_weights(weights)
    y = [labels, np.ones((6, 4, 2), 'float32')]
    result.append(np.array(model.evaluate(x, y, sample_weight=[w, w], verbose=0)))
    result.append(np.array(model.train_on_batch(x, y, sample_weight=[w, w])))
    hist = model.fit(x, y, sample_weight=[w, np.ones_like(w)], batch_size=2, epochs=2,
                     shuffle=False, verbose=0).history
    result.append(np.array([hist[k] for k in sorted(hist)]))
    result.append(np.array(model.evaluate(x, y, verbose=0)))
    result += model.get_weights()
"""


def test_temporal_sample_weights_match_tf_keras():
    ns = {"tf": tf, "np": np}
    exec(TEMPORAL, ns)  # noqa: S102 - our own program text
    ours = ns["result"]
    theirs = oracle.run_tf("import tf_keras\ntf.keras = tf_keras\n" + TEMPORAL)
    assert len(ours) == len(theirs)
    for got, want in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(got, np.asarray(want), rtol=2e-5, atol=2e-6)


def test_temporal_sample_weights_are_checked_as_keras_does():
    keras = tf.keras
    with tf.Graph().as_default():
        inp = keras.Input((4, 3))
        model = keras.Model(inp, keras.layers.Dense(5)(inp))
        with pytest.raises(ValueError, match="sample_weight_mode should be None or"):
            model.compile('sgd', 'mse', sample_weight_mode='timestep')
        model.compile('sgd', 'sparse_categorical_crossentropy', sample_weight_mode='temporal')
        x, y = np.zeros((2, 4, 3), np.float32), np.zeros((2, 4, 1))
        with pytest.raises(ValueError, match="you should pass a 2D sample_weight array"):
            model.train_on_batch(x, y, sample_weight=np.ones(2))
        with pytest.raises(ValueError, match="sample_weight cannot be broadcast"):
            model.train_on_batch(x, y, sample_weight=np.ones((2, 3)))
        with pytest.raises(ValueError, match="not supported for 3\\+ dimensional targets"):
            model.train_on_batch(x, y, class_weight={0: 2.0})
        inp2 = keras.Input((3,))
        model2 = keras.Model(inp2, keras.layers.Dense(2)(inp2))
        model2.compile('sgd', 'mse')
        with pytest.raises(ValueError, match='specify sample_weight_mode="temporal"'):
            model2.train_on_batch(np.zeros((2, 3)), np.zeros((2, 2)),
                                  sample_weight=np.ones((2, 2)))


SGD_MOMENTUM = """
def sgd_run(nesterov, sparse, resource):
    rng = np.random.RandomState(0)
    e0 = rng.randn(50, 8).astype(np.float32)
    with tf.Graph().as_default():
        e = tf.get_variable("e", initializer=e0, use_resource=resource)
        ids = tf.placeholder(tf.int32, [6])
        t = tf.placeholder(tf.float32, [6, 8])
        rows = tf.gather(e, ids) if sparse else tf.gather(tf.identity(e), ids)
        opt = tf.keras.optimizers.SGD(0.05, momentum=0.9, nesterov=nesterov)
        train = opt.get_updates(tf.reduce_sum(tf.square(rows - t)), [e])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for _ in range(30):  # repeated ids: duplicates summed first
                s.run(train, {ids: rng.randint(0, 50, 6),
                              t: rng.randn(6, 8).astype(np.float32)})
            return [s.run(e), s.run(opt.get_slot(e, "momentum"))]

result = {"%d%d" % (n, sp): sgd_run(n, sp, True) for n in (False, True)
          for sp in (False, True)}
"""


@pytest.mark.oracle
def test_sgd_momentum_is_kerass_bit_for_bit(monkeypatch):
    """Keras's SGD with momentum keeps Keras's velocity in its "momentum" slot (TF's
    ResourceApplyKerasMomentum and its sparse form): weights and slots equal tf_keras's bit
    for bit, dense and sparse, plain and Nesterov; reference variables take the same
    arithmetic."""
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    ns = {"tf": tf, "np": np}
    exec(SGD_MOMENTUM, ns)  # noqa: S102 - our own program text
    theirs = oracle.run_tf(SGD_MOMENTUM)
    for key, (weights, slot) in theirs.items():
        for resource in (True, False):
            ours = ns["sgd_run"](key[0] == "1", key[1] == "1", resource)
            np.testing.assert_array_equal(ours[0], np.float32(weights), err_msg=key)
            np.testing.assert_array_equal(ours[1], np.float32(slot), err_msg=key)
