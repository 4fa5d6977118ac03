"""Structural matrix ops: MatrixBandPart, Diag/DiagPart, MatrixDiag/MatrixDiagPart/
MatrixSetDiag (V1 and V3, the k-band versions with an `align` attr) and Cross, with their
TF1 wrappers and gradients. Kernels are in tensorflux/kernels/cpu/linalg_ops.py.

Packed diagonals (V3): for a band k = (k0, k1) of an [..., M, N] matrix, diagonal d
(k0 <= d <= k1) has `min(M + min(0, d), N - max(0, d))` elements and is row `k1 - d` of the
packed [..., k1 - k0 + 1, max_len] array (the row dimension is dropped when k0 == k1). A
short diagonal sits at the right of its row when `align` says so for its side
("RIGHT_LEFT": superdiagonals right, subdiagonals left), the rest is padding.
"""

from __future__ import annotations

import builtins

import numpy as np

from tensorflux.framework import common_shapes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import checked_dims
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, joining_ops
from tensorflux.ops.math_ops import _conj
from tensorflux.ops.sequence_ops import range as _range

__all__ = ["matrix_band_part", "diag", "diag_part", "matrix_diag", "matrix_diag_part",
           "matrix_set_diag", "cross"]

_ALIGN = "align: {'LEFT_RIGHT', 'RIGHT_LEFT', 'LEFT_LEFT', 'RIGHT_RIGHT'} = 'RIGHT_LEFT'"


# ---- MatrixBandPart ----------------------------------------------------------------------


def _band_part_shape(op):
    checked_dims(op.inputs[0], at_least=2)
    for t in op.inputs[1:]:
        checked_dims(t, rank=0)
    return [op.inputs[0].shape]


define_op("MatrixBandPart", inputs=["input: T", "num_lower: Tindex", "num_upper: Tindex"],
          outputs=["band: T"], attrs=["T: type", "Tindex: {int32, int64} = DT_INT64"],
          shape_fn=_band_part_shape)


def matrix_band_part(input, num_lower, num_upper, name=None):  # noqa: A002
    """The band of each innermost matrix (`tf.linalg.band_part`): entry (m, n) is kept when
    (num_lower < 0 or m - n <= num_lower) and (num_upper < 0 or n - m <= num_upper), else
    zeroed. A negative count keeps that whole triangle."""
    with graph_lib.name_scope(name, "MatrixBandPart", [input]) as name:
        input = convert_to_tensor(input, name="input")  # noqa: A001
        lo = convert_to_tensor(num_lower, name="num_lower")
        up = convert_to_tensor(num_upper, dtype=lo.dtype, name="num_upper")
        return apply_op("MatrixBandPart", input=input, num_lower=lo, num_upper=up,
                        name=name)


@gradient("MatrixBandPart")
def _matrix_band_part_grad(op, grad):
    return [matrix_band_part(grad, op.inputs[1], op.inputs[2]), None, None]


# ---- Diag, DiagPart (any rank) -----------------------------------------------------------

_DIAG_TYPES = "T: {bfloat16, half, float, double, int32, int64, complex64, complex128}"


def _diag_shape(op):
    dims = checked_dims(op.inputs[0], at_least=1)
    return [tensor_shape.unknown_shape() if dims is None
            else tensor_shape.TensorShape(dims + dims)]


def _diag_part_shape(op):
    dims = checked_dims(op.inputs[0])
    if dims is None:
        return [tensor_shape.unknown_shape()]
    if len(dims) % 2 or not dims:
        raise ValueError(f"Input must have even rank <= 6, input rank is {len(dims)}")
    half = len(dims) // 2
    return [tensor_shape.TensorShape(
        common_shapes.merge_dims(dims[:half], dims[half:]))]


define_op("Diag", inputs=["diagonal: T"], outputs=["output: T"], attrs=[_DIAG_TYPES],
          shape_fn=_diag_shape)
define_op("DiagPart", inputs=["input: T"], outputs=["diagonal: T"], attrs=[_DIAG_TYPES],
          shape_fn=_diag_part_shape)


def diag(diagonal, name=None):
    """The tensor of rank 2k with `diagonal` (rank k) on its diagonal (`tf.diag`):
    output[i1..ik, i1..ik] = diagonal[i1..ik], zeros elsewhere."""
    return apply_op("Diag", diagonal=diagonal, name=name or "Diag")


def diag_part(input, name=None):  # noqa: A002
    """The inverse of `diag` (`tf.diag_part`): output[i1..ik] = input[i1..ik, i1..ik]."""
    return apply_op("DiagPart", input=input, name=name or "DiagPart")


@gradient("Diag")
def _diag_grad(op, grad):
    return [diag_part(grad)]


@gradient("DiagPart")
def _diag_part_grad(op, grad):
    return [diag(grad)]


# ---- MatrixDiag, MatrixDiagPart, MatrixSetDiag (V1: the main diagonal) ------------------


def _matrix_diag_v1_shape(op):
    dims = checked_dims(op.inputs[0], at_least=1)
    return [tensor_shape.unknown_shape() if dims is None
            else tensor_shape.TensorShape(dims + dims[-1:])]


