"""`tf.contrib.tensorboard`: TensorBoard plugin helpers (the embedding projector's)."""

from tensorflux.contrib.tensorboard import plugins  # noqa: F401
