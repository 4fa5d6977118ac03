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
from tensorflux.framework import dtypes, errors, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import constant_value
from tensorflux.framework.operation import Tensor, run_in_session
from tensorflux.framework.sparse_tensor import SparseTensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
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

    # Tensor operators (dense + ragged) return NotImplemented, so Python calls ours.
    _overrides_tensor_operators = True

    def __init__(self, values, row_splits, internal=False, uniform_row_length=None):
        if not internal:
            raise ValueError("RaggedTensor constructor is private; please use one of the "
                             "factory methods instead (e.g., RaggedTensor.from_row_lengths())")
        self._values = values
        self._row_splits = row_splits
        self._shape_hint: tensor_shape.TensorShape | None = None  # from _set_shape
        # A scalar tensor when every row has this length (from_uniform_row_length,
        # from_tensor): the static shape shows it, and broadcasting treats the dim as uniform.
        self._uniform_row_length = uniform_row_length

    # ---- factories ------------------------------------------------------------------------

    @classmethod
    def _make(cls, values, splits, checks, uniform_row_length=None):
        if checks:
            with graph_lib.control_dependencies(checks):
                splits = array_ops.identity(splits, name="row_splits")
        if isinstance(values, RaggedTensor) and values.row_splits.dtype != splits.dtype:
            raise ValueError("dtype mismatch: the row_splits of a RaggedTensor and of its "
                             "values must have the same dtype (int32 or int64)")
        return cls(values, splits, internal=True, uniform_row_length=uniform_row_length)

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
        over the length; needed when the length is 0).

        Raises:
          ValueError: the length is not an int32/int64 scalar.
          InvalidArgumentError: (validate) the values are not nrows * length.
        """
        with graph_lib.name_scope(name, "RaggedFromUniformRowLength",
                                  [values, uniform_row_length, nrows]):
            values = _values(values)
            length = uniform_row_length
            if not isinstance(length, Tensor):
                arr = np.asarray(length)
                if arr.dtype.kind not in "iu":
                    raise ValueError("uniform_row_length must have dtype int32 or int64")
                length = arr if arr.dtype in (np.int32, np.int64) and isinstance(
                    length, np.ndarray) else arr.astype(np.int64)
            length = convert_to_tensor(length, name="uniform_row_length")
            if length.dtype.base_dtype not in _SPLIT_TYPES:
                raise ValueError("uniform_row_length must have dtype int32 or int64")
            length.shape.with_rank(0)
            dtype = length.dtype.base_dtype
            nvals = _nvals(values, dtype)
            if nrows is None:
                nrows = math_ops.floordiv(nvals, math_ops.maximum(length, 1))
            nrows = math_ops.cast(convert_to_tensor(nrows, name="nrows"), dtype)
            splits = sequence_ops.range(0, nrows + 1, dtype=dtype) * length
            static_n = constant_value(nrows)
            if static_n is None:
                static_len, static_vals = constant_value(length), values.shape[0].value
                if static_len and static_vals is not None:
                    static_n = static_vals // int(static_len)
            if static_n is not None:
                splits.set_shape([int(static_n) + 1])
            checks = []
            if validate:
                msg = "Arguments to from_uniform_row_length do not form a valid RaggedTensor:"
                checks = [check_ops.assert_non_negative(length, message=msg + "negative"),
                          check_ops.assert_equal(nrows * length, nvals,
                                                 message=msg + "nvals")]
            return cls._make(values, splits, checks, uniform_row_length=length)

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

        `lengths` is a vector (the lengths of the innermost ragged dimension, one per row
        of the first `ragged_rank` dims flattened) or a list/tuple of nested row lengths (one
        ragged dimension per entry). `padding` is removed from the end of the innermost
        ragged dimension; the outer ragged dims are uniform.

        Raises:
          ValueError: both lengths and padding, ragged_rank < 1 or >= the tensor's rank.
        """
        if lengths is not None and padding is not None:
            raise ValueError("Specify argument `lengths` or `padding`, but not both.")
        nested = isinstance(lengths, (list, tuple)) and len(lengths) and not isinstance(
            lengths[0], (int, float, np.integer, np.floating))
        if nested:
            if ragged_rank not in (1, len(lengths)):
                raise ValueError(
                    f"If Argument `lengths` is a tuple of row_lengths, argument `ragged_rank` "
                    f"must be len(lengths): {len(lengths)}. Received ragged_rank: "
                    f"{ragged_rank}.")
            ragged_rank = len(lengths)
        if not isinstance(ragged_rank, int) or ragged_rank <= 0:
            raise ValueError(f"Argument `ragged_rank` must be greater than 0. Received "
                             f"{ragged_rank}.")
        dtype = _splits_dtype(row_splits_dtype)
        with graph_lib.name_scope(name, "RaggedFromTensor", [tensor, lengths, padding]):
            x = convert_to_tensor(tensor, name="tensor")
            if x.shape.ndims is not None and x.shape.ndims < 2:
                raise ValueError(
                    "The rank of a RaggedTensor must be greater than 1, i.e., a list of "
                    "scalars won't have ragged dimensions. Received argument `tensor` with "
                    f"rank {x.shape.ndims}.")
            x.shape.with_rank_at_least(ragged_rank + 1)
            if nested:
                return _from_tensor_nested(cls, x, lengths, dtype)
            shape = array_ops.shape(x, out_type=dtype)
            flat = x
            if ragged_rank > 1:  # the first ragged_rank dims as one
                flat = array_ops.reshape(x, joining_ops.concat(
                    [[-1], shape[ragged_rank:]], 0))
                flat.set_shape(tensor_shape.TensorShape(
                    [x.shape[:ragged_rank].num_elements()]).concatenate(
                        x.shape[ragged_rank:]))
            result = _from_tensor_rows(cls, flat, lengths, padding, dtype)
            for axis in reversed(range(1, ragged_rank)):
                length = _static_or(x.shape[axis].value, shape[axis])
                nrows = _static_or(x.shape[:axis].num_elements(),
                                   reduction_ops.reduce_prod(shape[:axis]))
                result = cls.from_uniform_row_length(
                    result, math_ops.cast(length, dtype), nrows=math_ops.cast(nrows, dtype),
                    validate=False)
            return result

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
        """[nrows, row length (known for uniform rows), the values' inner dims...]."""
        n = self._row_splits.shape[0].value
        nrows = None if n is None else n - 1
        length = None
        if self._uniform_row_length is not None:
            length = constant_value(self._uniform_row_length)
            length = None if length is None else int(length)
        nvals = self._values.shape[0].value
        if nrows is None and length and nvals is not None:
            nrows = nvals // length
        shape = tensor_shape.TensorShape([nrows, length]).concatenate(self._values.shape[1:])
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
    def _type_spec(self):
        from tensorflux.ragged.ragged_tensor_spec import RaggedTensorSpec

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

    @property
    def uniform_row_length(self):
        """The length of every row (a scalar Tensor), or None if the rows are ragged."""
        return self._uniform_row_length

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
        return RaggedTensor._make(new_values, self._row_splits, [], self._uniform_row_length)

    def with_flat_values(self, new_values) -> RaggedTensor:
        if isinstance(self._values, RaggedTensor):
            return self.with_values(self._values.with_flat_values(new_values))
        return self.with_values(new_values)

    def with_row_splits_dtype(self, dtype) -> RaggedTensor:
        dtype = _splits_dtype(dtype)
        values = self._values
        if isinstance(values, RaggedTensor):
            values = values.with_row_splits_dtype(dtype)
        splits, length = self._row_splits, self._uniform_row_length
        if splits.dtype != dtype:
            splits = math_ops.cast(splits, dtype)
            length = None if length is None else math_ops.cast(length, dtype)
        return RaggedTensor(values, splits, internal=True, uniform_row_length=length)

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
            if dims is not None:
                _check_shape(self, dims)
            return _to_tensor(self, default_value, dims)

    def to_sparse(self, name=None) -> SparseTensor:
        """The SparseTensor with an entry per scalar of the flat values (inner dense dims
        included), dense_shape the bounding shape."""
        with graph_lib.name_scope(name, "RaggedToSparse", [self]):
            indices = _sparse_indices(self)
            flat = self.flat_values
            inner = flat.shape.ndims
            if inner is None:
                raise ValueError("to_sparse needs flat_values of known rank")
            values = flat
            if inner > 1:
                indices, values = _inner_sparse_entries(indices, flat)
            return SparseTensor(indices, values, self.bounding_shape(out_type=dtypes.int64))

    def merge_dims(self, outer_axis, inner_axis) -> RaggedTensor | Tensor:
        """Merges dims outer_axis..inner_axis into one (a dense Tensor when every ragged
        dimension is merged into the outermost).

        Raises:
          ValueError: an axis out of bounds, or outer_axis > inner_axis.
        """
        rank = self.shape.ndims
        if rank is None:
            raise ValueError("merge_dims needs a RaggedTensor of known rank")
        outer_axis = _check_axis(outer_axis, rank, "outer_axis")
        inner_axis = _check_axis(inner_axis, rank, "inner_axis")
        if outer_axis > inner_axis:
            raise ValueError(f"Expected outer_axis ({outer_axis}) to be less than or equal "
                             f"to inner_axis ({inner_axis}).")
        return _merge_dims(self, outer_axis, inner_axis)

    def eval(self, feed_dict=None, session=None):
        return run_in_session(self, feed_dict, session)

    def __repr__(self) -> str:
        return f"tf.RaggedTensor(values={self._values}, row_splits={self._row_splits})"

    def __bool__(self):
        raise TypeError("RaggedTensor may not be used as a boolean.")

    def _as_graph_element(self):
        raise TypeError("a RaggedTensor is not a graph element; fetch it with Session.run")


