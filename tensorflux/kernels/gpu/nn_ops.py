"""GPU kernels of the nn ops (ops/nn_ops.py): softmax, the cross-entropies, L2Loss and local
response normalization, against the array module of kernels/gpu/backend.py."""

from __future__ import annotations

import numpy as np

from tensorflux.kernels.cpu._nn_common import _invalid
from tensorflux.kernels.cpu.nn_ops import _depth_window_sum, _lrn_attrs
from tensorflux.kernels.gpu import backend
from tensorflux.kernels.gpu._common import FLOATS, hybrid


def _xp():
    return backend.xp()


def _log_softmax(xp, x):
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - xp.log(xp.exp(shifted).sum(axis=-1, keepdims=True))


def _softmax(node):
    log = node.op == "LogSoftmax"

    def compute(ctx, x):
        x = backend.to_device(x)
        if x.ndim < 1:
            raise _invalid(f"logits must have >= 1 dimension, got {list(x.shape)}")
        xp = _xp()
        out = _log_softmax(xp, x)
        return out if log else xp.exp(out)

    return compute


hybrid("Softmax", _softmax, {"T": FLOATS})
hybrid("LogSoftmax", _softmax, {"T": FLOATS})


def _sparse_xent(node):
    def compute(ctx, logits, labels):
        xp = _xp()
        if np.ndim(logits) != 2 or np.ndim(labels) != 1 or \
                np.shape(labels)[0] != np.shape(logits)[0]:
            raise _invalid(f"logits and labels must have the same first dimension, got "
                           f"logits shape {list(np.shape(logits))} and labels shape "
                           f"{list(np.shape(labels))}")
        classes = np.shape(logits)[1]
        checked = not backend.is_device_array(labels)
        if checked and labels.size:
            lo, hi = int(labels.min()), int(labels.max())
            if lo < 0 or hi >= classes:
                bad = lo if lo < 0 else hi
                raise _invalid(f"Received a label value of {bad} which is outside the valid "
                               f"range of [0, {classes}).")
        logits = backend.to_device(logits)
        labels = backend.to_device(labels).astype(np.int64)
        if not checked:
            # Labels in device memory are not read on the host (a step captured into a
            # CUDA graph cannot): out-of-range rows get NaN, as TensorFlow's GPU kernel.
            bad = (labels < 0) | (labels >= classes)
            labels = xp.where(bad, 0, labels)
        logp = _log_softmax(xp, logits)
        rows = xp.arange(logits.shape[0])
        loss = -logp[rows, labels]
        grad = xp.exp(logp)
        grad[rows, labels] -= 1
        if not checked:
            loss = xp.where(bad, logits.dtype.type(np.nan), loss)
            grad = xp.where(bad[:, None], logits.dtype.type(np.nan), grad)
        return loss, grad

    return compute


def _xent(node):
    def compute(ctx, logits, labels):
        xp = _xp()
        logits, labels = backend.to_device(logits), backend.to_device(labels)
        logits, labels = xp.broadcast_arrays(logits, labels)
        if logits.ndim != 2:
            raise _invalid(f"logits and labels must be 2-D, got {list(logits.shape)}")
        logp = _log_softmax(xp, logits)
        loss = -(labels * logp).sum(axis=-1)
        return loss, xp.exp(logp) - labels

    return compute


hybrid("SparseSoftmaxCrossEntropyWithLogits", _sparse_xent, {"T": FLOATS})
hybrid("SoftmaxCrossEntropyWithLogits", _xent, {"T": FLOATS})


def _l2_loss(node):
    def compute(ctx, t):
        t = backend.to_device(t)
        return (t * t).sum(dtype=t.dtype) / t.dtype.type(2)

    return compute


hybrid("L2Loss", _l2_loss, {"T": FLOATS})


def _lrn(node):
    radius, bias, alpha, beta = _lrn_attrs(node)

    def compute(ctx, x):
        x = backend.to_device(x)
        if x.ndim != 4:
            raise _invalid(f"input must be 4-dimensional, got {list(x.shape)}")
        norm = bias + alpha * _depth_window_sum(x * x, radius)
        return x * norm ** x.dtype.type(-beta)

    return compute


def _lrn_grad(node):
    radius, bias, alpha, beta = _lrn_attrs(node)

    def compute(ctx, g, x, y):
        g, x, y = (backend.to_device(v) for v in (g, x, y))
        if not (g.ndim == x.ndim == y.ndim == 4) or not (g.shape == x.shape == y.shape):
            raise _invalid("input_grads, input_image, and out_image should have the same "
                           "shape")
        norm = bias + alpha * _depth_window_sum(x * x, radius)
        dx = g * norm ** x.dtype.type(-beta)
        dx -= x.dtype.type(2 * alpha * beta) * x * _depth_window_sum(g * y / norm, radius)
        return dx

    return compute


hybrid("LRN", _lrn, {"T": FLOATS}, expensive=True)
hybrid("LRNGrad", _lrn_grad, {"T": FLOATS}, expensive=True)
