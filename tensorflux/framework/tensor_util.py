"""Python values <-> NumPy arrays <-> `TensorProto`s.

`convert_to_numpy(value, dtype)` applies TF1's rules for turning a Python value into tensor
contents (used by `tf.constant` and by Session feeds):

* NumPy arrays and scalars keep their dtype unless `dtype` is given, then are cast
  (unsafe casts included, as TF does: `np.array([1.5])` as int32 is `[1]`). An array
  already of the requested dtype is returned as is, without a copy.
* Python values are checked against `dtype` element by element first (`1.5` is not an
  int32: TypeError "Expected int32, but got 1.5 of type 'float'."). With no `dtype`,
  Python floats become float32 and Python ints int32, or int64 when some value does not
  fit, or uint64 when some value does not fit int64.
* Strings (str, bytes, NumPy unicode/bytes arrays) become object arrays of `bytes`
  (str is encoded as UTF-8): the one representation of DT_STRING tensors at run time.
* Quantized types are stored in their integer carrier (qint8 as int8, ...).

`make_tensor_proto` / `MakeNdarray` follow TF's encoding: a tensor of more than one element
of a fixed-size type goes into `tensor_content` (little-endian bytes); everything else uses
the typed `*_val` field (half and bfloat16 as 16-bit patterns in `half_val`), which may hold
fewer values than the tensor has elements, the last value repeating.
"""

from __future__ import annotations

import math
import os
from typing import Any

import ml_dtypes
import numpy as np

from tensorflux.framework import dtypes as _dtypes
from tensorflux.framework import errors
from tensorflux.framework import tensor_shape as _tensor_shape
from tensorflux.framework.dtypes import DType
from tensorflux.protos import tensor_pb2

__all__ = ["convert_to_numpy", "make_tensor_proto", "MakeNdarray", "make_ndarray"]

_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
_OBJECT = np.dtype(object)
_INT32_MIN, _INT32_MAX = -(2 ** 31), 2 ** 31 - 1
_F32_MAX = float(np.finfo(np.float32).max)

# ---- Python values -> NumPy -----------------------------------------------------------

# Element kinds (NumPy's dtype.kind letters, with "S" for any string) each target accepts
# from Python values. Quantized, resource and variant accept none: TF does not build them
# from Python scalars.
_ACCEPTED_KINDS = {"bool": "b", "int": "biu", "float": "biuf", "complex": "biufc",
                   "string": "SUO"}


def _category(dtype: DType) -> str | None:
    if dtype.is_bool:
        return "bool"
    if dtype.is_integer:
        return "int"
    if dtype.is_floating:
        return "float"
    if dtype.is_complex:
        return "complex"
    if dtype.base_dtype is _dtypes.string:
        return "string"
    return None


def _kind(np_dtype: np.dtype) -> str:
    return "f" if np_dtype == _BFLOAT16 else np_dtype.kind


def _leaf_kind(v: Any) -> str | None:
    """The kind letter of one Python/NumPy leaf value, or None if it is not tensor data."""
    if isinstance(v, (bool, np.bool_)):
        return "b"
    if isinstance(v, int):
        return "i"
    if isinstance(v, float):
        return "f"
    if isinstance(v, complex):
        return "c"
    if isinstance(v, (str, bytes)):
        return "S"
    if isinstance(v, _tensor_shape.Dimension):  # TF1's shape[i]: an int when known
        return None if v.value is None else "i"
    if isinstance(v, (np.generic, np.ndarray)):
        return _kind(v.dtype)
    return None


def _leaves(values: Any):
    if isinstance(values, (list, tuple)):
        for v in values:
            yield from _leaves(v)
    else:
        yield values


def _failed_to_convert(values: Any) -> TypeError:
    return TypeError(
        f"Failed to convert elements of {values} to Tensor. Consider casting elements to a "
        "supported type. See https://www.tensorflow.org/api_docs/python/tf/dtypes for "
        "supported TF dtypes.")


def _check_leaves(values: Any, dtype: DType) -> None:
    """TypeError naming the first element of `values` that `dtype` cannot hold."""
    accepted = _ACCEPTED_KINDS.get(_category(dtype), "")
    for v in _leaves(values):
        kind = _leaf_kind(v)
        if kind is None or kind not in accepted:
            raise TypeError(
                f"Expected {dtype.name}, but got {v} of type '{type(v).__name__}'.")