def _check_axis(axis, rank, what="axis"):
    """`axis` in [-rank, rank) made non-negative, else TF's ValueError."""
    if not isinstance(axis, (int, np.integer)) or not -rank <= axis < rank:
        raise ValueError(f"{what}={axis} out of bounds: expected {-rank}<={what}<{rank}")
    return int(axis) % rank


def _merge_dims(x, outer, inner):
    """x (ragged or dense) with dims outer..inner merged."""
    if outer == inner:
        return x
    if not isinstance(x, RaggedTensor):
        shape = array_ops.shape(x)
        merged = array_ops.reshape(x, joining_ops.concat(
            [shape[:outer], [-1], shape[inner + 1:]], 0))
        merged.set_shape(x.shape[:outer].concatenate(
            [x.shape[outer:inner + 1].num_elements()]).concatenate(x.shape[inner + 1:]))
        return merged
    if outer >= 2:
        return x.with_values(_merge_dims(x.values, outer - 1, inner - 1))
    merged = _merge_dims(x.values, 0, inner - 1)  # values' dim 0 is x's dims 0 and 1
    if outer == 0:
        return merged
    # outer == 1: each row's values, down to dim `inner`, become the row.
    splits, v, depth = x.row_splits, x.values, inner - 1
    while depth > 0 and isinstance(v, RaggedTensor):
        splits, v, depth = gather_ops.gather(v.row_splits, splits), v.values, depth - 1
    if depth > 0:
        size = reduction_ops.reduce_prod(array_ops.shape(v, out_type=splits.dtype)[1:depth + 1])
        splits = splits * size
    return RaggedTensor.from_row_splits(merged, splits, validate=False)


