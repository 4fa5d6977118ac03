"""Keras recurrent layers: SimpleRNN, LSTM, GRU (and their cells, and `RNN(cell)`),
run by `tf.nn.dynamic_rnn`'s while loop (nn/rnn.py).

Weights are Keras's: "<layer>/<cell>/kernel" [input, gates * units],
"recurrent_kernel" [units, gates * units], "bias"; gates in Keras's order (LSTM: i, f,
c, o; GRU: z, r, h). The defaults are those of `tf.compat.v1.keras` (TF1 programs' tf.keras):
recurrent activation hard_sigmoid, GRU reset_after=False (bias [3 * units]; with
reset_after=True the bias is [2, 3 * units] and the reset gate multiplies the recurrent
product). Dropout masks (`dropout`, `recurrent_dropout`) are drawn once per call and
shared by all steps and gates (Keras's implementation=2; Keras 1-style per-gate masks are
not drawn), in the training phase only.
"""

from __future__ import annotations

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.keras import activations, saving
from tensorflux.keras import backend as K
from tensorflux.keras.engine.base_layer import InputSpec, Layer, resolve_identifiers
from tensorflux.keras.initializers import Ones
from tensorflux.nn import rnn as rnn_lib
from tensorflux.ops import array_ops, comparison_ops, joining_ops, math_ops, matrix_ops, nn_ops
from tensorflux.ops.joining_ops import split as slicing_split
from tensorflux.variables import variable_scope as vs

__all__ = ["RNN", "SimpleRNN", "LSTM", "GRU", "SimpleRNNCell", "LSTMCell", "GRUCell"]


class _Cell(Layer):
    """A recurrent cell: `call(x_t, states) -> (output, new_states)`."""

    _gates = 1

    def __init__(self, units, activation="tanh", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, recurrent_activation="hard_sigmoid", **kwargs):
        super().__init__(**kwargs)
        self.units = int(units)
        self.use_bias = use_bias
        self.dropout = min(1.0, max(0.0, dropout))
        self.recurrent_dropout = min(1.0, max(0.0, recurrent_dropout))
        ids = resolve_identifiers({
            "activation": activation, "recurrent_activation": recurrent_activation,
            "kernel_initializer": kernel_initializer,
            "recurrent_initializer": recurrent_initializer,
            "bias_initializer": bias_initializer, "kernel_regularizer": kernel_regularizer,
            "recurrent_regularizer": recurrent_regularizer,
            "bias_regularizer": bias_regularizer, "kernel_constraint": kernel_constraint,
            "recurrent_constraint": recurrent_constraint, "bias_constraint": bias_constraint})
        self._ids = ids
        self.activation = ids["activation"]
        self.recurrent_activation = ids["recurrent_activation"]
        self.masks = (None, None)

    state_size = property(lambda self: [self.units])
    output_size = property(lambda self: self.units)

    def _bias_shape(self):
        return (self._gates * self.units,)

    def _bias_initializer(self):
        return self._ids["bias_initializer"]

    def build(self, input_shape) -> None:
        dim = tensor_shape.TensorShape(input_shape).as_list()[-1]
        n = self._gates * self.units
        ids = self._ids
        self.kernel = self.add_weight("kernel", (dim, n), initializer=ids["kernel_initializer"],
                                      regularizer=ids["kernel_regularizer"],
                                      constraint=ids["kernel_constraint"])
        self.recurrent_kernel = self.add_weight(
            "recurrent_kernel", (self.units, n), initializer=ids["recurrent_initializer"],
            regularizer=ids["recurrent_regularizer"], constraint=ids["recurrent_constraint"])
        self.bias = self.add_weight("bias", self._bias_shape(),
                                    initializer=self._bias_initializer(),
                                    regularizer=ids["bias_regularizer"],
                                    constraint=ids["bias_constraint"]) if self.use_bias else None
        self.built = True

    def make_masks(self, inputs_2d, state, training):
        """Draws this call's dropout masks (None where the rate is 0)."""
        def mask(like, rate):
            if not rate:
                return None
            ones = array_ops.ones_like(like)
            return K.in_train_phase(lambda: nn_ops_dropout(ones, rate), ones, training)

        self.masks = (mask(inputs_2d, self.dropout), mask(state, self.recurrent_dropout))

    def _masked(self, x, h):
        dp, rdp = self.masks
        return (x * dp if dp is not None else x), (h * rdp if rdp is not None else h)


