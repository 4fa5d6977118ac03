"""`tf.Variable`: TF1's variable API, backed by resource variables (TF1 reference variables,
VariableV2, are ref_variable.RefVariable: `use_resource=False` or
`tf.disable_resource_variables()`; `_variable_class` below picks the class).

A Variable owns a handful of graph nodes, named as TensorFlow names them (for `v`):

    v/Initializer/...              the initial value (ops of a callable initial value too),
                                   colocated with the handle through `_class: loc:@v`
    v                              VarHandleOp: the handle (shared_name "v")
    v/IsInitialized/VarIsInitializedOp
    v/Assign                       AssignVariableOp: `v.initializer`
    v/Read/ReadVariableOp          the read `sess.run(v)` fetches (`v._graph_element`)

`value()` and tensor conversion make a fresh ReadVariableOp each call, as TensorFlow does in
graph mode; `assign*` and `scatter_*` return a read that runs after the update (or the update
op itself with `read_value=False`). Reads are snapshots (see kernels/cpu/state_ops.py).
Python operators (`v + 1`, `v[0]`, `-v`) read the value and apply the Tensor operator.
"""

from __future__ import annotations

import contextlib
import enum
import inspect

from tensorflux.control_flow import builders
from tensorflux.framework import dtypes, meta_graph, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.framework.operation import Operation, Tensor
from tensorflux.framework.tensor_conversion import (
    convert_to_tensor,
    register_tensor_conversion_function,
)
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    constant_op,
    control_flow_ops,
    joining_ops,
    slicing_ops,
    state_ops,
)
from tensorflux.protos import variable_pb2
from tensorflux.runtime import session as session_lib

# The TF1 public names of this module.
__all__ = ["Variable", "VariableSynchronization", "VariableAggregation", "global_variables",
           "all_variables", "trainable_variables", "local_variables", "model_variables",
           "moving_average_variables", "variables_initializer", "initialize_variables",
           "global_variables_initializer", "initialize_all_variables",
           "local_variables_initializer", "initialize_local_variables",
           "report_uninitialized_variables", "is_variable_initialized"]


class VariableSynchronization(enum.Enum):
    """When a distributed variable is aggregated (`tf.VariableSynchronization`)."""

    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


class VariableAggregation(enum.Enum):
    """How a distributed variable's updates are combined (`tf.VariableAggregation`)."""

    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3
    ONLY_FIRST_TOWER = 3  # TF1's name (an alias of ONLY_FIRST_REPLICA)


def _validate_distribution_args(synchronization, aggregation, trainable):
    synchronization = VariableSynchronization.AUTO if synchronization is None else \
        VariableSynchronization(synchronization)
    aggregation = VariableAggregation.NONE if aggregation is None else \
        VariableAggregation(aggregation)
    if trainable is None:
        trainable = synchronization != VariableSynchronization.ON_READ
    elif trainable and synchronization == VariableSynchronization.ON_READ:
        raise ValueError("Synchronization value can be set to VariableSynchronization.ON_READ "
                         "only for non-trainable variables. You have specified trainable=True "
                         "and synchronization=VariableSynchronization.ON_READ.")
    return synchronization, aggregation, bool(trainable)


@contextlib.contextmanager
def _init_scope(g: graph_lib.Graph):
    """Variable creation escapes enclosing control dependencies and control-flow contexts
    (TF's `init_scope` in graph mode); the name and device scopes stay."""
    saved_ctx = g._get_control_flow_context()
    g._set_control_flow_context(None)
    try:
        with g.as_default(), g.control_dependencies(None):
            yield
    finally:
        g._set_control_flow_context(saved_ctx)


def _in_control_flow(initial_value) -> bool:
    """Whether `initial_value` was made inside a while loop or cond (where no variable's
    initializer can read it: TF refuses such a variable)."""
    op = getattr(initial_value, "op", None)
    return op is not None and getattr(op, "_control_flow_context", None) is not None


