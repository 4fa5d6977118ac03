"""`tf.keras.layers.Layer` over `tf.layers.Layer` (layers/base.py: variable scopes, TF1
variable names "dense/kernel:0", per-graph names dense, dense_1, ...).

What Keras adds here:
- string identifiers for activations, initializers, regularizers and constraints
  (`resolve_identifiers`), and the Keras-only constructor arguments (`input_shape`,
  `input_dim`, `batch_input_shape`, `batch_size`, `weights`);
- the functional graph: each call records a `Node` (the layer, its input and output
  tensors, the keyword arguments) and tags each output tensor with `_keras_history =
  (layer, node_index, tensor_index)`; `Model(inputs, outputs)` walks these back;
- the learning phase: a layer whose `call` takes `training` gets
  `backend.learning_phase()` when the caller gives none;
- per node, the update ops and losses created by that call (a Model collects the
  updates of its own nodes only, so calling a layer on another input does not make the
  model's train op depend on that input);
- as TF1 Keras (tf.compat.v1.keras) does, and unlike tf.layers, update ops and losses
  stay with the layer (`layer.updates`, `layer.losses`, `model.updates`): they do not join
  the UPDATE_OPS and REGULARIZATION_LOSSES collections;
- masks (Keras's `_keras_mask` on tensors): a call gathers its inputs' masks (or takes
  `mask=`), hands them to `call` when it takes a `mask` argument, and sets the outputs'
  masks from `compute_mask` when the layer supports masking or defines `compute_mask`
  (else the mask stops there), unless `call` already set them; a layer that returns one
  of its inputs unchanged returns an identity of it (the input keeps its own history).
"""

from __future__ import annotations

import contextlib
import functools
import inspect

from tensorflux.framework import graph as graph_lib
from tensorflux.framework import tensor_shape
from tensorflux.framework.operation import Tensor
from tensorflux.keras import activations, constraints, initializers, regularizers
from tensorflux.keras import backend as K
from tensorflux.layers import base as tf_base
from tensorflux.variables import variable_scope as vs

__all__ = ["Layer", "InputSpec", "Node", "resolve_identifiers"]

InputSpec = tf_base.InputSpec
_KERAS_KWARGS = ("input_shape", "input_dim", "batch_input_shape", "batch_size", "weights",
                 "input_length")
# One ([updates], [losses]) pair per layer call in progress: what the calls below it add.
_RECORDERS: list = []


def resolve_identifiers(kwargs: dict) -> dict:
    """`kwargs` with string or dict identifiers turned into objects, by argument name."""
    out = dict(kwargs)
    for key, value in kwargs.items():
        if value is None or (not isinstance(value, (str, dict)) and key != "activation"):
            continue
        if key.endswith("initializer"):
            out[key] = initializers.get(value)
        elif key.endswith("regularizer"):
            out[key] = regularizers.get(value)
        elif key.endswith("constraint"):
            out[key] = constraints.get(value)
        elif key in ("activation", "recurrent_activation"):
            out[key] = activations.get(value)
    return out


class Node:
    """One call of a layer: input and output tensors (lists), the call's keyword
    arguments, and the update ops and losses the call created."""

    __slots__ = ("layer", "inputs", "outputs", "kwargs", "updates", "losses", "single_input")

    def __init__(self, layer, inputs, outputs, kwargs, updates, losses, single_input):
        self.layer, self.inputs, self.outputs, self.kwargs = layer, inputs, outputs, kwargs
        self.updates, self.losses, self.single_input = updates, losses, single_input

    @property
    def inbound_layers(self):
        """The layers whose outputs this call took (from the inputs' Keras history): one
        layer for one input, as TF >= 1.14's Node gives (cleverhans reads
        `softmax_layer._inbound_nodes[0].inbound_layers.name`), else a list; an input with
        no history (a plain tensor) has none."""
        layers = [t._keras_history[0] for t in self.inputs if hasattr(t, "_keras_history")]
        return layers[0] if len(self.inputs) == 1 and layers else layers


