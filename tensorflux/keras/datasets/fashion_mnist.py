"""`tf.keras.datasets.fashion_mnist`: not available (see datasets/__init__.py)."""

from tensorflux.keras.datasets._cache import unavailable

load_data = unavailable("fashion_mnist")
