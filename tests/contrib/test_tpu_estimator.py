"""tf.contrib.tpu's TPUEstimator run without a TPU (use_tpu=False), as BERT's
run_classifier.py uses it: batch sizes through params, TPUEstimatorSpec's eval_metrics and
scaffold_fn (init_from_checkpoint inside it), CrossShardOptimizer over one shard; and
tf.contrib.data's names."""

import numpy as np
import pytest

import tensorflux as tf

RNG = np.random.default_rng(0)
X = RNG.normal(size=(48, 3)).astype(np.float32)
W_TRUE = np.float32([[1.0], [-2.0], [0.5]])
Y = X @ W_TRUE


def _input_fn(seen):
    def input_fn(params):
        seen.append(params.get("batch_size"))
        ds = tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).repeat()
        return ds.apply(tf.contrib.data.batch_and_drop_remainder(params["batch_size"]))
    return input_fn


def _model_fn(init_from=None):
    def model_fn(features, labels, mode, params):
        w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
        pred = tf.matmul(features["x"], w)
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.contrib.tpu.TPUEstimatorSpec(mode, predictions={"y": pred})
        loss = tf.reduce_mean(tf.square(pred - labels))
        scaffold_fn = None
        if init_from is not None:
            def scaffold_fn():
                tf.train.init_from_checkpoint(init_from, {"w": "w"})
                return tf.train.Scaffold()
        if mode == tf.estimator.ModeKeys.TRAIN:
            opt = tf.contrib.tpu.CrossShardOptimizer(tf.train.GradientDescentOptimizer(0.1))
            train_op = opt.minimize(loss, global_step=tf.train.get_global_step())
            return tf.contrib.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op,
                                                   scaffold_fn=scaffold_fn)

        def metric_fn(err, batch):
            return {"mse": tf.metrics.mean(err), "batch": tf.metrics.mean(batch)}

        err = tf.reduce_mean(tf.square(pred - labels), axis=1)
        batch = tf.fill(tf.shape(err), float(params["batch_size"]))
        return tf.contrib.tpu.TPUEstimatorSpec(mode, loss=loss, eval_metrics=(metric_fn,
                                                                              [err, batch]),
                                               scaffold_fn=scaffold_fn)
    return model_fn


def _estimator(model_dir, model_fn):
    config = tf.contrib.tpu.RunConfig(
        model_dir=str(model_dir), save_checkpoints_steps=50,
        tpu_config=tf.contrib.tpu.TPUConfig(
            iterations_per_loop=10,
            per_host_input_for_training=tf.contrib.tpu.InputPipelineConfig.PER_HOST_V2))
    return tf.contrib.tpu.TPUEstimator(use_tpu=False, model_fn=model_fn, config=config,
                                       train_batch_size=8, eval_batch_size=4,
                                       predict_batch_size=6)


def test_train_evaluate_predict(tmp_path):
    seen = []
    est = _estimator(tmp_path / "m", _model_fn())
    est.train(_input_fn(seen), max_steps=150)
    np.testing.assert_allclose(est.get_variable_value("w"), W_TRUE, atol=1e-3)
    result = est.evaluate(_input_fn(seen), steps=3)
    assert result["global_step"] == 150 and result["batch"] == 4.0
    assert result["mse"] < 1e-5
    preds = est.predict(lambda params: tf.data.Dataset.from_tensor_slices(
        {"x": X[:12]}).batch(params["batch_size"]))
    got = np.array([p["y"] for p in preds])
    np.testing.assert_allclose(got, Y[:12], atol=1e-2)
    assert seen == [8, 4]  # the train and eval batch sizes reached the input_fns


def test_scaffold_fn_initializes_from_a_checkpoint(tmp_path):
    src = tmp_path / "src"
    with tf.Graph().as_default():
        tf.get_variable("w", initializer=W_TRUE)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            tf.train.Saver().save(s, str(src / "ck"))
    est = _estimator(tmp_path / "m", _model_fn(init_from=str(src)))
    # w starts at the checkpoint's W_TRUE, where the gradient is zero: one step keeps it
    # (from the zeros initializer it would be far off)
    est.train(_input_fn([]), max_steps=1)
    np.testing.assert_allclose(est.get_variable_value("w"), W_TRUE, atol=1e-6)


def test_no_tpu():
    with pytest.raises(ValueError, match="no TPU"):
        tf.contrib.tpu.TPUEstimator(model_fn=_model_fn(), use_tpu=True)
    with pytest.raises(ValueError, match="no TPU"):
        tf.contrib.cluster_resolver.TPUClusterResolver("my-tpu")
    with pytest.raises(ValueError, match="reserved"):
        tf.contrib.tpu.TPUEstimator(model_fn=_model_fn(), use_tpu=False,
                                    params={"batch_size": 3})
    with pytest.raises(ValueError, match="eval_metrics"):
        tf.contrib.tpu.TPUEstimatorSpec(tf.estimator.ModeKeys.EVAL, loss=tf.constant(0.0),
                                        eval_metrics={"a": 1})


def test_contrib_data_names():
    with tf.Graph().as_default():
        ds = tf.data.Dataset.range(10).apply(tf.contrib.data.batch_and_drop_remainder(4))
        padded = tf.data.Dataset.range(1, 6).map(lambda n: tf.fill([n], n)).apply(
            tf.contrib.data.padded_batch_and_drop_remainder(2, [None]))
        mapped = tf.data.Dataset.range(5).apply(
            tf.contrib.data.map_and_batch(lambda x: x * 2, 2))
        it = [d.make_one_shot_iterator().get_next() for d in (ds, padded, mapped)]
        with tf.Session() as s:
            got = [[s.run(t).tolist() for _ in range(n)]
                   for t, n in zip(it, (2, 2, 3), strict=True)]
            for t in it:
                with pytest.raises(tf.errors.OutOfRangeError):
                    s.run(t)
    assert got[0] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert got[1] == [[[1, 0], [2, 2]], [[3, 3, 3, 0], [4, 4, 4, 4]]]
    assert got[2] == [[0, 2], [4, 6], [8]]


def test_host_call_runs_with_every_step(tmp_path):
    """A host_call's ops (on a TPU, summaries run on the host) run with each step."""
    def model_fn(features, labels, mode, params):
        w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(features["x"], w) - labels))
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.train.get_global_step())

        def host_fn(step):
            calls = tf.get_variable("host_calls", initializer=tf.constant(0, tf.int64),
                                    trainable=False)
            return tf.group(calls.assign_add(1), tf.identity(step))

        return tf.contrib.tpu.TPUEstimatorSpec(
            mode, loss=loss, train_op=train_op,
            host_call=(host_fn, [tf.train.get_global_step()]))

    est = _estimator(tmp_path / "m", model_fn)
    est.train(_input_fn([]), max_steps=7)
    assert est.get_variable_value("host_calls") == 7
