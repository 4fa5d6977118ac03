"""`tf.contrib.slim`: contrib's layers, arg_scope and variable helpers under one name (the
layer-building part of TF-Slim, `model_analyzer` and `prefetch_queue`; its training loop,
`slim.learning`, is not provided)."""

import sys as _sys

from tensorflux.contrib import layers as layers  # noqa: F401
from tensorflux.contrib import layers_extra as initializers  # noqa: F401
from tensorflux.contrib import layers_utils as utils  # noqa: F401
from tensorflux.contrib import model_analyzer, prefetch_queue  # noqa: E402,F401
from tensorflux.contrib import slim_nets as nets  # noqa: F401
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
from tensorflux.layers import regularizers  # noqa: F401

# `from tensorflow.contrib.slim.nets import vgg` imports through this module's name.
_sys.modules.setdefault(__name__ + ".nets", nets)
for _name in nets.__all__:
    _sys.modules.setdefault(f"{__name__}.nets.{_name}", getattr(nets, _name))
