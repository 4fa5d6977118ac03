"""`tf.shape` of a RaggedTensor: a DynamicRaggedShape (as in TensorFlow 2.21, tf.compat.v1
graph mode included), the shape as row partitions plus the flat values' dense shape.

What TF1-style programs read from it: `rank`, `num_row_partitions`, `dtype`,
`static_lengths()`, `is_uniform(axis)`, `inner_shape`/`inner_rank`, indexing a uniform dim
(`shape[0]` is the number of rows, a Tensor; a ragged dim is a ValueError, as in TF), a
prefix slice (`shape[:k]`), `with_dtype`; and `tf.broadcast_to(x, shape)`, `tf.zeros`,
`tf.ones`, `tf.fill` and `tf.reshape` to it (RaggedTensors of that shape). It is not a
graph element: Session.run refuses it (TypeError), as TF does.
"""

from __future__ import annotations

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, joining_ops, math_ops
from tensorflux.ragged import ragged_math_ops
from tensorflux.ragged.ragged_tensor import RaggedTensor


class DynamicRaggedShape:
    """The shape of a RaggedTensor (`tf.experimental.DynamicRaggedShape`): the row
    partitions of its ragged dims, outermost first, and the shape of its flat values."""

    def __init__(self, partitions, inner_shape, static, dtype=dtypes.int32):
        # partitions: the source RaggedTensor at each ragged level (its row_splits and
        # uniform_row_length); inner_shape: the flat values' shape (a 1-D Tensor of dtype)
        self._partitions = tuple(partitions)
        self._inner_shape = inner_shape
        self._static = tensor_shape.TensorShape(static)
        self._dtype = dtypes.as_dtype(dtype)

    @classmethod
    def from_tensor(cls, x, dtype=dtypes.int32) -> DynamicRaggedShape:
        """The shape of `x` (a RaggedTensor or a dense Tensor)."""
        partitions = []
        level = x
        while isinstance(level, RaggedTensor):
            partitions.append(level)
            level = level.values
        inner = array_ops.shape(level, out_type=dtype)
        return cls(partitions, inner, x.shape, dtype)

    # ---- static facts ---------------------------------------------------------------------

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def rank(self) -> int | None:
        return self._static.ndims

    @property
    def num_row_partitions(self) -> int:
        return len(self._partitions)

    @property
    def inner_rank(self) -> int | None:
        return self._inner_shape.shape.as_list()[0]

    @property
    def inner_shape(self):
        """The shape of the flat values (a 1-D Tensor)."""
        return self._inner_shape

    def static_lengths(self, ragged_lengths=True) -> list:
        """The length of each dim where known statically, None for ragged or unknown ones."""
        del ragged_lengths  # ragged dims are None here (TF's graph-mode answer)
        if self.rank is None:
            raise ValueError("Cannot get static lengths of a shape of unknown rank")
        return [self._static_length(i) for i in range(self.rank)]

    def _static_length(self, axis):
        if 0 < axis <= self.num_row_partitions and not self.is_uniform(axis):
            return None
        return self._static[axis].value

    def is_uniform(self, axis) -> bool:
        """Whether every slice along `axis` has the same length (a dense dim)."""
        axis = self._axis(axis)
        if axis == 0 or axis > self.num_row_partitions:
            return True
        return self._partitions[axis - 1].uniform_row_length is not None

    def _to_tensor_shape(self) -> tensor_shape.TensorShape:
        return tensor_shape.TensorShape(self.static_lengths())

    def _axis(self, axis) -> int:
        rank = self.rank
        if rank is None:
            raise ValueError("Rank must be known to index a DynamicRaggedShape")
        if not -rank <= axis < rank:
            raise IndexError(f"Index {axis} is not in [-{rank}, {rank})")
        return axis % rank

    def with_dtype(self, dtype) -> DynamicRaggedShape:
        dtype = dtypes.as_dtype(dtype)
        return DynamicRaggedShape(self._partitions, math_ops.cast(self._inner_shape, dtype),
                                  self._static, dtype)

    # ---- dims ---------------------------------------------------------------------------

    def __getitem__(self, index):
        """A uniform dim's length (a scalar Tensor), or a prefix of the shape (a slice)."""
        if isinstance(index, slice):
            return self._prefix(index)
        axis = self._axis(index)
        with graph_lib.name_scope(None, "RaggedShapeGetItem", []):
            if axis > self.num_row_partitions:
                return self._inner_shape[axis - self.num_row_partitions]
            if axis == 0:
                if self._partitions:
                    return self._partitions[0].nrows(out_type=self._dtype)
                return self._inner_shape[0]
            uniform = self._partitions[axis - 1].uniform_row_length
            if uniform is None:
                raise ValueError(f"Index {index} is not uniform")
            return math_ops.cast(uniform, self._dtype)

    def _prefix(self, index: slice) -> DynamicRaggedShape:
        start, stop, step = index.start, index.stop, index.step
        if start not in (None, 0) or step not in (None, 1):
            raise ValueError("DynamicRaggedShape slices must start at 0 with step 1")
        rank = self.rank
        stop = rank if stop is None else (stop + rank if stop < 0 else min(stop, rank))
        if stop == 0:
            return DynamicRaggedShape([], array_ops.zeros([0], self._dtype), [], self._dtype)
        if stop > self.num_row_partitions:  # keeps every partition, cuts the inner dims
            inner = self._inner_shape[:stop - self.num_row_partitions]
            return DynamicRaggedShape(self._partitions, inner, self._static[:stop],
                                      self._dtype)
        if any(not self.is_uniform(a) for a in range(1, stop)):
            raise ValueError("Cannot take a prefix of a ragged shape that ends in its "
                             "ragged dims")
        dims = joining_ops.stack([self[a] for a in range(stop)]) if stop > 1 else \
            array_ops.reshape(self[0], [1])
        return DynamicRaggedShape([], dims, self._static[:stop], self._dtype)

    def __repr__(self) -> str:
        if self.rank is None:
            lengths = "None"
        else:
            lengths = "[" + ", ".join(str(v) for v in self.static_lengths()) + "]"
        return (f"<DynamicRaggedShape lengths={lengths} "
                f"num_row_partitions={self.num_row_partitions}>")

    def _as_graph_element(self):
        raise TypeError(f"Argument `fetch` = {self!r} has invalid type "
                        f"\"DynamicRaggedShape\" must be a string or Tensor.")