SPLITS_MISMATCH = "Inputs must have identical ragged splits"


def splits_checks(a_splits, b_splits, message=SPLITS_MISMATCH) -> list:
    """Assertions that two lists of row splits are identical (none for shared tensors)."""
    checks = []
    for a, b in zip(a_splits, b_splits, strict=True):
        if a is b:
            continue
        b = math_ops.cast(b, a.dtype)
        na, nb = a.shape.num_elements(), b.shape.num_elements()
        if na is not None and nb is not None and na != nb:
            raise errors.InvalidArgumentError(None, None, message)
        va, vb = constant_value(a), constant_value(b)
        if va is not None and vb is not None and not np.array_equal(va, vb):
            # known now (the checks below would fail when run; the dense ops built after
            # them may already refuse the shapes that follow from these splits)
            raise errors.InvalidArgumentError(None, None, message)
        same_size = comparison_ops.equal(array_ops.size(a), array_ops.size(b))
        checks.append(check_ops.assert_equal(same_size, True, message=message))
        with graph_lib.control_dependencies(checks[-1:]):
            checks.append(check_ops.assert_equal(a, b, message=message))
    return checks


def outer_row_ids(rt: RaggedTensor) -> Tensor:
    """For each flat value of rt, the index of the outermost row that holds it."""
    ids = None
    for splits in reversed(rt.nested_row_splits):
        level = row_splits_to_segment_ids(splits)
        ids = level if ids is None else gather_ops.gather(level, ids)
    return ids


