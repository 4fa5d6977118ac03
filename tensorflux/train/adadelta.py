"""tf.train.AdadeltaOptimizer (Zeiler 2012)."""

from __future__ import annotations

from tensorflux.ops import training_ops
from tensorflux.train.optimizer import Optimizer


class AdadeltaOptimizer(Optimizer):
    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-8, use_locking: bool = False,
                 name: str = "Adadelta"):
        super().__init__(use_locking, name)
        self._lr, self._rho, self._epsilon = learning_rate, rho, epsilon

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "accum", self._name)
            self._zeros_slot(v, "accum_update", self._name)

    def _args(self, var):
        return (var.handle, self.get_slot(var, "accum").handle,
                self.get_slot(var, "accum_update").handle,
                self._hyper(self._lr, var, "lr"), self._hyper(self._rho, var, "rho"),
                self._hyper(self._epsilon, var, "epsilon"))

    def _resource_apply_dense(self, grad, var):
        return training_ops.resource_apply_adadelta(*self._args(var), grad,
                                                    use_locking=self._use_locking)

    def _resource_apply_sparse(self, grad, var, indices):
        return training_ops.resource_sparse_apply_adadelta(*self._args(var), grad, indices,
                                                           use_locking=self._use_locking)
