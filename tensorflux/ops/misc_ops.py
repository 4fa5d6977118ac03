"""Small ops of several families that TF1 exposes at the top level: Timestamp
(`tf.timestamp`), NextAfter (`tf.math.nextafter`), ExtractVolumePatches
(`tf.extract_volume_patches`), and the `tf.batch_scatter_update` composition.

- Timestamp: the wall-clock time in seconds since the epoch, a float64 scalar; stateful
  (never folded or merged), no gradient.
- NextAfter: the next representable value after x1 towards x2, elementwise with
  broadcasting (float32/float64). As in TensorFlow its gradient is the incoming one for x1
  and zero for x2.
- CheckPinned (`tf.check_pinned`): its input, if that lives in host memory pinned for a
  GPU; tensors of tensorflux's CPU kernels never do (NumPy memory), so it fails with
  InvalidArgumentError("not pinned") as TensorFlow's CPU kernel does for CPU tensors. No
  gradient (tf.gradients raises LookupError, as in TensorFlow).
- ExtractVolumePatches: the 3-D ExtractImagePatches: windows of ksizes [1, p, r, c, 1]
  every strides over [batch, planes, rows, cols, depth], SAME or VALID, each flattened
  (plane, row, col, depth) into the last dimension. Its gradient sums each patch entry back
  into the voxel it was read from (needs a static input shape but the batch).

Kernels: tensorflux/kernels/cpu/misc_ops.py.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import common_shapes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import (
    define_op,
    gradient,
    no_gradient,
    not_differentiable,
)
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, joining_ops, math_ops, sequence_ops, state_ops

__all__ = ["timestamp", "nextafter", "extract_volume_patches", "batch_scatter_update",
           "check_pinned"]

TensorShape = tensor_shape.TensorShape

# ---- Timestamp ---------------------------------------------------------------------------

define_op("Timestamp", inputs=[], outputs=["ts: double"], shape_fn=lambda op: [TensorShape([])],
          stateful=True)
not_differentiable("Timestamp")


def timestamp(name=None):
    """Seconds since the epoch when the op runs, a float64 scalar (`tf.timestamp`)."""
    return apply_op("Timestamp", name=name or "Timestamp")


# ---- CheckPinned -------------------------------------------------------------------------

define_op("CheckPinned", inputs=["tensor: T"], outputs=["output: T"], attrs=["T: type"],
          shape_fn=common_shapes.unchanged, keep_identity=True)
# No gradient: tf.gradients raises LookupError, as TensorFlow's.


def check_pinned(tensor, name=None):
    """`tensor`, checked to be in host memory pinned for a GPU (`tf.check_pinned`).

    Raises (when run):
      InvalidArgumentError: the tensor is not in pinned memory (no tensor of tensorflux's
        CPU kernels is).
    """
    return apply_op("CheckPinned", tensor=tensor, name=name or "CheckPinned")


# ---- NextAfter ---------------------------------------------------------------------------

define_op("NextAfter", inputs=["x1: T", "x2: T"], outputs=["output: T"],
          attrs=["T: {float, double} = DT_FLOAT"],
          shape_fn=lambda op: [common_shapes.broadcast_shapes(op.inputs[0].shape,
                                                              op.inputs[1].shape)],
          broadcasts=True)


@gradient("NextAfter")
def _next_after_grad(op, grad):
    return [grad, array_ops.zeros_like(grad)]


def nextafter(x1, x2, name=None):
    """The next representable value after `x1` towards `x2`, elementwise
    (`tf.math.nextafter`)."""
    x1 = convert_to_tensor(x1, name="x1")
    x2 = convert_to_tensor(x2, dtype=x1.dtype, name="x2")
    return apply_op("NextAfter", x1=x1, x2=x2, name=name or "NextAfter")


# ---- ExtractVolumePatches ----------------------------------------------------------------


def _geometry(size, k, s, padding):
    """(output size, padding before) of one spatial dim (TF's windowed-output rule)."""
    if padding == "VALID":
        return max(0, (size - k + s) // s), 0
    out = -(-size // s)
    return out, max(0, (out - 1) * s + k - size) // 2


def _check_attrs(ksizes, strides):
    for what, v in (("ksizes", ksizes), ("strides", strides)):
        if len(v) != 5 or v[0] != 1 or v[4] != 1:
            raise ValueError(f"{what} must be [1, p, r, c, 1] (batch and depth 1), got "
                             f"{list(v)}")
        if any(x <= 0 for x in v):
            raise ValueError(f"{what} must be positive, got {list(v)}")


def _volume_patches_shape(op):
    dims = common_shapes.checked_dims(op.inputs[0], rank=5) or [None] * 5
    k, s, padding = op.attrs["ksizes"], op.attrs["strides"], op.attrs["padding"]
    _check_attrs(k, s)
    out = [dims[0]]
    for i in (1, 2, 3):
        out.append(None if dims[i] is None else _geometry(dims[i], k[i], s[i], padding)[0])
    out.append(None if dims[4] is None else k[1] * k[2] * k[3] * dims[4])
    return [TensorShape(out)]


define_op("ExtractVolumePatches", inputs=["input: T"], outputs=["patches: T"],
          attrs=["ksizes: list(int) >= 5", "strides: list(int) >= 5", "T: realnumbertype",
                 "padding: {'SAME', 'VALID'}"], shape_fn=_volume_patches_shape)


def volume_patch_sources(spatial, ksizes, strides, padding) -> np.ndarray:
    """For each output position and patch entry, the flat voxel index read + 1 (0 for
    padding): an int array [op, or, oc, kp * kr * kc]. Shared by the kernel's tests and
    the gradient."""
    axes = []
    for i, size in enumerate(spatial, start=1):
        n, before = _geometry(size, ksizes[i], strides[i], padding)
        axes.append(np.arange(n)[:, None] * strides[i] - before + np.arange(ksizes[i])[None])
    p, r, c = axes
    P, R, C = spatial  # noqa: N806 - the input's planes, rows, cols
    valid = (((p >= 0) & (p < P))[:, None, None, :, None, None]
             & ((r >= 0) & (r < R))[None, :, None, None, :, None]
             & ((c >= 0) & (c < C))[None, None, :, None, None, :])
    flat = (np.clip(p, 0, P - 1)[:, None, None, :, None, None] * R * C
            + np.clip(r, 0, R - 1)[None, :, None, None, :, None] * C
            + np.clip(c, 0, C - 1)[None, None, :, None, None, :])
    idx = np.where(valid, flat + 1, 0)
    return idx.reshape(idx.shape[:3] + (-1,)).astype(np.int32)


@gradient("ExtractVolumePatches")
def _extract_volume_patches_grad(op, grad):
    dims = op.inputs[0].shape.as_list() if op.inputs[0].shape.ndims is not None else [None]
    if len(dims) != 5 or any(d is None for d in dims[1:]):
        raise NotImplementedError("the gradient of ExtractVolumePatches needs known planes, "
                                  "rows, cols and depth")
    _, planes, rows, cols, depth = dims
    idx = volume_patch_sources((planes, rows, cols), op.attrs["ksizes"], op.attrs["strides"],
                               op.attrs["padding"])
    batch = array_ops.shape(grad)[0]
    g = array_ops.reshape(grad, joining_ops.stack([batch, -1, depth]))
    g = array_ops.transpose(g, [1, 0, 2])  # [positions * taps, batch, depth]
    n = planes * rows * cols
    summed = sequence_ops.unsorted_segment_sum(g, idx.reshape(-1), n + 1)
    summed = array_ops.transpose(summed[1:], [1, 0, 2])
    return [array_ops.reshape(summed, joining_ops.stack([batch, planes, rows, cols, depth]))]


def extract_volume_patches(input, ksizes, strides, padding, name=None):  # noqa: A002
    """Patches of size `ksizes` every `strides` from a 5-D [batch, planes, rows, cols,
    depth] tensor, flattened into depth (`tf.extract_volume_patches`)."""
    _check_attrs(list(ksizes), list(strides))
    return apply_op("ExtractVolumePatches", input=input, ksizes=list(ksizes),
                    strides=list(strides), padding=padding,
                    name=name or "ExtractVolumePatches")


# ---- batch_scatter_update ----------------------------------------------------------------


def batch_scatter_update(ref, indices, updates, use_locking=True, name=None):
    """`ref[i..., indices[i..., j]] = updates[i..., j]` over the leading (batch) dims of
    `indices` (`tf.batch_scatter_update`): scatter_nd_update with the batch coordinates
    prepended to each index.

    Raises:
      ValueError: `indices` has unknown rank.
    """
    with graph_lib.name_scope(name, "BatchScatterUpdate", [indices, updates]):
        indices = convert_to_tensor(indices, name="indices")
        rank = indices.shape.ndims
        if rank is None:
            raise ValueError("batch_gather does not allow indices with unknown shape.")
        shape = array_ops.shape(indices)
        nd = array_ops.expand_dims(indices, -1)
        columns = []
        for dim in range(rank - 1):
            broadcast = [1] * (rank + 1)
            broadcast[dim] = shape[dim]
            span = math_ops.cast(array_ops.reshape(sequence_ops.range(0, shape[dim], 1),
                                                   joining_ops.stack(broadcast)), nd.dtype)
            columns.append(span * array_ops.ones_like(nd))
        columns.append(nd)
        final = joining_ops.concat(columns, -1)
        return state_ops.scatter_nd_update(ref, final, updates, use_locking=use_locking)


no_gradient("CheckPinned")  # as TensorFlow: tf.gradients through it is a LookupError
