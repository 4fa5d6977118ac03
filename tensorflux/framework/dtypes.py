"""Tensor element types: `tf.DType`, the module constants (`tf.float32`, ...) and `as_dtype`.

A DType names one value of the `DataType` enum in `types.proto` (DT_FLOAT = 1, ...; a
reference type, the type of a TF1 `Variable`'s ref output, is its base value + 100). There
is exactly one DType object per enum value, so identity is equality and `dtype is
tf.float32` is the fastest test; `==` also accepts anything `as_dtype` does, like TF
(`tf.float32 == "float32"` and `tf.float32 == np.float32` are True).

Every property is computed once when the singleton is built, so reading `is_floating`,
`base_dtype` or `as_numpy_dtype` on the graph-construction and Session.run paths is a slot
read. `as_dtype` answers the common inputs (DType, enum int, name, NumPy dtype or scalar
type, Python type) with one dict lookup.

Beyond TF: `DType.numpy_dtype` is the `np.dtype` a tensor of this type is stored in at
run time (plain integers for quantized types, `object` for string, resource and variant).
"""

from __future__ import annotations

import builtins
from typing import Any

import ml_dtypes
import numpy as np

__all__ = [
    "DType", "as_dtype", "QUANTIZED_DTYPES", "TF_VALUE_DTYPES",
    "FLOATING_DTYPES", "INTEGER_DTYPES", "UNSIGNED_DTYPES", "SIGNED_INTEGER_DTYPES",
    "COMPLEX_DTYPES", "REAL_NUMBER_DTYPES", "NUMERIC_DTYPES", "ALL_DTYPES",
]

# ---- the enum (types.proto) -------------------------------------------------------------

DT_INVALID = 0
_REF_OFFSET = 100

# enum value -> (name, numpy storage dtype or None, size in bytes)
# Storage dtypes: the quantized types are kept in their plain integer carrier; string,
# resource and variant tensors are NumPy object arrays (bytes, handles, variants).
_BASE_TYPES: dict[int, tuple[str, Any]] = {
    1: ("float32", np.float32),
    2: ("float64", np.float64),
    3: ("int32", np.int32),
    4: ("uint8", np.uint8),
    5: ("int16", np.int16),
    6: ("int8", np.int8),
    7: ("string", np.object_),
    8: ("complex64", np.complex64),
    9: ("int64", np.int64),
    10: ("bool", np.bool_),
    11: ("qint8", np.int8),
    12: ("quint8", np.uint8),
    13: ("qint32", np.int32),
    14: ("bfloat16", ml_dtypes.bfloat16),
    15: ("qint16", np.int16),
    16: ("quint16", np.uint16),
    17: ("uint16", np.uint16),
    18: ("complex128", np.complex128),
    19: ("float16", np.float16),
    20: ("resource", np.object_),
    21: ("variant", np.object_),
    22: ("uint32", np.uint32),
    23: ("uint64", np.uint64),
}

_FLOATING = frozenset({1, 2, 14, 19})
_SIGNED_INT = frozenset({3, 5, 6, 9})
_UNSIGNED_INT = frozenset({4, 17, 22, 23})
_COMPLEX = frozenset({8, 18})
_QUANTIZED = frozenset({11, 12, 13, 15, 16})
_NOT_NUMPY = frozenset({20, 21})  # resource, variant
_NO_MIN_MAX = frozenset({7, 8, 10, 18})  # string, complex, bool (plus quantized)
_REAL_OF_COMPLEX = {8: 1, 18: 2}

# `limits` uses TF's table of "natural" value ranges, then clips the lower end to 0.
_LIMITS_MAX: dict[int, Any] = {
    10: True, 1: 1, 2: 1,
    **{e: int(np.iinfo(_BASE_TYPES[e][1]).max) for e in _SIGNED_INT | _UNSIGNED_INT},
}


def _numpy_type(enum: int) -> Any:
    """What TF's `as_numpy_dtype` returns: a scalar type, or a structured dtype (quantized)."""
    name, storage = _BASE_TYPES[enum]
    if enum in _QUANTIZED:
        return np.dtype([(name, storage)])
    return storage


