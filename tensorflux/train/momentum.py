"""tf.train.MomentumOptimizer: accum = momentum * accum + grad; var -= lr * accum
(with Nesterov: var -= lr * (grad + momentum * accum))."""

from __future__ import annotations

from tensorflux.ops import training_ops
from tensorflux.train.optimizer import Optimizer


class MomentumOptimizer(Optimizer):
    def __init__(self, learning_rate, momentum, use_locking: bool = False,
                 name: str = "Momentum", use_nesterov: bool = False):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _resource_apply_dense(self, grad, var):
        return training_ops.resource_apply_momentum(
            var.handle, self.get_slot(var, "momentum").handle,
            self._hyper(self._learning_rate, var, "learning_rate"), grad,
            self._hyper(self._momentum, var, "momentum"), use_locking=self._use_locking,
            use_nesterov=self._use_nesterov)

    def _resource_apply_sparse(self, grad, var, indices):
        return training_ops.resource_sparse_apply_momentum(
            var.handle, self.get_slot(var, "momentum").handle,
            self._hyper(self._learning_rate, var, "learning_rate"), grad, indices,
            self._hyper(self._momentum, var, "momentum"), use_locking=self._use_locking,
            use_nesterov=self._use_nesterov)
