"""`tf.get_variable` and `tf.variable_scope`: variables shared by name (TF1).

Two per-graph stores, as in TensorFlow:
  - the variable store: every variable `get_variable` made, by full name ("foo/bar/w");
  - the variable-scope store: the current VariableScope (name, reuse flag, defaults for
    initializer, regularizer, dtype, ...) and how often each scope name was opened, which
    makes `variable_scope(None, default_name="blk")` unique ("blk", "blk_1", ...).

Variable names depend only on variable scopes; `variable_scope("foo")` also opens a name
scope, uniquified like any name scope ("foo", then "foo_1" when re-entered), so ops made
inside it are named "foo_1/..." while variables stay "foo/...". Reuse is inherited by inner
scopes: True (must exist), AUTO_REUSE (create or reuse) or False (must not exist).
"""

from __future__ import annotations

import enum
import threading
import weakref
from collections.abc import Sequence

from tensorflux.framework import dtypes, tensor_shape, tensor_util
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import slicing_ops
from tensorflux.variables import init_ops, partitioned_variables, variables

# The TF1 public names of this module.
__all__ = ["get_variable", "get_local_variable", "variable_scope", "get_variable_scope",
           "VariableScope", "AUTO_REUSE", "no_regularizer"]


class _ReuseMode(enum.Enum):
    """The reuse modes besides True and False."""

    AUTO_REUSE = 1


AUTO_REUSE = _ReuseMode.AUTO_REUSE
"""`reuse=tf.AUTO_REUSE`: get_variable creates a variable if absent, else returns it."""


def no_regularizer(_):
    """Use as `regularizer` to switch off a scope's default regularizer."""
    return None


# ------------------------------------------------------------------------------------------
# The variable store.


