"""More sparse ops: feature crosses (SparseCross, SparseCrossV2), sparse counting
(DenseCountSparseOutput, SparseCountSparseOutput) and the TF1 `sparse_merge` composition.

Crosses. Each input (a SparseTensor of rank 2, or a dense [batch, k] tensor) gives, per
batch row, a list of features (its values in that row). A row's crosses are the cartesian
product of its lists over the inputs (sparse inputs first, then dense ones, each in the
order given; the last varies fastest), so a row with an empty list has none. String
crosses join the features (integers in decimal) with a separator ("_X_" by default);
hashed crosses chain FarmHash: a string feature hashes to its Fingerprint64, an integer is
itself, and the chain starts at `hash_key` and folds each with FingerprintCat64; the
result is taken modulo `num_buckets` (or 2**63 - 1 when 0). Output: a [batch, most
crosses] SparseTensor, rows in order.

Counts (`tf.sparse.bincount`): for each value v >= 0 (below `maxlength` if given), the
number of its occurrences (or the sum of its weights, or 1 with `binary_output`), as a
SparseTensor over [size] (axis=0: all values) or [batch, size] (axis=-1: per row), with
size = maxlength if given, else max(largest value + 1, minlength).

Kernels: tensorflux/kernels/cpu/sparse_ext_ops.py; FarmHash: tensorflux/lib/hashing.py.
"""

from __future__ import annotations

import numbers

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.operation import Tensor
from tensorflux.framework.sparse_tensor import (
    SparseTensor,
    SparseTensorValue,
    convert_to_tensor_or_sparse_tensor,
)
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, joining_ops, math_ops, slicing_ops, sparse_ops

__all__ = ["sparse_cross", "sparse_cross_hashed", "sparse_bincount", "sparse_merge"]

TensorShape = tensor_shape.TensorShape
_DEFAULT_HASH_KEY = 0xDECAFCAFFE


def _sparse_out_shape(rank):
    return lambda op: [TensorShape([None, rank]), TensorShape([None]), TensorShape([rank])]


_CROSS_IN = ["indices: N * int64", "values: sparse_types", "shapes: N * int64",
             "dense_inputs: dense_types"]
define_op("SparseCross", inputs=_CROSS_IN,
          outputs=["output_indices: int64", "output_values: out_type",
                   "output_shape: int64"],
          attrs=["N: int >= 0", "hashed_output: bool", "num_buckets: int >= 0",
                 "hash_key: int", "sparse_types: list(type) >= 0",
                 "dense_types: list(type) >= 0", "out_type: {int64, string}",
                 "internal_type: {int64, string}"],
          shape_fn=_sparse_out_shape(2))
define_op("SparseCrossV2", inputs=_CROSS_IN + ["sep: string"],
          outputs=["output_indices: int64", "output_values: string",
                   "output_shape: int64"],
          attrs=["N: int >= 0", "sparse_types: list(type) >= 0",
                 "dense_types: list(type) >= 0"],
          shape_fn=_sparse_out_shape(2))
not_differentiable("SparseCross")
not_differentiable("SparseCrossV2")


def _count_shape(op):
    rank = op.inputs[0].shape.ndims  # other ranks fail in the kernel, as in TensorFlow
    return _sparse_out_shape(rank if rank in (1, 2) else None)(op)


_COUNT_ATTRS = ["T: {int32, int64}", "minlength: int >= -1 = -1",
                "maxlength: int >= -1 = -1", "binary_output: bool",
                "output_type: {int32, int64, float, double}"]
_COUNT_OUT = ["output_indices: int64", "output_values: output_type",
              "output_dense_shape: int64"]
define_op("DenseCountSparseOutput", inputs=["values: T", "weights: output_type"],
          outputs=_COUNT_OUT, attrs=_COUNT_ATTRS, shape_fn=_count_shape)
define_op("SparseCountSparseOutput",
          inputs=["indices: int64", "values: T", "dense_shape: int64",
                  "weights: output_type"],
          outputs=_COUNT_OUT, attrs=_COUNT_ATTRS,
          shape_fn=lambda op: [TensorShape([None, None]), TensorShape([None]),
                               TensorShape([None])])
