"""OverFeat (`tf.contrib.slim.nets.overfeat`): the "fast" model of Sermanet et al.,
"OverFeat: Integrated Recognition, Localization and Detection using Convolutional Networks"
(2013), as TF-Slim names it: conv1-conv5 with 2x2 pools, fc6 (6x6), fc7 as convolutions and
the fc8 logits. Input 231x231 for a 1x1 map of logits."""

from __future__ import annotations

from tensorflux.contrib import layers_core
from tensorflux.contrib.slim_nets import _plain
from tensorflux.contrib.slim_nets._plain import conv, pool

__all__ = ["overfeat", "overfeat_arg_scope"]


def _spec():
    from tensorflux.variables import init_ops

    return {
        "default": "overfeat",
        "features": [conv(64, [11, 11], 4, "VALID", "conv1"), pool([2, 2], name="pool1"),
                     conv(256, [5, 5], 1, "VALID", "conv2"), pool([2, 2], name="pool2"),
                     conv(512, [3, 3], name="conv3"), conv(1024, [3, 3], name="conv4"),
                     conv(1024, [3, 3], name="conv5"), pool([2, 2], name="pool5")],
        "fc6": (3072, [6, 6]), "fc7": (4096, [1, 1]),
        "collected": [layers_core.conv2d, layers_core.fully_connected,
                      layers_core.max_pool2d],
        "collection_by_scope_name": True,
        "head_scope": {"weights_initializer": init_ops.truncated_normal_initializer(0.0,
                                                                                   0.005),
                       "biases_initializer": init_ops.constant_initializer(0.1)},
        "fc8_biases": init_ops.zeros_initializer(),
    }


def overfeat_arg_scope(weight_decay=0.0005):
    """ReLU, zero biases, L2 weight decay; SAME convolutions, VALID pools."""
    from tensorflux.variables import init_ops

    return _plain.classifier_arg_scope(weight_decay, init_ops.zeros_initializer(),
                                       pool_padding="VALID")


def overfeat(inputs, num_classes=1000, is_training=True, dropout_keep_prob=0.5,
             spatial_squeeze=True, scope="overfeat", global_pool=False):
    """OverFeat over NHWC `inputs` (231x231 for a 1x1 map of logits).

    Returns:
      (logits, end_points); see _plain.build.
    """
    return _plain.build(inputs, _spec(), num_classes, is_training, dropout_keep_prob,
                        spatial_squeeze, scope, global_pool=global_pool)


overfeat.default_image_size = 231
