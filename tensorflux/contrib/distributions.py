"""`tf.contrib.distributions`: in TF1 a superset of `tf.distributions`; here the same
classes (Normal, Categorical, Bernoulli, Uniform, kl_divergence, ...)."""

from tensorflux.distributions import *  # noqa: F401,F403
from tensorflux.distributions import __all__  # noqa: F401
