"""`tf.contrib.layers`: the layer functions (fully_connected, conv2d, pools, dropout,
batch_norm, layer_norm, ...; contrib/layers_core.py), the weight regularizers (l1, l2, l1_l2,
sum, apply_regularization), `flatten` and the contrib initializers (xavier, variance
scaling); separable/N-d convolutions, 3-D pools, instance/group norm and the other layers
TF-Slim's networks use (contrib/layers_slim.py); the summary helpers (`summarize_activation`,
..., contrib/layers_summaries.py)."""

from tensorflux.contrib.layers_core import (  # noqa: F401
    avg_pool2d,
    batch_norm,
    conv2d,
    conv2d_transpose,
    convolution2d,
    convolution2d_transpose,
    dropout,
    embed_sequence,
    fully_connected,
    layer_norm,
    max_pool2d,
    one_hot_encoding,
    repeat,
    stack,
)
from tensorflux.contrib.layers_extra import *  # noqa: F401,F403
from tensorflux.contrib.layers_feature_columns import *  # noqa: F401,F403
from tensorflux.contrib.layers_slim import *  # noqa: F401,F403
from tensorflux.contrib.layers_summaries import *  # noqa: F401,F403
from tensorflux.contrib.optimizers import OPTIMIZER_SUMMARIES, optimize_loss  # noqa: F401
from tensorflux.layers.regularizers import *  # noqa: F401,F403


def _register_tf1_paths():
    """TF1's module paths under `tensorflow.contrib.layers.python.layers` (`initializers`,
    `layers`, `regularizers`, `optimizers`, `feature_column`, `summaries`, `utils`), which
    libraries import directly (tflearn's variance scaling): this module for all but `utils`
    and `summaries`, contrib/layers_utils.py and layers_summaries.py for those."""
    import sys  # noqa: PLC0415 - runs once, at import

    from tensorflux.contrib import layers_summaries, layers_utils, tf1_paths  # noqa: PLC0415

    this = sys.modules[__name__]
    paths = {f"python.layers.{name}": this
             for name in ("initializers", "layers", "regularizers", "optimizers",
                          "feature_column", "encoders")}
    paths["python.layers.utils"] = layers_utils
    paths["python.layers.summaries"] = layers_summaries
    # TF1's `from ...python.layers import *` also exported the submodules themselves.
    this.summaries, this.utils = layers_summaries, layers_utils
    return tf1_paths.register(__name__, paths)


python = _register_tf1_paths()
