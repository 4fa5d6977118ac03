"""Array ops: placeholders, identities, shapes, reshaping, joining and splitting, padding,
tiling, broadcasting, filling.

Each op's definition, TF1 wrapper and gradient sit together; kernels are in
tensorflux/kernels/cpu/array_ops.py. The rest of the family lives beside it (callers and
the public namespace import each module; this one does not re-export them, so the family
has no import cycle): joining_ops.py (ConcatV2, Split, Pack, Unpack, Tile, Pad,
BroadcastTo, ReverseV2), slicing_ops.py (Slice, StridedSlice, `Tensor.__getitem__`) and
gather_ops.py (Gather*, ScatterNd, OneHot, Unique, TopKV2, DynamicPartition/Stitch).

Gradients use only ops, so they run on any device. Where a shape is statically known they
use constants instead of Shape ops: the gradient graph is built once and run every step,
and a constant costs nothing at run time. Math ops (Sum, Sub, Range, ...) belong to
math_ops.py; gradients reach them by op type through `apply_op`, so this module does not
import math_ops.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import (
    constant_evaluator,
    constant_value,
    constant_value_as_shape,
    num_elements,
    scalar_value,
    shape_evaluator,
    shape_str,
    static_dims,
    static_shape,
    with_rank,
)
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import (
    convert_to_tensor,
)
from tensorflux.ops import constant_op

# The TF1 public names of this module (joining_ops, slicing_ops and gather_ops names are
# appended below).
__all__ = [
    "placeholder", "placeholder_with_default", "identity", "identity_n", "stop_gradient",
    "shape", "shape_n", "size", "rank", "reshape", "expand_dims", "squeeze", "transpose",
    "invert_permutation", "fill", "zeros", "ones", "zeros_like", "ones_like", "newaxis",
]

newaxis = None
"""`tf.newaxis`: in an index expression, inserts a dimension of size 1."""

TensorShape = tensor_shape.TensorShape
_INDEX_TYPES = "{int32, int64}"

# Largest result a constant evaluator computes at graph-construction time.
_MAX_CONSTANT_ELEMENTS = 1 << 20


# ------------------------------------------------------------------------------------------
# Shape-function helpers (messages are those of TensorFlow's C++ InferenceContext).


def _partial_scalar(t: Tensor) -> int | None:
    """A scalar dimension value known at graph time, else None: a constant, or one entry
    of a partially known shape vector (`tf.shape(x)[1]` when x's dim 1 is known)."""
    v = scalar_value(t)
    if v is not None:
        return None if v < 0 else v
    if t.op.type == "StridedSlice":
        from tensorflux.ops import slicing_ops  # slicing_ops imports this module

        got = slicing_ops.partial_slice_of_shape(t.op)
        if isinstance(got, int):
            return got
    return None


def _normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"Argument `{what}` = {axis} not in range [{-rank}, {rank})")
    return axis % rank


# ------------------------------------------------------------------------------------------
# Helpers for gradients and wrappers: constants where shapes are static, ops otherwise.


def shape_tensor(t: Tensor, out_type=dtypes.int32, name: str | None = None) -> Tensor:
    """`t`'s shape as a tensor: a Const when statically known, else a Shape op."""
    dims = static_shape(t)
    if dims is not None:
        return constant_op.constant(np.array(dims, dtype=out_type.as_numpy_dtype),
                                    name=name or "Shape")
    return apply_op("Shape", input=t, out_type=out_type, name=name or "Shape")


def _reduce_sum(x: Tensor, axes, keepdims: bool = False) -> Tensor:
    return apply_op("Sum", input=x, reduction_indices=axes, keep_dims=keepdims, name="Sum")


def _zeros_like_output(op, i: int) -> Tensor:
    """Zeros shaped like output `i` of `op` (a stand-in for a missing output gradient)."""
    return zeros_like(op.outputs[i])


def _fill_missing_grads(op, grads) -> list:
    return [g if g is not None else _zeros_like_output(op, i) for i, g in enumerate(grads)]


# ------------------------------------------------------------------------------------------
# Placeholder, PlaceholderWithDefault


def _placeholder_shape(op):
    shape = op.attrs["shape"]
    return [shape if shape is not None else tensor_shape.unknown_shape()]


