"""More array ops: SpaceToDepth/DepthToSpace, SpaceToBatchND/BatchToSpaceND, ExtractImagePatches,
ReverseSequence, UniqueWithCounts, ListDiff, TensorScatterUpdate/Add/Sub, UnravelIndex,
Bitcast, EnsureShape, GuaranteeConst and EditDistance, with their TF1 wrappers and the
compositions `repeat`, `meshgrid`, `batch_gather`, `parallel_stack`, `space_to_batch` and
`batch_to_space`.

Kernels: tensorflux/kernels/cpu/array_ext_ops.py (Roll is in math_ext_ops.py). Each
rearrangement's gradient is its inverse rearrangement; ExtractImagePatches' gradient
scatters patch gradients back to the pixels they were read from (shapes known when the
graph is built).
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import checked_dims, constant_value, unchanged
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.sparse_tensor import SparseTensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    gather_ops,
    joining_ops,
    math_ops,
    reduction_ops,
    sequence_ops,
)

__all__ = ["space_to_depth", "depth_to_space", "space_to_batch_nd", "batch_to_space_nd",
           "space_to_batch", "batch_to_space", "extract_image_patches", "reverse_sequence",
           "repeat", "unique_with_counts", "setdiff1d", "meshgrid",
           "tensor_scatter_update", "tensor_scatter_add", "tensor_scatter_sub",
           "tensor_scatter_nd_update", "tensor_scatter_nd_add", "tensor_scatter_nd_sub",
           "tensor_scatter_nd_max", "tensor_scatter_nd_min", "fingerprint",
           "required_space_to_batch_paddings",
           "batch_gather", "unravel_index", "bitcast", "ensure_shape", "guarantee_const",
           "parallel_stack", "edit_distance"]

TensorShape = tensor_shape.TensorShape


# ---- SpaceToDepth, DepthToSpace ---------------------------------------------------------


def _depth_shape(to_depth):
    def shape_fn(op):
        dims = checked_dims(op.inputs[0], rank=4) or [None] * 4
        b = op.attrs["block_size"]
        nchw = op.attrs["data_format"] == "NCHW"
        n, h, w, c = (dims[0], dims[2], dims[3], dims[1]) if nchw else dims
        if to_depth:
            for d in (h, w):
                if d is not None and d % b:
                    raise ValueError(f"Dimension size must be evenly divisible by {b} but is "
                                     f"{d}")
            h, w, c = (None if h is None else h // b, None if w is None else w // b,
                       None if c is None else c * b * b)
        else:
            if c is not None and c % (b * b):
                raise ValueError(f"Dimension size must be evenly divisible by {b * b} but is "
                                 f"{c}")
            h, w, c = (None if h is None else h * b, None if w is None else w * b,
                       None if c is None else c // (b * b))
        return [[n, c, h, w] if nchw else [n, h, w, c]]
    return shape_fn


for _op, _to in (("SpaceToDepth", True), ("DepthToSpace", False)):
    define_op(_op, inputs=["input: T"], outputs=["output: T"],
              attrs=["T: type", "block_size: int >= 2",
                     "data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'"],
              shape_fn=_depth_shape(_to))


@gradient("SpaceToDepth")
def _space_to_depth_grad(op, grad):
    return [apply_op("DepthToSpace", input=grad, block_size=op.attrs["block_size"],
                     data_format=op.attrs["data_format"])]


@gradient("DepthToSpace")
def _depth_to_space_grad(op, grad):
    return [apply_op("SpaceToDepth", input=grad, block_size=op.attrs["block_size"],
                     data_format=op.attrs["data_format"])]


def space_to_depth(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
    """Moves block_size x block_size spatial blocks into depth (`tf.space_to_depth`)."""
    return apply_op("SpaceToDepth", input=input, block_size=block_size,
                    data_format=data_format, name=name or "SpaceToDepth")


def depth_to_space(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
    """Moves depth into block_size x block_size spatial blocks (`tf.depth_to_space`)."""
    return apply_op("DepthToSpace", input=input, block_size=block_size,
                    data_format=data_format, name=name or "DepthToSpace")


# ---- SpaceToBatchND, BatchToSpaceND -----------------------------------------------------


def _batch_space_shape(to_batch):
    def shape_fn(op):
        dims = checked_dims(op.inputs[0])
        block = constant_value(op.inputs[1])
        pads = constant_value(op.inputs[2])
        if dims is None or block is None or pads is None:
            return [None if dims is None else [None] * len(dims)]
        block = [int(b) for b in np.reshape(block, -1)]
        pads = np.reshape(pads, (-1, 2))
        m = len(block)
        prod = int(np.prod(block))
        out = list(dims)
        if to_batch:
            out[0] = None if dims[0] is None else dims[0] * prod
            for k in range(m):
                d = dims[k + 1]
                if d is not None:
                    size = d + int(pads[k].sum())
                    if size % block[k]:
                        raise ValueError(f"Dimension size must be evenly divisible by "
                                         f"{block[k]} but is {size}")
                    out[k + 1] = size // block[k]
        else:
            if dims[0] is not None and dims[0] % prod:
                raise ValueError(f"Dimension size must be evenly divisible by {prod} but is "
                                 f"{dims[0]}")
            out[0] = None if dims[0] is None else dims[0] // prod
            for k in range(m):
                d = dims[k + 1]
                out[k + 1] = None if d is None else d * block[k] - int(pads[k].sum())
        return [out]
    return shape_fn


define_op("SpaceToBatchND", inputs=["input: T", "block_shape: Tblock_shape",
                                    "paddings: Tpaddings"], outputs=["output: T"],
          attrs=["T: type", "Tblock_shape: {int32, int64} = DT_INT32",
                 "Tpaddings: {int32, int64} = DT_INT32"], shape_fn=_batch_space_shape(True))
define_op("BatchToSpaceND", inputs=["input: T", "block_shape: Tblock_shape",
                                    "crops: Tcrops"], outputs=["output: T"],
          attrs=["T: type", "Tblock_shape: {int32, int64} = DT_INT32",
                 "Tcrops: {int32, int64} = DT_INT32"], shape_fn=_batch_space_shape(False))


@gradient("SpaceToBatchND")
def _space_to_batch_grad(op, grad):
    return [apply_op("BatchToSpaceND", input=grad, block_shape=op.inputs[1],
                     crops=op.inputs[2]), None, None]


@gradient("BatchToSpaceND")
def _batch_to_space_grad(op, grad):
    return [apply_op("SpaceToBatchND", input=grad, block_shape=op.inputs[1],
                     paddings=op.inputs[2]), None, None]


def space_to_batch_nd(input, block_shape, paddings, name=None):  # noqa: A002
    """Zero-pads spatial dims, then moves blocks of them into the batch
    (`tf.space_to_batch_nd`)."""
    return apply_op("SpaceToBatchND", input=input,
                    block_shape=convert_to_tensor(block_shape, dtypes.int32),
                    paddings=convert_to_tensor(paddings, dtypes.int32),
                    name=name or "SpaceToBatchND")


def batch_to_space_nd(input, block_shape, crops, name=None):  # noqa: A002
    """The inverse of space_to_batch_nd, then crops (`tf.batch_to_space_nd`)."""
    return apply_op("BatchToSpaceND", input=input,
                    block_shape=convert_to_tensor(block_shape, dtypes.int32),
                    crops=convert_to_tensor(crops, dtypes.int32), name=name or "BatchToSpaceND")


def space_to_batch(input, paddings, block_size=None, name=None, block_shape=None):  # noqa: A002
    """space_to_batch_nd over the two spatial dims of a 4-D tensor (`tf.space_to_batch`)."""
    block_size = block_shape if block_size is None else block_size
    return space_to_batch_nd(input, [block_size, block_size], paddings, name=name)


def batch_to_space(input, crops, block_size, name=None, block_shape=None):  # noqa: A002
    """batch_to_space_nd over the two spatial dims of a 4-D tensor (`tf.batch_to_space`)."""
    block_size = block_shape if block_size is None else block_size
    return batch_to_space_nd(input, [block_size, block_size], crops, name=name)


# ---- ExtractImagePatches ----------------------------------------------------------------


def _patch_geometry(size, k, s, r, padding):
    """(output size, padding before) of one spatial dim."""
    eff = (k - 1) * r + 1
    if padding == "VALID":
        return max(0, (size - eff + s) // s), 0
    out = -(-size // s)
    return out, max(0, (out - 1) * s + eff - size) // 2


def _patches_shape(op):
    dims = checked_dims(op.inputs[0], rank=4) or [None] * 4
    k, s, r = (op.attrs[a] for a in ("ksizes", "strides", "rates"))
    out = [dims[0]]
    for i in (1, 2):
        out.append(None if dims[i] is None else
                   _patch_geometry(dims[i], k[i], s[i], r[i], op.attrs["padding"])[0])
    out.append(None if dims[3] is None else k[1] * k[2] * dims[3])
    return [out]


define_op("ExtractImagePatches", inputs=["images: T"], outputs=["patches: T"],
          attrs=["ksizes: list(int) >= 4", "strides: list(int) >= 4",
                 "rates: list(int) >= 4", "T: realnumbertype",
                 "padding: {'SAME', 'VALID'}"], shape_fn=_patches_shape)


@gradient("ExtractImagePatches")
def _extract_patches_grad(op, grad):
    # Patch the (static) pixel positions 1..H*W of one channel the same way; each patch
    # entry then names the pixel it read (0 for padding), and the gradient sums there.
    x = op.inputs[0]
    dims = x.shape.as_list()
    if any(d is None for d in dims[1:]):
        raise NotImplementedError("the gradient of ExtractImagePatches needs known height, "
                                  "width and depth")
    _, h, w, c = dims
    positions = np.arange(1, h * w + 1, dtype=np.float64).reshape(1, h, w, 1)
    attrs = {a: op.attrs[a] for a in ("ksizes", "strides", "rates", "padding")}
    idx = _patch_indices(positions, **attrs)  # [oh, ow, kh*kw]: pixel + 1, 0 = padding
    batch = array_ops.shape(grad)[0]
    g = array_ops.reshape(grad, joining_ops.stack([batch, -1, c]))  # [b, oh*ow*kh*kw, c]
    g = array_ops.transpose(g, [1, 0, 2])
    summed = sequence_ops.unsorted_segment_sum(g, idx.reshape(-1), h * w + 1)
    summed = array_ops.transpose(summed[1:], [1, 0, 2])
    return [array_ops.reshape(summed, joining_ops.stack([batch, h, w, c]))]


def _patch_indices(positions, ksizes, strides, rates, padding) -> np.ndarray:
    _, h, w, _ = positions.shape
    out = []
    for axis, size in ((1, h), (2, w)):
        n, before = _patch_geometry(size, ksizes[axis], strides[axis], rates[axis], padding)
        src = (np.arange(n)[:, None] * strides[axis] - before +
               np.arange(ksizes[axis])[None, :] * rates[axis])  # [n, k]
        out.append(src)
    rows, cols = out
    valid = ((rows >= 0) & (rows < h))[:, None, :, None] & \
        ((cols >= 0) & (cols < w))[None, :, None, :]
    flat = np.clip(rows, 0, h - 1)[:, None, :, None] * w + np.clip(cols, 0, w - 1)[None, :,
                                                                                  None, :]
    idx = np.where(valid, flat + 1, 0)  # [oh, ow, kh, kw]
    return idx.reshape(idx.shape[0], idx.shape[1], -1).astype(np.int32)


def extract_image_patches(images, ksizes=None, strides=None, rates=None, padding=None,
                          name=None, sizes=None):
    """Patches of `ksizes` (with dilation `rates`) every `strides`, flattened into depth
    (`tf.extract_image_patches`)."""
    ksizes = sizes if ksizes is None else ksizes
    return apply_op("ExtractImagePatches", images=images, ksizes=list(ksizes),
                    strides=list(strides), rates=list(rates), padding=padding,
                    name=name or "ExtractImagePatches")


# ---- ReverseSequence --------------------------------------------------------------


def _reverse_sequence_shape(op):
    dims = checked_dims(op.inputs[0])
    checked_dims(op.inputs[1], rank=1)
    if dims is not None:
        n = len(dims)
        for a in ("seq_dim", "batch_dim"):
            if not 0 <= op.attrs[a] < n:
                raise ValueError(f"{a} must be < input rank {n}, got {op.attrs[a]}")
        if op.attrs["seq_dim"] == op.attrs["batch_dim"]:
            raise ValueError(f"seq_dim must not equal batch_dim: {op.attrs['seq_dim']}")
    return [op.inputs[0].shape]


define_op("ReverseSequence", inputs=["input: T", "seq_lengths: Tlen"], outputs=["output: T"],
          attrs=["seq_dim: int", "batch_dim: int = 0", "T: type",
                 "Tlen: {int32, int64} = DT_INT64"], shape_fn=_reverse_sequence_shape)


@gradient("ReverseSequence")
def _reverse_sequence_grad(op, grad):
    return [apply_op("ReverseSequence", input=grad, seq_lengths=op.inputs[1],
                     seq_dim=op.attrs["seq_dim"], batch_dim=op.attrs["batch_dim"]), None]


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None, name=None,  # noqa: A002
                     seq_dim=None, batch_dim=None):
    """Reverses the first seq_lengths[b] entries along `seq_axis` of each batch entry b
    (`tf.reverse_sequence`)."""
    seq_axis = seq_dim if seq_axis is None else seq_axis
    batch_axis = (batch_dim if batch_dim is not None else 0) if batch_axis is None \
        else batch_axis
    x = convert_to_tensor(input, name="input")
    if x.shape.ndims is not None:
        seq_axis %= x.shape.ndims
        batch_axis %= x.shape.ndims
    lengths = convert_to_tensor(seq_lengths, name="seq_lengths")
    if lengths.dtype not in (dtypes.int32, dtypes.int64):
        lengths = math_ops.cast(lengths, dtypes.int64)
    return apply_op("ReverseSequence", input=x, seq_lengths=lengths, seq_dim=seq_axis,
                    batch_dim=batch_axis, name=name or "ReverseSequence")


def repeat(input, repeats, axis=None, name=None):  # noqa: A002
    """Repeats each element `repeats` times along `axis` (flattened when None)
    (`tf.repeat`)."""
    with graph_lib.name_scope(name, "Repeat", [input, repeats]):
        x = convert_to_tensor(input, name="input")
        if axis is None:
            x = array_ops.reshape(x, [-1])
            axis = 0
        rank = x.shape.ndims
        if rank is None and axis < 0:
            raise ValueError("repeat needs an input of known rank for a negative axis")
        axis = axis % rank if rank is not None else axis
        reps = constant_value(convert_to_tensor(repeats, name="repeats"))
        size = x.shape.as_list()[axis] if rank is not None else None
        if reps is not None and size is not None:
            reps = np.broadcast_to(np.asarray(reps, np.int64).reshape(-1), (size,))
            index = np.repeat(np.arange(size), reps).astype(np.int32)
            return gather_ops.gather(x, index, axis=axis)
        # Dynamic: per-element counts, positions by searching the cumulative counts.
        n = array_ops.shape(x)[axis]
        counts = math_ops.cast(convert_to_tensor(repeats, name="repeats"), dtypes.int32)
        counts = counts + array_ops.zeros(array_ops.expand_dims(n, 0), dtypes.int32)
        ends = sequence_ops.cumsum(counts)
        total = ends[-1]
        positions = sequence_ops.range(total)
        index = reduction_ops.reduce_sum(math_ops.cast(
            array_ops.expand_dims(positions, 1) >= array_ops.expand_dims(ends, 0),
            dtypes.int32), axis=1)
        return gather_ops.gather(x, index, axis=axis)


# ---- UniqueWithCounts, ListDiff, meshgrid -----------------------------------------------


define_op("UniqueWithCounts", inputs=["x: T"], outputs=["y: T", "idx: out_idx",
                                                      "count: out_idx"],
          attrs=["T: type", "out_idx: {int32, int64} = DT_INT32"],
          shape_fn=lambda op: [[None], op.inputs[0].shape, [None]])
define_op("ListDiff", inputs=["x: T", "y: T"], outputs=["out: T", "idx: out_idx"],
          attrs=["T: type", "out_idx: {int32, int64} = DT_INT32"],
          shape_fn=lambda op: [[None], [None]])
not_differentiable("UniqueWithCounts")
not_differentiable("ListDiff")


def unique_with_counts(x, out_idx=dtypes.int32, name=None):
    """unique, plus how often each distinct value occurs (`tf.unique_with_counts`)."""
    return apply_op("UniqueWithCounts", x=x, out_idx=dtypes.as_dtype(out_idx),
                    name=name or "UniqueWithCounts")


def setdiff1d(x, y, index_dtype=dtypes.int32, name=None):
    """The values of 1-D `x` not in `y`, in order, and their positions in x
    (`tf.setdiff1d`)."""
    x = convert_to_tensor(x, name="x")
    return apply_op("ListDiff", x=x, y=convert_to_tensor(y, dtype=x.dtype, name="y"),
                    out_idx=dtypes.as_dtype(index_dtype), name=name or "ListDiff")


def meshgrid(*args, **kwargs):
    """N-D coordinate grids from 1-D coordinate vectors (`tf.meshgrid`); `indexing` 'xy'
    (default: the first two outputs' axes swapped) or 'ij'."""
    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", "meshgrid")
    if kwargs:
        raise TypeError(f"'{list(kwargs)[0]}' is an invalid keyword argument for this "
                        "function")
    if indexing not in ("xy", "ij"):
        raise ValueError("indexing parameter must be either 'xy' or 'ij'")
    with graph_lib.name_scope(name, "meshgrid", list(args)):
        vectors = [array_ops.reshape(convert_to_tensor(a), [-1]) for a in args]
        n = len(vectors)
        if indexing == "xy" and n > 1:
            vectors[0], vectors[1] = vectors[1], vectors[0]
        sizes = [array_ops.size(v) for v in vectors]
        outs = []
        for k, v in enumerate(vectors):
            shape = [1] * n
            shape[k] = -1
            out = array_ops.reshape(v, shape)
            out = out * array_ops.ones(joining_ops.stack(sizes), v.dtype) if n > 1 else out
            outs.append(out)
        if indexing == "xy" and n > 1:
            outs[0], outs[1] = outs[1], outs[0]
        return outs


# ---- TensorScatterUpdate / Add / Sub, batch_gather --------------------------------------


def _tensor_scatter_shape(op):
    checked_dims(op.inputs[1], at_least=1)
    return [op.inputs[0].shape]


for _op in ("TensorScatterUpdate", "TensorScatterAdd", "TensorScatterSub", "TensorScatterMax",
            "TensorScatterMin"):
    define_op(_op, inputs=["tensor: T", "indices: Tindices", "updates: T"],
              outputs=["output: T"],
              attrs=["T: type", "Tindices: {int16, int32, int64, uint16}",
                     "bad_indices_policy: string = ''"], shape_fn=_tensor_scatter_shape)


@gradient("TensorScatterUpdate")
def _tensor_scatter_update_grad(op, grad):
    indices = op.inputs[1]
    updates_grad = gather_ops.gather_nd(grad, indices)
    tensor_grad = apply_op("TensorScatterUpdate", tensor=grad, indices=indices,
                           updates=array_ops.zeros_like(updates_grad))
    return [tensor_grad, None, updates_grad]


@gradient("TensorScatterAdd")
def _tensor_scatter_add_grad(op, grad):
    return [grad, None, gather_ops.gather_nd(grad, op.inputs[1])]


@gradient("TensorScatterSub")
def _tensor_scatter_sub_grad(op, grad):
    return [grad, None, -gather_ops.gather_nd(grad, op.inputs[1])]


@gradient("TensorScatterMax")
@gradient("TensorScatterMin")
def _tensor_scatter_min_max_grad(op, grad):
    # The gradient goes to whichever of the tensor's element and the updates scattered there
    # equals the result, split evenly between ties.
    x, indices, y = op.inputs
    output = op.outputs[0]
    x_ind = math_ops.cast(comparison_ops.equal(x, output), grad.dtype)
    y_ind = math_ops.cast(comparison_ops.equal(y, gather_ops.gather_nd(output, indices)),
                          grad.dtype)
    ys_ind = gather_ops.scatter_nd(indices, y_ind,
                                   array_ops.shape(x, out_type=indices.dtype))
    total = x_ind + ys_ind
    return [grad * x_ind / total, None, gather_ops.gather_nd(grad / total, indices) * y_ind]


def _tensor_scatter(op_type):
    def fn(tensor, indices, updates, name=None):
        tensor = convert_to_tensor(tensor, name="tensor")
        return apply_op(op_type, tensor=tensor, indices=convert_to_tensor(indices),
                        updates=convert_to_tensor(updates, dtype=tensor.dtype),
                        name=name or op_type)
    fn.__name__ = "tensor_scatter_" + op_type[len("TensorScatter"):].lower()
    fn.__doc__ = (f"A copy of `tensor` with `updates` scattered in at `indices` by "
                  f"{op_type} (`tf.{fn.__name__}`).")
    return fn


tensor_scatter_update = tensor_scatter_nd_update = _tensor_scatter("TensorScatterUpdate")
tensor_scatter_add = tensor_scatter_nd_add = _tensor_scatter("TensorScatterAdd")
tensor_scatter_sub = tensor_scatter_nd_sub = _tensor_scatter("TensorScatterSub")
tensor_scatter_nd_max = _tensor_scatter("TensorScatterMax")
tensor_scatter_nd_min = _tensor_scatter("TensorScatterMin")
tensor_scatter_nd_max.__name__, tensor_scatter_nd_min.__name__ = ("tensor_scatter_nd_max",
                                                                  "tensor_scatter_nd_min")


def batch_gather(params, indices, name=None):
    """Gathers per batch entry along the first non-batch axis of `params`
    (`tf.batch_gather`)."""
    with graph_lib.name_scope(name, "BatchGather", [params, indices]):
        indices = convert_to_tensor(indices, name="indices")
        params = convert_to_tensor(params, name="params")
        if indices.shape.ndims is None:
            raise ValueError("batch_gather does not allow indices with unknown shape.")
        batch = indices.shape.ndims - 1
        return gather_ops.gather(params, indices, axis=batch, batch_dims=batch)


# ---- UnravelIndex, Bitcast, EnsureShape, GuaranteeConst, parallel_stack -----------------


def _unravel_shape(op):
    dims = checked_dims(op.inputs[1], rank=1)
    idx = checked_dims(op.inputs[0])
    n = dims[0] if dims else None
    if idx is None:
        return [None]
    return [[n] + idx] if idx else [[n]]


define_op("UnravelIndex", inputs=["indices: Tidx", "dims: Tidx"], outputs=["output: Tidx"],
          attrs=["Tidx: {int32, int64} = DT_INT32"], shape_fn=_unravel_shape)
not_differentiable("UnravelIndex")


def unravel_index(indices, dims, name=None):
    """Flat indices to coordinates in an array of shape `dims` (`tf.unravel_index`)."""
    indices = convert_to_tensor(indices, name="indices")
    return apply_op("UnravelIndex", indices=indices,
                    dims=convert_to_tensor(dims, dtype=indices.dtype, name="dims"),
                    name=name or "UnravelIndex")


def _bitcast_shape(op):
    dims = checked_dims(op.inputs[0])
    src, dst = op.inputs[0].dtype.size, op.attrs["type"].size
    if dims is None:
        return [None]
    if src == dst:
        return [dims]
    if src > dst:
        return [dims + [src // dst]]
    if dims and dims[-1] is not None and dims[-1] != dst // src:
        raise ValueError(f"Cannot bitcast due to shape. {dims[-1]} does not match "
                         f"{dst // src}")
    return [dims[:-1]]


_BITCAST_T = ("{bfloat16, half, float, double, int64, int32, uint8, uint16, uint32, uint64, "
              "int8, int16, complex64, complex128, qint8, quint8, qint16, quint16, qint32}")
define_op("Bitcast", inputs=["input: T"], outputs=["output: type"],
          attrs=[f"T: {_BITCAST_T}", f"type: {_BITCAST_T}"], shape_fn=_bitcast_shape)
not_differentiable("Bitcast")


def bitcast(input, type, name=None):  # noqa: A002
    """Reinterprets the bytes of `input` as `type` (`tf.bitcast`)."""
    return apply_op("Bitcast", input=input, type=dtypes.as_dtype(type),
                    name=name or "Bitcast")


def _ensure_shape_shape(op):
    return [op.inputs[0].shape.merge_with(op.attrs["shape"])]


define_op("EnsureShape", inputs=["input: T"], outputs=["output: T"],
          attrs=["shape: shape", "T: type"], shape_fn=_ensure_shape_shape)
define_op("GuaranteeConst", inputs=["input: T"], outputs=["output: T"], attrs=["T: type"],
          shape_fn=unchanged)
not_differentiable("GuaranteeConst")


@gradient("EnsureShape")
def _ensure_shape_grad(op, grad):
    return [grad]


def ensure_shape(x, shape, name=None):
    """x, checked at run time to be compatible with `shape` (`tf.ensure_shape`)."""
    return apply_op("EnsureShape", input=x, shape=TensorShape(shape),
                    name=name or "EnsureShape")


def guarantee_const(input, name=None):  # noqa: A002
    """Identity, promising the value is constant (`tf.guarantee_const`)."""
    return apply_op("GuaranteeConst", input=input, name=name or "GuaranteeConst")


def parallel_stack(values, name="parallel_stack"):
    """stack for inputs of fully known, equal shapes (`tf.parallel_stack`)."""
    with graph_lib.name_scope(name):
        values = [convert_to_tensor(v) for v in values]
        shape = values[0].shape
        for v in values[1:]:
            shape = shape.merge_with(v.shape)
        if not shape.is_fully_defined():
            raise ValueError(f"Cannot infer the output shape of parallel_stack: {shape}")
        return joining_ops.stack(values)


# ---- EditDistance -----------------------------------------------------------------------


def _edit_distance_shape(op):
    hyp, truth = constant_value(op.inputs[2]), constant_value(op.inputs[5])
    if hyp is None or truth is None:
        n = op.inputs[2].shape.as_list()[0] if op.inputs[2].shape.ndims == 1 else None
        return [None if n is None else [None] * (n - 1)]
    return [[int(max(a, b)) for a, b in zip(hyp[:-1], truth[:-1], strict=True)]]


define_op("EditDistance",
          inputs=["hypothesis_indices: int64", "hypothesis_values: T",
                  "hypothesis_shape: int64", "truth_indices: int64", "truth_values: T",
                  "truth_shape: int64"], outputs=["output: float"],
          attrs=["normalize: bool = true", "T: type"], shape_fn=_edit_distance_shape)
not_differentiable("EditDistance")


def edit_distance(hypothesis, truth, normalize=True, name="edit_distance"):
    """Levenshtein distances between the sequences (last dimension) of two SparseTensors,
    divided by the truth's lengths when `normalize` (`tf.edit_distance`).

    Raises:
      TypeError: an input is not a SparseTensor.
    """
    for what, sp in (("Hypothesis", hypothesis), ("Truth", truth)):
        if not isinstance(sp, SparseTensor) and not hasattr(sp, "_is_sparse_tensor"):
            raise TypeError(f"{what} must be a SparseTensor.")
    return apply_op("EditDistance", hypothesis_indices=hypothesis.indices,
                    hypothesis_values=hypothesis.values,
                    hypothesis_shape=hypothesis.dense_shape, truth_indices=truth.indices,
                    truth_values=truth.values, truth_shape=truth.dense_shape,
                    normalize=normalize, name=name)


# ---- Fingerprint, required_space_to_batch_paddings --------------------------------------


def _fingerprint_shape(op):
    dims = checked_dims(op.inputs[0], at_least=1)
    checked_dims(op.inputs[1], rank=0)
    return [[None if dims is None else dims[0], 8]]


define_op("Fingerprint", inputs=["data: T", "method: string"], outputs=["fingerprint: uint8"],
          attrs=["T: type"], shape_fn=_fingerprint_shape)
not_differentiable("Fingerprint")


def fingerprint(data, method="farmhash64", name=None):
    """An 8-byte FarmHash fingerprint of each row of `data` (`tf.fingerprint`)."""
    return apply_op("Fingerprint", data=data,
                    method=convert_to_tensor(method, dtype=dtypes.string, name="method"),
                    name=name or "Fingerprint")


def required_space_to_batch_paddings(input_shape, block_shape, base_paddings=None,
                                     name=None):
    """(paddings, crops) making input_shape + base_paddings divisible by block_shape
    (`tf.required_space_to_batch_paddings`)."""
    with graph_lib.name_scope(name, "required_space_to_batch_paddings",
                              [input_shape, block_shape]):
        input_shape = convert_to_tensor(input_shape, dtypes.int32, name="input_shape")
        block_shape = convert_to_tensor(block_shape, dtypes.int32, name="block_shape")
        if base_paddings is None:
            base_paddings = array_ops.zeros(joining_ops.stack([array_ops.size(block_shape),
                                                               2]), dtypes.int32)
        base_paddings = convert_to_tensor(base_paddings, dtypes.int32, name="base_paddings")
        start, end = base_paddings[:, 0], base_paddings[:, 1]
        full = input_shape + start + end
        extra = math_ops.floormod(block_shape - math_ops.floormod(full, block_shape),
                                  block_shape)
        paddings = joining_ops.stack([start, end + extra], axis=1, name="paddings")
        crops = joining_ops.stack([array_ops.zeros_like(extra), extra], axis=1, name="crops")
        return paddings, crops
