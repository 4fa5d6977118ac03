"""Canned estimators (TF1): DNN, linear, wide & deep and baseline classifiers and
regressors, and the same networks over any head (DNNEstimator, LinearEstimator,
DNNLinearCombinedEstimator, BaselineEstimator), with the logit-fn builders.

Each is an Estimator whose model_fn builds the network from feature columns under TF1's
variable names (`dnn/input_from_feature_columns/input_layer/...`, `dnn/hiddenlayer_<i>/`,
`dnn/logits/`; `linear/linear_model/<column>/weights`, `linear/linear_model/bias_weights`)
and hands its logits to a head (heads.py): the classifiers' is BinaryClassHead (n_classes ==
2: one logit) or MultiClassHead, the regressors' RegressionHead, their losses summed over
the batch (TF1's canned `Reduction.SUM`) unless `loss_reduction` says otherwise.
"""

from __future__ import annotations

import math

from tensorflux.estimator import heads
from tensorflux.estimator.estimator import Estimator
from tensorflux.estimator.model_fn import ModeKeys
from tensorflux.framework import dtypes
from tensorflux.losses.losses_impl import Reduction


def _optimizer(opt, name: str, default_lr: float):
    from tensorflux.train import adagrad, adam, ftrl, gradient_descent, rmsprop

    if callable(opt) and not hasattr(opt, "minimize"):
        opt = opt()
    if opt is None:
        opt = name
    if not isinstance(opt, str):
        return opt
    made = {"Adagrad": adagrad.AdagradOptimizer, "Adam": adam.AdamOptimizer,
            "Ftrl": ftrl.FtrlOptimizer, "RMSProp": rmsprop.RMSPropOptimizer,
            "SGD": gradient_descent.GradientDescentOptimizer}
    if opt not in made:
        raise ValueError(f"Unsupported optimizer name: {opt}. Supported names are: "
                         f"{sorted(made)}")
    return made[opt](default_lr)


def _head(n_classes, label_dimension=1, weight_column=None, label_vocabulary=None,
          loss_reduction=None):
    """The head of a canned classifier (`n_classes`) or regressor (None): its loss summed
    over the batch unless `loss_reduction` says otherwise (TF1's canned default)."""
    reduction = loss_reduction or Reduction.SUM
    if n_classes is None:
        return heads.RegressionHead(label_dimension, weight_column, reduction)
    if n_classes == 2:
        return heads.BinaryClassHead(weight_column, label_vocabulary=label_vocabulary,
                                     loss_reduction=reduction)
    return heads.MultiClassHead(n_classes, weight_column, label_vocabulary, reduction)


def _check_classes(n_classes, label_vocabulary):
    if n_classes < 2:
        raise ValueError(f"n_classes must be > 1: {n_classes}")
    if label_vocabulary is not None and len(label_vocabulary) != n_classes:
        raise ValueError(f"label_vocabulary does not have n_classes ({n_classes}) entries: "
                         f"{label_vocabulary}")


def _dnn_logits(features, feature_columns, hidden_units, logits_dimension, activation_fn,
                dropout, mode):
    from tensorflux.variables import variable_scope

    with variable_scope.variable_scope("dnn"):
        return _dnn_body(features, feature_columns, hidden_units, logits_dimension,
                         activation_fn, dropout, mode)


def _dnn_body(features, feature_columns, hidden_units, logits_dimension, activation_fn,
              dropout, mode):
    """input_from_feature_columns/, hiddenlayer_<i>/ and logits/ in the current scope."""
    from tensorflux.feature_column import feature_column as fc
    from tensorflux.layers import core as layers
    from tensorflux.variables import variable_scope

    with variable_scope.variable_scope("input_from_feature_columns"):
        net = fc.input_layer(features, feature_columns)
    for i, units in enumerate(hidden_units):
        with variable_scope.variable_scope(f"hiddenlayer_{i}"):
            net = _dense(net, units, activation_fn)
            if dropout is not None and mode == ModeKeys.TRAIN:
                net = layers.dropout(net, rate=dropout, training=True)
    with variable_scope.variable_scope("logits"):
        return _dense(net, logits_dimension, None)


