"""`tf.contrib.legacy_seq2seq`: sequence-to-sequence models over lists of per-step tensors,
as TF1's translation tutorial, char-RNN programs and chatbots build them.

Decoders (`rnn_decoder`, `attention_decoder` and their embedding forms) run a cell over a
Python list of step inputs, optionally feeding each step's argmax back in (`loop_function`,
`feed_previous`); the seq2seq models put an encoder (`static_rnn`) in front and share or tie
variables as TensorFlow does, with TensorFlow's scope and variable names, so checkpoints of
such programs line up. A `feed_previous` given as a boolean tensor builds both decoders and
picks one with `tf.cond`. `model_with_buckets` builds one model per bucket with shared
variables; `sequence_loss` and `sequence_loss_by_example` are the weighted cross-entropies.
"""

from __future__ import annotations

import copy
import sys as _sys

from tensorflux.contrib import tf1_paths as _tf1_paths  # noqa: E402
from tensorflux.contrib.rnn_wrappers import EmbeddingWrapper, Linear, OutputProjectionWrapper
from tensorflux.contrib.seq2seq import legacy_sequence_loss as sequence_loss
from tensorflux.contrib.seq2seq import sequence_loss_by_example
from tensorflux.control_flow.builders import cond
from tensorflux.control_flow.control_flow_util import flatten, is_nested, pack_sequence_as
from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.nn import nn_impl
from tensorflux.nn.embedding_ops import embedding_lookup
from tensorflux.nn.rnn import static_rnn
from tensorflux.nn.rnn_cell_impl import RNNCell
from tensorflux.ops import (
    array_ops,
    conv_ops,
    joining_ops,
    math_ops,
    nn_ops,
    reduction_ops,
    unary_ops,
)
from tensorflux.ops.reduction_ops import argmax
from tensorflux.variables import variable_scope as vs

__all__ = ["rnn_decoder", "basic_rnn_seq2seq", "tied_rnn_seq2seq", "embedding_rnn_decoder",
           "embedding_rnn_seq2seq", "embedding_tied_rnn_seq2seq", "attention_decoder",
           "embedding_attention_decoder", "embedding_attention_seq2seq",
           "one2many_rnn_seq2seq", "model_with_buckets", "sequence_loss",
           "sequence_loss_by_example"]


def rnn_decoder(decoder_inputs, initial_state, cell, loop_function=None, scope=None):
    """Runs `cell` over `decoder_inputs` (a list of [batch, depth] tensors) from
    `initial_state`; returns (the list of outputs, the last state).

    `loop_function(prev_output, i)`, when given, makes step i's input from step i-1's output
    (its variables are reused from the scope `loop_function`); decoder_inputs then only
    give the first input and the number of steps.
    """
    with vs.variable_scope(scope or "rnn_decoder"):
        state = initial_state
        outputs, prev = [], None
        for i, inp in enumerate(decoder_inputs):
            if loop_function is not None and prev is not None:
                with vs.variable_scope("loop_function", reuse=True):
                    inp = loop_function(prev, i)
            if i > 0:
                vs.get_variable_scope().reuse_variables()
            output, state = cell(inp, state)
            outputs.append(output)
            if loop_function is not None:
                prev = output
    return outputs, state


def basic_rnn_seq2seq(encoder_inputs, decoder_inputs, cell, dtype=dtypes.float32, scope=None):
    """An encoder (a copy of `cell` under static_rnn) whose last state starts an rnn_decoder
    with `cell`; returns (decoder outputs, last state)."""
    with vs.variable_scope(scope or "basic_rnn_seq2seq"):
        _, enc_state = static_rnn(copy.deepcopy(cell), encoder_inputs, dtype=dtype)
        return rnn_decoder(decoder_inputs, enc_state, cell)


def tied_rnn_seq2seq(encoder_inputs, decoder_inputs, cell, loop_function=None,
                     dtype=dtypes.float32, scope=None):
    """basic_rnn_seq2seq with one set of variables for encoder and decoder."""
    with vs.variable_scope("combined_tied_rnn_seq2seq"):
        scope = scope or "tied_rnn_seq2seq"
        _, enc_state = static_rnn(cell, encoder_inputs, dtype=dtype, scope=scope)
        vs.get_variable_scope().reuse_variables()
        return rnn_decoder(decoder_inputs, enc_state, cell, loop_function=loop_function,
                           scope=scope)


