"""Resource variable ops: handles, reads, assignments, gathers and scatters.

A variable is a resource: `VarHandleOp` outputs a scalar `resource` tensor naming it
(container, shared name, dtype, shape), and every other op here takes that handle as input 0
and finds the variable in the ResourceMgr of the device it runs on, so each Session has its
own variables. The placer puts every consumer of a handle on the handle's device. Kernels and
the handle object are in tensorflux/kernels/cpu/state_ops.py.

Static checks mirror TensorFlow's shape functions: the dtype an op declares must equal the
handle's, and values assigned or added must have shapes compatible with the variable's
(ValueError at graph construction, with the node in the message).

The TF1 functions `tf.assign`, `tf.assign_add`, `tf.scatter_update`, ... at the end take a
`tf.Variable` (tensorflux/variables/variables.py).

TF1 reference variables (variables/ref_variable.py): every builder here that takes a
`resource` also takes a variable's `Ref(T)` tensor (a VariableV2's output) and then builds
the reference op TensorFlow 1 builds (Identity, Assign, AssignAdd, IsVariableInitialized,
Gather, Scatter*, CountUpTo; ops/ref_variable_ops.py), returning what the resource builder
returns (the Operation for updates). So optimizers, metrics, savers and moving averages
written against handles work on either kind of variable.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework.indexed_slices import IndexedSlices
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, constant_op, joining_ops

# The TF1 public names of this module.
__all__ = ["assign", "assign_add", "assign_sub", "scatter_add", "scatter_sub",
           "scatter_update", "scatter_mul", "scatter_div", "scatter_min", "scatter_max",
           "scatter_nd_add", "scatter_nd_sub", "scatter_nd_update", "count_up_to"]

TensorShape = tensor_shape.TensorShape
_NUMBER = ("dtype: {float, double, int32, uint8, int16, int8, complex64, int64, bfloat16, "
           "uint16, complex128, half, uint32, uint64}")
_REAL = ("dtype: {float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, "
         "uint32, uint64}")
_INDICES = "Tindices: {int32, int64}"


# ---- static facts about a handle ---------------------------------------------------------


def handle_dtype_and_shape(handle: Tensor) -> tuple[dtypes.DType | None, TensorShape]:
    """The dtype and shape of the variable a `resource` tensor refers to, when the graph tells.

    Follows Identity-like ops back to the VarHandleOp; (None, unknown shape) otherwise.
    """
    t = handle
    while isinstance(t, Tensor):
        op = t.op
        if op.type == "VarHandleOp":
            shape = op.attrs.get("shape")
            return op.attrs["dtype"], shape if shape is not None else \
                tensor_shape.unknown_shape()
        if op.type in ("Identity", "StopGradient", "PlaceholderWithDefault") and op.inputs:
            t = op.inputs[0]
            continue
        break
    return None, tensor_shape.unknown_shape()


def tf_type_name(dtype: dtypes.DType) -> str:
    """The name TensorFlow's C++ messages use for a dtype ("float", "double", "int32")."""
    return {"float32": "float", "float64": "double", "float16": "half"}.get(dtype.name,
                                                                          dtype.name)


def shape_str(shape) -> str:
    """A shape as TensorFlow's C++ messages print it: [2,?], or ? for an unknown rank."""
    if isinstance(shape, TensorShape):
        if shape.ndims is None:
            return "?"
        shape = shape.as_list()
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _merge(a: TensorShape, b: TensorShape) -> TensorShape:
    """TensorFlow's InferenceContext::Merge, with its error messages."""
    if a.ndims is None:
        return b
    if b.ndims is None:
        return a
    if a.ndims != b.ndims:
        raise ValueError(f"Shapes must be equal rank, but are {a.ndims} and {b.ndims}")
    out = []
    for i, (x, y) in enumerate(zip(a.as_list(), b.as_list(), strict=True)):
        if x is not None and y is not None and x != y:
            raise ValueError(f"Dimension {i} in both shapes must be equal, but are {x} and {y}."
                             f" Shapes are {shape_str(a)} and {shape_str(b)}.")
        out.append(x if x is not None else y)
    return TensorShape(out)


