"""`tf.contrib.learn.datasets.mnist` (also `tensorflow.examples.tutorials.mnist.input_data`):
TF1's MNIST reader. `read_data_sets(train_dir)` reads the four idx files (gzipped, TF1's
names) from `train_dir` and splits `validation_size` images off the training set;
`DataSet.next_batch` shuffles with NumPy's global generator as TF1 did (reseeded by each
DataSet from `seed` and the graph seed), so a program gets TF1's batches."""

from __future__ import annotations

import gzip

import numpy as np

from tensorflux.contrib.learn.datasets import base
from tensorflux.framework import dtypes, random_seed
from tensorflux.platform import gfile

DEFAULT_SOURCE_URL = "https://storage.googleapis.com/cvdf-datasets/mnist/"
TRAIN_IMAGES = "train-images-idx3-ubyte.gz"
TRAIN_LABELS = "train-labels-idx1-ubyte.gz"
TEST_IMAGES = "t10k-images-idx3-ubyte.gz"
TEST_LABELS = "t10k-labels-idx1-ubyte.gz"


def _read32(bytestream) -> np.uint32:
    return np.frombuffer(bytestream.read(4), dtype=np.dtype(np.uint32).newbyteorder(">"))[0]


def _read_idx(f, magic_wanted: int, what: str, ndims: int):
    """(*dims, uint8 data) of the gzipped idx file object `f` (TF1 prints "Extracting").

    Raises:
      ValueError: the magic number is not `magic_wanted`.
    """
    print("Extracting", f.name)
    with gzip.GzipFile(fileobj=f) as bytestream:
        magic = _read32(bytestream)
        if magic != magic_wanted:
            raise ValueError(f"Invalid magic number {magic} in MNIST {what} file: {f.name}")
        dims = [int(_read32(bytestream)) for _ in range(ndims)]
        data = np.frombuffer(bytestream.read(int(np.prod(dims))), dtype=np.uint8)
    return (*dims, data)


def extract_images(f):
    """A uint8 array [index, y, x, 1] from the gzipped idx3 file object `f`.

    Raises:
      ValueError: the magic number is not 2051.
    """
    num_images, rows, cols, data = _read_idx(f, 2051, "image", 3)
    return data.reshape(num_images, rows, cols, 1)


def dense_to_one_hot(labels_dense, num_classes):
    """Class labels [n] -> one-hot float64 rows [n, num_classes]."""
    num_labels = labels_dense.shape[0]
    one_hot = np.zeros((num_labels, num_classes))
    one_hot.flat[np.arange(num_labels) * num_classes + labels_dense.ravel()] = 1
    return one_hot


def extract_labels(f, one_hot=False, num_classes=10):
    """A uint8 array [index] (or one-hot [index, num_classes]) from the gzipped idx1 file `f`.

    Raises:
      ValueError: the magic number is not 2049.
    """
    _, labels = _read_idx(f, 2049, "label", 1)
    return dense_to_one_hot(labels, num_classes) if one_hot else labels


