"""`tensorflow.contrib.learn.python.learn.learn_runner` (the import path of TF 1.x
programs): `run`, in tensorflux/contrib/learn/experiment.py."""

from tensorflux.contrib.learn.experiment import run

__all__ = ["run"]
