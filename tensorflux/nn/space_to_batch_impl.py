"""`tf.nn.with_space_to_batch`: runs an op with dilation by moving the dilation into the
batch (SpaceToBatchND before, BatchToSpaceND after), as atrous convolution does."""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import constant_value
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, joining_ops, math_ops
from tensorflux.ops.array_ext_ops import (
    batch_to_space_nd,
    required_space_to_batch_paddings,
    space_to_batch_nd,
)

__all__ = ["with_space_to_batch"]


def _spread(values, fill, spatial_dims):
    """The rows of `values` (one per spatial dim) laid over dims 1..max(spatial_dims), the
    dims in between that are not spatial (a channel dim of NC...) getting `fill`."""
    if spatial_dims == list(range(1, len(spatial_dims) + 1)):
        return values
    rows = joining_ops.unstack(values, len(spatial_dims))
    return joining_ops.stack([rows[spatial_dims.index(d)] if d in spatial_dims else fill
                              for d in range(1, spatial_dims[-1] + 1)])


def _base_paddings(filter_shape, rate, padding):
    if padding == "VALID":
        return None
    if filter_shape is None:
        raise ValueError("filter_shape must be specified for SAME padding")
    filter_shape = math_ops.cast(convert_to_tensor(filter_shape, name="filter_shape"),
                                 dtypes.int32)
    effective = filter_shape + (filter_shape - 1) * (rate - 1)
    extra = effective - 1
    start = extra // 2
    return joining_ops.stack([start, extra - start], axis=1)


def with_space_to_batch(input, dilation_rate, padding, op, filter_shape=None,  # noqa: A002
                        spatial_dims=None, data_format=None):
    """`op(converted_input, num_spatial_dims, padding)` computed with `dilation_rate`
    (`tf.nn.with_space_to_batch`): the input's spatial dims are padded and folded into the
    batch so that `op` runs undilated with VALID padding, then unfolded and cropped.

    Args:
      input: tensor of rank num_spatial_dims + 2.
      dilation_rate: int vector [num_spatial_dims], all positive.
      padding: "VALID" or "SAME" (SAME needs `filter_shape`).
      op: fn(input, num_spatial_dims, padding) -> tensor.
      filter_shape: the op's spatial window, for SAME padding.
      spatial_dims: increasing dims of `input` that are spatial (default 1.. or 2..).
      data_format: "NC..." puts the spatial dims from 2.

    Raises:
      ValueError: bad padding, rate rank or values, spatial_dims, or missing filter_shape.
    """
    input = convert_to_tensor(input, name="input")  # noqa: A001
    rate = convert_to_tensor(dilation_rate, dtypes.int32, name="dilation_rate")
    if rate.shape.ndims is not None and rate.shape.ndims != 1:
        raise ValueError(f"`dilation_rate.shape.rank` must be 1. Received: "
                         f"dilation_rate={dilation_rate} of rank {rate.shape.ndims}")
    num = rate.shape[0] if rate.shape.ndims == 1 else None
    if num is None:
        raise ValueError("`dilation_rate.shape[0]` must be known. Received: "
                         f"dilation_rate={dilation_rate}")
    if padding not in ("SAME", "VALID"):
        raise ValueError(f'`padding` must be either "VALID" or "SAME". Received: '
                         f"padding={padding}")
    start = 2 if data_format is not None and data_format.startswith("NC") else 1
    if spatial_dims is None:
        spatial_dims = list(range(start, num + start))
    spatial_dims = [int(d) for d in spatial_dims]
    if sorted(set(spatial_dims)) != spatial_dims or len(spatial_dims) != num:
        raise ValueError("`spatial_dims` must be a monotonically increasing sequence of "
                         f"positive integers and as long as dilation_rate. Received: "
                         f"spatial_dims={spatial_dims}")
    if spatial_dims and spatial_dims[0] < 1:
        raise ValueError(f"`spatial_dims` must be positive. Received: {spatial_dims}")
    const_rate = constant_value(rate)
    if const_rate is not None:
        if np.any(const_rate < 1):
            raise ValueError(f"`dilation_rate` must be positive. Received: {const_rate}")
        if np.all(const_rate == 1):
            return op(input, num, padding)
    with graph_lib.name_scope(None, "with_space_to_batch", [input, rate]):
        base = _base_paddings(filter_shape, rate, padding)
        shape = array_ops.shape(input)
        spatial = joining_ops.stack([shape[d] for d in spatial_dims])
        paddings, crops = required_space_to_batch_paddings(spatial, rate, base_paddings=base)
        pair = array_ops.zeros([2], dtypes.int32)
        block = _spread(rate, 1, spatial_dims)
        converted = space_to_batch_nd(input, block, _spread(paddings, pair, spatial_dims))
        result = op(converted, num, "VALID")
        return batch_to_space_nd(result, block, _spread(crops, pair, spatial_dims))
