"""`tf.contrib.slim.nets` against what TF1's TF-Slim builds (tests/contrib/data/
slim_nets_golden.json, written by scripts/slim_nets_golden.py under TensorFlow with the
`tf_slim` package): every variable (name, shape, creation order), every end point (name,
shape), the output's shape, the update ops and regularization losses; for small ResNets
built from the same blocks, the logits and predictions from the same deterministic
weights."""

from __future__ import annotations

import importlib
import json
import os
import sys

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.contrib import slim
from tensorflux.contrib.slim import nets

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
golden_lib = importlib.import_module("slim_nets_golden")
with open(golden_lib.GOLDEN) as _f:
    GOLDEN = json.load(_f)
sys.path.pop(0)


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def _assert_values_equal(got, want):
    # The initializers draw from the same distributions (other random numbers).
    assert [n for n, _ in got["init_std"]] == [n for n, _ in want["init_std"]]
    np.testing.assert_allclose([s for _, s in got["init_std"]],
                               [s for _, s in want["init_std"]], rtol=0.15)
    np.testing.assert_allclose(got["net_value"], want["net_value"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["predictions_value"], want["predictions_value"],
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", golden_lib.CASES, ids=[c[0] for c in golden_lib.CASES])
def test_network_builds_tf1s_variables_and_end_points(case):
    name, modname, builder, kwargs, shape, scope_fn, values = case
    g, x, net, end_points = golden_lib.build(tf, slim, nets, modname,
                                             lambda m: getattr(m, builder), kwargs, shape,
                                             scope_fn)
    got, want = golden_lib.describe(tf, g, net, end_points), GOLDEN[name]
    assert got["variables"] == want["variables"]
    assert got["end_points"] == want["end_points"]
    assert got["net"] == want["net"]
    assert got["update_ops"] == want["update_ops"]
    assert got["regularization_losses"] == want["regularization_losses"]
    if values:  # the same deterministic weights give TF's outputs
        _assert_values_equal(golden_lib.run_values(tf, g, x, net, end_points, shape), want)


@pytest.mark.parametrize("case", golden_lib.SMALL, ids=[c[0] for c in golden_lib.SMALL])
def test_small_resnets_compute_tf1s_outputs_from_the_same_weights(case):
    name, modname, blocks, kwargs, shape = case
    g, x, net, end_points = golden_lib.build(
        tf, slim, nets, modname, golden_lib.small_resnet(name, modname, blocks), kwargs,
        shape, "resnet_arg_scope")
    want = GOLDEN[name]
    assert golden_lib.describe(tf, g, net, end_points)["variables"] == want["variables"]
    _assert_values_equal(golden_lib.run_values(tf, g, x, net, end_points, shape), want)


def test_nets_import_as_tf1_submodules():
    from tensorflux.contrib.slim.nets import resnet_v1, vgg  # noqa: F401

    assert tf.contrib.slim.nets.resnet_v2.resnet_v2_50.default_image_size == 224
    assert nets.overfeat.overfeat.default_image_size == 231
    assert nets.vgg.vgg_d is nets.vgg.vgg_16


@pytest.mark.parametrize("output_stride", [6, 12])
def test_resnet_output_stride_that_cannot_be_reached_is_a_value_error(output_stride):
    x = tf.placeholder(tf.float32, [1, 64, 64, 3])
    with pytest.raises(ValueError, match="output_stride"):
        nets.resnet_v1.resnet_v1_50(x, output_stride=output_stride)


def test_resnet_reuse_shares_the_variables_and_restores_from_a_checkpoint(tmp_path):
    blocks = [nets.resnet_v1.resnet_v1_block("block1", 4, 1, 2),
              nets.resnet_v1.resnet_v1_block("block2", 8, 1, 1)]
    x = tf.placeholder(tf.float32, [1, 32, 32, 3])
    with slim.arg_scope(nets.resnet_v1.resnet_arg_scope()):
        a, _ = nets.resnet_v1.resnet_v1(x, blocks, 3, is_training=False, scope="r")
        n = len(tf.global_variables())
        b, _ = nets.resnet_v1.resnet_v1(x, blocks, 3, is_training=False, scope="r",
                                        reuse=True)
    assert len(tf.global_variables()) == n
    images = np.random.default_rng(0).standard_normal((1, 32, 32, 3)).astype(np.float32)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        va, vb = sess.run([a, b], {x: images})
        path = saver.save(sess, str(tmp_path / "model.ckpt"))
    np.testing.assert_array_equal(va, vb)
    with tf.Session() as sess:
        saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run(a, {x: images}), va)


def test_inception_bad_arguments_are_value_errors():
    x = tf.placeholder(tf.float32, [1, 299, 299, 3])
    with pytest.raises(ValueError, match="depth_multiplier"):
        nets.inception.inception_v3(x, depth_multiplier=0)
    with pytest.raises(ValueError, match="Unknown final endpoint Mixed_9z"):
        nets.inception.inception_v3_base(x, final_endpoint="Mixed_9z")
    with pytest.raises(ValueError, match="Unknown final endpoint"):
        nets.inception_v1.inception_v1_base(x, final_endpoint="Logits")


def test_inception_v3_on_a_small_input_reduces_its_final_pool():
    x = tf.placeholder(tf.float32, [1, 150, 150, 3])
    logits, end_points = nets.inception.inception_v3(x, 4, create_aux_logits=False)
    assert logits.shape.as_list() == [1, 4]
    assert "AuxLogits" not in end_points
    assert end_points["PreLogits"].shape.as_list() == [1, 1, 1, 2048]
    pool = tf.get_default_graph().get_operation_by_name("InceptionV3/Logits/AvgPool_1a_3x3/AvgPool")
    assert pool.get_attr("ksize") == [1, 3, 3, 1]


@pytest.mark.oracle
def test_a_checkpoint_tensorflow_wrote_restores_into_the_network(tmp_path):
    """The model-zoo path: TensorFlow saves variables named as TF-Slim's network has them
    (values from golden_lib.weights); `slim.get_variables_to_restore` + Saver restore them
    into tensorflux's network (its logits excluded, as when fine-tuning to new classes),
    which then computes TF-Slim's features."""
    from tests.oracle import run_tf

    name, modname, blocks, kwargs, shape = golden_lib.SMALL[0]
    want = GOLDEN[name]
    prefix = str(tmp_path / "zoo.ckpt")
    run_tf(f"""
import zlib
def weights(name, shape):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    if name.endswith("moving_variance"):
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    scale = float(np.prod(shape[:-1])) ** -0.5 if len(shape) == 4 else 0.1
    return (rng.standard_normal(shape) * scale).astype(np.float32)
vs = [tf.Variable(weights(n, s), name=n) for n, s in {want["variables"]!r}]
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    result = tf.train.Saver(vs).save(sess, {prefix!r})
""")
    g, x, net, end_points = golden_lib.build(
        tf, slim, nets, modname, golden_lib.small_resnet(name, modname, blocks),
        dict(kwargs, num_classes=9), shape, "resnet_arg_scope")
    with g.as_default():
        restore = slim.get_variables_to_restore(exclude=[f"{name}/logits"])
        assert len(restore) == len(want["variables"]) - 2
        features = end_points[f"{name}/block3"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            tf.train.Saver(restore).restore(sess, prefix)
            images = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
            got = sess.run(features, {x: images})
            assert sess.run(net, {x: images}).shape == (2, 1, 1, 9)
    # The same features through TF-Slim's own logits weights give the golden logits.
    w, b = (golden_lib.weights(f"{name}/logits/{v}", s) for v, s in
            (("weights", [1, 1, 8 * 4, 5]), ("biases", [5])))
    logits = got.mean(axis=(1, 2)) @ w[0, 0] + b
    np.testing.assert_allclose(logits.ravel(), want["net_value"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("builder,size", [(nets.vgg.vgg_16, 224),
                                          (nets.alexnet.alexnet_v2, 224),
                                          (nets.overfeat.overfeat, 231)])
def test_features_only_and_global_pool_as_research_slims_networks(builder, size):
    """research/slim's later arguments: no logits for num_classes 0, fc7 averaged over
    space with global_pool."""
    x = tf.placeholder(tf.float32, [2, size + 64, size + 64, 3])
    net, end_points = builder(x, num_classes=0, global_pool=True)
    assert net.shape.as_list() == [2, 1, 1, 4096]
    assert end_points["global_pool"] is net
    assert list(end_points)[-2:] == [f"{builder.__name__}/fc7", "global_pool"]
    assert not [v for v in tf.global_variables() if "fc8" in v.op.name]
