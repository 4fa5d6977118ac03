"""`tf.contrib.learn.datasets`: TF1's example data sets read from local files (`mnist`,
`base`'s CSV readers and iris), and `load_dataset(name)`."""

from __future__ import annotations

from tensorflux.contrib.learn.datasets import base, mnist  # noqa: F401
from tensorflux.contrib.learn.datasets.base import (  # noqa: F401
    load_boston,
    load_csv_with_header,
    load_csv_without_header,
    load_iris,
)

DATASETS = {"iris": base.load_iris, "boston": base.load_boston, "mnist": mnist.load_mnist}


def load_dataset(name, size="small", test_with_fake_data=False):
    """The data set called `name` ("iris", "boston", "mnist"), read from local files.

    Raises:
      ValueError: an unknown name.
      NotImplementedError: "dbpedia" (its text data set is not provided by tensorflux).
    """
    if name == "dbpedia":
        raise NotImplementedError("tensorflux has no dbpedia reader")
    if name not in DATASETS:
        raise ValueError(f"Name of dataset is not found: {name}")
    return DATASETS[name]()