def nn_ops_dropout(x, rate):
    from tensorflux.nn import nn_impl

    return nn_impl.dropout(x, rate=rate)


class SimpleRNNCell(_Cell):
    """h_t = activation(x_t . kernel + h_{t-1} . recurrent_kernel + bias)."""

    def call(self, inputs, states):
        x, h = self._masked(inputs, states[0])
        z = matrix_ops.matmul(x, self.kernel) + matrix_ops.matmul(h, self.recurrent_kernel)
        if self.bias is not None:
            z = nn_ops.bias_add(z, self.bias)
        out = self.activation(z) if self.activation is not None else z
        return out, [out]


class LSTMCell(_Cell):
    """Keras's LSTM step, gates i, f, c, o; `unit_forget_bias` starts the forget bias at
    one."""

    _gates = 4

    def __init__(self, units, unit_forget_bias=True, **kwargs):
        super().__init__(units, **kwargs)
        self.unit_forget_bias = unit_forget_bias

    state_size = property(lambda self: [self.units, self.units])

    def _bias_initializer(self):
        if not self.unit_forget_bias:
            return self._ids["bias_initializer"]
        base = self._ids["bias_initializer"]
        units = self.units

        def init(shape, dtype=None, partition_info=None):
            del partition_info
            parts = [base((units,), dtype=dtype), Ones()((units,), dtype=dtype),
                     base((2 * units,), dtype=dtype)]
            return joining_ops.concat(parts, 0)

        return init

    def call(self, inputs, states):
        x, h = self._masked(inputs, states[0])
        c_prev = states[1]
        z = matrix_ops.matmul(x, self.kernel) + matrix_ops.matmul(h, self.recurrent_kernel)
        if self.bias is not None:
            z = nn_ops.bias_add(z, self.bias)
        i, f, c_hat, o = slicing_split(z, 4, axis=1)
        i, f, o = (self.recurrent_activation(g) for g in (i, f, o))
        c = f * c_prev + i * self.activation(c_hat)
        h = o * self.activation(c)
        return h, [h, c]


class GRUCell(_Cell):
    """Keras's GRU step, gates z, r, h; reset_after=True applies the reset gate to the
    recurrent product, with separate input and recurrent biases."""

    _gates = 3

    def __init__(self, units, reset_after=False, **kwargs):
        super().__init__(units, **kwargs)
        self.reset_after = reset_after

    def _bias_shape(self):
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def call(self, inputs, states):
        x, h = self._masked(inputs, states[0])
        h_prev = states[0]
        xz = matrix_ops.matmul(x, self.kernel)
        if self.reset_after:
            inner = matrix_ops.matmul(h, self.recurrent_kernel)
            if self.bias is not None:
                xz = xz + self.bias[0]
                inner = inner + self.bias[1]
            x_z, x_r, x_h = slicing_split(xz, 3, axis=1)
            i_z, i_r, i_h = slicing_split(inner, 3, axis=1)
            z = self.recurrent_activation(x_z + i_z)
            r = self.recurrent_activation(x_r + i_r)
            hh = self.activation(x_h + r * i_h)
        else:
            if self.bias is not None:
                xz = xz + self.bias
            x_z, x_r, x_h = slicing_split(xz, 3, axis=1)
            rk = self.recurrent_kernel
            u2 = 2 * self.units
            zr = matrix_ops.matmul(h, rk[:, :u2])
            z = self.recurrent_activation(x_z + zr[:, :self.units])
            r = self.recurrent_activation(x_r + zr[:, self.units:])
            hh = self.activation(x_h + matrix_ops.matmul(r * h, rk[:, u2:]))
        out = z * h_prev + (1.0 - z) * hh
        return out, [out]


class _Adapter:
    """A Keras cell seen as a TF1 RNNCell (state a tuple) for dynamic_rnn."""

    def __init__(self, cell):
        self.cell = cell

    output_size = property(lambda self: self.cell.output_size)
    state_size = property(lambda self: tuple(self.cell.state_size))

    def zero_state(self, batch_size, dtype):
        return tuple(array_ops.zeros(joining_ops.stack([batch_size, n]), dtype)
                     for n in self.cell.state_size)

    def __call__(self, inputs, state):
        out, new = self.cell.call(inputs, list(state))
        return out, tuple(new)


