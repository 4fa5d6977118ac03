"""tf.RaggedTensor: a tensor whose rows have different lengths, as a composite of plain
tensors (no op of its own): `values` (a Tensor, or a RaggedTensor for ragged_rank > 1) cut
into rows by `row_splits` (int64 or int32, [nrows + 1], starting at 0, non-decreasing, ending
at the number of values). Row i is `values[row_splits[i]:row_splits[i + 1]]`.

Every factory and method builds ordinary graph ops (cumsum, gather, unsorted segment sums,
...), so gradients, placement and the executors need nothing new. `validate=True` (the
default of the factories, as in TF) adds assertion ops that check the partition at run time.
Session.run fetches a RaggedTensor as a RaggedTensorValue and feeds one
(ragged_session.py).
"""

from __future__ import annotations

import numpy as np

from tensorflux.debugging import check_ops
from tensorflux.framework import dtypes, nested_structure_coder, tensor_shape, type_spec
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Tensor, run_in_session
from tensorflux.framework.sparse_tensor import SparseTensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.framework.tensor_spec import TensorSpec
from tensorflux.ops import (
    array_ext_ops,
    array_ops,
    comparison_ops,
    gather_ops,
    joining_ops,
    math_ops,
    ragged_conversion_ops,
    reduction_ops,
    sequence_ops,
    slicing_ops,
)
from tensorflux.protos import struct_pb2
from tensorflux.ragged.ragged_tensor_value import RaggedTensorValue

_SPLIT_TYPES = (dtypes.int32, dtypes.int64)


def _splits_dtype(dtype):
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _SPLIT_TYPES:
        raise ValueError("row_splits_dtype must be int32 or int64")
    return dtype


def _partition(x, name, dtype):
    """`x` as a 1-D int32/int64 tensor (ints given as Python values become `dtype`)."""
    if isinstance(x, (list, tuple)) and any(isinstance(v, Tensor) for v in x):
        x = convert_to_tensor(x, name=name)  # a list holding tensors: packed
    if isinstance(x, Tensor):
        if x.dtype.base_dtype not in _SPLIT_TYPES:
            raise ValueError(f"{name} must have dtype int32 or int64")
    else:
        arr = np.asarray(x)
        if arr.dtype.kind not in "iu" and arr.size:
            raise ValueError(f"{name} must have dtype int32 or int64")
        keep = isinstance(x, np.ndarray) and arr.dtype in (np.int32, np.int64)
        x = convert_to_tensor(arr if keep else arr.astype(dtype.as_numpy_dtype), name=name)
    x.shape.with_rank(1)
    return x


def _values(values):
    if isinstance(values, RaggedTensorValue):
        values = RaggedTensor._from_value(values)
    if isinstance(values, RaggedTensor):
        return values
    values = convert_to_tensor(values, name="values")
    if values.shape.ndims == 0:
        raise ValueError("values must have rank >= 1")
    return values


def _nvals(values, dtype):
    if isinstance(values, RaggedTensor):
        return values.nrows(out_type=dtype)
    return array_ops.shape(values, out_type=dtype)[0]


def _cumsum_splits(lengths):
    zero = array_ops.zeros([1], dtype=lengths.dtype)
    return joining_ops.concat([zero, sequence_ops.cumsum(lengths)], 0)


