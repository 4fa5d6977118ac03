"""tf.train.FtrlOptimizer (McMahan et al., "Ad Click Prediction"), with L2 shrinkage."""

from __future__ import annotations

import numpy as np

from tensorflux.ops import training_ops
from tensorflux.train.optimizer import Optimizer


class FtrlOptimizer(Optimizer):
    def __init__(self, learning_rate, learning_rate_power=-0.5,
                 initial_accumulator_value=0.1, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, use_locking: bool = False, name: str = "Ftrl",
                 accum_name=None, linear_name=None, l2_shrinkage_regularization_strength=0.0,
                 beta=None):
        super().__init__(use_locking, name)
        if initial_accumulator_value < 0.0:
            raise ValueError(f"initial_accumulator_value {initial_accumulator_value} needs to "
                             "be positive or zero")
        if learning_rate_power > 0.0:
            raise ValueError(f"learning_rate_power {learning_rate_power} needs to be negative "
                             "or zero")
        for label, value in (("l1_regularization_strength", l1_regularization_strength),
                             ("l2_regularization_strength", l2_regularization_strength),
                             ("l2_shrinkage_regularization_strength",
                              l2_shrinkage_regularization_strength)):
            if value < 0.0:
                raise ValueError(f"{label} {value} needs to be positive or zero")
        self._lr, self._lr_power = learning_rate, learning_rate_power
        self._init_accum = initial_accumulator_value
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength
        self._l2_shrinkage = l2_shrinkage_regularization_strength
        self._beta = beta or 0.0
        self._accum_name, self._linear_name = accum_name, linear_name

    def _create_slots(self, var_list):
        for v in var_list:
            init = np.full(v.shape.as_list(), self._init_accum,
                           v.dtype.base_dtype.as_numpy_dtype)
            self._get_or_make_slot(v, init, "accum", self._accum_name or self._name)
            self._zeros_slot(v, "linear", self._linear_name or self._name)

    def _common(self, var):
        h = self._hyper
        l2 = self._l2 + self._beta / (2.0 * self._lr) if self._beta and \
            isinstance(self._lr, float) else self._l2
        return (h(self._lr, var, "learning_rate"), h(self._l1, var, "l1"), h(l2, var, "l2"))

    def _resource_apply_dense(self, grad, var):
        lr, l1, l2 = self._common(var)
        accum = self.get_slot(var, "accum").handle
        linear = self.get_slot(var, "linear").handle
        power = self._hyper(self._lr_power, var, "lr_power")
        if self._l2_shrinkage <= 0.0:
            return training_ops.resource_apply_ftrl(var.handle, accum, linear, grad, lr, l1,
                                                    l2, power, use_locking=self._use_locking)
        return training_ops.resource_apply_ftrl_v2(
            var.handle, accum, linear, grad, lr, l1, l2,
            self._hyper(self._l2_shrinkage, var, "l2_shrinkage"), power,
            use_locking=self._use_locking)

    def _resource_apply_sparse(self, grad, var, indices):
        lr, l1, l2 = self._common(var)
        accum = self.get_slot(var, "accum").handle
        linear = self.get_slot(var, "linear").handle
        power = self._hyper(self._lr_power, var, "lr_power")
        if self._l2_shrinkage <= 0.0:
            return training_ops.resource_sparse_apply_ftrl(
                var.handle, accum, linear, grad, indices, lr, l1, l2, power,
                use_locking=self._use_locking)
        return training_ops.resource_sparse_apply_ftrl_v2(
            var.handle, accum, linear, grad, indices, lr, l1, l2,
            self._hyper(self._l2_shrinkage, var, "l2_shrinkage"), power,
            use_locking=self._use_locking)