def as_ragged(x, ragged_rank=1, row_splits_dtype=dtypes.int64):
    """x as a RaggedTensor of at least `ragged_rank` (dense tensors and the flat values of
    shallower RaggedTensors cut by `from_tensor`: uniform rows)."""
    if isinstance(x, RaggedTensorValue):
        x = RaggedTensor._from_value(x)
    if not isinstance(x, RaggedTensor):
        return RaggedTensor.from_tensor(x, ragged_rank=ragged_rank,
                                        row_splits_dtype=row_splits_dtype)
    if x.ragged_rank >= ragged_rank:
        return x
    return x.with_flat_values(RaggedTensor.from_tensor(
        x.flat_values, ragged_rank=ragged_rank - x.ragged_rank,
        row_splits_dtype=x.row_splits.dtype))


def gather_rows(x, index):
    """The rows of `x` (a RaggedTensor or a dense Tensor) at the 1-D `index`."""
    if not isinstance(x, RaggedTensor):
        return gather_ops.gather(x, index)
    index = math_ops.cast(index, x.row_splits.dtype)
    splits = x.row_splits
    starts = gather_ops.gather(splits[:-1], index)
    lengths = gather_ops.gather(x.row_lengths(), index)
    new_splits = _cumsum_splits(lengths)
    ids = row_splits_to_segment_ids(new_splits)
    pos = sequence_ops.range(0, new_splits[-1], dtype=splits.dtype) - gather_ops.gather(
        new_splits, ids)
    values = gather_rows(x.values, gather_ops.gather(starts, ids) + pos)
    return RaggedTensor._make(values, new_splits, [], x.uniform_row_length)


def row_splits_to_segment_ids(splits, name=None, out_type=None) -> Tensor:
    """The row id of each value, from row_splits (`tf.ragged.row_splits_to_segment_ids`)."""
    with graph_lib.name_scope(name, "RaggedSplitsToSegmentIds", [splits]):
        splits = _partition(splits, "splits", dtypes.int64)
        out_type = splits.dtype if out_type is None else dtypes.as_dtype(out_type)
        # Value j's row is the number of row limits (all but the last row's) <= j: count
        # the limits at each position, then a running sum (linear in the values).
        nvals = splits[-1]
        limits = splits[1:-1]
        marks = sequence_ops.unsorted_segment_sum(array_ops.ones_like(limits), limits,
                                                  nvals + 1)
        ids = sequence_ops.cumsum(marks)[:nvals]
        return ids if out_type == ids.dtype else math_ops.cast(ids, out_type)


def _static_or(dim, tensor):
    """A Python int for a statically known dimension, else the dynamic `tensor`."""
    return tensor if dim is None else dim