def dnn_logit_fn_builder(units, hidden_units, feature_columns, activation_fn, dropout,
                         input_layer_partitioner=None, batch_norm=False):
    """logit_fn(features, mode) of a feed-forward network (DNNEstimator's, without its
    "dnn" scope): `units` logits.

    Raises:
      ValueError: units is not an int.
    """
    if not isinstance(units, int):
        raise ValueError(f"units must be an int.  Given type: {type(units)}")
    act = activation_fn or _relu

    def dnn_logit_fn(features, mode):
        return _dnn_body(features, feature_columns, hidden_units, units, act, dropout, mode)

    return dnn_logit_fn


def linear_logit_fn_builder(units=1, feature_columns=(), sparse_combiner="sum"):
    """logit_fn(features) of a linear model (`linear_model` in the current scope)."""

    def linear_logit_fn(features):
        from tensorflux.feature_column import feature_column as fc

        return fc.linear_model(features, list(feature_columns), units=units,
                               sparse_combiner=sparse_combiner)

    return linear_logit_fn


def _dense(x, units, activation):
    """kernel and bias in the current variable scope (TF1's canned layer names)."""
    from tensorflux.ops import matrix_ops, nn_ops
    from tensorflux.variables import init_ops, variable_scope

    n_in = x.shape.as_list()[-1]
    kernel = variable_scope.get_variable(
        "kernel", [n_in, units], initializer=init_ops.glorot_uniform_initializer())
    bias = variable_scope.get_variable("bias", [units],
                                       initializer=init_ops.zeros_initializer())
    out = nn_ops.bias_add(matrix_ops.matmul(x, kernel), bias)
    return activation(out) if activation is not None else out


def _linear_logits(features, feature_columns, units, sparse_combiner):
    from tensorflux.feature_column import feature_column as fc
    from tensorflux.variables import variable_scope

    with variable_scope.variable_scope("linear"):
        return fc.linear_model(features, feature_columns, units=units,
                               sparse_combiner=sparse_combiner)


class _Canned(Estimator):
    """An Estimator of `logits_fn(features, mode)` and `head`, trained by `optimizers`:
    (optimizer or name, default name, default learning rate, variable scope) each, one per
    part of the network (each updates the trainable variables under its scope)."""

    def __init__(self, head, logits_fn, optimizers, model_dir, config, warm_start_from):
        def train_op_fn(loss):
            from tensorflux.control_flow import builders
            from tensorflux.framework import graph as graph_lib
            from tensorflux.ops import state_ops
            from tensorflux.train.global_step import get_global_step

            step = get_global_step()
            made = [(_optimizer(o, name, lr), scope) for o, name, lr, scope in optimizers]
            if len(made) == 1:
                return made[0][0].minimize(loss, global_step=step)
            updates = [opt.minimize(loss, var_list=graph_lib.get_collection(
                graph_lib.GraphKeys.TRAINABLE_VARIABLES, scope + "/"))
                for opt, scope in made]
            with graph_lib.get_default_graph().control_dependencies(
                    [builders.group(*updates)]):
                return state_ops.assign_add(step, 1).op

        def model_fn(features, labels, mode, config):
            return head.create_estimator_spec(features, mode, logits_fn(features, mode), labels,
                                              train_op_fn=train_op_fn)

        super().__init__(model_fn, model_dir=model_dir, config=config,
                         warm_start_from=warm_start_from)


class DNNClassifier(_Canned):
    """A feed-forward classifier of `hidden_units` over feature columns."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, optimizer="Adagrad",
                 activation_fn=None, dropout=None, input_layer_partitioner=None,
                 config=None, warm_start_from=None, loss_reduction=None, batch_norm=False):
        _check_classes(n_classes, label_vocabulary)
        head = _head(n_classes, weight_column=weight_column,
                     label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
        act = activation_fn or _relu
        super().__init__(head, lambda f, m: _dnn_logits(
            f, feature_columns, hidden_units, head.logits_dimension, act, dropout, m),
            [(optimizer, "Adagrad", 0.05, "dnn")], model_dir, config, warm_start_from)


class DNNRegressor(_Canned):
    """A feed-forward regressor of `hidden_units` over feature columns."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, label_dimension=1,
                 weight_column=None, optimizer="Adagrad", activation_fn=None, dropout=None,
                 input_layer_partitioner=None, config=None, warm_start_from=None,
                 loss_reduction=None, batch_norm=False):
        head = _head(None, label_dimension, weight_column, loss_reduction=loss_reduction)
        act = activation_fn or _relu
        super().__init__(head, lambda f, m: _dnn_logits(
            f, feature_columns, hidden_units, label_dimension, act, dropout, m),
            [(optimizer, "Adagrad", 0.05, "dnn")], model_dir, config, warm_start_from)