class _MaskedAdapter(_Adapter):
    """The cell with Keras's mask semantics: the inputs are (x_t, keep_t) and the state
    carries the previous output first; where a row's step is masked, its states stay as
    they were and its output is the previous output (zeros when `zero_output`)."""

    def __init__(self, cell, zero_output):
        super().__init__(cell)
        self.zero_output = zero_output

    state_size = property(lambda self: (self.cell.output_size,) + tuple(self.cell.state_size))

    def zero_state(self, batch_size, dtype):
        return (array_ops.zeros(joining_ops.stack([batch_size, self.cell.output_size]),
                                dtype),) + super().zero_state(batch_size, dtype)

    def __call__(self, inputs, state):
        x, keep = inputs
        keep = array_ops.reshape(keep, [-1])
        prev, old = state[0], list(state[1:])
        out, new = self.cell.call(x, old)
        out = comparison_ops.where(keep, out, array_ops.zeros_like(out) if self.zero_output
                                   else prev)
        new = [comparison_ops.where(keep, n, o) for n, o in zip(new, old, strict=True)]
        return out, (out,) + tuple(new)


class RNN(Layer):
    """Runs `cell` over axis 1 of [batch, time, features] inputs.

    Args:
      cell: a Keras cell (SimpleRNNCell, LSTMCell, GRUCell or one with the same
        interface: `state_size`, `output_size`, `call(x, states)`).
      return_sequences: all steps' outputs [batch, time, units] (else the last step's).
      return_state: also return the final states (a list: [output] + states).
      go_backwards: run the sequence backwards (outputs in the order computed).
      zero_output_for_mask: masked steps output zeros (else the previous output).
      stateful, unroll, time_major: not supported (ValueError when set).

    Call arguments: `initial_state` (a list of tensors), `training`, `mask` ([batch,
    time] booleans, normally the input's Keras mask): a masked step leaves the states as
    they were and outputs the previous step's output (zeros with
    `zero_output_for_mask`), as Keras does.
    """

    supports_masking = True

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, time_major=False, **kwargs):
        if stateful or time_major:
            raise ValueError("tensorflux.keras: stateful and time_major recurrent layers "
                             "are not supported")
        del unroll
        self.zero_output_for_mask = bool(kwargs.pop("zero_output_for_mask", False))
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences, self.return_state = return_sequences, return_state
        self.go_backwards = go_backwards
        self.input_spec = InputSpec(ndim=3)

    @property
    def trainable_weights(self):
        return self.cell.trainable_weights if self.trainable else []

    @property
    def non_trainable_weights(self):
        return self.cell.non_trainable_weights if self.trainable else self.cell.weights

    @property
    def losses(self):
        return self.cell.losses + list(self._losses)

    def build(self, input_shape) -> None:
        shape = tensor_shape.TensorShape(input_shape)
        if shape.as_list()[-1] is None:
            raise ValueError("The last dimension of the inputs to a recurrent layer should "
                             f"be defined. Found None. Full input shape received: {shape}")
        with vs.variable_scope(self.cell.name):
            self.cell._dtype = self._dtype
            self.cell.build(tensor_shape.TensorShape([shape.as_list()[0],
                                                      shape.as_list()[-1]]))
            self.cell.built = True
        self._weight_losses.extend(self.cell._weight_losses)
        self.built = True

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, list):
            mask = mask[0]
        output_mask = mask if self.return_sequences else None
        if self.return_state:
            return [output_mask] + [None] * len(self.cell.state_size)
        return output_mask

    def call(self, inputs, mask=None, training=None, initial_state=None):
        if isinstance(mask, list):
            mask = mask[0]
        if self.go_backwards:
            inputs = joining_ops.reverse(inputs, [1])
        adapter = _Adapter(self.cell)
        batch = array_ops.shape(inputs)[0]
        if initial_state is None:
            state = adapter.zero_state(batch, inputs.dtype)
        else:
            state = tuple(initial_state if isinstance(initial_state, (list, tuple))
                          else [initial_state])
            if len(state) != len(self.cell.state_size):
                raise ValueError(f"Layer {self.name} expects {len(self.cell.state_size)} "
                                 f"states, but it received {len(state)} state values.")
        if hasattr(self.cell, "make_masks"):
            self.cell.make_masks(inputs[:, 0], state[0], training)
        if mask is None:
            outputs, final = rnn_lib.dynamic_rnn(adapter, inputs, initial_state=state,
                                                 dtype=inputs.dtype, scope="rnn")
        else:
            keep = array_ops.expand_dims(math_ops.cast(mask, dtypes.bool), -1)
            if self.go_backwards:
                keep = joining_ops.reverse(keep, [1])
            masked = _MaskedAdapter(self.cell, self.zero_output_for_mask)
            first = masked.zero_state(batch, inputs.dtype)[0]
            outputs, final = rnn_lib.dynamic_rnn(masked, (inputs, keep),
                                                 initial_state=(first,) + state,
                                                 dtype=inputs.dtype, scope="rnn")
            final = final[1:]
        output = outputs if self.return_sequences else outputs[:, -1]
        if self.return_state:
            return [output] + list(final)
        return output


