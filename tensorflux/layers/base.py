"""`tf.layers.Layer` and `tf.layers.InputSpec`: TF1's layer base class.

A layer owns a variable scope, chosen on its first call: the `name` given (re-opened as
is by the functional forms, `tf.layers.dense(..., name="fc")`, so a second call with the
same name needs `reuse`), else a unique scope from the class's snake-case name ("dense",
"dense_1", ...). On its first call a layer builds its variables with `tf.get_variable`
inside that scope (so `tf.variable_scope(..., reuse=...)` and the `reuse` argument share
them, and variable names are TF1's: "dense/kernel:0"), then every call runs `call` in the
scope's name scope ("dense/MatMul", then "dense/MatMul_1").

Bookkeeping, as TF1 graph-mode layers do it: a weight regularizer's loss and an activity
regularizer's loss (its value divided by the batch size) go to the layer's `losses` and
the `tf.GraphKeys.REGULARIZATION_LOSSES` collection; `add_update` ops go to the layer's
`updates` and `tf.GraphKeys.UPDATE_OPS`.
"""

from __future__ import annotations

import re
import weakref

from tensorflux.control_flow import builders as control_flow
from tensorflux.framework import common_shapes, dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Tensor
from tensorflux.framework.sparse_tensor import SparseTensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, math_ops
from tensorflux.variables import trackable
from tensorflux.variables import variable_scope as vs

__all__ = ["Layer", "InputSpec"]

_GraphKeys = graph_lib.GraphKeys
# Per graph: how many layers of each base name got a default name (Keras-style uids).
_NAME_UIDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _snake_case(name: str) -> str:
    """"MyLayer" -> "my_layer"; a private class "_Block" -> "private__block" (as TF names
    it: a name scope cannot start with "_")."""
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    s = re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()
    return "private" + s if s.startswith("_") else s


def _unique_layer_name(base: str) -> str:
    uids = _NAME_UIDS.setdefault(graph_lib.get_default_graph(), {})
    n = uids.get(base, 0)
    uids[base] = n + 1
    return base if n == 0 else f"{base}_{n}"


class InputSpec:
    """What a layer accepts: dtype, shape, ndim, max_ndim, min_ndim, and `axes` (a dict
    axis -> size)."""

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None,
                 axes=None):
        self.dtype = dtypes.as_dtype(dtype).name if dtype is not None else None
        self.shape = tuple(shape) if shape is not None else None
        self.ndim = len(shape) if shape is not None else ndim
        self.max_ndim = max_ndim
        self.min_ndim = min_ndim
        self.axes = dict(axes or {})

    def __repr__(self) -> str:
        parts = [f"{k}={v}" for k, v in (("dtype", self.dtype), ("shape", self.shape),
                                         ("ndim", self.ndim), ("max_ndim", self.max_ndim),
                                         ("min_ndim", self.min_ndim)) if v is not None]
        if self.axes:
            parts.append(f"axes={self.axes}")
        return f"InputSpec({', '.join(parts)})"


def _check_input(spec: InputSpec, x: Tensor, layer: str) -> None:
    """Raises ValueError when `x`'s static shape breaks `spec`."""
    rank = x.shape.ndims
    where = f"Input 0 of layer {layer} is incompatible with the layer: "
    if spec.ndim is not None and rank is not None and rank != spec.ndim:
        raise ValueError(f"{where}expected ndim={spec.ndim}, found ndim={rank}. Full shape "
                         f"received: {x.shape}")
    if spec.min_ndim is not None and rank is not None and rank < spec.min_ndim:
        raise ValueError(f"{where}expected min_ndim={spec.min_ndim}, found ndim={rank}. Full "
                         f"shape received: {x.shape}")
    if spec.max_ndim is not None and rank is not None and rank > spec.max_ndim:
        raise ValueError(f"{where}expected max_ndim={spec.max_ndim}, found ndim={rank}. Full "
                         f"shape received: {x.shape}")
    if spec.axes and rank is not None:
        dims = x.shape.as_list()
        for axis, size in spec.axes.items():
            if size is not None and dims[axis] not in (size, None):
                raise ValueError(f"{where}expected axis {axis} of input shape to have value "
                                 f"{size} but received input with shape {x.shape}")


