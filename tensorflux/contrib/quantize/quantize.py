"""contrib.quantize's Quantize: finds the layers of a graph (Conv2D, MatMul or
DepthwiseConv2dNative reading a variable or a folded weight, then an optional bias add,
bypass Add, activation Relu/Relu6/Identity, post-activation bypass Add) and inserts
FakeQuantWithMinMaxVars ops:

- after the weights: `<layer scope>/weights_quant` (the last batch's range, narrow range);
- after the activation (or, for a last layer, the bias add): `<scope>/act_quant`
  (moving averages, starting at [0, 6]);
- before and after a bypass: `conv_quant`, `add_quant`; after a post-activation bypass:
  `post_activation_bypass_quant`;
- after Add/AddV2/Mul ops that combine quantized values:
  `<op name>/activation_<type>_quant`.

With `quant_delay` the quantized value is used only from that quantization step on
(a tf.cond on `fake_quantization_step`)."""

from __future__ import annotations

import re

from tensorflux.contrib.quantize import common, graph_matcher, quant_ops
from tensorflux.control_flow import builders
from tensorflux.framework import graph as graph_lib
from tensorflux.ops import comparison_ops

_QUANTIZABLE_TYPES = ("Conv2D", "MatMul", "DepthwiseConv2dNative")
_ACTIVATION_TYPES = frozenset({"Relu", "Relu6", "Identity"})
_RELU_TYPES = frozenset({"Relu", "Relu6"})
_QUANTIZATION_OPS = frozenset({"FakeQuantWithMinMaxVars"})
_VALID_SRC_OPS = frozenset({"Add", "AddV2", "Mul"})
_INTERMEDIATE_OPS = frozenset({"Add", "AddV2", "Mul"})
_PASS_THROUGH_OPS = frozenset({"Reshape", "Identity", "BatchToSpaceND", "SpaceToBatchND"})
_FAKE_QUANT_OPS = frozenset({"FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxArgs",
                             "FakeQuantWithMinMaxVarsPerChannel"})


class _LayerMatch:
    __slots__ = ("layer_op", "weight_tensor", "activation_op", "bypass_op",
                 "post_activation_bypass_op", "bias_add_op")

    def __init__(self, layer_op, weight_tensor, activation_op, bypass_op=None,
                 post_activation_bypass_op=None, bias_add_op=None):
        self.layer_op = layer_op
        self.weight_tensor = weight_tensor
        self.activation_op = activation_op
        self.bypass_op = bypass_op
        self.post_activation_bypass_op = post_activation_bypass_op
        self.bias_add_op = bias_add_op


class _Patterns:
    """The layer patterns (TF 1.15's, see the module docstring)."""

    def __init__(self):
        p = graph_matcher.OpTypePattern
        self.weight_var = p("Variable|VariableV2")
        partition_identity = p("Identity", inputs=[self.weight_var])
        partition_concat = p("ConcatV2", inputs=[partition_identity, "*", "*"])
        self.weight_identity = p("Identity", inputs=[graph_matcher.OneofPattern(
            [partition_identity, partition_concat, self.weight_var])])
        self.weight_resource = p("ReadVariableOp")
        self.folded_weight = p("Mul")
        self.layer = p("|".join(_QUANTIZABLE_TYPES), inputs=[p("*"), graph_matcher.OneofPattern(
            [self.weight_identity, self.weight_resource, self.folded_weight])],
            ordered_inputs=False)
        batch_to_space = p("BatchToSpaceND", inputs=[self.layer, p("*"), p("*")])
        layer_output = graph_matcher.OneofPattern([batch_to_space, self.layer])
        self.sep_conv = p("|".join(_QUANTIZABLE_TYPES), inputs=[
            graph_matcher.OneofPattern([layer_output]), p("*")], ordered_inputs=False)
        folded_bias_mul = p("Mul", inputs=[p("*"), layer_output], ordered_inputs=False)
        correction = p("Add|AddV2", inputs=[folded_bias_mul, p("*")], ordered_inputs=False)
        self.folded_bias_add = p("Add|AddV2", inputs=[correction, p("*")],
                                 ordered_inputs=False)
        bn_identity = p("Identity", inputs=[self.folded_bias_add])
        self.bias_add = p("Add|AddV2|BiasAdd", inputs=[layer_output, "*"],
                          ordered_inputs=False)
        self.bypass = p("Add|AddV2", inputs=[graph_matcher.OneofPattern(
            [self.bias_add, self.folded_bias_add, bn_identity]), "*"], ordered_inputs=False)
        self.activation = p("|".join(sorted(_ACTIVATION_TYPES)), inputs=[
            graph_matcher.OneofPattern([self.bias_add, self.folded_bias_add, bn_identity,
                                        self.bypass, self.layer])])
        self.post_activation_bypass = p("Add|AddV2", inputs=["*", self.activation],
                                        ordered_inputs=False)

    def weight_tensor(self, match, folded=True):
        for pattern in (self.weight_identity, self.weight_resource) + \
                ((self.folded_weight,) if folded else ()):
            t = match.get_tensor(pattern)
            if t is not None:
                return t
        return None

    def bias_add_op(self, match):
        op = match.get_op(self.bias_add)
        return op if op is not None else match.get_op(self.folded_bias_add)


