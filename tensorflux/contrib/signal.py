"""`tf.contrib.signal`: TF1's signal-processing library, which became `tf.signal` (the
same functions: tensorflux/signal)."""

from tensorflux.signal import *  # noqa: F401,F403