class Layer:
    """The base class of `tf.layers`: subclasses define `build(input_shape)` (make the
    weights with `add_weight`), `call(inputs, ...)` and `compute_output_shape`.

    Args:
      trainable: whether the layer's weights join `tf.GraphKeys.TRAINABLE_VARIABLES`.
      name: the layer's name and the base of its variable scope.
      dtype: the dtype of its weights (default: the first input's float dtype).
      activity_regularizer: a function of the output whose value (divided by the batch
        size) is a regularization loss.
      _scope: a scope name to open as is (the functional forms pass `name`).
      _reuse: True or tf.AUTO_REUSE to share existing variables (functional `reuse=`).
    """

    def __init__(self, trainable=True, name=None, dtype=None, activity_regularizer=None,
                 _scope=None, _reuse=None, **kwargs):
        unknown = set(kwargs) - {"input_shape", "batch_input_shape", "batch_size", "weights",
                                 "autocast", "dynamic"}
        if unknown:
            raise TypeError(f"Keyword argument not understood: {sorted(unknown)[0]}")
        self.trainable = trainable
        self._base_name = name or _snake_case(type(self).__name__)
        self._name = name or _unique_layer_name(self._base_name)
        self._dtype = dtypes.as_dtype(dtype) if dtype is not None else None
        self.activity_regularizer = activity_regularizer
        self._scope_arg = _scope
        self._reuse = _reuse
        self._scope = None
        self.built = False
        self.input_spec = None
        self._trainable_weights: list = []
        self._non_trainable_weights: list = []
        self._losses: list = []
        self._updates: list = []
        self._call_count = 0

    # ---- properties ---------------------------------------------------------------------
    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype)
    losses = property(lambda self: list(self._losses))
    updates = property(lambda self: list(self._updates))

    @property
    def scope_name(self) -> str:
        if self._scope is None:
            raise ValueError("No name available for layer scope because the layer "
                             f"\"{self._name}\" has not been used yet. The scope name is "
                             "determined the first time the layer instance is called.")
        return self._scope.name

    @property
    def trainable_weights(self) -> list:
        return list(self._trainable_weights) if self.trainable else []

    @property
    def non_trainable_weights(self) -> list:
        if self.trainable:
            return list(self._non_trainable_weights)
        return self._trainable_weights + self._non_trainable_weights

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights

    @property
    def weights(self) -> list:
        return self.trainable_weights + self.non_trainable_weights

    variables = weights

    def count_params(self) -> int:
        return sum(v.shape.num_elements() for v in self.weights)

    # ---- what subclasses define ---------------------------------------------------------
    def build(self, input_shape) -> None:
        """Makes the layer's weights for inputs of `input_shape` (a TensorShape)."""
        self.built = True

    def call(self, inputs, **kwargs):
        """The layer's computation."""
        return inputs

    def compute_output_shape(self, input_shape):
        """The output's TensorShape for inputs of `input_shape`."""
        raise NotImplementedError(f"{type(self).__name__}.compute_output_shape")

    # ---- weights, losses, updates -------------------------------------------------------
    def add_weight(self, name, shape, dtype=None, initializer=None, regularizer=None,
                   trainable=True, constraint=None, partitioner=None, use_resource=None,
                   getter=None, **kwargs):
        """A variable of this layer, made (or reused) with `tf.get_variable` in the layer's
        scope; its regularizer's loss joins `losses` when the variable is new.

        Returns:
          The variable.
        """
        del use_resource, getter, kwargs
        dtype = dtypes.as_dtype(dtype or self._dtype or dtypes.float32)
        g = graph_lib.get_default_graph()
        before = list(g.get_collection(_GraphKeys.REGULARIZATION_LOSSES))
        existing = set(map(id, g.get_collection(_GraphKeys.TRAINABLE_VARIABLES)))
        v = vs.get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                            regularizer=regularizer, trainable=trainable and self.trainable,
                            constraint=constraint, partitioner=partitioner)
        after = g.get_collection(_GraphKeys.REGULARIZATION_LOSSES)
        self._losses.extend(t for t in after if all(t is not b for b in before))
        if trackable.is_variable(v):
            self.__dict__.setdefault("_checkpoint_weights", []).append((name, v))
        reused_trainable = id(v) in existing
        if trainable and (self.trainable or reused_trainable):
            self._trainable_weights.append(v)
        else:
            self._non_trainable_weights.append(v)
        return v

    add_variable = add_weight

    def _checkpoint_children(self) -> list:
        """What object-based checkpoints track (variables/trackable.py): the weights by
        their `add_weight` names ("kernel", "bias"), then the public attributes holding
        trackable objects (sublayers, variables, lists of them) by attribute name."""
        out, names = [], set()
        for name, v in self.__dict__.get("_checkpoint_weights", []):
            if name not in names:
                names.add(name)
                out.append((name, v))
        return out + trackable.attribute_children(self, exclude=names)

    def add_loss(self, losses, inputs=None) -> None:
        """Adds regularization losses to `losses` and `tf.GraphKeys.REGULARIZATION_LOSSES`."""
        del inputs
        for loss in losses if isinstance(losses, (list, tuple)) else [losses]:
            if loss is None:
                continue
            self._losses.append(loss)
            self._publish(_GraphKeys.REGULARIZATION_LOSSES, loss)

    def add_update(self, updates, inputs=None) -> None:
        """Adds update ops to `updates` and `tf.GraphKeys.UPDATE_OPS`."""
        del inputs
        for u in updates if isinstance(updates, (list, tuple)) else [updates]:
            u = u() if callable(u) else u
            self._updates.append(u)
            self._publish(_GraphKeys.UPDATE_OPS, u)

    def _publish(self, key: str, value) -> None:
        """Where a loss or update goes besides the layer: the graph collection `key`
        (Keras layers override this: they keep them off the collections)."""
        graph_lib.add_to_collection(key, value)

    def get_losses_for(self, inputs) -> list:
        return self.losses

    def get_updates_for(self, inputs) -> list:
        return self.updates

    # ---- calling ------------------------------------------------------------------------
    def _set_scope(self, scope=None) -> None:
        if self._scope is not None:
            return
        scope = self._scope_arg if scope is None else scope
        if self._reuse:
            with vs.variable_scope(scope if scope is not None else self._base_name) as s:
                self._scope = s
        else:
            with vs.variable_scope(scope, default_name=self._base_name) as s:
                self._scope = s

    def __call__(self, inputs, *args, **kwargs):
        """Builds the layer on its first call, then applies `call` to `inputs`.

        Raises:
          ValueError: inputs that do not fit the layer's `input_spec`.
        """
        self._set_scope(kwargs.pop("scope", None))
        if not isinstance(inputs, (list, tuple, SparseTensor)):
            inputs = convert_to_tensor(inputs)
        reuse = True if self.built else self._reuse
        with vs.variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False):
            with graph_lib.name_scope(self._scope.original_name_scope):
                if isinstance(inputs, (Tensor, SparseTensor)):
                    if self._dtype is None and inputs.dtype.is_floating:
                        self._dtype = inputs.dtype.base_dtype
                    if self.input_spec is not None:
                        _check_input(self.input_spec, inputs, self._name)
                if not self.built:
                    shape = (inputs.shape if isinstance(inputs, (Tensor, SparseTensor))
                             else [t.shape for t in inputs])
                    self.build(shape)
                    self.built = True
                outputs = self.call(inputs, *args, **kwargs)
                if self.activity_regularizer is not None:
                    self._activity_loss(outputs)
        self._call_count += 1
        return outputs

    apply = __call__

    def _activity_loss(self, outputs) -> None:
        with graph_lib.name_scope("ActivityRegularizer"):
            loss = self.activity_regularizer(outputs)
            batch = math_ops.cast(array_ops.shape(outputs)[0], loss.dtype)
            self.add_loss(math_ops.truediv(loss, batch))

    def get_config(self) -> dict:
        return {"name": self._name, "trainable": self.trainable,
                "dtype": self._dtype.name if self._dtype is not None else None}


