"""tf.train.AdagradOptimizer: accum += grad**2; var -= lr * grad / sqrt(accum)."""

from __future__ import annotations

import numpy as np

from tensorflux.ops import training_ops
from tensorflux.train.optimizer import Optimizer


class AdagradOptimizer(Optimizer):
    def __init__(self, learning_rate, initial_accumulator_value: float = 0.1,
                 use_locking: bool = False, name: str = "Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, var_list):
        for v in var_list:
            init = np.full(v.shape.as_list(), self._initial_accumulator_value,
                           v.dtype.base_dtype.as_numpy_dtype)
            self._get_or_make_slot(v, init, "accumulator", self._name)

    def _resource_apply_dense(self, grad, var):
        return training_ops.resource_apply_adagrad(
            var.handle, self.get_slot(var, "accumulator").handle,
            self._hyper(self._learning_rate, var, "learning_rate"), grad,
            use_locking=self._use_locking)

    def _resource_apply_sparse(self, grad, var, indices):
        return training_ops.resource_sparse_apply_adagrad(
            var.handle, self.get_slot(var, "accumulator").handle,
            self._hyper(self._learning_rate, var, "learning_rate"), grad, indices,
            use_locking=self._use_locking)
