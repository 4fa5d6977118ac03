"""Operation and Tensor: the nodes and edges of a Graph.

An Operation is immutable once its graph has handed it out, apart from what TensorFlow also
lets change later: its device, extra control inputs, and private attributes set by library
code. Each change bumps `graph._mutation_version`, which invalidates Sessions' cached steps.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tensorflux.framework import attr_values, dtypes, graph_io, tensor_shape

if TYPE_CHECKING:
    from tensorflux.framework.graph import Graph
    from tensorflux.framework.op_registry import OpDef

# Tensor.eval and Operation.run need a session, and sessions belong to the runtime, a layer
# above framework. The runtime registers its runner here when it is imported
# (runtime/session.py: `run_in_session`), so framework imports nothing above it.
_session_runner: Callable[[Any, Any, Any], Any] | None = None


def register_session_runner(runner: Callable[[Any, Any, Any], Any]) -> None:
    """Sets `runner(element, feed_dict, session)`, what `eval()`/`run()` call."""
    global _session_runner
    _session_runner = runner


def run_in_session(element, feed_dict=None, session=None):
    """Runs `element` (a Tensor, Operation or composite) through the registered runner."""
    if _session_runner is None:
        raise RuntimeError("No session runtime is loaded: import tensorflux first")
    return _session_runner(element, feed_dict, session)


_PACKAGE_DIR = __file__.rsplit("/framework/", 1)[0]
_TRACEBACK_DEPTH = 6


def _creation_stack() -> tuple[tuple[str, int, str], ...]:
    """The innermost user frames (outside tensorflux) as (filename, lineno, function),
    outermost first.

    Cheaper than `traceback.extract_stack` by an order of magnitude: no source lines are read
    until an error is formatted.
    """
    frame = sys._getframe(2)
    out = []
    while frame is not None and len(out) < _TRACEBACK_DEPTH:
        code = frame.f_code
        if not code.co_filename.startswith(_PACKAGE_DIR):
            out.append((code.co_filename, frame.f_lineno, code.co_name))
        frame = frame.f_back
    return tuple(reversed(out))  # outermost first, as TF's Operation.traceback


class Tensor:
    """A symbolic handle to one output of an Operation (`"op_name:index"`)."""

    # `__dict__`: programs and libraries hang their own attributes on tensors (tflearn's
    # `tensor.scope`), as TensorFlow's Tensor allows; created only when one is set.
    __slots__ = ("_op", "_value_index", "_dtype", "_shape", "_consumers", "_name", "__weakref__",
                 "__dict__")

    # Python operators (`+`, `[]`, ...) are installed by the op modules through
    # `_override_operator`, the way TensorFlow keeps ops/ out of the framework.
    _OVERLOADABLE = frozenset((
        "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__div__",
        "__rdiv__", "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__",
        "__rmod__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__lt__", "__le__",
        "__gt__", "__ge__", "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__",
        "__invert__", "__neg__", "__abs__", "__getitem__",
    ))

    # NumPy defers to our reflected operators: `np.ones(3) + t` is `t.__radd__(...)`.
    __array_priority__ = 100
    __array_ufunc__ = None

    def __init__(self, op: Operation, value_index: int, dtype: dtypes.DType):
        self._op = op
        self._value_index = value_index
        self._dtype = dtype
        self._shape = tensor_shape.unknown_shape()
        self._consumers: list[Operation] = []
        self._name = None

    @classmethod
    def _override_operator(cls, name: str, fn) -> None:
        if name not in cls._OVERLOADABLE:
            raise ValueError(f"Overriding {name} is not allowed")
        setattr(cls, name, fn)

    @property
    def op(self) -> Operation:
        return self._op

    @property
    def graph(self) -> Graph:
        return self._op._graph

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def name(self) -> str:
        if self._name is None:
            self._name = f"{self._op._name}:{self._value_index}"
        return self._name

    @property
    def value_index(self) -> int:
        return self._value_index

    @property
    def device(self) -> str:
        return self._op.device

    @property
    def shape(self) -> tensor_shape.TensorShape:
        return self._shape

    def _shape_tuple(self):
        """The static shape as a tuple (None for unknown dims), or None for an unknown rank
        (TF's private helper, which libraries call)."""
        shape = self.shape
        return None if shape.ndims is None else tuple(shape.as_list())

    def _shape_as_list(self):
        shape = self.shape
        return None if shape.ndims is None else shape.as_list()

    def _rank(self):
        return self.shape.ndims

    def get_shape(self) -> tensor_shape.TensorShape:
        return self._shape

    def set_shape(self, shape) -> None:
        """Merges `shape` into the static shape of this tensor.

        Raises:
          ValueError: `shape` is not compatible with the current static shape.
        """
        self._shape = self._shape.merge_with(tensor_shape.as_shape(shape))

    def consumers(self) -> list[Operation]:
        return list(self._consumers)

    def eval(self, feed_dict=None, session=None):
        """Runs the graph up to this tensor in `session` (default: the default session)."""
        return run_in_session(self, feed_dict, session)

    def __repr__(self) -> str:
        return f"<tf.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    def __str__(self) -> str:
        return f'Tensor("{self.name}", shape={self._shape}, dtype={self._dtype.name})'

    __hash__ = object.__hash__  # TF1 tensors compare by identity

    def __bool__(self):
        raise TypeError(
            "Using a `tf.Tensor` as a Python `bool` is not allowed. Use `if t is not None:` "
            "instead of `if t:` to test if a tensor is defined, and use TensorFlow ops such "
            "as tf.cond to execute subgraphs conditioned on the value of a tensor.")

    def __iter__(self):
        raise TypeError(
            "Tensor objects are only iterable when eager execution is enabled. To iterate "
            "over this tensor use tf.map_fn.")

    def __len__(self):
        raise TypeError(
            f"len is not well defined for symbolic Tensors. ({self.name}) Please call "
            "`x.shape` rather than `len(x)` for shape information.")

    def __array__(self, dtype=None, copy=None):
        raise NotImplementedError(
            f"Cannot convert a symbolic Tensor ({self.name}) to a numpy array.")

    # A Tensor is never copied: fetches, feeds and graph maps key on its identity.
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


class Operation:
    """A node in a Graph: an op type applied to input tensors, with attributes.

    Attributes are held as Python values (`DType`, `TensorShape`, `str`, `int`, `float`,
    `bool`, NumPy arrays for tensors, lists of these); `get_attr` returns them in
    TensorFlow's public forms (bytes for strings, protos for shapes and tensors).
    """

    __slots__ = (
        "_graph", "_name", "_type", "_op_def", "_inputs", "_control_inputs", "_outputs",
        "_attrs", "_device", "_id", "_traceback", "_control_flow_context", "_original_op",
        "__weakref__", "__dict__",  # a program's own attributes, as on TF's Operation
    )

    def __init__(self, graph: Graph, name: str, op_type: str, op_def: OpDef | None,
                 inputs: tuple[Tensor, ...], output_dtypes: list[dtypes.DType],
                 attrs: dict[str, Any], control_inputs: list[Operation], op_id: int):
        self._graph = graph
        self._name = name
        self._type = op_type
        self._op_def = op_def
        self._inputs = inputs
        self._control_inputs = control_inputs
        self._attrs = attrs
        self._device = ""
        self._id = op_id
        self._traceback = _creation_stack()
        self._control_flow_context = None
        self._original_op = None
        self._outputs = tuple(Tensor(self, i, dt) for i, dt in enumerate(output_dtypes))

    # ---- identity -----------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def type(self) -> str:
        return self._type

    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def op_def(self):
        return self._op_def.to_proto() if self._op_def is not None else None

    @property
    def traceback(self):
        return list(self._traceback)

    # ---- edges --------------------------------------------------------------------------
    @property
    def inputs(self) -> tuple[Tensor, ...]:
        return self._inputs

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        return self._outputs

    def values(self) -> tuple[Tensor, ...]:
        return self._outputs

    @property
    def control_inputs(self) -> list[Operation]:
        return list(self._control_inputs)

    @property
    def _control_outputs(self) -> list[Operation]:
        return [op for op in self._graph._ops if self in op._control_inputs]

    def _add_control_input(self, op: Operation) -> None:
        if op not in self._control_inputs:
            self._control_inputs.append(op)
            self._graph._mutation_version += 1

    def _add_control_inputs(self, ops) -> None:
        for op in ops:
            self._add_control_input(op)

    def _remove_all_control_inputs(self) -> None:
        """Drops every control input (library use: the graph editor)."""
        if self._control_inputs:
            self._control_inputs = []
            self._graph._mutation_version += 1

    def _update_input(self, index: int, tensor: Tensor, update_dtype: bool = True) -> None:
        """Rewires input `index` to `tensor` (library use: control flow, import, the graph
        editor). `update_dtype` is accepted for TF's signature; the input keeps no dtype of
        its own here.

        Raises:
          TypeError: `tensor` is not a Tensor.
          ValueError: `tensor` is from another graph.
        """
        del update_dtype
        if not isinstance(tensor, Tensor):
            raise TypeError(f"tensor must be a Tensor: {tensor!r}")
        if tensor.graph is not self._graph:
            raise ValueError(f"Tensor {tensor.name} must be from the same graph as "
                             f"operation {self._name}.")
        old = self._inputs[index]
        old._consumers.remove(self)
        inputs = list(self._inputs)
        inputs[index] = tensor
        self._inputs = tuple(inputs)
        tensor._consumers.append(self)
        self._graph._mutation_version += 1

    # ---- placement ----------------------------------------------------------------------
    @property
    def device(self) -> str:
        return self._device

    def _set_device(self, device) -> None:
        self._device = device if isinstance(device, str) else device.to_string()
        self._graph._mutation_version += 1

    def colocation_groups(self) -> list[bytes]:
        classes = [c for c in self._attrs.get("_class", ()) if c.startswith("loc:@")]
        return [c.encode() for c in classes] or [f"loc:@{self._name}".encode()]

    # ---- attributes ---------------------------------------------------------------------
    @property
    def attrs(self) -> dict[str, Any]:
        """Attribute values in tensorflux's internal Python form (read-only by convention)."""
        return self._attrs

    def get_attr(self, name: str):
        """The value of attribute `name`, in TensorFlow's public form.

        Raises:
          ValueError: the op has no such attribute.
        """
        if name not in self._attrs:
            raise ValueError(f"Operation '{self._name}' has no attr named '{name}'.")
        return attr_values.to_public(self._attrs[name], self._attr_kind(name))

    def _attr_kind(self, name: str) -> str | None:
        if self._op_def is not None and name in self._op_def.attrs:
            return self._op_def.attrs[name].kind
        return None

    def _set_attr(self, name: str, value) -> None:
        self._attrs[name] = value
        self._graph._mutation_version += 1

    @property
    def node_def(self):
        """This operation as a `node_def_pb2.NodeDef` message."""
        return graph_io.node_def_of(self)

    # ---- running ------------------------------------------------------------------------
    def run(self, feed_dict=None, session=None) -> None:
        """Runs this operation in `session` (default: the default session)."""
        run_in_session(self, feed_dict, session)

    def __repr__(self) -> str:
        """Reads like a GraphDef line: `name = Type[attr=value, ...](inputs, ^controls)`."""
        attrs = ", ".join(f"{k}={_short(v)}" for k, v in sorted(self._attrs.items()))
        args = [t.name for t in self._inputs] + ["^" + c._name for c in self._control_inputs]
        dev = f" @{self._device}" if self._device else ""
        return f"{self._name} = {self._type}[{attrs}]({', '.join(args)}){dev}"

    __hash__ = object.__hash__


def _short(value) -> str:
    if isinstance(value, dtypes.DType):
        return value.name
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"<{value.dtype} {list(value.shape)}>"
    return repr(value)