def constant_bool(value):
    """True/False when `value` is a Python bool or a constant tensor, else None."""
    if isinstance(value, bool):
        return value
    if isinstance(value, Tensor):
        v = common_shapes.constant_value(value)
        return None if v is None else bool(v)
    return bool(value)


def smart_constant_value(pred):
    """`pred`'s value when known at graph construction (TF's `smart_constant_value`): a
    tensor's constant value (None if not known), a bool for a Python bool or 0/1.

    Raises:
      TypeError: `pred` is neither.
    """
    if isinstance(pred, Tensor):
        return common_shapes.constant_value(pred)
    try:
        known = not isinstance(pred, str) and pred in (0, 1)
    except (TypeError, ValueError):  # unhashable, or an array
        known = False
    if known:
        return bool(pred)
    raise TypeError(f"Argument `pred` must be a Tensor, or a Python bool, or 1 or 0. "
                    f"Received: pred={pred} of type {type(pred).__name__}")


def constant_value(pred):
    """`smart_constant_value`, None for a variable (TF's `layers.utils.constant_value`)."""
    from tensorflux.variables.variables import Variable

    if isinstance(pred, Variable):
        return None
    return smart_constant_value(pred)


def smart_cond(pred, true_fn, false_fn, name=None):
    """`true_fn()` or `false_fn()` when `pred` is known at graph construction, else a
    `tf.cond` on it."""
    value = constant_bool(pred)
    if value is not None:
        return true_fn() if value else false_fn()
    return control_flow.cond(pred, true_fn, false_fn, name=name)
