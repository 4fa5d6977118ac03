"""GPU kernels of the fused batch norms and their gradients (ops/nn_ops.py): the CPU
kernels' contract and formulas (kernels/cpu/batch_norm_ops.py, its general path) with the
array module, per-channel statistics reduced on the device. Half floats compute in float32
as on the CPU; the fused ReLU of the Ex ops is max(y, 0) forward and dy * (y > 0) back.
"""

from __future__ import annotations

import numpy as np

from tensorflux.kernels.cpu import batch_norm_ops as cpu_bn
from tensorflux.kernels.cpu._nn_common import _invalid
from tensorflux.kernels.gpu import backend
from tensorflux.kernels.gpu._common import FLOATS, hybrid


def _wide(x):
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _vec(v, channels: int, what: str):
    v = backend.to_device(v)
    if v.shape != (channels,):
        raise _invalid(f"{what} must have shape [{channels}], got {list(v.shape)}")
    return v.astype(np.float32) if v.dtype != np.float64 else v


def _forward(node):
    a = node.attrs
    relu = cpu_bn._activation(node)
    data_format = a.get("data_format", "NHWC")
    eps, factor = float(a.get("epsilon", 1e-4)), float(a.get("exponential_avg_factor", 1.0))
    training = a.get("is_training", True)
    v3 = node.op in ("FusedBatchNormV3", "_FusedBatchNormEx")

    def compute(ctx, x, scale, offset, mean, variance, *side_inputs):
        xp = backend.xp()
        if len(side_inputs) > 1:
            raise _invalid("at most one side input is supported")
        x = backend.to_device(x)
        axes, bshape, c = cpu_bn._layout(data_format, x.ndim)
        channels = x.shape[c]
        xw = _wide(x)
        scale, offset = _vec(scale, channels, "scale"), _vec(offset, channels, "offset")
        if training:
            n = x.size // max(channels, 1)
            if n:
                m, v = xw.mean(axis=axes), xw.var(axis=axes)
            else:
                m = v = xp.full(channels, np.nan, np.float32)
            corrected = v * (n / (n - 1)) if n > 1 else xp.zeros_like(v)
            batch_mean, batch_var = m, corrected
            if factor != 1.0:
                batch_mean = (1 - factor) * _vec(mean, channels, "mean") + factor * m
                batch_var = (1 - factor) * _vec(variance, channels, "variance") + \
                    factor * corrected
            use_m, use_v, saved = m, v, (m, v)
        else:
            use_m, use_v = _vec(mean, channels, "mean"), _vec(variance, channels, "variance")
            batch_mean, batch_var, saved = use_m, use_v, (use_m, use_v)
        inv = 1.0 / xp.sqrt(use_v + eps)
        y = (xw - use_m.reshape(bshape)) * (inv * scale).reshape(bshape) + \
            offset.reshape(bshape)
        y = y.astype(x.dtype, copy=False)
        if side_inputs:
            y = y + backend.to_device(side_inputs[0])
        if relu:
            y = xp.maximum(y, y.dtype.type(0))
        u = np.float32
        outs = [y, batch_mean.astype(u), batch_var.astype(u), saved[0].astype(u),
                saved[1].astype(u)]
        if v3:
            outs.append(xp.zeros(0, u))
        return outs

    return compute


def _backward(node):
    a = node.attrs
    data_format = a.get("data_format", "NHWC")
    eps = float(a.get("epsilon", 1e-4))
    training = a.get("is_training", True)
    relu = node.op == "_FusedBatchNormGradEx" and cpu_bn._activation(node)

    def compute(ctx, dy, x, scale, saved_mean, saved_var, *rest):
        xp = backend.xp()
        if node.op == "_FusedBatchNormGradEx" and len(rest) != 3:
            raise _invalid("side inputs are not supported")
        dy, x = backend.to_device(dy), backend.to_device(x)
        if relu:
            relu_y = backend.to_device(rest[2])
            if relu_y.shape != dy.shape:
                raise _invalid(f"y_backprop and y must have the same shape: "
                               f"{list(dy.shape)} vs {list(relu_y.shape)}")
            dy = dy * (relu_y > 0)
        axes, bshape, c = cpu_bn._layout(data_format, x.ndim)
        channels = x.shape[c]
        dyw, xw = _wide(dy), _wide(x)
        scale = _vec(scale, channels, "scale")
        m, v = _vec(saved_mean, channels, "mean"), _vec(saved_var, channels, "variance")
        inv = 1.0 / xp.sqrt(v + eps)
        dx, d_scale, d_offset = cpu_bn.general_backward(dyw, xw, scale, m, inv, axes, bshape,
                                                        training)
        u = np.float32
        return [dx.astype(x.dtype, copy=False), d_scale.astype(u), d_offset.astype(u),
                xp.zeros(0, u), xp.zeros(0, u)]

    return compute


for _op in ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", "_FusedBatchNormEx"):
    hybrid(_op, _forward, {"T": FLOATS}, expensive=True)
for _op in ("FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3",
            "_FusedBatchNormGradEx"):
    hybrid(_op, _backward, {"T": FLOATS}, expensive=True)
