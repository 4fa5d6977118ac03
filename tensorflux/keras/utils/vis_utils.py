"""`keras.utils.vis_utils` (Keras 2's module path): plot_model."""

from tensorflux.keras.utils import plot_model  # noqa: F401