define_op("Placeholder", outputs=["output: dtype"],
          attrs=["dtype: type", "shape: shape = unknown"], shape_fn=_placeholder_shape,
          cost_free=True, keep_identity=True)
not_differentiable("Placeholder")


def placeholder(dtype, shape=None, name: str | None = None):
    """A tensor that must be fed (`tf.placeholder`): InvalidArgumentError at run time if not.

    Args:
      dtype: the element type.
      shape: the static shape (None: any shape; dimensions may be None).
      name: the op name.
    """
    shape = None if shape is None else tensor_shape.as_shape(shape)
    if shape is not None and shape.ndims is None:
        shape = None
    return apply_op("Placeholder", dtype=dtypes.as_dtype(dtype), shape=shape,
                    name=name or "Placeholder")


def _placeholder_with_default_shape(op):
    """The `shape` attr, which must be compatible with the default's shape (TF merges the two
    and raises its ValueError, whatever builds the node)."""
    shape = op.attrs["shape"]
    if shape is None:
        return [tensor_shape.unknown_shape()]
    dims = tensor_shape.as_shape(shape)
    common_shapes.merge_shapes(common_shapes.static_dims(op.inputs[0]),
                               dims.as_list() if dims.ndims is not None else None)
    return [shape]


define_op("PlaceholderWithDefault", inputs=["input: dtype"], outputs=["output: dtype"],
          attrs=["dtype: type", "shape: shape"], shape_fn=_placeholder_with_default_shape,
          cost_free=True, keep_identity=True)


def placeholder_with_default(input, shape, name: str | None = None):  # noqa: A002
    """`input` unless a value is fed (`tf.placeholder_with_default`).

    Raises:
      ValueError: `shape` is not compatible with the shape of `input`.
    """
    t = convert_to_tensor(input)
    shape = tensor_shape.as_shape(shape)
    return apply_op("PlaceholderWithDefault", input=t, shape=shape,
                    name=name or "PlaceholderWithDefault")


@gradient("PlaceholderWithDefault")
def _placeholder_with_default_grad(op, grad):
    return [grad]


# ------------------------------------------------------------------------------------------
# Identity, IdentityN, StopGradient

define_op("Identity", inputs=["input: T"], outputs=["output: T"], attrs=["T: type"],
          shape_fn=common_shapes.unchanged, cost_free=True)
# TF1's identity of a reference variable's ref (ops/ref_variable_ops.py).
define_op("RefIdentity", inputs=["input: Ref(T)"], outputs=["output: Ref(T)"],
          attrs=["T: type"], shape_fn=common_shapes.unchanged, stateful=True, cost_free=True)
not_differentiable("RefIdentity")


def identity(input, name: str | None = None):  # noqa: A002
    """Returns a tensor with the same value as `input` (`tf.identity`)."""
    if hasattr(input, "_is_indexed_slices") or hasattr(input, "_is_sparse_tensor"):
        return input._map_values(lambda v: identity(v, name))
    if hasattr(input, "_identity_for_variable"):
        return input._identity_for_variable(name)
    return apply_op("Identity", input=input, name=name or "Identity")


@gradient("Identity")
def _identity_grad(op, grad):
    return [grad]


define_op("IdentityN", inputs=["input: T"], outputs=["output: T"],
          attrs=["T: list(type) >= 1"], shape_fn=common_shapes.unchanged_all, cost_free=True)


def identity_n(input, name: str | None = None):  # noqa: A002
    """Returns a list of tensors with the same values as the list `input`."""
    return apply_op("IdentityN", input=list(input), name=name or "IdentityN")


@gradient("IdentityN")
def _identity_n_grad(op, *grads):
    return list(grads)


define_op("StopGradient", inputs=["input: T"], outputs=["output: T"], attrs=["T: type"],
          shape_fn=common_shapes.unchanged, cost_free=True)
not_differentiable("StopGradient")


def stop_gradient(input, name: str | None = None):  # noqa: A002
    """The value of `input`, through which no gradient flows (`tf.stop_gradient`)."""
    return apply_op("StopGradient", input=input, name=name or "StopGradient")


