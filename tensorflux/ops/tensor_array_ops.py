"""TensorArray (`tf.TensorArray`) and the stack ops that save forward values for gradients.

A TensorArray is a per-step array of tensors behind a `resource` handle, plus a scalar float
`flow` tensor that threads the order of operations through the graph: every write returns
a new flow, and reads, stacks and gathers take the flow they must come after. In a
tf.while_loop the handle is a loop invariant and the flow a loop variable, so iteration i's
write precedes iteration i+1's read. A Python `TensorArray` object is one (handle, flow)
pair; writing returns a new object with the new flow and the same handle (and the same
shared record of the element shape learnt so far).

Gradients. The gradient of a TensorArray is another TensorArray of the same size, found
by `TensorArrayGradV3` from the forward handle and a `source` string (the gradients() call's
name scope, so separate tf.gradients calls get separate arrays). Reading element i
back-propagates as writing the gradient into element i of the gradient array (writes to the
same element add up); writing element i back-propagates as reading it from there, so the
elements of a stacked loop output flow back to the iterations that wrote them.

Stacks (StackV2, StackPushV2, StackPopV2, StackCloseV2) are per-step LIFO stacks: the
gradient of a while loop pushes each forward value it needs in every iteration and pops
them in reverse in the gradient loop (control_flow_state.py).
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import (
    common_shapes,
    dtypes,
    nested_structure_coder,
    tensor_shape,
    type_spec,
)
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.framework.tensor_spec import TensorSpec
from tensorflux.ops import array_ops, math_ops, sequence_ops
from tensorflux.protos import struct_pb2

__all__ = ["TensorArray", "TensorArraySpec"]

_SCALAR = tensor_shape.TensorShape([])


def _scalar(op):
    return [_SCALAR]


def _attr_shape(value) -> tensor_shape.TensorShape:
    return tensor_shape.unknown_shape() if value is None else tensor_shape.as_shape(value)


_HANDLE = tensor_shape.TensorShape([2])  # TF's static shape of a TensorArray's or stack's
# handle (from the days of two-string handles), which TensorFlow checks on import


def _ta_shape(op):
    return [_HANDLE, _SCALAR]


def _read_shape(op):
    return [tensor_shape.unknown_shape()]


def _gather_shape(op):
    elem = _attr_shape(op.attrs.get("element_shape"))
    ishape = op.inputs[1].shape
    n = ishape.as_list()[0] if ishape.ndims == 1 else None
    if elem.ndims is None:
        return [tensor_shape.unknown_shape()]
    return [tensor_shape.TensorShape([n]).concatenate(elem)]


def _concat_shape(op):
    elem = _attr_shape(op.attrs.get("element_shape_except0"))
    value = tensor_shape.unknown_shape() if elem.ndims is None else \
        tensor_shape.TensorShape([None]).concatenate(elem)
    return [value, tensor_shape.TensorShape([None])]


define_op("TensorArrayV3", inputs=["size: int32"], outputs=["handle: resource", "flow: float"],
          attrs=["dtype: type", "element_shape: shape = unknown", "dynamic_size: bool = false",
                 "clear_after_read: bool = true", "identical_element_shapes: bool = false",
                 "tensor_array_name: string = ''"],
          shape_fn=_ta_shape, stateful=True)
define_op("TensorArrayGradV3", inputs=["handle: resource", "flow_in: float"],
          outputs=["grad_handle: resource", "flow_out: float"], attrs=["source: string"],
          shape_fn=_ta_shape, stateful=True)
define_op("TensorArrayWriteV3", inputs=["handle: resource", "index: int32", "value: T",
                                        "flow_in: float"],
          outputs=["flow_out: float"], attrs=["T: type"], shape_fn=_scalar, stateful=True)
define_op("TensorArrayReadV3", inputs=["handle: resource", "index: int32", "flow_in: float"],
          outputs=["value: dtype"], attrs=["dtype: type"], shape_fn=_read_shape,
          stateful=True)
define_op("TensorArrayGatherV3", inputs=["handle: resource", "indices: int32",
                                         "flow_in: float"],
          outputs=["value: dtype"], attrs=["dtype: type", "element_shape: shape = unknown"],
          shape_fn=_gather_shape, stateful=True)
define_op("TensorArrayScatterV3", inputs=["handle: resource", "indices: int32", "value: T",
                                          "flow_in: float"],
          outputs=["flow_out: float"], attrs=["T: type"], shape_fn=_scalar, stateful=True)
define_op("TensorArrayConcatV3", inputs=["handle: resource", "flow_in: float"],
          outputs=["value: dtype", "lengths: int64"],
          attrs=["dtype: type", "element_shape_except0: shape = unknown"],
          shape_fn=_concat_shape, stateful=True)
define_op("TensorArraySplitV3", inputs=["handle: resource", "value: T", "lengths: int64",
                                        "flow_in: float"],
          outputs=["flow_out: float"], attrs=["T: type"], shape_fn=_scalar, stateful=True)
define_op("TensorArraySizeV3", inputs=["handle: resource", "flow_in: float"],
          outputs=["size: int32"], shape_fn=_scalar, stateful=True)
define_op("TensorArrayCloseV3", inputs=["handle: resource"], shape_fn=lambda op: [],
          stateful=True)
not_differentiable("TensorArrayV3", "TensorArrayGradV3", "TensorArraySizeV3",
                   "TensorArrayCloseV3")

define_op("StackV2", inputs=["max_size: int32"], outputs=["handle: resource"],
          attrs=["elem_type: type", "stack_name: string = ''"], shape_fn=lambda op: [_HANDLE],
          stateful=True)
define_op("StackPushV2", inputs=["handle: resource", "elem: T"], outputs=["output: T"],
          attrs=["T: type", "swap_memory: bool = false"],
          shape_fn=lambda op: [op.inputs[1].shape], stateful=True)
define_op("StackPopV2", inputs=["handle: resource"], outputs=["elem: elem_type"],
          attrs=["elem_type: type"], shape_fn=_read_shape, stateful=True)
define_op("StackCloseV2", inputs=["handle: resource"], shape_fn=lambda op: [], stateful=True)
not_differentiable("StackV2", "StackPushV2", "StackPopV2", "StackCloseV2")


def stack_v2(max_size, elem_type, stack_name: str = "", name: str | None = None) -> Tensor:
    """A new per-step stack of `elem_type` tensors (max_size -1: unbounded)."""
    return apply_op("StackV2", max_size=max_size, elem_type=elem_type, stack_name=stack_name,
                    name=name or "Stack")


def stack_push_v2(handle, elem, swap_memory: bool = False, name: str | None = None) -> Tensor:
    return apply_op("StackPushV2", handle=handle, elem=elem, swap_memory=swap_memory,
                    name=name or "StackPushV2")


def stack_pop_v2(handle, elem_type, name: str | None = None) -> Tensor:
    return apply_op("StackPopV2", handle=handle, elem_type=elem_type,
                    name=name or "StackPopV2")


def stack_close_v2(handle, name: str | None = None):
    return apply_op("StackCloseV2", handle=handle, name=name or "StackCloseV2")


# ---- the Python TensorArray ---------------------------------------------------------------


def _check_dtypes(value: Tensor, dtype) -> None:
    if value.dtype.base_dtype != dtype:
        raise TypeError(f"TensorArray dtype is {dtype.name} but Op is trying to write dtype "
                        f"{value.dtype.name}.")


class TensorArray:
    """A dynamically sized array of same-dtype tensors, written and read by index
    (`tf.TensorArray`, TF1 graph semantics). See the module docstring.

    Args:
      dtype: element type.
      size: int32 scalar: the number of elements (required unless `handle` is given).
      dynamic_size: writes past the end grow the array.
      clear_after_read: a read frees the element (reading it again is an error).
      tensor_array_name: the resource's name (default: unique).
      handle, flow: an existing array's handle and flow (for building on one).
      infer_shape: all elements have one shape, learnt from the first write if not given.
      element_shape: the elements' (partial) shape.
      colocate_with_first_write_call: accepted for compatibility.
      name: name scope.

    Raises:
      ValueError/TypeError: conflicting or missing arguments, as TensorFlow.
    """

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape: bool = True,
                 element_shape=None, colocate_with_first_write_call: bool = True,
                 name: str | None = None):
        if (flow is None) != (handle is None):
            raise ValueError("Both 'flow' and 'handle' must be provided or omitted")
        if handle is not None and tensor_array_name:
            raise ValueError("Cannot provide both `handle` and `tensor_array_name` arguments "
                             "at the same time.")
        if handle is not None and not isinstance(handle, Tensor):
            raise TypeError(f"Expected `handle` to be a Tensor, but got `{handle}` of type "
                            f"`{type(handle)}` instead.")
        if handle is None and size is None:
            raise ValueError("Argument `size` must be provided if handle is not provided.")
        if handle is not None and size is not None:
            raise ValueError("Cannot provide both a `handle` and `size` at the same time.")
        if handle is not None and element_shape is not None:
            raise ValueError("Cannot provide both `handle` and `element_shape` arguments at "
                             "the same time.")
        if handle is not None and dynamic_size is not None:
            raise ValueError("Cannot provide both `handle` and `dynamic_size` arguments at "
                             "the same time.")
        if handle is not None and clear_after_read is not None:
            raise ValueError("Cannot provide both `handle` and `clear_after_read` arguments "
                             "at the same time.")
        if clear_after_read is None:
            clear_after_read = True
        self._dynamic_size = bool(dynamic_size)
        self._dtype = dtypes.as_dtype(dtype).base_dtype
        # One shared record of the element shape learnt so far, for every TensorArray object
        # built on this handle (TensorFlow shares the list the same way).
        self._element_shape = [tensor_shape.as_shape(element_shape)
                               if element_shape is not None else tensor_shape.unknown_shape()]
        self._infer_shape = infer_shape
        self._size = size
        self._colocate_with_first_write_call = colocate_with_first_write_call
        with graph_lib.name_scope(name, "TensorArray", [handle, size, flow]) as scope:
            if handle is not None:
                self._handle = handle
                self._flow = flow
            else:
                self._handle, self._flow = apply_op(
                    "TensorArrayV3", size=size, dtype=self._dtype,
                    element_shape=element_shape if element_shape is None else
                    tensor_shape.as_shape(element_shape),
                    identical_element_shapes=infer_shape, dynamic_size=self._dynamic_size,
                    clear_after_read=clear_after_read,
                    tensor_array_name=tensor_array_name or "", name=scope)

    # ---- properties -----------------------------------------------------------------------
    @property
    def flow(self) -> Tensor:
        """The flow tensor ordering the operations on this array."""
        return self._flow

    @property
    def dtype(self):
        return self._dtype

    @property
    def handle(self) -> Tensor:
        return self._handle

    @property
    def element_shape(self) -> tensor_shape.TensorShape:
        return self._element_shape[0]

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic_size

    def _check_element_shape(self, shape) -> None:
        if not shape.is_compatible_with(self.element_shape):
            raise ValueError(f"Inconsistent shapes: saw {shape} but expected "
                             f"{self.element_shape} ")
        if self._infer_shape:
            self._element_shape[0] = self.element_shape.merge_with(shape)

    # ---- operations -----------------------------------------------------------------------
    def identity(self) -> TensorArray:
        """This array with an Identity of its flow (a new point in the ordering)."""
        return build_ta_with_new_flow(self, array_ops.identity(self._flow))

    def grad(self, source: str, flow=None, name: str | None = None) -> TensorArray:
        """The gradient array of this one for gradient source `source`."""
        if flow is None:
            flow = self.flow
        with graph_lib.name_scope(name, "TensorArrayGrad", [self._handle]):
            with graph_lib.colocate_with(self._handle):
                g_handle, _ = apply_op("TensorArrayGradV3", handle=self._handle,
                                       flow_in=flow, source=source,
                                       name=name or "TensorArrayGradV3")
                with graph_lib.control_dependencies([g_handle]):
                    flow = array_ops.identity(flow, name="gradient_flow")
                g = TensorArray(dtype=self._dtype, handle=g_handle, flow=flow,
                                infer_shape=self._infer_shape,
                                colocate_with_first_write_call=False)
                g._element_shape = self._element_shape
                return g

    def read(self, index, name: str | None = None) -> Tensor:
        """Element `index` (freed if clear_after_read)."""
        value = apply_op("TensorArrayReadV3", handle=self._handle, index=index,
                         flow_in=self._flow, dtype=self._dtype,
                         name=name or "TensorArrayReadV3")
        if self.element_shape.ndims is not None:
            value.set_shape(self.element_shape)
        return value

    def write(self, index, value, name: str | None = None) -> TensorArray:
        """This array with `value` written at `index`.

        Raises:
          ValueError: `value`'s shape differs from the element shape (infer_shape).
        """
        with graph_lib.name_scope(name, "TensorArrayWrite", [self._handle, index, value]):
            value = convert_to_tensor(value, preferred_dtype=self._dtype, name="value")
            _check_dtypes(value, self._dtype)
            self._check_element_shape(value.shape)
            flow_out = apply_op("TensorArrayWriteV3", handle=self._handle, index=index,
                                value=value, flow_in=self._flow,
                                name=name or "TensorArrayWriteV3")
            return build_ta_with_new_flow(self, flow_out)

    def stack(self, name: str | None = None) -> Tensor:
        """All elements stacked along a new first dimension."""

        with graph_lib.colocate_with(self._handle), \
                graph_lib.name_scope(name, "TensorArrayStack", [self._handle]):
            value = self.gather(sequence_ops.range(0, self.size()), name=name)
            if self.element_shape.ndims is not None and not self._dynamic_size and \
                    self._size is not None:
                size = common_shapes.constant_value(convert_to_tensor(self._size)) \
                    if isinstance(self._size, Tensor) else self._size
                n = int(size) if size is not None else None
                value.set_shape(tensor_shape.TensorShape([n]).concatenate(self.element_shape))
            return value

    def gather(self, indices, name: str | None = None) -> Tensor:
        """The elements at `indices`, stacked."""
        value = apply_op("TensorArrayGatherV3", handle=self._handle, indices=indices,
                         flow_in=self._flow, dtype=self._dtype,
                         element_shape=self.element_shape if self.element_shape.ndims
                         is not None else None, name=name or "TensorArrayGatherV3")
        if self.element_shape.ndims is not None:
            value.set_shape(tensor_shape.TensorShape([None]).concatenate(self.element_shape))
        return value

    def concat(self, name: str | None = None) -> Tensor:
        """All elements concatenated along their first dimension."""
        es = self.element_shape
        value, _ = apply_op("TensorArrayConcatV3", handle=self._handle, flow_in=self._flow,
                            dtype=self._dtype,
                            element_shape_except0=es[1:] if es.ndims else None,
                            name=name or "TensorArrayConcatV3")
        if es.ndims:
            dim0 = None
            if self._infer_shape:
                size = common_shapes.constant_value(self.size())
                if size is not None and es.as_list()[0] is not None:
                    dim0 = int(size) * es.as_list()[0]
            value.set_shape(tensor_shape.TensorShape([dim0]).concatenate(es[1:]))
        return value

    def unstack(self, value, name: str | None = None) -> TensorArray:
        """This array with the rows of `value` written at 0, 1, ..."""
        with graph_lib.name_scope(name, "TensorArrayUnstack", [self._handle, value]):
            value = convert_to_tensor(value, preferred_dtype=self._dtype, name="value")
            num_elements = array_ops.shape(value)[0]
            return self.scatter(indices=sequence_ops.range(0, num_elements), value=value,
                                name=name)

    def scatter(self, indices, value, name: str | None = None) -> TensorArray:
        """This array with the rows of `value` written at `indices`."""
        with graph_lib.name_scope(name, "TensorArrayScatter",
                                  [self._handle, value, indices]):
            value = convert_to_tensor(value, preferred_dtype=self._dtype, name="value")
            _check_dtypes(value, self._dtype)
            if value.shape.ndims is not None:
                self._check_element_shape(value.shape[1:])
            flow_out = apply_op("TensorArrayScatterV3", handle=self._handle, indices=indices,
                                value=value, flow_in=self._flow,
                                name=name or "TensorArrayScatterV3")
            return build_ta_with_new_flow(self, flow_out)

    def split(self, value, lengths, name: str | None = None) -> TensorArray:
        """This array with `value` split along dimension 0 into pieces of `lengths`."""
        with graph_lib.name_scope(name, "TensorArraySplit", [self._handle, value, lengths]):
            value = convert_to_tensor(value, dtype=self._dtype, name="value")
            lengths_64 = math_ops.cast(lengths, dtypes.int64)
            clengths = common_shapes.constant_value(lengths_64)
            if value.shape.ndims is not None and clengths is not None and \
                    np.size(clengths) and np.max(clengths) == np.min(clengths):
                self._check_element_shape(tensor_shape.TensorShape(
                    [int(np.ravel(clengths)[0])]).concatenate(value.shape[1:]))
            flow_out = apply_op("TensorArraySplitV3", handle=self._handle, value=value,
                                lengths=lengths_64, flow_in=self._flow,
                                name=name or "TensorArraySplitV3")
            return build_ta_with_new_flow(self, flow_out)

    def size(self, name: str | None = None) -> Tensor:
        """The number of elements (a constant unless dynamic_size)."""
        if not self._dynamic_size and self._size is not None:
            return convert_to_tensor(self._size, dtype=dtypes.int32)
        return apply_op("TensorArraySizeV3", handle=self._handle, flow_in=self._flow,
                        name=name or "TensorArraySizeV3")

    def close(self, name: str | None = None):
        """Frees the array's elements."""
        return apply_op("TensorArrayCloseV3", handle=self._handle,
                        name=name or "TensorArrayCloseV3")

    def __repr__(self) -> str:
        return (f"<tf.TensorArray '{self._handle.op.name}' dtype={self._dtype.name} "
                f"element_shape={self.element_shape}>")


