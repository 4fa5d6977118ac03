"""`tf.keras.Model` as a network of layers: functional (`Model(inputs, outputs)`, built
from the `_keras_history` of its outputs) or subclassed (`call` defined by the user;
its layers are found among its attributes).

A functional model's `layers` are in topological order (inputs first); calling it on new
tensors replays its nodes in that order with the same (already built) layers, so the
weights are shared. Its `updates` and its activity `losses` are those its own nodes made,
not those of other calls of the same layers.
"""

from __future__ import annotations

from tensorflux.framework import graph as graph_lib
from tensorflux.keras import backend as K
from tensorflux.keras.engine.base_layer import Layer, _flat, _shapes, recording
from tensorflux.keras.engine.input_layer import InputLayer
from tensorflux.variables import trackable

__all__ = ["Network"]


def _dedup(items) -> list:
    seen, out = set(), []
    for x in items:
        if id(x) not in seen:
            seen.add(id(x))
            out.append(x)
    return out


class Network(Layer):
    """A model's graph bookkeeping; `Model` adds training (engine/training.py)."""

    def __init__(self, *args, **kwargs):
        inputs = kwargs.pop("inputs", args[0] if len(args) > 0 else None)
        outputs = kwargs.pop("outputs", args[1] if len(args) > 1 else None)
        if len(args) > 2:
            raise TypeError("Model() takes `inputs` and `outputs` as positional arguments")
        name = kwargs.pop("name", None)
        trainable = kwargs.pop("trainable", True)
        if kwargs:
            raise TypeError(f"Keyword argument not understood: {sorted(kwargs)[0]}")
        self._layer_attrs: list = []
        super().__init__(trainable=trainable, name=name)
        self._is_graph_network = inputs is not None and outputs is not None
        self._nodes: list = []
        self.inputs, self.outputs = [], []
        if self._is_graph_network:
            self._init_graph_network(inputs, outputs)

    # ---- the graph --------------------------------------------------------------------
    def _init_graph_network(self, inputs, outputs) -> None:
        self._is_graph_network = True
        self._nested_inputs, self._nested_outputs = inputs, outputs
        self.inputs, self.outputs = _flat(inputs), _flat(outputs)
        for x in self.inputs:
            history = getattr(x, "_keras_history", None)
            if history is None or not isinstance(history[0], InputLayer):
                raise ValueError("Input tensors to a Model must come from `tf.keras.Input`. "
                                 f"Received: {x} (missing previous layer metadata).")
        for y in self.outputs:
            if not hasattr(y, "_keras_history"):
                raise ValueError("Output tensors of a Model must be the output of a Keras "
                                 f"`Layer` (thus holding past layer metadata). Found: {y}")
        self._nodes = self._topological_nodes()
        self._layer_order = self._layers_by_depth()
        self.built = True

    def _layers_by_depth(self) -> list:
        """The layers in Keras's order: deepest first (a node's depth is the longest
        path from it to an output, a layer's the largest of its nodes'), layers of one
        depth in the order a depth-first walk from the outputs first meets them (an input
        that no output needs, first among the shallowest). get_weights, summaries and
        HDF5 files follow it."""
        first_seen: dict = {}
        visited: set = set()
        by_id = {id(n): n for n in self._nodes}

        def walk(tensor):
            layer, index, _ = tensor._keras_history
            node = layer._inbound_nodes[index]
            if id(node) in visited:
                return
            visited.add(id(node))
            first_seen.setdefault(id(layer), len(first_seen))
            for t in node.inputs:
                walk(t)

        for y in self.outputs:
            walk(y)
        # self._nodes is topological (inputs first): going backwards reaches a node after
        # every node that reads it. A shared layer's later node is at least as deep as the
        # layer's nodes seen so far (Keras's rule).
        depth: dict = {}
        layer_depth: dict = {}
        layers: dict = {}
        for node in reversed(self._nodes):
            key = id(node.layer)
            layers[key] = node.layer
            d = max(depth.get(id(node), 0), layer_depth.get(key, 0))
            depth[id(node)] = layer_depth[key] = d
            for t in node.inputs:
                layer, index, _ = t._keras_history
                parent = id(layer._inbound_nodes[index])
                if parent in by_id:
                    depth[parent] = max(depth.get(parent, 0), d + 1)
        order = sorted(layers, key=lambda k: (-layer_depth[k], first_seen.get(k, -1)))
        return [layers[k] for k in order]

    def _topological_nodes(self) -> list:
        """The nodes between the inputs and the outputs, each after those it reads.

        Raises:
          ValueError: an output that needs a tensor the inputs do not give (a graph
            disconnected from the inputs)."""
        order, state = [], {}
        input_ids = {id(x) for x in self.inputs}

        def visit(tensor):
            layer, index, _ = tensor._keras_history
            node = layer._inbound_nodes[index]
            key = id(node)
            if state.get(key) == "done":
                return
            if isinstance(layer, InputLayer) and id(tensor) not in input_ids:
                raise ValueError(f"Graph disconnected: cannot obtain value for tensor {tensor} "
                                 f"at layer \"{layer.name}\". The following previous layers "
                                 "were accessed without issue: "
                                 f"{[n.layer.name for n in order]}")
            state[key] = "visiting"
            for t in node.inputs:
                if not hasattr(t, "_keras_history"):
                    raise ValueError(f"Graph disconnected: the input {t} of layer "
                                     f"\"{layer.name}\" does not come from a Keras layer.")
                visit(t)
            state[key] = "done"
            order.append(node)

        for x in self.inputs:
            visit(x)
        for y in self.outputs:
            visit(y)
        return order

    @property
    def layers(self) -> list:
        if self._is_graph_network:
            return list(self._layer_order)
        return _dedup(self._layer_attrs)

    def __setattr__(self, name, value):
        if isinstance(value, Layer) and name != "layer" and not name.startswith("_"):
            self.__dict__.setdefault("_layer_attrs", []).append(value)
        elif isinstance(value, (list, tuple)) and not name.startswith("_") and \
                value and all(isinstance(v, Layer) for v in value):
            self.__dict__.setdefault("_layer_attrs", []).extend(value)
        object.__setattr__(self, name, value)

    def _checkpoint_children(self) -> list:
        """Keras's dependencies for object-based checkpoints: a functional or Sequential
        model's layers by position ("layer-i", and "layer_with_weights-k" counting only
        layers with weights; a subclassed model has none of these), then what every layer
        tracks (base.py), then the optimizer once compiled."""
        out = []
        if self._is_graph_network or type(self).__module__.startswith("tensorflux."):
            weighted = 0
            for index, layer in enumerate(self.layers):
                if layer.weights:
                    out.append((f"layer_with_weights-{weighted}", layer))
                    weighted += 1
                out.append((f"layer-{index}", layer))
        out += [(k, v) for k, v in super()._checkpoint_children() if k != "optimizer"]
        optimizer = getattr(self, "optimizer", None)
        if trackable.is_trackable(optimizer):
            out.append(("optimizer", optimizer))
        return out

    def get_layer(self, name=None, index=None):
        """The layer called `name`, or at `index` in `layers`.

        Raises:
          ValueError: no such layer, or neither argument."""
        if index is not None:
            if len(self.layers) <= index:
                raise ValueError(f"Was asked to retrieve layer at index {index} but model "
                                 f"only has {len(self.layers)} layers.")
            return self.layers[index]
        if name is None:
            raise ValueError("Provide either a layer name or layer index.")
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}. Existing layers are: "
                         f"{[x.name for x in self.layers]}.")

    # ---- weights, updates, losses -----------------------------------------------------
    @property
    def trainable_weights(self):
        if not self.trainable:
            return []
        own = list(self._trainable_weights)
        return _dedup(own + [w for layer in self.layers for w in layer.trainable_weights])

    @property
    def non_trainable_weights(self):
        own = list(self._non_trainable_weights)
        if not self.trainable:
            own += list(self._trainable_weights)
            return _dedup(own + [w for layer in self.layers for w in layer.weights])
        return _dedup(own + [w for layer in self.layers for w in layer.non_trainable_weights])

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights

    @property
    def weights(self):
        """Layer by layer, each layer's weights (trainable first), as Keras orders them
        for get_weights/set_weights."""
        own = list(self._trainable_weights) + list(self._non_trainable_weights)
        return _dedup(own + [w for layer in self.layers for w in layer.weights])

    variables = weights

    @property
    def updates(self) -> list:
        if self._is_graph_network:
            return _dedup(u for n in self._nodes for u in n.updates)
        return _dedup(u for n in self._inbound_nodes[:1] for u in n.updates)

    @property
    def losses(self) -> list:
        weight_losses = [x for layer in self.layers for x in _weight_losses(layer)]
        if self._is_graph_network:
            activity = [x for n in self._nodes for x in n.losses]
        else:
            activity = [x for n in self._inbound_nodes[:1] for x in n.losses]
        return _dedup(weight_losses + activity + list(self._losses))

    # ---- calling ----------------------------------------------------------------------
    def __call__(self, inputs, *args, **kwargs):
        if not self._is_graph_network:
            self._in_call = True
            try:
                return super().__call__(inputs, *args, **kwargs)
            finally:
                self._in_call = False
        with recording() as (updates, losses), graph_lib.name_scope(self.name):
            outputs = self._run_graph(inputs, kwargs.get("training"))
        self._record_node(inputs, outputs, {}, updates, losses)
        return outputs

    def call(self, inputs, training=None, mask=None):
        if self._is_graph_network:
            return self._run_graph(inputs, training)
        raise NotImplementedError("When subclassing the `Model` class, you should implement "
                                  "a `call` method.")

    def _run_graph(self, inputs, training):
        """The model's outputs computed from `inputs` by replaying its nodes.

        Raises:
          ValueError: a different number of inputs than the model has."""
        flat = _flat(inputs)
        if len(flat) != len(self.inputs):
            raise ValueError(f"Layer {self.name} expects {len(self.inputs)} input(s), but it "
                             f"received {len(flat)} input tensors.")
        values = {id(x): t for x, t in zip(self.inputs, flat, strict=True)}
        for node in self._nodes:
            if isinstance(node.layer, InputLayer):
                continue
            args = [values[id(t)] for t in node.inputs]
            kwargs = dict(node.kwargs)
            if training is not None and "training" in _call_params(node.layer):
                kwargs["training"] = training
            out = node.layer(args[0] if node.single_input else args, **kwargs)
            for old, new in zip(node.outputs, _flat(out), strict=True):
                values[id(old)] = new
        outs = [values[id(y)] for y in self.outputs]
        return outs[0] if len(outs) == 1 and not isinstance(self._nested_outputs, list) \
            else outs

    # ---- description ------------------------------------------------------------------
    @property
    def input_names(self):
        return [x._keras_history[0].name for x in self.inputs]

    @property
    def output_names(self):
        return [y._keras_history[0].name for y in self.outputs]

    @property
    def input(self):
        return self.inputs[0] if len(self.inputs) == 1 else self.inputs

    @property
    def output(self):
        return self.outputs[0] if len(self.outputs) == 1 else self.outputs

    @property
    def input_shape(self):
        """The shape(s) of the model's own inputs (not of the calls made on it)."""
        return _shapes(self.input)

    @property
    def output_shape(self):
        return _shapes(self.output)

    def count_params(self) -> int:
        return sum(w.shape.num_elements() for w in self.weights)

    def summary(self, line_length=None, positions=None, print_fn=None) -> None:
        """Prints the layers, their output shapes and parameter counts, as Keras does.

        Raises:
          ValueError: a model not built yet."""
        if not self.built:
            raise ValueError("This model has not yet been built. Build the model first by "
                             "calling `build()` or by calling the model on a batch of data.")
        print_fn = print_fn or print
        width = line_length or 65
        cols = [int(width * p) for p in (positions or [0.45, 0.85, 1.0])]

        def row(fields):
            line = ""
            for text, end in zip(fields, cols, strict=True):
                line = (line + str(text))[:end].ljust(end)
            print_fn(line)

        print_fn(f'Model: "{self.name}"')
        print_fn("_" * width)
        row([" Layer (type)", "Output Shape", "Param #"])
        print_fn("=" * width)
        layers = [x for x in self.layers if not (isinstance(x, InputLayer) and
                                                 not self._is_graph_network)]
        for i, layer in enumerate(layers):
            try:
                shape = _shape_text(layer.output_shape)
            except AttributeError:
                shape = "multiple"
            row([f" {layer.name} ({type(layer).__name__})", shape, layer.count_params()])
            print_fn(("=" if i == len(layers) - 1 else "_") * width)
        trainable = sum(w.shape.num_elements() for w in self.trainable_weights)
        total = self.count_params()
        print_fn(f"Total params: {total:,}")
        print_fn(f"Trainable params: {trainable:,}")
        print_fn(f"Non-trainable params: {total - trainable:,}")
        print_fn("_" * width)

    # ---- weights I/O ------------------------------------------------------------------
    def get_weights(self) -> list:
        return K.batch_get_value(self.weights)

    def set_weights(self, weights) -> None:
        Layer.set_weights(self, weights)


def _weight_losses(layer) -> list:
    if isinstance(layer, Network):
        return layer.losses
    return list(getattr(layer, "_weight_losses", [])) + [
        x for inner in getattr(layer, "_inner", lambda: [])() for x in inner.losses]


def _call_params(layer):
    import inspect

    return inspect.signature(layer.call).parameters


def _shape_text(shape) -> str:
    if isinstance(shape, list):
        return str([tuple(s) for s in shape]) if len(shape) > 1 else str(tuple(shape[0]))
    return str(tuple(shape))

