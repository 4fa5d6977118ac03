"""Static tensor shapes: TF1's `Dimension` and `TensorShape`.

A shape is either of unknown rank, or a list of dimensions each known (an int >= 0) or
unknown. `TensorShape` keeps that as one immutable tuple, `_dims_tuple`: a tuple of
`int | None`, or None for unknown rank. Hot paths (shape functions, Session feed checks)
read that slot directly or call `is_compatible_with_numpy_shape`; `Dimension` objects are
made only for the TF1 API that returns them (`shape[i]`, `shape.dims`, iteration).

TF1 semantics throughout (v2 behaviour off): `shape[i]` is a `Dimension`, and comparisons
of unknown dimensions give None rather than False.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Any

from tensorflux.protos import tensor_shape_pb2

__all__ = [
    "Dimension", "TensorShape", "as_dimension", "as_shape", "dimension_value",
    "dimension_at_index", "unknown_shape", "scalar", "vector", "matrix",
    "is_compatible_with_numpy_shape", "from_dims_tuple",
]


def _dim_value(value: Any) -> int | None:
    """Validates one dimension: None, a Dimension, an int-like or an integral float >= 0."""
    if type(value) is int:
        if value < 0:
            raise ValueError(f"Dimension {value} must be >= 0")
        return value
    if value is None:
        return None
    if isinstance(value, Dimension):
        return value._value
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # TF 1.x took 160.0 (`depth * multiplier`); TF 2.x refuses it
    try:
        index = operator.index(value)
    except TypeError:
        raise TypeError(
            "Dimension value must be integer or None or have an __index__ method, got "
            f"value '{value!r}' with type '{type(value)}'") from None
    if index < 0:
        raise ValueError(f"Dimension {index} must be >= 0")
    return index


class Dimension:
    """One dimension of a `TensorShape`: a size >= 0, or unknown (`value is None`).

    Arithmetic with an unknown dimension gives an unknown dimension; comparisons involving
    one give None (neither True nor False), as in TF1.
    """

    __slots__ = ("_value",)

    def __init__(self, value: Any) -> None:
        self._value = _dim_value(value)

    @property
    def value(self) -> int | None:
        """The size of this dimension, or None if unknown."""
        return self._value

    def __repr__(self) -> str:
        return f"Dimension({self._value!r})"

    def __str__(self) -> str:
        return "?" if self._value is None else str(self._value)

    def __int__(self) -> int:
        if self._value is None:
            raise TypeError("Cannot convert an unknown Dimension to an int")
        return self._value

    __index__ = __int__

    def __bool__(self) -> bool:
        return bool(self._value)

    def __reduce__(self):
        return Dimension, (self._value,)

    # ---- compatibility -----------------------------------------------------------------
    def is_compatible_with(self, other: Any) -> bool:
        """Whether `other` (a Dimension or int-like or None) may be the same size as this.

        Args:
          other: a Dimension, int or None.

        Returns:
          True unless both are known and differ.
        """
        other = _dim_value(other)
        a = self._value
        return a is None or other is None or a == other

    def assert_is_compatible_with(self, other: Any) -> None:
        """Raises ValueError unless `self.is_compatible_with(other)`.

        Args:
          other: a Dimension, int or None.

        Raises:
          ValueError: if the two dimensions are known and differ.
        """
        if not self.is_compatible_with(other):
            raise ValueError(f"Dimensions {self} and {as_dimension(other)} are not compatible")

    def merge_with(self, other: Any) -> Dimension:
        """The dimension known by either of `self` and `other`.

        Args:
          other: a Dimension, int or None.

        Returns:
          A Dimension: known if either is known.

        Raises:
          ValueError: if the two dimensions are known and differ.
        """
        b = _dim_value(other)
        a = self._value
        if a is None:
            return Dimension(b)
        if b is None or a == b:
            return Dimension(a)
        raise ValueError(f"Dimensions {a} and {b} are not compatible")

    # ---- arithmetic (unknown in, unknown out) -------------------------------------------
    def _binary(self, other: Any, fn, reflected: bool = False):
        try:
            b = _dim_value(other)
        except (TypeError, ValueError):
            return NotImplemented
        a = self._value
        if a is None or b is None:
            return Dimension(None)
        return Dimension(fn(b, a) if reflected else fn(a, b))

    def __add__(self, other):
        return self._binary(other, operator.add)

    def __radd__(self, other):
        return self._binary(other, operator.add, True)

    def __sub__(self, other):
        return self._binary(other, operator.sub)

    def __rsub__(self, other):
        return self._binary(other, operator.sub, True)

    def __mul__(self, other):
        return self._binary(other, operator.mul)

    def __rmul__(self, other):
        return self._binary(other, operator.mul, True)

    def __floordiv__(self, other):
        return self._binary(other, operator.floordiv)

    def __rfloordiv__(self, other):
        return self._binary(other, operator.floordiv, True)

    def __mod__(self, other):
        return self._binary(other, operator.mod)

    def __rmod__(self, other):
        return self._binary(other, operator.mod, True)

    def __truediv__(self, other):
        raise TypeError(f"unsupported operand type(s) for /: 'Dimension' and "
                        f"'{type(other).__name__}', please use // instead")

    def __rtruediv__(self, other):
        raise TypeError(f"unsupported operand type(s) for /: '{type(other).__name__}' and "
                        "'Dimension', please use // instead")

    # ---- comparisons (None when either side is unknown) ---------------------------------
    def __eq__(self, other: Any):
        try:
            b = _dim_value(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or b is None:
            return None
        return self._value == b

    def __ne__(self, other: Any):
        try:
            b = _dim_value(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or b is None:
            return None
        return self._value != b

    __hash__ = None  # unhashable, as in TF: == does not give a bool for unknown sizes

    def _compare(self, other: Any, fn):
        b = _dim_value(other)
        if self._value is None or b is None:
            return None
        return fn(self._value, b)

    def __lt__(self, other):
        return self._compare(other, operator.lt)

    def __le__(self, other):
        return self._compare(other, operator.le)

    def __gt__(self, other):
        return self._compare(other, operator.gt)

    def __ge__(self, other):
        return self._compare(other, operator.ge)


def as_dimension(value: Any) -> Dimension:
    """Converts `value` to a Dimension.

    Args:
      value: a Dimension (returned as is), an int-like >= 0, or None.

    Returns:
      A Dimension.

    Raises:
      TypeError: if `value` is not an integer, None or a Dimension.
      ValueError: if `value` is negative.
    """
    return value if isinstance(value, Dimension) else Dimension(value)


def dimension_value(dimension: Any) -> int | None:
    """The int (or None) value of a Dimension; other values are returned unchanged.

    Args:
      dimension: a Dimension, int or None.

    Returns:
      The plain value.
    """
    if isinstance(dimension, Dimension):
        return dimension._value
    return dimension


def _dims_of(dims: Any) -> tuple | None:
    """The `_dims_tuple` for anything TensorShape() accepts."""
    if type(dims) is list or type(dims) is tuple:
        out = []
        for d in dims:
            if d is None or (type(d) is int and d >= 0):
                out.append(d)
            else:
                out.append(_dim_value(d))
        return tuple(out)
    if dims is None:
        return None
    if isinstance(dims, TensorShape):
        return dims._dims_tuple
    if isinstance(dims, (str, bytes)):
        first = dims[:1]
        raise TypeError(
            f"Failed to convert '{dims!r}' to a shape: '{first!r}'could not be converted to "
            "a dimension. A shape should either be single dimension (e.g. 10), or an "
            "iterable of dimensions (e.g. [1, 10, None]).")
    if hasattr(dims, "unknown_rank") and hasattr(dims, "dim"):  # a TensorShapeProto
        if dims.unknown_rank:
            return None
        return tuple(None if d.size == -1 else _dim_value(d.size) for d in dims.dim)
    try:
        it = iter(dims)
    except TypeError:
        return (_dim_value(dims),)
    return tuple([_dim_value(d) for d in it])


def _fmt(dims: tuple | None) -> str:
    if dims is None:
        return "<unknown>"
    parts = ["?" if d is None else str(d) for d in dims]
    if len(parts) == 1:
        return f"({parts[0]},)"
    return "(" + ", ".join(parts) + ")"


class TensorShape:
    """The static shape of a tensor, possibly partially known (TF1 `tf.TensorShape`).

    Construct from None (unknown rank), an iterable of dimensions (ints, None or
    Dimensions), a single dimension, another TensorShape, or a `TensorShapeProto`.
    """

    __slots__ = ("_dims_tuple",)

    def __init__(self, dims: Any) -> None:
        self._dims_tuple = _dims_of(dims)

    # ---- views -------------------------------------------------------------------------
    @property
    def dims(self) -> list[Dimension] | None:
        """The dimensions as a list of Dimensions, or None for unknown rank."""
        if self._dims_tuple is None:
            return None
        return [Dimension(d) for d in self._dims_tuple]

    @property
    def ndims(self) -> int | None:
        """The rank, or None if unknown."""
        return None if self._dims_tuple is None else len(self._dims_tuple)

    rank = ndims

    def as_list(self) -> list[int | None]:
        """The dimensions as a list of ints (None for unknown ones).

        Raises:
          ValueError: if the rank is unknown.
        """
        if self._dims_tuple is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims_tuple)

    def as_proto(self):
        """This shape as a `tensor_shape_pb2.TensorShapeProto` (unknown sizes are -1)."""
        if self._dims_tuple is None:
            return tensor_shape_pb2.TensorShapeProto(unknown_rank=True)
        return tensor_shape_pb2.TensorShapeProto(dim=[
            tensor_shape_pb2.TensorShapeProto.Dim(size=-1 if d is None else d)
            for d in self._dims_tuple])

    def is_fully_defined(self) -> bool:
        """Whether the rank and every dimension are known."""
        dims = self._dims_tuple
        return dims is not None and None not in dims

    def num_elements(self) -> int | None:
        """The number of elements, or None unless the shape is fully defined."""
        dims = self._dims_tuple
        if dims is None or None in dims:
            return None
        n = 1
        for d in dims:
            n *= d
        return n

    # ---- sequence protocol -------------------------------------------------------------
    def __len__(self) -> int:
        if self._dims_tuple is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self._dims_tuple)

    def __bool__(self) -> bool:
        return self._dims_tuple is not None

    def __iter__(self) -> Iterator[Dimension]:
        if self._dims_tuple is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter([Dimension(d) for d in self._dims_tuple])

    def __getitem__(self, key: Any) -> Dimension | TensorShape:
        dims = self._dims_tuple
        if dims is not None:
            if isinstance(key, slice):
                return from_dims_tuple(dims[key])
            return Dimension(dims[key])
        if not isinstance(key, slice):
            return Dimension(None)
        # Unknown rank: a slice has a known rank only when both ends are known and >= 0.
        if key.step is not None:
            raise ValueError("Steps are not yet handled")
        start = 0 if key.start is None else key.start
        stop = key.stop
        if stop is None or start < 0 or stop < 0:
            return unknown_shape()
        return unknown_shape(rank=max(stop - start, 0))

    # ---- relations between shapes ------------------------------------------------------
    def is_compatible_with(self, other: Any) -> bool:
        """Whether some fully defined shape is an instance of both shapes.

        Args:
          other: anything `as_shape` accepts.

        Returns:
          True when the ranks are unknown or equal and each pair of dimensions is
          compatible.
        """
        return _compatible(self._dims_tuple, as_shape(other)._dims_tuple)

    def assert_is_compatible_with(self, other: Any) -> None:
        """Raises ValueError unless `self.is_compatible_with(other)`.

        Raises:
          ValueError: if the shapes are not compatible.
        """
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are incompatible")

    def merge_with(self, other: Any) -> TensorShape:
        """The shape with every dimension known by either of `self` and `other`.

        Args:
          other: anything `as_shape` accepts.

        Returns:
          A TensorShape.

        Raises:
          ValueError: if the shapes are not compatible.
        """
        other = as_shape(other)
        a, b = self._dims_tuple, other._dims_tuple
        if a is None:
            return other
        if b is None or a == b:
            return self
        if len(a) == len(b):
            merged = []
            for x, y in zip(a, b, strict=True):
                if x is None:
                    merged.append(y)
                elif y is None or x == y:
                    merged.append(x)
                else:
                    break
            else:
                return from_dims_tuple(tuple(merged))
        raise ValueError(f"Shapes {self} and {other} are not compatible")

    def most_specific_compatible_shape(self, other: Any) -> TensorShape:
        """The most specific shape compatible with both `self` and `other`.

        Dimensions that agree are kept; others become unknown; differing ranks give an
        unknown shape.

        Args:
          other: anything `as_shape` accepts.

        Returns:
          A TensorShape.
        """
        a, b = self._dims_tuple, as_shape(other)._dims_tuple
        if a is None or b is None or len(a) != len(b):
            return unknown_shape()
        return from_dims_tuple(tuple(x if x == y else None for x, y in zip(a, b, strict=True)))

    def is_subtype_of(self, other: Any) -> bool:
        """Whether `other` describes every shape `self` does (TF2's TraceType order): any
        shape is a subtype of the unknown shape; shapes of one rank are when each of
        `other`'s dimensions is unknown or equal; shapes of different ranks never are."""
        if not isinstance(other, TensorShape):
            return False
        a, b = self._dims_tuple, other._dims_tuple
        if b is None:
            return True
        if a is None or len(a) != len(b):
            return False
        return all(y is None or x == y for x, y in zip(a, b, strict=True))

    def most_specific_common_supertype(self, others) -> TensorShape | None:
        """The most specific shape that `self` and each of `others` are subtypes of (None if
        one of `others` is no TensorShape): dimensions that differ become unknown, ranks
        that differ give the unknown shape."""
        others = list(others)
        if any(not isinstance(o, TensorShape) for o in others):
            return None
        out = self
        for o in others:
            out = out.most_specific_compatible_shape(o)
        return out

    def concatenate(self, other: Any) -> TensorShape:
        """The dimensions of `self` followed by those of `other`.

        Args:
          other: anything `as_shape` accepts.

        Returns:
          A TensorShape; unknown if either rank is unknown.
        """
        a, b = self._dims_tuple, as_shape(other)._dims_tuple
        if a is None or b is None:
            return unknown_shape()
        return from_dims_tuple(a + b)

    def __add__(self, other: Any) -> TensorShape:
        return self.concatenate(other)

    def __radd__(self, other: Any) -> TensorShape:
        return as_shape(other).concatenate(self)

    # ---- rank checks -------------------------------------------------------------------
    def assert_has_rank(self, rank: int) -> None:
        """Raises ValueError if the rank is known and is not `rank`."""
        if self._dims_tuple is not None and len(self._dims_tuple) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")

    def assert_same_rank(self, other: Any) -> None:
        """Raises ValueError if both ranks are known and differ."""
        other = as_shape(other)
        a, b = self._dims_tuple, other._dims_tuple
        if a is not None and b is not None and len(a) != len(b):
            raise ValueError(f"Shapes {self} and {other} must have the same rank")

    def assert_is_fully_defined(self) -> None:
        """Raises ValueError unless the shape is fully defined."""
        if not self.is_fully_defined():
            raise ValueError(f"Shape {self} is not fully defined")

    def with_rank(self, rank: int) -> TensorShape:
        """This shape, merged with an unknown shape of rank `rank`.

        Raises:
          ValueError: if the rank is known and is not `rank`.
        """
        dims = self._dims_tuple
        if dims is None:
            return unknown_shape(rank=rank)
        if len(dims) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")
        return self

    def with_rank_at_least(self, rank: int) -> TensorShape:
        """This shape, checked to have rank >= `rank` when known.

        Raises:
          ValueError: if the rank is known and less than `rank`.
        """
        if self._dims_tuple is not None and len(self._dims_tuple) < rank:
            raise ValueError(f"Shape {self} must have rank at least {rank}")
        return self

    def with_rank_at_most(self, rank: int) -> TensorShape:
        """This shape, checked to have rank <= `rank` when known.

        Raises:
          ValueError: if the rank is known and greater than `rank`.
        """
        if self._dims_tuple is not None and len(self._dims_tuple) > rank:
            raise ValueError(f"Shape {self} must have rank at most {rank}")
        return self

    # ---- equality and printing ---------------------------------------------------------
    def __eq__(self, other: Any):
        if isinstance(other, TensorShape):
            return self._dims_tuple == other._dims_tuple
        try:
            return self._dims_tuple == as_shape(other)._dims_tuple
        except (TypeError, ValueError):
            return NotImplemented

    def __ne__(self, other: Any):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(self._dims_tuple)

    def __repr__(self) -> str:
        dims = self._dims_tuple
        if dims is None:
            return "TensorShape(None)"
        return "TensorShape([" + ", ".join(f"Dimension({d!r})" for d in dims) + "])"

    def __str__(self) -> str:
        return _fmt(self._dims_tuple)

    def __reduce__(self):
        return TensorShape, (None if self._dims_tuple is None else list(self._dims_tuple),)


def _compatible(a: tuple | None, b: tuple | None) -> bool:
    if a is None or b is None:
        return True
    if len(a) != len(b):
        return False
    i = 0
    for x in a:
        y = b[i]
        if x is not None and y is not None and x != y:
            return False
        i += 1
    return True


def from_dims_tuple(dims: tuple | None) -> TensorShape:
    """A TensorShape holding `dims` without validating it (for hot paths).

    Args:
      dims: a tuple of ints >= 0 and None, or None for unknown rank. Not checked.

    Returns:
      A TensorShape.
    """
    shape = TensorShape.__new__(TensorShape)
    shape._dims_tuple = dims
    return shape


def is_compatible_with_numpy_shape(shape: TensorShape, np_shape: tuple) -> bool:
    """Whether an array of shape `np_shape` (a tuple of ints) may have static shape `shape`.

    The Session feed check: faster than `shape.is_compatible_with(np_shape)`.

    Args:
      shape: a TensorShape.
      np_shape: a NumPy shape tuple.

    Returns:
      True if the rank is unknown, or equal and every known dimension matches.
    """
    dims = shape._dims_tuple
    if dims is None:
        return True
    if len(dims) != len(np_shape):
        return False
    i = 0  # indexing beats zip() for the short tuples shapes are
    for d in dims:
        if d is not None and d != np_shape[i]:
            return False
        i += 1
    return True


_UNKNOWN = from_dims_tuple(None)
_SCALAR = from_dims_tuple(())


def as_shape(shape: Any) -> TensorShape:
    """Converts `shape` to a TensorShape (a TensorShape is returned as is).

    Args:
      shape: anything `TensorShape()` accepts.

    Returns:
      A TensorShape.
    """
    if isinstance(shape, TensorShape):
        return shape
    return TensorShape(shape)


def unknown_shape(rank: int | None = None, **kwargs: Any) -> TensorShape:
    """A shape of unknown rank, or of rank `rank` with every dimension unknown.

    Args:
      rank: the rank, or None. (`ndims=` is accepted as TF1's older spelling.)

    Returns:
      A TensorShape.
    """
    if rank is None and "ndims" in kwargs:
        rank = kwargs.pop("ndims")
    if kwargs:
        raise TypeError(f"Unknown argument(s): {sorted(kwargs)}")
    if rank is None:
        return _UNKNOWN
    return from_dims_tuple((None,) * rank)


def scalar() -> TensorShape:
    """The shape of a scalar: `TensorShape([])`."""
    return _SCALAR


def vector(length: Any) -> TensorShape:
    """The shape of a vector of `length` elements (None for unknown)."""
    return TensorShape([length])


def matrix(rows: Any, cols: Any) -> TensorShape:
    """The shape of a `rows` x `cols` matrix (either may be None)."""
    return TensorShape([rows, cols])


def dimension_at_index(shape: TensorShape, index: int) -> Dimension:
    """Dimension `index` of `shape`; an unknown Dimension when the rank is unknown.

    Args:
      shape: a TensorShape.
      index: the dimension's index.

    Returns:
      A Dimension.

    Raises:
      IndexError: if the rank is known and `index` is out of range.
    """
    dims = shape._dims_tuple
    if dims is None:
        return Dimension(None)
    return Dimension(dims[index])

