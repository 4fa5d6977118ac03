"""Finite-difference gradient checks: `tf.test.compute_gradient(_error)` (TF1 semantics).

The theoretical Jacobian comes from `tf.gradients` with one-hot `grad_ys` (one backward run
per element of y); the numerical one from central differences (two forward runs per element
of x). Both are [x_size, y_size] matrices, as TensorFlow returns them.
"""

from __future__ import annotations

import numpy as np

from tensorflux.autodiff import gradients
from tensorflux.framework import dtypes
from tensorflux.framework.indexed_slices import IndexedSlicesValue
from tensorflux.ops import array_ops
from tensorflux.runtime.session import get_default_session

__all__ = ["compute_gradient", "compute_gradient_error"]


def _dense(value, shape) -> np.ndarray:
    if isinstance(value, IndexedSlicesValue):
        out = np.zeros(shape, dtype=np.asarray(value.values).dtype)
        np.add.at(out, np.asarray(value.indices), np.asarray(value.values))
        return out
    return np.asarray(value)


def _session():
    sess = get_default_session()
    if sess is None:
        raise ValueError("compute_gradient needs a default session: use "
                         "`with tf.Session() as sess:` (or `sess.as_default()`)")
    return sess


def _jacobians(x, x_shape, x_data, y, y_shape, delta, feed):
    sess = _session()
    x_size = int(np.prod(x_shape, dtype=np.int64))
    y_size = int(np.prod(y_shape, dtype=np.int64))
    work = np.float64 if x.dtype.base_dtype is dtypes.float64 else np.float32
    with y.graph.as_default():
        dy = array_ops.placeholder(y.dtype, y_shape, name="compute_gradient_dy")
        (dx,) = gradients.gradients(y, x, grad_ys=dy)
    theoretical = np.zeros((x_size, y_size), dtype=work)
    if dx is not None:
        fetch = dx
        for col in range(y_size):
            dy_data = np.zeros(y_shape, dtype=y.dtype.as_numpy_dtype)
            dy_data.flat[col] = 1
            value = sess.run(fetch, {**feed, x: x_data, dy: dy_data})
            theoretical[:, col] = _dense(value, x_shape).astype(work).ravel()
    numerical = np.zeros((x_size, y_size), dtype=work)
    for row in range(x_size):
        x_pos = x_data.astype(work)
        x_neg = x_data.astype(work)
        x_pos.flat[row] += delta
        x_neg.flat[row] -= delta
        y_pos = sess.run(y, {**feed, x: x_pos.astype(x_data.dtype)})
        y_neg = sess.run(y, {**feed, x: x_neg.astype(x_data.dtype)})
        diff = (np.asarray(y_pos, work) - np.asarray(y_neg, work)) / (2 * delta)
        numerical[row, :] = diff.ravel()
    return theoretical, numerical


def compute_gradient(x, x_shape, y, y_shape, x_init_value=None, delta: float = 1e-3,
                     init_targets=None, extra_feed_dict=None):
    """Theoretical and numerical Jacobians of y with respect to x.

    Args:
      x: a Tensor (typically a placeholder; any feedable tensor works) or a list of them.
      x_shape: its shape (a list of shapes for a list of x).
      y: the output Tensor.
      y_shape: its shape.
      x_init_value: the point to evaluate at (a NumPy array, or a list); random by default.
      delta: the finite-difference step.
      init_targets: ops to run first (e.g. variable initializers).
      extra_feed_dict: further feeds for every run.

    Returns:
      (theoretical, numerical), each [x_size, y_size]; a list of such pairs for a list of x.
    """
    feed = dict(extra_feed_dict or {})
    if init_targets is not None:
        sess = _session()
        for t in init_targets:
            sess.run(t, feed)
    if isinstance(x, (list, tuple)):
        inits = x_init_value if x_init_value is not None else [None] * len(x)
        values = [_init_value(xi, si, vi) for xi, si, vi in zip(x, x_shape, inits,
                                                                  strict=True)]
        out = []
        for k, (xi, si) in enumerate(zip(x, x_shape, strict=True)):
            others = {xj: vj for j, (xj, vj) in enumerate(zip(x, values, strict=True))
                      if j != k}
            out.append(_jacobians(xi, tuple(si), values[k], y, tuple(y_shape), delta,
                                  {**feed, **others}))
        return out
    value = _init_value(x, x_shape, x_init_value)
    return _jacobians(x, tuple(x_shape), value, y, tuple(y_shape), delta, feed)


def _init_value(x, shape, value) -> np.ndarray:
    np_dtype = x.dtype.base_dtype.as_numpy_dtype
    if value is None:
        rng = np.random.default_rng(0)
        return rng.standard_normal(tuple(shape)).astype(np_dtype)
    return np.asarray(value, dtype=np_dtype).reshape(tuple(shape))


def compute_gradient_error(x, x_shape, y, y_shape, x_init_value=None, delta: float = 1e-3,
                           init_targets=None, extra_feed_dict=None) -> float:
    """The largest absolute difference between the theoretical and numerical Jacobians."""
    result = compute_gradient(x, x_shape, y, y_shape, x_init_value, delta, init_targets,
                              extra_feed_dict)
    pairs = result if isinstance(result, list) else [result]
    err = 0.0
    for theoretical, numerical in pairs:
        if theoretical.size:
            err = max(err, float(np.max(np.abs(theoretical - numerical))))
    return err
