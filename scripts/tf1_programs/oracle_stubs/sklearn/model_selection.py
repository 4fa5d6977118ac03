"""The oracle venv has no scikit-learn: train_test_split drawing what scikit-learn's draws
(one permutation from NumPy's global RandomState when random_state is None; test rows first)."""
import math

import numpy as np


def train_test_split(*arrays, test_size=None, train_size=None, random_state=None, shuffle=True):
    n = len(arrays[0])
    n_test = math.ceil(test_size * n) if isinstance(test_size, float) else (test_size or
                                                                            math.ceil(0.25 * n))
    n_train = n - n_test if train_size is None else (
        math.floor(train_size * n) if isinstance(train_size, float) else train_size)
    rng = (np.random.mtrand._rand if random_state is None else
           np.random.RandomState(random_state))
    perm = rng.permutation(n)
    test, train = perm[:n_test], perm[n_test:n_test + n_train]
    return [part for a in arrays for part in (np.asarray(a)[train], np.asarray(a)[test])]
