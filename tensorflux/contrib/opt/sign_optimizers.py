"""AddSign and PowerSign (Bello et al., "Neural Optimizer Search with Reinforcement
Learning"; `tf.contrib.opt.AddSignOptimizer`, `PowerSignOptimizer`) and their sign-decay
schedules (`get_linear_decay_fn`, `get_cosine_decay_fn`, `get_restart_decay_fn`).

With m = beta m + (1 - beta) g and s = sign(g) sign(m):
  AddSign:   var -= lr (alpha + sign_decay s) g
  PowerSign: var -= lr exp(log(base) sign_decay s) g
A sparse gradient is applied densely (TF1 has no sparse kernel for either).
"""

from __future__ import annotations

import math

from tensorflux.framework import dtypes
from tensorflux.framework.indexed_slices import IndexedSlices
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, comparison_ops, math_ops, sequence_ops, unary_ops
from tensorflux.train.optimizer import Optimizer


class _SignOptimizer(Optimizer):
    def __init__(self, learning_rate, beta, sign_decay_fn, use_locking, name):
        super().__init__(use_locking, name)
        self._lr, self._beta = learning_rate, beta
        self._sign_decay_fn = sign_decay_fn
        self._sign_decay_t = None

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Optimizer.apply_gradients; the sign decay is `sign_decay_fn(global_step)`."""
        if self._sign_decay_fn is not None:
            self._sign_decay_t = convert_to_tensor(self._sign_decay_fn(global_step),
                                                   name="sign_decay")
        grads_and_vars = [(_dense(g), v) for g, v in grads_and_vars]
        return super().apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "m", self._name)

    def _sign_agreement(self, grad, var):
        """(lr, sign_decay, sign(g) sign(m_t)) once m is updated."""
        beta = self._hyper(self._beta, var, "beta")
        m = self.get_slot(var, "m")
        m_t = m.assign(beta * m.read_value() + (1 - beta) * grad,
                       use_locking=self._use_locking)
        decay = 1.0 if self._sign_decay_t is None else self._sign_decay_t
        sign_gm = unary_ops.sign(grad) * unary_ops.sign(m_t)
        return (self._hyper(self._lr, var, "learning_rate"),
                self._hyper(decay, var, "sign_decay"), sign_gm)

    def _resource_apply_sparse(self, grad, var, indices):
        raise AssertionError("unreachable: sparse gradients are densified first")


def _dense(grad):
    if isinstance(grad, IndexedSlices):
        return sequence_ops.unsorted_segment_sum(grad.values, grad.indices,
                                             grad.dense_shape[0]) \
            if grad.dense_shape is not None else convert_to_tensor(grad)
    return grad


class AddSignOptimizer(_SignOptimizer):
    """`tf.contrib.opt.AddSignOptimizer`: var -= lr (alpha + sign_decay sign(g) sign(m)) g."""

    def __init__(self, learning_rate=0.1, alpha=1.0, beta=0.9, sign_decay_fn=None,
                 use_locking=False, name="AddSignOptimizer"):
        super().__init__(learning_rate, beta, sign_decay_fn, use_locking, name)
        self._alpha = alpha

    def _resource_apply_dense(self, grad, var):
        lr, decay, sign_gm = self._sign_agreement(grad, var)
        alpha = self._hyper(self._alpha, var, "alpha")
        return var.assign_sub(lr * (alpha + decay * sign_gm) * grad,
                              use_locking=self._use_locking, read_value=False)


class PowerSignOptimizer(_SignOptimizer):
    """`tf.contrib.opt.PowerSignOptimizer`: var -= lr exp(log(base) sign_decay sign(g)
    sign(m)) g."""

    def __init__(self, learning_rate=0.1, base=math.e, beta=0.9, sign_decay_fn=None,
                 use_locking=False, name="PowerSignOptimizer"):
        super().__init__(learning_rate, beta, sign_decay_fn, use_locking, name)
        self._logbase = math.log(base)

    def _resource_apply_dense(self, grad, var):
        lr, decay, sign_gm = self._sign_agreement(grad, var)
        logbase = self._hyper(self._logbase, var, "logbase")
        return var.assign_sub(lr * unary_ops.exp(logbase * decay * sign_gm) * grad,
                              use_locking=self._use_locking, read_value=False)


def _completed_fraction(global_step, decay_steps):
    if global_step is None:
        raise ValueError("global_step is required for this sign decay.")
    step = math_ops.minimum(global_step, decay_steps)
    return math_ops.cast(step, dtypes.float32) / math_ops.cast(decay_steps, dtypes.float32)


def get_linear_decay_fn(decay_steps):
    """sign_decay = max(0, (decay_steps - min(step, decay_steps)) / decay_steps)."""

    def linear_decay_fn(global_step):
        if global_step is None:
            raise ValueError("global_step is required for linear_decay.")
        step = math_ops.minimum(global_step, decay_steps)
        remaining = math_ops.cast(decay_steps, dtypes.int32) - \
            math_ops.cast(step, dtypes.int32)
        decayed = math_ops.cast(remaining, dtypes.float32) / \
            math_ops.cast(decay_steps, dtypes.float32)
        return math_ops.maximum(0.0, decayed)

    return linear_decay_fn


def get_cosine_decay_fn(decay_steps, num_periods=0.5, zero_after=None):
    """sign_decay = 0.5 (1 + cos(pi 2 num_periods f)), f = min(step, decay_steps) /
    decay_steps; 0 once 2 num_periods f >= 2 zero_after when `zero_after` is given."""

    def cosine_decay_fn(global_step):
        fraction = 2.0 * num_periods * _completed_fraction(global_step, decay_steps)
        decayed = 0.5 * (1.0 + unary_ops.cos(math.pi * fraction))
        if zero_after is not None:
            decayed = comparison_ops.where(fraction >= 2 * zero_after,
                                           array_ops.zeros_like(decayed), decayed)
        return decayed

    return cosine_decay_fn


def get_restart_decay_fn(decay_steps, num_periods=1, zero_after=None):
    """sign_decay = 0.5 (1 + cos(pi frac(num_periods f))), restarting num_periods times;
    0 once frac(num_periods f) >= zero_after when `zero_after` is given."""

    def restart_decay_fn(global_step):
        fraction = math_ops.floormod(num_periods * _completed_fraction(global_step,
                                                                      decay_steps), 1.0)
        decayed = 0.5 * (1.0 + unary_ops.cos(math.pi * fraction))
        if zero_after is not None:
            decayed = comparison_ops.where(fraction >= zero_after,
                                           array_ops.zeros_like(decayed), decayed)
        return decayed

    return restart_decay_fn
