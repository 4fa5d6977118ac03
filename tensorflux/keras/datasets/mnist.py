"""`tf.keras.datasets.mnist` from the cached mnist.npz."""

from tensorflux.keras.datasets._cache import load_npz


def load_data(path="mnist.npz"):
    """((x_train, y_train), (x_test, y_test)) from the Keras cache.

    Raises:
      FileNotFoundError: the file is not cached (tensorflux does not download)."""
    x_train, y_train, x_test, y_test = load_npz(path, ["x_train", "y_train", "x_test",
                                                       "y_test"])
    return (x_train, y_train), (x_test, y_test)
