"""Initializers: callables `(shape, dtype=None, partition_info=None) -> Tensor` that
`tf.get_variable` uses to make a variable's initial value (TF1's `init_ops`).

The classes are TF1's; the lower-case `*_initializer` names and `tf.initializers.*` are the
aliases TF1 exports. Random initializers build random ops (tensorflux/ops/random_ops.py), so
they follow the graph/op seed rules of `tf.set_random_seed`.
"""

from __future__ import annotations

import math
import types

import numpy as np

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Tensor
from tensorflux.ops import array_ops, constant_op, math_ops, matrix_ops, random_ops
from tensorflux.variables import variables

# The TF1 public names of this module.
__all__ = ["zeros_initializer", "ones_initializer", "constant_initializer",
           "random_uniform_initializer", "random_normal_initializer",
           "truncated_normal_initializer", "uniform_unit_scaling_initializer",
           "variance_scaling_initializer", "glorot_uniform_initializer",
           "glorot_normal_initializer", "orthogonal_initializer", "initializers"]

_FILL_THRESHOLD = 1000  # TF makes zeros/ones of this many elements or more with Fill


def _assert_float_dtype(dtype) -> dtypes.DType:
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"Argument `dtype` is expected to be floating point. Received: "
                         f"{dtype}.")
    return dtype


def _filled(shape, dtype: dtypes.DType, value, scope: str) -> Tensor:
    """A tensor of `shape` full of `value`: a Const ("zeros"), or Fill when it is large."""
    with graph_lib.name_scope(None, scope, [shape]) as name:
        if not isinstance(shape, Tensor):
            static = tensor_shape.as_shape(shape)
            if static.is_fully_defined():
                dims = static.as_list()
                if int(np.prod(dims, dtype=np.int64)) < _FILL_THRESHOLD or _fill_fn() is None:
                    return constant_op.constant(np.full(dims, value, dtype.as_numpy_dtype),
                                                dtype=dtype, name=name)
        fill = _fill_fn()
        if fill is None:
            raise NotImplementedError("Initializing a variable of unknown shape needs tf.fill, "
                                      "which tensorflux does not define yet")
        shape_t = random_ops._shape_tensor(shape)
        return fill(shape_t, constant_op.constant(value, dtype=dtype), name=name)


def _fill_fn():
    return getattr(array_ops, "fill", None)


class Initializer:
    """The base class of initializers: `init(shape, dtype=None, partition_info=None)`."""

    def __call__(self, shape, dtype=None, partition_info=None):
        raise NotImplementedError

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)


class Zeros(Initializer):
    """Initializes to 0 (`tf.zeros_initializer`)."""

    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = dtypes.as_dtype(dtype or self.dtype)
        zero = b"" if dtype is dtypes.string else 0
        return _filled(shape, dtype, zero, "zeros")

    def get_config(self) -> dict:
        return {"dtype": self.dtype.name}


class Ones(Initializer):
    """Initializes to 1 (`tf.ones_initializer`)."""

    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return _filled(shape, dtypes.as_dtype(dtype or self.dtype), 1, "ones")

    def get_config(self) -> dict:
        return {"dtype": self.dtype.name}


class Constant(Initializer):
    """Initializes to `value` (`tf.constant_initializer`).

    A scalar fills the shape; a list or array shorter than the shape is padded with its last
    element, as TF1's `tf.constant` does; a longer one is a ValueError.
    """

    def __init__(self, value=0, dtype=dtypes.float32, verify_shape=False):
        if not (np.isscalar(value) or isinstance(value, (list, tuple, np.ndarray))):
            raise TypeError(f"Invalid type for initial value: {type(value)} (expected Python "
                            "scalar, list or tuple of values, or numpy.ndarray).")
        self.value = value
        self.dtype = dtypes.as_dtype(dtype)
        self._verify_shape = verify_shape

    def __call__(self, shape, dtype=None, partition_info=None, verify_shape=None):
        dtype = dtypes.as_dtype(dtype or self.dtype)
        verify = self._verify_shape if verify_shape is None else verify_shape
        dims = tensor_shape.as_shape(shape).as_list()
        arr = np.asarray(self.value, dtype=dtype.as_numpy_dtype)
        if verify and list(arr.shape) != dims:
            raise TypeError(f"Expected Tensor's shape: {tuple(dims)}, got {arr.shape}.")
        n = int(np.prod(dims, dtype=np.int64))
        if arr.size != 1 and arr.size != n:
            flat = arr.reshape(-1)
            if flat.size > n:
                raise ValueError(f"Too many elements provided. Takes at most {n}, but got "
                                 f"{flat.size}.")
            if flat.size == 0:
                raise ValueError("The initial value is empty and cannot fill a shape with "
                                 f"{n} elements.")
            arr = np.concatenate([flat, np.repeat(flat[-1:], n - flat.size)])
        return constant_op.constant(arr, dtype=dtype, shape=dims)

    def get_config(self) -> dict:
        return {"value": self.value, "dtype": self.dtype.name,
                "verify_shape": self._verify_shape}


