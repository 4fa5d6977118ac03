"""Stand-in for tensorflow.examples.tutorials.mnist.input_data: sklearn digits as 28x28 MNIST.

Same interface (read_data_sets -> .train/.validation/.test with images, labels, num_examples,
next_batch); batches come from a private seeded RandomState so every run sees the same data.
"""
import os

import numpy as np

_DATA = os.environ.get("TF1_PROGRAMS_WORK", "/tmp/tf1progs")


class DataSet:
    def __init__(self, images, labels, seed):
        self._images, self._labels = images, labels
        self._rng = np.random.RandomState(seed)
        self._index = 0
        self._perm = self._rng.permutation(len(images))
        self.epochs_completed = 0

    images = property(lambda self: self._images)
    labels = property(lambda self: self._labels)
    num_examples = property(lambda self: len(self._images))

    def next_batch(self, batch_size, fake_data=False, shuffle=True):
        out = []
        while batch_size > 0:
            if self._index >= len(self._perm):
                self._perm = self._rng.permutation(len(self._images))
                self._index = 0
                self.epochs_completed += 1
            take = self._perm[self._index:self._index + batch_size]
            self._index += len(take)
            batch_size -= len(take)
            out.append(take)
        idx = np.concatenate(out)
        return self._images[idx], self._labels[idx]


class Datasets:
    def __init__(self, train, validation, test):
        self.train, self.validation, self.test = train, validation, test


def read_data_sets(train_dir=None, fake_data=False, one_hot=False, dtype=None, reshape=True,
                   validation_size=100, seed=None, source_url=None):
    d = np.load(os.path.join(_DATA, "digits28.npz"))
    images, labels = d["images"].astype(np.float32), d["labels"]
    if not reshape:
        images = images.reshape(-1, 28, 28, 1)
    if one_hot:
        labels = np.eye(10, dtype=np.float64)[labels]
    tr, va = 1400, 1500
    return Datasets(DataSet(images[:tr], labels[:tr], 1), DataSet(images[tr:va], labels[tr:va], 2),
                    DataSet(images[va:], labels[va:], 3))
