"""tf.contrib.learn.Experiment and learn_runner.run over a core Estimator (TF 1.2-1.4's way
of training and evaluating), with an export strategy."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tensorflux as tf

pytestmark = pytest.mark.timeout(180)


def _input_fn(x, y, epochs=None):
    return tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=16, num_epochs=epochs,
                                              shuffle=epochs is None)


def _experiment_fn(run_config, hparams):
    rng = np.random.RandomState(0)
    x = rng.randn(128, 3).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], np.float32) > 0).astype(np.int32)
    column = tf.feature_column.numeric_column("x", shape=[3])
    estimator = tf.estimator.LinearClassifier([column], config=run_config)
    serving = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"x": tf.placeholder(tf.float32, [None, 3])})
    return tf.contrib.learn.Experiment(
        estimator, _input_fn(x, y), _input_fn(x, y, epochs=1),
        train_steps=hparams["steps"], eval_steps=None, min_eval_frequency=20,
        export_strategies=[tf.contrib.learn.make_export_strategy(serving,
                                                                 exports_to_keep=1)])


def test_learn_runner_trains_evaluates_and_exports(tmp_path):
    config = tf.contrib.learn.RunConfig(model_dir=str(tmp_path), tf_random_seed=1)
    result, exports = tf.contrib.learn.learn_runner.run(_experiment_fn, run_config=config,
                                                        hparams={"steps": 60})
    assert result["global_step"] == 60 and result["accuracy"] > 0.8
    (path,) = exports
    assert os.path.exists(os.path.join(path, "saved_model.pb"))
    # evaluations every 20 steps on the way (eval event files) and one at the end
    assert os.path.isdir(os.path.join(str(tmp_path), "eval"))
    again = tf.contrib.learn.learn_runner.run(_experiment_fn, run_config=config,
                                              schedule="evaluate", hparams={"steps": 60})
    assert again["global_step"] == 60
    with pytest.raises(ValueError, match="non-existent task nope"):
        tf.contrib.learn.learn_runner.run(_experiment_fn, run_config=config,
                                          schedule="nope", hparams={"steps": 1})
    with pytest.raises(ValueError, match="Must specify either"):
        tf.contrib.learn.learn_runner.run(_experiment_fn)


def test_experiment_schedules(tmp_path):
    config = tf.contrib.learn.RunConfig(model_dir=str(tmp_path / "m"), tf_random_seed=2)
    experiment = _experiment_fn(config, {"steps": 30})
    assert experiment.train_steps == 30 and experiment.estimator.model_dir
    assert experiment.test()["global_step"] == 1
    experiment.train()
    result = experiment.continuous_eval(delay_secs=0, throttle_delay_secs=0)
    assert result["global_step"] == 30
    with pytest.raises(ValueError, match="must implement"):
        tf.contrib.learn.Experiment(object(), None, None)