class RaggedTensor:
    """A ragged tensor: `values` split into rows by `row_splits` (`tf.RaggedTensor`).

    Build one with the `from_*` factories or `tf.ragged.constant`, not the constructor.
    """

    def __init__(self, values, row_splits, internal=False):
        if not internal:
            raise ValueError("RaggedTensor constructor is private; please use one of the "
                             "factory methods instead (e.g., RaggedTensor.from_row_lengths())")
        self._values = values
        self._row_splits = row_splits
        self._shape_hint: tensor_shape.TensorShape | None = None  # from _set_shape

    # ---- factories ------------------------------------------------------------------------

    @classmethod
    def _make(cls, values, splits, checks):
        if checks:
            with graph_lib.control_dependencies(checks):
                splits = array_ops.identity(splits, name="row_splits")
        if isinstance(values, RaggedTensor) and values.row_splits.dtype != splits.dtype:
            raise ValueError("dtype mismatch: the row_splits of a RaggedTensor and of its "
                             "values must have the same dtype (int32 or int64)")
        return cls(values, splits, internal=True)

    @classmethod
    def from_row_splits(cls, values, row_splits, name=None, validate=True):
        """Row i is `values[row_splits[i]:row_splits[i + 1]]`.

        Raises:
          ValueError: row_splits is not a 1-D int tensor, or values is a scalar.
          InvalidArgumentError: (validate) the splits do not partition the values.
        """
        with graph_lib.name_scope(name, "RaggedFromRowSplits", [values, row_splits]):
            values = _values(values)
            splits = _partition(row_splits, "row_splits", dtypes.int64)
            if splits.shape[0].value == 0:
                raise ValueError("row_splits must have at least one element")
            checks = []
            if validate:
                msg = "Arguments to from_row_splits do not form a valid RaggedTensor:"
                n = _nvals(values, splits.dtype)
                checks = [
                    check_ops.assert_equal(splits[:1], math_ops.cast(0, splits.dtype),
                                           message=msg + "zero"),
                    check_ops.assert_non_negative(splits[1:] - splits[:-1],
                                                  message=msg + "monotonic"),
                    check_ops.assert_equal(splits[-1:], n, message=msg + "nvals")]
            return cls._make(values, splits, checks)

    @classmethod
    def from_row_lengths(cls, values, row_lengths, name=None, validate=True):
        """Row i has `row_lengths[i]` values, taken in order."""
        with graph_lib.name_scope(name, "RaggedFromRowLengths", [values, row_lengths]):
            values = _values(values)
            lengths = _partition(row_lengths, "row_lengths", dtypes.int64)
            splits = _cumsum_splits(lengths)
            checks = []
            if validate:
                msg = "Arguments to from_row_lengths do not form a valid RaggedTensor:"
                checks = [check_ops.assert_non_negative(lengths, message=msg + "negative"),
                          check_ops.assert_equal(splits[-1:], _nvals(values, splits.dtype),
                                                 message=msg + "nvals")]
            return cls._make(values, splits, checks)

    @classmethod
    def from_value_rowids(cls, values, value_rowids, nrows=None, name=None, validate=True):
        """Value j belongs to row `value_rowids[j]` (sorted); `nrows` defaults to the last
        row id + 1."""
        with graph_lib.name_scope(name, "RaggedFromValueRowIds", [values, value_rowids]):
            values = _values(values)
            rowids = _partition(value_rowids, "value_rowids", dtypes.int64)
            dtype = rowids.dtype
            if nrows is None:
                n = array_ops.size(rowids, out_type=dtype)
                last = array_ops.reshape(rowids[-1:], [-1])
                nrows = comparison_ops.where(
                    n > 0, reduction_ops.reduce_sum(last) + 1, math_ops.cast(0, dtype))
            else:
                nrows = math_ops.cast(convert_to_tensor(nrows, name="nrows"), dtype)
            lengths = math_ops.cast(sequence_ops.unsorted_segment_sum(
                array_ops.ones_like(rowids), rowids, nrows), dtype)
            splits = _cumsum_splits(lengths)
            checks = []
            if validate:
                msg = "Arguments to from_value_rowids do not form a valid RaggedTensor:"
                checks = [
                    check_ops.assert_non_negative(rowids, message=msg + "negative"),
                    check_ops.assert_non_negative(rowids[1:] - rowids[:-1],
                                                  message=msg + "monotonic"),
                    check_ops.assert_less(rowids, nrows, message=msg + "too large"),
                    check_ops.assert_equal(array_ops.size(rowids, out_type=dtype),
                                           _nvals(values, dtype), message=msg + "nvals")]
            return cls._make(values, splits, checks)

    @classmethod
    def from_row_starts(cls, values, row_starts, name=None, validate=True):
        """Row i starts at `row_starts[i]` and ends where the next row starts."""
        with graph_lib.name_scope(name, "RaggedFromRowStarts", [values, row_starts]):
            values = _values(values)
            starts = _partition(row_starts, "row_starts", dtypes.int64)
            n = array_ops.reshape(_nvals(values, starts.dtype), [1])
            return cls.from_row_splits(values, joining_ops.concat([starts, n], 0),
                                       validate=validate)

    @classmethod
    def from_row_limits(cls, values, row_limits, name=None, validate=True):
        """Row i ends at `row_limits[i]` and starts where the previous row ends."""
        with graph_lib.name_scope(name, "RaggedFromRowLimits", [values, row_limits]):
            values = _values(values)
            limits = _partition(row_limits, "row_limits", dtypes.int64)
            zero = array_ops.zeros([1], dtype=limits.dtype)
            return cls.from_row_splits(values, joining_ops.concat([zero, limits], 0),
                                       validate=validate)

    @classmethod
    def from_uniform_row_length(cls, values, uniform_row_length, nrows=None, validate=True,
                                name=None):
        """Rows of `uniform_row_length` values each (`nrows` defaults to the number of values
        over the length; needed when the length is 0). tensorflux keeps the length only as
        row_splits: the static shape says None for that dimension."""
        with graph_lib.name_scope(name, "RaggedFromUniformRowLength",
                                  [values, uniform_row_length, nrows]):
            values = _values(values)
            length = convert_to_tensor(uniform_row_length, name="uniform_row_length")
            if length.dtype.base_dtype not in _SPLIT_TYPES:
                raise ValueError("uniform_row_length must have dtype int32 or int64")
            length.shape.with_rank(0)
            dtype = length.dtype.base_dtype
            nvals = _nvals(values, dtype)
            if nrows is None:
                nrows = math_ops.floordiv(nvals, math_ops.maximum(length, 1))
            nrows = math_ops.cast(convert_to_tensor(nrows, name="nrows"), dtype)
            splits = sequence_ops.range(0, nrows + 1, dtype=dtype) * length
            return cls.from_row_splits(values, splits, validate=validate)

    @classmethod
    def _from_nested(cls, method, flat_values, partitions, name, validate, scope):
        if isinstance(partitions, Tensor):
            raise ValueError("the nested partitions must be a list of tensors")
        with graph_lib.name_scope(name, scope, [flat_values]):
            result = flat_values
            for part in reversed(list(partitions)):
                result = method(result, part, validate=validate)
            return result

    @classmethod
    def from_nested_row_splits(cls, flat_values, nested_row_splits, name=None,
                               validate=True):
        """`from_row_splits` applied once per splits tensor, innermost last."""
        return cls._from_nested(cls.from_row_splits, flat_values, nested_row_splits, name,
                                validate, "RaggedFromNestedRowSplits")

    @classmethod
    def from_nested_row_lengths(cls, flat_values, nested_row_lengths, name=None,
                                validate=True):
        return cls._from_nested(cls.from_row_lengths, flat_values, nested_row_lengths, name,
                                validate, "RaggedFromNestedRowLengths")

    @classmethod
    def from_nested_value_rowids(cls, flat_values, nested_value_rowids, nested_nrows=None,
                                 name=None, validate=True):
        if nested_nrows is None:
            nested_nrows = [None] * len(nested_value_rowids)
        if len(nested_nrows) != len(nested_value_rowids):
            raise ValueError("nested_nrows must have the same length as nested_value_rowids")
        with graph_lib.name_scope(name, "RaggedFromNestedValueRowIds", [flat_values]):
            result = flat_values
            for ids, n in reversed(list(zip(nested_value_rowids, nested_nrows, strict=True))):
                result = cls.from_value_rowids(result, ids, n, validate=validate)
            return result

    @classmethod
    def from_tensor(cls, tensor, lengths=None, padding=None, ragged_rank=1, name=None,
                    row_splits_dtype=dtypes.int64):
        """The rows of a dense tensor, cut to `lengths` or with trailing `padding` removed.

        Raises:
          ValueError: both lengths and padding, ragged_rank < 1 or >= the tensor's rank.
        """
        if lengths is not None and padding is not None:
            raise ValueError("Specify argument `lengths` or `padding`, but not both.")
        if not isinstance(ragged_rank, int) or ragged_rank <= 0:
            raise ValueError(f"ragged_rank must be greater than 0; got {ragged_rank}")
        dtype = _splits_dtype(row_splits_dtype)
        with graph_lib.name_scope(name, "RaggedFromTensor", [tensor, lengths, padding]):
            x = convert_to_tensor(tensor, name="tensor")
            ndims = x.shape.ndims
            if ndims is None or ragged_rank >= ndims:
                raise ValueError(f"ragged_rank must be less than rank(tensor) (known); got "
                                 f"{ragged_rank} for shape {x.shape}")
            if ragged_rank > 1:
                if lengths is not None or padding is not None:
                    raise NotImplementedError("from_tensor with ragged_rank > 1 supports "
                                              "neither lengths nor padding in tensorflux")
                shape = array_ops.shape(x, out_type=dtype)
                inner = array_ops.reshape(x, joining_ops.concat([[-1], shape[2:]], 0))
                inner = cls.from_tensor(inner, ragged_rank=ragged_rank - 1,
                                        row_splits_dtype=dtype)
                return cls.from_row_splits(
                    inner, sequence_ops.range(0, shape[0] + 1, dtype=dtype) * shape[1],
                    validate=False)
            shape = array_ops.shape(x, out_type=dtype)
            nrows, ncols = shape[0], shape[1]
            if padding is not None:
                pad = convert_to_tensor(padding, dtype=x.dtype, name="padding")
                differs = comparison_ops.not_equal(x, pad)
                if ndims > 2:
                    differs = reduction_ops.reduce_any(differs, axis=list(range(2, ndims)))
                pos = sequence_ops.range(1, ncols + 1, dtype=dtype)
                lengths = reduction_ops.reduce_max(
                    math_ops.cast(differs, dtype) * pos, axis=1)
                lengths = math_ops.maximum(lengths, 0)
            if lengths is None:
                flat = array_ops.reshape(x, joining_ops.concat([[-1], shape[2:]], 0))
                splits = sequence_ops.range(0, nrows + 1, dtype=dtype) * ncols
                return cls.from_row_splits(flat, splits, validate=False)
            lengths = math_ops.cast(convert_to_tensor(lengths, name="lengths"), dtype)
            lengths = math_ops.minimum(lengths, ncols)
            mask = gather_ops.sequence_mask(lengths, ncols)
            flat = slicing_ops.boolean_mask(x, mask)
            return cls.from_row_lengths(flat, lengths, validate=False)

    @classmethod
    def from_sparse(cls, st_input, name=None, row_splits_dtype=dtypes.int64):
        """The rows of a 2-D SparseTensor whose indices are in row-major order (each row's
        values packed to the left).

        Raises:
          ValueError: the SparseTensor is not 2-D.
        """
        dtype = _splits_dtype(row_splits_dtype)
        if not isinstance(st_input, SparseTensor):
            raise TypeError(f"st_input must be a SparseTensor, got {type(st_input).__name__}")
        if st_input.dense_shape.shape.ndims is None or \
                st_input.indices.shape.with_rank(2)[1].value not in (2, None):
            raise ValueError("rank(st_input) must be 2")
        with graph_lib.name_scope(name, "RaggedFromSparse", [st_input]):
            rowids = math_ops.cast(st_input.indices[:, 0], dtype)
            nrows = math_ops.cast(st_input.dense_shape[0], dtype)
            rt = cls.from_value_rowids(st_input.values, rowids, nrows, validate=False)
            cols = math_ops.cast(st_input.indices[:, 1], dtype)
            n = array_ops.size(rowids, out_type=dtype)
            want = sequence_ops.range(0, n, dtype=dtype) - gather_ops.gather(
                rt.row_splits, rowids)
            check = check_ops.assert_equal(cols, want, message="SparseTensor is not "
                                           "right-ragged")
            return cls._make(rt.values, rt.row_splits, [check])

    @classmethod
    def _from_value(cls, value: RaggedTensorValue):
        values = value.values
        if isinstance(values, RaggedTensorValue):
            values = cls._from_value(values)
        return cls.from_row_splits(values, value.row_splits, validate=False)

    # ---- properties -----------------------------------------------------------------------

    values = property(lambda self: self._values)
    row_splits = property(lambda self: self._row_splits)
    dtype = property(lambda self: self.flat_values.dtype)
    graph = property(lambda self: self._row_splits.graph)
    row_splits_dtype = property(lambda self: self._row_splits.dtype)

    @property
    def flat_values(self) -> Tensor:
        v = self._values
        while isinstance(v, RaggedTensor):
            v = v.values
        return v

    @property
    def nested_row_splits(self) -> tuple:
        out, v = [self._row_splits], self._values
        while isinstance(v, RaggedTensor):
            out.append(v.row_splits)
            v = v.values
        return tuple(out)

    @property
    def ragged_rank(self) -> int:
        return len(self.nested_row_splits)

    @property
    def shape(self) -> tensor_shape.TensorShape:
        n = self._row_splits.shape[0].value
        nrows = None if n is None else n - 1
        shape = tensor_shape.TensorShape([nrows] + [None] * self.ragged_rank).concatenate(
            self.flat_values.shape[1:])
        return shape if self._shape_hint is None else shape.merge_with(self._shape_hint)

    def get_shape(self) -> tensor_shape.TensorShape:
        return self.shape

    def _set_shape(self, shape) -> None:
        """Narrows the static shape: the row count (outer splits), the flat values' inner
        dimensions, and sizes of the ragged dimensions (kept as a hint, as TF keeps a
        uniform row length).

        Raises:
          ValueError: `shape` is not compatible with the current one.
        """
        shape = tensor_shape.as_shape(shape)
        self._shape_hint = self.shape.merge_with(shape)  # raises on a conflict
        if shape.ndims is None:
            return
        n = shape[0].value
        self._row_splits.set_shape([None if n is None else n + 1])
        inner = shape[self.ragged_rank + 1:]
        self.flat_values.set_shape(tensor_shape.TensorShape([None]).concatenate(inner))

    @property
    def _type_spec(self) -> RaggedTensorSpec:
        return RaggedTensorSpec(self.shape, self.dtype, self.ragged_rank,
                                self.row_splits_dtype)

    def _to_variant(self, batched_input: bool = False, name=None) -> Tensor:
        """This tensor as a scalar variant, or with `batched_input` a vector of one
        variant per row (ops/ragged_conversion_ops.py)."""
        with graph_lib.name_scope(name, "RaggedToVariant", [self]):
            return ragged_conversion_ops.ragged_tensor_to_variant(
                self.nested_row_splits, self.flat_values, batched_input)

    @classmethod
    def _from_variant(cls, variant, dtype, output_ragged_rank: int, input_ragged_rank=None,
                      row_splits_dtype=dtypes.int64, name=None):
        """The ragged tensor of ragged rank `output_ragged_rank` that `variant` encodes (a
        Tensor for rank 0); `input_ragged_rank` defaults to what the variant's rank
        leaves."""
        variant = convert_to_tensor(variant, name="variant")
        if input_ragged_rank is None:
            k = variant.shape.ndims
            if k is None:
                raise ValueError("When input_ragged_rank is not specified, the rank of the "
                                 "encoded RaggedTensor must be known statically.")
            input_ragged_rank = output_ragged_rank - k
        with graph_lib.name_scope(name, "RaggedFromVariant", [variant]):
            splits, values = ragged_conversion_ops.ragged_tensor_from_variant(
                variant, input_ragged_rank, output_ragged_rank, dtypes.as_dtype(dtype),
                _splits_dtype(row_splits_dtype))
            return cls.from_nested_row_splits(values, splits, validate=False) if splits \
                else values

    def uniform_row_length(self):
        return None

    # ---- row partition views --------------------------------------------------------------

    def nrows(self, out_type=None, name=None) -> Tensor:
        with graph_lib.name_scope(name, "RaggedNRows", [self]):
            n = array_ops.shape(self._row_splits, out_type=self._row_splits.dtype)[0] - 1
            return n if out_type is None else math_ops.cast(n, out_type)

    def row_starts(self, name=None) -> Tensor:
        with graph_lib.name_scope(name, "RaggedRowStarts", [self]):
            return self._row_splits[:-1]

    def row_limits(self, name=None) -> Tensor:
        with graph_lib.name_scope(name, "RaggedRowLimits", [self]):
            return self._row_splits[1:]

    def row_lengths(self, axis=1, name=None):
        """The length of each row (axis 1), or of each row of the values (axis > 1)."""
        if axis == 0:
            return self.nrows(name=name)
        if axis != 1:
            if not isinstance(self._values, RaggedTensor):
                raise ValueError(f"axis={axis} out of bounds for a ragged_rank "
                                 f"{self.ragged_rank} tensor")
            return self.with_values(self._values.row_lengths(axis - 1, name))
        with graph_lib.name_scope(name, "RaggedRowLengths", [self]):
            return self._row_splits[1:] - self._row_splits[:-1]

    def value_rowids(self, name=None) -> Tensor:
        """The row of each value."""
        with graph_lib.name_scope(name, "RaggedValueRowIds", [self]):
            return row_splits_to_segment_ids(self._row_splits)

    def nested_row_lengths(self, name=None) -> tuple:
        with graph_lib.name_scope(name, "RaggedNestedRowLengths", [self]):
            out, rt = [], self
            while isinstance(rt, RaggedTensor):
                out.append(rt.row_lengths())
                rt = rt.values
            return tuple(out)

    def nested_value_rowids(self, name=None) -> tuple:
        with graph_lib.name_scope(name, "RaggedNestedValueRowIds", [self]):
            out, rt = [], self
            while isinstance(rt, RaggedTensor):
                out.append(rt.value_rowids())
                rt = rt.values
            return tuple(out)

    # ---- rebuilding -----------------------------------------------------------------------

    def with_values(self, new_values) -> RaggedTensor:
        new_values = _values(new_values)
        return RaggedTensor._make(new_values, self._row_splits, [])

    def with_flat_values(self, new_values) -> RaggedTensor:
        if isinstance(self._values, RaggedTensor):
            return self.with_values(self._values.with_flat_values(new_values))
        return self.with_values(new_values)

    def with_row_splits_dtype(self, dtype) -> RaggedTensor:
        dtype = _splits_dtype(dtype)
        values = self._values
        if isinstance(values, RaggedTensor):
            values = values.with_row_splits_dtype(dtype)
        splits = self._row_splits
        if splits.dtype != dtype:
            splits = math_ops.cast(splits, dtype)
        return RaggedTensor(values, splits, internal=True)

    # ---- conversions ----------------------------------------------------------------------

    def bounding_shape(self, axis=None, name=None, out_type=None) -> Tensor:
        """[nrows, longest row, ...]: the shape of the smallest dense tensor holding it."""
        out_type = self._row_splits.dtype if out_type is None else dtypes.as_dtype(out_type)
        with graph_lib.name_scope(name, "RaggedBoundingBox", [self]):
            lengths = self.row_lengths()
            longest = reduction_ops.reduce_max(joining_ops.concat(
                [array_ops.zeros([1], lengths.dtype), lengths], 0))
            head = math_ops.cast(joining_ops.stack([self.nrows(), longest]), out_type)
            if isinstance(self._values, RaggedTensor):
                inner = self._values.bounding_shape(out_type=out_type)[1:]
            else:
                inner = array_ops.shape(self._values, out_type=out_type)[1:]
            shape = joining_ops.concat([head, inner], 0)
            return shape if axis is None else shape[axis]

    def to_tensor(self, default_value=None, name=None, shape=None) -> Tensor:
        """The dense tensor with each row padded by `default_value` (0, or b"" for strings)
        to the longest row (or cut/padded to `shape` where it gives a size)."""
        with graph_lib.name_scope(name, "RaggedToTensor", [self, default_value]):
            dims = None if shape is None else list(tensor_shape.TensorShape(shape).as_list())
            return _to_tensor(self, default_value, dims)

    def to_sparse(self, name=None) -> SparseTensor:
        """The SparseTensor with an entry per value (flat values must be a vector)."""
        with graph_lib.name_scope(name, "RaggedToSparse", [self]):
            if self.flat_values.shape.ndims != 1:
                raise NotImplementedError("to_sparse of a RaggedTensor whose flat_values "
                                          "are not a vector")
            indices = _sparse_indices(self)
            return SparseTensor(indices, self.flat_values,
                                self.bounding_shape(out_type=dtypes.int64))

    def merge_dims(self, outer_axis, inner_axis) -> RaggedTensor | Tensor:
        """Merges dims outer_axis..inner_axis (only outer_axis == 0 in tensorflux)."""
        rank = self.shape.ndims
        if inner_axis < 0 and rank is not None:
            inner_axis += rank
        if outer_axis != 0 or inner_axis < 1 or inner_axis > self.ragged_rank:
            raise NotImplementedError("merge_dims supports outer_axis=0 and "
                                      "0 < inner_axis <= ragged_rank")
        result = self
        for _ in range(inner_axis):
            result = result.values
        return result

    def eval(self, feed_dict=None, session=None):
        return run_in_session(self, feed_dict, session)

    def __repr__(self) -> str:
        return f"tf.RaggedTensor(values={self._values}, row_splits={self._row_splits})"

    def _as_graph_element(self):
        raise TypeError("a RaggedTensor is not a graph element; fetch it with Session.run")

    def __getitem__(self, key):
        """`rt[i]`: row i (a Tensor for ragged_rank 1, else a RaggedTensor)."""
        if isinstance(key, (int, np.integer, Tensor)):
            if isinstance(key, (int, np.integer)) and key < 0:
                start, limit = self._row_splits[key - 1], self._row_splits[key]
            else:
                start, limit = self._row_splits[key], self._row_splits[key + 1]
            if isinstance(self._values, RaggedTensor):
                return _slice_rows(self._values, self._values.row_splits[start:limit + 1])
            return self._values[start:limit]
        if isinstance(key, slice) and key.step in (None, 1) and all(
                k is None or isinstance(k, (int, np.integer)) for k in (key.start, key.stop)):
            a, b = key.start, key.stop
            begin = 0 if a is None else (a if a >= 0 else a - 1)
            end = None if b is None else (b + 1 if b >= 0 else b)
            splits = self._row_splits[begin:end]
            if b is not None and a is not None and (a >= 0) == (b >= 0) and b <= a:
                splits = self._row_splits[begin:begin + 1]
            return _slice_rows(self, splits)
        raise NotImplementedError("RaggedTensor indexing supports a row index or a slice of "
                                  "rows (constant bounds, step 1)")