class _VariableStore:
    """The variables `get_variable` created in one graph, by full name."""

    def __init__(self):
        self._vars: dict[str, variables.Variable] = {}
        self._partitioned_vars: dict[str, partitioned_variables.PartitionedVariable] = {}

    def get_variable(self, name, shape=None, dtype=dtypes.float32, initializer=None,
                     regularizer=None, reuse=None, trainable=None, collections=None,
                     caching_device=None, partitioner=None, validate_shape=True,
                     use_resource=None, custom_getter=None, constraint=None,
                     synchronization=variables.VariableSynchronization.AUTO,
                     aggregation=variables.VariableAggregation.NONE):
        """Gets or creates the variable `name` (see `tf.get_variable`)."""
        if custom_getter is not None and not callable(custom_getter):
            raise ValueError(f"Passed a custom_getter which is not callable: {custom_getter}")
        if dtype is not None:
            dtype = dtypes.as_dtype(dtype).base_dtype
        synchronization, aggregation, trainable = variables._validate_distribution_args(
            synchronization, aggregation, trainable)
        kwargs = dict(name=name, shape=shape, dtype=dtype, initializer=initializer,
                      regularizer=regularizer, reuse=reuse, trainable=trainable,
                      collections=collections, caching_device=caching_device,
                      partitioner=partitioner, validate_shape=validate_shape,
                      use_resource=use_resource, synchronization=synchronization,
                      aggregation=aggregation, constraint=constraint)
        if custom_getter is not None:
            if not _accepts(custom_getter, "constraint"):
                del kwargs["constraint"]
            return custom_getter(getter=self._true_getter, **kwargs)
        return self._true_getter(**kwargs)

    def _true_getter(self, name, shape=None, dtype=dtypes.float32, initializer=None,
                     regularizer=None, reuse=None, trainable=None, collections=None,
                     caching_device=None, partitioner=None, validate_shape=True,
                     use_resource=None, constraint=None,
                     synchronization=variables.VariableSynchronization.AUTO,
                     aggregation=variables.VariableAggregation.NONE):
        is_scalar = shape is not None and isinstance(shape, Sequence) and not shape
        part_args = (name, shape, dtype, initializer, regularizer, reuse, trainable,
                     collections, caching_device, validate_shape, constraint,
                     synchronization, aggregation)
        if partitioner is not None and not is_scalar:
            if not callable(partitioner):
                raise ValueError(f"Partitioner must be callable, but received: {partitioner}")
            with graph_lib.name_scope(None):
                return self._get_partitioned_variable(partitioner, *part_args,
                                                      use_resource=use_resource)
        if reuse is True and partitioner is None and name in self._partitioned_vars:
            return self._get_partitioned_variable(None, *part_args,
                                                  use_resource=use_resource)
        if f"{name}/part_0" in self._vars:
            raise ValueError("No partitioner was provided, but a partitioned version of the "
                             f"variable was found: {name}/part_0. Perhaps a variable of the "
                             "same name was already created with partitioning?")
        return self._get_single_variable(
            name, shape, dtype, initializer, regularizer, reuse, trainable, collections,
            caching_device, validate_shape, constraint, synchronization, aggregation,
            use_resource=use_resource)

    def _get_partitioned_variable(self, partitioner, name, shape, dtype, initializer,
                                  regularizer, reuse, trainable, collections, caching_device,
                                  validate_shape, constraint, synchronization, aggregation,
                                  use_resource=None):
        """Gets or creates the shards "name/part_<i>" and their PartitionedVariable."""
        from_tensor = isinstance(initializer, Tensor)
        if name in self._vars:
            raise ValueError("A partitioner was provided, but an unpartitioned version of the "
                             f"variable was found: {name}.  Perhaps a variable of the same "
                             "name was already created without partitioning?")
        shape = tensor_shape.as_shape(shape)
        if from_tensor:
            shape = shape.merge_with(initializer.shape)
        dtype = dtypes.as_dtype(dtype)
        partitions = None
        if not reuse or partitioner:
            partitions = partitioned_variables.call_partitioner(partitioner, shape, dtype)
        if name in self._partitioned_vars:
            return self._existing_partitioned(name, shape, dtype, reuse, partitions)
        if reuse is True:
            raise ValueError(f"PartitionedVariable {name} does not exist, or was not created "
                             "with tf.get_variable(). Did you mean to set reuse=False or "
                             "reuse=tf.AUTO_REUSE in VarScope?")
        slice_dim, num_slices = partitioned_variables.slice_dim_and_count(partitions)
        self._check_existing_shards(name, num_slices)
        full = shape.as_list()
        shards = []
        for i, (offset, part_shape) in enumerate(
                partitioned_variables.iter_slices(full, num_slices, slice_dim)):
            shard_name = f"{name}/part_{i}"
            with graph_lib.name_scope(shard_name + "/PartitionedInitializer"):
                init, init_shape, shard_dtype = self._shard_initializer(
                    name, initializer, dtype, offset, part_shape)
            with graph_lib.name_scope(None):
                v = self._get_single_variable(
                    shard_name, init_shape, shard_dtype, init, regularizer, reuse, trainable,
                    collections, caching_device, validate_shape, constraint,
                    synchronization, aggregation,
                    partition_info=partitioned_variables.PartitionInfo(full, offset),
                    use_resource=use_resource)
            v._set_save_slice_info(partitioned_variables.SaveSliceInfo(
                name, full, offset, part_shape))
            shards.append(v)
        pv = partitioned_variables.PartitionedVariable(name, shape, shards[0].dtype, shards,
                                                       partitions)
        self._partitioned_vars[name] = pv
        return pv

    def _existing_partitioned(self, name, shape, dtype, reuse, partitions):
        if reuse is False:
            raise ValueError(f"Partitioned variable with name {name} already exists. Did you "
                             "mean to set reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
        found = self._partitioned_vars[name]
        if not shape.is_compatible_with(found.get_shape()):
            raise ValueError(f"Trying to reuse partitioned variable {name}, but specified "
                             f"shape {shape} and found shape {found.get_shape()}.")
        if not dtype.is_compatible_with(found.dtype):
            raise ValueError(f"Trying to reuse partitioned variable {name}, but specified "
                             f"dtype {dtype.name} and found dtype {found.dtype.name}.")
        if partitions is not None and found._get_partitions() != partitions:
            raise ValueError(f"Trying to reuse partitioned variable {name}, but specified "
                             f"partitions {partitions} and found partitions "
                             f"{found._get_partitions()}.")
        return found

    def _check_existing_shards(self, name, num_slices):
        if f"{name}/part_0" not in self._vars:
            return
        if f"{name}/part_{num_slices - 1}" not in self._vars:
            raise ValueError("Partitioner returned a different partitioning than what was "
                             f"already found.  Partitioner returned {num_slices} shards, and "
                             f"shard {name}/part_0 was found, but {name}/part_{num_slices - 1}"
                             " was not.")
        if f"{name}/part_{num_slices}" in self._vars:
            raise ValueError("Partitioner returned a different partitioning than what was "
                             f"already found.  Partitioner returned {num_slices} shards, and "
                             f"shard {name}/part_0 was found, but so was the extra shard "
                             f"{name}/part_{num_slices}.")

    @staticmethod
    def _shard_initializer(name, initializer, dtype, offset, part_shape):
        """(initializer, shape to pass, dtype) of one shard: a callable initializer is
        called with the shard's shape; a value is sliced."""

        if initializer is None:
            return _default_initializer(name, dtype), part_shape, dtype
        if callable(initializer):
            return initializer, part_shape, dtype
        if isinstance(initializer, Tensor):
            init = slicing_ops.slice(initializer, offset, part_shape)
            return init, None, init.dtype.base_dtype
        value = convert_to_tensor(initializer, dtype=dtype)
        return slicing_ops.slice(value, offset, part_shape), None, dtype

    def _get_single_variable(self, name, shape, dtype, initializer, regularizer, reuse,
                             trainable, collections, caching_device, validate_shape,
                             constraint, synchronization, aggregation, partition_info=None,
                             use_resource=None):
        initializing_from_value = initializer is not None and not callable(initializer)
        if shape is not None and initializing_from_value:
            raise ValueError("If initializer is a constant, do not specify shape.")
        dtype = dtypes.as_dtype(dtype)
        if shape is not None:
            shape = tensor_shape.as_shape(shape)
        if name in self._vars:
            return self._existing(name, shape, dtype, reuse)
        if reuse is True:
            raise ValueError(f"Variable {name} does not exist, or was not created with "
                             "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                             "VarScope?")
        if initializer is None:
            if shape is None:
                raise ValueError(f"Variable {name} did not get an initializer, so its `shape` "
                                 "argument must be specified.")
            initializer = _default_initializer(name, dtype)
        if initializing_from_value:
            init_val, variable_dtype = initializer, None
        else:
            if isinstance(initializer, type):
                initializer = initializer()
            if shape is not None and shape.is_fully_defined():
                dims = shape.as_list()

                def init_val():
                    return initializer(dims, dtype=dtype, partition_info=partition_info)

                variable_dtype = dtype.base_dtype
            elif _needs_no_arguments(initializer):
                init_val, variable_dtype = initializer, None
            else:
                raise ValueError("The initializer passed is not valid. It should be a callable "
                                 "with no arguments and the shape should not be provided or "
                                 "an instance of `tf.keras.initializers.*' and `shape` should "
                                 "be fully defined.")
        v = variables.Variable(
            initial_value=init_val, name=name, trainable=trainable, collections=collections,
            caching_device=caching_device, dtype=variable_dtype,
            validate_shape=validate_shape, constraint=constraint,
            synchronization=synchronization, aggregation=aggregation, shape=shape,
            use_resource=use_resource)
        self._vars[name] = v
        if regularizer:
            g = v.graph
            with variables._init_scope(g), g.colocate_with(v.op), \
                    graph_lib.name_scope(name + "/Regularizer/"):
                loss = regularizer(v)
            if loss is not None:
                g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
        return v

    def _existing(self, name, shape, dtype, reuse):
        if reuse is False:
            raise ValueError(f"Variable {name} already exists, disallowed. Did you mean to set "
                             "reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
        found = self._vars[name]
        if shape is not None and not shape.is_compatible_with(found.get_shape()):
            raise ValueError(f"Trying to share variable {name}, but specified shape {shape} "
                             f"and found shape {found.get_shape()}.")
        if not dtype.is_compatible_with(found.dtype):
            raise ValueError(f"Trying to share variable {name}, but specified dtype "
                             f"{dtype.name} and found dtype {found.dtype.name}.")
        return found


def _default_initializer(name: str, dtype: dtypes.DType):
    """TF1's defaults: Glorot uniform for floating types, zeros for integers, bools and
    strings."""
    if dtype.is_floating:
        return init_ops.glorot_uniform_initializer()
    if dtype.is_integer or dtype.is_unsigned or dtype.is_bool or dtype == dtypes.string:
        return init_ops.zeros_initializer()
    raise ValueError(f"An initializer for variable {name} of {dtype.base_dtype} is required")


def _accepts(fn, arg: str) -> bool:
    """Whether `fn` takes a keyword argument `arg` (by name or through **kwargs)."""
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.name == arg or p.kind == p.VAR_KEYWORD for p in params)


def _needs_no_arguments(fn) -> bool:
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not inspect.Parameter.empty or
               p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)


# ------------------------------------------------------------------------------------------
# Variable scopes.


class VariableScope:
    """A variable scope: a name prefix for `get_variable`, a reuse mode and defaults.

    Args:
      reuse: True, False or AUTO_REUSE.
      name: the scope's full name ("" at the top).
      initializer, regularizer, caching_device, partitioner, custom_getter, dtype,
        use_resource, constraint: defaults for `get_variable` in this scope.
      name_scope: the name scope opened with it (`original_name_scope`).
    """

    def __init__(self, reuse, name="", initializer=None, regularizer=None,
                 caching_device=None, partitioner=None, custom_getter=None, name_scope="",
                 dtype=dtypes.float32, use_resource=None, constraint=None):
        self._name = name
        self._initializer = initializer
        self._regularizer = regularizer
        self._reuse = reuse
        self._caching_device = caching_device
        self._partitioner = partitioner
        self._custom_getter = custom_getter
        self._name_scope = name_scope
        self._dtype = dtype
        self._use_resource = use_resource
        self._constraint = constraint

    name = property(lambda self: self._name)
    original_name_scope = property(lambda self: self._name_scope)
    reuse = property(lambda self: self._reuse)
    initializer = property(lambda self: self._initializer)
    dtype = property(lambda self: self._dtype)
    use_resource = property(lambda self: self._use_resource)
    regularizer = property(lambda self: self._regularizer)
    caching_device = property(lambda self: self._caching_device)
    partitioner = property(lambda self: self._partitioner)
    custom_getter = property(lambda self: self._custom_getter)
    constraint = property(lambda self: self._constraint)

    def reuse_variables(self) -> None:
        """From now on, `get_variable` in this scope returns existing variables."""
        self._reuse = True

    def set_initializer(self, initializer) -> None:
        self._initializer = initializer

    def set_dtype(self, dtype) -> None:
        self._dtype = dtype

    def set_use_resource(self, use_resource) -> None:
        self._use_resource = use_resource

    def set_regularizer(self, regularizer) -> None:
        self._regularizer = regularizer

    def set_caching_device(self, caching_device) -> None:
        self._caching_device = caching_device

    def set_partitioner(self, partitioner) -> None:
        self._partitioner = partitioner

    def set_custom_getter(self, custom_getter) -> None:
        self._custom_getter = custom_getter

    def get_collection(self, name: str) -> list:
        """Items of collection `name` under this scope's name."""
        return graph_lib.get_collection(name, self._name + "/" if self._name else "")

    def trainable_variables(self) -> list:
        return self.get_collection(GraphKeys.TRAINABLE_VARIABLES)

    def global_variables(self) -> list:
        return self.get_collection(GraphKeys.GLOBAL_VARIABLES)

    def local_variables(self) -> list:
        return self.get_collection(GraphKeys.LOCAL_VARIABLES)

    def get_variable(self, var_store, name, shape=None, dtype=None, initializer=None,
                     regularizer=None, reuse=None, trainable=None, collections=None,
                     caching_device=None, partitioner=None, validate_shape=True,
                     use_resource=None, custom_getter=None, constraint=None,
                     synchronization=variables.VariableSynchronization.AUTO,
                     aggregation=variables.VariableAggregation.NONE):
        """Gets or creates `name` in this scope from `var_store`, with the scope's
        defaults."""
        if regularizer is None:
            regularizer = self._regularizer
        if caching_device is None:
            caching_device = self._caching_device
        if partitioner is None:
            partitioner = self._partitioner
        if custom_getter is None:
            custom_getter = self._custom_getter
        if reuse is None:
            reuse = self._reuse
        if use_resource is None:
            use_resource = self._use_resource
        full_name = self._name + "/" + name if self._name else name
        # Variable names depend only on variable scopes: no name scope while creating.
        with graph_lib.name_scope(None):
            if dtype is not None and initializer is not None and not callable(initializer):
                init_dtype = _dtype_of(initializer)
                if init_dtype != dtypes.as_dtype(dtype):
                    raise ValueError(f"Initializer type '{init_dtype!s}' and explicit dtype "
                                     f"'{dtypes.as_dtype(dtype)!s}' don't match.")
            if initializer is None:
                initializer = self._initializer
            if constraint is None:
                constraint = self._constraint
            if dtype is None:
                dtype = self._dtype
            return var_store.get_variable(
                full_name, shape=shape, dtype=dtype, initializer=initializer,
                regularizer=regularizer, reuse=reuse, trainable=trainable,
                collections=collections, caching_device=caching_device,
                partitioner=partitioner, validate_shape=validate_shape,
                use_resource=use_resource, custom_getter=custom_getter,
                constraint=constraint, synchronization=synchronization,
                aggregation=aggregation)

    def __repr__(self) -> str:
        return f"<VariableScope name={self._name!r} reuse={self._reuse!r}>"


def _dtype_of(value) -> dtypes.DType:
    if isinstance(value, Tensor) or hasattr(value, "_should_act_as_resource_variable"):
        return value.dtype.base_dtype

    return dtypes.as_dtype(tensor_util.convert_to_numpy(value).dtype)


class _VariableScopeStore:
    """The current variable scope of a graph and how often each scope name was opened."""

    def __init__(self):
        self.current_scope = VariableScope(False)
        self.variable_scopes_count: dict[str, int] = {}

    def open_variable_scope(self, scope_name: str) -> None:
        self.variable_scopes_count[scope_name] = \
            self.variable_scopes_count.get(scope_name, 0) + 1

    def close_variable_subscopes(self, scope_name: str | None) -> None:
        prefix = None if scope_name is None else scope_name + "/"
        for k in self.variable_scopes_count:
            if prefix is None or k.startswith(prefix):
                self.variable_scopes_count[k] = 0

    def variable_scope_count(self, scope_name: str) -> int:
        return self.variable_scopes_count.get(scope_name, 0)


_stores: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_stores_lock = threading.Lock()


def _stores_of(g: graph_lib.Graph) -> tuple[_VariableStore, _VariableScopeStore]:
    stores = _stores.get(g)
    if stores is None:
        with _stores_lock:
            stores = _stores.get(g)
            if stores is None:
                stores = _stores[g] = (_VariableStore(), _VariableScopeStore())
    return stores


def _get_default_variable_store() -> _VariableStore:
    return _stores_of(graph_lib.get_default_graph())[0]


def get_variable_scope_store() -> _VariableScopeStore:
    return _stores_of(graph_lib.get_default_graph())[1]


def get_variable_scope() -> VariableScope:
    """The current variable scope (`tf.get_variable_scope`)."""
    return get_variable_scope_store().current_scope


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=None, collections=None, caching_device=None, partitioner=None,
                 validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                 synchronization=variables.VariableSynchronization.AUTO,
                 aggregation=variables.VariableAggregation.NONE):
    """Gets an existing variable or creates a new one (`tf.get_variable`).

    The variable is named by the current variable scope ("scope/name"). Whether it may or
    must exist depends on the scope's reuse: False (the default) creates it and fails if it
    exists, True returns it and fails if it does not, AUTO_REUSE does either.

    Args:
      name: the variable's name within the current variable scope.
      shape: its shape (required unless `initializer` is a value).
      dtype: its dtype (default: the scope's, float32).
      initializer: an initializer (called with the shape and dtype), a callable with no
        arguments, or a value (Tensor, Python or NumPy); default: the scope's, else Glorot
        uniform for floating types and zeros for the others.
      regularizer: `fn(variable) -> loss tensor or None`; the loss joins
        REGULARIZATION_LOSSES.
      trainable, collections, caching_device, validate_shape, constraint,
        synchronization, aggregation: as for `tf.Variable`.
      partitioner: `fn(shape, dtype) -> partitions per dimension`; the variable is
        then created as shards "name/part_<i>" and a PartitionedVariable returned.
      use_resource: False makes a TF1 reference variable (VariableV2); None takes the
        scope's, then the process default (see `tf.disable_resource_variables`).
      custom_getter: `fn(getter, name, *args, **kwargs)` wrapping the real getter.

    Raises:
      ValueError: creating an existing variable without reuse, reusing one that does not
        exist, a shape or dtype that conflicts with the existing variable, or no shape for
        an initializer that needs one.
    """
    return get_variable_scope().get_variable(
        _get_default_variable_store(), name, shape=shape, dtype=dtype,
        initializer=initializer, regularizer=regularizer, trainable=trainable,
        collections=collections, caching_device=caching_device, partitioner=partitioner,
        validate_shape=validate_shape, use_resource=use_resource,
        custom_getter=custom_getter, constraint=constraint, synchronization=synchronization,
        aggregation=aggregation)


