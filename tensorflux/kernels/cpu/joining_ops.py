"""CPU kernels of the joining ops (tensorflux/ops/joining_ops.py): ConcatV2, ConcatOffset,
Split, SplitV, Pack, Unpack, Tile, Pad, PadV2, MirrorPad, MirrorPadGrad, BroadcastTo,
BroadcastArgs, ReverseV2.

The kernels that build a large output (ConcatV2, Pack, Tile, the pads, BroadcastTo) write
it in blocks that check the step between them when it is large (`interrupt.copyto`): the
values of their one NumPy call.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from tensorflux.framework import errors, resource_guard
from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu.array_ops import _OBJECT, _invalid, _shape_str
from tensorflux.kernels.registry import kernel, kernel_factory

# ---- ConcatV2, ConcatOffset ------------------------------------------------------------------


def _concat_error(values, axis: int) -> errors.InvalidArgumentError:
    first = values[0]
    n = first.ndim
    if n == 0:
        return _invalid("ConcatOp : Can't concatenate scalars (use tf.stack instead)")
    if not -n <= axis < n:
        return _invalid(f"ConcatOp : Expected concatenating dimensions in the range [{-n}, "
                        f"{n}), but got {axis}")
    axis %= n
    for i, v in enumerate(values[1:], 1):
        if v.ndim != n:
            return _invalid(f"ConcatOp : Ranks of all input tensors should match: shape[0] = "
                            f"{_shape_str(first.shape)} vs. shape[{i}] = {_shape_str(v.shape)}")
        for j in range(n):
            if j != axis and v.shape[j] != first.shape[j]:
                return _invalid(f"ConcatOp : Dimension {j} in both shapes must be equal: "
                                f"shape[0] = {_shape_str(first.shape)} vs. shape[{i}] = "
                                f"{_shape_str(v.shape)}")
    return _invalid("ConcatOp : invalid inputs")


@kernel("ConcatV2")
def _concat(ctx, *args):
    values, axis = args[:-1], int(args[-1])
    try:
        if values[0].ndim == 0:
            raise ValueError
        if interrupt.blocked(sum(v.nbytes for v in values)):
            return _concat_blocked(ctx, values, axis)
        return np.concatenate(values, axis=axis)
    except (ValueError, IndexError):
        raise _concat_error(values, axis) from None


def _concat_blocked(ctx, values, axis: int) -> np.ndarray:
    """np.concatenate(values, axis) of a large result, copied in blocks (ValueError or
    IndexError for inputs it would refuse)."""
    first = values[0]
    if not -first.ndim <= axis < first.ndim:
        raise IndexError
    axis %= first.ndim
    dtype = np.result_type(*values)
    for v in values:
        if v.ndim != first.ndim or any(v.shape[j] != first.shape[j]
                                       for j in range(first.ndim) if j != axis):
            raise ValueError
    shape = list(first.shape)
    shape[axis] = sum(v.shape[axis] for v in values)
    out = np.empty(shape, dtype)
    index = [slice(None)] * first.ndim
    offset = 0
    for v in values:
        index[axis] = slice(offset, offset + v.shape[axis])
        interrupt.copyto(ctx, out[tuple(index)], v, casting="same_kind")
        offset += v.shape[axis]
    return out


def _np_str(v: np.ndarray) -> str:
    """A vector as TF's messages print it: [2 3]."""
    return "[" + " ".join(str(int(x)) for x in v.reshape(-1)) + "]"


@kernel("ConcatOffset")
def _concat_offset(ctx, concat_dim, *shapes):
    axis = int(concat_dim)
    n = shapes[0].size
    if not -n <= axis < n:
        raise _invalid(f"Concat dim is out of range: {axis} vs. {n}")
    axis %= n
    out, offset = [], 0
    for i, s in enumerate(shapes):
        if s.size != n:
            raise _invalid(f"input {i} should contain {n} elements, but got {s.size}")
        differs = s != shapes[0]
        differs[axis] = False
        if differs.any():
            raise _invalid(f"All dimensions except {axis} must match. Input {i} has shape "
                           f"{_np_str(s)} and doesn't match input 0 with shape "
                           f"{_np_str(shapes[0])}.")
        o = np.zeros_like(s)
        o[axis] = offset
        offset += int(s[axis])
        out.append(o)
    return tuple(out)


