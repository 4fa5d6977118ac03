"""Const and `tf.constant`."""

from __future__ import annotations

import numpy as np

from tensorflux.framework import common_shapes, dtypes, tensor_shape, tensor_util
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.tensor_conversion import register_tensor_conversion_function

# The TF1 public names of this module.
__all__ = ["constant"]


def _const_shape(op):
    return [tensor_shape.TensorShape(op.attrs["value"].shape)]


define_op("Const", outputs=["output: dtype"], attrs=["value: tensor", "dtype: type"],
          shape_fn=_const_shape, cost_free=True)
not_differentiable("Const")


@common_shapes.constant_evaluator("Const")
def _const_value(op):
    value = op.attrs["value"]
    # A large splat stays unexpanded (framework/resource_guard.py): unknown here.
    return None if isinstance(value, tensor_util.DeferredTensor) else value


def constant(value, dtype=None, shape=None, name: str = "Const", verify_shape: bool = False):
    """A Const tensor holding `value` (`tf.constant`, TF1 signature).

    Args:
      value: a Python or NumPy value (nested lists allowed).
      dtype: the element type; inferred from `value` when None.
      shape: the result's shape; a scalar `value` fills it, a value with as many elements
        is reshaped to it.
      name: the op name.
      verify_shape: require `value` to have exactly `shape`.

    Raises:
      TypeError: `value` cannot be represented as `dtype`.
      ValueError: `value` does not fit `shape`.
    """
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    arr = tensor_util.convert_to_numpy(value, dtype)
    if shape is not None:
        target = tuple(tensor_shape.as_shape(shape).as_list())
        if verify_shape and arr.shape != target:
            raise TypeError(f"Expected Tensor's shape: {target}, got {arr.shape}.")
        if arr.shape != target:
            if arr.size == 1 and _splat_bytes(arr, target) > tensor_util.DEFER_BYTES:
                return _deferred_constant(arr, target, dtype, name)
            if arr.size == 1:
                arr = np.full(target, arr.reshape(()), dtype=arr.dtype)
            elif arr.size == int(np.prod(target, dtype=np.int64)):
                arr = arr.reshape(target)
            else:
                raise TypeError(f"Eager execution of tf.constant with unsupported shape. Tensor "
                                f"{value!r} (converted from {value!r}) has {arr.size} "
                                f"elements, but got `shape` {target} with "
                                f"{int(np.prod(target))} elements).")
    if arr.flags.writeable and arr is value:
        arr = arr.copy()  # the graph owns its constants: later writes to `value` don't leak
    arr.flags.writeable = False
    g = graph_lib.get_default_graph()
    dt = dtype or dtypes.as_dtype(arr.dtype)
    if dt is dtypes.string:
        dt = dtypes.string
    return g._create_op_internal("Const", (), {"value": arr, "dtype": dt}, name or "Const",
                                 output_dtypes=[dt]).outputs[0]


def _splat_bytes(arr: np.ndarray, target) -> int:
    return int(np.prod(target, dtype=object)) * (arr.itemsize if arr.dtype.kind != "O" else 8)


def _deferred_constant(arr: np.ndarray, target, dtype, name):
    """A Const of one value repeated over a large `target` shape: kept as its TensorProto
    (nothing allocated now, as TensorFlow's graph-mode `tf.constant` allocates nothing), the
    Const kernel expands it against the session's bound (framework/resource_guard.py)."""
    dt = dtype or dtypes.as_dtype(arr.dtype)
    proto = tensor_util.make_tensor_proto(arr.reshape(()), dt)
    for d in target:
        proto.tensor_shape.dim.add().size = d
    value = tensor_util.DeferredTensor(proto, tuple(target), dt.base_dtype, 1)
    return graph_lib.get_default_graph()._create_op_internal(
        "Const", (), {"value": value, "dtype": dt}, name or "Const",
        output_dtypes=[dt]).outputs[0]


def _constant_tensor_conversion_function(v, dtype=None, name=None, as_ref=False):
    """Python and NumPy values become a Const (the last conversion tried)."""
    del as_ref
    return constant(v, dtype=dtype, name=name or "Const")


register_tensor_conversion_function(object, _constant_tensor_conversion_function, priority=200)
