"""The proximal optimizers of tf.train (Duchi & Singer's FOBOS step with L1/L2 terms):

- ProximalGradientDescentOptimizer: prox = var - lr * grad, then shrink;
- ProximalAdagradOptimizer: accum += grad**2, the same step with lr / sqrt(accum);
- AdagradDAOptimizer (dual averaging, Xiao 2010): sums of gradients and of their squares,
  var recomputed from them and the global step at every update (for sparse linear models).

"Shrink" divides by (1 + rate * l2) and, with l1 > 0, moves toward zero by rate * l1
(clamping at zero). The kernels are in kernels/cpu/training_ops.py.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes
from tensorflux.ops import array_ops, math_ops, training_ops
from tensorflux.train.optimizer import Optimizer


class ProximalGradientDescentOptimizer(Optimizer):
    def __init__(self, learning_rate, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, use_locking: bool = False,
                 name: str = "ProximalGradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength

    def _common(self, var):
        return (self._hyper(self._learning_rate, var, "learning_rate"),
                self._hyper(self._l1, var, "l1_regularization_strength"),
                self._hyper(self._l2, var, "l2_regularization_strength"))

    def _resource_apply_dense(self, grad, var):
        return training_ops.resource_apply_proximal_gradient_descent(
            var.handle, *self._common(var), grad, use_locking=self._use_locking)

    def _resource_apply_sparse(self, grad, var, indices):
        return training_ops.resource_sparse_apply_proximal_gradient_descent(
            var.handle, *self._common(var), grad, indices, use_locking=self._use_locking)


class ProximalAdagradOptimizer(Optimizer):
    def __init__(self, learning_rate, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking: bool = False, name: str = "ProximalAdagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength

    def _create_slots(self, var_list):
        for v in var_list:
            init = np.full(v.shape.as_list(), self._initial_accumulator_value,
                           v.dtype.base_dtype.as_numpy_dtype)
            self._get_or_make_slot(v, init, "accumulator", self._name)

    def _common(self, var):
        return (var.handle, self.get_slot(var, "accumulator").handle,
                self._hyper(self._learning_rate, var, "learning_rate"),
                self._hyper(self._l1, var, "l1_regularization_strength"),
                self._hyper(self._l2, var, "l2_regularization_strength"))

    def _resource_apply_dense(self, grad, var):
        return training_ops.resource_apply_proximal_adagrad(
            *self._common(var), grad, use_locking=self._use_locking)

    def _resource_apply_sparse(self, grad, var, indices):
        return training_ops.resource_sparse_apply_proximal_adagrad(
            *self._common(var), grad, indices, use_locking=self._use_locking)


class AdagradDAOptimizer(Optimizer):
    """Adagrad dual averaging. `global_step` (a variable or tensor) is required: the
    update reads global_step + 1 (the step being taken)."""

    def __init__(self, learning_rate, global_step, initial_gradient_squared_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking: bool = False, name: str = "AdagradDA"):
        if initial_gradient_squared_accumulator_value <= 0.0:
            raise ValueError(f"initial_gradient_squared_accumulator_value must be positive: "
                             f"{initial_gradient_squared_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_value = initial_gradient_squared_accumulator_value
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength
        self._global_step = global_step
        self._step_on_worker = None

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "gradient_accumulator", self._name)
            init = np.full(v.shape.as_list(), self._initial_value,
                           v.dtype.base_dtype.as_numpy_dtype)
            self._get_or_make_slot(v, init, "gradient_squared_accumulator", self._name)

    def _prepare(self):
        self._step_on_worker = math_ops.cast(array_ops.identity(self._global_step) + 1,
                                             dtypes.int64)

    def _common(self, var):
        return dict(var=var.handle,
                    gradient_accumulator=self.get_slot(var, "gradient_accumulator").handle,
                    gradient_squared_accumulator=self.get_slot(
                        var, "gradient_squared_accumulator").handle,
                    lr=self._hyper(self._learning_rate, var, "learning_rate"),
                    l1=self._hyper(self._l1, var, "l1_regularization_strength"),
                    l2=self._hyper(self._l2, var, "l2_regularization_strength"),
                    global_step=self._step_on_worker, use_locking=self._use_locking)

    def _resource_apply_dense(self, grad, var):
        return training_ops.resource_apply_adagrad_da(grad=grad, **self._common(var))

    def _resource_apply_sparse(self, grad, var, indices):
        return training_ops.resource_sparse_apply_adagrad_da(grad=grad, indices=indices,
                                                             **self._common(var))
