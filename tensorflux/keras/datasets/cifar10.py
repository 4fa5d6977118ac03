"""`tf.keras.datasets.cifar10`: not available (see datasets/__init__.py)."""

from tensorflux.keras.datasets._cache import unavailable

load_data = unavailable("cifar10")
