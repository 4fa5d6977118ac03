"""`tf.client`: client-side tools (the step timeline)."""

from tensorflux.client import timeline  # noqa: F401

__all__ = ["timeline"]
