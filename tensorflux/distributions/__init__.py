"""`tf.distributions`: TF1's probability distributions (Normal, Categorical, Bernoulli,
Uniform), the Distribution base class and KL divergences between them. Reinforcement-
learning programs build their policies from these (a Gaussian policy's `sample`,
`log_prob`, `entropy`; PPO's `prob` ratio and `kl_divergence`)."""

from tensorflux.distributions.bernoulli import Bernoulli
from tensorflux.distributions.categorical import Categorical
from tensorflux.distributions.distribution import (
    FULLY_REPARAMETERIZED,
    NOT_REPARAMETERIZED,
    Distribution,
    ReparameterizationType,
)
from tensorflux.distributions.kullback_leibler import RegisterKL, kl_divergence
from tensorflux.distributions.normal import Normal
from tensorflux.distributions.uniform import Uniform

__all__ = ["Bernoulli", "Categorical", "Distribution", "FULLY_REPARAMETERIZED",
           "NOT_REPARAMETERIZED", "Normal", "RegisterKL", "ReparameterizationType",
           "Uniform", "kl_divergence"]