def _validated_handle(op) -> TensorShape:
    """The variable's shape; ValueError if the op's dtype differs from the handle's."""
    dtype, shape = handle_dtype_and_shape(op.inputs[0])
    want = op.attrs.get("dtype")
    if dtype is not None and want is not None and dtype != want:
        raise ValueError(f"Trying to read variable with wrong dtype. Expected "
                         f"{tf_type_name(dtype)} got {tf_type_name(want)}")
    return shape


def _read_shape(op):
    return [_validated_handle(op)]


def _assign_shape(op):
    _merge(_validated_handle(op), op.inputs[1].shape)
    return []


# ---- VarHandleOp, ReadVariableOp, AssignVariableOp, AssignAdd/SubVariableOp --------------

define_op("VarHandleOp", outputs=["resource: resource"],
          attrs=["container: string = ''", "shared_name: string = ''",
                 "debug_name: string = ''", "dtype: type", "shape: shape",
                 "allowed_devices: list(string) = []"],
          shape_fn=common_shapes.scalar, stateful=True, cost_free=True)
define_op("ReadVariableOp", inputs=["resource: resource"], outputs=["value: dtype"],
          attrs=["dtype: type"], shape_fn=_read_shape, stateful=True, cost_free=True)
define_op("AssignVariableOp", inputs=["resource: resource", "value: dtype"],
          attrs=["dtype: type", "validate_shape: bool = false"], shape_fn=_assign_shape,
          stateful=True, cost_free=True)
define_op("AssignAddVariableOp", inputs=["resource: resource", "value: dtype"],
          attrs=["dtype: type"], shape_fn=_assign_shape, stateful=True)
define_op("AssignSubVariableOp", inputs=["resource: resource", "value: dtype"],
          attrs=["dtype: type"], shape_fn=_assign_shape, stateful=True)
not_differentiable("VarHandleOp", "AssignVariableOp", "AssignAddVariableOp",
                   "AssignSubVariableOp")


@gradient("ReadVariableOp")
def _read_grad(op, grad):
    return [grad]  # the gradient with respect to the handle is the read value's


def var_handle_op(dtype, shape, container: str = "", shared_name: str = "",
                  debug_name: str = "", allowed_devices=(), name: str | None = None) -> Tensor:
    """A handle to the variable `container/shared_name` (the op's name if empty)."""
    shape = tensor_shape.unknown_shape() if shape is None else tensor_shape.as_shape(shape)
    return apply_op("VarHandleOp", dtype=dtypes.as_dtype(dtype), shape=shape,
                    container=container, shared_name=shared_name, debug_name=debug_name,
                    allowed_devices=list(allowed_devices), name=name or "VarHandleOp")


def is_ref(t) -> bool:
    """Whether `t` is a reference variable's `Ref(T)` tensor (not a resource handle)."""
    return isinstance(t, Tensor) and t.dtype._is_ref_dtype


def _ref_update(op_type: str, ref, value, name, **attrs):
    """The reference op `op_type` (Assign, AssignAdd, ...) on `ref`; returns its Operation."""
    return apply_op(op_type, ref=ref, value=value, name=name or op_type, **attrs).op


def read_variable_op(resource, dtype, name: str | None = None) -> Tensor:
    """The variable's current value (a snapshot: later updates never change it)."""
    if is_ref(resource):
        return apply_op("Identity", input=resource, name=name or "Identity")
    return apply_op("ReadVariableOp", resource=resource, dtype=dtypes.as_dtype(dtype),
                    name=name or "ReadVariableOp")


def assign_variable_op(resource, value, validate_shape: bool = False,
                       name: str | None = None):
    """Stores `value` in the variable, creating it if absent; returns the Operation."""
    if is_ref(resource):
        return _ref_update("Assign", resource, value, name,
                           validate_shape=bool(validate_shape))
    return apply_op("AssignVariableOp", resource=resource, value=value,
                    validate_shape=validate_shape, name=name or "AssignVariableOp")


