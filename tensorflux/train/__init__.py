"""`tf.train`: optimizers, learning-rate schedules, the global step, graph writing.

Everything here is built from graph ops (paper §4): no privileged runtime paths.
"""

from tensorflux.train.adadelta import AdadeltaOptimizer
from tensorflux.train.adagrad import AdagradOptimizer
from tensorflux.train.adam import AdamOptimizer
from tensorflux.train.ftrl import FtrlOptimizer
from tensorflux.train.global_step import (
    create_global_step,
    get_global_step,
    get_or_create_global_step,
    global_step,
)
from tensorflux.train.gradient_descent import GradientDescentOptimizer
from tensorflux.train.learning_rate_decay import (
    cosine_decay,
    exponential_decay,
    inverse_time_decay,
    natural_exp_decay,
    piecewise_constant,
    polynomial_decay,
)
from tensorflux.train.momentum import MomentumOptimizer
from tensorflux.train.optimizer import Optimizer
from tensorflux.train.rmsprop import RMSPropOptimizer
from tensorflux.train.training_util import write_graph

__all__ = [
    "AdadeltaOptimizer", "AdagradOptimizer", "AdamOptimizer", "FtrlOptimizer",
    "GradientDescentOptimizer", "MomentumOptimizer", "Optimizer", "RMSPropOptimizer",
    "cosine_decay", "create_global_step", "exponential_decay", "get_global_step",
    "get_or_create_global_step", "global_step", "inverse_time_decay", "natural_exp_decay",
    "piecewise_constant", "polynomial_decay", "write_graph",
]