def _matrix_diag_part_v1_shape(op):
    dims = checked_dims(op.inputs[0], at_least=2)
    if dims is None:
        return [tensor_shape.unknown_shape()]
    m, n = dims[-2:]
    k = None if m is None or n is None else builtins.min(m, n)
    return [tensor_shape.TensorShape(dims[:-2] + [k])]


def _matrix_set_diag_v1_shape(op):
    dims = checked_dims(op.inputs[0], at_least=2)
    checked_dims(op.inputs[1], at_least=1)
    return [op.inputs[0].shape if dims is None else tensor_shape.TensorShape(dims)]


define_op("MatrixDiag", inputs=["diagonal: T"], outputs=["output: T"], attrs=["T: type"],
          shape_fn=_matrix_diag_v1_shape)
define_op("MatrixDiagPart", inputs=["input: T"], outputs=["diagonal: T"], attrs=["T: type"],
          shape_fn=_matrix_diag_part_v1_shape)
define_op("MatrixSetDiag", inputs=["input: T", "diagonal: T"], outputs=["output: T"],
          attrs=["T: type"], shape_fn=_matrix_set_diag_v1_shape)


@gradient("MatrixDiag")
def _matrix_diag_v1_grad(op, grad):
    return [apply_op("MatrixDiagPart", input=grad)]


@gradient("MatrixDiagPart")
def _matrix_diag_part_v1_grad(op, grad):
    return [apply_op("MatrixSetDiag", input=array_ops.zeros_like(op.inputs[0]),
                     diagonal=grad)]


@gradient("MatrixSetDiag")
def _matrix_set_diag_v1_grad(op, grad):
    return [apply_op("MatrixSetDiag", input=grad,
                     diagonal=array_ops.zeros_like(op.inputs[1])),
            apply_op("MatrixDiagPart", input=grad)]


# ---- V3: a band of diagonals -------------------------------------------------------------


def _band(op, k_input: int):
    """(k0, k1) from the constant k input, or None."""
    k = common_shapes.constant_value(op.inputs[k_input])
    if k is None:
        return None
    k = np.reshape(k, [-1]).tolist()
    if not 1 <= len(k) <= 2:
        raise ValueError(f"diag_index must be a scalar or a vector of length 2, got {k}")
    k0, k1 = (k[0], k[0]) if len(k) == 1 else k
    if k0 > k1:
        raise ValueError(f"lower_diag_index must not be larger than upper_diag_index: "
                         f"{k0} > {k1}")
    return k0, k1


def _matrix_diag_v3_shape(op):
    dims = checked_dims(op.inputs[0], at_least=1)
    band = _band(op, 1)
    rows = common_shapes.scalar_value(op.inputs[2])
    cols = common_shapes.scalar_value(op.inputs[3])
    if dims is None or band is None:
        return [tensor_shape.unknown_shape()]
    k0, k1 = band
    batch = dims[:-2] if k0 != k1 else dims[:-1]
    length = dims[-1]
    if length is None:
        return [tensor_shape.TensorShape(batch + [None, None])]
    min_rows, min_cols = length - builtins.min(k1, 0), length + builtins.max(k0, 0)
    rows = None if rows is None else rows
    cols = None if cols is None else cols
    if (rows is None or rows < 0) and (cols is None or cols < 0):
        rows = cols = builtins.max(min_rows, min_cols)
    elif rows is None or rows < 0:
        rows = min_rows
    elif cols is None or cols < 0:
        cols = min_cols
    return [tensor_shape.TensorShape(batch + [rows, cols])]


def _matrix_diag_part_v3_shape(op):
    dims = checked_dims(op.inputs[0], at_least=2)
    band = _band(op, 1)
    if dims is None or band is None:
        return [tensor_shape.unknown_shape()]
    k0, k1 = band
    m, n = dims[-2:]
    length = None if m is None or n is None else \
        builtins.min(m + builtins.min(k1, 0), n - builtins.max(k0, 0))
    rows = [] if k0 == k1 else [k1 - k0 + 1]
    return [tensor_shape.TensorShape(dims[:-2] + rows + [length])]


def _matrix_set_diag_v3_shape(op):
    checked_dims(op.inputs[1], at_least=1)
    return [tensor_shape.TensorShape(checked_dims(op.inputs[0], at_least=2))
            if op.inputs[0].shape.ndims is not None else op.inputs[0].shape]


define_op("MatrixDiagV3", inputs=["diagonal: T", "k: int32", "num_rows: int32",
                                  "num_cols: int32", "padding_value: T"],
          outputs=["output: T"], attrs=["T: type", _ALIGN], shape_fn=_matrix_diag_v3_shape)
define_op("MatrixDiagPartV3", inputs=["input: T", "k: int32", "padding_value: T"],
          outputs=["diagonal: T"], attrs=["T: type", _ALIGN],
          shape_fn=_matrix_diag_part_v3_shape)
