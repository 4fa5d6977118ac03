"""RNN cell wrappers (`tf.nn.rnn_cell.DropoutWrapper`, `ResidualWrapper`, `DeviceWrapper`).

A wrapper is an RNNCell around another cell; it calls that cell directly and opens no
variable scope of its own, so the wrapped cell's variables keep their names.
"""

from __future__ import annotations

import hashlib
import itertools
import numbers

from tensorflux.control_flow.control_flow_util import (
    _children,
    _rebuild,
    assert_same_structure,
    flatten,
    is_nested,
    map_structure,
    pack_sequence_as,
)
from tensorflux.framework import common_shapes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.nn import nn_impl
from tensorflux.nn.rnn_cell_impl import LSTMStateTuple, RNNCell, assert_like_rnncell
from tensorflux.ops import joining_ops, math_ops, random_ops, unary_ops

# The TF1 public names of this module (tf.nn.rnn_cell.*).
__all__ = ["DropoutWrapper", "ResidualWrapper", "DeviceWrapper"]


class _RNNCellWrapper(RNNCell):
    """A cell around `cell`; calls it directly (no scope of its own)."""

    def __init__(self, cell, **kwargs):
        super().__init__(**kwargs)
        assert_like_rnncell("cell", cell)
        self.cell = cell

    state_size = property(lambda self: self.cell.state_size)
    output_size = property(lambda self: self.cell.output_size)
    wrapped_cell = property(lambda self: self.cell)
    trainable_weights = property(lambda self: list(getattr(self.cell, "trainable_weights", [])))
    non_trainable_weights = property(
        lambda self: list(getattr(self.cell, "non_trainable_weights", [])))

    def zero_state(self, batch_size, dtype):
        with graph_lib.name_scope(type(self).__name__ + "ZeroState"):
            return self.cell.zero_state(batch_size, dtype)

    def __call__(self, inputs, state, scope=None):
        return self._call_wrapped_cell(inputs, state, self.cell.__call__, scope=scope)

    def _call_wrapped_cell(self, inputs, state, cell_call_fn, **kwargs):
        raise NotImplementedError


def _default_dropout_state_filter_visitor(substate):
    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)  # never drop out the memory
    return True


def _keep_prob_value(prob, attr: str):
    """A Python float for a constant keep probability, else the tensor."""
    t = convert_to_tensor(prob)
    value = common_shapes.constant_value(t)
    if value is None:
        return t
    if value < 0 or value > 1:
        raise ValueError(f"Parameter {attr} must be between 0 and 1: {float(value)}")
    return float(value)


