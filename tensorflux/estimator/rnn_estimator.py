"""tf.contrib.estimator's recurrent estimators (TF1.15): `RNNEstimator` (any head) and
`RNNClassifier` over sequence feature columns.

The model: `sequence_input_layer` of the sequence columns ([batch, steps, d] and each
example's length), the context columns' `input_layer` appended to every step, an RNN
(`rnn_cell_fn(mode)`, or a MultiRNNCell of `cell_type` cells of `num_units`) unrolled by
`dynamic_rnn`, its output at each example's last step, and a dense layer to the head's
logits. Variables live under "rnn/" ("rnn/sequence_input_layer/...",
"rnn/input_layer/..." for the context, "rnn/rnn/...", "rnn/logits/..."); Adagrad with
learning rate 0.05 by default.
"""

from __future__ import annotations

from tensorflux.estimator import canned
from tensorflux.losses.losses_impl import Reduction

__all__ = ["RNNClassifier", "RNNEstimator"]

USE_DEFAULT = object()
_CELLS = ("basic_rnn", "lstm", "gru")


def _cell_fn(num_units, cell_type):
    """rnn_cell_fn(mode) of a MultiRNNCell of `cell_type` cells, one per `num_units`.

    Raises:
      ValueError: an unknown cell_type.
    """
    from tensorflux.nn import rnn_cell_impl

    if cell_type is USE_DEFAULT:
        cell_type = "basic_rnn"
    if isinstance(cell_type, str):
        if cell_type not in _CELLS:
            raise ValueError(f"cell_type must be one of {list(_CELLS)} or an RNNCell class. "
                             f"Given: {cell_type}")
        cell_type = {"basic_rnn": rnn_cell_impl.BasicRNNCell,
                     "lstm": rnn_cell_impl.BasicLSTMCell,
                     "gru": rnn_cell_impl.GRUCell}[cell_type]

    def rnn_cell_fn(mode):
        cells = [cell_type(n) for n in num_units]
        return cells[0] if len(cells) == 1 else rnn_cell_impl.MultiRNNCell(cells)

    return rnn_cell_fn


def _check_cell_args(num_units, cell_type, rnn_cell_fn):
    if rnn_cell_fn is not None:
        if num_units is not None or cell_type is not USE_DEFAULT:
            raise ValueError("num_units and cell_type must not be specified when using "
                             "rnn_cell_fn")
        return rnn_cell_fn
    if not num_units:
        raise ValueError("num_units must be given (a list of each layer's size) when "
                         "rnn_cell_fn is not.")
    return _cell_fn(list(num_units), cell_type)


def _last_outputs(outputs, lengths):
    """outputs [batch, steps, units] at each example's step lengths - 1."""
    from tensorflux.framework import dtypes
    from tensorflux.ops import array_ops, gather_ops, joining_ops, math_ops, sequence_ops

    batch = array_ops.shape(outputs)[0]
    last = math_ops.maximum(math_ops.cast(lengths, dtypes.int32) - 1, 0)
    idx = joining_ops.stack([sequence_ops.range(batch), last], axis=1)
    return gather_ops.gather_nd(outputs, idx)


def _rnn_logits_fn(sequence_columns, context_columns, cell_fn, units):
    def logits_fn(features, mode):
        from tensorflux.feature_column import feature_column as fc
        from tensorflux.feature_column import sequence_feature_column as sfc
        from tensorflux.framework import dtypes
        from tensorflux.nn import rnn
        from tensorflux.variables import variable_scope

        with variable_scope.variable_scope("rnn"):
            inputs, lengths = sfc.sequence_input_layer(features, sequence_columns)
            if context_columns:
                context = fc.input_layer(features, context_columns)
                inputs = sfc.concatenate_context_input(context, inputs)
            outputs, _ = rnn.dynamic_rnn(cell_fn(mode), inputs, sequence_length=lengths,
                                         dtype=dtypes.float32)
            last = _last_outputs(outputs, lengths)
            with variable_scope.variable_scope("logits"):
                return canned._dense(last, units, None)
    return logits_fn


class RNNEstimator(canned._Canned):
    """An RNN over sequence feature columns whose last output feeds `head`'s logits.

    Raises:
      ValueError: no sequence columns; num_units/cell_type given with rnn_cell_fn; an
        unknown cell_type.
    """

    def __init__(self, head, sequence_feature_columns, context_feature_columns=None,
                 num_units=None, cell_type=USE_DEFAULT, rnn_cell_fn=None, model_dir=None,
                 optimizer="Adagrad", input_layer_partitioner=None, config=None):
        canned._check_head(head)
        seq = list(sequence_feature_columns or [])
        if not seq:
            raise ValueError("sequence_feature_columns must not be empty.")
        cell_fn = _check_cell_args(num_units, cell_type, rnn_cell_fn)
        super().__init__(head, _rnn_logits_fn(seq, list(context_feature_columns or []),
                                              cell_fn, head.logits_dimension),
                         [(optimizer, "Adagrad", 0.05, "rnn")], model_dir, config, None)


class RNNClassifier(RNNEstimator):
    """An RNN classifier of `n_classes` over sequence feature columns (see
    RNNEstimator); its loss is averaged over the batch (SUM_OVER_BATCH_SIZE) by default."""

    def __init__(self, sequence_feature_columns, context_feature_columns=None,
                 num_units=None, cell_type=USE_DEFAULT, rnn_cell_fn=None, model_dir=None,
                 n_classes=2, weight_column=None, label_vocabulary=None,
                 optimizer="Adagrad", loss_reduction=Reduction.SUM_OVER_BATCH_SIZE,
                 input_layer_partitioner=None, config=None):
        canned._check_classes(n_classes, label_vocabulary)
        head = canned._head(n_classes, weight_column=weight_column,
                            label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
        super().__init__(head, sequence_feature_columns, context_feature_columns, num_units,
                         cell_type, rnn_cell_fn, model_dir, optimizer,
                         input_layer_partitioner, config)