@constant_evaluator("Identity", "StopGradient", "PlaceholderWithDefault")
def _identity_value(op):
    if op.type == "PlaceholderWithDefault":
        return None
    return constant_value(op.inputs[0])


@shape_evaluator("Identity", "StopGradient")
def _identity_partial_shape(t):
    return constant_value_as_shape(t.op.inputs[0])


# ------------------------------------------------------------------------------------------
# Shape, ShapeN, Size, Rank


def _shape_shape(op):
    dims = static_dims(op.inputs[0])
    return [[None if dims is None else len(dims)]]


define_op("Shape", inputs=["input: T"], outputs=["output: out_type"],
          attrs=["T: type", "out_type: {int32, int64} = DT_INT32"], shape_fn=_shape_shape,
          cost_free=True, shape_only=True)
define_op("ShapeN", inputs=["input: N * T"], outputs=["output: N * out_type"],
          attrs=["N: int >= 1", "T: type", "out_type: {int32, int64} = DT_INT32"],
          shape_fn=lambda op: [[None if t.shape.ndims is None else t.shape.ndims]
                               for t in op.inputs], cost_free=True, shape_only=True)
define_op("Size", inputs=["input: T"], outputs=["output: out_type"],
          attrs=["T: type", "out_type: {int32, int64} = DT_INT32"],
          shape_fn=common_shapes.scalar, cost_free=True, shape_only=True)
define_op("Rank", inputs=["input: T"], outputs=["output: int32"], attrs=["T: type"],
          shape_fn=common_shapes.scalar, cost_free=True, shape_only=True)
not_differentiable("Shape", "ShapeN", "Size", "Rank")


def _shape_value(t: Tensor, out_type) -> np.ndarray | None:
    dims = static_shape(t)
    if dims is None:
        return None
    return np.array(dims, dtype=out_type.as_numpy_dtype)


@constant_evaluator("Shape")
def _shape_const(op):
    return _shape_value(op.inputs[0], op.attrs["out_type"])


def _shape_n_const(op, index):
    return _shape_value(op.inputs[index], op.attrs["out_type"])


_shape_n_const._takes_index = True
constant_evaluator("ShapeN")(_shape_n_const)


@constant_evaluator("Size")
def _size_const(op):
    n = op.inputs[0].shape.num_elements()
    return None if n is None else np.array(n, dtype=op.attrs["out_type"].as_numpy_dtype)


@constant_evaluator("Rank")
def _rank_const(op):
    n = op.inputs[0].shape.ndims
    return None if n is None else np.array(n, dtype=np.int32)


@shape_evaluator("Shape")
def _shape_partial_shape(t):
    return t.op.inputs[0].shape


@shape_evaluator("ShapeN")
def _shape_n_partial_shape(t):
    return t.op.inputs[t.value_index].shape


def shape(input, name: str | None = None, out_type=dtypes.int32):  # noqa: A002
    """The shape of `input` as a 1-D tensor (`tf.shape`): a Const when statically known."""
    with graph_lib.name_scope(name, "Shape", [input]) as scope:
        t = _as_tensor_or_shaped(input)
        out_type = dtypes.as_dtype(out_type)
        if hasattr(t, "dense_shape"):  # SparseTensor / IndexedSlices
            return apply_op("Cast", x=t.dense_shape, DstT=out_type, name=scope) \
                if t.dense_shape.dtype != out_type else identity(t.dense_shape, name=scope)
        value = _shape_value(t, out_type)
        if value is not None:
            return constant_op.constant(value, name=scope)
        return apply_op("Shape", input=t, out_type=out_type, name=scope)


def shape_n(input, out_type=dtypes.int32, name: str | None = None):  # noqa: A002
    """The shapes of a list of tensors (`tf.shape_n`)."""
    return apply_op("ShapeN", input=list(input), out_type=dtypes.as_dtype(out_type),
                    name=name or "ShapeN")


def size(input, name: str | None = None, out_type=dtypes.int32):  # noqa: A002
    """The number of elements of `input` (`tf.size`): a Const when statically known."""
    with graph_lib.name_scope(name, "Size", [input]) as scope:
        t = _as_tensor_or_shaped(input)
        out_type = dtypes.as_dtype(out_type)
        n = t.shape.num_elements()
        if n is not None:
            return constant_op.constant(np.array(n, dtype=out_type.as_numpy_dtype),
                                        name=scope)
        return apply_op("Size", input=t, out_type=out_type, name=scope)