def _flat(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


class Layer(tf_base.Layer):
    """The Keras layer base: subclass it with `build(input_shape)` (weights from
    `add_weight`, string initializers accepted), `call(inputs, training=None)` and
    `compute_output_shape`. See the module docstring for what Keras adds."""

    supports_masking = False

    def __init_subclass__(cls, **kwargs):
        """Every layer class's constructor records the arguments of the outermost call
        (`_constructor_args`): the default `get_config` gives them back."""
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None or getattr(init, "_records_arguments", False):
            return

        @functools.wraps(init)
        def recording_init(self, *args, **kw):
            if "_constructor_args" not in self.__dict__:
                self.__dict__["_constructor_args"] = (init, args, dict(kw))
            init(self, *args, **kw)

        recording_init._records_arguments = True
        cls.__init__ = recording_init

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        kwargs = self._keras_kwargs(kwargs)
        super().__init__(trainable=trainable, name=name, dtype=dtype, **kwargs)

    # ---- Keras-only constructor arguments -----------------------------------------------
    def _keras_kwargs(self, kwargs: dict) -> dict:
        """Takes the Keras-only arguments out of `kwargs` and keeps them on the layer."""
        kwargs = dict(kwargs)
        input_shape = kwargs.pop("input_shape", None)
        input_dim = kwargs.pop("input_dim", None)
        batch_input_shape = kwargs.pop("batch_input_shape", None)
        batch_size = kwargs.pop("batch_size", None)
        self._initial_weights = kwargs.pop("weights", None)
        if input_shape is None and input_dim is not None:
            input_shape = (input_dim,)
        if batch_input_shape is None and input_shape is not None:
            batch_input_shape = (batch_size,) + tuple(input_shape)
        self._batch_input_shape = (tuple(batch_input_shape) if batch_input_shape is not None
                                   else None)
        self._inbound_nodes: list = []
        self._weight_losses: list = []
        unknown = set(kwargs) - {"autocast", "dynamic", "trainable", "name", "dtype",
                                 "activity_regularizer"}
        if unknown:
            raise TypeError(f"Keyword argument not understood: {sorted(unknown)[0]}")
        out = {k: v for k, v in kwargs.items() if k not in ("autocast", "dynamic")}
        return resolve_identifiers(out)

    # ---- weights ------------------------------------------------------------------------
    def add_weight(self, name=None, shape=None, dtype=None, initializer=None,
                   regularizer=None, trainable=None, constraint=None, **kwargs):
        """A weight of this layer; identifiers may be names ('glorot_uniform', 'l2')."""
        ids = resolve_identifiers({"initializer": initializer, "regularizer": regularizer,
                                   "constraint": constraint})
        v = super().add_weight(name, shape, dtype=dtype, initializer=ids["initializer"],
                               trainable=True if trainable is None else trainable,
                               constraint=ids["constraint"], **kwargs)
        if ids["regularizer"] is not None:
            with graph_lib.name_scope(f"{v.op.name}/Regularizer"):
                loss = ids["regularizer"](v)
            if loss is not None:
                self._weight_losses.append(loss)
                self.add_loss(loss)
        return v

    def _publish(self, key: str, value) -> None:
        """Losses and updates go to the layer calls in progress, not to the graph
        collections (TF1 Keras)."""
        for recorder in _RECORDERS:
            recorder[0 if key == graph_lib.GraphKeys.UPDATE_OPS else 1].append(value)

    def get_weights(self) -> list:
        return K.batch_get_value(self.weights)

    def set_weights(self, weights) -> None:
        """Sets the layer's weights from NumPy arrays, in `weights` order.

        Raises:
          ValueError: a different number of arrays or a shape that does not match."""
        params = self.weights
        if len(params) != len(weights):
            raise ValueError(f"You called `set_weights(weights)` on layer \"{self.name}\" "
                             f"with a weight list of length {len(weights)}, but the layer "
                             f"was expecting {len(params)} weights.")
        pairs = []
        for p, w in zip(params, weights, strict=True):
            if tuple(p.shape.as_list()) != tuple(getattr(w, "shape", ())):
                raise ValueError(f"Layer weight shape {tuple(p.shape.as_list())} not "
                                 f"compatible with provided weight shape "
                                 f"{tuple(getattr(w, 'shape', ()))}")
            pairs.append((p, w))
        K.batch_set_value(pairs)

    # ---- calling ------------------------------------------------------------------------
    def __call__(self, inputs, *args, **kwargs):
        """Calls the layer (building it first), records the call as a Node and tags the
        outputs with `_keras_history`."""
        if not hasattr(self, "_inbound_nodes"):
            raise RuntimeError(f"Layer {type(self).__name__} was not initialized: call "
                               "super().__init__() in its __init__.")
        params = _call_params(self)
        if "training" in params and kwargs.get("training") is None:
            kwargs["training"] = K.learning_phase()
        explicit_mask = "mask" in kwargs
        input_masks = kwargs["mask"] if explicit_mask else collect_masks(inputs)
        if "mask" in params and input_masks is not None and not explicit_mask:
            kwargs["mask"] = input_masks
        was_built = self.built
        with recording() as (updates, losses):
            outputs = self._call_layer(inputs, *args, **kwargs)
            outputs = self._copy_returned_inputs(inputs, outputs)
        if not was_built and self._initial_weights is not None:
            self.set_weights(self._initial_weights)
            self._initial_weights = None
        self._set_mask_metadata(inputs, outputs, input_masks)
        if not explicit_mask:
            kwargs.pop("mask", None)
        self._record_node(inputs, outputs, kwargs, updates, losses)
        return outputs

    def _copy_returned_inputs(self, inputs, outputs):
        """`outputs` with any tensor that is one of `inputs` replaced by an identity (as
        Keras does: the input keeps its history and mask)."""
        ids = {id(t) for t in _flat(inputs)}
        flat = _flat(outputs)
        if not any(id(t) in ids for t in flat):
            return outputs
        from tensorflux.ops import array_ops

        with graph_lib.name_scope(self.name):
            copied = [array_ops.identity(t) if id(t) in ids else t for t in flat]
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(copied)
        return copied[0]

    # ---- masks --------------------------------------------------------------------------
    def compute_mask(self, inputs, mask=None):
        """The output mask: the input mask when the layer supports masking, else None.

        Raises:
          TypeError: a mask given to a layer that does not support masking."""
        if not self.supports_masking:
            if any(m is not None for m in _flat(mask)):
                raise TypeError(f"Layer {self.name} does not support masking, but was "
                                f"passed an input_mask: {mask}")
            return None
        return mask

    def _set_mask_metadata(self, inputs, outputs, input_masks) -> None:
        flat = [t for t in _flat(outputs) if isinstance(t, Tensor)]
        if flat and all(getattr(t, "_keras_mask", None) is not None for t in flat):
            return
        if self.supports_masking or type(self).compute_mask is not Layer.compute_mask:
            masks = self.compute_mask(inputs, input_masks)
            masks = [None] * len(flat) if masks is None else _flat(masks)
        else:
            masks = [None] * len(flat)
        for t, m in zip(flat, masks, strict=False):
            t._keras_mask = m

    def get_input_mask_at(self, node_index):
        masks = [getattr(t, "_keras_mask", None)
                 for t in self._inbound_nodes[node_index].inputs]
        return masks[0] if len(masks) == 1 else masks

    def get_output_mask_at(self, node_index):
        masks = [getattr(t, "_keras_mask", None)
                 for t in self._inbound_nodes[node_index].outputs]
        return masks[0] if len(masks) == 1 else masks

    input_mask = property(lambda self: self._mask_of("inputs", "input"))
    output_mask = property(lambda self: self._mask_of("outputs", "output"))

    def _mask_of(self, attr, what):
        values = _flat(self._node_attr(attr, what))
        masks = [getattr(t, "_keras_mask", None) for t in values]
        return masks[0] if len(masks) == 1 else masks

    def _set_scope(self, scope=None) -> None:
        """Variables live under the layer's own name (given at construction, as Keras
        names layers), not under the next unused scope of its class's name."""
        if self._scope is None and scope is None and self._scope_arg is None and \
                not self._reuse:
            with vs.variable_scope(None, default_name=self._name) as s:
                self._scope = s
            return
        super()._set_scope(scope)

    def _call_layer(self, inputs, *args, **kwargs):
        return tf_base.Layer.__call__(self, inputs, *args, **kwargs)

    def _record_node(self, inputs, outputs, kwargs, updates, losses) -> None:
        node_kwargs = {k: v for k, v in kwargs.items() if k != "training"}
        node = Node(self, _flat(inputs), _flat(outputs), node_kwargs, list(updates),
                    list(losses), not isinstance(inputs, (list, tuple)))
        index = len(self._inbound_nodes)
        self._inbound_nodes.append(node)
        for i, t in enumerate(node.outputs):
            if isinstance(t, Tensor):
                t._keras_history = (self, index, i)

    # ---- what the recorded calls tell ---------------------------------------------------
    def _node_attr(self, attr: str, what: str):
        """`input`/`output`: those of the layer's first call, as tf.keras gives them (also
        when the layer was called again: cleverhans' Keras wrapper reads every layer's
        `output` after calling the model once more)."""
        if not self._inbound_nodes:
            if what == "output":
                raise AttributeError(f"Layer {self.name} has no inbound nodes.")
            raise AttributeError(f"Layer {self.name} is not connected, no {what} to return.")
        values = getattr(self._inbound_nodes[0], attr)
        return values[0] if len(values) == 1 else values

    def _node_shape(self, attr: str, what: str):
        """`input_shape`/`output_shape`: the one shape of every call's tensors."""
        if not self._inbound_nodes:
            if what == "input":
                raise AttributeError(f"The layer \"{self.name}\" has never been called and "
                                     "thus has no defined input shape. Note that the "
                                     "`input_shape` property is only available for Functional "
                                     "and Sequential models.")
            raise AttributeError("The layer has never been called and thus has no defined "
                                 "output shape.")
        shapes = []
        for node in self._inbound_nodes:
            values = getattr(node, attr)
            shape = _shapes(values[0] if len(values) == 1 else values)
            if shape not in shapes:
                shapes.append(shape)
        if len(shapes) > 1:
            raise AttributeError(f"The layer \"{self.name}\" has multiple inbound nodes, with "
                                 f"different {what} shapes. Hence the notion of \"{what} "
                                 f"shape\" is ill-defined for the layer. Use "
                                 f"`get_{what}_shape_at(node_index)` instead.")
        return shapes[0]

    input = property(lambda self: self._node_attr("inputs", "input"))
    output = property(lambda self: self._node_attr("outputs", "output"))

    def _node_attr_at(self, node_index: int, attr: str, what: str):
        if not self._inbound_nodes:
            raise RuntimeError(f"The layer has never been called and thus has no defined "
                               f"{what}.")
        if not -len(self._inbound_nodes) <= node_index < len(self._inbound_nodes):
            raise ValueError(f"Asked to get {what} at node {node_index}, but the layer has "
                             f"only {len(self._inbound_nodes)} inbound nodes.")
        values = getattr(self._inbound_nodes[node_index], attr)
        return values[0] if len(values) == 1 else values

    def get_input_at(self, node_index):
        """The input of the layer's `node_index`-th call (RuntimeError if never called)."""
        return self._node_attr_at(node_index, "inputs", "input")

    def get_output_at(self, node_index):
        """The output of the layer's `node_index`-th call (RuntimeError if never called)."""
        return self._node_attr_at(node_index, "outputs", "output")

    @property
    def input_shape(self):
        return self._node_shape("inputs", "input")

    @property
    def output_shape(self):
        return self._node_shape("outputs", "output")

    def get_input_shape_at(self, node_index):
        return _shapes(self.get_input_at(node_index))

    def get_output_shape_at(self, node_index):
        return _shapes(self.get_output_at(node_index))

    def get_config(self) -> dict:
        """Keras's layer config: name, trainable, dtype, the batch input shape when one was
        given, and the constructor's other arguments as they were passed (identifiers and
        nested layers serialized: keras/saving.py)."""
        from tensorflux.keras import saving

        config = super().get_config()
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = list(self._batch_input_shape)
        config.update(saving.constructor_config(self))
        return config

    @classmethod
    def from_config(cls, config):
        from tensorflux.keras import saving

        return saving.construct(cls, saving.deserialize_arguments(cls, config))


def collect_masks(inputs):
    """The `_keras_mask` of `inputs` (a list for a list), or None when none has one."""
    if isinstance(inputs, (list, tuple)):
        masks = [getattr(t, "_keras_mask", None) for t in inputs]
        return None if all(m is None for m in masks) else masks
    return getattr(inputs, "_keras_mask", None)


def _call_params(layer):
    """The parameter names of `layer.call` (cached per class)."""
    cls = type(layer)
    cache = cls.__dict__.get("_call_params_cache")
    if cache is None or cache[0] is not cls.call:
        cache = (cls.call, frozenset(inspect.signature(layer.call).parameters))
        cls._call_params_cache = cache
    return cache[1]


@contextlib.contextmanager
def recording():
    """([updates], [losses]) that collect what layer calls add inside the block."""
    recorder = ([], [])
    _RECORDERS.append(recorder)
    try:
        yield recorder
    finally:
        # by identity: recorders are tuples, and an empty one equals any other empty one
        # (list.remove took an enclosing recorder for this one)
        del _RECORDERS[max(i for i, r in enumerate(_RECORDERS) if r is recorder)]


def _shapes(x):
    if isinstance(x, (list, tuple)):
        return [_shapes(t) for t in x]
    return tuple(tensor_shape.TensorShape(x.shape).as_list())
