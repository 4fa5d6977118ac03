"""`tf.contrib.tensorboard.plugins`."""

from tensorflux.contrib.tensorboard.plugins import projector  # noqa: F401