def _extract_argmax_and_embed(embedding, output_projection=None, update_embedding=True):
    """A loop_function: the embedding of the previous output's argmax (projected first by
    `output_projection` = (W, b) when given); no gradient into the embedding through it
    unless `update_embedding`."""

    def loop_function(prev, _):
        if output_projection is not None:
            prev = nn_impl.xw_plus_b(prev, output_projection[0], output_projection[1])
        emb_prev = embedding_lookup(embedding, argmax(prev, 1))
        if not update_embedding:
            emb_prev = array_ops.stop_gradient(emb_prev)
        return emb_prev

    return loop_function


def _check_projection(output_projection, num_symbols, dtype):
    if output_projection is None:
        return
    weights = convert_to_tensor(output_projection[0], dtype=dtype)
    weights.shape.assert_is_compatible_with([None, num_symbols])
    biases = convert_to_tensor(output_projection[1], dtype=dtype)
    biases.shape.assert_is_compatible_with([num_symbols])


def _with_state_list(outputs, state):
    """A decoder's outputs and flattened state as one list (what a cond branch returns)."""
    return list(outputs) + (flatten(state) if is_nested(state) else [state])


def _decoders(feed_previous, build, num_outputs, state_structure):
    """`build(flag, update_embedding)` for a boolean `feed_previous`; for a boolean tensor,
    both decoders (`build(True, False)` makes the variables, `build(False, False)` reuses
    them) under one cond. Returns (outputs, state)."""
    if isinstance(feed_previous, bool):
        return build(feed_previous, True)

    def branch(flag):
        reuse = None if flag else True
        with vs.variable_scope(vs.get_variable_scope(), reuse=reuse):
            outputs, state = build(flag, False)
            return _with_state_list(outputs, state)

    both = cond(feed_previous, lambda: branch(True), lambda: branch(False))
    state_list = both[num_outputs:]
    state = state_list[0]
    if is_nested(state_structure):
        state = pack_sequence_as(structure=state_structure, flat_sequence=state_list)
    return both[:num_outputs], state


def embedding_rnn_decoder(decoder_inputs, initial_state, cell, num_symbols, embedding_size,
                          output_projection=None, feed_previous=False,
                          update_embedding_for_previous=True, scope=None):
    """rnn_decoder over embedded integer inputs (an `embedding` [num_symbols,
    embedding_size] in this scope); with `feed_previous` each step after the first embeds the
    previous output's argmax instead.

    Raises:
      ValueError: `output_projection` does not fit `num_symbols`.
    """
    with vs.variable_scope(scope or "embedding_rnn_decoder") as scope:
        _check_projection(output_projection, num_symbols, scope.dtype)
        embedding = vs.get_variable("embedding", [num_symbols, embedding_size])
        loop_function = _extract_argmax_and_embed(
            embedding, output_projection, update_embedding_for_previous) \
            if feed_previous else None
        emb_inp = [embedding_lookup(embedding, i) for i in decoder_inputs]
        return rnn_decoder(emb_inp, initial_state, cell, loop_function=loop_function)


def embedding_rnn_seq2seq(encoder_inputs, decoder_inputs, cell, num_encoder_symbols,
                          num_decoder_symbols, embedding_size, output_projection=None,
                          feed_previous=False, dtype=None, scope=None):
    """An embedding encoder (EmbeddingWrapper around a copy of `cell`) and an
    embedding_rnn_decoder; without `output_projection` the decoder's cell is wrapped in an
    OutputProjectionWrapper to `num_decoder_symbols`. `feed_previous` may be a boolean
    tensor (both decoders built, chosen by cond)."""
    with vs.variable_scope(scope or "embedding_rnn_seq2seq") as scope:
        if dtype is not None:
            scope.set_dtype(dtype)
        else:
            dtype = scope.dtype
        encoder_cell = EmbeddingWrapper(copy.deepcopy(cell),
                                        embedding_classes=num_encoder_symbols,
                                        embedding_size=embedding_size)
        _, encoder_state = static_rnn(encoder_cell, encoder_inputs, dtype=dtype)
        if output_projection is None:
            cell = OutputProjectionWrapper(cell, num_decoder_symbols)

        def build(flag, update=True):
            return embedding_rnn_decoder(decoder_inputs, encoder_state, cell,
                                         num_decoder_symbols, embedding_size,
                                         output_projection=output_projection,
                                         feed_previous=flag,
                                         update_embedding_for_previous=update)

        return _decoders(feed_previous, build, len(decoder_inputs), encoder_state)