def rank(input, name: str | None = None):  # noqa: A002
    """The number of dimensions of `input` (`tf.rank`): a Const when statically known."""
    with graph_lib.name_scope(name, "Rank", [input]) as scope:
        t = _as_tensor_or_shaped(input)
        if t.shape.ndims is not None:
            return constant_op.constant(np.array(t.shape.ndims, dtype=np.int32), name=scope)
        return apply_op("Rank", input=t, name=scope)


def _as_tensor_or_shaped(value):
    if hasattr(value, "dense_shape") or isinstance(value, Tensor):
        return value
    return convert_to_tensor(value)


# ------------------------------------------------------------------------------------------
# Reshape


def _reshape_shape(op):
    in_dims = static_dims(op.inputs[0])
    with_rank(static_dims(op.inputs[1]), 1)
    out = constant_value_as_shape(op.inputs[1])
    if out.ndims is None:
        return [out]
    out_dims = out.as_list()
    unknown_out = [i for i, d in enumerate(out_dims) if d is None]
    known_out = num_elements([d for d in out_dims if d is not None])
    if len(unknown_out) > 1 or in_dims is None:
        return [out_dims]
    n_in = num_elements(in_dims)
    if n_in is None:
        return [out_dims]
    if not unknown_out:
        if n_in != known_out:
            raise ValueError(f"Cannot reshape a tensor with {n_in} elements to shape "
                             f"{shape_str(out_dims)} ({known_out} elements)")
        return [out_dims]
    if known_out == 0:
        return [out_dims]
    if n_in % known_out:
        raise ValueError(f"Dimension size must be evenly divisible by {known_out} but is "
                         f"{n_in}")
    out_dims[unknown_out[0]] = n_in // known_out
    return [out_dims]


define_op("Reshape", inputs=["tensor: T", "shape: Tshape"], outputs=["output: T"],
          attrs=["T: type", f"Tshape: {_INDEX_TYPES} = DT_INT32"], shape_fn=_reshape_shape,
          cost_free=True)


def reshape(tensor, shape, name: str | None = None):
    """`tensor` with its elements in row-major order laid out as `shape` (`tf.reshape`).

    One entry of `shape` may be -1: it is computed so the number of elements stays the same.

    Raises:
      ValueError: the static shapes show the element counts cannot match.
    """
    return apply_op("Reshape", tensor=tensor, shape=shape, name=name or "Reshape")


def reshape_like(grad: Tensor, like: Tensor) -> Tensor:
    """`grad` reshaped to the shape of `like` (a Const shape when statically known)."""
    dims = static_shape(like)
    if dims is not None and grad.shape.is_fully_defined() and grad.shape.as_list() == dims:
        return grad
    return reshape(grad, shape_tensor(like))


@gradient("Reshape")
def _reshape_grad(op, grad):
    return [reshape_like(grad, op.inputs[0]), None]


def _reshaped_const(op):
    x = constant_value(op.inputs[0])
    if x is None:
        return None
    try:
        return np.reshape(x, op.outputs[0].shape.as_list())
    except (ValueError, TypeError):
        return None


constant_evaluator("Reshape", "ExpandDims", "Squeeze")(
    lambda op: _reshaped_const(op) if op.outputs[0].shape.is_fully_defined() else None)


# ------------------------------------------------------------------------------------------
# ExpandDims, Squeeze


def _expand_dims_shape(op):
    in_dims = static_dims(op.inputs[0])
    d = constant_value(op.inputs[1])
    if in_dims is None or d is None:
        return [None]
    if np.size(d) != 1:
        raise ValueError(f"'dim' input must be a tensor with a single value, got {np.size(d)}"
                         " values")
    d = int(np.reshape(d, ()))
    n = len(in_dims)
    if not -1 - n <= d <= n:
        raise ValueError(f"dim {d} not in the interval [{-1 - n}, {n}].")
    if d < 0:
        d += n + 1
    return [in_dims[:d] + [1] + in_dims[d:]]


