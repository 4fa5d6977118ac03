"""`tf.keras.datasets.boston_housing` from the cached boston_housing.npz."""

import numpy as np

from tensorflux.keras.datasets._cache import load_npz


def load_data(path="boston_housing.npz", test_split=0.2, seed=113):
    """((x_train, y_train), (x_test, y_test)), shuffled with `seed` as Keras does.

    Raises:
      FileNotFoundError: the file is not cached (tensorflux does not download)."""
    x, y = load_npz(path, ["x", "y"])
    rng = np.random.RandomState(seed)
    idx = np.arange(len(x))
    rng.shuffle(idx)
    x, y = x[idx], y[idx]
    cut = int(len(x) * (1 - test_split))
    return (x[:cut], y[:cut]), (x[cut:], y[cut:])