class RaggedTensorSpec(type_spec.TypeSpec):
    """The type of a `tf.RaggedTensor`: its shape (ragged dimensions None), dtype, ragged
    rank (default: rank - 1) and row splits dtype; `flat_values_spec` when the flat values
    are of a spec of their own. Ragged rank 0 describes a dense Tensor."""

    __slots__ = ("_shape", "_dtype", "_ragged_rank", "_row_splits_dtype",
                 "_flat_values_spec")
    _batchable = True

    def __init__(self, shape=None, dtype=dtypes.float32, ragged_rank=None,
                 row_splits_dtype=dtypes.int64, flat_values_spec=None):
        """Raises:
          ValueError: no ragged rank and no rank; a ragged rank not below the rank;
            `dtype` other than `flat_values_spec`'s.
          TypeError: `ragged_rank` is not an int.
        """
        self._shape = tensor_shape.as_shape(shape)
        self._row_splits_dtype = dtypes.as_dtype(row_splits_dtype)
        if flat_values_spec is not None:
            if dtype is None:
                dtype = flat_values_spec.dtype
            elif dtypes.as_dtype(dtype) != flat_values_spec.dtype:
                raise ValueError("dtype must be the same as flat_values_spec.dtype")
        elif dtype is None:
            raise ValueError("At least one of dtype or flat_values_spec must be provided")
        self._dtype = dtypes.as_dtype(dtype)
        self._flat_values_spec = flat_values_spec
        rank = self._shape.ndims
        if ragged_rank is None:
            if rank is None:
                raise ValueError("Must specify ragged_rank or a shape with a known rank.")
            ragged_rank = rank - 1
        if not isinstance(ragged_rank, int):
            raise TypeError(f"Argument `ragged_rank` must be an int. Received {ragged_rank}.")
        if rank is not None and ragged_rank >= rank:
            raise ValueError(f"Argument `ragged_rank` ({ragged_rank}) must be less than rank "
                             f"({rank}).")
        self._ragged_rank = ragged_rank

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    ragged_rank = property(lambda self: self._ragged_rank)
    row_splits_dtype = property(lambda self: self._row_splits_dtype)
    flat_values_spec = property(lambda self: self._flat_values_spec)

    @property
    def value_type(self):
        return RaggedTensor if self._ragged_rank > 0 else Tensor

    def _serialize(self) -> tuple:
        state = (self._shape, self._dtype, self._ragged_rank, self._row_splits_dtype)
        return state if self._flat_values_spec is None else state + (self._flat_values_spec,)

    def is_compatible_with(self, spec_or_value) -> bool:
        """Ragged rank 0 is also compatible with Tensors and TensorSpecs."""
        if self._ragged_rank == 0 and isinstance(spec_or_value, (Tensor, TensorSpec)):
            inner = self._flat_values_spec or TensorSpec(self._shape, self._dtype)
            return inner.is_compatible_with(spec_or_value)
        return super().is_compatible_with(spec_or_value)

    @classmethod
    def from_value(cls, value) -> RaggedTensorSpec:
        """The spec of a RaggedTensor or RaggedTensorValue."""
        return cls(value.shape, value.dtype, value.ragged_rank, value.row_splits_dtype)

    # ---- components and tf.data ---------------------------------------------------------
    @property
    def _component_specs(self):
        if self._ragged_rank <= 0:
            return [self._flat_values_spec or TensorSpec(self._shape, self._dtype)]
        values = self._flat_values_spec or TensorSpec(
            tensor_shape.TensorShape([None]).concatenate(self._shape[self._ragged_rank + 1:]),
            self._dtype)
        outer = self._shape[0].value if self._shape.ndims else None
        return [values, TensorSpec([None if outer is None else outer + 1],
                                   self._row_splits_dtype)] + \
            [TensorSpec([None], self._row_splits_dtype)] * (self._ragged_rank - 1)

    def _to_components(self, value):
        if isinstance(value, (RaggedTensor, RaggedTensorValue)):
            return [value.flat_values] + list(value.nested_row_splits)
        return [value]

    def _from_components(self, components):
        result = components[0]
        if all(isinstance(c, np.ndarray) for c in components):
            for splits in reversed(components[1:]):
                result = RaggedTensorValue(result, splits)
            return result
        for splits in reversed(components[1:]):
            result = RaggedTensor.from_row_splits(result, splits, validate=False)
        if self._shape.ndims is not None:
            (result._set_shape if isinstance(result, RaggedTensor) else
             result.set_shape)(self._shape)
        return result

    _flat_tensor_specs = property(lambda self: [TensorSpec(None, dtypes.variant)])

    def _batch(self, batch_size) -> RaggedTensorSpec:
        return RaggedTensorSpec(tensor_shape.TensorShape([batch_size]).concatenate(self._shape),
                                self._dtype, self._ragged_rank + 1, self._row_splits_dtype)

    def _unbatch(self) -> RaggedTensorSpec:
        return RaggedTensorSpec(self._shape[1:], self._dtype, self._ragged_rank - 1,
                                self._row_splits_dtype)

    def _to_legacy_output_types(self):
        return self._dtype

    def _to_legacy_output_shapes(self):
        return self._shape