class DropoutWrapper(_RNNCellWrapper):
    """Dropout on the inputs, outputs and/or new states of `cell`.

    Args:
      cell: the RNNCell to wrap.
      input_keep_prob, output_keep_prob, state_keep_prob: keep probabilities (floats or
        scalar tensors); a constant 1 adds no dropout. State dropout skips the `c` of
        LSTMStateTuples unless `dropout_state_filter_visitor` says otherwise.
      variational_recurrent: the same dropout mask at every time step (Gal & Ghahramani);
        needs `dtype`, and `input_size` when input dropout is on.
      input_size: the input depth(s) (without batch), for variational input dropout.
      dtype: the dtype of inputs, states and outputs (variational only).
      seed: the op seed; each dropout site derives its own from it, as TF does.
      dropout_state_filter_visitor: `fn(substate) -> bool or structure of bools`.

    Raises:
      TypeError: `cell` is not an RNNCell or the visitor is not callable.
      ValueError: a constant keep probability outside [0, 1], or variational dropout
        without `dtype` (or `input_size`).
    """

    def __init__(self, cell, input_keep_prob=1.0, output_keep_prob=1.0, state_keep_prob=1.0,
                 variational_recurrent=False, input_size=None, dtype=None, seed=None,
                 dropout_state_filter_visitor=None, **kwargs):
        super().__init__(cell, dtype=dtype, **kwargs)
        if dropout_state_filter_visitor is not None and \
                not callable(dropout_state_filter_visitor):
            raise TypeError("dropout_state_filter_visitor must be callable")
        self._dropout_state_filter = (dropout_state_filter_visitor or
                                      _default_dropout_state_filter_visitor)
        with graph_lib.name_scope("DropoutWrapperInit"):
            self._input_keep_prob = _keep_prob_value(input_keep_prob, "input_keep_prob")
            self._state_keep_prob = _keep_prob_value(state_keep_prob, "state_keep_prob")
            self._output_keep_prob = _keep_prob_value(output_keep_prob, "output_keep_prob")
        self._variational_recurrent = variational_recurrent
        self._seed = seed
        self._noise = {"input": None, "state": None, "output": None}
        if variational_recurrent:
            self._make_recurrent_noise(input_size, dtype)

    def _make_recurrent_noise(self, input_size, dtype) -> None:
        if dtype is None:
            raise ValueError("When variational_recurrent=True, dtype must be provided")

        def noise_for(salt, sizes):
            counter = itertools.count()
            return map_structure(
                lambda s: random_ops.random_uniform(
                    joining_ops.concat(([1], tensor_shape.TensorShape(s).as_list()), 0),
                    seed=self._gen_seed(salt, next(counter)), dtype=dtype), sizes)

        if not isinstance(self._input_keep_prob, numbers.Real) or self._input_keep_prob < 1:
            if input_size is None:
                raise ValueError("When variational_recurrent=True and input_keep_prob < 1.0 "
                                 "or is unknown, input_size must be provided")
            self._noise["input"] = noise_for("input", input_size)
        self._noise["state"] = noise_for("state", self.cell.state_size)
        self._noise["output"] = noise_for("output", self.cell.output_size)

    def _gen_seed(self, salt_prefix: str, index: int):
        if self._seed is None:
            return None
        digest = hashlib.md5(f"{self._seed}{salt_prefix}_{index}".encode()).hexdigest()
        return int(digest[:8], 16) & 0x7FFFFFFF

    def _dropout(self, values, salt: str, keep_prob, mask=None):
        """Dropout on the leaves of `values` whose entry in `mask` (same nest) is true."""
        flat = flatten(values)
        flat_mask = flatten(mask) if mask is not None else [True] * len(flat)
        noise = self._noise[salt]
        flat_noise = flatten(noise) if noise is not None else [None] * len(flat)
        out = []
        for i, (v, keep, n) in enumerate(zip(flat, flat_mask, flat_noise, strict=True)):
            if isinstance(keep, bool) and not keep:
                out.append(v)
            elif n is None:
                out.append(nn_impl.dropout(v, rate=1.0 - keep_prob,
                                           seed=self._gen_seed(salt, i)))
            else:
                kept = unary_ops.floor(keep_prob + n)
                r = math_ops.divide(v, keep_prob) * kept
                r.set_shape(v.shape)
                out.append(r)
        return pack_sequence_as(values, out)

    def _state_mask(self, state):
        """For each leaf of `state`, whether to drop it out: the filter is asked at every
        level and says True (look inside), False (skip all) or one verdict per child."""
        verdict = self._dropout_state_filter(state)
        if isinstance(verdict, bool):
            if not verdict or not is_nested(state):
                return map_structure(lambda _: verdict, state)
            return _rebuild(state, [self._state_mask(c) for c in _children(state)])
        return _rebuild(state, [self._state_mask(c) if v else map_structure(lambda _: False, c)
                                for c, v in zip(_children(state), flatten(verdict), strict=True)])

    def _call_wrapped_cell(self, inputs, state, cell_call_fn, **kwargs):
        def should_dropout(p):
            return not isinstance(p, float) or p < 1

        if should_dropout(self._input_keep_prob):
            inputs = self._dropout(inputs, "input", self._input_keep_prob)
        output, new_state = cell_call_fn(inputs, state, **kwargs)
        if should_dropout(self._state_keep_prob):
            new_state = self._dropout(new_state, "state", self._state_keep_prob,
                                      self._state_mask(new_state))
        if should_dropout(self._output_keep_prob):
            output = self._dropout(output, "output", self._output_keep_prob)
        return output, new_state


class ResidualWrapper(_RNNCellWrapper):
    """Adds the cell's inputs to its outputs (`residual_fn(inputs, outputs)` if given)."""

    def __init__(self, cell, residual_fn=None, **kwargs):
        super().__init__(cell, **kwargs)
        self._residual_fn = residual_fn

    def _call_wrapped_cell(self, inputs, state, cell_call_fn, **kwargs):
        outputs, new_state = cell_call_fn(inputs, state, **kwargs)

        def default_residual_fn(inputs, outputs):
            assert_same_structure(inputs, outputs)
            map_structure(lambda i, o: i.shape.assert_is_compatible_with(o.shape),
                          inputs, outputs)
            return map_structure(lambda i, o: i + o, inputs, outputs)

        return (self._residual_fn or default_residual_fn)(inputs, outputs), new_state


class DeviceWrapper(_RNNCellWrapper):
    """Runs `cell` (and builds its zero state) on `device`."""

    def __init__(self, cell, device, **kwargs):
        super().__init__(cell, **kwargs)
        self._device = device

    def zero_state(self, batch_size, dtype):
        with graph_lib.name_scope(type(self).__name__ + "ZeroState"), \
                graph_lib.device(self._device):
            return self.cell.zero_state(batch_size, dtype)

    def _call_wrapped_cell(self, inputs, state, cell_call_fn, **kwargs):
        with graph_lib.device(self._device):
            return cell_call_fn(inputs, state, **kwargs)
