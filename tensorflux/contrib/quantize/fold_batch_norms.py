"""Folding fused batch norms into the layer before them (contrib.quantize's
FoldBatchNorms), so the folded weights can be fake-quantized as the inference graph will
compute them.

For Conv2D / DepthwiseConv2dNative / MatMul (a MatMul through a Reshape) followed by
FusedBatchNorm(V3), with m = gamma * rsqrt(variance + epsilon):
  weights' = weights * m                       (`<scope>/mul_fold`)
  layer'   = layer(input, weights')            (`<scope>/<layer>_Fold`)
  output   = layer' + (beta - mean * m)        (`<scope>/add_fold`)
replaces the batch norm's output for its consumers. A batch norm computing batch
statistics (is_training) uses them for mean and variance (its variance output is
Bessel-corrected: undone by (n - 1) / n), and in a training rewrite the weights are
scaled by the moving variance instead, the layer output corrected back by
rsqrt(batch variance) / rsqrt(moving variance) (`batch_norm_correction`); from
`freeze_batch_norm_delay` quantization steps on the moving statistics are used and no
longer updated. The batch norm op then gets the gradient `FoldFusedBatchNormGrad`, which
carries the gradients of its batch mean and variance outputs to its input. Unfused batch
norms (tf.nn.batch_normalization compositions) are left as they are."""

from __future__ import annotations

from tensorflux.contrib.quantize import common
from tensorflux.control_flow import builders
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_registry import gradient
from tensorflux.nn import conv_impl
from tensorflux.ops import (
    array_ext_ops,
    array_ops,
    comparison_ops,
    conv_ops,
    math_ops,
    unary_ops,
)

_LAYER_TYPES = ("Conv2D", "DepthwiseConv2dNative", "MatMul")
_BATCH_NORM_TYPES = ("FusedBatchNorm", "FusedBatchNormV3")


@gradient("FoldFusedBatchNormGrad")
def _fold_fused_batch_norm_grad(op, unused_grad_y, grad_mean, grad_var, *unused):
    x = op.inputs[0]
    n = math_ops.cast(array_ops.size(x) / array_ops.size(op.outputs[1]), dtypes.float32)
    grad = None
    if grad_mean is not None:
        grad = grad_mean / n
    if grad_var is not None:
        dvar = 2.0 * grad_var * (x - op.outputs[1]) / (n - 1.0)
        grad = dvar if grad is None else grad + dvar
    if grad is not None and grad_var is None:
        grad = grad + array_ops.zeros_like(x)
    return [grad, None, None, None, None]


class _BatchNormMatch:
    __slots__ = ("layer_op", "bn_op", "output_tensor", "input_tensor", "weight_tensor",
                 "gamma", "beta", "mean", "variance", "moving_mean", "moving_variance",
                 "decay_mean", "decay_var", "batch_to_space_op", "epsilon")


def _layer_before(t):
    """(layer op, BatchToSpaceND op or None) producing `t`, or (None, None)."""
    op = t.op
    if op.type == "Reshape":
        op = op.inputs[0].op
        if op.type != "MatMul":
            return None, None
    if op.type == "BatchToSpaceND" and op.inputs[0].op.type in _LAYER_TYPES:
        return op.inputs[0].op, op
    return (op, None) if op.type in _LAYER_TYPES else (None, None)


def _moving_average_inputs(graph, batch_output):
    """(moving statistic, decay) of the update `(moving - batch_output) * decay`."""
    for sub in batch_output.consumers():
        if sub.type != "Sub" or sub.inputs[1] is not batch_output:
            continue
        for mul in sub.outputs[0].consumers():
            if mul.type == "Mul" and mul.inputs[0] is sub.outputs[0]:
                return sub.inputs[0], mul.inputs[1]
    return None, None


def _find_fused_batch_norms(graph):
    matches = []
    for bn_op in graph.get_operations():
        if bn_op.type not in _BATCH_NORM_TYPES:
            continue
        layer_op, batch_to_space_op = _layer_before(bn_op.inputs[0])
        if layer_op is None:
            continue
        output = bn_op.outputs[0]
        if layer_op.type == "MatMul":
            reshapes = [c for c in output.consumers() if c.type == "Reshape"]
            if not reshapes:
                continue
            output = reshapes[0].outputs[0]
        if not output.consumers():
            continue
        m = _BatchNormMatch()
        m.layer_op, m.bn_op, m.output_tensor = layer_op, bn_op, output
        m.batch_to_space_op, m.epsilon = batch_to_space_op, bn_op.get_attr("epsilon")
        m.input_tensor, m.weight_tensor = layer_op.inputs[0], layer_op.inputs[1]
        m.gamma, m.beta = bn_op.inputs[1], bn_op.inputs[2]
        m.moving_mean = m.moving_variance = m.decay_mean = m.decay_var = None
        if bn_op.get_attr("is_training"):
            bn_op._set_attr("_gradient_op_type", "FoldFusedBatchNormGrad")
            m.mean = bn_op.outputs[1]
            scope = bn_op.name.rpartition("/")[0]
            with graph.as_default(), graph.name_scope(scope + "/" if scope else None):
                n = math_ops.cast(array_ops.size(bn_op.inputs[0]) / array_ops.size(m.mean),
                                  dtypes.float32)
                m.variance = math_ops.multiply(bn_op.outputs[2], (n - 1.0) / n,
                                               name="Undo_Bessel_Correction")
            m.moving_mean, m.decay_mean = _moving_average_inputs(graph, bn_op.outputs[1])
            m.moving_variance, m.decay_var = _moving_average_inputs(graph, bn_op.outputs[2])
        else:
            m.mean, m.variance = bn_op.inputs[3], bn_op.inputs[4]
        matches.append(m)
    return matches


