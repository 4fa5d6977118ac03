"""Layer wrappers: Bidirectional (a recurrent layer run forward and backward) and
TimeDistributed (a layer applied to every step of axis 1)."""

from __future__ import annotations

from tensorflux.framework import tensor_shape
from tensorflux.keras import backend as K
from tensorflux.keras.engine.base_layer import Layer
from tensorflux.keras.layers.recurrent import RNN
from tensorflux.ops import array_ops, joining_ops

__all__ = ["Wrapper", "Bidirectional", "TimeDistributed"]


class Wrapper(Layer):
    """A layer around another one (`self.layer`), whose weights it reports."""

    def __init__(self, layer, **kwargs):
        super().__init__(**kwargs)
        self.layer = layer

    def _inner(self):
        return [self.layer]

    @property
    def trainable_weights(self):
        if not self.trainable:
            return []
        return [w for inner in self._inner() for w in inner.trainable_weights]

    @property
    def non_trainable_weights(self):
        if not self.trainable:
            return [w for inner in self._inner() for w in inner.weights]
        return [w for inner in self._inner() for w in inner.non_trainable_weights]

    @property
    def losses(self):
        return [x for inner in self._inner() for x in inner.losses] + list(self._losses)

    @property
    def updates(self):
        return [x for inner in self._inner() for x in inner.updates] + list(self._updates)