def _is_skip_layer(activation_op):
    """conv -> Identity -> FusedBatchNorm: the statistics part of a folded batch norm."""
    if activation_op.type != "Identity" or len(activation_op.outputs) != 1:
        return False
    consumers = activation_op.outputs[0].consumers()
    return len(consumers) == 1 and consumers[0].type in ("FusedBatchNorm", "FusedBatchNormV3")


def _find_layers_to_quantize(graph):
    """The layers to quantize, largest patterns first, each layer op once."""
    pats = _Patterns()
    matches, seen = [], set()

    def add(layer_match):
        if layer_match.layer_op not in seen:
            seen.add(layer_match.layer_op)
            matches.append(layer_match)

    for m in graph_matcher.GraphMatcher(pats.post_activation_bypass).match_graph(graph):
        add(_LayerMatch(m.get_op(pats.layer), pats.weight_tensor(m), m.get_op(pats.activation),
                        m.get_op(pats.bypass), m.get_op(pats.post_activation_bypass),
                        pats.bias_add_op(m)))
    for m in graph_matcher.GraphMatcher(pats.activation).match_graph(graph):
        activation = m.get_op(pats.activation)
        if m.get_op(pats.layer) not in seen and not _is_skip_layer(activation):
            add(_LayerMatch(m.get_op(pats.layer), pats.weight_tensor(m), activation,
                            m.get_op(pats.bypass), None, pats.bias_add_op(m)))
    final = graph_matcher.OneofPattern([pats.bias_add, pats.folded_bias_add])
    for m in graph_matcher.GraphMatcher(final).match_graph(graph):
        add(_LayerMatch(m.get_op(pats.layer), pats.weight_tensor(m), pats.bias_add_op(m)))
    for m in graph_matcher.GraphMatcher(pats.sep_conv).match_graph(graph):
        add(_LayerMatch(m.get_op(pats.layer), pats.weight_tensor(m, folded=False),
                        m.get_op(pats.layer)))
    return matches


def _followed_by_fake_quant(tensor) -> bool:
    pending = list(tensor.consumers())
    while pending:
        c = pending.pop()
        if c.type in _FAKE_QUANT_OPS:
            return True
        if c.type in ("Reshape", "Identity"):
            for t in c.outputs:
                pending.extend(t.consumers())
    return False


def _context(name):
    found = re.search(r"^(.*)/([^/]+)", name)
    return found.group(1) if found else ""


def _with_context(context, name):
    return f"{context}/{name}" if context else name


def _insert_quant_op(context, name, producer, consumers, is_training, moving_avg=True,
                     init_min=-6.0, init_max=6.0, bits=8, symmetric=False, ema_decay=0.999,
                     quant_delay=None, vars_collection=graph_lib.GraphKeys.GLOBAL_VARIABLES,
                     narrow_range=False, producer_scope=None, consumer_scope=None):
    """Inserts a fake quant between `producer`'s first output and `consumers`.

    Raises:
      ValueError: a consumer does not read that output.
    """
    if producer_scope and not producer.name.startswith(producer_scope):
        return
    if consumer_scope:
        if any(not c.name.startswith(consumer_scope) for c in consumers):
            return
    name_prefix = _with_context(context, name)
    name_scope = graph_lib.get_default_graph().get_name_scope()
    if name_scope:
        name_prefix = common.drop_string_prefix(name_prefix, name_scope + "/")
    inputs = producer.outputs[0]
    if _followed_by_fake_quant(inputs):
        return
    kwargs = dict(init_min=init_min, init_max=init_max, is_training=is_training,
                  num_bits=bits, symmetric=symmetric, narrow_range=narrow_range,
                  vars_collection=vars_collection, name_prefix=name_prefix)
    if moving_avg:
        quant = quant_ops.MovingAvgQuantize(inputs, ema_decay=ema_decay, **kwargs)
    else:
        quant = quant_ops.LastValueQuantize(inputs, **kwargs)
    if quant_delay and quant_delay > 0:
        activate = comparison_ops.greater_equal(common.create_or_get_quantization_step(),
                                                quant_delay, name=name_prefix + "/activate_quant")
        quantized = quant
        quant = builders.cond(activate, lambda: quantized, lambda: inputs,
                              name=name_prefix + "/delayed_quant")
    if consumers:
        changed = common.reroute_tensor(quant, inputs, can_modify=consumers)
        if changed < len(consumers):
            names = ", ".join(sorted(c.name for c in consumers))
            raise ValueError(f"No inputs quantized for ops: [{names}]")