# ---- Split, SplitV ------------------------------------------------------------------------


@kernel_factory("Split", forwards_input=True)
def _split(node):
    num = node.attrs["num_split"]
    plans = _Plans()

    def compute(ctx, split_dim, value):
        plan = plans.get(value, split_dim)
        if plan is None:
            plan = plans.put(value, split_dim, None, _split_plan(value, split_dim, num))
        return _cut(value, plan)

    return compute


def _split_plan(value, split_dim, num: int):
    axis = int(split_dim)
    n = value.ndim
    if not -n <= axis < n:
        raise _invalid(f"-input rank(-{n}) <= split_dim < input rank ({n}), but got {axis}")
    axis %= n
    size = value.shape[axis]
    if size % num:
        raise _invalid(f"Number of ways to split should evenly divide the split dimension, "
                       f"but got split_dim {axis} (size = {size}) and num_split {num}")
    if num == 1:  # one output: the bare value (kernels/registry.py's contract)
        return None
    step = size // num
    return _pieces_plan(value, axis, [i * step for i in range(num + 1)])


@kernel_factory("SplitV", forwards_input=True)
def _split_v(node):
    num = node.attrs["num_split"]
    plans = _Plans()

    def compute(ctx, value, size_splits, split_dim):
        plan = plans.get(value, split_dim, size_splits)
        if plan is None:
            plan = plans.put(value, split_dim, size_splits,
                             _split_v_plan(value, size_splits, split_dim, num))
        return _cut(value, plan)

    return compute


def _split_v_plan(value, size_splits, split_dim, num: int):
    axis = int(split_dim)
    n = value.ndim
    if not -n <= axis < n:
        raise _invalid(f"-input rank(-{n}) <= split_dim < input rank ({n}), but got {axis}")
    axis %= n
    sizes = size_splits.reshape(-1).tolist()
    if len(sizes) != num:
        raise _invalid(f"Number of split sizes ({len(sizes)}) must match num_split "
                       f"({num})")
    total = value.shape[axis]
    unknown = [i for i, s in enumerate(sizes) if s == -1]
    if len(unknown) > 1:
        raise _invalid(f"There can only be one -1 in the input, but found {len(unknown)}")
    known = sum(s for s in sizes if s != -1)
    if (not unknown and known != total) or (unknown and known > total):
        raise _invalid("Determined shape must either match input shape along split_dim "
                       "exactly if fully specified, or be less than the size of the input "
                       f"along split_dim if not fully specified.  Got: {known}")
    if unknown:
        sizes[unknown[0]] = total - known
    if num == 1:  # one output: the bare value
        return None
    return _pieces_plan(value, axis, list(itertools.accumulate(sizes, initial=0)))


class _Plans:
    """A Split/SplitV node's last plan (`_pieces_plan`, or None for the bare value), kept
    for the value's shape and the very objects it was made from when those are read-only
    arrays (the split dimension and sizes are constants in nearly every graph: the same
    read-only arrays every step, which the entry holds, so their identities cannot be
    taken by others): a step's RNN cell splits without working its pieces out again
    (~2 us of Python each)."""

    __slots__ = ("entry",)

    def __init__(self):
        self.entry = None  # (key, plan): one attribute, so that steps on other threads
        # never see one step's key with another's plan

    def get(self, value, *args):
        entry = self.entry
        if entry is not None and entry[0][0] == value.shape and all(
                a is b for a, b in zip(entry[0][1:], args, strict=True)):
            return entry[1]
        return None

    def put(self, value, split_dim, size_splits, plan):
        args = (split_dim,) if size_splits is None else (split_dim, size_splits)
        if all(type(a) is np.ndarray and not a.flags.writeable for a in args):
            self.entry = ((value.shape, *args), plan)
        return plan


def _cut(value, plan):
    """The pieces of `value` by its plan (`_pieces_plan`): the bare value for None."""
    if plan is None:
        return value
    copy, index = plan
    if copy:
        return tuple(value[ix].copy() for ix in index)
    return tuple(value[ix] for ix in index)


