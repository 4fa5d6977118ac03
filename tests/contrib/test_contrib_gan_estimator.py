"""tf.contrib.gan.estimator.GANEstimator: train (the networks' variables under
Generator/Discriminator, the global step counting GAN steps), evaluate (both losses as
metrics) and predict (the generator alone); and TF1's import paths through the alias."""

import importlib

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.contrib import gan as tfgan
from tests.aliased_import import aliased_tensorflux

RNG = np.random.RandomState(7)
NOISE = RNG.randn(32, 3).astype(np.float32)
REAL = (RNG.randn(32, 2) * 0.2 + [2.0, -1.0]).astype(np.float32)


def _generator(noise, mode):
    assert mode in (tf.estimator.ModeKeys.TRAIN, tf.estimator.ModeKeys.EVAL,
                    tf.estimator.ModeKeys.PREDICT)
    return tf.layers.dense(tf.layers.dense(noise, 8, tf.nn.relu), 2)


def _discriminator(data, unused_conditioning):
    return tf.layers.dense(tf.layers.dense(data, 8, tf.nn.relu), 1)


def _train_input():
    return tf.data.Dataset.from_tensor_slices((NOISE, REAL)).repeat().batch(8)


def test_gan_estimator_train_evaluate_predict(tmp_path):
    metric_calls = []

    def extra_metrics(gan_model):
        metric_calls.append(gan_model.generated_data.shape.as_list())
        return {"gen_mean": tf.metrics.mean(gan_model.generated_data)}

    est = tfgan.estimator.GANEstimator(
        model_dir=str(tmp_path), generator_fn=_generator, discriminator_fn=_discriminator,
        generator_loss_fn=tfgan.losses.wasserstein_generator_loss,
        discriminator_loss_fn=tfgan.losses.wasserstein_discriminator_loss,
        generator_optimizer=tf.train.AdamOptimizer(1e-3, 0.5),
        discriminator_optimizer=lambda: tf.train.AdamOptimizer(1e-3, 0.5),
        get_hooks_fn=tfgan.get_sequential_train_hooks(tfgan.GANTrainSteps(1, 2)),
        get_eval_metric_ops_fn=extra_metrics,
        add_summaries=tfgan.estimator.SummaryType.VARIABLES)
    est.train(_train_input, steps=5)
    names = {n for n, _ in tf.train.list_variables(str(tmp_path))}
    assert {"Generator/dense/kernel", "Discriminator/dense/kernel", "global_step"} <= names
    assert tf.train.load_variable(str(tmp_path), "global_step") == 5
    metrics = est.evaluate(_train_input, steps=2)
    assert {"generator_loss", "discriminator_loss", "gen_mean", "loss",
            "global_step"} <= set(metrics)
    np.testing.assert_allclose(metrics["loss"],
                               metrics["generator_loss"] + metrics["discriminator_loss"],
                               rtol=1e-4, atol=1e-5)
    assert metric_calls == [[None, 2]]  # called once, in the EVAL graph

    predict_input = lambda: tf.data.Dataset.from_tensor_slices(NOISE[:4]).batch(4)  # noqa: E731
    preds = np.stack(list(est.predict(predict_input)))
    assert preds.shape == (4, 2)
    with tf.Graph().as_default(), tf.Session() as sess:
        out = _generator(tf.constant(NOISE[:4]), tf.estimator.ModeKeys.PREDICT)
        saver = tf.train.Saver({v.op.name.replace("dense", "Generator/dense", 1): v
                                for v in tf.global_variables()})
        saver.restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
        np.testing.assert_allclose(preds, sess.run(out), rtol=1e-5)


def test_gan_estimator_argument_checks():
    kwargs = dict(generator_fn=_generator, discriminator_fn=_discriminator,
                  generator_loss_fn=tfgan.losses.wasserstein_generator_loss,
                  discriminator_loss_fn=tfgan.losses.wasserstein_discriminator_loss)
    with pytest.raises(ValueError, match="generator_loss_fn must be callable"):
        tfgan.estimator.GANEstimator(**{**kwargs, "generator_loss_fn": None})
    with pytest.raises(ValueError, match="use_loss_summaries must be"):
        tfgan.estimator.GANEstimator(use_loss_summaries="yes", **kwargs)
    with pytest.raises(TypeError, match="get_hooks_fn must be callable"):
        tfgan.estimator.GANEstimator(get_hooks_fn=3, **kwargs)


@pytest.mark.parametrize("path,name,owner", [
    ("contrib.gan", "gan_model", "contrib.gan"),
    ("contrib.gan.python.train", "gan_train_ops", "contrib.gan"),
    ("contrib.gan.python.losses.python.losses_impl", "wasserstein_gradient_penalty",
     "contrib.gan.losses.wargs"),
    ("contrib.gan.python.losses.python.tuple_losses", "modified_generator_loss",
     "contrib.gan.losses"),
    ("contrib.gan.python.features.python.virtual_batchnorm_impl", "VBN",
     "contrib.gan.features"),
    ("contrib.gan.python.eval.python.classifier_metrics_impl",
     "frechet_classifier_distance", "contrib.gan.eval"),
    ("contrib.gan.python.estimator.python.gan_estimator_impl", "GANEstimator",
     "contrib.gan.estimator"),
])
def test_tf1_paths_import_directly_and_aliased(path, name, owner):
    module = importlib.import_module(f"tensorflux.{path}")
    owner_obj = tf
    for part in owner.split("."):
        owner_obj = getattr(owner_obj, part)
    assert getattr(module, name) is getattr(owner_obj, name)
    with aliased_tensorflux():
        assert getattr(importlib.import_module(f"aliasedtf.{path}"), name) is getattr(
            module, name)