def _from_tensor_rows(cls, x, lengths, padding, dtype):
    """`from_tensor` with ragged_rank 1: the rows of x, cut to lengths or padding."""
    ndims = x.shape.ndims
    shape = array_ops.shape(x, out_type=dtype)
    ncols = shape[1]
    if padding is not None:
        pad = convert_to_tensor(padding, dtype=x.dtype, name="padding")
        pad.shape.assert_is_compatible_with(x.shape[2:])
        differs = comparison_ops.not_equal(x, pad)
        if ndims is None:
            raise ValueError("from_tensor with padding needs a tensor of known rank")
        if ndims > 2:
            differs = reduction_ops.reduce_any(differs, axis=list(range(2, ndims)))
        pos = sequence_ops.range(1, ncols + 1, dtype=dtype)
        lengths = math_ops.maximum(reduction_ops.reduce_max(
            math_ops.cast(differs, dtype) * pos, axis=1), 0)
    if lengths is None:
        flat = array_ops.reshape(x, joining_ops.concat([[-1], shape[2:]], 0))
        flat.set_shape(tensor_shape.TensorShape([x.shape[:2].num_elements()]).concatenate(
            x.shape[2:]))
        length = _static_or(x.shape[1].value, ncols)
        return cls.from_uniform_row_length(
            flat, math_ops.cast(length, dtype), nrows=math_ops.cast(
                _static_or(x.shape[0].value, shape[0]), dtype), validate=False)
    lengths = math_ops.cast(_partition(lengths, "row_lengths", dtype), dtype)
    lengths = math_ops.minimum(math_ops.maximum(lengths, 0), ncols)
    mask = gather_ops.sequence_mask(lengths, ncols)
    flat = slicing_ops.boolean_mask(x, mask)
    return cls.from_row_lengths(flat, lengths, validate=False)


def _from_tensor_nested(cls, x, nested_lengths, dtype):
    """`from_tensor` with a list of nested row lengths: element [i, j, ..., :l] of x at each
    ragged level, l being the level's length for that row."""
    k = len(nested_lengths)
    shape = array_ops.shape(x, out_type=dtype)
    index = sequence_ops.range(0, shape[0], dtype=dtype)  # into x's first d dims, flattened
    parts = []
    for d, lengths in enumerate(nested_lengths, 1):
        lengths = math_ops.cast(_partition(lengths, "row_lengths", dtype), dtype)
        lengths = math_ops.minimum(math_ops.maximum(lengths, 0), shape[d])
        splits = _cumsum_splits(lengths)
        ids = row_splits_to_segment_ids(splits)
        pos = sequence_ops.range(0, splits[-1], dtype=dtype) - gather_ops.gather(splits, ids)
        index = gather_ops.gather(index, ids) * shape[d] + pos
        parts.append(lengths)
    rows = array_ops.reshape(x, joining_ops.concat([[-1], shape[k + 1:]], 0))
    values = gather_ops.gather(rows, index)
    values.set_shape(tensor_shape.TensorShape([None]).concatenate(x.shape[k + 1:]))
    return cls.from_nested_row_lengths(values, parts, validate=False)


def _check_shape(rt: RaggedTensor, dims):
    """ValueError when `dims` (to_tensor's shape) contradicts rt's static uniform dims."""
    have = rt.shape
    if have.ndims is not None and len(dims) != have.ndims:
        raise ValueError(f"rt_input.shape and shape={dims} have different ranks")
    for i in range(rt.ragged_rank + 1, len(dims)):
        if dims[i] is not None and have[i].value is not None and dims[i] != have[i].value:
            text = ",".join("-1" if d is None else str(d) for d in dims)
            raise ValueError(f"rt_input.shape and shape=[{text}] are incompatible: "
                             f"rt_input.shape[{i}] = {have[i].value} but shape[{i}] = "
                             f"{dims[i]}")


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


def _inner_sparse_entries(indices, flat):
    """The sparse indices and values of each scalar of `flat` ([n, d1, ..., dk]), whose
    rows sit at `indices` ([n, r])."""
    inner_shape = array_ops.shape(flat, out_type=dtypes.int64)[1:]
    per_row = reduction_ops.reduce_prod(inner_shape)
    position = sequence_ops.range(0, per_row, dtype=dtypes.int64)
    coords = []
    for d in reversed(range(flat.shape.ndims - 1)):
        coords.append(math_ops.floormod(position, inner_shape[d]))
        position = math_ops.floordiv(position, inner_shape[d])
    inner = joining_ops.stack(coords[::-1], 1)
    n = array_ops.shape(indices, out_type=dtypes.int64)[0]
    which = math_ops.floordiv(sequence_ops.range(0, n * per_row, dtype=dtypes.int64), per_row)
    outer = gather_ops.gather(indices, which)
    inner = joining_ops.tile(inner, joining_ops.stack([n, 1]))
    return joining_ops.concat([outer, inner], 1), array_ops.reshape(flat, [-1])


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