def _static_shape(initial_value, shape):
    """The variable's static shape: `shape` when given (ValueError if the initial value's
    shape is not compatible with it), else the initial value's."""
    if shape is None:
        return initial_value.shape
    static = tensor_shape.as_shape(shape)
    if not initial_value.shape.is_compatible_with(static):
        raise ValueError("In this `tf.Variable` creation, the initial value's shape "
                         f"({initial_value.shape}) is not compatible with the explicitly "
                         f"supplied `shape` argument ({shape}).")
    return static


def _colocate_new_ops(g: graph_lib.Graph, first: int, group: str) -> None:
    """Puts ops created since op index `first` in colocation group `group` (TF does this with
    an `_attr_scope({"_class": ...})` around the initial value)."""
    for op in g._ops[first:]:
        if "_class" not in op._attrs:
            op._set_attr("_class", [group])


class _VariableMeta(type):
    """Sends `Variable(...)` through the default graph's variable creators, innermost first
    (`tf.variable_creator_scope` pushes them on `graph._variable_creator_stack`); each
    creator gets `next_creator` and the constructor's arguments as keywords."""

    def __call__(cls, *args, **kwargs):
        stack = getattr(graph_lib.get_default_graph(), "_variable_creator_stack", None)
        if not stack:
            return _construct(cls, args, kwargs)
        kwargs.update(zip(_VARIABLE_ARGS, args, strict=False))

        def next_creator(level):
            if level < 0:
                return lambda **kw: _construct(cls, (), kw)
            return lambda **kw: stack[level](next_creator(level - 1), **kw)

        return next_creator(len(stack) - 1)(**kwargs)


# TF's `_DEFAULT_USE_RESOURCE`: what `tf.Variable` makes when neither `use_resource` nor the
# variable scope says (tf.disable_resource_variables / enable_resource_variables set it).
_default_use_resource = True


def set_default_use_resource(use_resource: bool) -> None:
    """Makes `tf.Variable`/`tf.get_variable` default to resource (True) or TF1 reference
    (False) variables, process-wide (compat/switches.py's `disable_resource_variables`)."""
    global _default_use_resource
    _default_use_resource = bool(use_resource)


def default_use_resource() -> bool:
    """Whether variables default to resource variables (`tf.resource_variables_enabled`)."""
    return _default_use_resource


def _construct(cls, args, kwargs):
    """`cls(*args, **kwargs)` of the class `_variable_class` picks. A resource variable whose
    kind came from the process default stands where TF1 makes a reference variable, and
    answers Python's truth test as one (`_tf1_truth`)."""
    chosen, by_default = _variable_class(cls, args, kwargs)
    variable = type.__call__(chosen, *args, **kwargs)
    if by_default and chosen is Variable:
        variable._tf1_truth = True
    return variable


def _variable_class(cls, args, kwargs):
    """The class `Variable(...)` makes, as TF1's default variable creator decides:
    a VariableDef's `is_resource`, else `use_resource`, else the variable scope's, else the
    process default; and whether the process default decided. Subclasses other than
    Variable itself are made as asked."""
    if cls is not Variable:
        return cls, False
    by_default = False
    bound = dict(zip(_VARIABLE_ARGS, args, strict=False), **kwargs)
    variable_def = bound.get("variable_def")
    if variable_def is not None:
        if isinstance(variable_def, bytes):
            variable_def = variable_pb2.VariableDef.FromString(variable_def)
        use_resource = variable_def.is_resource
    else:
        use_resource = bound.get("use_resource")
        if use_resource is None:
            from tensorflux.variables import variable_scope
            use_resource = variable_scope.get_variable_scope().use_resource
        if use_resource is None:
            use_resource, by_default = _default_use_resource, True
    if use_resource:
        return Variable, by_default
    from tensorflux.variables import ref_variable
    return ref_variable.RefVariable, by_default