def _to_string_array(arr: np.ndarray, values: Any = None) -> np.ndarray:
    """An object array of bytes from a unicode, bytes or object array of strings."""
    if arr.size == 0:
        return arr if arr.dtype == _OBJECT else np.empty(arr.shape, dtype=object)
    kind = arr.dtype.kind
    if kind == "O":
        flat = arr.ravel().tolist()
        if all(type(x) is bytes for x in flat):
            return arr
    elif kind in "US":
        flat = arr.ravel().tolist()
    else:
        if values is not None:
            raise _failed_to_convert(values)
        raise TypeError(f"Expected binary or unicode string, got {arr.ravel()[:1].tolist()[0]!r}")
    out = np.empty(len(flat), dtype=object)
    for i, x in enumerate(flat):
        if isinstance(x, str):
            out[i] = x.encode("utf-8")
        elif isinstance(x, bytes):
            out[i] = bytes(x)
        elif values is not None:
            raise _failed_to_convert(values)
        else:
            raise TypeError(f"Expected binary or unicode string, got {x!r}")
    return out.reshape(arr.shape)


def _python_strings(values: Any, dtype: DType | None) -> np.ndarray:
    """Nested lists of str/bytes -> object array of bytes (no trip through NumPy's S/U
    dtypes, which drop trailing NULs)."""
    arr = np.array(values, dtype=object)
    flat = arr.ravel().tolist()
    out = np.empty(len(flat), dtype=object)
    for i, x in enumerate(flat):
        if isinstance(x, str):
            out[i] = x.encode("utf-8")
        elif isinstance(x, bytes):
            out[i] = bytes(x)
        elif isinstance(x, np.ndarray) and x.dtype.kind in "USO":
            # Arrays inside the lists: NumPy's S/U conversion is the only way to merge them.
            return _to_string_array(np.array(values), values)
        elif isinstance(x, (list, tuple)):
            raise ValueError(f"Can't convert non-rectangular Python sequence to Tensor: "
                             f"{values!r}.")
        elif dtype is None:
            raise _failed_to_convert(values)
        else:
            raise TypeError(f"Expected {dtype.name}, but got {x} of type "
                            f"'{type(x).__name__}'.")
    return out.reshape(arr.shape)


def _convert_array(arr: np.ndarray, dtype: DType | None) -> np.ndarray:
    """A NumPy array or scalar, cast to `dtype` if given."""
    if dtype is None:
        found = _dtypes.as_dtype(arr.dtype)  # TypeError for datetime64 & co.
        if found is _dtypes.string:
            return _to_string_array(arr)
        return arr
    target = dtype._np_dtype
    if arr.dtype is target or arr.dtype == target:
        if target is _OBJECT and dtype.base_dtype is _dtypes.string:
            return _to_string_array(arr)
        return arr
    category = _category(dtype)
    if category == "string":
        return _to_string_array(arr)
    if not dtype.is_numpy_compatible:
        raise TypeError(f"`dtype` {dtype} is not compatible with {arr!r} of dtype "
                        f"{arr.dtype}.")
    _dtypes.as_dtype(arr.dtype)  # TypeError for datetime64 & co.
    return arr.astype(target)


def _convert_shape(value: Any, dtype: DType | None) -> np.ndarray:
    """TensorShape / Dimension -> int32 (or int64) array, as TF's conversion function."""
    if isinstance(value, _tensor_shape.Dimension):
        if value.value is None:
            raise ValueError(f"Cannot convert an unknown Dimension to a Tensor: {value}")
        dims = value.value
    else:
        if not value.is_fully_defined():
            raise ValueError(f"Cannot convert a partially known TensorShape {value} to a "
                             "Tensor.")
        dims = value.as_list()
    if dtype is None:
        big = any(d > _INT32_MAX for d in ([dims] if isinstance(dims, int) else dims))
        dtype = _dtypes.int64 if big else _dtypes.int32
    elif dtype.base_dtype not in (_dtypes.int32, _dtypes.int64):
        raise TypeError(f"Cannot convert {value} to a Tensor of dtype {dtype.name}: only "
                        "int32 and int64 are allowed.")
    return np.array(dims, dtype=dtype._np_dtype)