class DType:
    """The element type of a tensor (`tf.DType`).

    One object exists per `DataType` enum value; `DType(enum)` returns it. Compare with
    `==` (accepts anything `as_dtype` does) or `is`.
    """

    __slots__ = (
        "_type_enum", "_name", "_base", "_ref", "_np_type", "_np_dtype", "_size",
        "_is_floating", "_is_integer", "_is_unsigned", "_is_complex", "_is_bool",
        "_is_quantized", "_is_numpy_compatible", "__weakref__",
    )

    def __new__(cls, type_enum: int) -> DType:
        try:
            return _BY_ENUM[type_enum]
        except (KeyError, TypeError):
            raise TypeError(f"type_enum is not a valid types_pb2.DataType: {type_enum!r}") \
                from None

    @classmethod
    def _make(cls, type_enum: int) -> DType:
        self = object.__new__(cls)
        base = type_enum % _REF_OFFSET
        name, storage = _BASE_TYPES[base]
        self._type_enum = type_enum
        self._name = name + "_ref" if type_enum > _REF_OFFSET else name
        self._base = None  # filled in once every singleton exists
        self._ref = None
        self._np_type = _numpy_type(base)
        self._np_dtype = np.dtype(storage)
        self._size = 0 if storage is np.object_ else self._np_dtype.itemsize
        self._is_floating = base in _FLOATING
        self._is_integer = base in _SIGNED_INT or base in _UNSIGNED_INT
        self._is_unsigned = base in _UNSIGNED_INT
        self._is_complex = base in _COMPLEX
        self._is_bool = base == 10
        self._is_quantized = base in _QUANTIZED
        self._is_numpy_compatible = base not in _NOT_NUMPY
        return self

    # ---- identity ----------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The name of this type, e.g. `"float32"` or `"float32_ref"`."""
        return self._name

    @property
    def as_datatype_enum(self) -> int:
        """The `types_pb2.DataType` enum value of this type."""
        return self._type_enum

    @property
    def as_numpy_dtype(self) -> Any:
        """The NumPy scalar type of this type (`np.float32`, `ml_dtypes.bfloat16`, ...).

        String, resource and variant give `np.object_`; quantized types give TF's structured
        dtype (e.g. `np.dtype([("qint8", "i1")])`).
        """
        return self._np_type

    @property
    def numpy_dtype(self) -> np.dtype:
        """The `np.dtype` that holds tensors of this type at run time (not in TF).

        Quantized types are stored as their plain integer carrier (qint8 as int8, ...).
        """
        return self._np_dtype

    @property
    def base_dtype(self) -> DType:
        """The non-reference type of this type (`float32_ref` -> `float32`)."""
        return self._base

    @property
    def real_dtype(self) -> DType:
        """The type of the real part: complex64 -> float32, complex128 -> float64, else self."""
        real = _REAL_OF_COMPLEX.get(self._base._type_enum)
        return self if real is None else _BY_ENUM[real]

    @property
    def _is_ref_dtype(self) -> builtins.bool:
        return self._type_enum > _REF_OFFSET

    @property
    def _as_ref(self) -> DType:
        return self._ref

    # ---- classification ----------------------------------------------------------------
    @property
    def is_floating(self) -> builtins.bool:
        """Whether this is a (non-quantized) floating point type."""
        return self._is_floating

    @property
    def is_integer(self) -> builtins.bool:
        """Whether this is a (non-quantized) integer type."""
        return self._is_integer

    @property
    def is_unsigned(self) -> builtins.bool:
        """Whether this is an unsigned integer type."""
        return self._is_unsigned

    @property
    def is_complex(self) -> builtins.bool:
        """Whether this is a complex type."""
        return self._is_complex

    @property
    def is_bool(self) -> builtins.bool:
        """Whether this is the boolean type."""
        return self._is_bool

    @property
    def is_quantized(self) -> builtins.bool:
        """Whether this is a quantized type (qint8, quint8, qint16, quint16, qint32)."""
        return self._is_quantized

    @property
    def is_numpy_compatible(self) -> builtins.bool:
        """Whether tensors of this type have a NumPy equivalent (all but resource, variant)."""
        return self._is_numpy_compatible

    @property
    def size(self) -> int:
        """Bytes per element; 0 for string, resource and variant."""
        return self._size

    # ---- value ranges ------------------------------------------------------------------
    def _range_error(self, which: str) -> TypeError:
        base = self._base
        if not self._is_numpy_compatible:
            return TypeError(f"Cannot find {which} value of {self}.")
        kind = "quantized type" if self._is_quantized else "type"
        return TypeError(f"Cannot find {which} value of {self} with {kind} {base}.")

    @property
    def min(self) -> Any:
        """The smallest representable value.

        Raises:
          TypeError: for bool, string, complex, quantized, resource and variant types.
        """
        base = self._base._type_enum
        if self._is_quantized or base in _NO_MIN_MAX or base in _NOT_NUMPY:
            raise self._range_error("minimum")
        if self._is_floating:
            return _finfo(self._np_dtype).min
        return int(np.iinfo(self._np_dtype).min)

    @property
    def max(self) -> Any:
        """The largest representable value.

        Raises:
          TypeError: for bool, string, complex, quantized, resource and variant types.
        """
        base = self._base._type_enum
        if self._is_quantized or base in _NO_MIN_MAX or base in _NOT_NUMPY:
            raise self._range_error("maximum")
        if self._is_floating:
            return _finfo(self._np_dtype).max
        return int(np.iinfo(self._np_dtype).max)

    @property
    def limits(self) -> tuple[Any, Any]:
        """`(0, max)` of the type's natural value range (floats: `(0, 1)`), as TF does.

        Raises:
          ValueError: if the type has no defined range (float16, bfloat16, complex, ...).
        """
        hi = _LIMITS_MAX.get(self._base._type_enum)
        if hi is None:
            raise ValueError(f"{self} does not have defined limits.")
        return 0, hi

    # ---- comparison --------------------------------------------------------------------
    def is_compatible_with(self, other: Any) -> builtins.bool:
        """Whether a value of type `other` may be used where this type is expected.

        `float32` accepts `float32_ref` values, but `float32_ref` does not accept `float32`.

        Args:
          other: a DType or anything `as_dtype` accepts.

        Returns:
          True if `self` is `other` or `other`'s base type.

        Raises:
          TypeError: if `other` is not convertible to a DType.
        """
        other = as_dtype(other)
        return self is other or self is other._base

    def is_subtype_of(self, other: Any) -> builtins.bool:
        """TF2's TraceType order on dtypes: a dtype is a subtype of itself only."""
        return isinstance(other, DType) and self == other

    def most_specific_common_supertype(self, others) -> DType | None:
        """`self` when every one of `others` is the same dtype, else None."""
        return self if all(isinstance(o, DType) and self == o for o in others) else None

    def __eq__(self, other: Any) -> builtins.bool:
        if self is other:
            return True
        if other is None or type(other) is DType:
            return False
        try:
            return self is as_dtype(other)
        except TypeError:
            return False

    def __ne__(self, other: Any) -> builtins.bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return self._type_enum

    def __repr__(self) -> str:
        return "tf." + self._name

    def __str__(self) -> str:
        return f"<dtype: {self._name!r}>"

    def __reduce__(self):
        return DType, (self._type_enum,)

    def __copy__(self) -> DType:
        return self

    def __deepcopy__(self, memo) -> DType:
        return self