def _pieces_plan(value: np.ndarray, axis: int, bounds) -> tuple:
    """(copied?, index of each piece) of value[..., bounds[i]:bounds[i + 1], ...] along
    `axis`, by plain slicing (np.split costs ~8 us for three pieces, slicing ~1 us): views
    along axis 0, and along another axis too for large values; small pieces along another
    axis are copied (contiguous), as TensorFlow's Split makes them: an RNN cell's gates feed
    several elementwise kernels each, and NumPy takes twice as long over a strided (32, 64)
    view as over its ~0.7 us copy."""
    if axis == 0 or value.ndim == 1:
        return False, [slice(lo, hi) for lo, hi in itertools.pairwise(bounds)]
    lead = (slice(None),) * axis
    index = [lead + (slice(lo, hi),) for lo, hi in itertools.pairwise(bounds)]
    return not (value.size > _COPIED_PIECES_MAX or math.prod(value.shape[:axis]) == 1), index


_COPIED_PIECES_MAX = 1 << 16  # elements of a value whose pieces along axis > 0 are copied


# ---- Pack, Unpack ------------------------------------------------------------------------


def _object_scalar(value) -> np.ndarray:
    """A 0-d object array holding `value` (a handle), or `value` if it is an array."""
    if isinstance(value, np.ndarray):
        return value
    out = np.empty((), object)
    out[()] = value
    return out


@kernel_factory("Pack")
def _pack(node):
    axis = node.attrs["axis"]

    def compute(ctx, *values):
        if not isinstance(values[0], (np.ndarray, np.generic)):  # handles (resources): objects
            values = [_object_scalar(v) for v in values]
        first = values[0].shape
        for i, v in enumerate(values[1:], 1):
            if v.shape != first:
                raise _invalid(f"Shapes of all inputs must match: values[0].shape = "
                               f"{_shape_str(first)} != values[{i}].shape = "
                               f"{_shape_str(v.shape)}")
        n = len(first) + 1
        if not -n <= axis < n:
            raise _invalid(f"axis = {axis} not in [{-n}, {n})")
        if interrupt.blocked(sum(v.nbytes for v in values)):
            a = axis % n
            out = np.empty(first[:a] + (len(values),) + first[a:], np.result_type(*values))
            for i, v in enumerate(values):
                interrupt.copyto(ctx, out[(slice(None),) * a + (i,)], v, "same_kind")
            return out
        return np.stack(values, axis=axis)

    return compute


@kernel_factory("Unpack", forwards_input=True)
def _unpack(node):
    num, axis = node.attrs["num"], node.attrs["axis"]

    def compute(ctx, value):
        n = value.ndim
        if not -n <= axis < n:
            raise _invalid(f"axis = {axis} not in [{-n}, {n})")
        a = axis % n
        if value.shape[a] != num:
            raise _invalid(f"Input shape axis {a} must equal {num}, got shape "
                           f"{_shape_str(value.shape)}")
        moved = value if a == 0 else np.moveaxis(value, a, 0)
        return tuple(moved) if num != 1 else moved[0]  # one output: the bare value

    return compute


# ---- Tile ---------------------------------------------------------------------------------


@kernel("Tile", forwards_input=True)
def _tile(ctx, x, multiples):
    if multiples.ndim != 1 or multiples.size != x.ndim:
        raise _invalid(f"Expected multiples argument to be a vector of length {x.ndim} but got "
                       f"length {multiples.shape[0] if multiples.ndim else 0}")
    m = multiples.tolist()
    for i, k in enumerate(m):
        if k < 0:
            raise _invalid(f"Expected multiples[{i}] >= 0, but got {k}")
    if all(k == 1 for k in m):
        return x
    shape = [d * k for d, k in zip(x.shape, m, strict=True)]
    resource_guard.check_shape(shape, x.dtype, ctx)
    if not interrupt.blocked(x.itemsize * math.prod(shape)):
        return np.tile(x, m)
    out = np.empty(shape, x.dtype)
    # Output index (i0*d0 + j0, i1*d1 + j1, ...) holds x[j0, j1, ...]: viewed with the axes
    # (m0, d0, m1, d1, ...), the output is x broadcast over the m axes.
    interleaved = [n for pair in zip(m, x.shape, strict=True) for n in pair]
    stretched = [n for d in x.shape for n in (1, d)]
    interrupt.copyto(ctx, out.reshape(interleaved), x.reshape(stretched))
    return out


