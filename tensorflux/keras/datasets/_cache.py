"""Reading the Keras datasets' cached .npz files (allow_pickle off)."""

from __future__ import annotations

import numpy as np

from tensorflux.keras.utils import get_file

_BASE = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"


def load_npz(fname, keys):
    """The arrays `keys` of the cached file `fname`."""
    path = get_file(fname, origin=_BASE + fname)
    with np.load(path, allow_pickle=False) as f:
        return [f[k] for k in keys]


def unavailable(name):
    """A `load_data` for a dataset that is not kept as one plain .npz by Keras."""

    def load_data(*args, **kwargs):
        """Raises:
          FileNotFoundError: always (no network here, and the archive is not read)."""
        raise FileNotFoundError(f"tensorflux.keras.datasets.{name} is not available: "
                                "tensorflux does not download, and reads only the .npz "
                                "datasets (mnist, boston_housing) from ~/.keras/datasets.")

    return load_data
