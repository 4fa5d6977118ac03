"""`tf.contrib.slim`: contrib's layers, arg_scope and variable helpers under one name (the
layer-building part of TF-Slim, `model_analyzer` and `prefetch_queue`; its training loop,
`slim.learning`, is not provided)."""

from tensorflux.contrib import model_analyzer, prefetch_queue  # noqa: E402,F401
from tensorflux.contrib.framework import *  # noqa: F401,F403
from tensorflux.contrib.layers import *  # noqa: F401,F403
from tensorflux.contrib.layers_core import (  # noqa: F401
    avg_pool2d,
    batch_norm,
    conv2d,
    conv2d_transpose,
    dropout,
    fully_connected,
    max_pool2d,
    repeat,
    stack,
)
from tensorflux.contrib.layers_extra import flatten  # noqa: F401

import sys as _sys  # noqa: E402

from tensorflux.contrib import slim_nets as nets  # noqa: E402

# `from tensorflow.contrib.slim.nets import resnet_v1` imports it as a submodule.
_sys.modules[__name__ + ".nets"] = nets
for _name in ("alexnet", "inception", "inception_v1", "inception_v2",
              "inception_v3", "overfeat", "resnet_utils", "resnet_v1", "resnet_v2", "vgg"):
    _sys.modules[f"{__name__}.nets.{_name}"] = getattr(nets, _name)
