"""`tensorflow.contrib.learn.python.learn`: `datasets`, and `learn_runner` and
`Experiment` under the paths TF 1.x programs import them from."""

from tensorflux.contrib.learn.experiment import Experiment  # noqa: F401
