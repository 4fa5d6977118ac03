"""Array ops: placeholders, identities, shapes, slicing, joining, gathering, ...

Each op's definition, TF1 wrapper and gradient sit together; kernels are in
tensorflux/kernels/cpu/array_ops.py.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable

# The TF1 public names of this module.
__all__ = ["placeholder", "placeholder_with_default", "identity", "identity_n", "stop_gradient"]

# ---- Placeholder, PlaceholderWithDefault -------------------------------------------------


def _placeholder_shape(op):
    shape = op.attrs["shape"]
    return [shape if shape is not None else tensor_shape.unknown_shape()]


define_op("Placeholder", outputs=["output: dtype"],
          attrs=["dtype: type", "shape: shape = unknown"], shape_fn=_placeholder_shape)
not_differentiable("Placeholder")


def placeholder(dtype, shape=None, name: str | None = None):
    """A tensor that must be fed (`tf.placeholder`): InvalidArgumentError at run time if not.

    Args:
      dtype: the element type.
      shape: the static shape (None: any shape; dimensions may be None).
      name: the op name.
    """
    shape = None if shape is None else tensor_shape.as_shape(shape)
    if shape is not None and shape.ndims is None:
        shape = None
    return apply_op("Placeholder", dtype=dtypes.as_dtype(dtype), shape=shape,
                    name=name or "Placeholder")


define_op("PlaceholderWithDefault", inputs=["input: dtype"], outputs=["output: dtype"],
          attrs=["dtype: type", "shape: shape"],
          shape_fn=lambda op: [op.attrs["shape"] if op.attrs["shape"] is not None
                               else tensor_shape.unknown_shape()])


def placeholder_with_default(input, shape, name: str | None = None):  # noqa: A002
    """`input` unless a value is fed (`tf.placeholder_with_default`).

    Raises:
      ValueError: `shape` is not compatible with the shape of `input`.
    """
    from tensorflux.framework.tensor_conversion import convert_to_tensor

    t = convert_to_tensor(input)
    shape = tensor_shape.as_shape(shape)
    if not shape.is_compatible_with(t.shape):
        raise ValueError(f"Shapes {t.shape} and {shape} are incompatible")
    return apply_op("PlaceholderWithDefault", input=t, shape=shape,
                    name=name or "PlaceholderWithDefault")


@gradient("PlaceholderWithDefault")
def _placeholder_with_default_grad(op, grad):
    return [grad]


# ---- Identity, IdentityN, StopGradient ---------------------------------------------------

define_op("Identity", inputs=["input: T"], outputs=["output: T"], attrs=["T: type"],
          shape_fn=common_shapes.unchanged)


def identity(input, name: str | None = None):  # noqa: A002
    """Returns a tensor with the same value as `input` (`tf.identity`)."""
    if hasattr(input, "_is_indexed_slices") or hasattr(input, "_is_sparse_tensor"):
        return input._map_values(lambda v: identity(v, name))
    if hasattr(input, "_identity_for_variable"):
        return input._identity_for_variable(name)
    return apply_op("Identity", input=input, name=name or "Identity")


@gradient("Identity")
def _identity_grad(op, grad):
    return [grad]


define_op("IdentityN", inputs=["input: T"], outputs=["output: T"],
          attrs=["T: list(type) >= 1"], shape_fn=common_shapes.unchanged_all)


def identity_n(input, name: str | None = None):  # noqa: A002
    """Returns a list of tensors with the same values as the list `input`."""
    return apply_op("IdentityN", input=list(input), name=name or "IdentityN")


@gradient("IdentityN")
def _identity_n_grad(op, *grads):
    return list(grads)


define_op("StopGradient", inputs=["input: T"], outputs=["output: T"], attrs=["T: type"],
          shape_fn=common_shapes.unchanged)
not_differentiable("StopGradient")


def stop_gradient(input, name: str | None = None):  # noqa: A002
    """The value of `input`, through which no gradient flows (`tf.stop_gradient`)."""
    return apply_op("StopGradient", input=input, name=name or "StopGradient")


@common_shapes.constant_evaluator("Identity", "StopGradient", "PlaceholderWithDefault")
def _identity_value(op):
    if op.type == "PlaceholderWithDefault":
        return None
    return common_shapes.constant_value(op.inputs[0])
