"""Staging areas (TF1's `data_flow_ops.StagingArea` and `MapStagingArea`).

A staging area is a buffer of tuples shared by the staging ops that name it: Stage puts a
tuple, Unstage takes the oldest, StagePeek reads one, StageSize and StageClear report and
empty. The Map* ops (and their Ordered* twins) hold tuples by int64 key, may receive a
tuple's components in several puts, and take a given key or any (the smallest when
ordered). No op outputs a handle: each finds the area in its device's ResourceMgr by its
`container` and `shared_name` attrs, the first op run creating it with its `capacity` and
`memory_limit` (kernels: kernels/cpu/staging_ops.py over kernels/staging.py). A put that
finds the area full, or a get that finds nothing, waits without holding a thread until
the area changes, the step is cancelled (Session.close) or its deadline passes
(RunOptions.timeout_in_ms: DeadlineExceededError).

The Python classes build the ops as TF1 does: every op is colocated with a NoOp made with
the area ("<name>_root/NoOp"), so `with tf.device(...)` around the constructor places them
all; op names are "<name>_put", "<name>_get", ...; put checks dtypes and static shapes
(ValueError); get returns a list of tensors, or a dict when the area has names.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops.control_flow_ops import no_op

# StagingArea and MapStagingArea are not top-level TF1 names (tf.contrib.staging has them).
__all__: list[str] = []

TensorShape = tensor_shape.TensorShape

# ---- op definitions ----------------------------------------------------------------------


def _no_outputs(op):
    return []


def _unknown_outputs(op):
    return [None] * len(op.outputs)


def _no_key_outputs(op):
    return [TensorShape([])] + [None] * (len(op.outputs) - 1)


_BOUNDS = ["capacity: int >= 0 = 0", "memory_limit: int >= 0 = 0"]
_WHERE = ["container: string = ''", "shared_name: string = ''"]
_TYPES = ["dtypes: list(type) >= 1"]
_ANY_TYPES = ["dtypes: list(type) >= 0"]

define_op("Stage", inputs=["values: dtypes"], attrs=_BOUNDS + _TYPES + _WHERE,
          shape_fn=_no_outputs, stateful=True)
define_op("Unstage", outputs=["values: dtypes"], attrs=_BOUNDS + _TYPES + _WHERE,
          shape_fn=_unknown_outputs, stateful=True)
define_op("StagePeek", inputs=["index: int32"], outputs=["values: dtypes"],
          attrs=_BOUNDS + _TYPES + _WHERE, shape_fn=_unknown_outputs, stateful=True)
define_op("StageSize", outputs=["size: int32"], attrs=_BOUNDS + _ANY_TYPES + _WHERE,
          shape_fn=common_shapes.scalar, stateful=True)
define_op("StageClear", attrs=_BOUNDS + _ANY_TYPES + _WHERE, shape_fn=_no_outputs,
          stateful=True)
not_differentiable("Stage", "Unstage", "StagePeek", "StageSize", "StageClear")

MAP_OPS = ("MapStage", "MapUnstage", "MapUnstageNoKey", "MapPeek", "MapSize",
           "MapIncompleteSize", "MapClear")
for _prefix in ("", "Ordered"):
    define_op(f"{_prefix}MapStage",
              inputs=["key: int64", "indices: int32", "values: fake_dtypes"],
              attrs=_BOUNDS + _ANY_TYPES + ["fake_dtypes: list(type) >= 1"] + _WHERE,
              shape_fn=_no_outputs, stateful=True)
    for _t in ("MapUnstage", "MapPeek"):
        define_op(f"{_prefix}{_t}", inputs=["key: int64", "indices: int32"],
                  outputs=["values: dtypes"], attrs=_BOUNDS + _TYPES + _WHERE,
                  shape_fn=_unknown_outputs, stateful=True)
    define_op(f"{_prefix}MapUnstageNoKey", inputs=["indices: int32"],
              outputs=["key: int64", "values: dtypes"], attrs=_BOUNDS + _TYPES + _WHERE,
              shape_fn=_no_key_outputs, stateful=True)
    for _t in ("MapSize", "MapIncompleteSize"):
        define_op(f"{_prefix}{_t}", outputs=["size: int32"],
                  attrs=_BOUNDS + _ANY_TYPES + _WHERE, shape_fn=common_shapes.scalar,
                  stateful=True)
    define_op(f"{_prefix}MapClear", attrs=_BOUNDS + _ANY_TYPES + _WHERE,
              shape_fn=_no_outputs, stateful=True)
not_differentiable(*MAP_OPS, *(f"Ordered{t}" for t in MAP_OPS))


# ---- the Python classes ------------------------------------------------------------------


class BaseStagingArea:
    """What StagingArea and MapStagingArea share: dtypes, shapes and names, the colocation
    NoOp, and the checks of put values.

    Args:
      dtypes: the component DTypes.
      shapes: one shape per component (checked against put values), or None.
      names: component names (puts then take, and gets return, dicts), or None.
      shared_name: the area's name in the session (default: a name unique in the graph,
        from the class name).
      capacity: the most tuples held (0: no limit); a put waits for room.
      memory_limit: the most bytes held (0: no limit); a put waits for room.
    """

    def __init__(self, dtypes, shapes=None, names=None, shared_name=None, capacity=0,
                 memory_limit=0):
        kind = type(self).__name__
        if shared_name is None:
            self._name = graph_lib.get_default_graph().unique_name(kind)
        elif isinstance(shared_name, str):
            self._name = shared_name
        else:
            raise ValueError("shared_name must be a string")
        if not isinstance(dtypes, (list, tuple)):
            dtypes = [dtypes]
        self._dtypes = [_as_dtype(d) for d in dtypes]
        if shapes is not None:
            if len(shapes) != len(self._dtypes):
                raise ValueError(f"{kind} shapes must be the same length as dtypes")
            self._shapes = [TensorShape(s) for s in shapes]
        else:
            self._shapes = [tensor_shape.unknown_shape() for _ in self._dtypes]
        if names is not None:
            if len(names) != len(self._dtypes):
                raise ValueError(f"{kind} names must be the same length as dtypes")
            self._names = list(names)
        else:
            self._names = None
        self._capacity = capacity
        self._memory_limit = memory_limit
        # Every op of the area is colocated with this NoOp: a device scope around the
        # constructor places them all.
        with graph_lib.name_scope(f"{self._name}_root"):
            self._coloc_op = no_op()

    @property
    def name(self) -> str:
        """The staging area's name (its shared_name)."""
        return self._name

    @property
    def dtypes(self) -> list:
        """The component DTypes."""
        return self._dtypes

    @property
    def shapes(self) -> list:
        """The component TensorShapes."""
        return self._shapes

    @property
    def names(self):
        """The component names, or None."""
        return self._names

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def memory_limit(self) -> int:
        return self._memory_limit

    def _attrs(self) -> dict:
        return {"shared_name": self._name, "capacity": self._capacity,
                "memory_limit": self._memory_limit}

    def _check_put_dtypes(self, vals, indices=None):
        """The put values as tensors of their components' dtypes, and their indices.

        Raises:
          ValueError: a dict for an area without names (or keys it does not have), a list
            for one with names, a list without indices, a dtype or static shape that does
            not fit.
        """
        if isinstance(vals, dict):
            if not self._names:
                raise ValueError("Staging areas must have names to enqueue a dictionary")
            if not set(vals).issubset(self._names):
                raise ValueError("Keys in dictionary to put do not match names of staging "
                                 f"area. Dictionary: {sorted(vals)}Queue: "
                                 f"{sorted(self._names)}")
            pairs = [(vals[k], i) for i, k in enumerate(self._names) if k in vals]
            vals, indices = [v for v, _ in pairs], [i for _, i in pairs]
        else:
            if self._names:
                raise ValueError("You must enqueue a dictionary in a staging area with names")
            if indices is None:
                raise ValueError("Indices must be supplied when inserting a list of tensors")
            if not isinstance(vals, (list, tuple)):
                vals = [vals]
            if len(indices) != len(vals):
                raise ValueError(f"Number of indices {len(indices)} doesn't match number of "
                                 f"values {len(vals)}")
        tensors = []
        for val, i in zip(vals, indices, strict=True):
            dtype, shape = self._dtypes[i], self._shapes[i]
            if isinstance(val, Tensor) and val.dtype.base_dtype != dtype:
                raise ValueError(f"Datatypes do not match. Received val.dtype {val.dtype!r} "
                                 f"and dtype {dtype!r}")
            val = convert_to_tensor(val, dtype=dtype, name=f"component_{i}")
            val.shape.assert_is_compatible_with(shape)
            tensors.append(val)
        return tensors, list(indices)

    @staticmethod
    def _scope_vals(vals) -> list:
        if isinstance(vals, (list, tuple)):
            return list(vals)
        if isinstance(vals, dict):
            return list(vals.values())
        return [vals]

    def _get_return_value(self, tensors, indices):
        """Sets the static shapes; a dict by name when the area has names, else a list."""
        tensors = list(tensors)
        for out, i in zip(tensors, indices, strict=True):
            out.set_shape(self._shapes[i])
        if self._names:
            return {self._names[i]: t for t, i in zip(tensors, indices, strict=True)}
        return tensors

    def _op(self, op_type: str, name: str, **keywords):
        with graph_lib.colocate_with(self._coloc_op):
            return apply_op(op_type, name=name, **self._attrs(), **keywords)