def _rnn_class(name, cell_cls, cell_name, doc, positional):
    def __init__(self, units, *args, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, unroll=False, time_major=False,
                 **kwargs):
        if len(args) > len(positional):
            raise TypeError(f"{name}() takes at most {len(positional) + 1} positional "
                            "arguments")
        kwargs.update(zip(positional, args, strict=False))
        layer_kwargs = {k: kwargs.pop(k) for k in list(kwargs)
                        if k in ("name", "trainable", "dtype", "input_shape", "input_dim",
                                 "batch_input_shape", "batch_size", "weights",
                                 "activity_regularizer", "input_length",
                                 "zero_output_for_mask")}
        if "input_length" in layer_kwargs:
            length = layer_kwargs.pop("input_length")
            dim = layer_kwargs.pop("input_dim", None)
            if dim is not None:
                layer_kwargs["input_shape"] = (length, dim)
        elif "input_dim" in layer_kwargs:
            layer_kwargs["input_shape"] = (None, layer_kwargs.pop("input_dim"))
        self._config = dict(units=units, return_sequences=return_sequences,
                            return_state=return_state, go_backwards=go_backwards, **kwargs)
        cell = cell_cls(units, name=cell_name, **kwargs)
        RNN.__init__(self, cell, return_sequences=return_sequences, return_state=return_state,
                     go_backwards=go_backwards, stateful=stateful, unroll=unroll,
                     time_major=time_major, **layer_kwargs)

    def get_config(self) -> dict:
        """Keras's full config (every cell option written, so that a loader whose
        defaults differ, like Keras 2's GRU v2 with reset_after=True, builds this layer)."""
        config = RNN.get_config(self)
        cell = self.cell
        config.update(
            units=cell.units, return_sequences=self.return_sequences,
            return_state=self.return_state, go_backwards=self.go_backwards,
            stateful=False, unroll=False, time_major=False,
            activation=activations.serialize(cell.activation), use_bias=cell.use_bias,
            dropout=cell.dropout, recurrent_dropout=cell.recurrent_dropout)
        if cell_cls is not SimpleRNNCell:
            config["recurrent_activation"] = activations.serialize(cell.recurrent_activation)
        for key in ("kernel_initializer", "recurrent_initializer", "bias_initializer",
                    "kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
                    "kernel_constraint", "recurrent_constraint", "bias_constraint"):
            config[key] = saving.serialize_value(key, cell._ids[key])
        if cell_cls is LSTMCell:
            config["unit_forget_bias"] = cell.unit_forget_bias
        if cell_cls is GRUCell:
            config["reset_after"] = cell.reset_after
        return config

    return type(name, (RNN,), {"__init__": __init__, "__doc__": doc, "get_config": get_config,
                               "_positional": tuple(positional),
                               "units": property(lambda self: self.cell.units)})


SimpleRNN = _rnn_class("SimpleRNN", SimpleRNNCell, "simple_rnn_cell",
                       "A fully connected RNN over [batch, time, features].",
                       ["activation", "use_bias"])
LSTM = _rnn_class("LSTM", LSTMCell, "lstm_cell", "Keras's LSTM over [batch, time, features].",
                  ["activation", "recurrent_activation", "use_bias"])
GRU = _rnn_class("GRU", GRUCell, "gru_cell",
                 "Keras's GRU over [batch, time, features].",
                 ["activation", "recurrent_activation", "use_bias"])
