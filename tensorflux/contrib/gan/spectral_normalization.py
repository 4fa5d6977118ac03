"""Spectral normalization (https://openreview.net/forum?id=B1QRgziT-) in
`tf.contrib.gan.features`: a weight divided by an estimate of its largest singular value.

The weight is seen as a matrix [prod(shape[:-1]), shape[-1]] (output channels last, as
TF's dense and convolution kernels). A persisted vector u (a non-trainable variable
'spectral_norm_u', [rows, 1], random normal) approximates the first left singular vector;
each evaluation does `power_iteration_rounds` of v = normalize(W^T u), u = normalize(W v),
stores u back and returns u^T W v, u and v carrying no gradient. The custom getter applies
this to the variables whose names look like kernels ('.../kernel', '.../weights',
depthwise_/pointwise_ ones) inside a variable scope.
"""

from __future__ import annotations

import numbers
import re

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.nn import nn_impl
from tensorflux.ops import array_ops, math_ops, matrix_ops
from tensorflux.variables import init_ops, variable_scope

__all__ = ["compute_spectral_norm", "spectral_norm_regularizer",
           "spectral_normalization_custom_getter", "spectral_normalize"]

_OK_DTYPES = (dtypes.float16, dtypes.float32, dtypes.float64)
_U_SUFFIX = "spectral_norm_u"


def compute_spectral_norm(w_tensor, power_iteration_rounds=1, name=None):
    """The power method's estimate of the largest singular value of `w_tensor`
    (reshaped to [-1, last dimension]); running it updates the persisted vector."""
    with variable_scope.variable_scope(name, "spectral_norm"):
        w = array_ops.reshape(w_tensor, (-1, w_tensor.shape.as_list()[-1]))
        u_var = variable_scope.get_variable(
            _U_SUFFIX, shape=(w.shape.as_list()[0], 1), dtype=w.dtype,
            initializer=init_ops.random_normal_initializer(), trainable=False)
        u = u_var
        for _ in range(power_iteration_rounds):
            v = nn_impl.l2_normalize(matrix_ops.matmul(w, u, transpose_a=True))
            u = nn_impl.l2_normalize(matrix_ops.matmul(w, v))
        with graph_lib.control_dependencies([u_var.assign(u, name="update_u")]):
            u = array_ops.identity(u)
        u, v = array_ops.stop_gradient(u), array_ops.stop_gradient(v)
        norm = matrix_ops.matmul(matrix_ops.matmul(u, w, transpose_a=True), v)
        norm.shape.assert_is_compatible_with([1, 1])
        return norm[0][0]


def spectral_normalize(w, power_iteration_rounds=1, name=None):
    """`w` divided by its estimated spectral norm (same shape)."""
    with variable_scope.variable_scope(name, "spectral_normalize"):
        w = convert_to_tensor(w)
        normalized = w / compute_spectral_norm(w, power_iteration_rounds)
        return array_ops.reshape(normalized, w.shape)


def spectral_norm_regularizer(scale, power_iteration_rounds=1, scope=None):
    """A regularizer `sn(weights)` = scale * the weights' estimated spectral norm (None
    for scale 0).

    Raises:
      ValueError: an integer or negative `scale`.
    """
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"scale cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale:g}")
        if scale == 0.0:
            return lambda _: None

    def sn(weights, name=None):
        with graph_lib.name_scope(scope, "SpectralNormRegularizer", [weights]) as name:
            scale_t = convert_to_tensor(scale, dtype=weights.dtype.base_dtype, name="scale")
            return math_ops.multiply(scale_t, compute_spectral_norm(
                weights, power_iteration_rounds=power_iteration_rounds), name=name)

    return sn


def _default_name_filter(name) -> bool:
    return re.match(r"(.*\/)?(depthwise_|pointwise_)?(weights|kernel)$", name) is not None


def spectral_normalization_custom_getter(name_filter=_default_name_filter,
                                         power_iteration_rounds=1):
    """A `custom_getter` for `tf.variable_scope` that hands out the spectrally
    normalized value of each variable `name_filter` accepts (its u variable beside it,
    under '<name>/spectral_normalize/spectral_norm/').

    Raises:
      ValueError: `name_filter` not callable; at use, the getter asked for an internal u
        variable, an unsupported dtype, or a weight of rank below 2.
    """
    if not callable(name_filter):
        raise ValueError("name_filter must be callable")

    def _internal_getter(getter, name, *args, **kwargs):
        if not name_filter(name):
            return getter(name, *args, **kwargs)
        if name.endswith(_U_SUFFIX):
            raise ValueError("Cannot apply Spectral Normalization to internal variables "
                             f"created for Spectral Normalization. Tried to normalized "
                             f"variable [{name}]")
        dtype = kwargs.get("dtype")
        if dtype not in _OK_DTYPES:
            raise ValueError(f"Disallowed data type {dtype}")
        w_tensor = getter(name, *args, **kwargs)
        if len(w_tensor.get_shape()) < 2:
            raise ValueError("Spectral norm can only be applied to multi-dimensional tensors")
        return spectral_normalize(w_tensor, power_iteration_rounds=power_iteration_rounds,
                                  name=name + "/spectral_normalize")

    return _internal_getter
