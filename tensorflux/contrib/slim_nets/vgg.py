"""VGG (`tf.contrib.slim.nets.vgg`): configurations A (11 layers), D (16) and E (19) of
Simonyan & Zisserman, "Very Deep Convolutional Networks for Large-Scale Image Recognition"
(2014), as TF-Slim names them: five stages of 3x3 convolutions (`convN/convN_i`), each
followed by a 2x2 max pool, then fc6 (7x7), fc7 as convolutions and the fc8 logits."""

from __future__ import annotations

from tensorflux.contrib import layers_core
from tensorflux.contrib.slim_nets import _plain
from tensorflux.contrib.slim_nets._plain import convs, pool

__all__ = ["vgg_a", "vgg_16", "vgg_19", "vgg_d", "vgg_e", "vgg_arg_scope"]

# Convolutions per stage (the stages' depths are 64, 128, 256, 512, 512).
_REPEATS = {"vgg_a": (1, 1, 2, 2, 2), "vgg_16": (2, 2, 3, 3, 3), "vgg_19": (2, 2, 4, 4, 4)}


def _spec(name):
    features = []
    for i, (repeats, depth) in enumerate(zip(_REPEATS[name], (64, 128, 256, 512, 512),
                                             strict=True)):
        features += [convs(repeats, depth, f"conv{i + 1}"), pool([2, 2], name=f"pool{i + 1}")]
    return {"default": name, "features": features, "fc6": (4096, [7, 7]),
            "fc7": (4096, [1, 1]), "collected": [layers_core.conv2d, layers_core.max_pool2d]}


def vgg_arg_scope(weight_decay=0.0005):
    """ReLU, zero biases, L2 weight decay, SAME convolutions."""
    from tensorflux.variables import init_ops

    return _plain.classifier_arg_scope(weight_decay, init_ops.zeros_initializer())


def _vgg(name):
    def network(inputs, num_classes=1000, is_training=True, dropout_keep_prob=0.5,
                spatial_squeeze=True, scope=name, fc_conv_padding="VALID",
                global_pool=False):
        """The network over NHWC `inputs` (224x224 for a 1x1 map of logits); with
        num_classes 0 or None, the fc7 features (global-pooled with `global_pool`).

        Returns:
          (logits, end_points); see _plain.build.
        """
        return _plain.build(inputs, _spec(name), num_classes, is_training,
                            dropout_keep_prob, spatial_squeeze, scope,
                            fc_conv_padding=fc_conv_padding, global_pool=global_pool)
    network.__name__ = network.__qualname__ = name
    network.default_image_size = 224
    return network


vgg_a = _vgg("vgg_a")
vgg_16 = _vgg("vgg_16")
vgg_19 = _vgg("vgg_19")
vgg_d = vgg_16
vgg_e = vgg_19
