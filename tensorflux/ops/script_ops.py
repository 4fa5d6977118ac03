"""Python functions as graph ops: `tf.py_func`, `tf.numpy_function`, `tf.py_function`.

PyFunc (stateful) and PyFuncStateless call a Python function on the NumPy values of their
inputs; EagerPyFunc (`tf.py_function`) gives it objects with `.numpy()` instead, as
TensorFlow gives eager tensors. The function is registered under the node's `token` attr
(framework/py_func_registry.py) and the CPU kernel (kernels/cpu/script_ops.py) calls it,
checks what it returns against `Tout`, and maps its exceptions to error classes as
TensorFlow does (ValueError/TypeError: InvalidArgumentError, StopIteration:
OutOfRangeError, MemoryError: ResourceExhaustedError, NotImplementedError:
UnimplementedError, others: UnknownError). Output shapes are unknown. The ops have no
gradient, as in TensorFlow; give one with `gradient_override_map` or `tf.custom_gradient`.
Graphs holding these ops run only in the process that built them.
"""

from __future__ import annotations

from tensorflux.framework import dtypes, py_func_registry
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.framework.tensor_spec import TensorSpec
from tensorflux.framework.type_spec import TypeSpec

__all__ = ["py_func", "numpy_function", "py_function", "eager_py_func"]


def _unknown_outputs(op):
    return [None] * len(op.outputs)


_ATTRS = ["token: string", "Tin: list(type) >= 0", "Tout: list(type) >= 0"]
define_op("PyFunc", inputs=["input: Tin"], outputs=["output: Tout"], attrs=_ATTRS,
          shape_fn=_unknown_outputs, stateful=True)
define_op("PyFuncStateless", inputs=["input: Tin"], outputs=["output: Tout"], attrs=_ATTRS,
          shape_fn=_unknown_outputs)
define_op("EagerPyFunc", inputs=["input: Tin"], outputs=["output: Tout"],
          attrs=_ATTRS + ["is_async: bool = false"], shape_fn=_unknown_outputs, stateful=True)
not_differentiable("PyFunc", "PyFuncStateless", "EagerPyFunc")


def _call(op_type, func, inp, Tout, name):  # noqa: N803 - TF's argument name
    if not callable(func):
        raise TypeError(f"Expected func to be callable, got func of type {type(func)}")
    is_list = isinstance(Tout, (list, tuple))
    tout = [dtypes.as_dtype(t) for t in (Tout if is_list else [Tout])]
    inputs = [convert_to_tensor(x) for x in (inp or [])]
    g = graph_lib.get_graph_from_inputs(inputs)
    token = py_func_registry.register(func, g)
    with g.as_default():
        result = apply_op(op_type, input=inputs, token=token, Tout=tout, name=name or op_type)
    if not tout:
        return g._ops[-1]  # no outputs: the Operation itself, as TensorFlow returns
    outputs = result if isinstance(result, (list, tuple)) else [result]
    return list(outputs) if is_list else outputs[0]


def py_func(func, inp, Tout, stateful=True, name=None):  # noqa: N803 - TF1 signature
    """Wraps the Python function `func` as an op that runs it on NumPy arrays
    (`tf.py_func`).

    Args:
      func: called with one NumPy array per input; returns an array (or a list of them,
        one per `Tout` entry). Bytes and str results become `tf.string` values.
      inp: a list of Tensors.
      Tout: a DType or a list of DTypes (an empty list: the op has no outputs).
      stateful: True makes a PyFunc op (never folded or merged), False PyFuncStateless.
      name: the op name.

    Returns:
      A Tensor, or a list of Tensors when `Tout` is a list (the Operation when empty).
    """
    return _call("PyFunc" if stateful else "PyFuncStateless", func, inp, Tout, name)


def numpy_function(func, inp, Tout, stateful=True, name=None):  # noqa: N803
    """`py_func` under its newer name (`tf.numpy_function`)."""
    return py_func(func, inp, Tout, stateful=stateful, name=name)


def _tensor_spec_dtype(t):
    """A TensorSpec in py_function's `Tout` stands for its dtype (its shape is not
    checked, as in TF); other TypeSpecs are refused."""
    if isinstance(t, TensorSpec):
        return t.dtype
    if isinstance(t, TypeSpec):
        raise TypeError(f"tensorflux's py_function takes DTypes and TensorSpecs as Tout, "
                        f"not {t}.")
    return t


def py_function(func, inp, Tout, name=None):  # noqa: N803 - TF's signature
    """Wraps `func` as an EagerPyFunc op (`tf.py_function`): `func` receives values with
    `.numpy()` (TensorFlow hands it eager tensors) and may return arrays, such values or
    Python numbers. `Tout`: DTypes or TensorSpecs (their dtypes)."""
    if isinstance(Tout, (list, tuple)):
        Tout = [_tensor_spec_dtype(t) for t in Tout]
    else:
        Tout = _tensor_spec_dtype(Tout)
    return _call("EagerPyFunc", func, inp, Tout, name)


eager_py_func = py_function