class TensorArraySpec(type_spec.TypeSpec):
    """The type of a `tf.TensorArray`: element shape, dtype, whether it grows
    (`dynamic_size`) and whether its elements share one shape (`infer_shape`).
    Compatible specs agree on dtype and `dynamic_size`; `infer_shape` is kept only
    where every spec has it."""

    __slots__ = ("_element_shape", "_dtype", "_dynamic_size", "_infer_shape")

    def __init__(self, element_shape=None, dtype=dtypes.float32, dynamic_size=False,
                 infer_shape=True):
        self._element_shape = tensor_shape.as_shape(element_shape)
        self._dtype = dtypes.as_dtype(dtype)
        self._dynamic_size = dynamic_size
        self._infer_shape = infer_shape

    value_type = property(lambda self: TensorArray)

    def _serialize(self) -> tuple:
        return (self._element_shape, self._dtype, self._dynamic_size, self._infer_shape)

    def is_compatible_with(self, other) -> bool:
        if not isinstance(other, type_spec.TypeSpec):
            other = type_spec.type_spec_from_value(other)
        return isinstance(other, TensorArraySpec) and \
            self._dtype.is_compatible_with(other._dtype) and \
            self._element_shape.is_compatible_with(other._element_shape) and \
            self._dynamic_size == other._dynamic_size

    def is_subtype_of(self, other) -> bool:
        return isinstance(other, TensorArraySpec) and self._dtype == other._dtype and \
            self._dynamic_size == other._dynamic_size

    def most_specific_common_supertype(self, others) -> TensorArraySpec | None:
        others = list(others)
        if not all(isinstance(o, TensorArraySpec) and o._dtype == self._dtype and
                   o._dynamic_size == self._dynamic_size for o in others):
            return None
        shape = self._element_shape.most_specific_common_supertype(
            [o._element_shape for o in others])
        return TensorArraySpec(shape, self._dtype, self._dynamic_size,
                               self._infer_shape and all(o._infer_shape for o in others))

    @staticmethod
    def from_value(value) -> TensorArraySpec:
        """The spec of a TensorArray.

        Raises:
          TypeError: `value` is not one.
        """
        if not isinstance(value, TensorArray):
            raise TypeError(f"Expected value to be a TensorArray, but got: `{type(value)}`")
        return TensorArraySpec(value.element_shape, value.dtype, value.dynamic_size,
                               value._infer_shape)

    @property
    def _component_specs(self):
        """TF2's TensorArray is one variant (a TensorList): what TF's encoding counts."""
        return [TensorSpec([], dtypes.variant)]

    def _to_legacy_output_types(self):
        return self._dtype

    def _to_legacy_output_shapes(self):
        return tensor_shape.TensorShape([int(self._dynamic_size), int(self._infer_shape)]) \
            .concatenate(self._element_shape)

    def _to_legacy_output_classes(self):
        return TensorArray