def embedding_tied_rnn_seq2seq(encoder_inputs, decoder_inputs, cell, num_symbols,
                               embedding_size, num_decoder_symbols=None,
                               output_projection=None, feed_previous=False, dtype=None,
                               scope=None):
    """tied_rnn_seq2seq over inputs embedded by one shared `embedding`."""
    with vs.variable_scope(scope or "embedding_tied_rnn_seq2seq", dtype=dtype) as scope:
        dtype = scope.dtype
        _check_projection(output_projection, num_symbols, dtype)
        embedding = vs.get_variable("embedding", [num_symbols, embedding_size], dtype=dtype)
        emb_encoder_inputs = [embedding_lookup(embedding, x) for x in encoder_inputs]
        emb_decoder_inputs = [embedding_lookup(embedding, x) for x in decoder_inputs]
        output_symbols = num_decoder_symbols if num_decoder_symbols is not None \
            else num_symbols
        if output_projection is None:
            cell = OutputProjectionWrapper(cell, output_symbols)

        def build(flag, update=True):
            loop_function = _extract_argmax_and_embed(embedding, output_projection,
                                                      update) if flag else None
            return tied_rnn_seq2seq(emb_encoder_inputs, emb_decoder_inputs, cell,
                                    loop_function=loop_function, dtype=dtype)

        return _decoders(feed_previous, build, len(decoder_inputs), cell.state_size)


def attention_decoder(decoder_inputs, initial_state, attention_states, cell,
                      output_size=None, num_heads=1, loop_function=None, dtype=None,
                      scope=None, initial_state_attention=False):
    """rnn_decoder with Bahdanau-style attention over `attention_states` [batch, length,
    size] (Vinyals et al., "Grammar as a foreign language"): each step's input is a linear
    map of the input and the previous attention reads; the cell output and the new reads
    give the step's output (of `output_size`, default the cell's).

    Raises:
      ValueError: no decoder inputs, `num_heads` < 1, the attention size or an input's
        depth unknown statically.
    """
    if not decoder_inputs:
        raise ValueError("Must provide at least 1 input to attention decoder.")
    if num_heads < 1:
        raise ValueError("With less than 1 heads, use a non-attention decoder.")
    attention_states = convert_to_tensor(attention_states)
    if tensor_shape.dimension_value(attention_states.shape.with_rank(3)[2]) is None:
        raise ValueError(f"Shape[2] of attention_states must be known: "
                         f"{attention_states.shape}")
    if output_size is None:
        output_size = cell.output_size
    with vs.variable_scope(scope or "attention_decoder", dtype=dtype) as scope:
        dtype = scope.dtype
        batch_size = array_ops.shape(decoder_inputs[0])[0]
        attn_length = tensor_shape.dimension_value(attention_states.shape[1])
        if attn_length is None:
            attn_length = array_ops.shape(attention_states)[1]
        attn_size = tensor_shape.dimension_value(attention_states.shape[2])
        # the hidden states' features W1 h_t as a 1x1 convolution, one per head
        hidden = array_ops.reshape(attention_states, [-1, attn_length, 1, attn_size])
        hidden_features, v = [], []
        for a in range(num_heads):
            k = vs.get_variable(f"AttnW_{a}", [1, 1, attn_size, attn_size], dtype=dtype)
            hidden_features.append(conv_ops.conv2d(hidden, k, [1, 1, 1, 1], "SAME"))
            v.append(vs.get_variable(f"AttnV_{a}", [attn_size], dtype=dtype))

        def attention(query):
            """The heads' reads of the attention states for `query` (a state)."""
            if is_nested(query):
                parts = flatten(query)
                for q in parts:
                    if q.shape.ndims:
                        q.shape.assert_has_rank(2)
                query = joining_ops.concat(parts, 1)
            reads = []
            for a in range(num_heads):
                with vs.variable_scope(f"Attention_{a}"):
                    y = Linear(query, attn_size, True)(query)
                    y = math_ops.cast(array_ops.reshape(y, [-1, 1, 1, attn_size]), dtype)
                    s = reduction_ops.reduce_sum(
                        v[a] * unary_ops.tanh(hidden_features[a] + y), [2, 3])
                    weights = math_ops.cast(nn_ops.softmax(math_ops.cast(s, dtypes.float32)),
                                            dtype)
                    d = reduction_ops.reduce_sum(
                        array_ops.reshape(weights, [-1, attn_length, 1, 1]) * hidden, [1, 2])
                    reads.append(array_ops.reshape(d, [-1, attn_size]))
            return reads

        outputs, prev = [], None
        batch_attn_size = joining_ops.stack([batch_size, attn_size])
        attns = [array_ops.zeros(batch_attn_size, dtype=dtype) for _ in range(num_heads)]
        for a in attns:
            a.set_shape([None, attn_size])
        state = initial_state
        if initial_state_attention:
            attns = attention(initial_state)
        for i, inp in enumerate(decoder_inputs):
            if i > 0:
                vs.get_variable_scope().reuse_variables()
            if loop_function is not None and prev is not None:
                with vs.variable_scope("loop_function", reuse=True):
                    inp = loop_function(prev, i)
            input_size = tensor_shape.dimension_value(inp.shape.with_rank(2)[1])
            if input_size is None:
                raise ValueError(f"Could not infer input size from input: {inp.name}")
            inputs = [math_ops.cast(e, dtype) for e in [inp] + attns]
            x = Linear(inputs, input_size, True)(inputs)
            cell_output, state = cell(x, state)
            if i == 0 and initial_state_attention:
                with vs.variable_scope(vs.get_variable_scope(), reuse=True):
                    attns = attention(state)
            else:
                attns = attention(state)
            with vs.variable_scope("AttnOutputProjection"):
                inputs = [math_ops.cast(cell_output, dtype)] + attns
                output = Linear(inputs, output_size, True)(inputs)
            if loop_function is not None:
                prev = output
            outputs.append(output)
    return outputs, state