not_differentiable("DenseCountSparseOutput")
not_differentiable("SparseCountSparseOutput")


# ---- crosses -----------------------------------------------------------------------------


def _cross_inputs(inputs):
    """(indices, values, shapes, dense inputs) of a cross's inputs; integers as int64."""
    if not isinstance(inputs, (tuple, list)):
        raise TypeError("Inputs must be a list")
    inputs = [SparseTensor.from_value(i) if isinstance(i, SparseTensorValue) else i
              for i in inputs]
    sparse = [i for i in inputs if isinstance(i, SparseTensor)]
    dense = [convert_to_tensor(i) for i in inputs if not isinstance(i, SparseTensor)]

    def as_feature(t):
        return t if t.dtype == dtypes.string else math_ops.cast(t, dtypes.int64)

    return ([s.indices for s in sparse], [as_feature(s.values) for s in sparse],
            [s.dense_shape for s in sparse], [as_feature(d) for d in dense])


def sparse_cross(inputs, name=None, separator=None):
    """The string crosses of sparse and dense features (`tf.sparse.cross`).

    Args:
      inputs: a list of SparseTensors (rank 2) and dense [batch, k] tensors, of strings or
        integers.
      name: a name for the op.
      separator: the string between crossed features (default "_X_").

    Returns:
      A string SparseTensor [batch, most crosses in a row].
    """
    indices, values, shapes, dense = _cross_inputs(inputs)
    sep = convert_to_tensor("_X_" if separator is None else separator, dtype=dtypes.string)
    out = apply_op("SparseCrossV2", indices=indices, values=values, shapes=shapes,
                   dense_inputs=dense, sep=sep, name=name or "SparseCrossV2")
    return SparseTensor(*out)


def sparse_cross_hashed(inputs, num_buckets=0, hash_key=None, name=None):
    """The hashed crosses of sparse and dense features (`tf.sparse.cross_hashed`): int64
    FarmHash values, modulo `num_buckets` when it is positive; equal to TensorFlow's."""
    indices, values, shapes, dense = _cross_inputs(inputs)
    internal = dtypes.string
    if any(v.dtype != dtypes.string for v in values + dense):
        internal = dtypes.int64
    out = apply_op("SparseCross", indices=indices, values=values, shapes=shapes,
                   dense_inputs=dense, hashed_output=True, num_buckets=num_buckets,
                   hash_key=hash_key or _DEFAULT_HASH_KEY, out_type=dtypes.int64,
                   internal_type=internal, name=name or "SparseCross")
    return SparseTensor(*out)


# ---- counts ------------------------------------------------------------------------------


def _sparse_weights(values, weights):
    if weights is None:
        return convert_to_tensor([], dtype=values.dtype)
    if not isinstance(weights, SparseTensor):
        raise ValueError("Argument `weights` must be a SparseTensor if `values` is a "
                         f"SparseTensor. Received weights={weights} of type: "
                         f"{type(weights).__name__}")
    return weights.values


