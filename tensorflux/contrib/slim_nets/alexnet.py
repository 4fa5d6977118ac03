"""AlexNet v2 (`tf.contrib.slim.nets.alexnet`): the single-tower AlexNet of Krizhevsky's
"One weird trick for parallelizing convolutional neural networks" (2014), as TF-Slim
names it: conv1-conv5 with pools 1, 2 and 5, then fc6 (5x5) and fc7 as convolutions and the
fc8 logits. Input 224x224; larger images give a map of logits (spatial_squeeze=False)."""

from __future__ import annotations

from tensorflux.contrib import layers_core
from tensorflux.contrib.slim_nets import _plain
from tensorflux.contrib.slim_nets._plain import conv, pool

__all__ = ["alexnet_v2", "alexnet_v2_arg_scope"]


def _spec():
    from tensorflux.variables import init_ops

    return {
        "default": "alexnet_v2",
        "features": [conv(64, [11, 11], 4, "VALID", "conv1"), pool([3, 3], 2, "pool1"),
                     conv(192, [5, 5], name="conv2"), pool([3, 3], 2, "pool2"),
                     conv(384, [3, 3], name="conv3"), conv(384, [3, 3], name="conv4"),
                     conv(256, [3, 3], name="conv5"), pool([3, 3], 2, "pool5")],
        "fc6": (4096, [5, 5]), "fc7": (4096, [1, 1]),
        "collected": [layers_core.conv2d, layers_core.fully_connected,
                      layers_core.max_pool2d],
        "head_scope": {"weights_initializer": init_ops.truncated_normal_initializer(0.0,
                                                                                   0.005),
                       "biases_initializer": init_ops.constant_initializer(0.1)},
        "fc8_biases": init_ops.zeros_initializer(),
    }


def alexnet_v2_arg_scope(weight_decay=0.0005):
    """ReLU, biases 0.1, L2 weight decay; SAME convolutions, VALID pools."""
    from tensorflux.variables import init_ops

    return _plain.classifier_arg_scope(weight_decay, init_ops.constant_initializer(0.1),
                                       pool_padding="VALID")


def alexnet_v2(inputs, num_classes=1000, is_training=True, dropout_keep_prob=0.5,
               spatial_squeeze=True, scope="alexnet_v2", global_pool=False):
    """AlexNet v2 over NHWC `inputs` (224x224 for a 1x1 map of logits).

    Returns:
      (logits, end_points); see _plain.build.
    """
    return _plain.build(inputs, _spec(), num_classes, is_training, dropout_keep_prob,
                        spatial_squeeze, scope, global_pool=global_pool)


alexnet_v2.default_image_size = 224