def _smart_cond(pred, true_fn, false_fn, name):
    if isinstance(pred, bool):
        return true_fn() if pred else false_fn()
    return builders.cond(pred, true_fn, false_fn, name=name)


def _batch_norm_corrections(match, freeze_batch_norm_delay):
    """(scale, reciprocal, offset): weights by scale, layer output by reciprocal, plus
    offset, turn moving-variance-folded weights into the batch's normalization."""
    with graph_lib.get_default_graph().name_scope("batch_norm_correction"):
        recip_sigma_mv = unary_ops.rsqrt(match.moving_variance + match.epsilon)
        recip_sigma = unary_ops.rsqrt(match.variance + match.epsilon)
        scale = math_ops.divide(recip_sigma_mv, recip_sigma, name="scale_compute")
        scale = array_ops.identity(scale, name="correction_scale")
        recip = unary_ops.reciprocal(scale, name="reciprocal_compute")
        offset = math_ops.multiply(
            match.gamma, match.mean * recip_sigma - match.moving_mean * recip_sigma_mv,
            name="offset_compute")
        use_mv_avg = False
        if freeze_batch_norm_delay is not None:
            use_mv_avg = comparison_ops.greater_equal(
                common.create_or_get_quantization_step(), freeze_batch_norm_delay,
                name="use_moving_average")
            # the moving averages stop moving: their decay (1 - momentum) becomes 0
            for decay, name in ((match.decay_mean, "freeze_moving_mean"),
                                (match.decay_var, "freeze_moving_var")):
                consumers = list(decay.consumers())
                frozen = builders.cond(use_mv_avg, lambda d=decay: math_ops.cast(0.0, d.dtype),
                                       lambda d=decay: array_ops.identity(d), name=name)
                common.reroute_tensor(frozen, decay, can_modify=consumers)
        recip = _smart_cond(use_mv_avg, lambda: array_ops.ones(scale.shape),
                            lambda: recip, name="correction_recip")
        offset = _smart_cond(use_mv_avg, lambda: offset,
                             lambda: array_ops.zeros(offset.shape), name="correction_offset")
    return scale, recip, offset


def _clone_layer(layer_op, inputs, weights, batch_to_space_op):
    name = layer_op.name.split("/")[-1] + "_Fold"
    if layer_op.type == "Conv2D":
        return conv_ops.conv2d(inputs, weights, strides=layer_op.get_attr("strides"),
                               padding=layer_op.get_attr("padding"),
                               data_format=layer_op.get_attr("data_format").decode(),
                               dilations=layer_op.get_attr("dilations"), name=name)
    if layer_op.type == "MatMul":
        return math_ops.matmul(inputs, weights, transpose_a=layer_op.get_attr("transpose_a"),
                               transpose_b=layer_op.get_attr("transpose_b"), name=name)
    conv = conv_impl.depthwise_conv2d(inputs, weights, rate=[1, 1],
                                      strides=layer_op.get_attr("strides"),
                                      padding=layer_op.get_attr("padding"), name=name)
    if batch_to_space_op is not None:
        conv = array_ext_ops.batch_to_space_nd(
            conv, batch_to_space_op.inputs[1], batch_to_space_op.inputs[2],
            name=batch_to_space_op.name.split("/")[-1] + "_Fold")
    return conv


def _fold(graph, match, is_training, freeze_batch_norm_delay):
    scope = match.layer_op.name.rpartition("/")[0]
    with graph.as_default(), graph.name_scope(scope + "/" if scope else None):
        with graph.name_scope((scope + "/" if scope else "") + "BatchNorm_Fold/"):
            multiplier = match.gamma * unary_ops.rsqrt(match.variance + match.epsilon)
            bias = math_ops.subtract(match.beta, match.mean * multiplier, name="bias")
            scale = recip = offset = None
            if is_training and match.moving_mean is not None:
                scale, recip, offset = _batch_norm_corrections(match, freeze_batch_norm_delay)
            if match.layer_op.type == "DepthwiseConv2dNative":
                shape = match.weight_tensor.get_shape().as_list()[2:4]
                multiplier = array_ops.reshape(multiplier, shape, name="scale_reshape")
                if scale is not None:
                    scale = array_ops.reshape(scale, shape, name="correction_reshape")
        weights = match.weight_tensor
        if scale is not None:
            weights = math_ops.multiply(scale, weights, name="correction_mult")
        weights = math_ops.multiply(weights, multiplier, name="mul_fold")
        layer = _clone_layer(match.layer_op, match.input_tensor, weights,
                             match.batch_to_space_op)
        if recip is not None:
            layer = math_ops.multiply(recip, layer, name="post_conv_mul")
            layer = math_ops.add(layer, offset, name="correction_add")
        layer = math_ops.add(layer, bias, name="add_fold")
    if common.reroute_tensor(layer, match.output_tensor) == 0:
        raise ValueError(f"Folding batch norms failed, {match.output_tensor.name} had no "
                         "outputs.")


def FoldBatchNorms(graph, is_training, freeze_batch_norm_delay=None):  # noqa: N802
    """Folds every fused batch norm after a Conv2D, DepthwiseConv2dNative or MatMul into
    it (see the module docstring).

    Raises:
      ValueError: a batch norm output could not be rerouted.
    """
    for match in _find_fused_batch_norms(graph):
        _fold(graph, match, is_training, freeze_batch_norm_delay)
