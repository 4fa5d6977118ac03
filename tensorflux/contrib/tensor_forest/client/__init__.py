"""`tensorflow.contrib.tensor_forest.client`: the forest as an Estimator (random_forest)."""

from tensorflux.contrib.tensor_forest.client import random_forest  # noqa: F401
