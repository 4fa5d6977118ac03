"""The oracle venv has no SciPy: norm.ppf (the VAE example's latent grid) from the stdlib."""
from statistics import NormalDist

import numpy as np


class norm:
    @staticmethod
    def ppf(q):
        return np.vectorize(NormalDist().inv_cdf)(q)
