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