# ---- Pad, PadV2, MirrorPad, MirrorPadGrad ------------------------------------------------


def _paddings(x, paddings) -> list:
    if paddings.ndim != 2 or paddings.shape[1] != 2:
        raise _invalid(f"paddings must be a matrix with 2 columns: "
                       f"{_shape_str(paddings.shape)}")
    if paddings.shape[0] != x.ndim:
        raise _invalid(f"The first dimension of paddings must be the rank of inputs"
                       f"{_shape_str(paddings.shape)} {_shape_str(x.shape)}")
    pads = paddings.tolist()
    for before, after in pads:
        if before < 0 or after < 0:
            raise _invalid(f"Paddings must be non-negative: {before} {after}")
    return pads


def _pad_constant(ctx, x, pads, value) -> np.ndarray:
    if not any(b or a for b, a in pads):
        return x
    shape = [d + b + a for d, (b, a) in zip(x.shape, pads, strict=True)]
    out = interrupt.full(ctx, shape, value, x.dtype)
    interior = tuple(slice(b, b + d) for d, (b, _) in zip(x.shape, pads, strict=True))
    interrupt.copyto(ctx, out[interior], x)
    return out


def _checked_pads(ctx, x, paddings) -> list:
    pads = _paddings(x, paddings)
    resource_guard.check_shape([d + b + a for d, (b, a) in zip(x.shape, pads, strict=True)],
                               x.dtype, ctx)
    return pads


@kernel("Pad", forwards_input=True)
def _pad(ctx, x, paddings):
    return _pad_constant(ctx, x, _checked_pads(ctx, x, paddings), b"" if x.dtype == _OBJECT else 0)


@kernel("PadV2", forwards_input=True)
def _pad_v2(ctx, x, paddings, constant_values):
    if constant_values.ndim != 0:
        raise _invalid(f"constant_values must be a scalar. Got: "
                       f"{_shape_str(constant_values.shape)}")
    return _pad_constant(ctx, x, _checked_pads(ctx, x, paddings), constant_values)


def _check_mirror(x, pads, mode: str) -> None:
    offset = 1 if mode == "REFLECT" else 0
    for d, (b, a) in zip(x.shape, pads, strict=True):
        if b > d - offset or a > d - offset:
            if offset:
                raise _invalid(f"paddings must be less than the dimension size: {b}, {a} not "
                               f"less than {d}")
            raise _invalid(f"paddings must be no greater than the dimension size: {b}, {a} "
                           f"greater than {d}")


def _mirror_pad_blocked(ctx, x, pads, shape, reflect: bool) -> np.ndarray:
    """np.pad(x, pads, "reflect" or "symmetric") of a large result, copied in blocks: x
    into the middle, then axis by axis each side from its mirror image (the axes before
    it already padded, those after it not yet), as np.pad does."""
    out = np.empty(shape, x.dtype)
    middle = [slice(b, b + d) for d, (b, _) in zip(x.shape, pads, strict=True)]
    interrupt.copyto(ctx, out[tuple(middle)], x)
    shift = 1 if reflect else 0
    for axis, (d, (b, a)) in enumerate(zip(x.shape, pads, strict=True)):
        index = [slice(None)] * axis + middle[axis:]

        def side(dst, src, _axis=axis, _index=index):
            _index[_axis] = dst
            target = out[tuple(_index)]
            _index[_axis] = src
            interrupt.copyto(ctx, target, np.flip(out[tuple(_index)], _axis))

        if b:  # out[b - 1 - j] = out[b + shift + j]
            side(slice(0, b), slice(b + shift, b + shift + b))
        if a:  # out[b + d + j] = out[b + d - 1 - shift - j]
            side(slice(b + d, b + d + a), slice(b + d - shift - a, b + d - shift))
    return out


