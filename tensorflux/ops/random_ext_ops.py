"""Gamma and Poisson sampling: RandomGamma (with RandomGammaGrad, the derivative of a
sample in alpha for implicit reparameterization gradients) and RandomPoissonV2, with the
TF1 wrappers `tf.random.gamma` / `tf.random_gamma` and `tf.random.poisson` /
`tf.random_poisson`. Seeds work as for the ops of random_ops.py. Kernels:
tensorflux/kernels/cpu/random_ext_ops.py.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import common_shapes, dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.random_seed import get_seed
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, joining_ops, reduction_ops
from tensorflux.ops.math_ops import add, maximum, multiply, truediv
from tensorflux.ops.random_ops import _shape_tensor
from tensorflux.ops.sequence_ops import range as _range

__all__ = ["random_gamma", "random_poisson"]

_SEEDS = ["seed: int = 0", "seed2: int = 0"]


def _sample_shape(op):
    """The requested shape followed by the parameters' shape."""
    sample = common_shapes.constant_value_as_shape(op.inputs[0])
    return [sample.concatenate(op.inputs[1].shape)]


define_op("RandomGamma", inputs=["shape: S", "alpha: T"], outputs=["output: T"],
          attrs=_SEEDS + ["S: {int32, int64}", "T: {half, float, double}"],
          shape_fn=_sample_shape, stateful=True)
define_op("RandomGammaGrad", inputs=["alpha: T", "sample: T"], outputs=["output: T"],
          attrs=["T: {float, double}"], shape_fn=common_shapes.broadcast_binary,
          broadcasts=True)
define_op("RandomPoissonV2", inputs=["shape: S", "rate: R"], outputs=["output: dtype"],
          attrs=_SEEDS + ["S: {int32, int64}",
                          "R: {half, float, double, int32, int64} = DT_DOUBLE",
                          "dtype: {half, float, double, int32, int64} = DT_INT64"],
          shape_fn=_sample_shape, stateful=True)
not_differentiable("RandomGammaGrad", "RandomPoissonV2")


def random_gamma(shape, alpha, beta=None, dtype=dtypes.float32, seed=None, name=None):
    """Samples of Gamma(alpha, rate beta), shaped shape + broadcast(alpha, beta).shape
    (`tf.random.gamma`); differentiable in alpha and beta."""
    with graph_lib.name_scope(name, "random_gamma", [shape, alpha, beta]):
        dtype = dtypes.as_dtype(dtype)
        shape_t = _shape_tensor(shape)
        alpha = convert_to_tensor(alpha, dtype=dtype, name="alpha")
        beta = convert_to_tensor(1 if beta is None else beta, dtype=dtype, name="beta")
        alpha_b = add(alpha, array_ops.zeros_like(beta))
        seed1, seed2 = get_seed(seed)
        sample = apply_op("RandomGamma", shape=shape_t, alpha=alpha_b, seed=seed1 or 0,
                          seed2=seed2 or 0)
        tiny = convert_to_tensor(np.finfo(dtype.as_numpy_dtype).tiny, dtype=dtype)
        return maximum(tiny, truediv(sample, beta))


@gradient("RandomGamma")
def _random_gamma_grad(op, grad):
    """d sample / d alpha = -(dF/dalpha) / (dF/dx) for the Gamma CDF F (RandomGammaGrad),
    summed over the sample dimensions."""
    shape, alpha = op.inputs
    sample = op.outputs[0]
    n = array_ops.shape(shape)[0]
    ones = array_ops.ones(array_ops.reshape(n, [1]), dtypes.int32)
    broadcastable = array_ops.reshape(alpha, joining_ops.concat(
        [ones, array_ops.shape(alpha)], 0))
    partial = apply_op("RandomGammaGrad", alpha=broadcastable, sample=sample)
    return [None, reduction_ops.reduce_sum(multiply(grad, partial), _range(0, n))]


def random_poisson(lam, shape, dtype=dtypes.float32, seed=None, name=None):
    """Samples of Poisson(lam), shaped shape + lam.shape (`tf.random.poisson`)."""
    with graph_lib.name_scope(name, "random_poisson", [lam, shape]):
        shape_t = _shape_tensor(shape)
        lam = convert_to_tensor(lam, name="lam")
        if lam.dtype.base_dtype not in (dtypes.float16, dtypes.float32, dtypes.float64,
                                        dtypes.int32, dtypes.int64):
            lam = convert_to_tensor(lam, dtype=dtypes.float32)
        seed1, seed2 = get_seed(seed)
        return apply_op("RandomPoissonV2", shape=shape_t, rate=lam, seed=seed1 or 0,
                        seed2=seed2 or 0, dtype=dtypes.as_dtype(dtype))


