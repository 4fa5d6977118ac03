"""TF1 reference variables: `tf.Variable(use_resource=False)` and the default after
`tf.disable_resource_variables()`.

A RefVariable has the Python API of the resource `Variable` (variables.py) and the graph
TensorFlow 1 builds for it (for `v`):

    v/initial_value or v/Initializer/...   the initial value (the second for a callable)
    v                              VariableV2, output `float32_ref` (`v.op`, `v._ref()`)
    v/Assign                       Assign: `v.initializer`
    v/read                         Identity of the ref: `v.value()`, what reads and tensor
                                   conversion return (one node, shared, as in TF1)

Updates are the reference ops (Assign, AssignAdd, Scatter*, CountUpTo,
IsVariableInitialized; optimizers' Apply*/SparseApply*), each colocated with the variable and
returning its `output_ref`; the ops/state_ops.py and ops/training_ops.py builders choose them
when given a `Ref(T)` tensor, so code written against `v.handle` (optimizers, savers,
metrics) builds TF1's graph. At run time a ref is the variable's ResourceHandle and a
consumer that wants a value reads it through `_RefRead` (runtime/step_graph.py), as cheap
as a ReadVariableOp (no copy).

`handle` returns the ref tensor: TensorFlow's RefVariable has no handle, but tensorflux's
own libraries colocate with and update through `v.handle`.
"""

from __future__ import annotations

from tensorflux.framework import graph as graph_lib
from tensorflux.framework import tensor_shape
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.operation import Operation, Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops
from tensorflux.variables import variables
from tensorflux.variables.variables import (
    _colocate_new_ops,
    _init_scope,
)

__all__: list[str] = []


class RefVariable(variables.Variable):
    """A TF1 reference variable (VariableV2); see the module docstring."""

    def _init_from_args(self, initial_value, trainable, collections, validate_shape,
                        caching_device, name, dtype, constraint, synchronization,
                        aggregation, shape):
        init_from_fn = callable(initial_value)
        collections = variables._checked_collections(initial_value, trainable, collections,
                                                     constraint)
        g = graph_lib.get_graph_from_inputs([] if init_from_fn else [initial_value])
        with _init_scope(g), graph_lib.name_scope(
                name, "Variable", [] if init_from_fn else [initial_value]) as scope:
            true_name = scope[:-1]
            first_op = len(g._ops)
            if init_from_fn:
                # TF1 puts the initializer ops and the VariableV2 in the variable's
                # colocation group (an `_attr_scope({"_class": ...})`).
                with graph_lib.name_scope("Initializer"), g.device(None):
                    initial_value = convert_to_tensor(initial_value(), dtype=dtype,
                                                      name="initial_value")
            else:
                initial_value = convert_to_tensor(initial_value, dtype=dtype,
                                                  name="initial_value")
                if variables._in_control_flow(initial_value):
                    raise ValueError(
                        f"Initializer for variable {scope} is from inside a control-flow "
                        f"construct, such as a loop or conditional. When creating a variable "
                        f"inside a loop or conditional, use a lambda as the initializer.")
            static = variables._static_shape(initial_value, shape)
            if not validate_shape:  # assignments may change the shape: none is known
                static = tensor_shape.unknown_shape()
            base = initial_value.dtype.base_dtype
            ref = apply_op("VariableV2", shape=static, dtype=base, name=scope)
            if init_from_fn:
                _colocate_new_ops(g, first_op, f"loc:@{true_name}")
            self._set_common(ref, base, static, trainable, constraint, synchronization,
                             aggregation)
            self._validate_shape = bool(validate_shape)
            self._initial_value = initial_value
            self._initializer_op = apply_op("Assign", ref=ref, value=initial_value,
                                            validate_shape=bool(validate_shape),
                                            name="Assign").op
            self._is_initialized_op = None
            self._caching_device = caching_device
            if caching_device is not None:
                with g.colocate_with(None, ignore_existing=True), g.device(caching_device):
                    self._graph_element = array_ops.identity(ref, name="read")
            else:
                with g.colocate_with(ref.op):
                    self._graph_element = array_ops.identity(ref, name="read")
            g.add_to_collections(collections, self)

    def _imported_read(self):
        """`<name>/read` for a RefVariable re-created from a VariableDef without a
        snapshot (Variable._init_from_proto does the rest)."""
        ref = self._handle
        with ref.graph.colocate_with(ref.op):
            return array_ops.identity(ref, name=ref.op.name + "/read")

    def __bool__(self):
        # TF1's RefVariable has no truth test of its own: like any object it is true
        # (`if not step_tensor:` in TF1 libraries); resource variables refuse, as in TF.
        return True

    def __repr__(self) -> str:
        return f"<tf.Variable '{self.name}' shape={self._shape} dtype={self._dtype.name}_ref>"

    @property
    def op(self) -> Operation:
        """The VariableV2."""
        return self._handle.op

    # ---- reading ------------------------------------------------------------------------
    def _read_variable_op(self) -> Tensor:
        return array_ops.identity(self._handle, name="read")

    def value(self) -> Tensor:
        """The variable's snapshot, "v/read" (the same tensor every call, as in TF1)."""
        return self._graph_element

    def read_value(self) -> Tensor:
        """A new read: an Identity of the ref named "read" in the caller's scope."""
        return array_ops.identity(self._handle, name="read")

    def _as_graph_element(self) -> Tensor:
        """The ref tensor, as TF1's RefVariable (a fetch of it reads the variable)."""
        return self._handle

    def _ref(self) -> Tensor:
        """The variable's `Ref(T)` tensor (VariableV2's output)."""
        return self._handle

    def _lazy_read(self, op: Operation) -> Tensor:
        """What TF1's update methods return: the update's `output_ref`."""
        return op.outputs[0]

    @property
    def sparse_read(self):
        """TF1 reference variables have no `sparse_read` (`tf.gather` reads the snapshot).

        Raises:
          AttributeError: always, as TensorFlow's RefVariable.
        """
        raise AttributeError("'RefVariable' object has no attribute 'sparse_read'")

    def eval(self, session=None):
        return self._graph_element.eval(session=session)

    @staticmethod
    def from_proto(variable_def, import_scope=None) -> RefVariable:
        return RefVariable(variable_def=variable_def, import_scope=import_scope)


def _ref_var_to_tensor(var: RefVariable, dtype=None, name=None, as_ref=False) -> Tensor:
    if as_ref:
        return var._ref()
    return variables._dense_var_to_tensor(var, dtype=dtype, name=name)


variables.register_tensor_conversion_function(RefVariable, _ref_var_to_tensor)