class DataSet:
    """Images and labels served in shuffled batches (TF1's mnist.DataSet).

    `dtype` float32 rescales the images to [0, 1]; `reshape` flattens [n, rows, cols, 1] to
    [n, rows * cols]. `fake_data` serves 10000 constant examples.

    Raises:
      TypeError: `dtype` is not uint8 or float32.
    """

    def __init__(self, images, labels, fake_data=False, one_hot=False, dtype=dtypes.float32,
                 reshape=True, seed=None):
        seed1, seed2 = random_seed.get_seed(seed)
        np.random.seed(seed1 if seed is None else seed2)  # TF1 reseeds the global generator
        dtype = dtypes.as_dtype(dtype).base_dtype
        if dtype not in (dtypes.uint8, dtypes.float32):
            raise TypeError(f"Invalid image dtype {dtype!r}, expected uint8 or float32")
        if fake_data:
            self._num_examples = 10000
            self.one_hot = one_hot
        else:
            assert images.shape[0] == labels.shape[0], (
                f"images.shape: {images.shape} labels.shape: {labels.shape}")
            self._num_examples = images.shape[0]
            if reshape:
                assert images.shape[3] == 1
                images = images.reshape(images.shape[0], images.shape[1] * images.shape[2])
            if dtype == dtypes.float32:
                images = np.multiply(images.astype(np.float32), 1.0 / 255.0)
        self._images, self._labels = images, labels
        self._epochs_completed = 0
        self._index_in_epoch = 0

    images = property(lambda self: self._images)
    labels = property(lambda self: self._labels)
    num_examples = property(lambda self: self._num_examples)
    epochs_completed = property(lambda self: self._epochs_completed)

    def _shuffle(self):
        perm = np.arange(self._num_examples)
        np.random.shuffle(perm)
        self._images, self._labels = self._images[perm], self._labels[perm]

    def next_batch(self, batch_size, fake_data=False, shuffle=True):
        """The next `batch_size` examples: (images, labels). The first epoch is shuffled
        before its first batch; a batch that crosses an epoch's end takes the rest of that
        epoch and the start of the next, shuffled anew."""
        if fake_data:
            image = [1] * 784
            label = [1] + [0] * 9 if self.one_hot else 0
            return [image] * batch_size, [label] * batch_size
        start = self._index_in_epoch
        if self._epochs_completed == 0 and start == 0 and shuffle:
            self._shuffle()
        if start + batch_size <= self._num_examples:
            self._index_in_epoch += batch_size
            return (self._images[start:self._index_in_epoch],
                    self._labels[start:self._index_in_epoch])
        self._epochs_completed += 1
        rest = self._num_examples - start
        images_rest, labels_rest = self._images[start:], self._labels[start:]
        if shuffle:
            self._shuffle()
        self._index_in_epoch = batch_size - rest
        end = self._index_in_epoch
        return (np.concatenate((images_rest, self._images[:end]), axis=0),
                np.concatenate((labels_rest, self._labels[:end]), axis=0))


def _read(train_dir, filename, source_url, extract, **kwargs):
    local_file = base.maybe_download(filename, train_dir, source_url + filename)
    with gfile.GFile(local_file, "rb") as f:
        return extract(f, **kwargs)


def read_data_sets(train_dir, fake_data=False, one_hot=False, dtype=dtypes.float32,
                   reshape=True, validation_size=5000, seed=None,
                   source_url=DEFAULT_SOURCE_URL):
    """MNIST's train/validation/test DataSets from the idx files in `train_dir`.

    Raises:
      FileNotFoundError: a file is missing (tensorflux does not download).
      ValueError: `validation_size` is not in [0, number of training images].
    """
    if fake_data:
        def fake():
            return DataSet([], [], fake_data=True, one_hot=one_hot, dtype=dtype, seed=seed)
        return base.Datasets(train=fake(), validation=fake(), test=fake())
    source_url = source_url or DEFAULT_SOURCE_URL
    train_images = _read(train_dir, TRAIN_IMAGES, source_url, extract_images)
    train_labels = _read(train_dir, TRAIN_LABELS, source_url, extract_labels, one_hot=one_hot)
    test_images = _read(train_dir, TEST_IMAGES, source_url, extract_images)
    test_labels = _read(train_dir, TEST_LABELS, source_url, extract_labels, one_hot=one_hot)
    if not 0 <= validation_size <= len(train_images):
        raise ValueError(f"Validation size should be between 0 and {len(train_images)}. "
                         f"Received: {validation_size}.")
    options = dict(dtype=dtype, reshape=reshape, seed=seed)
    train = DataSet(train_images[validation_size:], train_labels[validation_size:], **options)
    validation = DataSet(train_images[:validation_size], train_labels[:validation_size],
                         **options)
    test = DataSet(test_images, test_labels, **options)
    return base.Datasets(train=train, validation=validation, test=test)


def load_mnist(train_dir="MNIST-data"):
    """`read_data_sets(train_dir)` with the defaults."""
    return read_data_sets(train_dir)
