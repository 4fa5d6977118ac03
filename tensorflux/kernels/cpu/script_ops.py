"""CPU kernels of PyFunc, PyFuncStateless and EagerPyFunc (tensorflux/ops/script_ops.py).

The kernel finds the Python function by the node's `token`, calls it with the input
arrays (EagerPyFunc: `EagerValue`s, which have `.numpy()`), and turns what it returns into
one array per `Tout` entry: bytes/str become object arrays of bytes (`tf.string`); any
other dtype must match `Tout` exactly (InvalidArgumentError otherwise, with TensorFlow's
message). Exceptions raised by the function become the error classes TensorFlow's py_func
gives them, with the Python exception's name and message.

A step's deadline, cancellation or its session's close cannot interrupt the user's
function: it runs on the step's thread to its end, as in TensorFlow (whose py_func holds
the GIL; there a step whose `timeout_in_ms` passes while a py_func sleeps 5 s ends after
the 5 s with DeadlineExceededError, and a Session.close during it ends it with
CancelledError). Abandoning it on a helper thread would let user code run on after its
step ended, concurrently with the next steps that call it. The kernel checks its step
before calling the function and after it returns, so the step ends with TensorFlow's
error, not a value, once the function is done.
"""

from __future__ import annotations

import traceback

import numpy as np

from tensorflux.framework import dtypes, errors, py_func_registry
from tensorflux.kernels import interrupt
from tensorflux.kernels.registry import kernel_factory

# TensorFlow's mapping of Python exceptions raised by a py_func; anything else is UNKNOWN.
_EXCEPTION_CLASSES = (
    ((ValueError, TypeError), errors.InvalidArgumentError),
    ((StopIteration,), errors.OutOfRangeError),
    ((MemoryError,), errors.ResourceExhaustedError),
    ((NotImplementedError,), errors.UnimplementedError),
)


class EagerValue:
    """What an EagerPyFunc's function receives for each input: the value, with `.numpy()`
    as on an eager tensor, usable where an array is."""

    __slots__ = ("_value",)
    __array_priority__ = 100

    def __init__(self, value):
        self._value = value

    def numpy(self):
        return self._value

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self._value, dtype=dtype)

    @property
    def shape(self):
        return np.shape(self._value)

    @property
    def dtype(self):
        return dtypes.as_dtype(np.asarray(self._value).dtype)

    def __repr__(self) -> str:
        return f"<EagerValue {self._value!r}>"


def _as_array(value):
    if isinstance(value, EagerValue):
        value = value.numpy()
    if isinstance(value, (bytes, str)):
        value = value.encode() if isinstance(value, str) else value
        return np.array(value, dtype=object)
    arr = np.asarray(value, order="C")
    if arr.dtype.char in "SU":
        encode = np.vectorize(lambda s: s.encode() if isinstance(s, str) else bytes(s),
                              otypes=[object])
        arr = encode(arr) if arr.size else arr.astype(object)
    return arr


def _type_name(dtype: dtypes.DType) -> str:
    """The dtype as TensorFlow's messages spell it."""
    return {"float32": "float", "float64": "double", "float16": "half"}.get(
        dtype.name, dtype.name)


def _array_type_name(arr) -> str:
    return "string" if arr.dtype == object else _type_name(dtypes.as_dtype(arr.dtype))


def _error(token: str, exc: BaseException) -> errors.OpError:
    cls = errors.UnknownError
    for types, error_cls in _EXCEPTION_CLASSES:
        if isinstance(exc, types):
            cls = error_cls
            break
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-3:])
    return cls(None, None, f"{type(exc).__name__}: {exc}\n{tb}")


def _outputs(token: str, result, tout) -> tuple:
    if not tout:
        return None
    values = list(result) if isinstance(result, (list, tuple)) else [result]
    if len(values) != len(tout):
        raise errors.InvalidArgumentError(
            None, None, f"{token} returns {len(values)} values, but expects to see "
            f"{len(tout)} values.")
    out = []
    for i, (value, dt) in enumerate(zip(values, tout, strict=True)):
        arr = _as_array(value)
        want = object if dt == dtypes.string else dt.as_numpy_dtype
        if arr.dtype != np.dtype(want):
            raise errors.InvalidArgumentError(
                None, None, f"{i}-th value returned by {token} is {_array_type_name(arr)}, but "
                f"expects {_type_name(dt)}")
        out.append(arr)
    return out[0] if len(out) == 1 else tuple(out)


def _py_func_kernel(node, eager: bool):
    token = node.attrs["token"]
    tout = list(node.attrs.get("Tout") or [])

    def compute(ctx, *inputs):
        func = py_func_registry.lookup(token)
        if func is None:
            raise errors.InvalidArgumentError(
                None, None, f"callback {token} is not found")
        args = [EagerValue(x) for x in inputs] if eager else list(inputs)
        interrupt.check(ctx)  # a stopped step starts no user code
        try:
            result = func(*args)
        except errors.OpError as exc:
            raise _error(token, exc) from exc
        except Exception as exc:  # noqa: BLE001 - every failure of user code is reported
            raise _error(token, exc) from exc
        interrupt.check(ctx)  # the step ran past its deadline or was stopped meanwhile
        return _outputs(token, result, tout)

    return compute


@kernel_factory("PyFunc", expensive=True)
def _py_func(node):
    return _py_func_kernel(node, eager=False)


@kernel_factory("PyFuncStateless", expensive=True)
def _py_func_stateless(node):
    return _py_func_kernel(node, eager=False)


@kernel_factory("EagerPyFunc", expensive=True)
def _eager_py_func(node):
    return _py_func_kernel(node, eager=True)