def _linear_lr(feature_columns) -> float:
    return min(0.2, 1.0 / math.sqrt(len(list(feature_columns))))


class LinearClassifier(_Canned):
    """A linear classifier over feature columns (FTRL by default)."""

    def __init__(self, feature_columns, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Ftrl", config=None, partitioner=None,
                 warm_start_from=None, loss_reduction=None, sparse_combiner="sum"):
        _check_classes(n_classes, label_vocabulary)
        cols = list(feature_columns)
        head = _head(n_classes, weight_column=weight_column,
                     label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
        super().__init__(head, lambda f, m: _linear_logits(
            f, cols, head.logits_dimension, sparse_combiner),
            [(optimizer, "Ftrl", _linear_lr(cols), "linear")], model_dir, config,
            warm_start_from)


class LinearRegressor(_Canned):
    """A linear regressor over feature columns (FTRL by default)."""

    def __init__(self, feature_columns, model_dir=None, label_dimension=1,
                 weight_column=None, optimizer="Ftrl", config=None, partitioner=None,
                 warm_start_from=None, loss_reduction=None, sparse_combiner="sum"):
        cols = list(feature_columns)
        head = _head(None, label_dimension, weight_column, loss_reduction=loss_reduction)
        super().__init__(head, lambda f, m: _linear_logits(
            f, cols, label_dimension, sparse_combiner),
            [(optimizer, "Ftrl", _linear_lr(cols), "linear")], model_dir, config,
            warm_start_from)


class DNNLinearCombinedClassifier(_Canned):
    """Wide & deep: a linear model over `linear_feature_columns` plus a feed-forward
    network over `dnn_feature_columns`, their logits summed; each part has its own
    optimizer (FTRL and Adagrad by default)."""

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl",
                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=None, dnn_dropout=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=None, batch_norm=False,
                 linear_sparse_combiner="sum"):
        _check_classes(n_classes, label_vocabulary)
        head = _head(n_classes, weight_column=weight_column,
                     label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
        super().__init__(head, *_wide_and_deep(
            head.logits_dimension, linear_feature_columns, linear_optimizer,
            dnn_feature_columns, dnn_optimizer, dnn_hidden_units, dnn_activation_fn,
            dnn_dropout, linear_sparse_combiner), model_dir, config, warm_start_from)


class DNNLinearCombinedRegressor(_Canned):
    """Wide & deep regression (see DNNLinearCombinedClassifier)."""

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl",
                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=None, dnn_dropout=None, label_dimension=1,
                 weight_column=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=None, batch_norm=False,
                 linear_sparse_combiner="sum"):
        head = _head(None, label_dimension, weight_column, loss_reduction=loss_reduction)
        super().__init__(head, *_wide_and_deep(
            label_dimension, linear_feature_columns, linear_optimizer, dnn_feature_columns,
            dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout,
            linear_sparse_combiner), model_dir, config, warm_start_from)


def _wide_and_deep(units, linear_cols, linear_opt, dnn_cols, dnn_opt, hidden, act, dropout,
                   combiner):
    """(logits_fn, optimizers) of a wide & deep model."""
    linear_cols, dnn_cols = list(linear_cols or []), list(dnn_cols or [])
    if not linear_cols and not dnn_cols:
        raise ValueError("Either linear_feature_columns or dnn_feature_columns must be "
                         "defined.")
    if dnn_cols and not hidden:
        raise ValueError("dnn_hidden_units must be defined when dnn_feature_columns is "
                         f"specified. dnn_feature_columns: {dnn_cols}")
    optimizers = []
    if dnn_cols:
        optimizers.append((dnn_opt, "Adagrad", 0.05, "dnn"))
    if linear_cols:
        optimizers.append((linear_opt, "Ftrl", _linear_lr(linear_cols), "linear"))

    def logits_fn(features, mode):
        from tensorflux.ops import math_ops

        parts = []
        if dnn_cols:
            parts.append(_dnn_logits(features, dnn_cols, hidden, units, act or _relu,
                                     dropout, mode))
        if linear_cols:
            parts.append(_linear_logits(features, linear_cols, units, combiner))
        return parts[0] if len(parts) == 1 else math_ops.add(parts[0], parts[1])
    return logits_fn, optimizers