def _as_dtype(d) -> dtypes.DType:
    return dtypes.as_dtype(d)


class StagingArea(BaseStagingArea):
    """A FIFO buffer of tensor tuples (TF1's `StagingArea`, `tf.contrib.staging`).

    Typically a producer step `put`s the next batch while the consumer `get`s the one staged
    before, so copies to a device overlap the computation. A put waits while `capacity`
    tuples or `memory_limit` bytes are held; a get waits while the area is empty.

    Args:
      dtypes: the component DTypes.
      shapes: one shape per component, or None.
      names: component names, or None.
      shared_name: the area's name in the session.
      capacity: the most tuples held (0: no limit).
      memory_limit: the most bytes held (0: no limit).
    """

    def put(self, values, name=None):
        """Stages a tuple: a list/tuple of tensors (or one tensor), or a dict by name.

        Returns:
          The Stage operation.

        Raises:
          ValueError: a dtype or static shape that does not fit the area's.
        """
        with graph_lib.name_scope(name, f"{self._name}_put",
                                  self._scope_vals(values)) as scope:
            if not isinstance(values, (list, tuple, dict)):
                values = [values]
            vals, _ = self._check_put_dtypes(values, list(range(len(values))))
            return self._op("Stage", scope, values=vals)

    def get(self, name=None):
        """Takes the oldest staged tuple (waiting while the area is empty).

        Returns:
          A list of tensors, or a dict by name when the area has names.
        """
        out = self._op("Unstage", name or f"{self._name}_get", dtypes=self._dtypes)
        return self._get_return_value(_as_list(out), range(len(self._dtypes)))

    def peek(self, index, name=None):
        """Reads the tuple at `index` (0: the oldest) without taking it; waits until the area
        holds index + 1 tuples."""
        out = self._op("StagePeek", name or f"{self._name}_peek", index=index,
                       dtypes=self._dtypes)
        return self._get_return_value(_as_list(out), range(len(self._dtypes)))

    def size(self, name=None) -> Tensor:
        """An int32 scalar: the number of staged tuples."""
        return self._op("StageSize", name or f"{self._name}_size", dtypes=self._dtypes)

    def clear(self, name=None):
        """The operation that empties the area."""
        return self._op("StageClear", name or f"{self._name}_clear", dtypes=self._dtypes)


