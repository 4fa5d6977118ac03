"""CPU kernels of the array ops (tensorflux/ops/array_ops.py); the rest of the family's
kernels are in joining_ops.py, slicing_ops.py and gather_ops.py beside this module.

Kernels never write into their inputs. Those marked `forwards_input` may return NumPy views
of an input (Reshape, Transpose, ExpandDims, Squeeze; Split, Unpack, ReverseV2, Slice and
StridedSlice in the sibling modules), which costs no copy. Error messages are TensorFlow's;
the runtime adds the node name."""

from __future__ import annotations

import numpy as np

from tensorflux.framework import errors, resource_guard
from tensorflux.kernels import interrupt
from tensorflux.kernels.registry import kernel, kernel_factory

_ALL = ("CPU", "GPU")
_OBJECT = np.dtype(object)


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _shape_str(shape) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def _zeros(shape, dtype: np.dtype, ctx=None) -> np.ndarray:
    """Zeros of `dtype`; for strings (object arrays of bytes), empty strings (written in
    blocks that check step `ctx` when large; numeric zeros are pages the system maps on
    first touch)."""
    if dtype == _OBJECT:
        return interrupt.full(ctx, shape, b"", object)
    return np.zeros(shape, dtype=dtype)


# ---- Placeholder, Identity -------------------------------------------------------------


@kernel_factory("Placeholder", device=_ALL)
def _placeholder(node):
    dtype = node.attrs["dtype"]
    shape = node.attrs.get("shape")
    shape_str = "" if shape is None or shape.ndims is None else \
        f" and shape [{','.join('?' if d is None else str(d) for d in shape.as_list())}]"
    type_name = {"float32": "float", "float64": "double"}.get(dtype.name, dtype.name)

    def compute(ctx):
        raise errors.InvalidArgumentError(
            None, None, f"You must feed a value for placeholder tensor '{node.name}' with "
            f"dtype {type_name}{shape_str}")

    return compute


@kernel("Identity", "StopGradient", "PlaceholderWithDefault", "RefIdentity", device=_ALL,
        inline="{0}", forwards_input=True)
def _identity(ctx, x):
    return x


@kernel("IdentityN", device=_ALL, forwards_input=True)
def _identity_n(ctx, *xs):
    return xs if len(xs) != 1 else xs[0]  # one output: the bare value


# ---- Shape, ShapeN, Size, Rank -----------------------------------------------------------


@kernel_factory("Shape")
def _shape(node):
    dt = node.attrs["out_type"].as_numpy_dtype

    def compute(ctx, x):
        return np.array(np.shape(x), dtype=dt)

    return compute


@kernel_factory("ShapeN")
def _shape_n(node):
    dt = node.attrs["out_type"].as_numpy_dtype

    def compute(ctx, *xs):
        out = tuple(np.array(np.shape(x), dtype=dt) for x in xs)
        return out if len(out) != 1 else out[0]  # one output: the bare value

    return compute


@kernel_factory("Size")
def _size(node):
    dt = node.attrs["out_type"].as_numpy_dtype

    def compute(ctx, x):
        return np.array(np.size(x), dtype=dt)

    return compute


@kernel("Rank")
def _rank(ctx, x):
    return np.array(np.ndim(x), dtype=np.int32)


# ---- Reshape, ExpandDims, Squeeze ----------------------------------------------------------


def _reshape_target(in_shape: tuple, sizes: list) -> tuple:
    """The output shape for Reshape of an input of `in_shape` to `sizes` (one may be -1),
    with TF's rules for empty tensors: zero sizes are left out of both products."""
    unknown, product, has_zero = -1, 1, False
    for i, s in enumerate(sizes):
        if s == -1:
            if unknown != -1:
                raise _invalid(f"Only one input size may be -1, not both {unknown} and {i}")
            unknown = i
        elif s < 0:
            raise _invalid(f"Size {i} must be non-negative, not {s}")
        elif s == 0:
            has_zero = True
        else:
            product *= s
    n = 1
    for d in in_shape:
        n *= d
    if unknown == -1:
        wanted = 0 if has_zero else product
        if wanted != n:
            raise _invalid(f"Input to reshape is a tensor with {n} values, but the requested "
                           f"shape has {wanted}")
        return tuple(sizes)
    in_zero = False
    if has_zero:
        n = 1
        for d in in_shape:
            if d > 0:
                n *= d
            else:
                in_zero = True
    missing = n // product
    if not in_zero and missing * product != n:
        raise _invalid(f"Input to reshape is a tensor with {n} values, but the requested shape "
                       f"requires a multiple of {product}")
    out = list(sizes)
    out[unknown] = missing
    total = size = 1
    for d in out:
        total *= d
    for d in in_shape:
        size *= d
    if total != size:
        raise _invalid(f"Input to reshape is a tensor with {size} values, but the requested "
                       f"shape has {total}")
    return tuple(out)


