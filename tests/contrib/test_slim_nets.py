"""tf.contrib.slim.nets (alexnet, overfeat, vgg, resnet_v1/v2): the counts, names and shapes
TF-Slim's networks have under TensorFlow 2.21 with tf_slim 1.1 (recorded from it), and the
atrous (output_stride) property of resnet_utils.stack_blocks_dense."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.contrib.slim_nets import alexnet, overfeat, resnet_utils, resnet_v1, resnet_v2, vgg

slim = tf.contrib.slim
GK = tf.GraphKeys


def _counts():
    return (len(tf.global_variables()), len(tf.trainable_variables()),
            len(tf.get_collection(GK.MODEL_VARIABLES)), len(tf.get_collection(GK.UPDATE_OPS)),
            len(tf.get_collection(GK.REGULARIZATION_LOSSES)))


def _tiny_blocks(block_fn):
    return [block_fn("block1", base_depth=2, num_units=2, stride=2),
            block_fn("block2", base_depth=4, num_units=2, stride=1)]


def test_resnet_v1_50_graph():
    with tf.Graph().as_default(), slim.arg_scope(resnet_v1.resnet_arg_scope()):
        out, end_points = resnet_v1.resnet_v1_50(tf.placeholder(tf.float32, [2, 65, 65, 3]),
                                                 10)
        names = [v.op.name for v in tf.global_variables()]
        assert _counts() == (267, 161, 267, 106, 54)
    assert out.shape.as_list() == [2, 1, 1, 10]
    assert len(end_points) == 75
    assert list(end_points)[:2] == ["resnet_v1_50/conv1",
                                    "resnet_v1_50/block1/unit_1/bottleneck_v1/shortcut"]
    assert list(end_points)[-3:] == ["resnet_v1_50/block4", "resnet_v1_50/logits",
                                     "predictions"]
    # TF1 builds the core BatchNormalization layer here, which makes gamma first.
    assert names[:3] == ["resnet_v1_50/conv1/weights", "resnet_v1_50/conv1/BatchNorm/gamma",
                         "resnet_v1_50/conv1/BatchNorm/beta"]
    assert names[-3:] == [
        "resnet_v1_50/block4/unit_3/bottleneck_v1/conv3/BatchNorm/moving_variance",
        "resnet_v1_50/logits/weights", "resnet_v1_50/logits/biases"]


def test_resnet_v2_preactivation_names_and_eval_mode():
    with tf.Graph().as_default(), slim.arg_scope(resnet_v2.resnet_arg_scope()):
        x = tf.placeholder(tf.float32, [None, 33, 33, 3])
        out, end_points = resnet_v2.resnet_v2(x, _tiny_blocks(resnet_v2.resnet_v2_block), 5,
                                              is_training=False, scope="tiny2")
        names = [v.op.name for v in tf.global_variables()]
        assert _counts() == (76, 50, 76, 0, 16)
        value = _run(end_points["predictions"], {x: np.ones([3, 33, 33, 3], np.float32)})
    assert out.shape.as_list() == [None, 1, 1, 5] and len(end_points) == 23
    assert names[:3] == ["tiny2/conv1/weights", "tiny2/conv1/biases",
                         "tiny2/block1/unit_1/bottleneck_v2/preact/gamma"]
    assert names[-3:] == ["tiny2/postnorm/moving_variance", "tiny2/logits/weights",
                          "tiny2/logits/biases"]
    np.testing.assert_allclose(value.sum(-1), 1.0, rtol=1e-5)


def _run(fetches, feed=None):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(fetches, feed)


def test_output_stride_trades_strides_for_rates():
    """Dense (atrous) features at output_stride 2, subsampled by 2, equal the nominal
    stride-4 features: the convolutions after the stride see the same pixels."""
    blocks = [resnet_v1.resnet_v1_block("block1", base_depth=2, num_units=2, stride=2),
              resnet_v1.resnet_v1_block("block2", base_depth=2, num_units=2, stride=2)]
    x = np.random.RandomState(3).normal(size=(2, 17, 17, 4)).astype(np.float32)
    with tf.Graph().as_default(), slim.arg_scope(resnet_v1.resnet_arg_scope()):
        inputs = tf.constant(x)
        nominal, _ = resnet_v1.resnet_v1(inputs, blocks, None, is_training=False,
                                         global_pool=False, include_root_block=False,
                                         scope="net")
        dense, _ = resnet_v1.resnet_v1(inputs, blocks, None, is_training=False,
                                       global_pool=False, output_stride=2,
                                       include_root_block=False, reuse=True, scope="net")
        assert nominal.shape.as_list() == [2, 5, 5, 8]
        assert dense.shape.as_list() == [2, 9, 9, 8]
        got_nominal, got_dense = _run([nominal, dense])
    np.testing.assert_allclose(got_dense[:, ::2, ::2], got_nominal, rtol=1e-4, atol=1e-5)
    with tf.Graph().as_default(), pytest.raises(ValueError, match="cannot be reached"):
        resnet_utils.stack_blocks_dense(tf.ones([1, 9, 9, 4]), blocks, output_stride=3)
    with tf.Graph().as_default(), pytest.raises(ValueError, match="multiple of 4"):
        resnet_v1.resnet_v1_50(tf.ones([1, 33, 33, 3]), output_stride=6)


def test_conv2d_same_pads_by_kernel_only():
    with tf.Graph().as_default():
        x = tf.reshape(tf.range(49, dtype=tf.float32), [1, 7, 7, 1])
        with slim.arg_scope([slim.conv2d], weights_initializer=tf.ones_initializer(),
                            biases_initializer=None, activation_fn=None):
            y = resnet_utils.conv2d_same(x, 1, 3, stride=2, scope="c")
        got = _run(y)[0, :, :, 0]
    padded = np.pad(np.arange(49, dtype=np.float32).reshape(7, 7), 1)
    want = np.array([[padded[i:i + 3, j:j + 3].sum() for j in range(0, 7, 2)]
                     for i in range(0, 7, 2)])
    np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("build, arg_scope_fn, shape, out_shape, counts, end_points", [
    (lambda x: vgg.vgg_16(x, 7), vgg.vgg_arg_scope, [1, 224, 224, 3], [1, 7],
     (32, 32, 32, 0, 16), (21, "vgg_16/conv1/conv1_1", "vgg_16/fc8")),
    (lambda x: alexnet.alexnet_v2(x, 7, spatial_squeeze=False),
     alexnet.alexnet_v2_arg_scope, [1, 300, 400, 3], [1, 4, 7, 7], (16, 16, 16, 0, 8),
     (11, "alexnet_v2/conv1", "alexnet_v2/fc8")),
    (lambda x: overfeat.overfeat(x, 7), overfeat.overfeat_arg_scope, [1, 231, 231, 3],
     [1, 7], (16, 16, 16, 0, 8), (11, "overfeat/conv1", "overfeat/fc8")),
])
def test_plain_networks(build, arg_scope_fn, shape, out_shape, counts, end_points):
    with tf.Graph().as_default(), slim.arg_scope(arg_scope_fn()):
        out, got = build(tf.placeholder(tf.float32, shape))
        assert _counts() == counts
    assert (len(got), list(got)[0], list(got)[-1]) == end_points
    assert out.shape.as_list() == out_shape


def test_vgg_features_without_classes_and_default_sizes():
    with tf.Graph().as_default(), slim.arg_scope(vgg.vgg_arg_scope()):
        net, end_points = vgg.vgg_a(tf.placeholder(tf.float32, [2, 224, 224, 3]),
                                    num_classes=0, global_pool=True)
    assert net.shape.as_list() == [2, 1, 1, 4096]
    assert "global_pool" in end_points and "vgg_a/fc8" not in end_points
    assert (vgg.vgg_16.default_image_size, overfeat.overfeat.default_image_size,
            resnet_v2.resnet_v2_101.default_image_size) == (224, 231, 224)
    assert tf.contrib.slim.nets.resnet_v1 is resnet_v1
    # TF1 programs import them as `from tensorflow.contrib.slim.nets import vgg`.
    namespace = {}
    exec("from tensorflux.contrib.slim.nets import vgg as v", namespace)  # noqa: S102
    assert namespace["v"] is vgg