def get_local_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                       trainable=False, collections=None, caching_device=None,
                       partitioner=None, validate_shape=True, use_resource=None,
                       custom_getter=None, constraint=None,
                       synchronization=variables.VariableSynchronization.AUTO,
                       aggregation=variables.VariableAggregation.NONE):
    """`get_variable` for a non-trainable variable in LOCAL_VARIABLES
    (`tf.get_local_variable`)."""
    del trainable
    collections = list(collections or []) + [GraphKeys.LOCAL_VARIABLES]
    return get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                        regularizer=regularizer, trainable=False, collections=collections,
                        caching_device=caching_device, partitioner=partitioner,
                        validate_shape=validate_shape, use_resource=use_resource,
                        custom_getter=custom_getter, constraint=constraint,
                        synchronization=synchronization, aggregation=aggregation)


def _wrap_custom_getter(custom_getter, old_getter):
    """A getter calling `custom_getter` with `old_getter` wrapped around the real getter."""
    if old_getter is None:
        return custom_getter

    def wrapped(getter, *args, **kwargs):
        return custom_getter(lambda *a, **kw: old_getter(getter, *a, **kw), *args, **kwargs)

    return wrapped


class _pure_variable_scope:  # noqa: N801 - TF's name
    """Makes a VariableScope current (no name scope): the variable half of
    `variable_scope`."""

    def __init__(self, name_or_scope, reuse=None, initializer=None, regularizer=None,
                 caching_device=None, partitioner=None, custom_getter=None,
                 old_name_scope=None, dtype=dtypes.float32, use_resource=None,
                 constraint=None):
        self._name_or_scope = name_or_scope
        self._reuse = reuse
        self._defaults = dict(initializer=initializer, regularizer=regularizer,
                              caching_device=caching_device, partitioner=partitioner,
                              dtype=dtype, use_resource=use_resource)
        self._custom_getter = custom_getter
        self._old_name_scope = old_name_scope
        self._constraint = constraint
        self._store = get_variable_scope_store()
        self._entered = None

    def _apply_defaults(self, scope: VariableScope, parent_getter) -> None:
        d = self._defaults
        for key in ("initializer", "regularizer", "caching_device", "partitioner", "dtype",
                    "use_resource"):
            if d[key] is not None:
                getattr(scope, f"set_{key}")(d[key])
        if self._custom_getter is not None:
            scope.set_custom_getter(_wrap_custom_getter(self._custom_getter, parent_getter))

    def __enter__(self) -> VariableScope:
        store = self._store
        self._old = store.current_scope
        if isinstance(self._name_or_scope, VariableScope):
            src = self._name_or_scope
            self._new_name = src.name
            store.open_variable_scope(self._new_name)
            self._old_counts = dict(store.variable_scopes_count)
            scope = VariableScope(
                src.reuse if not self._reuse else self._reuse, name=self._new_name,
                initializer=src.initializer, regularizer=src.regularizer,
                caching_device=src.caching_device, partitioner=src.partitioner,
                custom_getter=src.custom_getter, name_scope=src.original_name_scope,
                dtype=src.dtype, use_resource=src.use_resource, constraint=self._constraint)
            self._apply_defaults(scope, src.custom_getter)
        else:
            old = self._old
            self._new_name = (old.name + "/" + self._name_or_scope if old.name
                              else self._name_or_scope)
            reuse = self._reuse or old.reuse  # reuse is inherited by sub-scopes
            name_scope = self._name_or_scope if self._old_name_scope is None \
                else self._old_name_scope
            scope = VariableScope(
                reuse, name=self._new_name, initializer=old.initializer,
                regularizer=old.regularizer, caching_device=old.caching_device,
                partitioner=old.partitioner, custom_getter=old.custom_getter,
                name_scope=name_scope, dtype=old.dtype, use_resource=old.use_resource,
                constraint=self._constraint)
            self._apply_defaults(scope, old.custom_getter)
            store.open_variable_scope(self._new_name)
        store.current_scope = scope
        self._entered = scope
        return scope

    def __exit__(self, *exc) -> None:
        store = self._store
        if store.current_scope is not self._entered:
            raise RuntimeError("Improper nesting of variable_scope.")
        if isinstance(self._name_or_scope, VariableScope):
            store.variable_scopes_count = self._old_counts
        else:
            store.close_variable_subscopes(self._new_name)
        store.current_scope = self._old


