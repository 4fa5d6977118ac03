"""TensorFlow 1's reference variables: VariableV2 and the ops that update through a ref.

tensorflux's own `tf.Variable` is a resource variable (state_ops.py). These ops exist so
that GraphDefs written by TensorFlow 1 programs run: a TF client on a tensorflux cluster, a
meta graph or SavedModel exported by TensorFlow. Their kernels
(kernels/cpu/ref_variable_ops.py) are the resource kernels behind another face:

- the value of a `Ref(T)` tensor is the same ResourceHandle a VarHandleOp produces (the
  variable named by `shared_name`, else by the node), so `VariableV2` is a handle op and
  `Assign`, `AssignAdd`, `Scatter*`, `Apply*` are their resource counterparts that also
  output the handle (`output_ref`);
- a consumer that reads the ref as a value (`Identity`, `MatMul`, a `_Send`, a fetch...)
  gets it through a `_RefRead` node the step builder inserts in front of it (runtime/
  step_graph.py), which reads the variable when that consumer could run (it waits for the
  consumer's other inputs and control inputs), as TensorFlow's executor dereferences a ref
  edge when the consumer runs;
- the placer keeps every user of a ref on the variable's device (as for resource edges).
"""

from __future__ import annotations

from tensorflux.framework import tensor_shape
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.ops import training_ops

__all__: list[str] = []

_NUMBER = ("T: {float, double, int32, uint8, int16, int8, complex64, int64, bfloat16, "
           "uint16, complex128, half, uint32, uint64}")
_REAL = ("T: {float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, "
         "uint32, uint64}")


def _attr_shape(op):
    return [tensor_shape.as_shape(op.get_attr("shape"))]


def _same_as_ref(op):
    return [op.inputs[0].shape]


def _scalar(op):
    return [tensor_shape.TensorShape([])]


for _name in ("VariableV2", "Variable"):
    define_op(_name, outputs=["ref: Ref(dtype)"],
              attrs=["shape: shape", "dtype: type", "container: string = ''",
                     "shared_name: string = ''"],
              shape_fn=_attr_shape, stateful=True, cost_free=True)
define_op("Assign", inputs=["ref: Ref(T)", "value: T"], outputs=["output_ref: Ref(T)"],
          attrs=["T: type", "validate_shape: bool = true", "use_locking: bool = true"],
          shape_fn=lambda op: [op.inputs[1].shape if not op.get_attr("validate_shape")
                               else op.inputs[0].shape.merge_with(op.inputs[1].shape)],
          stateful=True, cost_free=True)
for _name in ("AssignAdd", "AssignSub"):
    define_op(_name, inputs=["ref: Ref(T)", "value: T"], outputs=["output_ref: Ref(T)"],
              attrs=[_NUMBER, "use_locking: bool = false"], shape_fn=_same_as_ref,
              stateful=True)
for _name, _types, _lock in (("ScatterUpdate", "T: type", "true"),
                             ("ScatterAdd", _NUMBER, "false"), ("ScatterSub", _NUMBER, "false"),
                             ("ScatterMul", _NUMBER, "false"), ("ScatterDiv", _NUMBER, "false"),
                             ("ScatterMin", _REAL, "false"), ("ScatterMax", _REAL, "false")):
    define_op(_name, inputs=["ref: Ref(T)", "indices: Tindices", "updates: T"],
              outputs=["output_ref: Ref(T)"],
              attrs=[_types, "Tindices: {int32, int64}", f"use_locking: bool = {_lock}"],
              shape_fn=_same_as_ref, stateful=True)
for _name, _lock in (("ScatterNdUpdate", "true"), ("ScatterNdAdd", "false"),
                    ("ScatterNdSub", "false")):
    define_op(_name, inputs=["ref: Ref(T)", "indices: Tindices", "updates: T"],
              outputs=["output_ref: Ref(T)"],
              attrs=["T: type", "Tindices: {int32, int64}", f"use_locking: bool = {_lock}"],
              shape_fn=_same_as_ref, stateful=True)
define_op("IsVariableInitialized", inputs=["ref: Ref(dtype)"],
          outputs=["is_initialized: bool"], attrs=["dtype: type"], shape_fn=_scalar,
          stateful=True, cost_free=True)
define_op("CountUpTo", inputs=["ref: Ref(T)"], outputs=["output: T"],
          attrs=["limit: int", "T: {int32, int64}"], shape_fn=_scalar, stateful=True)
# Inserted by the step builder in front of a consumer that reads a ref as a value.
define_op("_RefRead", inputs=["ref: Ref(T)"], outputs=["value: T"], attrs=["T: type"],
          shape_fn=_same_as_ref, stateful=True, cost_free=True)

# The ref forms of the fused optimizer updates: `Apply*`/`SparseApply*` take the variable
# and its slots as refs and output the variable's ref.
for _rname, (_slots, _args, _attrs) in {**training_ops.DENSE, **training_ops.SPARSE}.items():
    if _rname in training_ops.RESOURCE_ONLY:
        continue
    _sparse = _rname in training_ops.SPARSE
    define_op(_rname.removeprefix("Resource"),
              inputs=["var: Ref(T)"] + [f"{s}: Ref(T)" for s in _slots] + _args,
              outputs=["out: Ref(T)"],
              attrs=[training_ops.T_ATTR, training_ops.LOCK_ATTR] +
              ([training_ops.TINDICES_ATTR] if _sparse else []) + _attrs,
              shape_fn=_same_as_ref, stateful=True)

not_differentiable("VariableV2", "Variable", "Assign", "AssignAdd", "AssignSub",
                   "ScatterUpdate", "ScatterAdd", "ScatterSub", "ScatterMul", "ScatterDiv",
                   "ScatterMin", "ScatterMax", "ScatterNdUpdate", "ScatterNdAdd",
                   "ScatterNdSub", "IsVariableInitialized", "CountUpTo",
                   "_RefRead",
                   *(n.removeprefix("Resource") for n in {**training_ops.DENSE,
                                                           **training_ops.SPARSE}
                     if n not in training_ops.RESOURCE_ONLY))