def _checked_collections(initial_value, trainable, collections, constraint) -> list:
    """The collections a new variable joins (TRAINABLE_VARIABLES added when trainable),
    after checking the constructor's arguments as TensorFlow does.

    Raises:
      ValueError: no initial value, collections that are not a list/tuple/set, or a
        constraint that is not callable."""
    if initial_value is None:
        raise ValueError("The `initial_value` arg to `tf.Variable` must be specified "
                         "except when you are not providing a `variable_def`. You "
                         "provided neither.")
    if collections is None:
        collections = [GraphKeys.GLOBAL_VARIABLES]
    if not isinstance(collections, (list, tuple, set)):
        raise ValueError("collections argument to Variable constructor must be a list, "
                         f"tuple, or set. Got {collections} of type {type(collections)}")
    if constraint is not None and not callable(constraint):
        raise ValueError(f"The `constraint` argument must be a callable. Got {constraint} "
                         f"of type {type(constraint)}")
    if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
        collections = list(collections) + [GraphKeys.TRAINABLE_VARIABLES]
    return collections

class Variable(metaclass=_VariableMeta):
    """A variable: state that persists across `Session.run` calls (`tf.Variable`).

    Args:
      initial_value: a Tensor or Python value, or a callable with no arguments returning one;
        the variable's dtype and (unless `shape` is given) shape come from it.
      trainable: also add the variable to TRAINABLE_VARIABLES (default True, False for
        ON_READ synchronization).
      collections: graph collections to add it to (default [GLOBAL_VARIABLES]).
      validate_shape: False lets assignments change the shape.
      caching_device: where `value()` reads are cached (an Identity on that device).
      name: the variable's name (made unique; default "Variable").
      variable_def: a VariableDef proto to re-create a variable already in the graph.
      dtype: the dtype the initial value is converted to.
      expected_shape: ignored (TF1 resource variables ignore it too).
      import_scope: the name scope prefixed to `variable_def`'s names.
      constraint: a projection function an optimizer applies after updates.
      use_resource: False makes a TF1 reference variable (ref_variable.RefVariable:
        VariableV2); None takes the variable scope's, then the process default
        (resource variables unless `tf.disable_resource_variables()` ran).
      synchronization, aggregation: distribution hints (VariableSynchronization/Aggregation).
      shape: the variable's static shape, if it should differ from the initial value's.

    Raises:
      ValueError: no initial value, a bad `collections` or `constraint`, an initial value
        whose shape conflicts with `shape`, or a dtype conversion that fails.
    """

    __array_priority__ = 100  # NumPy defers `ndarray op Variable` to our reflected operators
    _is_resource_variable = True  # tf.gradients differentiates with respect to the handle

    def __init__(self, initial_value=None, trainable=None, collections=None,
                 validate_shape=True, caching_device=None, name=None, variable_def=None,
                 dtype=None, expected_shape=None, import_scope=None, constraint=None,
                 use_resource=None, synchronization=VariableSynchronization.AUTO,
                 aggregation=VariableAggregation.NONE, shape=None):
        del expected_shape, use_resource
        if variable_def is not None:
            if initial_value is not None:
                raise ValueError("variable_def and initial_value are mutually exclusive.")
            self._init_from_proto(variable_def, import_scope)
            return
        synchronization, aggregation, trainable = _validate_distribution_args(
            synchronization, aggregation, trainable)
        self._init_from_args(initial_value, trainable, collections, validate_shape,
                             caching_device, name, dtype, constraint, synchronization,
                             aggregation, shape)

    # ---- construction -------------------------------------------------------------------
    def _init_from_args(self, initial_value, trainable, collections, validate_shape,
                        caching_device, name, dtype, constraint, synchronization,
                        aggregation, shape):
        init_from_fn = callable(initial_value)
        collections = _checked_collections(initial_value, trainable, collections, constraint)
        g = graph_lib.get_graph_from_inputs([] if init_from_fn else [initial_value])
        with _init_scope(g), graph_lib.name_scope(
                name, "Variable", [] if init_from_fn else [initial_value]) as scope:
            handle_name = scope[:-1]
            first_op = len(g._ops)
            with graph_lib.name_scope("Initializer"), g.device(None):
                value = initial_value() if init_from_fn else initial_value
                initial_value = convert_to_tensor(value, dtype=dtype, name="initial_value")
            _colocate_new_ops(g, first_op, f"loc:@{handle_name}")
            if _in_control_flow(initial_value):
                raise ValueError(
                    f"The `initial_value` passed to `tf.Variable` {scope} is from inside a "
                    f"control-flow  construct, such as a loop or conditional. When creating "
                    f"a `tf.Variable` inside a loop or conditional, use a lambda as the "
                    f"`initial_value`. Got: initial_value=({initial_value})")
            static = _static_shape(initial_value, shape)
            if not validate_shape:  # assignments may change the shape: none is known
                static = tensor_shape.unknown_shape()
            handle = state_ops.var_handle_op(
                dtype=initial_value.dtype.base_dtype, shape=static, shared_name=handle_name,
                debug_name=scope, name=scope)
            self._set_common(handle, initial_value.dtype.base_dtype, static, trainable,
                             constraint, synchronization, aggregation)
            self._validate_shape = bool(validate_shape)
            self._initial_value = initial_value
            with graph_lib.name_scope("IsInitialized"):
                self._is_initialized_op = state_ops.var_is_initialized_op(handle)
            with graph_lib.name_scope("Assign") as n, \
                    g.colocate_with(None, ignore_existing=True), g.device(handle.device):
                self._initializer_op = state_ops.assign_variable_op(handle, initial_value,
                                                                    name=n)
            with graph_lib.name_scope("Read"), g.device(handle.device):
                self._graph_element = self._read_variable_op()
            self._caching_device = caching_device
            if caching_device is not None:
                with g.colocate_with(None, ignore_existing=True), g.device(caching_device):
                    self._cached_value = array_ops.identity(self._graph_element)
            g.add_to_collections(collections, self)

    def _set_common(self, handle, dtype, shape, trainable, constraint, synchronization,
                    aggregation) -> None:
        self._handle = handle
        self._dtype = dtype
        self._shape = shape
        self._trainable = trainable
        self._constraint = constraint
        self._synchronization = synchronization
        self._aggregation = aggregation
        self._cached_value = None
        self._caching_device = None
        self._save_slice_info = None
        self._validate_shape = True

    def _init_from_proto(self, variable_def, import_scope=None) -> None:
        """Re-creates a Variable whose ops are already in the default graph."""
        if isinstance(variable_def, bytes):
            variable_def = variable_pb2.VariableDef.FromString(variable_def)
        g = graph_lib.get_default_graph()

        def element(name):
            return g.as_graph_element(_prepend_name_scope(name, import_scope))

        handle = element(variable_def.variable_name)
        shape = handle.op.attrs.get("shape")
        self._set_common(handle, handle.op.attrs["dtype"],
                         tensor_shape.as_shape(shape) if shape is not None
                         else tensor_shape.unknown_shape(),
                         variable_def.trainable,
                         None, VariableSynchronization(variable_def.synchronization),
                         VariableAggregation(variable_def.aggregation))
        self._initializer_op = element(variable_def.initializer_name)
        self._initial_value = element(variable_def.initial_value_name) \
            if variable_def.initial_value_name else None
        self._graph_element = element(variable_def.snapshot_name) \
            if variable_def.snapshot_name else self._imported_read()
        self._is_initialized_op = None

    def _imported_read(self):
        """The value tensor of a variable re-created from a VariableDef without one."""
        return self._read_variable_op()

    # ---- identity -----------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The handle's tensor name, e.g. "v:0"."""
        return self._handle.name

    @property
    def op(self) -> Operation:
        """The VarHandleOp."""
        return self._handle.op

    @property
    def handle(self) -> Tensor:
        """The `resource` tensor naming this variable."""
        return self._handle

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def shape(self) -> tensor_shape.TensorShape:
        return self._shape

    def get_shape(self) -> tensor_shape.TensorShape:
        return self._shape

    @property
    def device(self) -> str:
        return self._handle.device

    @property
    def graph(self) -> graph_lib.Graph:
        return self._handle.graph

    @property
    def initializer(self) -> Operation:
        """The AssignVariableOp that stores the initial value ("v/Assign")."""
        return self._initializer_op

    @property
    def create(self) -> Operation:
        return self._initializer_op

    @property
    def initial_value(self) -> Tensor:
        return self._initial_value

    @property
    def constraint(self):
        return self._constraint

    @property
    def trainable(self) -> bool:
        return self._trainable

    @property
    def synchronization(self) -> VariableSynchronization:
        return self._synchronization

    @property
    def aggregation(self) -> VariableAggregation:
        return self._aggregation

    @property
    def _shared_name(self) -> str:
        return self.name[:self.name.index(":")]

    @property
    def _unique_id(self) -> str:
        return self._shared_name

    @property
    def _in_graph_mode(self) -> bool:
        return True

    def _should_act_as_resource_variable(self) -> None:
        """Marks this class as a resource variable for code that asks (TF's duck type)."""

    def _as_graph_element(self) -> Tensor:
        """What `sess.run(v)` fetches: the read made when the variable was built."""
        return self._graph_element

    def _ref(self) -> Tensor:
        """The handle (resource variables have no reference tensor)."""
        return self._handle

    def _get_save_slice_info(self):
        return self._save_slice_info

    def _set_save_slice_info(self, save_slice_info) -> None:
        self._save_slice_info = save_slice_info

    def __repr__(self) -> str:
        return f"<tf.Variable '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    # ---- reading ------------------------------------------------------------------------
    def _read_variable_op(self) -> Tensor:
        return state_ops.read_variable_op(self._handle, self._dtype)

    def value(self) -> Tensor:
        """A new read of the variable (the cached read with a `caching_device`).

        The read has no device of its own (colocation and device scopes are both reset, as
        TF's `colocate_with(None, ignore_existing=True)` does): the placer puts it with the
        handle, wherever that is (a parameter server under `replica_device_setter`).
        """
        if self._cached_value is not None:
            return self._cached_value
        with self.graph.colocate_with(None, ignore_existing=True):
            return self._read_variable_op()

    def read_value(self) -> Tensor:
        """A new read ("Read/ReadVariableOp") behind an Identity placed by the caller's
        device scope."""
        with graph_lib.name_scope("Read"):
            value = self._read_variable_op()
        return array_ops.identity(value)

    def _lazy_read(self, op: Operation) -> Tensor:
        """A read that runs after `op` (the value an update returns), marked as TF's
        _UnreadVariable is, so that `tf.assign*` given it update this variable after `op`
        (ops/state_ops.py, chained updates)."""
        with self.graph.control_dependencies([op]):
            value = self._read_variable_op()
        value._updated_variable = (self, op)
        return value

    def sparse_read(self, indices, name: str | None = None) -> Tensor:
        """Rows `indices` of the variable (ResourceGather)."""
        with graph_lib.name_scope("Gather" if name is None else name) as scope:
            value = state_ops.resource_gather(self._handle, indices, self._dtype, name=scope)
        return array_ops.identity(value)

    def initialized_value(self) -> Tensor:
        """The variable's value, initializing it first if needed.

        With `tf.cond` available this is TF1's `cond(is_initialized, read, initial_value)`;
        until then the read runs after the initializer (TF's original behaviour), which
        re-runs the initializer whenever the result is evaluated.
        """
        with _init_scope(self.graph):
            return builders.cond(is_variable_initialized(self), self.read_value,
                                 lambda: self.initial_value)

    def is_initialized(self, name: str | None = None) -> Tensor:
        """A bool scalar tensor: whether the variable has been initialized."""
        return state_ops.var_is_initialized_op(self._handle, name=name)

    def eval(self, session=None):
        """The variable's value in `session` (default: the default session)."""
        return self._graph_element.eval(session=session)

    def load(self, value, session=None) -> None:
        """Stores `value` by running the initializer with its initial value fed."""
        session = session or session_lib.get_default_session()
        if session is None:
            raise ValueError("Either session argument should be provided or default session "
                             "should be established")
        session.run(self._initializer_op, {self._initializer_op.inputs[1]: value})

    # ---- updating -----------------------------------------------------------------------
    def _convert(self, value) -> Tensor:
        return convert_to_tensor(value, dtype=self._dtype)

    def assign(self, value, use_locking=None, name=None, read_value=True):
        """Stores `value`; returns the updated value (or the op with `read_value=False`).

        Raises:
          ValueError: `value` has a static shape incompatible with the variable's, or
            another dtype.
        """
        value = self._convert(value)
        if not self._shape.is_compatible_with(value.shape):
            raise ValueError(f"Cannot assign value to variable ' {self.name}': Shape mismatch."
                             f"The variable shape {self._shape}, and the assigned value shape "
                             f"{value.shape} are incompatible.")
        op = state_ops.assign_variable_op(self._handle, value,
                                          validate_shape=self._validate_shape, name=name)
        return self._lazy_read(op) if read_value else op

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        """Adds `delta` atomically; returns the updated value (or the op)."""
        op = state_ops.assign_add_variable_op(self._handle, self._convert(delta), name=name)
        return self._lazy_read(op) if read_value else op

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        """Subtracts `delta` atomically; returns the updated value (or the op)."""
        op = state_ops.assign_sub_variable_op(self._handle, self._convert(delta), name=name)
        return self._lazy_read(op) if read_value else op

    def _scatter(self, op_type: str, sparse_delta, name) -> Tensor:
        if not (hasattr(sparse_delta, "indices") and hasattr(sparse_delta, "values")):
            raise TypeError("Argument `sparse_delta` must be a `tf.IndexedSlices`. Received "
                            f"arg: {sparse_delta}")
        op = state_ops.resource_scatter(op_type, self._handle, sparse_delta.indices,
                                        self._convert(sparse_delta.values), name=name)
        return self._lazy_read(op)

    def scatter_add(self, sparse_delta, use_locking=False, name=None) -> Tensor:
        """Adds IndexedSlices `sparse_delta` (rows `.indices`, values `.values`)."""
        return self._scatter("ResourceScatterAdd", sparse_delta, name)

    def scatter_sub(self, sparse_delta, use_locking=False, name=None) -> Tensor:
        return self._scatter("ResourceScatterSub", sparse_delta, name)

    def scatter_mul(self, sparse_delta, use_locking=False, name=None) -> Tensor:
        return self._scatter("ResourceScatterMul", sparse_delta, name)

    def scatter_div(self, sparse_delta, use_locking=False, name=None) -> Tensor:
        return self._scatter("ResourceScatterDiv", sparse_delta, name)

    def scatter_min(self, sparse_delta, use_locking=False, name=None) -> Tensor:
        return self._scatter("ResourceScatterMin", sparse_delta, name)

    def scatter_max(self, sparse_delta, use_locking=False, name=None) -> Tensor:
        return self._scatter("ResourceScatterMax", sparse_delta, name)

    def scatter_update(self, sparse_delta, use_locking=False, name=None) -> Tensor:
        return self._scatter("ResourceScatterUpdate", sparse_delta, name)

    def _scatter_nd(self, op_type: str, indices, updates, name) -> Tensor:
        op = state_ops.resource_scatter(op_type, self._handle, indices,
                                        self._convert(updates), name=name)
        return self._lazy_read(op)

    def scatter_nd_add(self, indices, updates, name=None) -> Tensor:
        return self._scatter_nd("ResourceScatterNdAdd", indices, updates, name)

    def scatter_nd_sub(self, indices, updates, name=None) -> Tensor:
        return self._scatter_nd("ResourceScatterNdSub", indices, updates, name)

    def scatter_nd_update(self, indices, updates, name=None) -> Tensor:
        return self._scatter_nd("ResourceScatterNdUpdate", indices, updates, name)

    def count_up_to(self, limit: int, name=None) -> Tensor:
        """Increments the variable until `limit`; returns the value before (ResourceCountUpTo).

        Running it when the variable already equals `limit` raises OutOfRangeError.
        """
        return state_ops.resource_count_up_to(self._handle, limit, self._dtype, name=name)

    # ---- serialization ------------------------------------------------------------------
    def to_proto(self, export_scope=None):
        """This variable as a VariableDef (None if it is outside `export_scope`)."""
        if export_scope is not None and not self._handle.name.startswith(export_scope):
            return None
        d = variable_pb2.VariableDef(
            variable_name=_strip_name_scope(self._handle.name, export_scope),
            initializer_name=_strip_name_scope(self._initializer_op.name, export_scope),
            snapshot_name=_strip_name_scope(self._graph_element.name, export_scope),
            is_resource=not self._handle.dtype._is_ref_dtype,  # a VariableV2 from TF: False
            trainable=self._trainable,
            synchronization=self._synchronization.value,
            aggregation=self._aggregation.value)
        if self._initial_value is not None:
            d.initial_value_name = _strip_name_scope(self._initial_value.name, export_scope)
        return d

    @staticmethod
    def from_proto(variable_def, import_scope=None) -> Variable:
        return Variable(variable_def=variable_def, import_scope=import_scope)

    # ---- Python protocol ----------------------------------------------------------------
    def __iter__(self):
        raise TypeError("'Variable' object is not iterable.")

    # TF1's default variable is a reference variable, true like any object (libraries test
    # `if not step_tensor:`); an explicit resource variable refuses, as TF's does.
    _tf1_truth = False

    def __bool__(self):
        if self._tf1_truth:
            return True
        raise TypeError(
            "Using a `tf.Variable` as a Python `bool` is not allowed. Use `if v is not None:` "
            "instead of `if v:` to test if a variable is defined, and use TensorFlow ops such "
            "as tf.cond to execute subgraphs conditioned on its value.")

    def __array__(self, dtype=None, copy=None):
        raise NotImplementedError(
            f"Cannot convert a symbolic tf.Variable ({self.name}) to a numpy array; run it "
            "in a Session.")

    __hash__ = object.__hash__  # variables compare and hash by identity, as in TF1