def _unique_variable_scope(prefix: str) -> str:
    """`prefix`, or `prefix_N`, unused as a variable scope in the current scope."""
    store = get_variable_scope_store()
    current = get_variable_scope()
    name = current.name + "/" + prefix if current.name else prefix
    if store.variable_scope_count(name) == 0:
        return prefix
    idx = 1
    while store.variable_scope_count(f"{name}_{idx}") > 0:
        idx += 1
    return f"{prefix}_{idx}"


class variable_scope:  # noqa: N801 - TF's name
    """A context manager for variable scopes (`tf.variable_scope`), which also opens a name
    scope.

    Args:
      name_or_scope: a string or VariableScope to open (None: use `default_name`).
      default_name: the base of a unique scope name when `name_or_scope` is None.
      values: tensors passed to the scope (they choose the graph).
      initializer, regularizer, caching_device, partitioner, custom_getter, dtype,
        use_resource, constraint: defaults for `get_variable` inside.
      reuse: True, AUTO_REUSE, or None/False to inherit the enclosing scope's.
      auxiliary_name_scope: False opens no name scope (ops keep the current one).

    Raises:
      TypeError: neither a name nor a default name, or a bad `name_or_scope` type.
      ValueError: a bad `reuse`, or `reuse=True` with only a default name.
    """

    def __init__(self, name_or_scope, default_name=None, values=None, initializer=None,
                 regularizer=None, caching_device=None, partitioner=None, custom_getter=None,
                 reuse=None, dtype=None, use_resource=None, constraint=None,
                 auxiliary_name_scope=True):
        if default_name is None and name_or_scope is None:
            raise TypeError("If default_name is None then name_or_scope is required")
        if reuse is False:
            reuse = None  # False means "inherit" here: scopes cannot undo reuse
        if not (reuse is True or reuse is None or reuse is AUTO_REUSE):
            raise ValueError("The reuse parameter must be True or False or None.")
        if not isinstance(auxiliary_name_scope, bool):
            raise TypeError("The auxiliary_name_scope must be `True` or `False`, while get "
                            f"{auxiliary_name_scope}")
        self._name_or_scope = name_or_scope
        self._default_name = default_name
        self._reuse = reuse
        self._options = dict(initializer=initializer, regularizer=regularizer,
                             caching_device=caching_device, partitioner=partitioner,
                             custom_getter=custom_getter, dtype=dtype,
                             use_resource=use_resource, constraint=constraint)
        self._auxiliary_name_scope = auxiliary_name_scope
        self._graph = graph_lib.get_graph_from_inputs(list(values or []))
        self._pure = None
        self._name_scope_cm = None
        self._name_scope_arg = None  # what was passed to name_scope, to re-enter this object

    def __enter__(self) -> VariableScope:
        self._graph_cm = self._graph.as_default()
        self._graph_cm.__enter__()
        try:
            if self._pure is not None:  # re-entering the same object: a fresh name scope
                self._enter_name_scope(self._name_scope_arg)
                return self._pure.__enter__()
            return self._enter_uncached()
        except BaseException:
            self._exit_name_scope(None, None, None)
            self._graph_cm.__exit__(None, None, None)
            raise

    def _enter_name_scope(self, name: str | None) -> str | None:
        if name is None:
            self._name_scope_cm = None
            return None
        self._name_scope_arg = name
        self._name_scope_cm = self._graph.name_scope(name)
        return self._name_scope_cm.__enter__()

    def _exit_name_scope(self, *exc) -> None:
        cm, self._name_scope_cm = self._name_scope_cm, None
        if cm is not None:
            cm.__exit__(*exc)

    def _enter_uncached(self) -> VariableScope:
        g = self._graph
        if self._auxiliary_name_scope:
            keep_scope = None  # open a new name scope below
        else:
            current = g.get_name_scope()
            keep_scope = current + "/" if current else ""
        opts = self._options
        if self._name_or_scope is not None:
            if not isinstance(self._name_or_scope, (VariableScope, str)):
                raise TypeError("VariableScope: name_or_scope must be a string or "
                                "VariableScope.")
            if isinstance(self._name_or_scope, str):
                scope_base = self._name_or_scope
            else:
                scope_base = self._name_or_scope.name.split("/")[-1]
            old_name_scope = None
            if scope_base or keep_scope is not None:
                entered = self._enter_name_scope(keep_scope if keep_scope is not None
                                                 else scope_base)
                old_name_scope = entered if isinstance(self._name_or_scope, str) else \
                    self._name_or_scope.original_name_scope
            self._pure = _pure_variable_scope(self._name_or_scope, reuse=self._reuse,
                                              old_name_scope=old_name_scope, **opts)
            return self._pure.__enter__()
        if self._reuse:
            raise ValueError("reuse=True cannot be used without a name_or_scope")
        entered = self._enter_name_scope(keep_scope if keep_scope is not None
                                         else self._default_name)
        unique = _unique_variable_scope(self._default_name)
        self._pure = _pure_variable_scope(unique, old_name_scope=entered, **opts)
        return self._pure.__enter__()

    def __exit__(self, *exc) -> None:
        try:
            if self._pure is not None:
                self._pure.__exit__(*exc)
        finally:
            try:
                self._exit_name_scope(*exc)
            finally:
                self._graph_cm.__exit__(*exc)
