"""`tf.keras.layers`: Keras layers on TF1 graph tensors (see docs/keras.md)."""

from tensorflux.keras.engine.base_layer import InputSpec, Layer  # noqa: F401
from tensorflux.keras.engine.input_layer import Input, InputLayer  # noqa: F401
from tensorflux.keras.layers.advanced_activations import *  # noqa: F401,F403
from tensorflux.keras.layers.convolutional import *  # noqa: F401,F403
from tensorflux.keras.layers.core import *  # noqa: F401,F403
from tensorflux.keras.layers.embeddings import *  # noqa: F401,F403
from tensorflux.keras.layers.merge import *  # noqa: F401,F403
from tensorflux.keras.layers.noise import *  # noqa: F401,F403
from tensorflux.keras.layers.normalization import *  # noqa: F401,F403
from tensorflux.keras.layers.pooling import *  # noqa: F401,F403
from tensorflux.keras.layers.recurrent import *  # noqa: F401,F403
from tensorflux.keras.layers.wrappers import *  # noqa: F401,F403
