"""More math ops: Einsum, CumulativeLogsumexp, LinSpace, Bincount, HistogramFixedWidth,
LowerBound/UpperBound, LeftShift/RightShift, Bucketize, and the compositions TF1 builds from ops
(`tensordot`, `sort`, `argsort`, `searchsorted`, `histogram_fixed_width_bins`, `bincount`).
Kernels are in tensorflux/kernels/cpu/math_ext_ops.py.
"""

from __future__ import annotations

import builtins
import re
import string

import numpy as np

from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import checked_dims
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, joining_ops, reduction_ops
from tensorflux.ops.comparison_ops import greater, less, where_v2
from tensorflux.ops.gather_ops import top_k
from tensorflux.ops.joining_ops import broadcast_to
from tensorflux.ops.linalg_ops import matrix_diag
from tensorflux.ops.math_ops import (
    _binary,
    add,
    cast,
    maximum,
    minimum,
    multiply,
    subtract,
    truediv,
)
from tensorflux.ops.unary_ops import exp, floor, log, negative

__all__ = ["einsum", "tensordot", "sort", "argsort", "searchsorted", "lin_space", "linspace",
           "bincount", "histogram_fixed_width", "histogram_fixed_width_bins",
           "roll"]

_FLOAT = "T: {bfloat16, half, float, double}"


# ---- Einsum ------------------------------------------------------------------------------


def _parse_equation(equation: str, ranks: list[int]):
    """(input subscripts, output subscripts) with any '...' spelled out as upper-case
    letters for the inputs' ranks (which must be known)."""
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->")
    else:
        lhs = eq
        letters = re.sub(r"\.\.\.", "", lhs).replace(",", "")
        out = ("..." if "..." in lhs else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1))
    ins = lhs.split(",")
    if len(ins) != len(ranks):
        raise ValueError(f"Expected {len(ins)} inputs for equation {equation!r}, got "
                         f"{len(ranks)}")
    ell = builtins.max([r - len(s.replace("...", "")) for s, r in zip(ins, ranks, strict=True)
                        if "..." in s], default=0)
    fill = string.ascii_uppercase[:ell]
    ins = [s.replace("...", fill[ell - (r - len(s.replace("...", ""))):]) for s, r in
           zip(ins, ranks, strict=True)]
    return ins, out.replace("...", fill)


def _einsum_shape(op):
    dims = [checked_dims(t) for t in op.inputs]
    if any(d is None for d in dims):
        return [tensor_shape.unknown_shape()]
    ins, out = _parse_equation(op.attrs["equation"], [len(d) for d in dims])
    sizes: dict[str, int | None] = {}
    for subs, d in zip(ins, dims, strict=True):
        if len(subs) != len(d):
            raise ValueError(f"Input has rank {len(d)}, equation {op.attrs['equation']!r} "
                             f"has {len(subs)} labels for it")
        for c, n in zip(subs, d, strict=True):
            if c not in sizes or sizes[c] == 1:
                sizes[c] = n if c not in sizes or n is not None else sizes[c]
            elif n is not None and sizes[c] is not None and n not in (1, sizes[c]):
                raise ValueError(f"Expected dimension {sizes[c]} at axis of label {c!r}, "
                                 f"got {n}")
            elif sizes[c] is None:
                sizes[c] = n
    return [tensor_shape.TensorShape([sizes.get(c) for c in out])]


define_op("Einsum", inputs=["inputs: N * T"], outputs=["output: T"],
          attrs=["equation: string", "N: int >= 1", "T: type"], shape_fn=_einsum_shape)