def assign_add_variable_op(resource, value, name: str | None = None):
    """Adds `value` to the initialized variable, atomically; returns the Operation."""
    if is_ref(resource):
        return _ref_update("AssignAdd", resource, value, name)
    return apply_op("AssignAddVariableOp", resource=resource, value=value,
                    name=name or "AssignAddVariableOp")


def assign_sub_variable_op(resource, value, name: str | None = None):
    """Subtracts `value` from the initialized variable, atomically; returns the Operation."""
    if is_ref(resource):
        return _ref_update("AssignSub", resource, value, name)
    return apply_op("AssignSubVariableOp", resource=resource, value=value,
                    name=name or "AssignSubVariableOp")


# ---- VarIsInitializedOp, DestroyResourceOp, VariableShape --------------------------------

define_op("VarIsInitializedOp", inputs=["resource: resource"],
          outputs=["is_initialized: bool"], shape_fn=common_shapes.scalar, stateful=True,
          cost_free=True)
define_op("DestroyResourceOp", inputs=["resource: resource"],
          attrs=["ignore_lookup_error: bool = true"], shape_fn=lambda op: [], stateful=True)


def _variable_shape_shape(op):
    _, shape = handle_dtype_and_shape(op.inputs[0])
    return [TensorShape([shape.ndims])]


define_op("VariableShape", inputs=["input: resource"], outputs=["output: out_type"],
          attrs=["out_type: {int32, int64} = DT_INT32"], shape_fn=_variable_shape_shape,
          stateful=True)
not_differentiable("VarIsInitializedOp", "DestroyResourceOp", "VariableShape")


def var_is_initialized_op(resource, name: str | None = None) -> Tensor:
    """A bool scalar: whether the variable exists and holds a value."""
    if is_ref(resource):
        return apply_op("IsVariableInitialized", ref=resource,
                        name=name or "IsVariableInitialized")
    return apply_op("VarIsInitializedOp", resource=resource,
                    name=name or "VarIsInitializedOp")


def destroy_resource_op(resource, ignore_lookup_error: bool = True, name: str | None = None):
    """Deletes the resource (NotFoundError if absent, unless `ignore_lookup_error`)."""
    return apply_op("DestroyResourceOp", resource=resource,
                    ignore_lookup_error=ignore_lookup_error, name=name or "DestroyResourceOp")


def variable_shape(input, out_type=dtypes.int32, name: str | None = None) -> Tensor:  # noqa: A002
    """The run-time shape of the variable `input` refers to, as a 1-D tensor."""
    if is_ref(input):
        return apply_op("Shape", input=input, out_type=out_type, name=name or "Shape")
    return apply_op("VariableShape", input=input, out_type=out_type,
                    name=name or "VariableShape")


# ---- ResourceGather ----------------------------------------------------------------------


def _gather_shape(op):
    params = _validated_handle(op)
    indices = op.inputs[1].shape
    batch_dims = op.attrs["batch_dims"]
    if params.ndims is None or indices.ndims is None:
        return [tensor_shape.unknown_shape()]
    if batch_dims < 0:
        batch_dims += indices.ndims
    if params.ndims < batch_dims + 1:
        raise ValueError(f"Shape must be at least rank {batch_dims + 1} but is rank "
                         f"{params.ndims}")
    p, i = params.as_list(), indices.as_list()
    return [TensorShape(p[:batch_dims] + i[batch_dims:] + p[batch_dims + 1:])]


define_op("ResourceGather", inputs=["resource: resource", "indices: Tindices"],
          outputs=["output: dtype"],
          attrs=["batch_dims: int = 0", "validate_indices: bool = true", "dtype: type",
                 _INDICES], shape_fn=_gather_shape, stateful=True)