def _convert_python(values: Any, dtype: DType | None) -> np.ndarray:
    """Nested lists/tuples of Python and NumPy scalars -> an array, with TF's rules."""
    try:
        arr = np.array(values)
    except ValueError:
        raise ValueError(f"Can't convert non-rectangular Python sequence to Tensor: "
                         f"{values!r}.") from None
    except OverflowError:
        raise _failed_to_convert(values) from None
    kind = _kind(arr.dtype)
    if dtype is None:
        if kind in "OUSV":
            if kind == "V" or any(_leaf_kind(v) not in ("S", "U", "O") for v in _leaves(values)):
                raise _failed_to_convert(values)
            return _python_strings(values, None)
        if arr.dtype == np.float64:
            with np.errstate(over="ignore"):
                return arr.astype(np.float32)  # overflow gives inf, as in TF
        if arr.dtype == np.int64:
            if arr.size == 0 or (_INT32_MIN <= arr.min() and arr.max() <= _INT32_MAX):
                return arr.astype(np.int32)
        if kind not in "biufc":
            _dtypes.as_dtype(arr.dtype)  # TypeError for datetime64 & co.
        return arr
    if not dtype.is_numpy_compatible:
        raise TypeError(f"`dtype` {dtype} is not compatible with {values!r} of dtype "
                        f"{arr.dtype}.")
    category = _category(dtype)
    accepted = _ACCEPTED_KINDS.get(category, "")
    if category == "string" or kind not in accepted:
        _check_leaves(values, dtype)
    if category == "string":
        return _python_strings(values, dtype)
    try:
        with np.errstate(over="ignore", invalid="ignore"):  # 1e40 as float16 is inf, as in TF
            return arr.astype(dtype._np_dtype)
    except (OverflowError, TypeError, ValueError):
        raise _failed_to_convert(values) from None


def convert_to_numpy(value: Any, dtype: Any = None) -> np.ndarray:
    """Converts a Python or NumPy value to the array a tensor of it would hold.

    Args:
      value: a NumPy array or scalar; a Python bool, int, float, complex, str or bytes;
        a (nested) list or tuple of those; a fully defined TensorShape or known Dimension;
        or anything with `__array__`.
      dtype: the tensor's DType (or anything `as_dtype` accepts), or None to infer it.

    Returns:
      An `np.ndarray`: of `dtype.numpy_dtype` when `dtype` is given (an object array of
      bytes for string). Not a copy when `value` is already such an array.

    Raises:
      TypeError: if `value` cannot be a tensor of `dtype` (`1.5` as int32, `[1, None]`,
        a mix of strings and numbers, ...).
      ValueError: if `value` is None, or a nested sequence is not rectangular.
    """
    if dtype is not None and type(dtype) is not DType:
        dtype = _dtypes.as_dtype(dtype)
    if type(value) is np.ndarray:
        if dtype is not None and value.dtype is dtype._np_dtype and dtype._type_enum != 7:
            return value
        return _convert_array(value, dtype)
    kind = type(value)
    if kind is float or kind is int or kind is bool:
        fast = _convert_scalar(value, kind, dtype)
        if fast is not None:
            return fast
        return _convert_python(value, dtype)
    if isinstance(value, (np.ndarray, np.generic)):
        return _convert_array(np.asarray(value), dtype)
    if value is None:
        raise ValueError("None values not supported.")
    if isinstance(value, (_tensor_shape.TensorShape, _tensor_shape.Dimension)):
        return _convert_shape(value, dtype)
    if not isinstance(value, (list, tuple, complex, str, bytes)) and \
            hasattr(value, "__array__"):
        return _convert_array(np.asarray(value), dtype)
    return _convert_python(value, dtype)


def _convert_scalar(value: Any, kind: type, dtype: DType | None) -> np.ndarray | None:
    """Fast path for the Python scalars of every `tf.constant(1.0)`; None: use the general.

    Only cases that need no check and cannot overflow (which NumPy would warn about) are
    taken here.
    """
    if kind is bool:
        if dtype is None or dtype.is_bool:
            return np.array(value)
        return None
    if kind is float:
        if not -_F32_MAX <= value <= _F32_MAX:  # also nan and inf
            return None
        if dtype is None:
            return np.array(value, np.float32)
        if (dtype.is_floating and dtype._size >= 4) or dtype.is_complex:
            return np.array(value, dtype._np_dtype)
        return None
    if not _INT32_MIN <= value <= _INT32_MAX:
        return None
    if dtype is None:
        return np.array(value, np.int32)
    if (dtype.is_floating or dtype.is_integer) and dtype._size >= 4 and \
            not dtype.is_unsigned or dtype.is_complex:
        return np.array(value, dtype._np_dtype)
    return None


# ---- NumPy -> TensorProto -------------------------------------------------------------