def sparse_bincount(values, weights=None, axis=0, minlength=None, maxlength=None,
                    binary_output=False, name=None):
    """Counts each non-negative integer in `values`, as a SparseTensor
    (`tf.sparse.bincount`).

    Args:
      values: an int32/int64 Tensor (rank 1 or 2 for axis=-1) or SparseTensor.
      weights: optional weights like `values` (a SparseTensor with the same indices when
        `values` is one): counts become weight sums.
      axis: 0 counts over everything; -1 counts each row (of a rank-2 input).
      minlength: the output has at least this many bins.
      maxlength: the output has exactly this many bins; larger values are ignored.
      binary_output: 1 for a value present instead of its count.
      name: a name for the op.

    Returns:
      A SparseTensor of counts: [bins] (axis=0) or [rows, bins] (axis=-1).

    Raises:
      ValueError: an unsupported axis, or weights with binary_output.
    """
    with graph_lib.name_scope(name, "count", [values, weights]):
        values = convert_to_tensor_or_sparse_tensor(values, name="values")
        if weights is not None:
            weights = convert_to_tensor_or_sparse_tensor(weights, name="weights")
        if weights is not None and binary_output:
            raise ValueError("Arguments `binary_output` and `weights` are mutually "
                             "exclusive. Please specify only one.")
        if axis is None:
            axis = 0
        if axis not in (0, -1):
            raise ValueError(f"Unsupported value for argument axis={axis}. Only 0 and -1 "
                             "are currently supported.")
        attrs = dict(minlength=-1 if minlength is None else minlength,
                     maxlength=-1 if maxlength is None else maxlength,
                     binary_output=binary_output)
        if axis == 0:
            if isinstance(values, SparseTensor):
                if weights is not None:
                    weights = _sparse_weights(values, weights)
                values = values.values
            else:
                if weights is not None:
                    weights = array_ops.reshape(weights, [-1])
                values = array_ops.reshape(values, [-1])
        if isinstance(values, SparseTensor):
            out = apply_op("SparseCountSparseOutput", indices=values.indices,
                           values=values.values, dense_shape=values.dense_shape,
                           weights=_sparse_weights(values, weights), **attrs)
        else:
            if weights is None:
                weights = convert_to_tensor([], dtype=values.dtype)
            out = apply_op("DenseCountSparseOutput", values=values, weights=weights,
                           **attrs)
    return SparseTensor(*out)


# ---- sparse_merge ------------------------------------------------------------------------


def _check_vocab(sp_ids, vocab_size):
    if isinstance(sp_ids, (SparseTensor, SparseTensorValue)):
        if not isinstance(vocab_size, (numbers.Integral, Tensor)):
            raise TypeError("vocab_size has to be a Tensor or Python int. Found "
                            f"{type(vocab_size)}")
        return [sp_ids], [vocab_size]
    if not isinstance(sp_ids, (list, tuple)):
        raise TypeError(f"sp_ids has to be a SparseTensor or list thereof. Found "
                        f"{type(sp_ids)}")
    if not isinstance(vocab_size, (list, tuple)) or not all(
            isinstance(v, (numbers.Integral, Tensor)) for v in vocab_size):
        raise TypeError("vocab_size has to be a list of Tensors or Python ints. Found "
                        f"{type(vocab_size)}")
    if len(sp_ids) != len(vocab_size):
        raise ValueError("sp_ids and vocab_size have to have equal lengths.")
    return list(sp_ids), list(vocab_size)


def sparse_merge(sp_ids, sp_values, vocab_size, name=None, already_sorted=False):
    """Combines id and value SparseTensors into one whose last dimension is indexed by the
    ids (`tf.sparse.merge`, deprecated in TF1): entry [..., k] with id i and value v
    becomes [..., i] = v (one id column per id SparseTensor, of size `vocab_size`).

    Args:
      sp_ids: a SparseTensor of integer ids, or a list of them (same indices).
      sp_values: a SparseTensor of values with the same indices.
      vocab_size: the size of the new last dimension (a list, one per id tensor).
      name: a name for the op.
      already_sorted: the ids are known to be sorted within each row (skips a reorder).

    Returns:
      A SparseTensor [...batch, vocab_size...].
    """
    sp_ids, vocab_size = _check_vocab(sp_ids, vocab_size)
    with graph_lib.name_scope(name, "SparseMerge", [sp_values]):
        sp_ids = [convert_to_tensor_or_sparse_tensor(s) for s in sp_ids]
        sp_values = convert_to_tensor_or_sparse_tensor(sp_values)
        ids = [array_ops.expand_dims(math_ops.cast(s.values, dtypes.int64), 1)
               for s in sp_ids]
        sizes = [math_ops.cast(v, dtypes.int64) for v in vocab_size]
        outer = slicing_ops.strided_slice(sp_ids[0].indices, [0, 0], [0, -1], end_mask=1)
        indices = joining_ops.concat([outer] + ids, 1)
        shape = joining_ops.concat([sp_ids[0].dense_shape[:-1], joining_ops.stack(sizes)],
                                   0)
        result = SparseTensor(indices, sp_values.values, shape)
        if already_sorted:
            return result
        ordered = sparse_ops.sparse_reorder(result)
        return SparseTensor(ordered.indices, ordered.values, shape)
