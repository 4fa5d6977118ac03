"""Math ops: elementwise arithmetic with NumPy broadcasting, comparisons, reductions,
matrices. Each op's definition, TF1 wrapper and gradient sit together; kernels are in
tensorflux/kernels/cpu/math_ops.py.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor

# The TF1 public names of this module.
__all__ = ["add"]

_NUMERIC = ("T: {bfloat16, half, float, double, uint8, int8, uint16, int16, int32, int64, "
            "uint32, uint64, complex64, complex128}")


def _binary(op_type: str, **flags):
    define_op(op_type, inputs=["x: T", "y: T"], outputs=["z: T"], attrs=[_NUMERIC],
              shape_fn=common_shapes.broadcast_binary, **flags)


_binary("AddV2", is_commutative=True)


def add(x, y, name: str | None = None):
    """x + y elementwise, with broadcasting (`tf.add`)."""
    return apply_op("AddV2", x=x, y=y, name=name or "add")


@gradient("AddV2")
def _add_grad(op, grad):
    return [grad, grad]  # the gradient driver sums over broadcast dimensions


def _binary_operator(fn, scope: str, reverse: bool = False):
    """A Tensor operator, named as TensorFlow names it: `add` with its converted operand in
    `add/y`. The other operand converts to this tensor's dtype first."""

    def op(self, other):
        with graph_lib.name_scope(None, scope, [self, other]) as name:
            other = convert_to_tensor(other, dtype=self.dtype.base_dtype, name="y")
            return fn(other, self, name=name) if reverse else fn(self, other, name=name)

    return op


Tensor._override_operator("__add__", _binary_operator(add, "add"))
Tensor._override_operator("__radd__", _binary_operator(add, "add", reverse=True))