class RandomUniform(Initializer):
    """Uniform values in [minval, maxval) (`tf.random_uniform_initializer`)."""

    def __init__(self, minval=0, maxval=None, seed=None, dtype=dtypes.float32):
        self.minval, self.maxval, self.seed = minval, maxval, seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_uniform(shape, self.minval, self.maxval,
                                         dtypes.as_dtype(dtype or self.dtype), seed=self.seed)

    def get_config(self) -> dict:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed,
                "dtype": self.dtype.name}


class RandomNormal(Initializer):
    """Normal values (`tf.random_normal_initializer`)."""

    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=dtypes.float32):
        self.mean, self.stddev, self.seed = mean, stddev, seed
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_normal(shape, self.mean, self.stddev,
                                        dtypes.as_dtype(dtype or self.dtype), seed=self.seed)

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed,
                "dtype": self.dtype.name}


class TruncatedNormal(RandomNormal):
    """Normal values redrawn beyond two standard deviations
    (`tf.truncated_normal_initializer`)."""

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.truncated_normal(shape, self.mean, self.stddev,
                                           dtypes.as_dtype(dtype or self.dtype),
                                           seed=self.seed)


class UniformUnitScaling(Initializer):
    """Uniform values that keep the scale of inputs (deprecated TF1
    `tf.uniform_unit_scaling_initializer`): limit sqrt(3 / input_size) * factor."""

    def __init__(self, factor=1.0, seed=None, dtype=dtypes.float32):
        self.factor, self.seed = factor, seed
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        scale_shape = partition_info.full_shape if partition_info is not None else shape
        input_size = 1.0
        for dim in list(scale_shape)[:-1]:
            input_size *= float(dim)
        limit = math.sqrt(3 / max(input_size, 1.0)) * self.factor
        return random_ops.random_uniform(shape, -limit, limit,
                                         dtypes.as_dtype(dtype or self.dtype), seed=self.seed)

    def get_config(self) -> dict:
        return {"factor": self.factor, "seed": self.seed, "dtype": self.dtype.name}


def _compute_fans(shape) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight shape: dense [in, out], conv [..., in, out]."""
    shape = [int(d) for d in shape]
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = int(np.prod(shape[:-2]))
    return shape[-2] * receptive, shape[-1] * receptive


# The standard deviation of a standard normal truncated to [-2, 2]
# (scipy.stats.truncnorm.std(a=-2, b=2)): dividing by it gives truncated samples the
# variance asked for.
_TRUNCATED_STDDEV = 0.87962566103423978
_MODES = ("fan_in", "fan_out", "fan_avg")
_DISTRIBUTIONS = ("normal", "uniform", "truncated_normal", "untruncated_normal")


class VarianceScaling(Initializer):
    """Values of variance `scale / n`, n the fan chosen by `mode`
    (`tf.variance_scaling_initializer`).

    Args:
      scale: a positive float.
      mode: "fan_in", "fan_out" or "fan_avg".
      distribution: "truncated_normal" (or its alias "normal"), "untruncated_normal" or
        "uniform" (limit sqrt(3 * scale / n)).
      seed: the op-level seed.
      dtype: a floating type.

    Raises:
      ValueError: a bad scale, mode, distribution or dtype.
    """

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 dtype=dtypes.float32):
        if scale <= 0.0:
            raise ValueError(f"Argument `scale` must be a positive float. Received: {scale}")
        if mode not in _MODES:
            raise ValueError(f"Argument `mode` should be one of {_MODES}. Received: {mode}")
        distribution = distribution.lower()
        if distribution not in _DISTRIBUTIONS:
            raise ValueError("Argument `distribution` should be one of ('normal', uniform', "
                             "'truncated_normal', 'untruncated_normal'). Received: "
                             f"{distribution}")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = dtypes.as_dtype(dtype or self.dtype)
        scale_shape = partition_info.full_shape if partition_info is not None else shape
        fan_in, fan_out = _compute_fans(scale_shape)
        if self.mode == "fan_in":
            scale = self.scale / max(1.0, fan_in)
        elif self.mode == "fan_out":
            scale = self.scale / max(1.0, fan_out)
        else:
            scale = self.scale / max(1.0, (fan_in + fan_out) / 2.0)
        if self.distribution in ("normal", "truncated_normal"):
            stddev = math.sqrt(scale) / _TRUNCATED_STDDEV
            return random_ops.truncated_normal(shape, 0.0, stddev, dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_ops.random_normal(shape, 0.0, math.sqrt(scale), dtype,
                                            seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(shape, -limit, limit, dtype, seed=self.seed)

    def get_config(self) -> dict:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed, "dtype": self.dtype.name}


class GlorotUniform(VarianceScaling):
    """Glorot (Xavier) uniform: limit sqrt(6 / (fan_in + fan_out))
    (`tf.glorot_uniform_initializer`, TF1's default for `tf.get_variable`)."""

    def __init__(self, seed=None, dtype=dtypes.float32):
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)

    def get_config(self) -> dict:
        return {"seed": self.seed, "dtype": self.dtype.name}