type_spec.register_type_spec_from_value_converter(TensorArray, TensorArraySpec.from_value,
                                                  allow_subclass=True)
nested_structure_coder.register_type_spec(TensorArraySpec,
                                          struct_pb2.TypeSpecProto.TENSOR_ARRAY_SPEC)


def build_ta_with_new_flow(old_ta: TensorArray, flow: Tensor) -> TensorArray:
    """A TensorArray sharing `old_ta`'s handle and element-shape record, with `flow`."""
    ta = TensorArray.__new__(TensorArray)
    ta._handle = old_ta._handle
    ta._flow = flow
    ta._dtype = old_ta._dtype
    ta._dynamic_size = old_ta._dynamic_size
    ta._element_shape = old_ta._element_shape
    ta._infer_shape = old_ta._infer_shape
    ta._size = old_ta._size
    ta._colocate_with_first_write_call = old_ta._colocate_with_first_write_call
    return ta


# ---- gradients ----------------------------------------------------------------------------


def _grad_source(t) -> str:
    """The gradients() scope a gradient tensor was built in ("gradients", "gradients_1", or
    "outer/gradients"): one gradient TensorArray per forward array and gradients() call."""
    tokens = t.name.split("/")
    positions = [i for i, x in enumerate(tokens) if x.startswith("gradients")]
    if not positions:
        raise ValueError(f"Expected op/tensor name to start with gradients (excluding scope),"
                         f" got: {t.name}")
    return "/".join(tokens[:positions[-1] + 1])