# Types whose multi-element tensors go into tensor_content (as TF writes them); the others
# (bool, uint16, complex, string) always use their *_val field.
_CONTENT_ENUMS = frozenset(d.as_datatype_enum for d in (
    _dtypes.float16, _dtypes.bfloat16, _dtypes.float32, _dtypes.float64, _dtypes.int8,
    _dtypes.int16, _dtypes.int32, _dtypes.int64, _dtypes.uint8, _dtypes.uint32,
    _dtypes.uint64, _dtypes.qint8, _dtypes.quint8, _dtypes.qint16, _dtypes.quint16,
    _dtypes.qint32))

# DataType enum -> the *_val field holding its values.
_VAL_FIELD = {
    1: "float_val", 2: "double_val", 3: "int_val", 4: "int_val", 5: "int_val",
    6: "int_val", 7: "string_val", 8: "scomplex_val", 9: "int64_val", 10: "bool_val",
    11: "int_val", 12: "int_val", 13: "int_val", 14: "half_val", 15: "int_val",
    16: "int_val", 17: "int_val", 18: "dcomplex_val", 19: "half_val",
    20: "resource_handle_val", 21: "variant_val", 22: "uint32_val", 23: "uint64_val",
}


def _shape_tuple(shape: Any) -> tuple[int, ...]:
    dims = _tensor_shape.as_shape(shape)._dims_tuple
    if dims is None or None in dims:
        raise ValueError(f"make_tensor_proto needs a fully defined shape, got {shape!r}.")
    return dims


def _val_list(arr: np.ndarray, enum: int) -> list:
    """The flat values of `arr` as its *_val field stores them."""
    if enum in (14, 19):  # half, bfloat16: 16-bit patterns
        return arr.ravel().view(np.uint16).tolist()
    if enum in (8, 18):  # complex: (real, imag) pairs
        flat = arr.ravel()
        pairs = np.empty(flat.size * 2, dtype=flat.real.dtype)
        pairs[0::2] = flat.real
        pairs[1::2] = flat.imag
        return pairs.tolist()
    return arr.ravel().tolist()


def make_tensor_proto(values: Any, dtype: Any = None, shape: Any = None,
                      verify_shape: bool = False, allow_broadcast: bool = False):
    """Creates a `TensorProto` holding `values`.

    Args:
      values: anything `convert_to_numpy` accepts, or a TensorProto (returned as is).
      dtype: the tensor's DType, or None to infer it from `values`.
      shape: the tensor's shape, or None for that of `values`. Without `verify_shape` and
        `allow_broadcast`, `values` may have fewer elements than `shape`: the last one
        repeats when the tensor is read.
      verify_shape: require `values` to have exactly `shape`.
      allow_broadcast: allow a single value (shape `()` or `(1,)`) for any `shape`, and
        otherwise require the same number of elements.

    Returns:
      A `tensor_pb2.TensorProto`.

    Raises:
      TypeError: if `values` cannot be a tensor of `dtype`, or `verify_shape` /
        `allow_broadcast` reject its shape.
      ValueError: if `values` has more elements than `shape`, or is None.
    """
    if isinstance(values, tensor_pb2.TensorProto):
        return values
    if isinstance(values, DeferredTensor):
        return values.proto
    if dtype is not None:
        dtype = _dtypes.as_dtype(dtype)
    dims = None if shape is None else _shape_tuple(shape)
    if dims is not None and math.prod(dims) == 0 and \
            not isinstance(values, (np.ndarray, np.generic)):
        np_dt = dtype._np_dtype if dtype is not None else np.dtype(np.float32)
        arr = np.empty(dims, dtype=np_dt)
    else:
        arr = convert_to_numpy(values, dtype)
    if dtype is None:
        dtype = _dtypes.as_dtype(arr.dtype)
    dtype = dtype.base_dtype
    if not dtype.is_numpy_compatible:
        raise TypeError(f"Cannot make a TensorProto of dtype {dtype.name} from {values!r}.")

    if dims is None:
        dims = arr.shape
        is_same_size = True
    else:
        num = math.prod(dims)
        if verify_shape and arr.shape != dims:
            raise TypeError(f"Expected Tensor's shape: {dims}, but got {arr.shape}.")
        if allow_broadcast:
            if arr.shape not in ((), (1,)) and arr.size != num:
                raise TypeError(f"Expected Tensor's shape: {dims}, but got {arr.shape}.")
        elif arr.size > num:
            raise ValueError(f"Too many elements provided. Takes at most {num}, but got "
                             f"{arr.size}.")
        is_same_size = arr.size == num
        if is_same_size:
            arr = arr.reshape(dims)

    enum = dtype.as_datatype_enum
    proto = tensor_pb2.TensorProto(dtype=enum)
    proto.tensor_shape.SetInParent()  # present even for scalars, as TF writes it
    dim = proto.tensor_shape.dim
    for d in dims:
        dim.add(size=d)
    if arr.size == 0:
        return proto
    if is_same_size and arr.size > 1 and enum in _CONTENT_ENUMS:
        little = arr.dtype.newbyteorder("<")
        proto.tensor_content = np.ascontiguousarray(arr, dtype=little).tobytes()
        return proto
    getattr(proto, _VAL_FIELD[enum]).extend(_val_list(arr, enum))
    return proto