VariableV1 = Variable
_VARIABLE_ARGS = tuple(inspect.signature(Variable.__init__).parameters)[1:]
ResourceVariable = Variable  # every tensorflux variable is a resource variable


# Python operators: read the value, then apply the Tensor operator (installed by the op
# modules, possibly after this module is imported, hence looked up at call time).
_UNARY = frozenset(("__neg__", "__abs__", "__invert__"))


def _forward_operator(name: str) -> None:
    def operator(self, *args):
        fn = getattr(Tensor, name, None)
        if fn is None or fn is getattr(object, name, None):
            if name in _UNARY or name == "__getitem__":
                raise TypeError(f"The Tensor operator {name} is not defined in tensorflux yet")
            return NotImplemented
        return fn(self.value(), *args)

    operator.__name__ = name
    setattr(Variable, name, operator)


for _name in sorted(Tensor._OVERLOADABLE):
    _forward_operator(_name)


def _dense_var_to_tensor(var: Variable, dtype=None, name=None, as_ref=False) -> Tensor:
    if dtype is not None and not dtypes.as_dtype(dtype).is_compatible_with(var.dtype):
        raise ValueError(f"Incompatible type conversion requested to type "
                         f"{dtypes.as_dtype(dtype).name} for `tf.Variable of type "
                         f"{var.dtype.name}. (Variable: {var!r})")
    if as_ref:
        return var.handle
    return var.value()


