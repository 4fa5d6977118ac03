"""AlexNet v2 (Krizhevsky, "One weird trick for parallelizing convolutional neural
networks", 2014: one tower), as TF-Slim builds it: the fully connected layers are
convolutions (fc6 a 5x5 VALID one on the 5x5 map of a 224x224 input)."""

from __future__ import annotations

from tensorflux.contrib.slim_nets import _common as c
from tensorflux.ops import nn_ops
from tensorflux.variables import init_ops

trunc_normal = c.trunc_normal


def alexnet_v2_arg_scope(weight_decay=0.0005):
    """Defaults of AlexNet's layers: ReLU, biases 0.1, L2 weight decay, SAME convolutions
    and VALID max pools."""
    with c.arg_scope([c.conv2d, c.layers_core.fully_connected], activation_fn=nn_ops.relu,
                     biases_initializer=init_ops.constant_initializer(0.1),
                     weights_regularizer=c.l2_regularizer(weight_decay)):
        with c.arg_scope([c.conv2d], padding="SAME"):
            with c.arg_scope([c.max_pool2d], padding="VALID") as sc:
                return sc


def alexnet_v2(inputs, num_classes=1000, is_training=True, dropout_keep_prob=0.5,
               spatial_squeeze=True, scope="alexnet_v2", global_pool=False):
    """AlexNet v2 on [batch, 224, 224, 3] images: (logits, end_points);
    `global_pool` and `num_classes` as _common.classifier_head's."""
    with c.vs.variable_scope(scope, "alexnet_v2", [inputs]) as sc:
        collection = c.end_points_collection(sc)
        with c.arg_scope([c.conv2d, c.layers_core.fully_connected, c.max_pool2d],
                         outputs_collections=[collection]):
            net = c.conv2d(inputs, 64, [11, 11], 4, padding="VALID", scope="conv1")
            net = c.max_pool2d(net, [3, 3], 2, scope="pool1")
            net = c.conv2d(net, 192, [5, 5], scope="conv2")
            net = c.max_pool2d(net, [3, 3], 2, scope="pool2")
            net = c.conv2d(net, 384, [3, 3], scope="conv3")
            net = c.conv2d(net, 384, [3, 3], scope="conv4")
            net = c.conv2d(net, 256, [3, 3], scope="conv5")
            net = c.max_pool2d(net, [3, 3], 2, scope="pool5")
            return c.fc_classifier(net, 4096, [5, 5], sc, collection, num_classes,
                                   is_training, dropout_keep_prob, spatial_squeeze,
                                   global_pool)


alexnet_v2.default_image_size = 224
