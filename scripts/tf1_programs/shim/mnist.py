"""Stand-in for Hvass-Labs' mnist.py (which downloads MNIST): the same attributes, from
sklearn's digits as 28x28 images (shim/digits28.npz). random_batch uses a seeded RandomState."""
import os

import numpy as np

_DATA = os.environ.get("TF1_PROGRAMS_WORK", "/tmp/tf1progs")


def one_hot_encoded(class_numbers, num_classes=None):
    num_classes = num_classes or np.max(class_numbers) + 1
    return np.eye(num_classes, dtype=float)[class_numbers]


class MNIST:
    img_size = 28
    img_size_flat = 28 * 28
    img_shape = (28, 28)
    num_channels = 1
    img_shape_full = (28, 28, 1)
    num_classes = 10

    def __init__(self, data_dir="data/MNIST/"):
        d = np.load(os.path.join(_DATA, "digits28.npz"))
        x, y = d["images"].astype(np.float64), d["labels"].astype(int)
        self.num_train, self.num_val = 1400, 100
        self.num_test = len(x) - 1400
        # the test images are the held-out 397 with noise added, so a few models err on >= 9
        # of them (the notebooks plot 9 errors)
        noisy = x[1400:] + np.random.RandomState(5).normal(0.0, 0.35, x[1400:].shape)
        self.x_train, self.x_val, self.x_test = x[:1400], x[1400:1500], np.clip(noisy, 0.0, 1.0)
        self.y_train_cls, self.y_val_cls, self.y_test_cls = y[:1400], y[1400:1500], y[1400:]
        self.y_train = one_hot_encoded(self.y_train_cls, 10)
        self.y_val = one_hot_encoded(self.y_val_cls, 10)
        self.y_test = one_hot_encoded(self.y_test_cls, 10)
        self._rng = np.random.RandomState(7)

    def random_batch(self, batch_size=32):
        idx = self._rng.randint(low=0, high=self.num_train, size=batch_size)
        return self.x_train[idx], self.y_train[idx], self.y_train_cls[idx]