def resource_gather(resource, indices, dtype, batch_dims: int = 0,
                    validate_indices: bool = True, name: str | None = None) -> Tensor:
    """Rows `indices` of the variable (`params[indices]` along axis `batch_dims`)."""
    if is_ref(resource):
        return apply_op("GatherV2", params=resource, indices=indices,
                        axis=constant_op.constant(batch_dims), batch_dims=batch_dims,
                        name=name or "GatherV2")
    return apply_op("ResourceGather", resource=resource, indices=indices,
                    dtype=dtypes.as_dtype(dtype), batch_dims=batch_dims,
                    validate_indices=validate_indices, name=name or "ResourceGather")


@gradient("ResourceGather")
def _resource_gather_grad(op, grad):
    """IndexedSlices of the incoming gradient's rows, as TensorFlow's `_GatherGrad`."""
    handle, indices = op.inputs
    params_shape = variable_shape(handle)
    size = array_ops.expand_dims(array_ops.size(indices), 0)
    values_shape = joining_ops.concat([size, params_shape[1:]], 0)
    values = array_ops.reshape(grad, values_shape)
    indices = array_ops.reshape(indices, size)
    return [IndexedSlices(values, indices, params_shape), None]


# ---- ResourceScatter{Add,Sub,Mul,Div,Min,Max,Update}, ResourceScatterNd{Add,Sub,Update} ---


def _scatter_shape(op):
    params = _validated_handle(op)
    indices, updates = op.inputs[1].shape, op.inputs[2].shape
    if updates.ndims == 0 or params.ndims is None or indices.ndims is None:
        return []
    if params.ndims == 0:
        raise ValueError("Shape must be at least rank 1 but is rank 0")
    _merge(updates, indices.concatenate(TensorShape(params.as_list()[1:])))
    return []


def _scatter_nd_shape(op):
    params = _validated_handle(op)
    indices, updates = op.inputs[1].shape, op.inputs[2].shape
    if params.ndims is None or indices.ndims is None or updates.ndims is None:
        return []
    if indices.ndims == 0:
        raise ValueError("Shape must be at least rank 1 but is rank 0")
    depth = indices.as_list()[-1]
    if depth is not None:
        if depth > params.ndims:
            raise ValueError(f"The last dimension of indices ({depth}) must be <= the rank of "
                             f"the variable ({params.ndims})")
        _merge(updates, TensorShape(indices.as_list()[:-1] + params.as_list()[depth:]))
    return []


_SCATTER_TYPES = {"ResourceScatterAdd": _NUMBER, "ResourceScatterSub": _NUMBER,
                  "ResourceScatterMul": _NUMBER, "ResourceScatterDiv": _NUMBER,
                  "ResourceScatterMin": _REAL, "ResourceScatterMax": _REAL,
                  "ResourceScatterUpdate": "dtype: type"}
for _op_type, _dtype_attr in _SCATTER_TYPES.items():
    define_op(_op_type, inputs=["resource: resource", "indices: Tindices", "updates: dtype"],
              attrs=[_dtype_attr, _INDICES], shape_fn=_scatter_shape, stateful=True)
for _op_type in ("ResourceScatterNdAdd", "ResourceScatterNdSub", "ResourceScatterNdUpdate"):
    define_op(_op_type, inputs=["ref: resource", "indices: Tindices", "updates: T"],
              attrs=["T: type", _INDICES, "use_locking: bool = true"],
              shape_fn=_scatter_nd_shape, stateful=True)
not_differentiable(*_SCATTER_TYPES, "ResourceScatterNdAdd", "ResourceScatterNdSub",
                   "ResourceScatterNdUpdate")


def resource_scatter(op_type: str, resource, indices, updates, name: str | None = None):
    """Applies `op_type` (e.g. "ResourceScatterAdd") to rows `indices`; returns the op."""
    if is_ref(resource):
        ref_type = op_type.removeprefix("Resource")
        return apply_op(ref_type, ref=resource, indices=indices, updates=updates,
                        name=name or ref_type).op
    if op_type.startswith("ResourceScatterNd"):
        return apply_op(op_type, ref=resource, indices=indices, updates=updates,
                        name=name or op_type)
    return apply_op(op_type, resource=resource, indices=indices, updates=updates,
                    name=name or op_type)


