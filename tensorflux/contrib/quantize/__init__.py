"""`tf.contrib.quantize`: rewrites a float graph for quantization-aware training and
evaluation. `create_training_graph` / `create_eval_graph` (and their `experimental_`
forms with bit widths, symmetric ranges, delays and a scope) first fold fused batch norms
into the layers before them (fold_batch_norms.py), then insert FakeQuantWithMinMaxVars
ops after weights and activations with their ranges in variables named as TF 1.15 names
them (`<layer scope>/weights_quant/min`, `.../act_quant/max`, ...: quantize.py)."""

from __future__ import annotations

import sys as _sys

from tensorflux.contrib import tf1_paths as _tf1_paths
from tensorflux.contrib.quantize import (
    common,
    fold_batch_norms,
    graph_matcher,
    quant_ops,
    quantize,
)
from tensorflux.framework import graph as _graph_lib

__all__ = ["create_eval_graph", "create_training_graph", "experimental_create_eval_graph",
           "experimental_create_training_graph"]


def _create_graph(input_graph=None, is_training=True, weight_bits=8, activation_bits=8,
                  symmetric=False, quant_delay=None, freeze_bn_delay=None, scope=None):
    if input_graph is None:
        input_graph = _graph_lib.get_default_graph()
    with input_graph.as_default():
        fold_batch_norms.FoldBatchNorms(input_graph, is_training=is_training,
                                        freeze_batch_norm_delay=freeze_bn_delay)
        quantize.Quantize(input_graph, is_training, weight_bits=weight_bits,
                          activation_bits=activation_bits, symmetric=symmetric,
                          quant_delay=quant_delay, scope=scope)


def create_training_graph(input_graph=None, quant_delay=0):
    """Rewrites `input_graph` (default: the default graph) in place for quantization-aware
    training: 8-bit weights and activations, ranges learned from the batches; quantized
    values are used from quantization step `quant_delay` on. Call it after building the
    model and loss and before building the optimizer.

    Raises:
      ValueError: the rewrite could not connect a fake quant.
    """
    _create_graph(input_graph=input_graph, is_training=True, quant_delay=quant_delay,
                  freeze_bn_delay=None)


def create_eval_graph(input_graph=None):
    """Rewrites `input_graph` in place for evaluation: 8-bit fake quantization over the
    ranges stored in the range variables (restored from training).

    Raises:
      ValueError: the rewrite could not connect a fake quant.
    """
    _create_graph(input_graph=input_graph, is_training=False)


def experimental_create_training_graph(input_graph=None, weight_bits=8, activation_bits=8,
                                       symmetric=False, quant_delay=0, freeze_bn_delay=None,
                                       scope=None):
    """create_training_graph with the bit widths, symmetric ranges, the step from which
    batch norms use (and stop updating) their moving statistics, and a scope limiting the
    rewrite.

    Raises:
      ValueError: the rewrite could not connect a fake quant.
    """
    _create_graph(input_graph=input_graph, is_training=True, weight_bits=weight_bits,
                  activation_bits=activation_bits, symmetric=symmetric,
                  quant_delay=quant_delay, freeze_bn_delay=freeze_bn_delay, scope=scope)


def experimental_create_eval_graph(input_graph=None, weight_bits=8, activation_bits=8,
                                   symmetric=False, quant_delay=None, scope=None):
    """create_eval_graph with bit widths, symmetric ranges, a delay and a scope.

    Raises:
      ValueError: the rewrite could not connect a fake quant.
    """
    _create_graph(input_graph=input_graph, is_training=False, weight_bits=weight_bits,
                  activation_bits=activation_bits, symmetric=symmetric,
                  quant_delay=quant_delay, scope=scope)


python = _tf1_paths.register(__name__, {
    "python.quantize_graph": _sys.modules[__name__],
    "python.quantize": quantize,
    "python.quant_ops": quant_ops,
    "python.fold_batch_norms": fold_batch_norms,
    "python.graph_matcher": graph_matcher,
    "python.common": common,
})