define_op("ExpandDims", inputs=["input: T", "dim: Tdim"], outputs=["output: T"],
          attrs=["T: type", f"Tdim: {_INDEX_TYPES} = DT_INT32"], shape_fn=_expand_dims_shape,
          cost_free=True)


def expand_dims(input, axis=None, name: str | None = None, dim=None):  # noqa: A002
    """Inserts a dimension of size 1 at index `axis` (`tf.expand_dims`).

    Raises:
      ValueError: both or neither of `axis` and the deprecated `dim` are given.
    """
    if dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'dim'")
        axis = dim
    if axis is None:
        raise ValueError("Must specify an axis argument to tf.expand_dims()")
    return apply_op("ExpandDims", input=input, dim=axis, name=name or "ExpandDims")


@gradient("ExpandDims")
def _expand_dims_grad(op, grad):
    return [reshape_like(grad, op.inputs[0]), None]


def _squeeze_shape(op):
    in_dims = static_dims(op.inputs[0])
    axes = op.attrs["squeeze_dims"]
    if in_dims is None:
        return [None]
    n = len(in_dims)
    wanted = set()
    for i, a in enumerate(axes):
        if not -n <= a < n:
            raise ValueError(f"squeeze_dims[{i}] not in [{-n},{n}).")
        wanted.add(a % n)
    out = []
    for i, d in enumerate(in_dims):
        if wanted:
            if i in wanted:
                if d is not None and d != 1:
                    raise ValueError(f"Can not squeeze dim[{i}], expected a dimension of 1, "
                                     f"got {d}")
                continue
        elif d is None:
            return [None]  # might be 1: the rank is unknown
        elif d == 1:
            continue
        out.append(d)
    return [out]


define_op("Squeeze", inputs=["input: T"], outputs=["output: T"],
          attrs=["T: type", "squeeze_dims: list(int) >= 0 = []"], shape_fn=_squeeze_shape,
          cost_free=True)


def squeeze(input, axis=None, name: str | None = None, squeeze_dims=None):  # noqa: A002
    """Removes dimensions of size 1 (`tf.squeeze`): those in `axis`, or all of them.

    Raises:
      ValueError: both `axis` and the deprecated `squeeze_dims` are given, or a listed
        dimension is not 1.
    """
    if squeeze_dims is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'squeeze_dims' and 'axis'")
        axis = squeeze_dims
    if np.isscalar(axis):
        axis = [axis]
    axis = [int(a) for a in axis] if axis is not None else []
    return apply_op("Squeeze", input=input, squeeze_dims=axis, name=name or "Squeeze")


@gradient("Squeeze")
def _squeeze_grad(op, grad):
    return [reshape_like(grad, op.inputs[0])]


# ------------------------------------------------------------------------------------------
# Transpose, ConjugateTranspose, InvertPermutation


def _transpose_shape(op):
    in_dims = static_dims(op.inputs[0])
    perm_dims = with_rank(static_dims(op.inputs[1]), 1)
    n = perm_dims[0]
    if in_dims is not None and n is not None and len(in_dims) != n:
        raise ValueError(f"Dimension must be {len(in_dims)} but is {n}")
    rank = len(in_dims) if in_dims is not None else n
    if rank is None:
        return [None]
    perm = constant_value(op.inputs[1])
    if perm is None:
        return [[None] * rank]
    perm = [int(p) for p in np.reshape(perm, -1)]
    for p in perm:
        if not -rank <= p < rank:
            raise ValueError(f"perm dim {p} is out of range of input rank {rank}")
    if in_dims is None:
        return [[None] * rank]
    return [[in_dims[p] for p in perm]]


for _t in ("Transpose", "ConjugateTranspose"):
    define_op(_t, inputs=["x: T", "perm: Tperm"], outputs=["y: T"],
              attrs=["T: type", f"Tperm: {_INDEX_TYPES} = DT_INT32"],
              shape_fn=_transpose_shape)


