"""`tensorflow.examples.tutorials.mnist.input_data`: TF1's MNIST reader, the same functions
as `tf.contrib.learn.datasets.mnist` (tensorflux/contrib/learn/datasets/mnist.py)."""

from tensorflux.contrib.learn.datasets.base import maybe_download  # noqa: F401
from tensorflux.contrib.learn.datasets.mnist import (  # noqa: F401
    DataSet,
    dense_to_one_hot,
    extract_images,
    extract_labels,
    read_data_sets,
)
