"""`tf.contrib.seq2seq` attention: LuongAttention (multiplicative) and BahdanauAttention
(additive) over a memory [batch, max_time, depth] masked beyond `memory_sequence_length`,
and AttentionWrapper, an RNN cell that feeds the previous attention with each input and
attends with the cell's output. Variable names are TF1 contrib's (`memory_layer/kernel`,
`.../bahdanau_attention/query_layer/kernel`, `attention_v`, `attention_layer/kernel`).
"""

from __future__ import annotations

import collections

from tensorflux.framework import dtypes
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.nn.rnn_cell_impl import RNNCell


def _masked_values(memory, lengths):
    """The memory with its steps beyond each sequence's length zeroed."""
    from tensorflux.ops import array_ops, gather_ops, math_ops

    if lengths is None:
        return memory
    mask = gather_ops.sequence_mask(lengths, maxlen=array_ops.shape(memory)[1],
                                       dtype=memory.dtype)
    return memory * math_ops.cast(array_ops.expand_dims(mask, 2), memory.dtype)


class _BaseAttention:
    def __init__(self, memory, memory_sequence_length, memory_layer, query_layer,
                 probability_fn, score_mask_value, name):
        from tensorflux.framework import graph as graph_lib
        from tensorflux.ops import array_ops, math_ops

        with graph_lib.name_scope(name, "BaseAttentionMechanismInit", [memory]):
            memory = convert_to_tensor(memory, name="memory")
            self._lengths = None if memory_sequence_length is None else math_ops.cast(
                convert_to_tensor(memory_sequence_length), dtypes.int32)
            self.values = _masked_values(memory, self._lengths)
            self.keys = memory_layer(self.values) if memory_layer is not None else \
                self.values
        self.memory_layer, self.query_layer = memory_layer, query_layer
        self._probability_fn = probability_fn
        self._score_mask_value = score_mask_value
        self.batch_size = array_ops.shape(self.keys)[0]
        self.alignments_size = self.keys.shape.as_list()[1] or array_ops.shape(self.keys)[1]
        self.state_size = self.alignments_size

    def _probabilities(self, score, state):
        from tensorflux.ops import array_ops, comparison_ops, gather_ops

        if self._lengths is not None:
            mask = gather_ops.sequence_mask(self._lengths,
                                               maxlen=array_ops.shape(score)[1])
            fill = self._score_mask_value if self._score_mask_value is not None else \
                float("-inf")
            score = comparison_ops.where(mask, score, array_ops.ones_like(score) * fill)
        return self._probability_fn(score, state)

    def initial_alignments(self, batch_size, dtype):
        from tensorflux.ops import array_ops, joining_ops

        size = self.alignments_size
        return array_ops.zeros(joining_ops.stack([batch_size, size]), dtype=dtype)

    def initial_state(self, batch_size, dtype):
        return self.initial_alignments(batch_size, dtype)


def _softmax(score, _state):
    from tensorflux.ops import nn_ops

    return nn_ops.softmax(score)


def _dense(units, name):
    from tensorflux.layers import core

    return core.Dense(units, name=name, use_bias=False)


class LuongAttention(_BaseAttention):
    """score = query . keys (keys = memory_layer(memory)), optionally scaled by a learned
    `attention_g`."""

    def __init__(self, num_units, memory, memory_sequence_length=None, scale=False,
                 probability_fn=None, score_mask_value=None, dtype=None,
                 custom_key_value_fn=None, name="LuongAttention"):
        super().__init__(memory, memory_sequence_length, _dense(num_units, "memory_layer"),
                         None, probability_fn or _softmax, score_mask_value, name)
        self._num_units, self._scale, self._name = num_units, scale, name

    def __call__(self, query, state):
        from tensorflux.ops import array_ops, matrix_ops
        from tensorflux.variables import init_ops, variable_scope

        with variable_scope.variable_scope(None, "luong_attention", [query]):
            score = array_ops.squeeze(matrix_ops.matmul(
                array_ops.expand_dims(query, 1), self.keys, transpose_b=True), [1])
            if self._scale:
                g = variable_scope.get_variable("attention_g", dtype=query.dtype,
                                                initializer=init_ops.ones_initializer(),
                                                shape=())
                score = g * score
        alignments = self._probabilities(score, state)
        return alignments, alignments


