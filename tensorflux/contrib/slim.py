"""`tf.contrib.slim`: contrib's layers, arg_scope and variable helpers under one name (the
layer-building part of TF-Slim, `slim.utils`, `model_analyzer` and `prefetch_queue`),
TF-Slim's library (`slim.learning`, `slim.evaluation`, losses, metrics, data;
contrib/slim_lib.py) and its networks (`slim.nets`: contrib/slim_nets). TF1's module paths
import too: `tensorflow.contrib.slim.nets.resnet_v1`, and the long ones under
`tensorflow.contrib.slim.python.slim` (`.nets.resnet_v1`, `.learning`,
`.data.tfexample_decoder`, ...)."""

import sys as _sys
import types as _types

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
from tensorflux.contrib.slim_lib import *  # noqa: F401,F403
from tensorflux.layers import regularizers  # noqa: F401

__path__: list[str] = []  # a package to the import system, as TF1's (aliased imports)


def _register(name: str, module) -> None:
    _sys.modules.setdefault(f"{__name__}.{name}", module)


def _package(name: str, **attrs):
    """A module object standing for one of TF1's package paths (no files of its own)."""
    module = _types.ModuleType(f"{__name__}.{name}")
    module.__path__ = []
    module.__dict__.update(attrs)
    _register(name, module)
    return module


_DATA = ("data_decoder", "data_provider", "dataset", "dataset_data_provider",
         "parallel_reader", "prefetch_queue", "tfexample_decoder")
_LIBRARY = ("evaluation", "learning", "model_analyzer", "queues", "summaries")
_register("nets", nets)
for _name in nets.__all__:
    _register(f"nets.{_name}", getattr(nets, _name))
_data = _package("python.slim.data", **{n: globals()[n] for n in _DATA})
for _name in _DATA:
    _register(f"python.slim.data.{_name}", globals()[_name])
_slim = _package("python.slim", data=_data, nets=nets,
                 **{n: globals()[n] for n in _LIBRARY})
for _name in _LIBRARY:
    _register(f"python.slim.{_name}", globals()[_name])
_register("python.slim.nets", nets)
for _name in nets.__all__:
    _register(f"python.slim.nets.{_name}", getattr(nets, _name))
python = _package("python", slim=_slim)
