"""Joining, splitting, tiling, padding, broadcasting and reversing: ConcatV2, Split, SplitV,
Pack (`tf.stack`, and the auto-packing of lists holding tensors), Unpack, Tile, Pad, PadV2,
MirrorPad, BroadcastTo, BroadcastArgs, ReverseV2.

Part of the array-op family: shared helpers are in array_ops.py, which re-exports these
public names. Kernels are in tensorflux/kernels/cpu/joining_ops.py.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import (
    constant_evaluator,
    constant_value,
    constant_value_as_shape,
    merge_dims,
    merge_shapes,
    scalar_value,
    shape_evaluator,
    static_dims,
    static_shape,
    with_rank,
    with_rank_at_least,
)
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import (
    convert_to_tensor,
    register_tensor_conversion_function,
)
from tensorflux.ops import constant_op
from tensorflux.ops.array_ops import (
    _INDEX_TYPES,
    _MAX_CONSTANT_ELEMENTS,
    TensorShape,
    _fill_missing_grads,
    _partial_scalar,
    _reduce_sum,
    identity,
    rank,
    reshape,
    reshape_like,
    shape,
    shape_n,
    shape_tensor,
    size,
    transpose,
)

__all__ = ["concat", "split", "stack", "unstack", "tile", "pad", "broadcast_to",
           "broadcast_static_shape", "broadcast_dynamic_shape", "reverse", "reverse_v2"]


# ------------------------------------------------------------------------------------------
# ConcatV2, ConcatOffset


def _concat_shape(op):
    return [concat_dims(op.inputs[:-1], op.inputs[-1])]


def concat_dims(values, axis_t):
    """The dims (None: unknown rank) of `values` concatenated along the scalar `axis_t`, as
    TF's ConcatShape infers them (ConcatV2, QuantizedConcat).

    Raises:
      ValueError: ranks that differ or are too small for the axis, dimensions off the axis
        that differ.
    """
    with_rank(static_dims(axis_t), 0)
    shapes = [static_dims(t) for t in values]
    axis = scalar_value(axis_t)
    rank_known = next((s for s in shapes if s is not None), None)
    if axis is None:
        if rank_known is None:
            return None
        for s in shapes:
            with_rank(s, len(rank_known))
        return [None] * len(rank_known)
    if rank_known is None:
        return None
    n = len(rank_known)
    if axis < 0:
        with_rank_at_least(rank_known, -axis)
        axis += n
    else:
        with_rank_at_least(rank_known, axis + 1)
    prefix = suffix = None
    total: int | None = 0
    for s in shapes:
        s = with_rank(s, n)
        d = s[axis]
        total = None if total is None or d is None else total + d
        # TF merges the dims before and after the axis separately (and words errors so).
        prefix = s[:axis] if prefix is None else merge_dims(prefix, s[:axis])
        suffix = s[axis + 1:] if suffix is None else merge_dims(suffix, s[axis + 1:])
    return prefix + [total] + suffix


define_op("ConcatV2", inputs=["values: N * T", "axis: Tidx"], outputs=["output: T"],
          attrs=["N: int >= 2", "T: type", f"Tidx: {_INDEX_TYPES} = DT_INT32"],
          shape_fn=_concat_shape)


def concat(values, axis, name: str = "concat"):
    """Concatenates tensors along dimension `axis` (`tf.concat`).

    A single value is returned through an Identity, as TF does.

    Raises:
      ValueError: the static shapes differ off the concatenation axis, or `axis` is out
        of range.
    """
    if not isinstance(values, (list, tuple)):
        values = [values]
    if len(values) == 1:
        with graph_lib.name_scope(name) as scope:
            a = convert_to_tensor(axis, name="concat_dim", dtype=dtypes.int32)
            a.shape.assert_has_rank(0)
            return identity(values[0], name=scope)
    return apply_op("ConcatV2", values=list(values), axis=axis, name=name)


@constant_evaluator("ConcatV2")
def _concat_const(op):
    vals = [constant_value(t) for t in op.inputs[:-1]]
    axis = scalar_value(op.inputs[-1])
    if axis is None or any(v is None for v in vals):
        return None
    return np.concatenate(vals, axis=axis)


@shape_evaluator("ConcatV2")
def _concat_partial_shape(t):
    if scalar_value(t.op.inputs[-1]) not in (0, -1):
        return None
    out = TensorShape([])
    for v in t.op.inputs[:-1]:
        out = out.concatenate(constant_value_as_shape(v))
    return out


def _sizes_along(values, axis_t: Tensor):
    """For the ConcatV2 gradient: (axis, sizes) with static ints where possible, else
    (axis tensor, sizes tensor)."""
    axis = scalar_value(axis_t)
    shapes = [static_dims(t) for t in values]
    if axis is not None and all(s is not None for s in shapes):
        n = len(shapes[0])
        axis = axis % n
        sizes = [s[axis] for s in shapes]
        if all(d is not None for d in sizes):
            return axis, np.array(sizes, dtype=np.int32)
        from tensorflux.ops import slicing_ops  # slicing_ops imports this module

        dims = [d if d is not None else slicing_ops.strided_slice(
            shape(t), [axis], [axis + 1], [1], shrink_axis_mask=1) for d, t in
            zip(sizes, values, strict=True)]
        return axis, stack(dims)
    r = rank(values[0])
    axis_nn = apply_op("FloorMod", x=axis_t, y=apply_op("Cast", x=r, DstT=axis_t.dtype),
                       name="mod")
    shapes_t = shape_n(values)
    from tensorflux.ops import gather_ops  # gather_ops imports this module

    sizes = stack([gather_ops.gather(s, axis_nn) for s in shapes_t])
    return axis_nn, sizes


@gradient("ConcatV2")
def _concat_grad(op, grad):
    values, axis_t = op.inputs[:-1], op.inputs[-1]
    if hasattr(grad, "_is_indexed_slices"):
        from tensorflux.ops import gather_ops  # gather_ops imports this module

        grad = gather_ops.indexed_slices_to_tensor(grad)
    axis, sizes = _sizes_along(values, axis_t)
    grads = split(grad, sizes, axis=axis, num=len(values))
    return list(grads) + [None]


define_op("ConcatOffset", inputs=["concat_dim: int32", "shape: N * shape_type"],
          outputs=["offset: N * shape_type"],
          attrs=["N: int >= 2", f"shape_type: {_INDEX_TYPES} = DT_INT32"],
          shape_fn=lambda op: [t.shape for t in op.inputs[1:]])
not_differentiable("ConcatOffset")


# ------------------------------------------------------------------------------------------
# Split, SplitV


def _split_shape(op):
    num = op.attrs["num_split"]
    in_dims = static_dims(op.inputs[1])
    axis = scalar_value(op.inputs[0])
    if in_dims is None:
        return [None] * num
    if axis is None:
        return [[None] * len(in_dims)] * num
    n = len(in_dims)
    if not -n <= axis < n:
        raise ValueError(f"Dimension must be in range [{-n}, {n}), but is {axis}")
    axis %= n
    d = in_dims[axis]
    out = list(in_dims)
    if d is not None:
        if d % num:
            raise ValueError(f"Dimension size must be evenly divisible by {num} but is {d}\n\t"
                             "Number of ways to split should evenly divide the split dimension")
        out[axis] = d // num
    return [out] * num


define_op("Split", inputs=["split_dim: int32", "value: T"], outputs=["output: num_split * T"],
          attrs=["num_split: int >= 1", "T: type"], shape_fn=_split_shape)


def _split_v_shape(op):
    num = op.attrs["num_split"]
    in_dims = static_dims(op.inputs[0])
    sizes_dims = with_rank(static_dims(op.inputs[1]), 1)
    if sizes_dims[0] is not None and sizes_dims[0] != num:
        raise ValueError(f"Dimension 0 in both shapes must be equal, but are {sizes_dims[0]} "
                         f"and {num}")
    axis = scalar_value(op.inputs[2])
    if in_dims is None:
        return [None] * num
    if axis is None:
        return [[None] * len(in_dims)] * num
    n = len(in_dims)
    if not -n <= axis < n:
        raise ValueError(f"Dimension must be in range [{-n}, {n}), but is {axis}")
    axis %= n
    sizes = constant_value(op.inputs[1])
    if sizes is None:
        return [in_dims[:axis] + [None] + in_dims[axis + 1:]] * num
    sizes = [int(s) for s in np.reshape(sizes, -1)]
    d = in_dims[axis]
    unknown = [i for i, s in enumerate(sizes) if s == -1]
    if len(unknown) > 1:
        raise ValueError("size_splits can only have one -1")
    known_total = sum(s for s in sizes if s != -1)
    if d is not None:
        if (not unknown and known_total != d) or (unknown and known_total > d):
            raise ValueError(f"can't split axis of size {d} into pieces of size "
                             f"[{','.join(map(str, sizes))}]")
        if unknown:
            sizes[unknown[0]] = d - known_total
    return [in_dims[:axis] + [None if s == -1 else s] + in_dims[axis + 1:] for s in sizes]


define_op("SplitV", inputs=["value: T", "size_splits: Tlen", "split_dim: int32"],
          outputs=["output: num_split * T"],
          attrs=["num_split: int >= 1", "T: type", "Tlen: {int8, int32, int64} = DT_INT64"],
          shape_fn=_split_v_shape)


def split(value, num_or_size_splits, axis=0, num=None, name: str = "split"):
    """Splits `value` along `axis` (`tf.split`): into `num_or_size_splits` equal parts if it
    is an int, else into parts of the listed sizes (one may be -1).

    Raises:
      ValueError: the number of parts cannot be inferred, or sizes don't fit.
    """
    if isinstance(num_or_size_splits, tensor_shape.Dimension) and \
            num_or_size_splits.value is not None:  # `tf.split(h, x.shape[1], 1)`, as TF1 takes it
        num_or_size_splits = num_or_size_splits.value
    if isinstance(num_or_size_splits, (int, np.integer)) and \
            not isinstance(num_or_size_splits, bool):
        return apply_op("Split", split_dim=axis, value=value, num_split=int(num_or_size_splits),
                        name=name)
    with graph_lib.name_scope(name, "split", [value, num_or_size_splits]) as scope:
        sizes = convert_to_tensor(num_or_size_splits, dtype=None, name="Const") \
            if not isinstance(num_or_size_splits, Tensor) else num_or_size_splits
        if num is None:
            sdims = sizes.shape
            if sdims.ndims == 1 and sdims.as_list()[0] is not None:
                num = sdims.as_list()[0]
            else:
                raise ValueError(f"Cannot infer argument `num` from shape {sdims}")
        return apply_op("SplitV", value=value, size_splits=sizes, split_dim=axis,
                        num_split=int(num), name=scope)


@gradient("Split")
def _split_grad(op, *grads):
    return [None, concat(_fill_missing_grads(op, grads), op.inputs[0])]


@gradient("SplitV")
def _split_v_grad(op, *grads):
    return [concat(_fill_missing_grads(op, grads), op.inputs[2]), None, None]


def _split_const(op, index):
    if op.type == "Split":
        value, axis, sizes = constant_value(op.inputs[1]), scalar_value(op.inputs[0]), None
    else:
        value, axis = constant_value(op.inputs[0]), scalar_value(op.inputs[2])
        sizes = [int(d) for d in op.outputs[index].shape.as_list()] \
            if op.outputs[index].shape.is_fully_defined() else None
        if sizes is None:
            return None
    if value is None or axis is None or not op.outputs[index].shape.is_fully_defined():
        return None
    axis %= value.ndim
    width = op.outputs[index].shape.as_list()[axis]
    start = sum(t.shape.as_list()[axis] for t in op.outputs[:index])
    return np.take(value, np.arange(start, start + width), axis=axis)


_split_const._takes_index = True
constant_evaluator("Split", "SplitV")(_split_const)


# ------------------------------------------------------------------------------------------
# Pack, Unpack


def _pack_shape(op):
    axis = op.attrs["axis"]
    merged = None
    for i, t in enumerate(op.inputs):
        d = static_dims(t)
        try:
            merged = merge_shapes(merged, d)
        except ValueError as e:
            raise ValueError(f"{e}\n\tFrom merging shape {i - 1 if i else 0} with other "
                             "shapes.") from None
    if merged is None:
        return [None]
    n = len(merged) + 1
    if not -n <= axis < n:
        raise ValueError(f"Invalid axis: {axis}; must be in [{-n},{n})")
    axis %= n
    return [merged[:axis] + [len(op.inputs)] + merged[axis:]]


define_op("Pack", inputs=["values: N * T"], outputs=["output: T"],
          attrs=["N: int >= 1", "T: type", "axis: int = 0"], shape_fn=_pack_shape)


def stack(values, axis: int = 0, name: str = "stack"):
    """Stacks rank-R tensors into one rank-(R+1) tensor along `axis` (`tf.stack`).

    Raises:
      ValueError: `axis` is out of range, or the static shapes differ.
    """
    if axis == 0:
        try:
            return convert_to_tensor(values, name=name)
        except (TypeError, ValueError, NotImplementedError):
            pass
    first = convert_to_tensor(values[0], name=name)
    if first.shape.ndims is not None:
        n = first.shape.ndims + 1
        if axis < -n or axis >= n:
            raise ValueError(f"Argument `axis` = {axis} not in range [{-n}, {n})")
    return apply_op("Pack", values=list(values), axis=axis, name=name)


@gradient("Pack")
def _pack_grad(op, grad):
    return unstack(grad, num=op.attrs["N"], axis=op.attrs["axis"])


@constant_evaluator("Pack")
def _pack_const(op):
    vals = [constant_value(t) for t in op.inputs]
    if any(v is None for v in vals):
        return None
    return np.stack(vals, axis=op.attrs["axis"])


@shape_evaluator("Pack")
def _pack_partial_shape(t):
    if any(x.shape.ndims not in (0, None) for x in t.op.inputs):
        return None
    return TensorShape([_partial_scalar(x) for x in t.op.inputs])


def _unpack_shape(op):
    num, axis = op.attrs["num"], op.attrs["axis"]
    dims = static_dims(op.inputs[0])
    if dims is None:
        return [None] * num
    n = len(dims)
    if not -n <= axis < n:
        raise ValueError(f"Invalid axis: {axis}; must be in [{-n},{n})")
    axis %= n
    if dims[axis] is not None and dims[axis] != num:
        raise ValueError(f"Dimension must be {num} but is {dims[axis]}")
    return [dims[:axis] + dims[axis + 1:]] * num


define_op("Unpack", inputs=["value: T"], outputs=["output: num * T"],
          attrs=["num: int >= 0", "T: type", "axis: int = 0"], shape_fn=_unpack_shape)


def unstack(value, num: int | None = None, axis: int = 0, name: str = "unstack"):
    """Splits `value` along `axis` into a list of rank-(R-1) tensors (`tf.unstack`).

    Raises:
      ValueError: `axis` out of range, or `num` not given and not known statically.
    """
    with graph_lib.name_scope(name, "unstack", [value]) as scope:
        value = convert_to_tensor(value)
        dims = static_dims(value)
        if dims is not None:
            n = len(dims)
            if axis < -n or axis >= n:
                raise ValueError(f"Argument `axis` = {axis} not in range [{-n}, {n})")
            if num is None:
                num = dims[axis]
        if num is None:
            raise ValueError(f"Cannot infer argument `num` from shape {value.shape}")
        return apply_op("Unpack", value=value, num=int(num), axis=axis, name=scope)


@gradient("Unpack")
def _unpack_grad(op, *grads):
    return [stack(_fill_missing_grads(op, grads), axis=op.attrs["axis"])]


def _unpack_const(op, index):
    v = constant_value(op.inputs[0])
    return None if v is None else np.take(v, index, axis=op.attrs["axis"])


_unpack_const._takes_index = True
constant_evaluator("Unpack")(_unpack_const)


# Auto-packing: `tf.convert_to_tensor([t1, 2.0, [t2, t3]])` with tensors inside is a Pack of
# them, as in TF1 (constants are made for the Python leaves).

_PLAIN_LEAVES = (int, float, complex, bool, str, bytes, np.generic, np.ndarray, type(None))


def _tensor_like(x) -> bool:
    return isinstance(x, Tensor) or (hasattr(x, "_as_graph_element") and hasattr(x, "dtype"))


def _first_tensor_dtype(v):
    """The dtype of the first tensor in nested lists `v`, or None if there is none."""
    for x in v:
        if isinstance(x, (list, tuple)):
            dt = _first_tensor_dtype(x)
            if dt is not None:
                return dt
        elif not isinstance(x, _PLAIN_LEAVES) and _tensor_like(x):
            return x.dtype.base_dtype
    return None


def _autopack(v, dtype, name: str, cast: bool) -> Tensor | list:
    """Packs nested lists holding tensors (TF's `_autopacking_helper`); tensors of another
    dtype are cast when `cast` (an explicitly requested dtype), else a TypeError."""
    must_pack = False
    items = []
    with graph_lib.name_scope(name) as scope:
        for i, x in enumerate(v):
            if isinstance(x, (list, tuple)):
                x = _autopack(x, dtype, str(i), cast)
                must_pack |= isinstance(x, Tensor)
            elif not isinstance(x, _PLAIN_LEAVES) and _tensor_like(x):
                x = convert_to_tensor(x)
                if x.dtype.base_dtype != dtype:
                    if not cast:
                        raise TypeError(f"Cannot convert a list containing a tensor of dtype "
                                        f"{x.dtype.name} to {dtype.name} (Tensor is: {x!r})")
                    x = apply_op("Cast", x=x, DstT=dtype, name="Cast")
                must_pack = True
            items.append(x)
        if not must_pack:
            return items
        tensors = [x if isinstance(x, Tensor) else
                   constant_op.constant(x, dtype=dtype, name=str(i))
                   for i, x in enumerate(items)]
        return apply_op("Pack", values=tensors, axis=0, name=scope)


def _autopacking_conversion(v, dtype=None, name=None, as_ref=False):
    if as_ref:
        return NotImplemented
    inferred = _first_tensor_dtype(v)
    if inferred is None:
        return NotImplemented
    dtype = dtypes.as_dtype(dtype).base_dtype if dtype is not None else inferred
    return _autopack(v, dtype, name or "packed", cast=dtype != inferred)


register_tensor_conversion_function((list, tuple), _autopacking_conversion, priority=99)


# ------------------------------------------------------------------------------------------
# Tile


def _tile_shape(op):
    mult_dims = with_rank(static_dims(op.inputs[1]), 1)
    in_dims = static_dims(op.inputs[0])
    n = mult_dims[0]
    if in_dims is None and n is None:
        return [None]
    if n is not None:
        if in_dims is not None and len(in_dims) != n:
            raise ValueError(f"Shape must be rank {len(in_dims)} but is rank {n}")
        in_dims = with_rank(in_dims, n)
    mult = constant_value_as_shape(op.inputs[1])
    mult = mult.as_list() if mult.ndims is not None else [None] * len(in_dims)
    return [[0 if m == 0 else (None if d is None or m is None else d * m)
             for d, m in zip(in_dims, mult, strict=True)]]


define_op("Tile", inputs=["input: T", "multiples: Tmultiples"], outputs=["output: T"],
          attrs=["T: type", f"Tmultiples: {_INDEX_TYPES} = DT_INT32"], shape_fn=_tile_shape)


def tile(input, multiples, name: str | None = None):  # noqa: A002
    """Repeats `input` `multiples[i]` times along dimension i (`tf.tile`)."""
    return apply_op("Tile", input=input, multiples=multiples, name=name or "Tile")


@gradient("Tile")
def _tile_grad(op, grad):
    x, multiples = op.inputs
    in_dims = static_shape(x)
    mult = constant_value(multiples)
    if hasattr(grad, "_is_indexed_slices"):
        from tensorflux.ops import gather_ops  # gather_ops imports this module

        grad = gather_ops.indexed_slices_to_tensor(grad)
    if in_dims is not None and mult is not None:
        # Interleave multiples and input dims: [m0, d0, m1, d1, ...]; sum the m axes.
        split_shape = np.stack([np.reshape(mult, -1), in_dims], axis=1).reshape(-1)
        axes = np.arange(0, split_shape.size, 2, dtype=np.int32)
        split_shape = split_shape.astype(multiples.dtype.as_numpy_dtype)
    else:
        in_shape = shape(x, out_type=multiples.dtype)
        split_shape = reshape(transpose(stack([multiples, in_shape])), [-1])
        axes = apply_op("Range", start=0, limit=size(split_shape), delta=2, name="Range")
    out = _reduce_sum(reshape(grad, split_shape), axes)
    out.set_shape(x.shape)
    return [out, None]


@constant_evaluator("Tile")
def _tile_const(op):
    x, m = constant_value(op.inputs[0]), constant_value(op.inputs[1])
    if x is None or m is None or x.size * int(np.prod(m)) > _MAX_CONSTANT_ELEMENTS:
        return None
    return np.tile(x, m)


# ------------------------------------------------------------------------------------------
# Pad, PadV2, MirrorPad, MirrorPadGrad


def _pad_shape(op):
    in_dims = static_dims(op.inputs[0])
    pad_dims = static_dims(op.inputs[1])
    n = None if in_dims is None else len(in_dims)
    if pad_dims is not None:
        pad_dims = with_rank(pad_dims, 2)
        if pad_dims[1] is not None and pad_dims[1] != 2:
            raise ValueError(f"Dimension 1 in both shapes must be equal, but are "
                             f"{pad_dims[1]} and 2")
        if n is not None and pad_dims[0] is not None and pad_dims[0] != n:
            raise ValueError(f"Shape must be rank {pad_dims[0]} but is rank {n}")
        if n is None:
            n = pad_dims[0]
    if len(op.inputs) == 3:
        with_rank(static_dims(op.inputs[2]), 0)
    if n is None:
        return [None]
    if in_dims is None:
        in_dims = [None] * n
    pads = constant_value(op.inputs[1])
    if pads is None:
        return [[None] * n]
    pads = np.reshape(pads, (-1, 2))
    if np.any(pads < 0):
        raise ValueError("Paddings must be non-negative")
    return [[None if d is None else d + int(p[0]) + int(p[1]) for d, p in
             zip(in_dims, pads, strict=True)]]


_PAD_ATTRS = ["T: type", f"Tpaddings: {_INDEX_TYPES} = DT_INT32"]
define_op("Pad", inputs=["input: T", "paddings: Tpaddings"], outputs=["output: T"],
          attrs=_PAD_ATTRS, shape_fn=_pad_shape)
define_op("PadV2", inputs=["input: T", "paddings: Tpaddings", "constant_values: T"],
          outputs=["output: T"], attrs=_PAD_ATTRS, shape_fn=_pad_shape)
define_op("MirrorPad", inputs=["input: T", "paddings: Tpaddings"], outputs=["output: T"],
          attrs=_PAD_ATTRS + ["mode: {'REFLECT', 'SYMMETRIC'}"], shape_fn=_pad_shape)


def _mirror_pad_grad_shape(op):
    in_dims = static_dims(op.inputs[0])
    pads = constant_value(op.inputs[1])
    if in_dims is None:
        return [None]
    if pads is None:
        return [[None] * len(in_dims)]
    pads = np.reshape(pads, (-1, 2))
    return [[None if d is None else d - int(p[0]) - int(p[1])
             for d, p in zip(in_dims, pads, strict=True)]]


define_op("MirrorPadGrad", inputs=["input: T", "paddings: Tpaddings"], outputs=["output: T"],
          attrs=_PAD_ATTRS + ["mode: {'REFLECT', 'SYMMETRIC'}"],
          shape_fn=_mirror_pad_grad_shape)


def pad(tensor, paddings, mode: str = "CONSTANT", name: str | None = None,
        constant_values=0):
    """Pads `tensor` (`tf.pad`): `paddings[i] = [before, after]` for dimension i.

    Args:
      tensor: a tensor.
      paddings: an int tensor of shape [rank, 2].
      mode: "CONSTANT" (Pad, or PadV2 for a nonzero `constant_values`), "REFLECT" or
        "SYMMETRIC" (MirrorPad); any case.
      name: the op name.
      constant_values: the fill value for "CONSTANT".

    Raises:
      ValueError: an unknown `mode`.
    """
    mode = mode.upper()
    if mode == "CONSTANT":
        if not isinstance(constant_values, Tensor) and np.ndim(constant_values) == 0 and \
                constant_values == np.zeros_like(constant_values):
            result = apply_op("Pad", input=tensor, paddings=paddings, name=name or "Pad")
        else:
            result = apply_op("PadV2", input=tensor, paddings=paddings,
                              constant_values=constant_values, name=name or "PadV2")
    elif mode in ("REFLECT", "SYMMETRIC"):
        result = apply_op("MirrorPad", input=tensor, paddings=paddings, mode=mode,
                          name=name or "MirrorPad")
    else:
        raise ValueError('Value of argument `mode` expected to be one of "CONSTANT", '
                         f'"REFLECT", or "SYMMETRIC". Received `mode` = {mode}')
    return result


def _unpad(grad: Tensor, x: Tensor, paddings: Tensor) -> Tensor:
    """The part of `grad` that lies over the unpadded input `x`: a Slice."""
    from tensorflux.ops import slicing_ops  # slicing_ops imports this module

    pads = constant_value(paddings)
    if pads is not None:
        begin = np.reshape(pads, (-1, 2))[:, 0].astype(paddings.dtype.as_numpy_dtype)
    else:
        begin = reshape(slicing_ops.strided_slice(paddings, [0, 0], [0, 1], [1, 1],
                                                  begin_mask=1, end_mask=1), [-1])
    sizes = shape_tensor(x, out_type=paddings.dtype)
    return slicing_ops.slice(grad, begin, sizes)


@gradient("Pad")
def _pad_grad(op, grad):
    return [_unpad(grad, op.inputs[0], op.inputs[1]), None]


@gradient("PadV2")
def _pad_v2_grad(op, grad):
    # TF gives no gradient to constant_values either.
    return [_unpad(grad, op.inputs[0], op.inputs[1]), None, None]


@gradient("MirrorPad")
def _mirror_pad_grad(op, grad):
    return [apply_op("MirrorPadGrad", input=grad, paddings=op.inputs[1],
                     mode=op.attrs["mode"], name="MirrorPadGrad"), None]


@gradient("MirrorPadGrad")
def _mirror_pad_grad_grad(op, grad):
    return [apply_op("MirrorPad", input=grad, paddings=op.inputs[1], mode=op.attrs["mode"],
                     name="MirrorPad"), None]


# ------------------------------------------------------------------------------------------
# BroadcastTo, BroadcastArgs


def _broadcast_to_shape(op):
    with_rank(static_dims(op.inputs[1]), 1)
    out = constant_value_as_shape(op.inputs[1])
    in_dims = static_dims(op.inputs[0])
    if out.ndims is None or in_dims is None:
        return [out]
    out_dims = out.as_list()
    if len(in_dims) > len(out_dims):
        raise ValueError(f"Rank of input ({len(in_dims)}) must be no greater than rank of "
                         f"output shape ({len(out_dims)}).")
    off = len(out_dims) - len(in_dims)
    for i, d in enumerate(in_dims):
        o = out_dims[off + i]
        if o is None:
            if d is not None and d != 1:
                out_dims[off + i] = d
        elif d is not None and d != 1 and d != o:
            raise ValueError(f"Dimensions must be equal, but are {d} and {o}")
    return [out_dims]


define_op("BroadcastTo", inputs=["input: T", "shape: Tidx"], outputs=["output: T"],
          attrs=["T: type", f"Tidx: {_INDEX_TYPES} = DT_INT32"],
          shape_fn=_broadcast_to_shape)


def broadcast_to(input, shape, name: str | None = None):  # noqa: A002
    """Broadcasts `input` to `shape` with NumPy's rules (`tf.broadcast_to`)."""
    return apply_op("BroadcastTo", input=input, shape=shape, name=name or "BroadcastTo")


def broadcast_reduction_axes(in_dims: list, out_dims: list) -> np.ndarray:
    """The axes of `out_dims` that broadcasting `in_dims` to it expanded (static dims)."""
    off = len(out_dims) - len(in_dims)
    axes = list(range(off)) + [off + i for i, d in enumerate(in_dims)
                               if d == 1 and out_dims[off + i] != 1]
    return np.array(axes, dtype=np.int32)


@gradient("BroadcastTo")
def _broadcast_to_grad(op, grad):
    x = op.inputs[0]
    in_dims, out_dims = static_shape(x), static_shape(op.outputs[0])
    if in_dims is not None and out_dims is not None:
        axes = broadcast_reduction_axes(in_dims, out_dims)
        g = _reduce_sum(grad, axes, keepdims=False) if axes.size else grad
        return [reshape_like(g, x), None]
    in_shape = shape(x, out_type=op.inputs[1].dtype)
    axes, _ = apply_op("BroadcastGradientArgs", s0=in_shape, s1=op.inputs[1],
                       name="BroadcastGradientArgs")
    return [reshape(_reduce_sum(grad, axes, keepdims=True), in_shape), None]


def _broadcast_args_shape(op):
    a = with_rank(static_dims(op.inputs[0]), 1)[0]
    b = with_rank(static_dims(op.inputs[1]), 1)[0]
    return [[None if a is None or b is None else max(a, b)]]


define_op("BroadcastArgs", inputs=["s0: T", "s1: T"], outputs=["r0: T"],
          attrs=["T: {int32, int64} = DT_INT32"], shape_fn=_broadcast_args_shape)
not_differentiable("BroadcastArgs")  # BroadcastGradientArgs is in math_ops.py


def broadcast_dynamic_shape(shape_x, shape_y):
    """The broadcast of two shape tensors (`tf.broadcast_dynamic_shape`)."""
    return apply_op("BroadcastArgs", s0=shape_x, s1=shape_y, name="BroadcastArgs")


def broadcast_static_shape(shape_x, shape_y) -> TensorShape:
    """The broadcast of two TensorShapes (`tf.broadcast_static_shape`).

    Raises:
      ValueError: the shapes are not broadcast-compatible.
    """
    try:
        return common_shapes.broadcast_shapes(tensor_shape.as_shape(shape_x),
                                              tensor_shape.as_shape(shape_y))
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting. Two shapes are compatible "
                         f"if for each dimension pair they are either equal or one of them "
                         f"is 1. Received: {shape_x} and {shape_y}.") from None


