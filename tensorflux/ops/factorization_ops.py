"""The ops under weighted alternating least squares (tf.contrib.factorization's WALSModel):
MaskedMatmul and WALSComputePartialLhsAndRhs. Their kernels are in
tensorflux/kernels/cpu/factorization_ops.py.

MaskedMatmul(a, b, mask_indices, transpose_a, transpose_b): the entries of op(a) @ op(b) at
the [nnz, 2] (row, column) pairs of `mask_indices`, as a [nnz] vector (op(x) is x or its
transpose as the bool scalars say), without forming the whole product.

WALSComputePartialLhsAndRhs(factors, factor_weights, unobserved_weights, input_weights,
input_indices, input_values, entry_weights, input_block_size, input_is_transpose): the
observed-entry parts of the normal equations of a block of rows. For each observed entry
(i, j) of value a (the pair read as (j, i) when `input_is_transpose`), with weight
w = entry_weights[e] when `entry_weights` is not empty, else input_weights[i] *
factor_weights[j], and f_j row j of `factors`:
    partial_lhs[i] += w f_j f_j^T                   ([block_size, k, k])
    partial_rhs[i] += (unobserved_weights + w) a f_j ([block_size, k])
so that row i's factor u solves (w0 G + lambda I + partial_lhs[i]) u = partial_rhs[i],
G = factors^T factors (the gramian). Neither op has a gradient.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes, tensor_shape
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable

__all__: list[str] = []  # the public names are tf.contrib.factorization's


def _masked_matmul_shape(op):
    common_shapes.checked_dims(op.inputs[0], rank=2)
    common_shapes.checked_dims(op.inputs[1], rank=2)
    mask = common_shapes.checked_dims(op.inputs[2], rank=2) or [None, None]
    return [tensor_shape.TensorShape([mask[0]])]


define_op("MaskedMatmul",
          inputs=["a: float", "b: float", "mask_indices: int64", "transpose_a: bool",
                  "transpose_b: bool"],
          outputs=["prod_values: float"], shape_fn=_masked_matmul_shape)


def _partial_lhs_rhs_shape(op):
    factors = common_shapes.checked_dims(op.inputs[0], rank=2) or [None, None]
    block = common_shapes.scalar_value(op.inputs[7])
    k = factors[1]
    return [tensor_shape.TensorShape([block, k, k]), tensor_shape.TensorShape([block, k])]


define_op("WALSComputePartialLhsAndRhs",
          inputs=["factors: float", "factor_weights: float", "unobserved_weights: float",
                  "input_weights: float", "input_indices: int64", "input_values: float",
                  "entry_weights: float", "input_block_size: int64",
                  "input_is_transpose: bool"],
          outputs=["partial_lhs: float", "partial_rhs: float"],
          shape_fn=_partial_lhs_rhs_shape)
not_differentiable("MaskedMatmul", "WALSComputePartialLhsAndRhs")


def masked_matmul(a, b, mask_indices, transpose_a, transpose_b, name=None):
    """The raw op: the [nnz] entries of op(a) @ op(b) at `mask_indices`."""
    return apply_op("MaskedMatmul", a=a, b=b, mask_indices=mask_indices,
                    transpose_a=transpose_a, transpose_b=transpose_b,
                    name=name or "MaskedMatmul")


def wals_compute_partial_lhs_and_rhs(factors, factor_weights, unobserved_weights,
                                     input_weights, input_indices, input_values,
                                     entry_weights, input_block_size, input_is_transpose,
                                     name=None):
    """The raw op: (partial_lhs [block, k, k], partial_rhs [block, k])."""
    return apply_op("WALSComputePartialLhsAndRhs", factors=factors,
                    factor_weights=factor_weights, unobserved_weights=unobserved_weights,
                    input_weights=input_weights, input_indices=input_indices,
                    input_values=input_values, entry_weights=entry_weights,
                    input_block_size=input_block_size,
                    input_is_transpose=input_is_transpose,
                    name=name or "WALSComputePartialLhsAndRhs")