register_tensor_conversion_function(Variable, _dense_var_to_tensor)


def _strip_name_scope(name: str, scope: str | None) -> str:
    if scope and name.startswith(scope.rstrip("/") + "/"):
        return name[len(scope.rstrip("/")) + 1:]
    return name


def _prepend_name_scope(name: str, scope: str | None) -> str:
    return f"{scope.rstrip('/')}/{name}" if scope else name


# ------------------------------------------------------------------------------------------
# Collections and initializers.


def global_variables(scope: str | None = None) -> list:
    """Variables in GLOBAL_VARIABLES whose names match `scope` (`re.match`)."""
    return graph_lib.get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def all_variables() -> list:
    """Deprecated alias of `global_variables()`."""
    return global_variables()


def trainable_variables(scope: str | None = None) -> list:
    return graph_lib.get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def local_variables(scope: str | None = None) -> list:
    return graph_lib.get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def model_variables(scope: str | None = None) -> list:
    return graph_lib.get_collection(GraphKeys.MODEL_VARIABLES, scope)


def moving_average_variables(scope: str | None = None) -> list:
    return graph_lib.get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def variables_initializer(var_list, name: str = "init") -> Operation:
    """One op running the initializers of `var_list` (a NoOp when it is empty)."""
    if var_list:
        return builders.group(*[v.initializer for v in var_list], name=name)
    return control_flow_ops.no_op(name=name)


