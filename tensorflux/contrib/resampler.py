"""`tf.contrib.resampler`: bilinear sampling of 2-D data at arbitrary (x, y) points, as
spatial transformer networks and optical-flow warps use it (the Resampler op and its
gradient: tensorflux/ops/resampler_ops.py)."""

from __future__ import annotations

import sys as _sys

from tensorflux.contrib import tf1_paths as _tf1_paths
from tensorflux.framework import graph as _graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor as _convert
from tensorflux.ops import resampler_ops as _ops

__all__ = ["resampler"]


def resampler(data, warp, name="resampler"):
    """Samples `data` at the points `warp` by bilinear interpolation.

    Args:
      data: [batch_size, data_height, data_width, data_num_channels], a float tensor.
      warp: [batch_size, dim_0, ..., dim_n, 2], the points (x, y): x along the width, y
        along the height, in pixels. Points outside the data read 0.
      name: the name scope.

    Returns:
      [batch_size, dim_0, ..., dim_n, data_num_channels], `data`'s dtype.

    Raises:
      ValueError: `data` is not rank 4, or `warp` is below rank 2 or its last dimension is
        not 2 (when known at graph time).
    """
    with _graph_lib.name_scope(name, "resampler", [data, warp]):
        data_tensor = _convert(data, name="data")
        warp_tensor = _convert(warp, name="warp")
        return _ops.resampler(data_tensor, warp_tensor, name="Resampler")


python = _tf1_paths.register(__name__, {"python.ops.resampler_ops": _sys.modules[__name__]})
