"""`tf.distributions`: TF1's probability distributions (Normal, Categorical, Bernoulli,
Uniform, Exponential, Gamma, Beta, Laplace, StudentT, Dirichlet, Multinomial,
DirichletMultinomial), the Distribution base class and the KL divergences TF1 registers
between them. Reinforcement-learning programs build their policies from these (a Gaussian
policy's `sample`, `log_prob`, `entropy`; PPO's `prob` ratio and `kl_divergence`)."""

from tensorflux.distributions.bernoulli import Bernoulli
from tensorflux.distributions.beta import Beta
from tensorflux.distributions.categorical import Categorical
from tensorflux.distributions.dirichlet import Dirichlet
from tensorflux.distributions.distribution import (
    FULLY_REPARAMETERIZED,
    NOT_REPARAMETERIZED,
    Distribution,
    ReparameterizationType,
)
from tensorflux.distributions.gamma import Exponential, Gamma
from tensorflux.distributions.kullback_leibler import RegisterKL, kl_divergence
from tensorflux.distributions.laplace import Laplace
from tensorflux.distributions.multinomial import DirichletMultinomial, Multinomial
from tensorflux.distributions.normal import Normal
from tensorflux.distributions.student_t import StudentT
from tensorflux.distributions.uniform import Uniform

__all__ = ["Bernoulli", "Beta", "Categorical", "Dirichlet", "DirichletMultinomial",
           "Distribution", "Exponential", "FULLY_REPARAMETERIZED", "Gamma", "Laplace",
           "Multinomial", "NOT_REPARAMETERIZED", "Normal", "RegisterKL",
           "ReparameterizationType", "StudentT", "Uniform", "kl_divergence"]
