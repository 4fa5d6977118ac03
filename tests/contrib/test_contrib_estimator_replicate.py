"""tf.contrib.estimator.replicate_model_fn / TowerOptimizer: towers over a split batch
give the same training step, loss, metrics and predictions as the model_fn on the whole
batch (contrib/estimator_replicate.py)."""

import numpy as np
import pytest

import tensorflux as tf

RNG = np.random.RandomState(3)
X = RNG.randn(8, 3).astype(np.float32)
Y = (X @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
CPUS = ["/device:CPU:0", "/device:CPU:0"]


def _model_fn(features, labels, mode, params=None):
    w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    pred = tf.matmul(features, w) + b
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"y": pred})
    loss = tf.losses.mean_squared_error(labels, pred)
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(
            mode, loss=loss, eval_metric_ops={"mae": tf.metrics.mean_absolute_error(
                labels, pred)})
    opt = tf.train.GradientDescentOptimizer(params["lr"])
    if params.get("tower"):
        opt = tf.contrib.estimator.TowerOptimizer(opt)
    train = opt.minimize(loss, global_step=tf.train.get_or_create_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train)


def _one_step(model_fn, mode=tf.estimator.ModeKeys.TRAIN, runs=1):
    """Builds model_fn's graph on X, Y, runs its train op (or metric update) `runs`
    times; returns the spec's values and the variables'."""
    g = tf.Graph()
    with g.as_default():
        spec = model_fn(tf.constant(X), tf.constant(Y), mode, params={"lr": 0.1,
                                                                      "tower": True})
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            if mode == tf.estimator.ModeKeys.PREDICT:
                return sess.run(spec.predictions), None
            if mode == tf.estimator.ModeKeys.EVAL:
                for _ in range(runs):
                    sess.run(spec.eval_metric_ops["mae"][1])
                return sess.run([spec.loss, spec.eval_metric_ops["mae"][0]]), None
            losses = [sess.run([spec.loss, spec.train_op])[0] for _ in range(runs)]
            names = [n for n in ("w:0", "b:0")]
            return losses, sess.run([g.get_tensor_by_name(n) for n in names])


