"""Inception v1 (GoogLeNet: Szegedy et al., "Going Deeper with Convolutions", 2014) with
batch normalization, as TF-Slim builds it (its layer names, so that TF-Slim's checkpoints
restore). `inception_v1_base` returns the features up to `final_endpoint`."""

from __future__ import annotations

from tensorflux.contrib.slim_nets import _common as c
from tensorflux.contrib.slim_nets import _inception_blocks as blocks
from tensorflux.ops import nn_ops

trunc_normal = c.trunc_normal


def _mixed(b0, b1, b2, b3, b2_name="Conv2d_0b_3x3"):
    return [[("conv", b0, [1, 1], "Conv2d_0a_1x1")],
            [("conv", b1[0], [1, 1], "Conv2d_0a_1x1"),
             ("conv", b1[1], [3, 3], "Conv2d_0b_3x3")],
            [("conv", b2[0], [1, 1], "Conv2d_0a_1x1"), ("conv", b2[1], [3, 3], b2_name)],
            [("max", [3, 3], "MaxPool_0a_3x3"), ("conv", b3, [1, 1], "Conv2d_0b_1x1")]]


# (end point, what builds it): a layer spec, or a module's branches.
_LAYERS = [
    ("Conv2d_1a_7x7", ("conv", 64, [7, 7], "Conv2d_1a_7x7", {"stride": 2})),
    ("MaxPool_2a_3x3", ("max", [3, 3], "MaxPool_2a_3x3", {"stride": 2})),
    ("Conv2d_2b_1x1", ("conv", 64, [1, 1], "Conv2d_2b_1x1")),
    ("Conv2d_2c_3x3", ("conv", 192, [3, 3], "Conv2d_2c_3x3")),
    ("MaxPool_3a_3x3", ("max", [3, 3], "MaxPool_3a_3x3", {"stride": 2})),
    ("Mixed_3b", _mixed(64, (96, 128), (16, 32), 32)),
    ("Mixed_3c", _mixed(128, (128, 192), (32, 96), 64)),
    ("MaxPool_4a_3x3", ("max", [3, 3], "MaxPool_4a_3x3", {"stride": 2})),
    ("Mixed_4b", _mixed(192, (96, 208), (16, 48), 64)),
    ("Mixed_4c", _mixed(160, (112, 224), (24, 64), 64)),
    ("Mixed_4d", _mixed(128, (128, 256), (24, 64), 64)),
    ("Mixed_4e", _mixed(112, (144, 288), (32, 64), 64)),
    ("Mixed_4f", _mixed(256, (160, 320), (32, 128), 128)),
    ("MaxPool_5a_2x2", ("max", [2, 2], "MaxPool_5a_2x2", {"stride": 2})),
    # TF-Slim names this module's third branch's 3x3 convolution 0a; its checkpoints too.
    ("Mixed_5b", _mixed(256, (160, 320), (32, 128), 128, b2_name="Conv2d_0a_3x3")),
    ("Mixed_5c", _mixed(384, (192, 384), (48, 128), 128)),
]


def run_layers(net, table, final_endpoint, depth=lambda d: d):
    """`table`'s layers on `net` up to `final_endpoint`: (net, end_points).

    Raises:
      ValueError: `final_endpoint` is not one of the table's end points.
    """
    end_points = {}
    for end_point, spec in table:
        if isinstance(spec, tuple):
            net = blocks.layer(net, spec, depth)
        else:
            net = blocks.module(net, end_point, spec, depth)
        end_points[end_point] = net
        if end_point == final_endpoint:
            return net, end_points
    raise ValueError(f"Unknown final endpoint {final_endpoint}")


def inception_v1_base(inputs, final_endpoint="Mixed_5c", scope="InceptionV1"):
    """Inception v1's layers from `inputs` up to `final_endpoint` (one of the end points:
    Conv2d_1a_7x7 ... Mixed_5c): (net, end_points)."""
    with c.vs.variable_scope(scope, "InceptionV1", [inputs]):
        with c.arg_scope([c.conv2d, c.layers_core.fully_connected],
                         weights_initializer=trunc_normal(0.01)):
            with c.arg_scope([c.conv2d, c.max_pool2d], stride=1, padding="SAME"):
                return run_layers(inputs, _LAYERS, final_endpoint)


def inception_v1(inputs, num_classes=1000, is_training=True, dropout_keep_prob=0.8,
                 prediction_fn=c.softmax, spatial_squeeze=True, reuse=None,
                 scope="InceptionV1"):
    """Inception v1 on [batch, 224, 224, 3] images: (logits, end_points), end_points with
    "Logits" and "Predictions"."""
    with c.vs.variable_scope(scope, "InceptionV1", [inputs], reuse=reuse) as sc:
        with c.arg_scope([c.batch_norm, c.dropout], is_training=is_training):
            net, end_points = inception_v1_base(inputs, scope=sc)
            with c.vs.variable_scope("Logits"):
                logits = blocks.logits_layers(
                    net, num_classes, dropout_keep_prob, spatial_squeeze,
                    ("AvgPool_0a_7x7", "Dropout_0b", "Conv2d_0c_1x1"), [7, 7], stride=1)
                end_points["Logits"] = logits
                end_points["Predictions"] = prediction_fn(logits, scope="Predictions")
    return logits, end_points


inception_v1.default_image_size = 224


def inception_v1_arg_scope(weight_decay=0.00004, use_batch_norm=True,
                           batch_norm_var_collection="moving_vars"):
    """Defaults of Inception v1's layers: L2 weight decay, He's initialization, ReLU and
    (with `use_batch_norm`) batch normalization."""
    params = blocks.batch_norm_params(0.9997, 0.001, batch_norm_var_collection)
    with c.arg_scope([c.conv2d, c.layers_core.fully_connected],
                     weights_regularizer=c.l2_regularizer(weight_decay)):
        with c.arg_scope([c.conv2d], weights_initializer=c.variance_scaling_initializer(),
                         activation_fn=nn_ops.relu,
                         normalizer_fn=c.batch_norm if use_batch_norm else None,
                         normalizer_params=params if use_batch_norm else {}) as sc:
            return sc