def transpose(a, perm=None, name: str = "transpose", conjugate: bool = False):
    """Permutes the dimensions of `a` (`tf.transpose`); `perm` defaults to reversing them.

    Args:
      a: a tensor.
      perm: a permutation of `[0, rank)`; None reverses the dimensions.
      name: the op name.
      conjugate: for complex `a`, also conjugate (a Hermitian transpose).
    """
    with graph_lib.name_scope(name, "transpose", [a]) as scope:
        a = convert_to_tensor(a, name="a")
        op_type = "ConjugateTranspose" if conjugate and a.dtype.is_complex else "Transpose"
        if perm is None:
            n = a.shape.ndims
            if n is not None:
                perm = np.arange(n - 1, -1, -1, dtype=np.int32)
            else:
                r = rank(a)
                perm = apply_op("Sub", x=apply_op("Sub", x=r, y=1, name="sub"),
                                y=apply_op("Range", start=0, limit=r, delta=1, name="Range"),
                                name="sub_1")
        return apply_op(op_type, x=a, perm=perm, name=scope)


def _inverse_perm(perm: Tensor) -> Tensor | np.ndarray:
    p = constant_value(perm)
    if p is not None:
        return np.argsort(np.reshape(p, -1)).astype(perm.dtype.as_numpy_dtype)
    return invert_permutation(perm)


@gradient("Transpose")
def _transpose_grad(op, grad):
    return [transpose(grad, _inverse_perm(op.inputs[1])), None]


@gradient("ConjugateTranspose")
def _conjugate_transpose_grad(op, grad):
    return [transpose(grad, _inverse_perm(op.inputs[1]), conjugate=True), None]


@constant_evaluator("Transpose")
def _transpose_const(op):
    x, perm = constant_value(op.inputs[0]), constant_value(op.inputs[1])
    return None if x is None or perm is None else np.transpose(x, perm)


define_op("InvertPermutation", inputs=["x: T"], outputs=["y: T"],
          attrs=["T: {int32, int64} = DT_INT32"],
          shape_fn=lambda op: [with_rank(static_dims(op.inputs[0]), 1)])
not_differentiable("InvertPermutation")


def invert_permutation(x, name: str | None = None):
    """The inverse permutation: `y[x[i]] = i` (`tf.invert_permutation`)."""
    return apply_op("InvertPermutation", x=x, name=name or "InvertPermutation")


@constant_evaluator("InvertPermutation")
def _invert_permutation_const(op):
    x = constant_value(op.inputs[0])
    return None if x is None else np.argsort(x).astype(x.dtype)


# ------------------------------------------------------------------------------------------
# Fill, ZerosLike, OnesLike, zeros, ones


def _fill_shape(op):
    with_rank(static_dims(op.inputs[0]), 1)
    with_rank(static_dims(op.inputs[1]), 0)
    out = constant_value_as_shape(op.inputs[0])
    value = constant_value(op.inputs[0])
    if value is not None and np.any(np.asarray(value) < 0):
        raise ValueError("Fill dimensions must be >= 0")
    return [out]


define_op("Fill", inputs=["dims: index_type", "value: T"], outputs=["output: T"],
          attrs=["T: type", f"index_type: {_INDEX_TYPES} = DT_INT32"], shape_fn=_fill_shape)


def fill(dims, value, name: str | None = None):
    """A tensor of shape `dims` with every element `value` (`tf.fill`)."""
    return apply_op("Fill", dims=dims, value=value, name=name or "Fill")


@gradient("Fill")
def _fill_grad(op, grad):
    return [None, _reduce_sum(grad, np.arange(grad.shape.ndims, dtype=np.int32)
                              if grad.shape.ndims is not None else _all_axes(grad))]


def _all_axes(t: Tensor) -> Tensor:
    return apply_op("Range", start=0, limit=rank(t), delta=1, name="Range")


@constant_evaluator("Fill")
def _fill_const(op):
    out = op.outputs[0].shape
    value = constant_value(op.inputs[1])
    if value is None or not out.is_fully_defined() or \
            out.num_elements() > _MAX_CONSTANT_ELEMENTS:
        return None
    return np.full(out.as_list(), value, dtype=value.dtype)


define_op("ZerosLike", inputs=["x: T"], outputs=["y: T"], attrs=["T: type"],
          shape_fn=common_shapes.unchanged)
define_op("OnesLike", inputs=["x: T"], outputs=["y: T"],
          attrs=["T: {bfloat16, half, float, double, int8, uint8, int16, uint16, int32, "
                 "uint32, int64, uint64, complex64, complex128, bool}"],
          shape_fn=common_shapes.unchanged)