def einsum(equation, *inputs, **kwargs):
    """The Einstein summation `equation` over `inputs` (`tf.einsum`): e.g. "ij,jk->ik" is
    a matrix product; '...' stands for broadcast leading dimensions."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"Invalid keyword arguments for einsum: {', '.join(kwargs)}")
    with graph_lib.name_scope(name, "einsum", inputs) as name:
        tensors = [convert_to_tensor(x, name="input") for x in inputs]
        return apply_op("Einsum", inputs=tensors, equation=equation.replace(" ", ""),
                        name=name)


@gradient("Einsum")
def _einsum_grad(op, grad):
    """Input i's gradient is the einsum of grad with the other inputs onto input i's
    distinct labels; labels only input i has (summed away) are broadcast back, and a label
    repeated within input i (a diagonal) puts the gradient on that diagonal."""
    xs = list(op.inputs)
    ranks = [x.shape.ndims for x in xs]
    if any(r is None for r in ranks):
        raise NotImplementedError("Einsum gradient needs inputs of known rank")
    ins, out = _parse_equation(op.attrs["equation"], ranks)
    used = set("".join(ins) + out)
    fresh = iter(c for c in string.ascii_letters if c not in used)
    grads = []
    for i, (x, subs) in enumerate(zip(xs, ins, strict=True)):
        others = [s for j, s in enumerate(ins) if j != i]
        seen = set(out).union(*others)
        unique = "".join(dict.fromkeys(subs))
        first_axis = {c: subs.index(c) for c in unique}
        kept = "".join(c for c in unique if c in seen)
        g = einsum(",".join([out] + others) + "->" + kept, grad,
                   *[xs[j] for j in range(len(xs)) if j != i])
        if kept != unique:
            for axis, c in enumerate(unique):
                if c not in seen:
                    g = array_ops.expand_dims(g, axis)
            shape = array_ops.shape(x)
            g = broadcast_to(g, joining_ops.stack([shape[first_axis[c]] for c in unique]))
        if unique != subs:
            g = _onto_diagonals(g, x, subs, unique, first_axis, fresh)
        grads.append(g)
    return grads


def _onto_diagonals(g, x, subs, unique, first_axis, fresh):
    """g (labelled `unique`) placed on the diagonals of `subs`'s repeated labels: each
    later occurrence of a label gets a fresh label tied to the first by an identity."""
    target, eyes, eye_subs = list(subs), [], []
    for axis, c in enumerate(subs):
        if axis != first_axis[c]:
            f = next(fresh)
            target[axis] = f
            n = array_ops.shape(x)[first_axis[c]]
            eyes.append(matrix_diag(array_ops.ones(array_ops.reshape(n, [1]), x.dtype)))
            eye_subs.append(c + f)
    return einsum(",".join([unique] + eye_subs) + "->" + "".join(target), g, *eyes)


def tensordot(a, b, axes, name=None):
    """The sum of products of a and b over `axes` (`tf.tensordot`): an int N (a's last N
    with b's first N dimensions) or a pair of axis lists. a and b need known ranks."""
    with graph_lib.name_scope(name, "Tensordot", [a, b, axes]) as name:
        a = convert_to_tensor(a, name="a")
        b = convert_to_tensor(b, name="b")
        ra, rb = a.shape.ndims, b.shape.ndims
        if ra is None or rb is None:
            raise ValueError("tensordot needs tensors of known rank")
        if isinstance(axes, (int, np.integer)):
            if axes < 0:
                raise ValueError(f"'axes' must be at least 0, got {axes}")
            axes_a, axes_b = list(builtins.range(ra - axes, ra)), list(builtins.range(axes))
        else:
            axes_a, axes_b = ([x] if isinstance(x, (int, np.integer)) else list(x)
                              for x in axes)
            if len(axes_a) != len(axes_b):
                raise ValueError(f"Different number of contraction axes 'a' and 'b', "
                                 f"{len(axes_a)} != {len(axes_b)}.")
        axes_a = [x % ra for x in axes_a]
        axes_b = [x % rb for x in axes_b]
        letters = iter(string.ascii_letters)
        sa = [next(letters) for _ in builtins.range(ra)]
        sb = [next(letters) for _ in builtins.range(rb)]
        for i, j in zip(axes_a, axes_b, strict=True):
            sb[j] = sa[i]
        out = [c for k, c in enumerate(sa) if k not in axes_a] + \
            [c for k, c in enumerate(sb) if k not in axes_b]
        eq = f"{''.join(sa)},{''.join(sb)}->{''.join(out)}"
        return apply_op("Einsum", inputs=[a, b], equation=eq, name=name)


# ---- sort, argsort (TopKV2 along the last axis) ------------------------------------------


def _move_axis_last(x, axis):
    rank = x.shape.ndims
    if rank is None and axis == -1:
        return x, None
    if rank is None:
        raise ValueError("sort along an axis other than -1 needs a tensor of known rank")
    axis = axis % rank if rank else 0
    if axis == rank - 1:
        return x, None
    perm = list(builtins.range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return array_ops.transpose(x, perm), perm


def _sort_by_top_k(values, axis, direction, want_indices):
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f'"{direction}" is not a valid direction; expected "ASCENDING" or '
                         f'"DESCENDING"')
    x, perm = _move_axis_last(values, axis)
    n = array_ops.shape(x)[-1]
    if direction == "ASCENDING":
        flip = (lambda t: apply_op("Invert", x=t)) if x.dtype.is_integer else negative
        vals, idx = top_k(flip(x), n)
        vals = flip(vals)
    else:
        vals, idx = top_k(x, n)
    out = idx if want_indices else vals
    return out if perm is None else array_ops.transpose(out, perm)


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """`values` sorted along `axis` (`tf.sort`)."""
    with graph_lib.name_scope(name, "sort", [values]):
        return _sort_by_top_k(convert_to_tensor(values, name="values"), axis, direction,
                              False)


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The indices that sort `values` along `axis` (`tf.argsort`); ties keep their order."""
    with graph_lib.name_scope(name, "argsort", [values]):
        return _sort_by_top_k(convert_to_tensor(values, name="values"), axis, direction,
                              True)


# ---- LowerBound, UpperBound --------------------------------------------------------------


def _bound_shape(op):
    s = checked_dims(op.inputs[0], rank=2)
    v = checked_dims(op.inputs[1], rank=2)
    common_shapes.merge_dim(s[0], v[0])
    return [tensor_shape.TensorShape(v)]


for _bound in ("LowerBound", "UpperBound"):
    define_op(_bound, inputs=["sorted_inputs: T", "values: T"], outputs=["output: out_type"],
              attrs=["T: type", "out_type: {int32, int64} = DT_INT32"], shape_fn=_bound_shape)
not_differentiable("LowerBound", "UpperBound")


def searchsorted(sorted_sequence, values, side="left", out_type=dtypes.int32, name=None):
    """For each value, its insertion index into the innermost sorted row
    (`tf.searchsorted`): the first index whose entry is >= value ("left") or > value
    ("right")."""
    if side not in ("left", "right"):
        raise ValueError(f"side must be either 'right' or 'left'. Saw: {side}.")
    with graph_lib.name_scope(name, "searchsorted", [sorted_sequence, values]):
        seq = convert_to_tensor(sorted_sequence, name="sorted_sequence")
        vals = convert_to_tensor(values, dtype=seq.dtype, name="values")
        seq2 = array_ops.reshape(seq, [-1, array_ops.shape(seq)[-1]])
        vals2 = array_ops.reshape(vals, [-1, array_ops.shape(vals)[-1]])
        op_type = "LowerBound" if side == "left" else "UpperBound"
        out = apply_op(op_type, sorted_inputs=seq2, values=vals2, out_type=out_type)
        return array_ops.reshape(out, array_ops.shape(vals))


# ---- LinSpace ----------------------------------------------------------------------------


def _lin_space_shape(op):
    for t in op.inputs:
        checked_dims(t, rank=0)
    return [tensor_shape.TensorShape([common_shapes.scalar_value(op.inputs[2])])]


define_op("LinSpace", inputs=["start: T", "stop: T", "num: Tidx"], outputs=["output: T"],
          attrs=[_FLOAT, "Tidx: {int32, int64} = DT_INT32"], shape_fn=_lin_space_shape)
not_differentiable("LinSpace")


def lin_space(start, stop, num, name=None):
    """`num` evenly spaced values from start to stop inclusive (`tf.lin_space`)."""
    with graph_lib.name_scope(name, "LinSpace", [start, stop]) as name:
        start = convert_to_tensor(start, name="start")
        stop = convert_to_tensor(stop, dtype=start.dtype, name="stop")
        return apply_op("LinSpace", start=start, stop=stop, num=num, name=name)


linspace = lin_space


# ---- CumulativeLogsumexp -----------------------------------------------------------------


define_op("CumulativeLogsumexp", inputs=["x: T", "axis: Tidx"], outputs=["out: T"],
          attrs=["exclusive: bool = false", "reverse: bool = false", _FLOAT,
                 "Tidx: {int32, int64} = DT_INT32"], shape_fn=common_shapes.unchanged)


def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None):
    """log(cumsum(exp(x))) along `axis`, computed stably (`tf.math.cumulative_logsumexp`);
    `exclusive` and `reverse` as for cumsum (an empty sum is -inf)."""
    with graph_lib.name_scope(name, "CumulativeLogsumexp", [x]) as name:
        x = convert_to_tensor(x, name="x")
        return apply_op("CumulativeLogsumexp", x=x, axis=axis, exclusive=exclusive,
                        reverse=reverse, name=name)


@gradient("CumulativeLogsumexp")
def _cumulative_logsumexp_grad(op, grad):
    """The gradient's positive and negative parts, each taken through logs and a reverse
    cumulative logsumexp, then exp(. + x)."""
    x, axis = op.inputs
    out = op.outputs[0]
    exclusive, reverse = op.attrs["exclusive"], op.attrs["reverse"]
    lowest = array_ops.fill(array_ops.shape(grad), np.asarray(
        np.finfo(grad.dtype.as_numpy_dtype).min if grad.dtype != dtypes.bfloat16 else -3e38,
        grad.dtype.as_numpy_dtype))
    zero = array_ops.zeros_like(grad)
    log_pos = where_v2(greater(grad, zero), log(maximum(grad, zero)), lowest)
    log_neg = where_v2(less(grad, zero), log(maximum(negative(grad), zero)), lowest)

    def part(lg):
        return exp(add(cumulative_logsumexp(subtract(lg, out), axis, exclusive=exclusive,
                                            reverse=not reverse), x))

    return [subtract(part(log_pos), part(log_neg)), None]


# ---- Bincount, HistogramFixedWidth -------------------------------------------------------


def _bincount_shape(op):
    checked_dims(op.inputs[1], rank=0)
    return [tensor_shape.TensorShape([common_shapes.scalar_value(op.inputs[1])])]


define_op("Bincount", inputs=["arr: int32", "size: int32", "weights: T"],
          outputs=["bins: T"], attrs=["T: {int32, int64, float, double}"],
          shape_fn=_bincount_shape)
not_differentiable("Bincount")


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=dtypes.int32,
             name=None):
    """Counts (or sums of `weights`) of each value 0..size-1 in the int32 `arr`
    (`tf.math.bincount`); size is max(arr) + 1 clipped to [minlength, maxlength]."""
    with graph_lib.name_scope(name, "bincount", [arr, weights]):
        arr = convert_to_tensor(arr, dtype=dtypes.int32, name="arr")
        nonempty = cast(greater(array_ops.size(arr), 0), dtypes.int32)
        size = multiply(nonempty, add(reduction_ops.reduce_max(arr), 1))
        if minlength is not None:
            size = maximum(convert_to_tensor(minlength, dtypes.int32), size)
        if maxlength is not None:
            size = minimum(convert_to_tensor(maxlength, dtypes.int32), size)
        if weights is None:
            weights = array_ops.zeros([0], dtype)
        else:
            weights = convert_to_tensor(weights, name="weights")
        return apply_op("Bincount", arr=arr, size=size, weights=weights)


define_op("Bucketize", inputs=["input: T"], outputs=["output: int32"],
          attrs=["T: {int32, int64, float, double}", "boundaries: list(float)"],
          shape_fn=common_shapes.unchanged)
not_differentiable("Bucketize")


def bucketize(input, boundaries, name=None):  # noqa: A002 - TF's argument name
    """The index i of each value's bucket: boundaries[i-1] <= value < boundaries[i]
    (`Bucketize`; boundaries sorted)."""
    return apply_op("Bucketize", input=input, boundaries=[float(b) for b in boundaries],
                    name=name)


def _histogram_shape(op):
    checked_dims(op.inputs[1], rank=1)
    checked_dims(op.inputs[2], rank=0)
    return [tensor_shape.TensorShape([common_shapes.scalar_value(op.inputs[2])])]


define_op("HistogramFixedWidth", inputs=["values: T", "value_range: T", "nbins: int32"],
          outputs=["out: dtype"], attrs=["T: {int32, int64, float, double}",
                                          "dtype: {int32, int64} = DT_INT32"],
          shape_fn=_histogram_shape)
not_differentiable("HistogramFixedWidth")


def histogram_fixed_width(values, value_range, nbins=100, dtype=dtypes.int32, name=None):
    """Counts of `values` in `nbins` equal bins over value_range = [lo, hi]
    (`tf.histogram_fixed_width`); values outside go to the first or last bin."""
    with graph_lib.name_scope(name, "histogram_fixed_width", [values, value_range]) as name:
        values = convert_to_tensor(values, name="values")
        value_range = convert_to_tensor(value_range, dtype=values.dtype, name="value_range")
        return apply_op("HistogramFixedWidth", values=values, value_range=value_range,
                        nbins=nbins, dtype=dtype, name=name)


def histogram_fixed_width_bins(values, value_range, nbins=100, dtype=dtypes.int32,
                               name=None):
    """The bin index of each of `values` for `histogram_fixed_width`
    (`tf.histogram_fixed_width_bins`)."""
    with graph_lib.name_scope(name, "histogram_fixed_width_bins", [values, value_range]):
        values = convert_to_tensor(values, name="values")
        shape = array_ops.shape(values)
        flat = array_ops.reshape(values, [-1])
        value_range = convert_to_tensor(value_range, dtype=values.dtype, name="value_range")
        nbins_f = cast(nbins, values.dtype)
        scaled = truediv(subtract(flat, value_range[0]),
                         subtract(value_range[1], value_range[0]))
        idx = floor(multiply(nbins_f, scaled))
        idx = minimum(maximum(idx, array_ops.zeros_like(idx)),
                      subtract(nbins_f, array_ops.ones_like(nbins_f)))
        return array_ops.reshape(cast(idx, dtype), shape)


# ---- LeftShift, RightShift ---------------------------------------------------------------

_binary("LeftShift", "{int8, int16, int32, int64, uint8, uint16, uint32, uint64}")
_binary("RightShift", "{int8, int16, int32, int64, uint8, uint16, uint32, uint64}")
not_differentiable("LeftShift", "RightShift")


def left_shift(x, y, name=None):
    """x << y elementwise, with broadcasting (`tf.bitwise.left_shift`)."""
    return apply_op("LeftShift", x=x, y=y, name=name or "LeftShift")


def right_shift(x, y, name=None):
    """x >> y elementwise (arithmetic for signed types) (`tf.bitwise.right_shift`)."""
    return apply_op("RightShift", x=x, y=y, name=name or "RightShift")



# ---- Roll --------------------------------------------------------------------------------


def _roll_shape(op):
    shift = checked_dims(op.inputs[1])
    axis = checked_dims(op.inputs[2])
    if shift is not None and len(shift) > 1 or axis is not None and len(axis) > 1:
        raise ValueError("shift and axis must be scalars or vectors")
    return [op.inputs[0].shape]


define_op("Roll", inputs=["input: T", "shift: Tshift", "axis: Taxis"], outputs=["output: T"],
          attrs=["T: type", "Tshift: {int32, int64}", "Taxis: {int32, int64}"],
          shape_fn=_roll_shape)


def roll(input, shift, axis, name=None):  # noqa: A002
    """`input` with its elements shifted cyclically by `shift` along `axis` (either may
    be a list) (`tf.roll`)."""
    return apply_op("Roll", input=input, shift=shift, axis=axis, name=name or "Roll")


@gradient("Roll")
def _roll_grad(op, grad):
    return [roll(grad, negative(op.inputs[1]), op.inputs[2]), None, None]