def test_two_towers_train_as_the_whole_batch():
    whole_losses, whole_vars = _one_step(_model_fn, runs=3)
    rep = tf.contrib.estimator.replicate_model_fn(_model_fn, devices=CPUS)
    rep_losses, rep_vars = _one_step(rep, runs=3)
    np.testing.assert_allclose(rep_losses, whole_losses, rtol=1e-5)
    for a, b in zip(rep_vars, whole_vars, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_sum_reduction_sums_the_tower_losses():
    rep = tf.contrib.estimator.replicate_model_fn(
        _model_fn, loss_reduction=tf.losses.Reduction.SUM, devices=CPUS)
    losses, _ = _one_step(rep)
    halves = [np.mean((Y[i:i + 4] - 0.0) ** 2) for i in (0, 4)]
    np.testing.assert_allclose(losses[0], sum(halves), rtol=1e-5)


def test_eval_metrics_cover_the_whole_batch():
    (whole_loss, whole_mae), _ = _one_step(_model_fn, tf.estimator.ModeKeys.EVAL, runs=2)
    rep = tf.contrib.estimator.replicate_model_fn(_model_fn, devices=CPUS)
    (rep_loss, rep_mae), _ = _one_step(rep, tf.estimator.ModeKeys.EVAL, runs=2)
    np.testing.assert_allclose(rep_loss, whole_loss, rtol=1e-6)
    np.testing.assert_allclose(rep_mae, whole_mae, rtol=1e-6)
    np.testing.assert_allclose(rep_mae, np.mean(np.abs(Y)), rtol=1e-6)


def test_predictions_are_joined_in_batch_order():
    rep = tf.contrib.estimator.replicate_model_fn(_model_fn, devices=CPUS)
    preds, _ = _one_step(rep, tf.estimator.ModeKeys.PREDICT)
    assert preds["y"].shape == (8, 1)


def test_towers_share_variables_and_name_their_ops():
    g = tf.Graph()
    with g.as_default():
        rep = tf.contrib.estimator.replicate_model_fn(_model_fn, devices=CPUS)
        rep(tf.constant(X), tf.constant(Y), tf.estimator.ModeKeys.TRAIN,
            params={"lr": 0.1, "tower": True})
        names = sorted(v.op.name for v in tf.trainable_variables())
        ops = [op.name for op in g.get_operations()]
    assert names == ["b", "w"]
    assert any(n.startswith("tower_1/") for n in ops)
    assert any(n.startswith("split_inputs/") for n in ops)
    assert not any(n.startswith("tower_0/") for n in ops)


def test_sparse_gradients_are_joined_not_added():
    def model_fn(features, labels, mode):
        emb = tf.get_variable("emb", [5, 2], initializer=tf.ones_initializer())
        loss = tf.reduce_sum(tf.nn.embedding_lookup(emb, features))
        opt = tf.contrib.estimator.TowerOptimizer(tf.train.GradientDescentOptimizer(1.0))
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=opt.minimize(loss))

    with tf.Graph().as_default():
        rep = tf.contrib.estimator.replicate_model_fn(
            model_fn, loss_reduction=tf.losses.Reduction.SUM, devices=CPUS)
        spec = rep(tf.constant([0, 1, 1, 4]), None, tf.estimator.ModeKeys.TRAIN)
        emb = [v for v in tf.global_variables() if v.op.name == "emb"][0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(spec.train_op)
            got = sess.run(emb)
    np.testing.assert_allclose(got[:, 0], [0, -1, 1, 1, 0])


def test_estimator_trains_a_replicated_model(tmp_path):
    def input_fn():
        return tf.data.Dataset.from_tensor_slices((X, Y)).repeat().batch(8)

    est = tf.estimator.Estimator(
        tf.contrib.estimator.replicate_model_fn(_model_fn, devices=CPUS),
        model_dir=str(tmp_path), params={"lr": 0.1, "tower": True})
    est.train(input_fn, steps=40)
    metrics = est.evaluate(input_fn, steps=1)
    assert metrics["loss"] < 0.05 and metrics["global_step"] == 40
    preds = list(est.predict(lambda: tf.data.Dataset.from_tensor_slices(X).batch(8)))
    np.testing.assert_allclose([p["y"][0] for p in preds], Y[:, 0], atol=0.3)


def test_one_device_runs_the_model_fn_as_it_is():
    rep = tf.contrib.estimator.replicate_model_fn(_model_fn, devices=["/device:CPU:0"])
    losses, _ = _one_step(rep, runs=2)
    whole, _ = _one_step(_model_fn, runs=2)
    np.testing.assert_allclose(losses, whole, rtol=1e-6)
    # With the default devices (no GPU here) there is one tower, on the CPU.
    losses, _ = _one_step(tf.contrib.estimator.replicate_model_fn(_model_fn), runs=2)
    np.testing.assert_allclose(losses, whole, rtol=1e-6)


def test_misuse_is_refused():
    with pytest.raises(ValueError, match="need to be reduced"):
        tf.contrib.estimator.replicate_model_fn(_model_fn,
                                                loss_reduction=tf.losses.Reduction.NONE)

    def unwrapped(features, labels, mode, params):
        return _model_fn(features, labels, mode, {"lr": 0.1})

    rep = tf.contrib.estimator.replicate_model_fn(unwrapped, devices=CPUS)
    with tf.Graph().as_default(), pytest.raises(ValueError, match="TowerOptimizer"):
        rep(tf.constant(X), tf.constant(Y), tf.estimator.ModeKeys.TRAIN, params={})
    rep = tf.contrib.estimator.replicate_model_fn(_model_fn, devices=CPUS * 3)
    with tf.Graph().as_default(), pytest.raises(ValueError, match="divisible"):
        rep(tf.constant(X), tf.constant(Y), tf.estimator.ModeKeys.TRAIN,
            params={"lr": 0.1, "tower": True})


def test_tower_optimizer_alone_is_the_wrapped_optimizer():
    with tf.Graph().as_default():
        v = tf.Variable(2.0)
        opt = tf.contrib.estimator.TowerOptimizer(
            lambda: tf.train.MomentumOptimizer(0.5, 0.9))
        train = opt.minimize(v * v)
        assert opt.get_slot_names() == ["momentum"]
        assert opt.get_slot(v, "momentum") is not None
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            assert sess.run(v) == pytest.approx(0.0)