class GlorotNormal(VarianceScaling):
    """Glorot (Xavier) truncated normal: stddev sqrt(2 / (fan_in + fan_out))."""

    def __init__(self, seed=None, dtype=dtypes.float32):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)

    def get_config(self) -> dict:
        return {"seed": self.seed, "dtype": self.dtype.name}


class Orthogonal(Initializer):
    """An orthogonal matrix times `gain` (`tf.orthogonal_initializer`): the Q of the QR
    decomposition (R's diagonal made positive) of a normal [rows, cols] matrix, rows being
    the product of all dimensions but the last; for rows < cols, of its transpose.

    Q is computed as A L^-T with L L^T = A^T A (Cholesky), in float64: the same Q as
    Householder QR with a positive R diagonal, from ops tensorflux has.

    Raises:
      ValueError: a shape of rank below 2.
    """

    def __init__(self, gain=1.0, seed=None, dtype=dtypes.float32):
        self.gain, self.seed = gain, seed
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = _assert_float_dtype(dtype or self.dtype)
        shape = list(shape)
        if len(shape) < 2:
            raise ValueError("The tensor to initialize must be at least two-dimensional")
        rows, cols = int(np.prod(shape[:-1])), shape[-1]
        flat = (cols, rows) if rows < cols else (rows, cols)
        a = math_ops.cast(random_ops.random_normal(flat, dtype=dtype, seed=self.seed),
                          dtypes.float64)
        chol = matrix_ops.cholesky(matrix_ops.matmul(a, a, transpose_a=True))
        q = matrix_ops.matmul(a, matrix_ops.matrix_inverse(chol), transpose_b=True)
        if rows < cols:
            q = array_ops.transpose(q)
        return math_ops.cast(self.gain * array_ops.reshape(q, shape), dtype)

    def get_config(self) -> dict:
        return {"gain": self.gain, "seed": self.seed, "dtype": self.dtype.name}


class Identity(Initializer):
    """Initializes a 2-D variable to `gain` times the identity matrix (`tf.initializers.identity`;
    a partition gets its slice of the full matrix).

    Raises:
      ValueError: a shape that is not 2-D.
    """

    def __init__(self, gain=1.0, dtype=dtypes.float32):
        self.gain = gain
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = _assert_float_dtype(dtype or self.dtype)
        full = list(partition_info.full_shape if partition_info is not None else shape)
        if len(full) != 2:
            raise ValueError("Identity matrix initializer can only be used for 2D matrices.")
        value = np.eye(*full, dtype=np.float64) * self.gain
        if partition_info is not None:
            start = partition_info.var_offset
            value = value[start[0]:start[0] + shape[0], start[1]:start[1] + shape[1]]
        return constant_op.constant(value.astype(dtype.as_numpy_dtype), dtype=dtype)

    def get_config(self) -> dict:
        return {"gain": self.gain, "dtype": self.dtype.name}


def he_normal(seed=None) -> VarianceScaling:
    return VarianceScaling(2.0, "fan_in", "truncated_normal", seed)


def he_uniform(seed=None) -> VarianceScaling:
    return VarianceScaling(2.0, "fan_in", "uniform", seed)


def lecun_normal(seed=None) -> VarianceScaling:
    return VarianceScaling(1.0, "fan_in", "truncated_normal", seed)


def lecun_uniform(seed=None) -> VarianceScaling:
    return VarianceScaling(1.0, "fan_in", "uniform", seed)


zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_uniform_initializer = RandomUniform
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
uniform_unit_scaling_initializer = UniformUnitScaling
variance_scaling_initializer = VarianceScaling
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal
orthogonal_initializer = Orthogonal


def _initializers_namespace() -> types.SimpleNamespace:
    return types.SimpleNamespace(
        zeros=Zeros, ones=Ones, constant=Constant, random_uniform=RandomUniform,
        random_normal=RandomNormal, truncated_normal=TruncatedNormal,
        uniform_unit_scaling=UniformUnitScaling, variance_scaling=VarianceScaling,
        glorot_uniform=GlorotUniform, glorot_normal=GlorotNormal, he_normal=he_normal,
        he_uniform=he_uniform, lecun_normal=lecun_normal, lecun_uniform=lecun_uniform,
        identity=Identity, orthogonal=Orthogonal,
        global_variables=variables.global_variables_initializer,
        local_variables=variables.local_variables_initializer,
        variables=variables.variables_initializer)


initializers = _initializers_namespace()
"""`tf.initializers`: the initializer classes and variable-initializer functions."""