def embedding_attention_decoder(decoder_inputs, initial_state, attention_states, cell,
                                num_symbols, embedding_size, num_heads=1, output_size=None,
                                output_projection=None, feed_previous=False,
                                update_embedding_for_previous=True, dtype=None, scope=None,
                                initial_state_attention=False):
    """attention_decoder over embedded integer inputs (an `embedding` in this scope)."""
    if output_size is None:
        output_size = cell.output_size
    if output_projection is not None:
        biases = convert_to_tensor(output_projection[1], dtype=dtype)
        biases.shape.assert_is_compatible_with([num_symbols])
    with vs.variable_scope(scope or "embedding_attention_decoder", dtype=dtype):
        embedding = vs.get_variable("embedding", [num_symbols, embedding_size])
        loop_function = _extract_argmax_and_embed(
            embedding, output_projection, update_embedding_for_previous) \
            if feed_previous else None
        emb_inp = [embedding_lookup(embedding, i) for i in decoder_inputs]
        return attention_decoder(emb_inp, initial_state, attention_states, cell,
                                 output_size=output_size, num_heads=num_heads,
                                 loop_function=loop_function,
                                 initial_state_attention=initial_state_attention)


def embedding_attention_seq2seq(encoder_inputs, decoder_inputs, cell, num_encoder_symbols,
                                num_decoder_symbols, embedding_size, num_heads=1,
                                output_projection=None, feed_previous=False, dtype=None,
                                scope=None, initial_state_attention=False):
    """An embedding encoder whose outputs are attended by an embedding_attention_decoder
    (the model of TF1's translation tutorial)."""
    with vs.variable_scope(scope or "embedding_attention_seq2seq", dtype=dtype) as scope:
        dtype = scope.dtype
        encoder_cell = EmbeddingWrapper(copy.deepcopy(cell),
                                        embedding_classes=num_encoder_symbols,
                                        embedding_size=embedding_size)
        encoder_outputs, encoder_state = static_rnn(encoder_cell, encoder_inputs, dtype=dtype)
        top_states = [array_ops.reshape(e, [-1, 1, cell.output_size]) for e in encoder_outputs]
        attention_states = joining_ops.concat(top_states, 1)
        output_size = None
        if output_projection is None:
            cell = OutputProjectionWrapper(cell, num_decoder_symbols)
            output_size = num_decoder_symbols

        def build(flag, update=True):
            return embedding_attention_decoder(
                decoder_inputs, encoder_state, attention_states, cell, num_decoder_symbols,
                embedding_size, num_heads=num_heads, output_size=output_size,
                output_projection=output_projection, feed_previous=flag,
                update_embedding_for_previous=update,
                initial_state_attention=initial_state_attention)

        return _decoders(feed_previous, build, len(decoder_inputs), encoder_state)


