"""CPU kernels of the fused batch norms and their gradients (contract in
tensorflux/ops/batch_norm_ops.py). Statistics are reduced over every axis but the
channel axis, in float32 for half and bfloat16 data (float64 data stays float64).
"""

from __future__ import annotations

import numpy as np

from tensorflux.kernels.cpu._nn_common import _invalid, _narrow, _widen
from tensorflux.kernels.registry import kernel_factory


def _layout(data_format: str, ndim: int):
    """(reduction axes, shape that broadcasts a per-channel vector) of `data_format`."""
    if len(data_format) != ndim:
        raise _invalid(f"input must be {len(data_format)}-dimensional for data_format "
                       f"{data_format}, got shape rank {ndim}")
    c = 1 if data_format[1] == "C" else ndim - 1
    bshape = [1] * ndim
    bshape[c] = -1
    return tuple(i for i in range(ndim) if i != c), bshape, c


def _vec(v, channels, what):
    v = np.asarray(v)
    if v.shape != (channels,):
        raise _invalid(f"{what} must have shape [{channels}], got {list(v.shape)}")
    return v.astype(np.float32) if v.dtype != np.float64 else v


def _forward(node, ctx, x, scale, offset, mean, variance):
    a = node.attrs
    axes, bshape, c = _layout(a.get("data_format", "NHWC"), x.ndim)
    eps, factor = float(a.get("epsilon", 1e-4)), float(a.get("exponential_avg_factor", 1.0))
    channels = x.shape[c]
    xw = _widen(x)
    scale, offset = _vec(scale, channels, "scale"), _vec(offset, channels, "offset")
    if a.get("is_training", True):
        n = x.size // max(channels, 1)
        m = xw.mean(axis=axes) if n else np.full(channels, np.nan, np.float32)
        v = xw.var(axis=axes) if n else np.full(channels, np.nan, np.float32)
        corrected = v * n / (n - 1) if n > 1 else np.zeros_like(v)
        batch_mean, batch_var = m, corrected
        if factor != 1.0:
            batch_mean = (1 - factor) * _vec(mean, channels, "mean") + factor * m
            batch_var = (1 - factor) * _vec(variance, channels, "variance") + factor * corrected
        use_m, use_v, saved = m, v, (m, v)
    else:
        use_m, use_v = _vec(mean, channels, "mean"), _vec(variance, channels, "variance")
        batch_mean, batch_var, saved = use_m, use_v, (use_m, use_v)
    inv = 1.0 / np.sqrt(use_v + eps)
    y = (xw - use_m.reshape(bshape)) * (inv * scale).reshape(bshape) + offset.reshape(bshape)
    u = np.float32
    outs = [_narrow(y, x.dtype), batch_mean.astype(u), batch_var.astype(u),
            saved[0].astype(u), saved[1].astype(u)]
    if node.op == "FusedBatchNormV3":
        outs.append(np.zeros(0, u))
    return outs


@kernel_factory("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", expensive=True)
def _fused_batch_norm(node):
    return lambda ctx, *inputs: _forward(node, ctx, *inputs)


def _backward(node, ctx, dy, x, scale, saved_mean, saved_var, *unused):
    a = node.attrs
    axes, bshape, c = _layout(a.get("data_format", "NHWC"), x.ndim)
    channels = x.shape[c]
    eps = float(a.get("epsilon", 1e-4))
    dyw, xw = _widen(dy), _widen(x)
    scale = _vec(scale, channels, "scale")
    m, v = _vec(saved_mean, channels, "mean"), _vec(saved_var, channels, "variance")
    inv = 1.0 / np.sqrt(v + eps)
    x_hat = (xw - m.reshape(bshape)) * inv.reshape(bshape)
    d_offset = dyw.sum(axis=axes)
    d_scale = (dyw * x_hat).sum(axis=axes)
    if a.get("is_training", True):
        n = max(x.size // max(channels, 1), 1)
        dx = (scale * inv).reshape(bshape) / n * (
            n * dyw - d_offset.reshape(bshape) - x_hat * d_scale.reshape(bshape))
    else:
        dx = dyw * (scale * inv).reshape(bshape)
    u = np.float32
    return [_narrow(dx, x.dtype), d_scale.astype(u), d_offset.astype(u), np.zeros(0, u),
            np.zeros(0, u)]


@kernel_factory("FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3",
                expensive=True)
def _fused_batch_norm_grad(node):
    return lambda ctx, *inputs: _backward(node, ctx, *inputs)