def _as_list(out) -> list:
    return list(out) if isinstance(out, (list, tuple)) else [out]


class MapStagingArea(BaseStagingArea):
    """Tensor tuples by int64 key (TF1's `MapStagingArea`).

    `put(key, vals, indices)` may stage some components of a tuple; it is incomplete (not
    counted by `size()`, nor bounded by capacity) until its other components come.
    `get(key)` takes a tuple (some components with `indices`), waiting until the key is
    there; `get()` takes any tuple: the smallest key if `ordered`, else the oldest.

    Args:
      dtypes: the component DTypes.
      shapes: one shape per component, or None.
      names: component names (then puts take dicts and `indices` may be names), or None.
      shared_name: the area's name in the session.
      ordered: whether the area keeps keys sorted (the OrderedMap* ops).
      capacity: the most complete tuples held (0: no limit).
      memory_limit: the most bytes held (0: no limit).
    """

    def __init__(self, dtypes, shapes=None, names=None, shared_name=None, ordered=False,
                 capacity=0, memory_limit=0):
        super().__init__(dtypes, shapes, names, shared_name, capacity, memory_limit)
        self._ordered = ordered
        self._prefix = "Ordered" if ordered else ""

    def _map_op(self, op_type: str, name: str, **keywords):
        return self._op(self._prefix + op_type, name, **keywords)

    def put(self, key, vals, indices=None, name=None):
        """Stages the components `indices` of tuple `key` (all of them for a dict by name).

        Args:
          key: an int64 scalar.
          vals: a list of tensors (with `indices`), or a dict by name.
          indices: the component indices `vals` are for.

        Returns:
          The MapStage operation.
        """
        with graph_lib.name_scope(name, f"{self._name}_put",
                                  self._scope_vals(vals)) as scope:
            vals, indices = self._check_put_dtypes(vals, indices)
            return self._map_op("MapStage", scope, key=key, indices=indices, values=vals,
                                dtypes=self._dtypes)

    def _get_indices_and_dtypes(self, indices=None):
        if indices is None:
            indices = list(range(len(self._dtypes)))
        if not isinstance(indices, (tuple, list)):
            raise TypeError(f"Invalid indices type '{type(indices)}'")
        if indices and all(isinstance(i, str) for i in indices):
            if self._names is None:
                raise ValueError(f"String indices provided {indices}, but this Staging Area "
                                 "was not created with names.")
            try:
                indices = [self._names.index(n) for n in indices]
            except ValueError as e:
                raise ValueError(f"Named index not in Staging Area names {self._names}") \
                    from e
        elif not all(isinstance(i, int) for i in indices):
            raise TypeError(f"Mixed types in indices {indices}. May only be str or int")
        return list(indices), [self._dtypes[i] for i in indices]

    def peek(self, key, indices=None, name=None):
        """Reads the components `indices` (default all) of tuple `key` without taking them;
        waits until the key is staged."""
        indices, dtypes_ = self._get_indices_and_dtypes(indices)
        out = self._map_op("MapPeek", name or f"{self._name}_pop", key=key, indices=indices,
                           dtypes=dtypes_)
        return self._get_return_value(_as_list(out), indices)

    def get(self, key=None, indices=None, name=None):
        """Takes the components `indices` (default all) of tuple `key`, or of any tuple if
        `key` is None (the smallest key when ordered).

        Returns:
          (key, values): the key tensor and a list of tensors (a dict with names).
        """
        indices, dtypes_ = self._get_indices_and_dtypes(indices)
        if key is None:
            key, values = self._map_op("MapUnstageNoKey", name or f"{self._name}_get_nokey",
                                       indices=indices, dtypes=dtypes_)
        else:
            values = self._map_op("MapUnstage", name or f"{self._name}_get", key=key,
                                  indices=indices, dtypes=dtypes_)
        return key, self._get_return_value(_as_list(values), indices)

    def size(self, name=None) -> Tensor:
        """An int32 scalar: the number of complete tuples."""
        return self._map_op("MapSize", name or f"{self._name}_size", dtypes=self._dtypes)

    def incomplete_size(self, name=None) -> Tensor:
        """An int32 scalar: the number of tuples still missing components."""
        return self._map_op("MapIncompleteSize", name or f"{self._name}_incomplete_size",
                            dtypes=self._dtypes)

    def clear(self, name=None):
        """The operation that empties the area (complete and incomplete tuples)."""
        return self._map_op("MapClear", name or f"{self._name}_clear", dtypes=self._dtypes)
