"""Learning-rate schedules as graph computations on the global step (TF1 `tf.train.*_decay`)."""

from __future__ import annotations

import math

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, comparison_ops, math_ops, random_ops, unary_ops


def _float_inputs(learning_rate, global_step, *others):
    if global_step is None:
        raise ValueError("global_step is required for the decay functions.")
    lr = convert_to_tensor(learning_rate, name="learning_rate")
    if not lr.dtype.is_floating:
        lr = math_ops.cast(lr, dtypes.float32)
    step = math_ops.cast(global_step, lr.dtype)
    return (lr, step) + tuple(math_ops.cast(o, lr.dtype) for o in others)


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate,
                      staircase: bool = False, name=None):
    """learning_rate * decay_rate ^ (global_step / decay_steps) (the exponent floored when
    `staircase`)."""
    with graph_lib.name_scope(name, "ExponentialDecay", []) as scope:
        lr, step, steps, rate = _float_inputs(learning_rate, global_step, decay_steps,
                                              decay_rate)
        p = step / steps
        if staircase:
            p = unary_ops.floor(p)
        return math_ops.multiply(lr, math_ops.pow(rate, p), name=scope)


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate,
                       staircase: bool = False, name=None):
    """learning_rate / (1 + decay_rate * global_step / decay_steps)."""
    with graph_lib.name_scope(name, "InverseTimeDecay", []) as scope:
        lr, step, steps, rate = _float_inputs(learning_rate, global_step, decay_steps,
                                              decay_rate)
        p = step / steps
        if staircase:
            p = unary_ops.floor(p)
        return math_ops.truediv(lr, 1.0 + rate * p, name=scope)


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate,
                      staircase: bool = False, name=None):
    """learning_rate * exp(-decay_rate * global_step / decay_steps)."""
    with graph_lib.name_scope(name, "NaturalExpDecay", []) as scope:
        lr, step, steps, rate = _float_inputs(learning_rate, global_step, decay_steps,
                                              decay_rate)
        p = step / steps
        if staircase:
            p = unary_ops.floor(p)
        return math_ops.multiply(lr, unary_ops.exp(-rate * p), name=scope)


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle: bool = False, name=None):
    """(lr - end) * (1 - step / decay_steps) ^ power + end, the step capped at decay_steps
    (or, with `cycle`, decay_steps stretched to the next multiple past the step)."""
    with graph_lib.name_scope(name, "PolynomialDecay", []) as scope:
        lr, step, steps, end, pw = _float_inputs(learning_rate, global_step, decay_steps,
                                                 end_learning_rate, power)
        if cycle:
            mult = math_ops.maximum(unary_ops.ceil(step / steps), 1.0)
            steps = steps * mult
        else:
            step = math_ops.minimum(step, steps)
        frac = 1.0 - step / steps
        return math_ops.add((lr - end) * math_ops.pow(frac, pw), end, name=scope)


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    """Cosine decay from learning_rate to alpha * learning_rate over decay_steps."""
    with graph_lib.name_scope(name, "CosineDecay", []) as scope:
        lr, step, steps, a = _float_inputs(learning_rate, global_step, decay_steps, alpha)
        step = math_ops.minimum(step, steps)
        cos = 0.5 * (1.0 + unary_ops.cos(math.pi * step / steps))
        return math_ops.multiply(lr, (1 - a) * cos + a, name=scope)


def piecewise_constant(x, boundaries, values, name=None):
    """values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <=
    boundaries[i], values[-1] after the last boundary.

    Raises:
      ValueError: len(values) != len(boundaries) + 1, or mixed value dtypes.
    """
    if len(values) != len(boundaries) + 1:
        raise ValueError("The length of boundaries should be 1 less than the length of "
                         "values")
    with graph_lib.name_scope(name, "PiecewiseConstant", []) as scope:
        x = convert_to_tensor(x)
        vals = [convert_to_tensor(v) for v in values]
        if any(v.dtype.base_dtype != vals[0].dtype.base_dtype for v in vals):
            raise ValueError(f"Values must have elements all with the same dtype "
                             f"({[v.dtype.name for v in vals]}).")
        bounds = [math_ops.cast(convert_to_tensor(b), x.dtype.base_dtype) for b in boundaries]
        result = vals[-1]
        for b, v in zip(reversed(bounds), reversed(vals[:-1]), strict=True):
            result = comparison_ops.select(x <= b, v, result)

        return array_ops.identity(result, name=scope)


piecewise_constant_decay = piecewise_constant


def linear_cosine_decay(learning_rate, global_step, decay_steps, num_periods=0.5, alpha=0.0,
                        beta=0.001, name=None):
    """lr * ((alpha + linear) * cosine + beta), linear falling from 1 to 0 over
    decay_steps and cosine making num_periods periods (`tf.train.linear_cosine_decay`)."""
    with graph_lib.name_scope(name, "LinearCosineDecay", []) as scope:
        lr, step, steps, periods, a, b = _float_inputs(learning_rate, global_step, decay_steps,
                                                       num_periods, alpha, beta)
        step = math_ops.minimum(step, steps)
        linear = (steps - step) / steps
        cos = 0.5 * (1.0 + unary_ops.cos(math.pi * 2.0 * periods * step / steps))
        return math_ops.multiply(lr, (a + linear) * cos + b, name=scope)


def noisy_linear_cosine_decay(learning_rate, global_step, decay_steps, initial_variance=1.0,
                              variance_decay=0.55, num_periods=0.5, alpha=0.0, beta=0.001,
                              name=None):
    """linear_cosine_decay with Gaussian noise of variance
    initial_variance / (1 + step)^variance_decay added to the linear part
    (`tf.train.noisy_linear_cosine_decay`)."""
    with graph_lib.name_scope(name, "NoisyLinearCosineDecay", []) as scope:
        lr, step, steps, var0, vdecay, periods, a, b = _float_inputs(
            learning_rate, global_step, decay_steps, initial_variance, variance_decay,
            num_periods, alpha, beta)
        step = math_ops.minimum(step, steps)
        linear = (steps - step) / steps
        variance = var0 / math_ops.pow(1.0 + step, vdecay)
        noisy = linear + random_ops.random_normal(array_ops.shape(linear),
                                                  stddev=unary_ops.sqrt(variance))
        cos = 0.5 * (1.0 + unary_ops.cos(math.pi * 2.0 * periods * step / steps))
        return math_ops.multiply(lr, (a + noisy) * cos + b, name=scope)


def cosine_decay_restarts(learning_rate, global_step, first_decay_steps, t_mul=2.0, m_mul=1.0,
                          alpha=0.0, name=None):
    """Cosine decay with warm restarts (SGDR): periods grow by t_mul, restart peaks by
    m_mul (`tf.train.cosine_decay_restarts`)."""
    with graph_lib.name_scope(name, "SGDRDecay", []) as scope:
        lr, step, first, t, m, a = _float_inputs(learning_rate, global_step,
                                                 first_decay_steps, t_mul, m_mul, alpha)
        fraction = step / first
        if float(t_mul) == 1.0:
            restart = unary_ops.floor(fraction)
            fraction = fraction - restart
        else:
            restart = unary_ops.floor(unary_ops.log(1.0 - fraction * (1.0 - t)) /
                                      unary_ops.log(t))
            done = (1.0 - math_ops.pow(t, restart)) / (1.0 - t)
            fraction = (fraction - done) / math_ops.pow(t, restart)
        m_fac = math_ops.pow(m, restart)
        cos = 0.5 * m_fac * (1.0 + unary_ops.cos(math.pi * fraction))
        return math_ops.multiply(lr, (1.0 - a) * cos + a, name=scope)