type_spec.register_type_spec_from_value_converter(RaggedTensorValue,
                                                  RaggedTensorSpec.from_value)
nested_structure_coder.register_type_spec(RaggedTensorSpec,
                                          struct_pb2.TypeSpecProto.RAGGED_TENSOR_SPEC)


def _slice_rows(rt, splits):
    """The RaggedTensor of the values of `rt` between splits[0] and splits[-1], cut by the
    contiguous window `splits` of rt's row_splits."""
    first = splits[0]
    values = rt.values
    if isinstance(values, RaggedTensor):
        values = _slice_rows(values, values.row_splits[first:splits[-1] + 1])
    else:
        values = values[first:splits[-1]]
    return RaggedTensor.from_row_splits(values, splits - first, validate=False)


def row_splits_to_segment_ids(splits, name=None, out_type=None) -> Tensor:
    """The row id of each value, from row_splits (`tf.ragged.row_splits_to_segment_ids`)."""
    with graph_lib.name_scope(name, "RaggedSplitsToSegmentIds", [splits]):
        splits = _partition(splits, "splits", dtypes.int64)
        out_type = splits.dtype if out_type is None else dtypes.as_dtype(out_type)
        lengths = splits[1:] - splits[:-1]
        nrows = array_ops.shape(lengths, out_type=splits.dtype)[0]
        ids = sequence_ops.range(0, nrows, dtype=splits.dtype)
        return math_ops.cast(array_ext_ops.repeat(ids, lengths), out_type)


