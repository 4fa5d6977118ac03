"""`keras.utils.np_utils` (Keras 2's module path): to_categorical and normalize."""

from tensorflux.keras.utils import normalize, to_categorical  # noqa: F401