def one2many_rnn_seq2seq(encoder_inputs, decoder_inputs_dict, enc_cell, dec_cells_dict,
                         num_encoder_symbols, num_decoder_symbols_dict, embedding_size,
                         feed_previous=False, dtype=None, scope=None):
    """One embedding encoder, several embedding decoders (one per key of
    `decoder_inputs_dict`, each with its cell and symbol count, in the scope
    `one2many_decoder_<key>`); returns (outputs by key, states by key).

    Raises:
      TypeError: `enc_cell` or a decoder cell is not an RNNCell.
      ValueError: the decoder cells' keys differ from the decoder inputs' keys.
    """
    if not isinstance(enc_cell, RNNCell):
        raise TypeError(f"enc_cell is not an RNNCell: {type(enc_cell)}")
    if set(dec_cells_dict) != set(decoder_inputs_dict):
        raise ValueError("keys of dec_cells_dict != keys of decodre_inputs_dict")
    for dec_cell in dec_cells_dict.values():
        if not isinstance(dec_cell, RNNCell):
            raise TypeError(f"dec_cell is not an RNNCell: {type(dec_cell)}")
    outputs_dict, state_dict = {}, {}
    with vs.variable_scope(scope or "one2many_rnn_seq2seq", dtype=dtype) as scope:
        dtype = scope.dtype
        enc_cell = EmbeddingWrapper(enc_cell, embedding_classes=num_encoder_symbols,
                                    embedding_size=embedding_size)
        _, encoder_state = static_rnn(enc_cell, encoder_inputs, dtype=dtype)
        for name, decoder_inputs in decoder_inputs_dict.items():
            num_decoder_symbols = num_decoder_symbols_dict[name]
            with vs.variable_scope(f"one2many_decoder_{name}"):
                dec_cell = OutputProjectionWrapper(dec_cells_dict[name], num_decoder_symbols)

                def build(flag, update=True, inputs=decoder_inputs, cell=dec_cell,
                          symbols=num_decoder_symbols):
                    return embedding_rnn_decoder(inputs, encoder_state, cell, symbols,
                                                 embedding_size, feed_previous=flag,
                                                 update_embedding_for_previous=update)

                outputs, state = _decoders(feed_previous, build, len(decoder_inputs),
                                           encoder_state)
            outputs_dict[name] = outputs
            state_dict[name] = state
    return outputs_dict, state_dict


def model_with_buckets(encoder_inputs, decoder_inputs, targets, weights, buckets, seq2seq,
                       softmax_loss_function=None, per_example_loss=False, name=None):
    """One seq2seq model per bucket (encoder length, decoder length), sharing variables,
    each over the first inputs of the lists; returns (outputs per bucket, loss per bucket).

    `seq2seq(encoder_inputs, decoder_inputs)` builds a model; the losses are sequence_loss
    (or sequence_loss_by_example with `per_example_loss`).

    Raises:
      ValueError: fewer encoder inputs, targets or weights than the last bucket needs.
    """
    if len(encoder_inputs) < buckets[-1][0]:
        raise ValueError(f"Length of the encoder inputs ({len(encoder_inputs)}) must be at "
                         f"least that of last bucket ({buckets[-1][0]}).")
    if len(targets) < buckets[-1][1]:
        raise ValueError(f"Length of the targets ({len(targets)}) must be at least that of "
                         f"last bucket ({buckets[-1][1]}).")
    if len(weights) < buckets[-1][1]:
        raise ValueError(f"Length of the weights ({len(weights)}) must be at least that of "
                         f"last bucket ({buckets[-1][1]}).")
    all_inputs = list(encoder_inputs) + list(decoder_inputs) + list(targets) + list(weights)
    losses, outputs = [], []
    with graph_lib.name_scope(name, "model_with_buckets", all_inputs):
        for j, (enc_len, dec_len) in enumerate(buckets):
            with vs.variable_scope(vs.get_variable_scope(), reuse=True if j > 0 else None):
                bucket_outputs, _ = seq2seq(encoder_inputs[:enc_len], decoder_inputs[:dec_len])
                outputs.append(bucket_outputs)
                loss_fn = sequence_loss_by_example if per_example_loss else sequence_loss
                losses.append(loss_fn(outputs[-1], targets[:dec_len], weights[:dec_len],
                                      softmax_loss_function=softmax_loss_function))
    return outputs, losses


python = _tf1_paths.register(__name__, {"python.ops.seq2seq": _sys.modules[__name__]})