define_op("MatrixSetDiagV3", inputs=["input: T", "diagonal: T", "k: int32"],
          outputs=["output: T"], attrs=["T: type", _ALIGN], shape_fn=_matrix_set_diag_v3_shape)


def matrix_diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0,
                align="RIGHT_LEFT"):
    """Batched matrices with the given diagonals (`tf.linalg.diag`, `tf.matrix_diag`).

    `diagonal` [..., N] fills the main diagonal of [..., N, N] matrices; with a band k =
    (k0, k1) it holds packed diagonals (see the module docstring). Unset `num_rows` /
    `num_cols` (-1) are the smallest that fit; the rest of the output is `padding_value`.
    """
    with graph_lib.name_scope(name, "MatrixDiag", [diagonal]) as name:
        diagonal = convert_to_tensor(diagonal, name="diagonal")
        pad = convert_to_tensor(padding_value, dtype=diagonal.dtype, name="padding_value")
        return apply_op("MatrixDiagV3", diagonal=diagonal, k=k, num_rows=num_rows,
                        num_cols=num_cols, padding_value=pad, align=align, name=name)


def matrix_diag_part(input, name="diag_part", k=0, padding_value=0,  # noqa: A002
                     align="RIGHT_LEFT"):
    """The main diagonal (or the band k, packed) of each innermost matrix
    (`tf.linalg.diag_part`, `tf.matrix_diag_part`)."""
    with graph_lib.name_scope(name, "MatrixDiagPart", [input]) as name:
        input = convert_to_tensor(input, name="input")  # noqa: A001
        pad = convert_to_tensor(padding_value, dtype=input.dtype, name="padding_value")
        return apply_op("MatrixDiagPartV3", input=input, k=k, padding_value=pad,
                        align=align, name=name)


def matrix_set_diag(input, diagonal, name="set_diag", k=0, align="RIGHT_LEFT"):  # noqa: A002
    """`input` with its main diagonal (or band k) replaced by `diagonal`
    (`tf.linalg.set_diag`, `tf.matrix_set_diag`)."""
    with graph_lib.name_scope(name, "MatrixSetDiag", [input, diagonal]) as name:
        input = convert_to_tensor(input, name="input")  # noqa: A001
        diagonal = convert_to_tensor(diagonal, dtype=input.dtype, name="diagonal")
        return apply_op("MatrixSetDiagV3", input=input, diagonal=diagonal, k=k, align=align,
                        name=name)


@gradient("MatrixDiagV3")
def _matrix_diag_v3_grad(op, grad):
    zero = array_ops.zeros_like(op.inputs[4])
    part = apply_op("MatrixDiagPartV3", input=grad, k=op.inputs[1], padding_value=zero,
                    align=op.attrs["align"])
    return [part, None, None, None, None]


@gradient("MatrixDiagPartV3")
def _matrix_diag_part_v3_grad(op, grad):
    return [apply_op("MatrixSetDiagV3", input=array_ops.zeros_like(op.inputs[0]),
                     diagonal=grad, k=op.inputs[1], align=op.attrs["align"]), None, None]


@gradient("MatrixSetDiagV3")
def _matrix_set_diag_v3_grad(op, grad):
    k, align = op.inputs[2], op.attrs["align"]
    rest = apply_op("MatrixSetDiagV3", input=grad, diagonal=array_ops.zeros_like(op.inputs[1]),
                    k=k, align=align)
    zero = array_ops.zeros([], grad.dtype)
    part = apply_op("MatrixDiagPartV3", input=grad, k=k, padding_value=zero, align=align)
    return [rest, part, None]


# ---- Cross -------------------------------------------------------------------------------


def _cross_shape(op):
    a, b = (checked_dims(t, at_least=1) for t in op.inputs)
    dims = common_shapes.merge_shapes(a, b)
    if dims is not None and dims[-1] is not None and dims[-1] != 3:
        raise ValueError(f"Dimension must be 3 but is {dims[-1]}")
    return [tensor_shape.unknown_shape() if dims is None else tensor_shape.TensorShape(dims)]


define_op("Cross", inputs=["a: T", "b: T"], outputs=["product: T"],
          attrs=["T: {float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, "
                 "uint32, uint64}"], shape_fn=_cross_shape)


def cross(a, b, name=None):
    """The cross products of the 3-vectors in the last dimension of a and b (`tf.cross`)."""
    return apply_op("Cross", a=a, b=b, name=name or "Cross")


@gradient("Cross")
def _cross_grad(op, grad):
    a, b = op.inputs
    return [cross(b, grad), cross(grad, a)]


def adjoint_last_two(x):
    """The conjugate transpose of the last two dimensions of x."""
    rank = x.shape.ndims
    if rank is not None:
        perm = list(builtins.range(rank - 2)) + [rank - 1, rank - 2]
        return _conj(array_ops.transpose(x, perm))
    r = array_ops.rank(x)
    perm = joining_ops.concat([_range(0, r - 2), joining_ops.stack([r - 1, r - 2])], 0)
    return _conj(array_ops.transpose(x, perm))