# ---- TensorProto -> NumPy -------------------------------------------------------------

def _read_vals(tensor: Any, dtype: DType) -> np.ndarray:
    enum = dtype.as_datatype_enum
    field = getattr(tensor, _VAL_FIELD[enum])
    np_dt = dtype._np_dtype
    if enum in (14, 19):
        return np.array(field, dtype=np.uint16).view(np_dt)
    if enum in (8, 18):
        pairs = np.array(field, dtype=np_dt.type(0).real.dtype)
        if pairs.size % 2:
            raise ValueError(f"{_VAL_FIELD[enum]} holds an odd number ({pairs.size}) of "
                             "floats; complex values are (real, imaginary) pairs.")
        out = np.empty(pairs.size // 2, dtype=np_dt)
        out.real = pairs[0::2]
        out.imag = pairs[1::2]
        return out
    if enum == 7:
        out = np.empty(len(field), dtype=object)
        for i, s in enumerate(field):
            out[i] = bytes(s)
        return out
    if enum in (20, 21):
        out = np.empty(len(field), dtype=object)
        for i, m in enumerate(field):
            out[i] = m
        return out
    return np.array(field, dtype=np_dt)


def MakeNdarray(tensor: Any) -> np.ndarray:
    """Creates a NumPy array with the contents of a `TensorProto`.

    Args:
      tensor: a `tensor_pb2.TensorProto`.

    Returns:
      An `np.ndarray` of the tensor's dtype (`DType.numpy_dtype`: object arrays of bytes
      for string; the integer carrier for quantized types; object arrays of the handle
      or variant messages for resource and variant).

    Raises:
      TypeError: if the dtype is invalid.
      ValueError: if the contents do not fit the shape.
      ResourceExhaustedError: the stored values expand to more than the bound
        (`set_max_expanded_bytes`).
    """
    return _make_ndarray(tensor, None)


def _make_ndarray(tensor, bound: int | None, fill=None) -> np.ndarray:
    """MakeNdarray with an expansion bound of `bound` bytes (None: the process default);
    `fill(dst, value)` writes the repeated last value (default: an assignment; a kernel
    passes one that checks its step between blocks)."""
    dtype = _dtypes.as_dtype(tensor.dtype).base_dtype
    shape = tuple(d.size for d in tensor.tensor_shape.dim)
    if any(d < 0 for d in shape):
        raise ValueError(f"Cannot make an array of a tensor with unknown dimensions: "
                         f"{list(shape)}.")
    num = math.prod(shape)
    np_dt = dtype._np_dtype
    if tensor.tensor_content:
        content = tensor.tensor_content
        if dtype._size == 0:
            raise ValueError(f"tensor_content is not used for dtype {dtype.name}.")
        if len(content) != num * dtype._size:
            raise ValueError(f"tensor_content holds {len(content)} bytes; shape "
                             f"{list(shape)} of {dtype.name} needs {num * dtype._size}.")
        flat = np.frombuffer(content, dtype=np_dt.newbyteorder("<"))
        return flat.astype(np_dt).reshape(shape)
    values = _read_vals(tensor, dtype)
    if values.size == num:
        return values.reshape(shape)
    _check_expansion(shape, num, dtype, values.size, bound)
    if fill is None:
        def fill(dst, value):
            dst[...] = value
    if values.size == 0:
        if dtype is _dtypes.string or not dtype.is_numpy_compatible:
            out = np.empty(shape, dtype=object)
            fill(out, b"" if dtype is _dtypes.string else None)
            return out
        return np.zeros(shape, dtype=np_dt)
    if values.size > num:
        raise ValueError(f"{_VAL_FIELD[dtype.as_datatype_enum]} holds {values.size} values; "
                         f"shape {list(shape)} has only {num} elements.")
    out = np.empty(num, dtype=np_dt)
    out[:values.size] = values
    fill(out[values.size:], values[-1])
    return out.reshape(shape)


make_ndarray = MakeNdarray


def make_ndarray_within(tensor: Any, max_expanded_bytes: int) -> np.ndarray:
    """MakeNdarray for a TensorProto from an untrusted peer (a request): one that repeats
    fewer stored values over more than `max_expanded_bytes` raises ResourceExhaustedError
    instead of allocating (the process default, `set_max_expanded_bytes`, is half the RAM).
    """
    return _make_ndarray(tensor, int(max_expanded_bytes))


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return 1 << 34


# A TensorProto can describe a huge tensor with one value (the rest repeat it): a few bytes
# of GraphDef must not make the process allocate more than this. Half the machine's memory by
# default; `set_max_expanded_bytes` changes it.
_max_expanded_bytes = _physical_memory() // 2


def set_max_expanded_bytes(limit: int) -> None:
    """Sets how many bytes a TensorProto may expand to from fewer stored values than it has
    elements (a splat); larger ones raise ResourceExhaustedError instead of allocating."""
    global _max_expanded_bytes
    _max_expanded_bytes = int(limit)


def _check_expansion(shape, num: int, dtype, stored: int, bound: int | None = None) -> None:
    itemsize = dtype._size or 8  # object arrays (string, resource): a pointer per element
    bound = _max_expanded_bytes if bound is None else bound
    if num * itemsize > bound:
        raise errors.ResourceExhaustedError(
            None, None, f"A tensor of shape {list(shape)} and dtype {dtype.name} would take "
            f"{num * itemsize} bytes, expanded from {stored} stored value(s); the limit is "
            f"{bound} bytes (tensor_util.set_max_expanded_bytes, ExecOptions.max_tensor_bytes)")


# ---- Deferred expansion ---------------------------------------------------------------
# An imported or constructed tensor attr whose TensorProto repeats a few stored values over
# more than DEFER_BYTES is kept as its proto: import allocates nothing, the static shape is
# known, and the Const kernel expands it when a step first needs it, against the session's
# bound (framework/resource_guard.py), failing that step with ResourceExhaustedError.
DEFER_BYTES = 1 << 20


class DeferredTensor:
    """A TensorProto whose values are expanded only when needed (`materialize`).

    Has an ndarray's `shape`, `dtype`, `ndim`, `size` and `nbytes` (of the expanded
    tensor); `np.asarray` expands it against the process default bound."""

    __slots__ = ("proto", "shape", "dtype", "tf_dtype", "stored")

    def __init__(self, proto, shape: tuple, dtype: DType, stored: int):
        self.proto = proto
        self.shape = shape
        self.tf_dtype = dtype
        self.dtype = dtype._np_dtype
        self.stored = stored

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * (self.tf_dtype._size or 8)

    def materialize(self, bound: int | None = None, fill=None) -> np.ndarray:
        """The expanded array; ResourceExhaustedError when it would take more than `bound`
        bytes (None: the process default). `fill(dst, value)` writes the repeated value
        (default: an assignment)."""
        return _make_ndarray(self.proto, bound, fill)

    def __array__(self, dtype=None, copy=None):
        out = self.materialize()
        return out if dtype is None else out.astype(dtype)

    def __repr__(self) -> str:
        return (f"DeferredTensor(shape={list(self.shape)}, dtype={self.tf_dtype.name}, "
                f"{self.stored} stored value(s))")


def tensor_attr_value(tensor) -> np.ndarray | DeferredTensor:
    """The value of a tensor attr from its TensorProto: a DeferredTensor when a few stored
    values would expand to more than DEFER_BYTES, else the array (MakeNdarray)."""
    if not tensor.tensor_content and tensor.tensor_shape.dim:
        shape = tuple(d.size for d in tensor.tensor_shape.dim)
        try:
            dtype = _dtypes.as_dtype(tensor.dtype).base_dtype
            num = math.prod(shape)
            if min(shape) >= 0 and num * (dtype._size or 8) > DEFER_BYTES:
                stored = _read_vals(tensor, dtype).size
                if 0 < stored < num:
                    return DeferredTensor(tensor, shape, dtype, stored)
        except (TypeError, ValueError, KeyError):
            pass  # MakeNdarray says what is wrong
    return MakeNdarray(tensor)