@constant_evaluator("BroadcastArgs")
def _broadcast_args_const(op):
    a, b = constant_value(op.inputs[0]), constant_value(op.inputs[1])
    if a is None or b is None:
        return None
    return np.array(np.broadcast_shapes(tuple(a), tuple(b)), dtype=a.dtype)


# ------------------------------------------------------------------------------------------
# ReverseV2


def _reverse_shape(op):
    in_dims = static_dims(op.inputs[0])
    with_rank(static_dims(op.inputs[1]), 1)
    axes = constant_value(op.inputs[1])
    if in_dims is not None and axes is not None:
        n = len(in_dims)
        seen = set()
        for i, a in enumerate(np.reshape(axes, -1)):
            a = int(a)
            if not -n <= a < n:
                raise ValueError(f"'axis'[{i}] = {a} is out of valid range [0, {n - 1}")
            if a % n in seen:
                raise ValueError(f"axis {a % n} specified more than once.")
            seen.add(a % n)
    return [op.inputs[0].shape]


define_op("ReverseV2", inputs=["tensor: T", "axis: Tidx"], outputs=["output: T"],
          attrs=[f"Tidx: {_INDEX_TYPES} = DT_INT32",
                 "T: {uint8, int8, uint16, int16, int32, uint32, int64, uint64, bool, "
                 "bfloat16, half, float, double, complex64, complex128, string}"],
          shape_fn=_reverse_shape)


def reverse(tensor, axis, name: str | None = None):
    """Reverses `tensor` along each dimension in `axis` (`tf.reverse`)."""
    return apply_op("ReverseV2", tensor=tensor, axis=axis, name=name or "ReverseV2")


reverse_v2 = reverse


@gradient("ReverseV2")
def _reverse_grad(op, grad):
    return [reverse(grad, op.inputs[1]), None]