def _scatter_wrapper(op_type: str, fn_name: str):
    def wrapper(resource, indices, updates, name=None):
        return resource_scatter(op_type, resource, indices, updates, name)

    wrapper.__name__ = wrapper.__qualname__ = fn_name
    wrapper.__doc__ = f"Applies {op_type} to the variable `resource` refers to; returns the op."
    return wrapper


resource_scatter_add = _scatter_wrapper("ResourceScatterAdd", "resource_scatter_add")
resource_scatter_sub = _scatter_wrapper("ResourceScatterSub", "resource_scatter_sub")
resource_scatter_mul = _scatter_wrapper("ResourceScatterMul", "resource_scatter_mul")
resource_scatter_div = _scatter_wrapper("ResourceScatterDiv", "resource_scatter_div")
resource_scatter_min = _scatter_wrapper("ResourceScatterMin", "resource_scatter_min")
resource_scatter_max = _scatter_wrapper("ResourceScatterMax", "resource_scatter_max")
resource_scatter_update = _scatter_wrapper("ResourceScatterUpdate", "resource_scatter_update")
resource_scatter_nd_add = _scatter_wrapper("ResourceScatterNdAdd", "resource_scatter_nd_add")
resource_scatter_nd_sub = _scatter_wrapper("ResourceScatterNdSub", "resource_scatter_nd_sub")
resource_scatter_nd_update = _scatter_wrapper("ResourceScatterNdUpdate",
                                              "resource_scatter_nd_update")


# ---- ResourceCountUpTo -------------------------------------------------------------------

define_op("ResourceCountUpTo", inputs=["resource: resource"], outputs=["output: T"],
          attrs=["limit: int", "T: {int32, int64}"],
          shape_fn=lambda op: [handle_dtype_and_shape(op.inputs[0])[1]], stateful=True)
not_differentiable("ResourceCountUpTo")


def resource_count_up_to(resource, limit: int, T, name: str | None = None) -> Tensor:  # noqa: N803
    """Increments the integer variable unless it reached `limit`; the value before."""
    if is_ref(resource):
        return apply_op("CountUpTo", ref=resource, limit=limit, name=name or "CountUpTo")
    return apply_op("ResourceCountUpTo", resource=resource, limit=limit,
                    T=dtypes.as_dtype(T), name=name or "ResourceCountUpTo")


# ---- TF1 functions on variables: tf.assign, tf.scatter_add, ... --------------------------


def _check_variable(ref, fn: str):
    if not hasattr(ref, "_lazy_read") or not hasattr(ref, "handle"):
        raise TypeError(f"tf.{fn} needs a tf.Variable as `ref`, got {type(ref).__name__}: "
                        f"{ref!r}")


# TF1 programs chain updates: `tf.assign_add(tf.assign(v, v * decay), (1 - decay) * x)`
# (baselines' K-FAC running averages). TF1 allows it for both kinds of variable: a reference
# variable's update outputs the variable's ref, which the next update takes as `ref`; a
# resource variable's update returns an "unread variable" (TF's _UnreadVariable), whose own
# updates apply to the same variable after the first one. Here a resource variable's update
# returns its read after the update (ResourceVariable._lazy_read), marked with
# `_updated_variable = (variable, update op)`; tf.assign/assign_add/assign_sub given such a
# value update that variable, after that op.
def _chained_update(ref, fn: str, method: str, ref_op: str, value, name, **attrs):
    """The update `fn` of `ref`: a tf.Variable, a ref tensor, or a value an earlier update
    of a resource variable returned."""
    if is_ref(ref):
        return apply_op(ref_op, ref=ref, value=value, name=name or ref_op, **attrs)
    updated = getattr(ref, "_updated_variable", None)
    if updated is not None:
        variable, parent_op = updated
        with variable.graph.control_dependencies([parent_op]):
            return getattr(variable, method)(value, name=name)
    _check_variable(ref, fn)
    return getattr(ref, method)(value, use_locking=attrs.get("use_locking"), name=name)


