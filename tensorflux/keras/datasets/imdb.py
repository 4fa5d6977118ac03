"""`tf.keras.datasets.imdb`: not stored as one .npz by Keras; tensorflux cannot read
its cached archive."""


def load_data(*args, **kwargs):
    """Raises:
      FileNotFoundError: always (no network here, and the archive format is not read)."""
    raise FileNotFoundError("tensorflux.keras.datasets.imdb is not available: tensorflux "
                            "does not download, and reads only the .npz datasets (mnist, "
                            "boston_housing) from ~/.keras/datasets.")
