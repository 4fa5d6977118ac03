"""`tf.keras.datasets.cifar10` from the cached, unpacked cifar-10-batches-py directory
(Keras's python batches: data_batch_1..5 and test_batch), read without running code."""

import os

import numpy as np

from tensorflux.keras import backend as K
from tensorflux.keras.datasets._cache import _DataUnpickler
from tensorflux.keras.utils import get_file

_ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"


def load_batch(fpath, label_key="labels"):
    """(data [n, 3, 32, 32] uint8, labels) of one pickled CIFAR batch.

    Raises:
      pickle.UnpicklingError: the file names a class other than NumPy's array ones."""
    with open(fpath, "rb") as f:
        d = _DataUnpickler(f, encoding="bytes").load()
    d = {k.decode("utf8") if isinstance(k, bytes) else k: v for k, v in d.items()}
    data = np.asarray(d["data"], dtype=np.uint8)
    return data.reshape(data.shape[0], 3, 32, 32), d[label_key]


def load_data():
    """((x_train, y_train), (x_test, y_test)): uint8 images, [n, 32, 32, 3] (channels
    last; [n, 3, 32, 32] with channels_first) and [n, 1] uint8 labels, as Keras gives.

    Raises:
      FileNotFoundError: cifar-10-batches-py is not in the cache (unpack
        cifar-10-python.tar.gz there; tensorflux does not download)."""
    path = get_file("cifar-10-batches-py", origin=_ORIGIN)
    parts = [load_batch(os.path.join(path, f"data_batch_{i}")) for i in range(1, 6)]
    x_train = np.concatenate([x for x, _ in parts])
    y_train = np.concatenate([np.asarray(y, np.uint8) for _, y in parts])
    x_test, y_test = load_batch(os.path.join(path, "test_batch"))
    y_train = y_train.reshape(-1, 1)
    y_test = np.asarray(y_test, np.uint8).reshape(-1, 1)
    if K.image_data_format() == "channels_last":
        x_train, x_test = x_train.transpose(0, 2, 3, 1), x_test.transpose(0, 2, 3, 1)
    return (x_train, y_train), (x_test, y_test)
