"""tf.train.GradientDescentOptimizer: var -= learning_rate * grad."""

from __future__ import annotations

from tensorflux.ops import state_ops, training_ops
from tensorflux.train.optimizer import Optimizer


class GradientDescentOptimizer(Optimizer):
    def __init__(self, learning_rate, use_locking: bool = False,
                 name: str = "GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _resource_apply_dense(self, grad, var):
        return training_ops.resource_apply_gradient_descent(
            var.handle, self._hyper(self._learning_rate, var, "learning_rate"), grad,
            use_locking=self._use_locking)

    def _resource_apply_sparse_duplicate_indices(self, grad, var, indices):
        # The scatter handles repeated indices itself: no deduplication needed. TF adds
        # -grad * lr; subtracting grad * lr gives the same bits (negation is exact) without
        # the Neg node.
        lr = self._hyper(self._learning_rate, var, "learning_rate")
        return state_ops.resource_scatter_sub(var.handle, indices, grad * lr)