def _to_tensor(rt: RaggedTensor, default_value, dims):
    splits_dtype = rt.row_splits.dtype
    if isinstance(rt.values, RaggedTensor):
        inner_dims = None if dims is None else [None] + dims[2:]
        inner = _to_tensor(rt.values, default_value, inner_dims)
    else:
        inner = rt.values
    if default_value is None:
        default_value = "" if inner.dtype.base_dtype == dtypes.string else 0
    default = convert_to_tensor(default_value, dtype=inner.dtype.base_dtype,
                                name="default_value")
    inner_shape = array_ops.shape(inner, out_type=splits_dtype)
    row_shape = inner_shape[1:]
    pad_row = array_ops.expand_dims(
        joining_ops.broadcast_to(default, row_shape), 0)
    padded = joining_ops.concat([inner, pad_row], 0)
    lengths = rt.row_lengths()
    nrows = rt.nrows()
    longest = reduction_ops.reduce_max(joining_ops.concat(
        [array_ops.zeros([1], splits_dtype), lengths], 0))
    out_rows = nrows if dims is None or dims[0] is None else \
        math_ops.cast(dims[0], splits_dtype)
    out_cols = longest if dims is None or len(dims) < 2 or dims[1] is None else \
        math_ops.cast(dims[1], splits_dtype)
    i = array_ops.expand_dims(sequence_ops.range(0, out_rows, dtype=splits_dtype), 1)
    j = array_ops.expand_dims(sequence_ops.range(0, out_cols, dtype=splits_dtype), 0)
    in_rows = comparison_ops.less(i, nrows)
    safe_i = math_ops.minimum(i, math_ops.maximum(nrows - 1, 0))
    starts = gather_ops.gather(rt.row_splits, safe_i)
    row_len = gather_ops.gather(joining_ops.concat([lengths, [0]], 0), safe_i)
    valid = comparison_ops.logical_and(in_rows, comparison_ops.less(j, row_len))
    nvals = inner_shape[0]
    index = comparison_ops.where(valid, starts + j, array_ops.zeros_like(valid, splits_dtype)
                                 + nvals)
    out = gather_ops.gather(padded, index)
    static = tensor_shape.TensorShape([None, None]).concatenate(inner.shape[1:])
    if dims is not None:
        static = static.merge_with(tensor_shape.TensorShape(
            [dims[0], dims[1] if len(dims) > 1 else None] + [None] * (static.ndims - 2)))
    out.set_shape(tensor_shape.TensorShape([rt.shape[0].value if dims is None else static[0],
                                            static[1]]).concatenate(static[2:]))
    return out


def _sparse_indices(rt: RaggedTensor) -> Tensor:
    """[nvals, ragged_rank + 1] int64 indices of the flat values."""
    rowids = math_ops.cast(rt.value_rowids(), dtypes.int64)
    splits = math_ops.cast(rt.row_splits, dtypes.int64)
    n = array_ops.size(rowids, out_type=dtypes.int64)
    cols = sequence_ops.range(0, n, dtype=dtypes.int64) - gather_ops.gather(splits, rowids)
    outer = joining_ops.stack([rowids, cols], 1)
    if not isinstance(rt.values, RaggedTensor):
        return outer
    inner = _sparse_indices(rt.values)
    return joining_ops.concat([gather_ops.gather(outer, inner[:, 0]), inner[:, 1:]], 1)