def _check_if_quantizable_op(src_op, quantized_ops) -> bool:
    """Whether an Add/AddV2/Mul combines quantized values (through pass-through ops) and is
    not followed by its one consumer being an activation."""
    if src_op in quantized_ops or src_op.type not in _VALID_SRC_OPS:
        return False
    if len(src_op.outputs) == 1 and len(src_op.outputs[0].consumers()) == 1 \
            and src_op.outputs[0].consumers()[0].type in _RELU_TYPES:
        return False
    for t in src_op.inputs:
        op = t.op
        while op.type in _PASS_THROUGH_OPS and op.inputs:
            op = op.inputs[0].op
        if op.type in _QUANTIZATION_OPS or op.name.find("delayed_quant/Merge") > 0:
            return True
        if op.type in _INTERMEDIATE_OPS and any(
                _check_if_quantizable_op(i.op, quantized_ops) for i in op.inputs):
            return True
    return False


def _quantize_activation_layers(quantized_ops, graph, is_training, activation_bits,
                                ema_decay, quant_delay, vars_collection, scope):
    for op in list(graph.get_operations()):
        if _check_if_quantizable_op(op, quantized_ops):
            _insert_quant_op(op.name, f"activation_{op.type}_quant", op,
                             common.consumer_operations(op), is_training, moving_avg=True,
                             ema_decay=ema_decay, quant_delay=quant_delay,
                             vars_collection=vars_collection, bits=activation_bits,
                             producer_scope=scope)


def Quantize(graph, is_training, weight_bits=8, activation_bits=8,  # noqa: N802
             symmetric=False, ema_decay=0.999, quant_delay=None,
             vars_collection=graph_lib.GraphKeys.GLOBAL_VARIABLES, scope=None):
    """Inserts the fake quantization ops of the module docstring into `graph`; with
    `scope`, only where the ops involved are in that scope.

    Raises:
      ValueError: a fake quant could not be connected to its consumers.
    """
    if scope and not scope.endswith("/"):
        scope += "/"
    common_args = dict(ema_decay=ema_decay, quant_delay=quant_delay,
                       vars_collection=vars_collection, symmetric=symmetric)
    quantized_ops = set()
    for match in _find_layers_to_quantize(graph):
        context = _context(match.layer_op.name)
        if match.weight_tensor is not None:
            _insert_quant_op(context, "weights_quant", match.weight_tensor.op,
                             common.consumer_operations(match.weight_tensor.op), is_training,
                             moving_avg=False, narrow_range=True, bits=weight_bits,
                             consumer_scope=scope, **common_args)
        add_context = _context(context) if match.bypass_op is not None else context
        if match.activation_op is not None:
            _insert_quant_op(add_context, "act_quant", match.activation_op,
                             common.consumer_operations(match.activation_op), is_training,
                             moving_avg=True, bits=activation_bits, init_min=0.0,
                             producer_scope=scope, **common_args)
            quantized_ops.add(match.activation_op)
        if match.bypass_op is not None:
            _insert_quant_op(context, "conv_quant", match.bias_add_op,
                             common.consumer_operations(match.bias_add_op), is_training,
                             moving_avg=True, bits=activation_bits, producer_scope=scope,
                             consumer_scope=scope, **common_args)
            quantized_ops.add(match.bias_add_op)
            consumers = common.consumer_operations(match.bypass_op)
            if not any(c.type in _ACTIVATION_TYPES for c in consumers):
                _insert_quant_op(add_context, "add_quant", match.bypass_op, consumers,
                                 is_training, moving_avg=True, bits=activation_bits,
                                 producer_scope=scope, consumer_scope=scope, **common_args)
                quantized_ops.add(match.bypass_op)
        post = match.post_activation_bypass_op
        if post is not None:
            consumers = common.consumer_operations(post)
            if not any(c.type in _RELU_TYPES for c in consumers):
                _insert_quant_op(_context(post.name), "post_activation_bypass_quant", post,
                                 consumers, is_training, moving_avg=True, bits=activation_bits,
                                 producer_scope=scope, **common_args)
                quantized_ops.add(post)
    _quantize_activation_layers(quantized_ops, graph, is_training, activation_bits, ema_decay,
                                quant_delay, vars_collection, scope)
