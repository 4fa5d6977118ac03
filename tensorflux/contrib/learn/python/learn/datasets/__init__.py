"""`tensorflow.contrib.learn.python.learn.datasets`: the same modules as
`tensorflux.contrib.learn.datasets` under TF1's long path (`from tensorflow.contrib.learn.
python.learn.datasets.mnist import read_data_sets`): its `base` and `mnist` modules are
registered under this package's name too, so both paths import one module object."""

import sys

from tensorflux.contrib.learn.datasets import *  # noqa: F401,F403
from tensorflux.contrib.learn.datasets import DATASETS, base, load_dataset, mnist  # noqa: F401

sys.modules[f"{__name__}.base"] = base
sys.modules[f"{__name__}.mnist"] = mnist