def _finfo(np_dtype: np.dtype):
    if np_dtype == ml_dtypes.bfloat16:
        return ml_dtypes.finfo(ml_dtypes.bfloat16)
    return np.finfo(np_dtype)


# ---- the singletons -------------------------------------------------------------------

_BY_ENUM: dict[int, DType] = {}
for _enum in _BASE_TYPES:
    _BY_ENUM[_enum] = DType._make(_enum)
    _BY_ENUM[_enum + _REF_OFFSET] = DType._make(_enum + _REF_OFFSET)
for _enum, _dt in _BY_ENUM.items():
    _dt._base = _BY_ENUM[_enum % _REF_OFFSET]
    _dt._ref = _BY_ENUM[_enum % _REF_OFFSET + _REF_OFFSET]
del _enum, _dt

float16 = _BY_ENUM[19]
half = float16
float32 = _BY_ENUM[1]
float64 = _BY_ENUM[2]
double = float64
bfloat16 = _BY_ENUM[14]
int8 = _BY_ENUM[6]
int16 = _BY_ENUM[5]
int32 = _BY_ENUM[3]
int64 = _BY_ENUM[9]
uint8 = _BY_ENUM[4]
uint16 = _BY_ENUM[17]
uint32 = _BY_ENUM[22]
uint64 = _BY_ENUM[23]
bool = _BY_ENUM[10]  # TF's name; this module reaches the builtin as builtins.bool
complex64 = _BY_ENUM[8]
complex128 = _BY_ENUM[18]
string = _BY_ENUM[7]
resource = _BY_ENUM[20]
variant = _BY_ENUM[21]
qint8 = _BY_ENUM[11]
quint8 = _BY_ENUM[12]
qint16 = _BY_ENUM[15]
quint16 = _BY_ENUM[16]
qint32 = _BY_ENUM[13]

float16_ref = _BY_ENUM[119]
half_ref = float16_ref
float32_ref = _BY_ENUM[101]
float64_ref = _BY_ENUM[102]
double_ref = float64_ref
bfloat16_ref = _BY_ENUM[114]
int8_ref = _BY_ENUM[106]
int16_ref = _BY_ENUM[105]
int32_ref = _BY_ENUM[103]
int64_ref = _BY_ENUM[109]
uint8_ref = _BY_ENUM[104]
uint16_ref = _BY_ENUM[117]
uint32_ref = _BY_ENUM[122]
uint64_ref = _BY_ENUM[123]
bool_ref = _BY_ENUM[110]
complex64_ref = _BY_ENUM[108]
complex128_ref = _BY_ENUM[118]
string_ref = _BY_ENUM[107]
resource_ref = _BY_ENUM[120]
variant_ref = _BY_ENUM[121]
qint8_ref = _BY_ENUM[111]
quint8_ref = _BY_ENUM[112]
qint16_ref = _BY_ENUM[115]
quint16_ref = _BY_ENUM[116]
qint32_ref = _BY_ENUM[113]