not_differentiable("ZerosLike", "OnesLike")


def _like_const(op, fill_value):
    s = op.inputs[0].shape
    if not s.is_fully_defined() or s.num_elements() > _MAX_CONSTANT_ELEMENTS:
        return None
    dt = op.attrs["T"]
    if dt.base_dtype is dtypes.string:
        return np.full(s.as_list(), b"", dtype=object)
    return np.full(s.as_list(), fill_value, dtype=dt.numpy_dtype)


constant_evaluator("ZerosLike")(lambda op: _like_const(op, 0))
constant_evaluator("OnesLike")(lambda op: _like_const(op, 1))


def _zero_of(dtype: dtypes.DType):
    if dtype is dtypes.bool:
        return False
    if dtype is dtypes.string:
        return ""
    if dtype.is_quantized:
        return np.zeros([], dtype=dtype.numpy_dtype)
    return 0


def _filled(value, shape, dtype: dtypes.DType, scope: str) -> Tensor:
    """A tensor of `shape` filled with `value`, built as TF builds `tf.zeros`: a Const when
    the shape is a small static one, else Fill."""
    if not isinstance(shape, Tensor):
        try:
            dims = tensor_shape.as_shape(shape)
            if dims.is_fully_defined() and (dims.num_elements() or 0) < 1000:
                return constant_op.constant(value, shape=dims.as_list(), dtype=dtype,
                                            name=scope)
            if dims.is_fully_defined():
                shape = np.array(dims.as_list(),
                                 dtype=np.int64 if max(dims.as_list(), default=0) >= 2 ** 31
                                 else np.int32)
        except (TypeError, ValueError):
            pass
        shape = convert_to_tensor(shape, dtype=None if isinstance(shape, np.ndarray)
                                  else dtypes.int32, name="shape")
    if shape.shape.ndims == 0:
        shape = reshape(shape, [-1])
    return fill(shape, constant_op.constant(value, dtype=dtype), name=scope)


def zeros(shape, dtype=dtypes.float32, name: str | None = None):
    """A tensor of `shape` with all elements zero (`tf.zeros`).

    Args:
      shape: a list of ints, a TensorShape, or a 1-D int32 tensor (a list may hold tensors).
      dtype: the element type.
      name: the op name.
    """
    dtype = dtypes.as_dtype(dtype).base_dtype
    with graph_lib.name_scope(name, "zeros", [shape]) as scope:
        return _filled(_zero_of(dtype), shape, dtype, scope)


def ones(shape, dtype=dtypes.float32, name: str | None = None):
    """A tensor of `shape` with all elements one (`tf.ones`)."""
    dtype = dtypes.as_dtype(dtype).base_dtype
    one = True if dtype is dtypes.bool else 1
    with graph_lib.name_scope(name, "ones", [shape]) as scope:
        return _filled(one, shape, dtype, scope)


def zeros_like(tensor, dtype=None, name: str | None = None, optimize: bool = True):
    """Zeros with the shape of `tensor` (`tf.zeros_like`): a Const when the shape is static,
    else a ZerosLike op (or Fill when `dtype` differs)."""
    with graph_lib.name_scope(name, "zeros_like", [tensor]) as scope:
        t = convert_to_tensor(tensor, name="tensor")
        dtype = dtypes.as_dtype(dtype).base_dtype if dtype is not None else None
        if optimize and t.shape.is_fully_defined() and t.dtype is not dtypes.variant:
            return zeros(t.shape, dtype=dtype or t.dtype.base_dtype, name=scope)
        if dtype is not None and dtype != t.dtype.base_dtype:
            return zeros(shape_tensor(t), dtype=dtype, name=scope)
        return apply_op("ZerosLike", x=t, name=scope)


def ones_like(tensor, dtype=None, name: str | None = None, optimize: bool = True):
    """Ones with the shape of `tensor` (`tf.ones_like`)."""
    with graph_lib.name_scope(name, "ones_like", [tensor]) as scope:
        t = convert_to_tensor(tensor, name="tensor")
        dims = shape_tensor(t) if optimize else apply_op("Shape", input=t, name="Shape")
        out = ones(dims, dtype=dtype or t.dtype.base_dtype, name=scope)
        out.set_shape(t.shape)
        return out