class Bidirectional(Wrapper):
    """Runs a copy of the recurrent `layer` forward ("forward_<name>") and one backward
    ("backward_<name>") and merges their outputs.

    Args:
      layer: a SimpleRNN, LSTM or GRU instance (unbuilt).
      merge_mode: "concat", "sum", "mul", "ave" or None (a list [forward, backward]).

    Raises:
      ValueError: an unknown merge_mode or a layer that is not one of the recurrent layers.
    """

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None,
                 **kwargs):
        if merge_mode not in ("sum", "mul", "ave", "concat", None):
            raise ValueError(f"Invalid merge mode. Received: {merge_mode}. Merge mode "
                             "should be one of {\"sum\", \"mul\", \"ave\", \"concat\", None}")
        if not isinstance(layer, RNN) or not hasattr(layer, "_config"):
            raise ValueError("Please initialize `Bidirectional` layer with a SimpleRNN, LSTM "
                             f"or GRU instance. Received: {layer}")
        if layer._batch_input_shape is not None and "input_shape" not in kwargs:
            kwargs["batch_input_shape"] = layer._batch_input_shape
        super().__init__(layer, **kwargs)
        cls, config = type(layer), dict(layer._config)
        self.forward_layer = cls(name="forward_" + layer.name, **config)
        if backward_layer is None:
            config["go_backwards"] = not config.get("go_backwards", False)
            backward_layer = cls(name="backward_" + layer.name, **config)
        self.backward_layer = backward_layer
        for inner in (self.forward_layer, self.backward_layer):
            inner.zero_output_for_mask = inner.return_sequences  # (Keras forces this)
        self.merge_mode = merge_mode
        self.return_sequences = config["return_sequences"]
        self.return_state = config["return_state"]
        self._initial_weights = weights

    def _inner(self):
        return [self.forward_layer, self.backward_layer]

    supports_masking = True

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, list):
            mask = mask[0]
        if self.return_sequences:
            output_mask = mask if self.merge_mode else [mask, mask]
        else:
            output_mask = None if self.merge_mode else [None, None]
        if self.return_state:
            states = [None] * len(self.forward_layer.cell.state_size) * 2
            return (output_mask if isinstance(output_mask, list) else [output_mask]) + states
        return output_mask

    def call(self, inputs, training=None, mask=None, initial_state=None):
        fw_state = bw_state = None
        if initial_state is not None:
            half = len(initial_state) // 2
            fw_state, bw_state = initial_state[:half], initial_state[half:]
        y = self.forward_layer(inputs, training=training, initial_state=fw_state, mask=mask)
        y_rev = self.backward_layer(inputs, training=training, initial_state=bw_state,
                                    mask=mask)
        states = []
        if self.return_state:
            states = list(y[1:]) + list(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            y_rev = joining_ops.reverse(y_rev, [1])
        if self.merge_mode == "concat":
            out = K.concatenate([y, y_rev])
        elif self.merge_mode == "sum":
            out = y + y_rev
        elif self.merge_mode == "ave":
            out = (y + y_rev) / 2.0
        elif self.merge_mode == "mul":
            out = y * y_rev
        else:
            out = [y, y_rev]
        if self.return_state:
            return (out if isinstance(out, list) else [out]) + states
        return out


class TimeDistributed(Wrapper):
    """Applies `layer` to each step of [batch, time, ...] (folding time into the batch)."""

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError("Please initialize `TimeDistributed` layer with a "
                             f"`tf.keras.layers.Layer` instance. Received: {layer}")
        super().__init__(layer, **kwargs)

    supports_masking = True

    def call(self, inputs, training=None, mask=None):
        dims = inputs.shape.as_list()
        if len(dims) < 3:
            raise ValueError("`TimeDistributed` Layer should be passed an `input_shape` "
                             f"with at least 3 dimensions, received: {dims}")
        dyn = array_ops.shape(inputs)
        inner_shape = [-1] + [d if d is not None else dyn[i + 2]
                              for i, d in enumerate(dims[2:])]
        flat = array_ops.reshape(inputs, joining_ops.stack(inner_shape))
        flat.set_shape([None] + dims[2:])
        if self.layer._scope is None:
            self.layer._scope = self._scope  # Keras: "time_distributed/kernel"
        kwargs = {"training": training} if "training" in _call_args(self.layer) else {}
        if mask is not None and "mask" in _call_args(self.layer):
            kwargs["mask"] = self._inner_mask(mask)
        y = self.layer(flat, **kwargs)
        ydims = y.shape.as_list()
        ydyn = array_ops.shape(y)
        out_shape = [dyn[0], dyn[1]] + [d if d is not None else ydyn[i + 1]
                                        for i, d in enumerate(ydims[1:])]
        out = array_ops.reshape(y, joining_ops.stack(out_shape))
        out.set_shape(dims[:2] + ydims[1:])
        return out

    @staticmethod
    def _inner_mask(mask):
        """A [batch, time, ...] mask with time folded into the batch."""
        dims = mask.shape.as_list()
        dyn = array_ops.shape(mask)
        shape = [-1] + [d if d is not None else dyn[i + 2] for i, d in enumerate(dims[2:])]
        return array_ops.reshape(mask, joining_ops.stack(shape) if len(shape) > 1 else shape)

    def compute_mask(self, inputs, mask=None):
        """The inner layer's mask per step, folded back to [batch, time, ...]; else the
        input mask reduced to [batch, time] (any over the other axes); else None."""
        inner_mask = None if mask is None else self._inner_mask(mask)
        dims = inputs.shape.as_list()
        dyn = array_ops.shape(inputs)
        flat = array_ops.reshape(inputs, joining_ops.stack(
            [-1] + [d if d is not None else dyn[i + 2] for i, d in enumerate(dims[2:])]))
        flat.set_shape([None] + dims[2:])
        output_mask = self.layer.compute_mask(flat, inner_mask)
        if output_mask is None:
            if mask is None:
                return None
            output_mask = mask
            for _ in range(2, len(mask.shape.as_list())):
                output_mask = K.any(output_mask, axis=-1)
            return output_mask
        odims = output_mask.shape.as_list()
        odyn = array_ops.shape(output_mask)
        shape = [-1, dims[1] if dims[1] is not None else dyn[1]] + [
            d if d is not None else odyn[i + 1] for i, d in enumerate(odims[1:])]
        return array_ops.reshape(output_mask, joining_ops.stack(shape))

    def compute_output_shape(self, input_shape):
        dims = tensor_shape.TensorShape(input_shape).as_list()
        inner = self.layer.compute_output_shape(tensor_shape.TensorShape([dims[0]] + dims[2:]))
        return tensor_shape.TensorShape(dims[:2] + inner.as_list()[1:])


def _call_args(layer):
    import inspect

    return inspect.signature(layer.call).parameters