@kernel("Reshape", forwards_input=True)
def _reshape(ctx, x, shape):
    if shape.ndim != 1:
        raise _invalid(f"sizes input must be 1-D, not {_shape_str(shape.shape)}")
    sizes = shape.tolist()
    # NumPy agrees with TF except for a -1 next to a 0 and for its error messages.
    if min(sizes, default=0) >= -1 and 0 not in sizes:
        try:
            return x.reshape(sizes)
        except ValueError:
            pass
    return x.reshape(_reshape_target(x.shape, sizes))


@kernel("ExpandDims", forwards_input=True)
def _expand_dims(ctx, x, dim):
    if dim.size != 1:
        raise _invalid(f"'dim' must be a tensor with a single value, but got {dim.size} values")
    d = int(dim.reshape(()))
    n = x.ndim
    if not -1 - n <= d <= n:
        raise _invalid(f"Tried to expand dim index {d} for tensor with {n} dimensions.")
    # A view with a new axis (np.expand_dims's, at a fifth of its ~3 us).
    return x[(slice(None),) * (d if d >= 0 else d + n + 1) + (None,)]


@kernel_factory("Squeeze", forwards_input=True)
def _squeeze(node):
    axes = node.attrs["squeeze_dims"]

    def compute(ctx, x):
        n = x.ndim
        if not axes:
            return np.squeeze(x) if n else x
        norm = []
        for a in axes:
            if not -n <= a < n:
                raise _invalid(f"Tried to squeeze dim index {a} for tensor with {n} "
                               "dimensions.")
            a %= n
            if x.shape[a] != 1:
                raise _invalid(f"Can not squeeze dim[{a}], expected a dimension of 1, got "
                               f"{x.shape[a]}")
            norm.append(a)
        return np.squeeze(x, axis=tuple(set(norm)))

    return compute


# ---- Transpose, ConjugateTranspose, InvertPermutation --------------------------------------


def _check_perm(x, perm) -> tuple:
    n = x.ndim
    p = perm.reshape(-1).tolist()
    if len(p) != n:
        raise _invalid(f"transpose expects a vector of size {n}. But input(1) is a vector of "
                       f"size {len(p)}")
    for d in p:
        if not -n <= d < n:
            raise _invalid(f"{d} is out of range [0 .. {n})")
    p = [d % n for d in p]  # TF takes entries in [-n, n), negative ones counting from the end
    if sorted(p) != list(range(n)):
        seen = set(p)
        missing = next(i for i in range(n) if i not in seen)
        raise _invalid(f"{missing} is missing from {{{','.join(map(str, p))}}}.")
    return tuple(p)


@kernel("Transpose", forwards_input=True)
def _transpose(ctx, x, perm):
    return np.transpose(x, _check_perm(x, perm))


@kernel("ConjugateTranspose")
def _conjugate_transpose(ctx, x, perm):
    y = np.transpose(x, _check_perm(x, perm))
    return np.conj(y) if np.iscomplexobj(y) else y


@kernel("InvertPermutation")
def _invert_permutation(ctx, x):
    if x.ndim != 1:
        raise _invalid("invert_permutation expects a 1D vector.")
    n = x.size
    out = np.full(n, -1, dtype=x.dtype)
    for i, d in enumerate(x.tolist()):
        if not 0 <= d < n:
            raise _invalid(f"{d} is not between 0 and {n}")
        if out[d] != -1:
            raise _invalid(f"{d} is duplicated in the input.")
        out[d] = i
    return out


# ---- Fill, ZerosLike, OnesLike -------------------------------------------------------------


@kernel("Fill")
def _fill(ctx, dims, value):
    if dims.ndim != 1:
        raise _invalid(f"dims must be a vector, got shape {_shape_str(dims.shape)}")
    if value.ndim != 0:
        raise _invalid(f"value must represent a scalar, got shape {_shape_str(value.shape)}")
    shape = dims.tolist()
    for d in shape:
        if d < 0:
            raise _invalid(f"Dimension {d} must be >= 0")
    resource_guard.check_shape(shape, value.dtype, ctx)
    return interrupt.full(ctx, shape, value, value.dtype)  # in blocks when large


@kernel("ZerosLike")
def _zeros_like(ctx, x):
    return _zeros(np.shape(x), x.dtype, ctx)


@kernel("OnesLike")
def _ones_like(ctx, x):
    if interrupt.blocked(x.nbytes):
        return interrupt.full(ctx, x.shape, 1, x.dtype)
    return np.ones_like(x)