# ---- groups used by op definitions and kernels ----------------------------------------

_QUANTIZED_DTYPES_NO_REF = frozenset({qint8, quint8, qint16, quint16, qint32})
_QUANTIZED_DTYPES_REF = frozenset(d._as_ref for d in _QUANTIZED_DTYPES_NO_REF)
QUANTIZED_DTYPES = _QUANTIZED_DTYPES_NO_REF | _QUANTIZED_DTYPES_REF
"""The quantized types and their reference types (as TF's `dtypes.QUANTIZED_DTYPES`)."""

ALL_DTYPES = frozenset(_BY_ENUM[e] for e in _BASE_TYPES)
"""Every non-reference type."""
TF_VALUE_DTYPES = ALL_DTYPES
FLOATING_DTYPES = frozenset({float16, bfloat16, float32, float64})
SIGNED_INTEGER_DTYPES = frozenset({int8, int16, int32, int64})
UNSIGNED_DTYPES = frozenset({uint8, uint16, uint32, uint64})
INTEGER_DTYPES = SIGNED_INTEGER_DTYPES | UNSIGNED_DTYPES
COMPLEX_DTYPES = frozenset({complex64, complex128})
REAL_NUMBER_DTYPES = FLOATING_DTYPES | INTEGER_DTYPES
NUMERIC_DTYPES = REAL_NUMBER_DTYPES | COMPLEX_DTYPES

# ---- as_dtype -------------------------------------------------------------------------

# One dict answers every common input. Keys of different kinds never collide: an int key is
# an enum, a str key a name, a type key a NumPy scalar or Python type, an np.dtype key a
# NumPy dtype (np.dtype hashes differ from the strings and types that compare equal to it).
_ANY_TO_DTYPE: dict[Any, DType] = {}
for _dt in _BY_ENUM.values():
    _ANY_TO_DTYPE[_dt._type_enum] = _dt
    _ANY_TO_DTYPE[_dt._name] = _dt
_ANY_TO_DTYPE.update({
    "half": float16, "float": float32, "double": float64,
    "half_ref": float16_ref, "float_ref": float32_ref, "double_ref": float64_ref,
})
for _dt in ALL_DTYPES - _QUANTIZED_DTYPES_NO_REF - {string, resource, variant}:
    _ANY_TO_DTYPE[_dt._np_type] = _dt
    _ANY_TO_DTYPE[np.dtype(_dt._np_type)] = _dt
for _dt in _QUANTIZED_DTYPES_NO_REF:
    _ANY_TO_DTYPE[_dt._np_type] = _dt
for _key in (np.longlong, np.ulonglong, np.intc, np.uintc, np.int_, np.uint):
    _ANY_TO_DTYPE[_key] = _ANY_TO_DTYPE[np.dtype(_key)]
_ANY_TO_DTYPE.update({
    np.object_: string, np.str_: string, np.bytes_: string, np.dtype(np.object_): string,
    # Python types. TF itself maps float, bool and object; int, complex, str and bytes are
    # accepted here too, with the types `tf.constant` gives their values.
    builtins.float: float32, builtins.bool: bool, builtins.object: string,
    builtins.int: int32, builtins.complex: complex128, builtins.str: string,
    builtins.bytes: string,
})
del _dt, _key


def as_dtype(type_value: Any) -> DType:
    """Converts the given `type_value` to a `DType`.

    Args:
      type_value: a DType; a `types_pb2.DataType` enum value; a type name ("float32",
        "float", "double", "half", "int64", "string", "float32_ref", ...); a NumPy dtype or
        scalar type (unicode, bytes and object map to string, `ml_dtypes.bfloat16` to
        bfloat16); or a Python type (float -> float32, int -> int32, bool -> bool,
        complex -> complex128, str/bytes/object -> string).

    Returns:
      The `DType` singleton for `type_value`.

    Raises:
      TypeError: if `type_value` cannot be converted to a DType.
    """
    if type(type_value) is DType:
        return type_value
    try:
        return _ANY_TO_DTYPE[type_value]
    except (KeyError, TypeError):
        pass
    if isinstance(type_value, np.dtype):
        if type_value.kind in "US":
            return string
        # Non-native byte order ('>f4') still names the element type.
        found = _ANY_TO_DTYPE.get(type_value.type) if type_value.fields is None else None
        if found is not None:
            return found
    raise TypeError(
        f"Cannot convert the argument `type_value`: {type_value!r} to a TensorFlow DType.")
