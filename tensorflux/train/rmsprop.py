"""tf.train.RMSPropOptimizer, plain or centered, with momentum."""

from __future__ import annotations

import numpy as np

from tensorflux.ops import training_ops
from tensorflux.train.optimizer import Optimizer


class RMSPropOptimizer(Optimizer):
    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10,
                 use_locking: bool = False, centered: bool = False, name: str = "RMSProp"):
        super().__init__(use_locking, name)
        self._lr, self._decay, self._momentum = learning_rate, decay, momentum
        self._epsilon, self._centered = epsilon, centered

    def _create_slots(self, var_list):
        for v in var_list:
            # "rms" starts at one, as in TensorFlow (not zero), so early steps are not huge.
            ones = np.ones(v.shape.as_list(), v.dtype.base_dtype.as_numpy_dtype)
            self._get_or_make_slot(v, ones, "rms", self._name)
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    def _hypers(self, var):
        return (self._hyper(self._lr, var, "learning_rate"),
                self._hyper(self._decay, var, "decay"),
                self._hyper(self._momentum, var, "momentum"),
                self._hyper(self._epsilon, var, "epsilon"))

    def _slots_of(self, var):
        ms = self.get_slot(var, "rms").handle
        mom = self.get_slot(var, "momentum").handle
        if self._centered:
            return (self.get_slot(var, "mg").handle, ms, mom)
        return (ms, mom)

    def _resource_apply_dense(self, grad, var):
        fn = (training_ops.resource_apply_centered_rms_prop if self._centered
              else training_ops.resource_apply_rms_prop)
        return fn(var.handle, *self._slots_of(var), *self._hypers(var), grad,
                  use_locking=self._use_locking)

    def _resource_apply_sparse(self, grad, var, indices):
        fn = (training_ops.resource_sparse_apply_centered_rms_prop if self._centered
              else training_ops.resource_sparse_apply_rms_prop)
        return fn(var.handle, *self._slots_of(var), *self._hypers(var), grad, indices,
                  use_locking=self._use_locking)