def _forward_ta(op, flow) -> TensorArray:
    return TensorArray(dtype=op.attrs.get("dtype", op.attrs.get("T")), handle=op.inputs[0],
                       flow=flow, colocate_with_first_write_call=False)


def _dense(grad):
    if hasattr(grad, "_is_indexed_slices"):
        return convert_to_tensor(grad)
    return grad


def _read_array_grad(op, flow, grad) -> TensorArray:
    """The gradient array of the array a read-like op (`op`, getting `grad`) read from."""
    return _forward_ta(op, flow).grad(source=_grad_source(grad), flow=flow)


def _written_array_grad(op, flow) -> TensorArray:
    """The gradient array of the array a write-like op (`op`) wrote into."""
    return TensorArray(dtype=op.attrs["T"], handle=op.inputs[0], flow=flow,
                       colocate_with_first_write_call=False).grad(
        source=_grad_source(flow), flow=flow)


@gradient("TensorArrayReadV3")
def _tensor_array_read_grad(op, grad):
    # The forward flow makes the gradient array wait until the forward array's final size
    # is known (dynamic arrays).
    index, flow = op.inputs[1], op.inputs[2]
    g = _read_array_grad(op, flow, grad)
    w_g = g.write(index, _dense(grad))
    return [None, None, w_g.flow]


@gradient("TensorArrayWriteV3")
def _tensor_array_write_grad(op, flow):
    return [None, None, _written_array_grad(op, flow).read(op.inputs[1]), flow]


@gradient("TensorArrayGatherV3")
def _tensor_array_gather_grad(op, grad):
    indices, flow = op.inputs[1], op.inputs[2]
    g = _read_array_grad(op, flow, grad)
    u_g = g.scatter(indices, _dense(grad))
    return [None, None, u_g.flow]


@gradient("TensorArrayScatterV3")
def _tensor_array_scatter_grad(op, flow):
    return [None, None, _written_array_grad(op, flow).gather(op.inputs[1]), flow]


@gradient("TensorArrayConcatV3")
def _tensor_array_concat_grad(op, grad, unused_lengths_grad):
    flow = op.inputs[1]
    lengths = op.outputs[1]
    g = _read_array_grad(op, flow, grad)
    u_g = g.split(_dense(grad), lengths=lengths)
    return [None, u_g.flow]


@gradient("TensorArraySplitV3")
def _tensor_array_split_grad(op, flow):
    return [None, _written_array_grad(op, flow).concat(), None, flow]
