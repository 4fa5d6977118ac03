"""Block rearrangements TF1 has as ops (SpaceToBatchND, BatchToSpaceND, SpaceToDepth,
DepthToSpace), built here from Pad, Reshape, Transpose and Slice, so they run and
differentiate through those ops. Block sizes, paddings and crops must be constants; the
input's rank must be known."""

from __future__ import annotations

import builtins

import numpy as np

from tensorflux.framework import common_shapes, dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, joining_ops
from tensorflux.ops.math_ops import multiply
from tensorflux.ops.slicing_ops import slice as _slice

__all__ = ["space_to_batch_nd", "batch_to_space_nd", "space_to_batch", "batch_to_space",
           "space_to_depth", "depth_to_space"]


def _constant(value, what):
    if isinstance(value, (list, tuple, np.ndarray, int, np.integer)):
        return np.asarray(value, np.int64)
    v = common_shapes.constant_value(value)
    if v is None:
        raise ValueError(f"{what} must be a constant")
    return np.asarray(v, np.int64)


def _dims(x):
    """[d0, d1, ...] as Python ints where static, else scalar int32 tensors."""
    rank = x.shape.ndims
    if rank is None:
        raise ValueError("the input's rank must be known")
    static = x.shape.as_list()
    dynamic = array_ops.shape(x)
    return [static[i] if static[i] is not None else dynamic[i] for i in builtins.range(rank)]


def _shape(dims):
    if all(isinstance(d, (int, np.integer)) for d in dims):
        return [int(d) for d in dims]
    return joining_ops.stack([convert_to_tensor(d, dtypes.int32) if isinstance(d, int) else d
                              for d in dims])


def _div(d, b):
    return d // b if isinstance(d, int) else d // int(b)


def space_to_batch_nd(input, block_shape, paddings, name=None):  # noqa: A002
    """Zero-pads the M spatial dimensions after the batch, cuts them into blocks and moves
    the block offsets into the batch (`tf.space_to_batch_nd`): [B, *spatial, *rest] ->
    [B * prod(block), *(spatial padded / block), *rest]."""
    with graph_lib.name_scope(name, "SpaceToBatchND", [input]):
        x = convert_to_tensor(input, name="input")
        block = _constant(block_shape, "block_shape").reshape(-1)
        pads = _constant(paddings, "paddings").reshape(-1, 2)
        m = len(block)
        rank = x.shape.ndims
        all_pads = [[0, 0]] + pads.tolist() + [[0, 0]] * (rank - 1 - m)
        x = joining_ops.pad(x, all_pads)
        d = _dims(x)
        split = [d[0]]
        for i in builtins.range(m):
            split += [_div(d[1 + i], block[i]), int(block[i])]
        split += d[1 + m:]
        x = array_ops.reshape(x, _shape(split))
        perm = [2 + 2 * i for i in builtins.range(m)] + [0] + \
            [1 + 2 * i for i in builtins.range(m)] + list(builtins.range(1 + 2 * m, rank + m))
        x = array_ops.transpose(x, perm)
        batch = d[0] * int(np.prod(block)) if isinstance(d[0], int) else \
            multiply(d[0], int(np.prod(block)))
        return array_ops.reshape(x, _shape([batch] + [split[1 + 2 * i]
                                                      for i in builtins.range(m)] + d[1 + m:]))


def batch_to_space_nd(input, block_shape, crops, name=None):  # noqa: A002
    """The inverse of space_to_batch_nd (`tf.batch_to_space_nd`): block offsets move from
    the batch back into the spatial dimensions, then `crops` are cut off."""
    with graph_lib.name_scope(name, "BatchToSpaceND", [input]):
        x = convert_to_tensor(input, name="input")
        block = _constant(block_shape, "block_shape").reshape(-1)
        crop = _constant(crops, "crops").reshape(-1, 2)
        m = len(block)
        rank = x.shape.ndims
        d = _dims(x)
        batch = _div(d[0], int(np.prod(block)))
        x = array_ops.reshape(x, _shape([int(b) for b in block] + [batch] + d[1:]))
        perm = [m]
        for i in builtins.range(m):
            perm += [m + 1 + i, i]
        perm += list(builtins.range(2 * m + 1, rank + m))
        x = array_ops.transpose(x, perm)
        spatial = [d[1 + i] * int(block[i]) if isinstance(d[1 + i], int) else
                   multiply(d[1 + i], int(block[i])) for i in builtins.range(m)]
        x = array_ops.reshape(x, _shape([batch] + spatial + d[1 + m:]))
        if not crop.any():
            return x
        begin = [0] + [int(c[0]) for c in crop] + [0] * (rank - 1 - m)
        size = [-1] + [s - int(c[0]) - int(c[1]) if isinstance(s, int) else
                       s - int(c[0] + c[1]) for s, c in zip(spatial, crop, strict=True)] + \
            [-1] * (rank - 1 - m)
        return _slice(x, begin, _shape(size))


def space_to_batch(input, paddings, block_size=None, name=None, block_shape=None):  # noqa: A002
    """space_to_batch_nd over the two spatial dimensions of NHWC input with a square block
    (`tf.space_to_batch`)."""
    block = block_size if block_size is not None else block_shape
    return space_to_batch_nd(input, [block, block], paddings, name=name)


def batch_to_space(input, crops, block_size, name=None, block_shape=None):  # noqa: A002
    """batch_to_space_nd over the two spatial dimensions with a square block
    (`tf.batch_to_space`)."""
    block = block_size if block_size is not None else block_shape
    return batch_to_space_nd(input, [block, block], crops, name=name)


def _check_nhwc(data_format):
    if data_format != "NHWC":
        raise ValueError(f"Only data_format NHWC is supported, got {data_format}")


def space_to_depth(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
    """Moves each block_size x block_size spatial block of NHWC input into channels
    (`tf.space_to_depth`): [B, H, W, C] -> [B, H/b, W/b, b*b*C]."""
    _check_nhwc(data_format)
    with graph_lib.name_scope(name, "SpaceToDepth", [input]):
        x = convert_to_tensor(input, name="input")
        b = int(block_size)
        n, h, w, c = _dims(x)
        x = array_ops.reshape(x, _shape([n, _div(h, b), b, _div(w, b), b, c]))
        x = array_ops.transpose(x, [0, 1, 3, 2, 4, 5])
        depth = c * b * b if isinstance(c, int) else multiply(c, b * b)
        return array_ops.reshape(x, _shape([n, _div(h, b), _div(w, b), depth]))


def depth_to_space(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
    """The inverse of space_to_depth (`tf.depth_to_space`): [B, H, W, b*b*C] ->
    [B, H*b, W*b, C]."""
    _check_nhwc(data_format)
    with graph_lib.name_scope(name, "DepthToSpace", [input]):
        x = convert_to_tensor(input, name="input")
        b = int(block_size)
        n, h, w, c = _dims(x)
        x = array_ops.reshape(x, _shape([n, h, w, b, b, _div(c, b * b)]))
        x = array_ops.transpose(x, [0, 1, 3, 2, 4, 5])
        hb = h * b if isinstance(h, int) else multiply(h, b)
        wb = w * b if isinstance(w, int) else multiply(w, b)
        return array_ops.reshape(x, _shape([n, hb, wb, _div(c, b * b)]))