def initialize_variables(var_list, name: str = "init") -> Operation:
    """Deprecated alias of `variables_initializer`."""
    return variables_initializer(var_list, name=name)


def global_variables_initializer() -> Operation:
    """The initializer of every variable in GLOBAL_VARIABLES ("init")."""
    return variables_initializer(global_variables())


def initialize_all_variables() -> Operation:
    """Deprecated alias of `global_variables_initializer`."""
    return global_variables_initializer()


def local_variables_initializer() -> Operation:
    """The initializer of every variable in LOCAL_VARIABLES."""
    return variables_initializer(local_variables())


def initialize_local_variables() -> Operation:
    """Deprecated alias of `local_variables_initializer`."""
    return local_variables_initializer()


def is_variable_initialized(variable, name: str | None = None) -> Tensor:
    """A bool scalar: whether `variable` has been initialized (`tf.is_variable_initialized`)."""
    return variable.is_initialized(name=name)


def report_uninitialized_variables(var_list=None,
                                   name: str = "report_uninitialized_variables") -> Tensor:
    """A 1-D string tensor with the names of the uninitialized variables of `var_list`
    (default: global and local variables), in order (`tf.report_uninitialized_variables`).

    Built as TensorFlow builds it: VarIsInitializedOp per variable, then Pack, LogicalNot and
    a boolean mask over the names, on the CPU.
    """
    if var_list is None:
        var_list = global_variables() + local_variables()
    with graph_lib.name_scope(name):
        init_vars = [is_variable_initialized(v) for v in var_list]
        with graph_lib.device("/cpu:0"):
            if not var_list:
                return constant_op.constant([], dtype=dtypes.string)
            mask = comparison_ops.logical_not(joining_ops.stack(init_vars))
            names = constant_op.constant([v.op.name for v in var_list])
            return slicing_ops.boolean_mask(names, mask)


for _key in meta_graph.VARIABLE_COLLECTIONS:
    meta_graph.register_proto_function(_key, variable_pb2.VariableDef, Variable.to_proto,
                                       Variable.from_proto)
del _key
