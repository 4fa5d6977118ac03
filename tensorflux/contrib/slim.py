"""`tf.contrib.slim`: contrib's layers, arg_scope and variable helpers under one name (the
layer-building part of TF-Slim; its training loop, `slim.learning`, is not provided)."""

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