@kernel_factory("MirrorPad", forwards_input=True)
def _mirror_pad(node):
    mode = node.attrs["mode"]
    np_mode = mode.lower()

    def compute(ctx, x, paddings):
        pads = _paddings(x, paddings)
        _check_mirror(x, pads, mode)  # (at most twice x per axis)
        if not any(b or a for b, a in pads):
            return x
        shape = [d + b + a for d, (b, a) in zip(x.shape, pads, strict=True)]
        resource_guard.check_shape(shape, x.dtype, ctx)
        if interrupt.blocked(x.itemsize * math.prod(shape)):
            return _mirror_pad_blocked(ctx, x, pads, shape, np_mode == "reflect")
        return np.pad(x, pads, mode=np_mode)

    return compute


@kernel_factory("MirrorPadGrad")
def _mirror_pad_grad(node):
    reflect = node.attrs["mode"] == "REFLECT"

    def compute(ctx, grad, paddings):
        pads = paddings.tolist()
        out = grad
        for axis, (before, after) in enumerate(pads):
            n = out.shape[axis] - before - after
            if n < 0:
                raise _invalid("paddings must be no greater than the dimension size")
            idx = [slice(None)] * out.ndim

            def take(lo, hi, _axis=axis, _idx=idx):
                _idx[_axis] = slice(lo, hi)
                return tuple(_idx)

            center = out[take(before, before + n)].copy()
            shift = 1 if reflect else 0
            if before:
                left = np.flip(out[take(0, before)], axis=axis)
                center[take(shift, shift + before)] += left
            if after:
                right = np.flip(out[take(before + n, before + n + after)], axis=axis)
                center[take(n - shift - after, n - shift)] += right
            out = center
        return out if out is not grad else grad.copy()

    return compute


# ---- BroadcastTo, BroadcastArgs ------------------------------------------------------------


@kernel("BroadcastTo", forwards_input=True)
def _broadcast_to(ctx, x, shape):
    target = tuple(shape.tolist())
    if x.shape == target:
        return x
    if x.ndim > len(target):
        raise _invalid(f"Rank of input ({x.ndim}) must be no greater than rank of output "
                       f"shape ({len(target)}).")
    large = False
    if min(target, default=0) >= 0:
        resource_guard.check_shape(target, x.dtype, ctx)
        large = interrupt.blocked(x.itemsize * math.prod(target))
    try:
        if not large and min(target, default=0) >= 0:
            # Materialized (a zero-stride view would be read-only wherever it ends up), by
            # one broadcasting copy (np.array(np.broadcast_to(...)) costs ~25 us more),
            # which raises ValueError where x does not broadcast to exactly `target`.
            out = np.empty(target, x.dtype)
            np.copyto(out, x)
            return out
        if np.broadcast_shapes(x.shape, target) != target:
            raise ValueError
        return interrupt.copyto(ctx, np.empty(target, x.dtype), x)
    except ValueError:
        raise _invalid(f"Incompatible shapes: {_shape_str(x.shape)} vs. "
                       f"{_shape_str(target)}") from None


@kernel("BroadcastArgs")
def _broadcast_args(ctx, s0, s1):
    try:
        out = np.broadcast_shapes(tuple(s0.tolist()), tuple(s1.tolist()))
    except ValueError:
        raise _invalid(f"Incompatible shapes: {_shape_str(s0)} vs. {_shape_str(s1)}") from None
    return np.array(out, dtype=s0.dtype)


# ---- ReverseV2 -----------------------------------------------------------------------------


@kernel("ReverseV2", forwards_input=True)
def _reverse(ctx, x, axis):
    n = x.ndim
    axes = []
    for i, a in enumerate(axis.reshape(-1).tolist()):
        if not -n <= a < n:
            raise _invalid(f"'axis'[{i}] = {a} is out of valid range [0, {n - 1}")
        a %= n
        if a in axes:
            raise _invalid(f"axis {a} specified more than once.")
        axes.append(a)
    return np.flip(x, axis=tuple(axes)) if axes else x
