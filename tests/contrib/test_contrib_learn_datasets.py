"""tf.contrib.learn.datasets: MNIST's idx reader and batching as TF1 did it, the CSV readers,
and the same module under tensorflow.examples.tutorials.mnist.input_data."""

import gzip
import os
import struct

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.contrib.learn.datasets import base, mnist


def _write_idx(path, magic, array):
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">I", magic))
        for n in array.shape:
            f.write(struct.pack(">I", n))
        f.write(array.astype(np.uint8).tobytes())


@pytest.fixture
def mnist_dir(tmp_path):
    rng = np.random.RandomState(0)
    train = rng.randint(0, 256, (30, 4, 5)).astype(np.uint8)
    test = rng.randint(0, 256, (7, 4, 5)).astype(np.uint8)
    _write_idx(tmp_path / mnist.TRAIN_IMAGES, 2051, train)
    _write_idx(tmp_path / mnist.TRAIN_LABELS, 2049, np.arange(30) % 10)
    _write_idx(tmp_path / mnist.TEST_IMAGES, 2051, test)
    _write_idx(tmp_path / mnist.TEST_LABELS, 2049, np.arange(7) % 10)
    return tmp_path, train, test


def test_read_data_sets_splits_scales_and_reshapes(mnist_dir):
    path, train, test = mnist_dir
    ds = mnist.read_data_sets(str(path), one_hot=True, validation_size=10)
    assert ds.train.num_examples == 20 and ds.validation.num_examples == 10
    assert ds.test.images.shape == (7, 20) and ds.test.images.dtype == np.float32
    np.testing.assert_allclose(ds.validation.images, train[:10].reshape(10, 20) / 255.0,
                               rtol=1e-6)
    assert ds.train.labels.shape == (20, 10) and ds.train.labels.dtype == np.float64
    np.testing.assert_array_equal(ds.train.labels.argmax(1), np.arange(10, 30) % 10)
    raw = mnist.read_data_sets(str(path), dtype=tf.uint8, reshape=False, validation_size=0)
    np.testing.assert_array_equal(raw.test.images, test[..., None])
    assert raw.train.labels.dtype == np.uint8


def test_next_batch_follows_tf1s_order(mnist_dir):
    path, _, _ = mnist_dir
    ds = mnist.read_data_sets(str(path), validation_size=0, seed=3)
    images = ds.train.images.copy()
    # TF1: the DataSet reseeds NumPy's generator with its seed (graph seed unset: op seed as
    # seed2); the first batch shuffles, a batch crossing the epoch end shuffles again
    rng = np.random.RandomState(3)  # the global generator's stream after seed(3)
    perm0 = np.arange(30)
    rng.shuffle(perm0)
    got = [ds.train.next_batch(12)[0] for _ in range(2)]
    np.testing.assert_array_equal(got[0], images[perm0[:12]])
    np.testing.assert_array_equal(got[1], images[perm0[12:24]])
    perm1 = np.arange(30)
    rng.shuffle(perm1)
    crossing = ds.train.next_batch(12)[0]
    np.testing.assert_array_equal(crossing[:6], images[perm0[24:]])
    np.testing.assert_array_equal(crossing[6:], images[perm0][perm1[:6]])
    assert ds.train.epochs_completed == 1


def test_errors(mnist_dir, tmp_path_factory):
    path, _, _ = mnist_dir
    with pytest.raises(ValueError, match="Validation size should be between 0 and 30"):
        mnist.read_data_sets(str(path), validation_size=31)
    empty = tmp_path_factory.mktemp("empty")
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte.gz"):
        mnist.read_data_sets(str(empty))
    with open(path / mnist.TRAIN_LABELS, "rb") as f, \
            pytest.raises(ValueError, match="Invalid magic number 2049 in MNIST image file"):
        mnist.extract_images(f)
    with pytest.raises(TypeError, match="Invalid image dtype"):
        mnist.DataSet(np.zeros((1, 2, 2, 1)), np.zeros(1), dtype=tf.int32)


def test_fake_data_and_one_hot():
    ds = mnist.read_data_sets("unused", fake_data=True, one_hot=True)
    images, labels = ds.train.next_batch(3, fake_data=True)
    assert len(images) == 3 and len(images[0]) == 784 and labels[0] == [1] + [0] * 9
    np.testing.assert_array_equal(mnist.dense_to_one_hot(np.array([2, 0]), 3),
                                  [[0, 0, 1], [1, 0, 0]])


def test_long_paths_are_one_module():
    from tensorflux.contrib.learn.python.learn.datasets import mnist as long_mnist
    from tensorflux.examples.tutorials.mnist import input_data

    assert long_mnist is mnist
    assert input_data.read_data_sets is mnist.read_data_sets
    import tensorflux.contrib.learn.python.learn.datasets.base as long_base
    assert long_base is base
    assert tf.contrib.learn.datasets.mnist is mnist


def test_csv_readers(tmp_path):
    with_header = tmp_path / "h.csv"
    with_header.write_text("3,2,a,b\n1.5,2,0\n3,4.5,1\n5,6,2\n")
    ds = base.load_csv_with_header(str(with_header), np.int32, np.float32)
    np.testing.assert_array_equal(ds.data, [[1.5, 2], [3, 4.5], [5, 6]])
    np.testing.assert_array_equal(ds.target, [0, 1, 2])
    assert ds.data.dtype == np.float32 and ds.target.dtype == np.int32
    plain = tmp_path / "p.csv"
    plain.write_text("1,2,7\n3,4,8\n")
    ds = base.load_csv_without_header(str(plain), np.int64, np.float64, target_column=0)
    np.testing.assert_array_equal(ds.data, [[2, 7], [4, 8]])
    np.testing.assert_array_equal(ds.target, [1, 3])
    with pytest.raises(ValueError, match="Name of dataset is not found: nope"):
        tf.contrib.learn.datasets.load_dataset("nope")
    if os.environ.get("NO_SKLEARN") is None:
        pytest.importorskip("sklearn")
        iris = base.load_iris()
        assert iris.data.shape == (150, 4) and set(iris.target) == {0, 1, 2}