def shape(input, name=None, out_type=None):  # noqa: A002 - TF's name
    """The shape of a RaggedTensor (`tf.shape` on ragged): a DynamicRaggedShape."""
    with graph_lib.name_scope(name, "RaggedShape", [input]):
        return DynamicRaggedShape.from_tensor(input, out_type or dtypes.int32)


def broadcast_to(input, shape, name=None):  # noqa: A002 - TF's name
    """`input` broadcast to `shape` (`tf.broadcast_to`), a RaggedTensor when the shape is a
    DynamicRaggedShape or `input` is ragged."""
    if not isinstance(shape, DynamicRaggedShape):
        # TF's dense broadcast_to then fails to convert the RaggedTensor
        raise TypeError(f"Failed to convert elements of {input} to Tensor. Consider "
                        "casting elements to a supported type.")
    with graph_lib.name_scope(name, "RaggedBroadcastTo", [input]):
        x = input if isinstance(input, RaggedTensor) else convert_to_tensor(input)
        return ragged_math_ops.binary(math_ops.add)(_zeros(shape, x.dtype), x)


def _with_partitions(shape: DynamicRaggedShape, flat):
    """`flat` (of shape.inner_shape) given `shape`'s row partitions."""
    for part in reversed(shape._partitions):
        flat = RaggedTensor._make(flat, part.row_splits, [], part.uniform_row_length)
    return flat


def _zeros(shape: DynamicRaggedShape, dtype):
    return _with_partitions(shape, array_ops.zeros(shape.inner_shape, dtype))


def zeros(shape, dtype=dtypes.float32, name=None):
    """`tf.zeros` of a DynamicRaggedShape: a RaggedTensor of zeros."""
    with graph_lib.name_scope(name, "RaggedZeros", []):
        return _zeros(shape, dtypes.as_dtype(dtype))


def ones(shape, dtype=dtypes.float32, name=None):
    """`tf.ones` of a DynamicRaggedShape: a RaggedTensor of ones."""
    with graph_lib.name_scope(name, "RaggedOnes", []):
        return _with_partitions(shape, array_ops.ones(shape.inner_shape, dtype))


def fill(dims, value, name=None):
    """`tf.fill` of a DynamicRaggedShape: a RaggedTensor holding `value` everywhere."""
    with graph_lib.name_scope(name, "RaggedFill", []):
        return _with_partitions(dims, array_ops.fill(dims.inner_shape, value))