def assign(ref, value, validate_shape=None, use_locking=None, name: str | None = None):
    """Stores `value` in the variable `ref` (`tf.assign`); returns the updated value.

    `validate_shape=False` lets a TF1 reference variable take a value of another shape;
    as for TensorFlow's resource variables, a resource variable's value must have its shape.
    `ref` may also be what an earlier update returned (chained updates, above).
    """
    if validate_shape is False and is_ref(getattr(ref, "handle", None)):
        # TF1: a reference variable takes a value of another shape when asked.
        return apply_op("Assign", ref=ref.handle, value=value, validate_shape=False,
                        use_locking=True if use_locking is None else bool(use_locking),
                        name=name or "Assign")
    if is_ref(ref):
        return apply_op("Assign", ref=ref, value=value,
                        validate_shape=validate_shape is not False,
                        use_locking=True if use_locking is None else bool(use_locking),
                        name=name or "Assign")
    return _chained_update(ref, "assign", "assign", "Assign", value, name,
                           use_locking=use_locking)


def assign_add(ref, value, use_locking=None, name: str | None = None):
    """Adds `value` to the variable `ref` (`tf.assign_add`); returns the updated value."""
    if is_ref(ref):
        return apply_op("AssignAdd", ref=ref, value=value, use_locking=bool(use_locking),
                        name=name or "AssignAdd")
    return _chained_update(ref, "assign_add", "assign_add", "AssignAdd", value, name,
                           use_locking=use_locking)


def assign_sub(ref, value, use_locking=None, name: str | None = None):
    """Subtracts `value` from `ref` (`tf.assign_sub`); returns the updated value."""
    if is_ref(ref):
        return apply_op("AssignSub", ref=ref, value=value, use_locking=bool(use_locking),
                        name=name or "AssignSub")
    return _chained_update(ref, "assign_sub", "assign_sub", "AssignSub", value, name,
                           use_locking=use_locking)


def _scatter_fn(op_type: str, fn_name: str):
    def scatter(ref, indices, updates, use_locking=None, name=None):
        _check_variable(ref, fn_name)
        updates = convert_to_tensor(updates, dtype=ref.dtype, name="updates")
        return ref._lazy_read(resource_scatter(op_type, ref.handle, indices, updates, name))

    scatter.__name__ = fn_name
    scatter.__qualname__ = fn_name
    scatter.__doc__ = (f"`tf.{fn_name}(ref, indices, updates, use_locking=None, name=None)`: "
                       f"applies {op_type} to the variable `ref`; returns its updated value.")
    return scatter


scatter_add = _scatter_fn("ResourceScatterAdd", "scatter_add")
scatter_sub = _scatter_fn("ResourceScatterSub", "scatter_sub")
scatter_mul = _scatter_fn("ResourceScatterMul", "scatter_mul")
scatter_div = _scatter_fn("ResourceScatterDiv", "scatter_div")
scatter_min = _scatter_fn("ResourceScatterMin", "scatter_min")
scatter_max = _scatter_fn("ResourceScatterMax", "scatter_max")
scatter_update = _scatter_fn("ResourceScatterUpdate", "scatter_update")
scatter_nd_add = _scatter_fn("ResourceScatterNdAdd", "scatter_nd_add")
scatter_nd_sub = _scatter_fn("ResourceScatterNdSub", "scatter_nd_sub")
scatter_nd_update = _scatter_fn("ResourceScatterNdUpdate", "scatter_nd_update")


def count_up_to(ref, limit: int, name: str | None = None) -> Tensor:
    """Increments the integer variable `ref` until it reaches `limit` (`tf.count_up_to`).

    Returns:
      The value before the increment; running it once more at `limit` raises
      OutOfRangeError.
    """
    _check_variable(ref, "count_up_to")
    return ref.count_up_to(limit, name=name)