class BahdanauAttention(_BaseAttention):
    """score = v . tanh(keys + query_layer(query)), optionally weight-normalized."""

    def __init__(self, num_units, memory, memory_sequence_length=None, normalize=False,
                 probability_fn=None, score_mask_value=None, dtype=None,
                 custom_key_value_fn=None, name="BahdanauAttention"):
        super().__init__(memory, memory_sequence_length, _dense(num_units, "memory_layer"),
                         _dense(num_units, "query_layer"), probability_fn or _softmax,
                         score_mask_value, name)
        self._num_units, self._normalize, self._name = num_units, normalize, name

    def __call__(self, query, state):
        from tensorflux.ops import array_ops, reduction_ops, unary_ops
        from tensorflux.variables import init_ops, variable_scope

        with variable_scope.variable_scope(None, "bahdanau_attention", [query]):
            processed = array_ops.expand_dims(self.query_layer(query), 1)
            v = variable_scope.get_variable("attention_v", [self._num_units],
                                            dtype=query.dtype)
            if self._normalize:
                g = variable_scope.get_variable(
                    "attention_g", dtype=query.dtype,
                    initializer=init_ops.constant_initializer(
                        (1.0 / self._num_units) ** 0.5), shape=())
                b = variable_scope.get_variable("attention_b", [self._num_units],
                                                dtype=query.dtype,
                                                initializer=init_ops.zeros_initializer())
                v = g * v * unary_ops.rsqrt(reduction_ops.reduce_sum(v * v))
                score = reduction_ops.reduce_sum(v * unary_ops.tanh(self.keys + processed + b),
                                                 [2])
            else:
                score = reduction_ops.reduce_sum(v * unary_ops.tanh(self.keys + processed),
                                                 [2])
        alignments = self._probabilities(score, state)
        return alignments, alignments


class AttentionWrapperState(collections.namedtuple(
        "AttentionWrapperState", ["cell_state", "attention", "time", "alignments",
                                  "alignment_history", "attention_state"])):
    def clone(self, **kwargs):
        return self._replace(**kwargs)


class AttentionWrapper(RNNCell):
    """`cell` with attention: each step feeds [input, previous attention] to the cell,
    attends over the memory with the cell's output, and outputs the attention
    (`attention_layer(concat(cell output, context))`, or the context without a layer
    size), or the cell's output without `output_attention`."""

    def __init__(self, cell, attention_mechanism, attention_layer_size=None,
                 alignment_history=False, cell_input_fn=None, output_attention=True,
                 initial_cell_state=None, name=None, attention_layer=None):
        super().__init__(name=name)
        if isinstance(attention_mechanism, (list, tuple)):
            if len(attention_mechanism) != 1:
                raise ValueError("Only one attention mechanism is supported here.")
            attention_mechanism = attention_mechanism[0]
        self._cell, self._mechanism = cell, attention_mechanism
        self._cell_input_fn = cell_input_fn or _concat_inputs
        self._output_attention = output_attention
        self._alignment_history = alignment_history
        self._initial_cell_state = initial_cell_state
        if attention_layer_size is not None and attention_layer is not None:
            raise ValueError("Only one of attention_layer_size and attention_layer should "
                             "be set")
        self._attention_layer = attention_layer if attention_layer is not None else (
            _dense(attention_layer_size, "attention_layer")
            if attention_layer_size is not None else None)
        self._attention_size = attention_layer_size if attention_layer_size is not None \
            else (attention_layer.units if attention_layer is not None
                  else attention_mechanism.values.shape.as_list()[-1])

    @property
    def output_size(self):
        return self._attention_size if self._output_attention else self._cell.output_size

    @property
    def state_size(self):
        return AttentionWrapperState(
            cell_state=self._cell.state_size, attention=self._attention_size, time=(),
            alignments=self._mechanism.alignments_size,
            alignment_history=self._mechanism.alignments_size
            if self._alignment_history else (),
            attention_state=self._mechanism.state_size)

    def zero_state(self, batch_size, dtype):
        from tensorflux.ops import array_ops, joining_ops, tensor_array_ops

        cell_state = self._initial_cell_state if self._initial_cell_state is not None \
            else self._cell.zero_state(batch_size, dtype)
        history = tensor_array_ops.TensorArray(dtype, size=0, dynamic_size=True) \
            if self._alignment_history else ()
        return AttentionWrapperState(
            cell_state=cell_state,
            attention=array_ops.zeros(joining_ops.stack([batch_size, self._attention_size]),
                                      dtype=dtype),
            time=convert_to_tensor(0, dtypes.int32),
            alignments=self._mechanism.initial_alignments(batch_size, dtype),
            alignment_history=history,
            attention_state=self._mechanism.initial_state(batch_size, dtype))

    def call(self, inputs, state):
        from tensorflux.ops import array_ops, joining_ops, matrix_ops

        if not isinstance(state, AttentionWrapperState):
            raise TypeError(f"Expected state to be instance of AttentionWrapperState. "
                            f"Received type {type(state)} instead.")
        cell_inputs = self._cell_input_fn(inputs, state.attention)
        cell_output, cell_state = self._cell(cell_inputs, state.cell_state)
        alignments, attention_state = self._mechanism(cell_output,
                                                      state=state.attention_state)
        context = array_ops.squeeze(matrix_ops.matmul(array_ops.expand_dims(alignments, 1),
                                                      self._mechanism.values), [1])
        attention = self._attention_layer(joining_ops.concat([cell_output, context], 1)) \
            if self._attention_layer is not None else context
        history = state.alignment_history.write(state.time, alignments) \
            if self._alignment_history else ()
        next_state = AttentionWrapperState(
            cell_state=cell_state, attention=attention, time=state.time + 1,
            alignments=alignments, alignment_history=history,
            attention_state=attention_state)
        return (attention if self._output_attention else cell_output), next_state


def _concat_inputs(inputs, attention):
    from tensorflux.ops import joining_ops

    return joining_ops.concat([inputs, attention], -1)