class _Baseline(_Canned):
    def __init__(self, head, optimizer, model_dir, config):
        def logits_fn(features, mode):
            from tensorflux.ops import array_ops, joining_ops
            from tensorflux.variables import init_ops, variable_scope

            first = next(iter(features.values())) if isinstance(features, dict) \
                else features
            dense = first.dense_shape[0] if hasattr(first, "dense_shape") else \
                array_ops.shape(first, out_type=dtypes.int64)[0]
            with variable_scope.variable_scope("baseline"):
                bias = variable_scope.get_variable(
                    "bias", [head.logits_dimension],
                    initializer=init_ops.zeros_initializer())
            batch = joining_ops.stack([dense, 1])
            return joining_ops.tile(array_ops.expand_dims(bias, 0),
                                    array_ops.reshape(batch, [2]))

        super().__init__(head, logits_fn, [(optimizer, "Ftrl", 0.3, "baseline")], model_dir,
                         config, None)


class BaselineClassifier(_Baseline):
    """Predicts the training labels' class distribution, whatever the features."""

    def __init__(self, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Ftrl", config=None, loss_reduction=None):
        _check_classes(n_classes, label_vocabulary)
        super().__init__(_head(n_classes, weight_column=weight_column,
                               label_vocabulary=label_vocabulary,
                               loss_reduction=loss_reduction), optimizer, model_dir, config)


class BaselineRegressor(_Baseline):
    """Predicts the training labels' mean, whatever the features."""

    def __init__(self, model_dir=None, label_dimension=1, weight_column=None,
                 optimizer="Ftrl", config=None, loss_reduction=None):
        super().__init__(_head(None, label_dimension, weight_column,
                               loss_reduction=loss_reduction), optimizer, model_dir, config)


def _relu(x):
    from tensorflux.ops import nn_ops

    return nn_ops.relu(x)


# ---- estimators of a given head (TF1's DNNEstimator & co.) ------------------------------


def _check_head(head):
    if not hasattr(head, "create_estimator_spec") or not hasattr(head, "logits_dimension"):
        raise TypeError(f"head must be a Head (tf.estimator.BinaryClassHead, "
                        f"tf.contrib.estimator.regression_head, ...). Given: {head!r}")
    return head


class DNNEstimator(_Canned):
    """A feed-forward network of `hidden_units` whose logits feed `head` (any head: its
    logits_dimension sets the last layer's size)."""

    def __init__(self, head, hidden_units, feature_columns, model_dir=None,
                 optimizer="Adagrad", activation_fn=None, dropout=None,
                 input_layer_partitioner=None, config=None, warm_start_from=None,
                 batch_norm=False):
        _check_head(head)
        act = activation_fn or _relu
        super().__init__(head, lambda f, m: _dnn_logits(
            f, feature_columns, hidden_units, head.logits_dimension, act, dropout, m),
            [(optimizer, "Adagrad", 0.05, "dnn")], model_dir, config, warm_start_from)


class LinearEstimator(_Canned):
    """A linear model over feature columns whose logits feed `head` (FTRL by default)."""

    def __init__(self, head, feature_columns, model_dir=None, optimizer="Ftrl",
                 config=None, partitioner=None, sparse_combiner="sum",
                 warm_start_from=None):
        _check_head(head)
        cols = list(feature_columns)
        super().__init__(head, lambda f, m: _linear_logits(
            f, cols, head.logits_dimension, sparse_combiner),
            [(optimizer, "Ftrl", _linear_lr(cols), "linear")], model_dir, config,
            warm_start_from)


class DNNLinearCombinedEstimator(_Canned):
    """Wide & deep (see DNNLinearCombinedClassifier) over any `head`."""

    def __init__(self, head, model_dir=None, linear_feature_columns=None,
                 linear_optimizer="Ftrl", dnn_feature_columns=None, dnn_optimizer="Adagrad",
                 dnn_hidden_units=None, dnn_activation_fn=None, dnn_dropout=None,
                 input_layer_partitioner=None, config=None, linear_sparse_combiner="sum",
                 warm_start_from=None, batch_norm=False):
        _check_head(head)
        super().__init__(head, *_wide_and_deep(
            head.logits_dimension, linear_feature_columns, linear_optimizer,
            dnn_feature_columns, dnn_optimizer, dnn_hidden_units, dnn_activation_fn,
            dnn_dropout, linear_sparse_combiner), model_dir, config, warm_start_from)


class BaselineEstimator(_Baseline):
    """Learns one bias per logit, whatever the features, under any `head`."""

    def __init__(self, head, model_dir=None, optimizer="Ftrl", config=None):
        super().__init__(_check_head(head), optimizer, model_dir, config)
