"""`tf.layers`: TF1's layer classes and their functional forms, built from ops."""

from tensorflux.layers.base import InputSpec, Layer  # noqa: F401
from tensorflux.layers.convolutional import *  # noqa: F401,F403
from tensorflux.layers.core import *  # noqa: F401,F403
from tensorflux.layers.normalization import *  # noqa: F401,F403
from tensorflux.layers.pooling import *  # noqa: F401,F403
