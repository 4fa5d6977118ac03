"""The WALS estimator (TF1's `tf.contrib.factorization.WALSMatrixFactorization`).

Training alternates sweeps over the rows and over the columns of the matrix. The input_fn
gives, per step, a batch of rows and a batch of columns as SparseTensors with global ids:
features[INPUT_ROWS] holds entries (row, column) of A, features[INPUT_COLS] entries
(column, row) of A (A transposed). A step updates the factors of the rows of its row batch
during a row sweep, of its column batch during a column sweep; a sweep ends once every row
(column) was in some batch, and the next sweep, over the other side, starts with its
gramian and caches prepared (a hook, `_SweepHook`, runs those ops and picks the step's
update). `max_sweeps` stops training after that many sweeps.

Prediction projects the rows of features[INPUT_ROWS] (features[PROJECT_ROW] true) or the
columns of features[INPUT_COLS] onto the current factors of the other side, with
features[PROJECTION_WEIGHTS] as their weights if given; evaluation gives the loss (with the
regularization) of updating them, without updating.
"""

from __future__ import annotations

from tensorflux.contrib.factorization.factorization_ops import WALSModel
from tensorflux.control_flow import builders
from tensorflux.estimator.estimator import Estimator
from tensorflux.estimator.model_fn import EstimatorSpec, ModeKeys
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    control_flow_ops,
    math_ops,
    reduction_ops,
    state_ops,
    unary_ops,
)
from tensorflux.platform import tf_logging as logging
from tensorflux.summary import summary
from tensorflux.train import session_run_hook
from tensorflux.train.global_step import get_global_step
from tensorflux.variables import variables

__all__ = ["WALSMatrixFactorization"]


class _SweepHook(session_run_hook.SessionRunHook):
    """Before each step: the first time, the worker's caches; when a sweep is done, the
    switch to the other side; at a sweep's start, its prep ops (gramian, caches). Then it
    asks for the step's update of the side being swept."""

    def __init__(self, is_row_sweep, is_sweep_done, init_op, prep_ops, train_ops, switch_op):
        self._is_row_sweep, self._is_sweep_done = is_row_sweep, is_sweep_done
        self._init_op, self._prep_ops, self._train_ops = init_op, prep_ops, train_ops
        self._switch_op, self._started = switch_op, False

    def before_run(self, run_context):
        sess = run_context.session
        sweep_done = sess.run(self._is_sweep_done)
        if not self._started:
            sess.run(self._init_op)
        if sweep_done:
            sess.run(self._switch_op)
        rows = bool(sess.run(self._is_row_sweep))
        if sweep_done or not self._started:
            logging.info("WALS: preparing the %s sweep", "row" if rows else "column")
            for op in self._prep_ops[rows]:
                sess.run(op)
        self._started = True
        return session_run_hook.SessionRunArgs(self._train_ops[rows])


class _IncrementGlobalStepHook(session_run_hook.SessionRunHook):
    def begin(self):
        self._increment = state_ops.assign_add(get_global_step(), 1)

    def before_run(self, run_context):
        return session_run_hook.SessionRunArgs(self._increment)


class _StopAtSweepHook(session_run_hook.SessionRunHook):
    """Stops once `completed` (the count of finished sweeps) reaches `last_sweep`."""

    def __init__(self, completed, last_sweep):
        self._completed, self._last_sweep = completed, last_sweep

    def after_run(self, run_context, run_values):
        if run_context.session.run(self._completed) >= self._last_sweep:
            run_context.request_stop()


class WALSMatrixFactorization(Estimator):
    """Matrix factorization by weighted alternating least squares, as an Estimator
    (module docstring; the model's arguments are `WALSModel`'s).

    Args:
      num_rows, num_cols: the matrix's shape.
      embedding_dimension: the factors' width.
      unobserved_weight, regularization_coeff, row_init, col_init, num_row_shards,
        num_col_shards, row_weights, col_weights: as WALSModel's.
      use_factors_weights_cache_for_training, use_gramian_cache_for_training: WALSModel's
        caches, in training.
      max_sweeps: stop training after this many sweeps (None: by steps or input).
      model_dir, config: as Estimator's.
    """

    INPUT_ROWS = "input_rows"
    INPUT_COLS = "input_cols"
    PROJECT_ROW = "project_row"
    PROJECTION_WEIGHTS = "projection_weights"
    PROJECTION_RESULT = "projection"
    LOSS = "WALS_loss"
    RWSE = "WALS_RWSE"
    COMPLETED_SWEEPS = "completed_sweeps"

    def __init__(self, num_rows, num_cols, embedding_dimension, unobserved_weight=0.1,
                 regularization_coeff=None, row_init="random", col_init="random",
                 num_row_shards=1, num_col_shards=1, row_weights=1, col_weights=1,
                 use_factors_weights_cache_for_training=True,
                 use_gramian_cache_for_training=True, max_sweeps=None, model_dir=None,
                 config=None):
        params = dict(num_rows=num_rows, num_cols=num_cols, dim=embedding_dimension,
                      unobserved_weight=unobserved_weight, regularization=regularization_coeff,
                      row_init=row_init, col_init=col_init, num_row_shards=num_row_shards,
                      num_col_shards=num_col_shards, row_weights=row_weights,
                      col_weights=col_weights,
                      factors_cache=use_factors_weights_cache_for_training,
                      gramian_cache=use_gramian_cache_for_training, max_sweeps=max_sweeps)
        self._row_factor_names = [f"row_factors_shard_{i}" for i in range(num_row_shards)]
        self._col_factor_names = [f"col_factors_shard_{i}" for i in range(num_col_shards)]

        def model_fn(features, labels, mode):
            del labels
            return _model_fn(features, mode, params)

        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config)

    def fit(self, input_fn=None, steps=None, max_steps=None, monitors=None):
        """contrib.learn's name for `train` (TF1's class was a contrib.learn Estimator):
        `monitors` are session-run hooks."""
        return self.train(input_fn, hooks=monitors, steps=steps, max_steps=max_steps)

    def get_row_factors(self):
        """The row factors' shards, as the latest checkpoint holds them."""
        return [self.get_variable_value(name) for name in self._row_factor_names]

    def get_col_factors(self):
        """The column factors' shards, as the latest checkpoint holds them."""
        return [self.get_variable_value(name) for name in self._col_factor_names]

    def get_projections(self, input_fn):
        """Yields the projection of each row (column) of the input (module docstring)."""
        for prediction in self.predict(input_fn=input_fn):
            yield prediction[self.PROJECTION_RESULT]


def _model(params, training: bool) -> WALSModel:
    model = WALSModel(
        params["num_rows"], params["num_cols"], params["dim"],
        unobserved_weight=params["unobserved_weight"],
        regularization=params["regularization"], row_init=params["row_init"],
        col_init=params["col_init"], num_row_shards=params["num_row_shards"],
        num_col_shards=params["num_col_shards"], row_weights=params["row_weights"],
        col_weights=params["col_weights"],
        use_factors_weights_cache=params["factors_cache"] and training,
        use_gramian_cache=params["gramian_cache"] and training)
    # Outside training no prep op runs: the gramian saved is the one of the last sweep's
    # side (TF1 reads it anyway); projections and losses take the current one.
    model._fresh_gramians = not training
    return model


def _model_fn(features, mode, params):
    W = WALSMatrixFactorization
    model = _model(params, mode == ModeKeys.TRAIN)
    rows, cols = features[W.INPUT_ROWS], features[W.INPUT_COLS]
    if mode == ModeKeys.TRAIN:
        return _train_spec(model, rows, cols, params)
    project_row = features.get(W.PROJECT_ROW, True)
    cond = builders.cond if not isinstance(project_row, bool) else \
        (lambda pred, true_fn, false_fn: true_fn() if pred else false_fn())
    if mode == ModeKeys.PREDICT:
        weights = features.get(W.PROJECTION_WEIGHTS)
        projection = cond(
            project_row,
            lambda: model.project_row_factors(rows, projection_weights=weights),
            lambda: model.project_col_factors(cols, transpose_input=True,
                                              projection_weights=weights))
        return EstimatorSpec(mode=mode, predictions={W.PROJECTION_RESULT: projection})

    def loss_of(update):
        _, _, loss, reg, _ = update()
        return loss + reg

    loss = cond(project_row, lambda: loss_of(lambda: model.update_row_factors(rows)),
                         lambda: loss_of(lambda: model.update_col_factors(
                             cols, transpose_input=True)))
    return EstimatorSpec(mode=mode, loss=loss)


def _train_spec(model, rows, cols, params):
    W = WALSMatrixFactorization

    def flag(value, name, dtype=dtypes.bool):
        return variables.Variable(value, trainable=False, name=name, dtype=dtype)

    is_row_sweep, is_sweep_done = flag(True, "is_row_sweep"), flag(False, "is_sweep_done")
    completed = flag(0, W.COMPLETED_SWEEPS, dtypes.int32)
    loss_var = flag(0.0, W.LOSS, dtypes.float32)
    rwse_var = flag(0.0, W.RWSE, dtypes.float32)
    summary.scalar("loss", loss_var.value())
    summary.scalar("root_weighted_squared_error", rwse_var.value())
    summary.scalar("completed_sweeps", completed.value())

    def side_ops(sp_input, size, update, name):
        """The op updating one batch of a side, with the sweep's bookkeeping."""
        seen = variables.Variable(array_ops.fill([size], False), trainable=False,
                                  name=f"processed_{name}")
        _, update_op, loss, reg, sum_weights = update(sp_input)
        ids = sp_input.indices[:, 0]
        with graph_lib.control_dependencies([
                update_op, state_ops.assign(loss_var, loss + reg),
                state_ops.assign(rwse_var, unary_ops.sqrt(loss / sum_weights))]):
            mark = state_ops.scatter_update(seen, ids, array_ops.ones_like(ids, dtypes.bool))
        with graph_lib.control_dependencies([mark]):
            done = reduction_ops.reduce_all(seen.value())
            train = builders.group(state_ops.assign(is_sweep_done, done),
                                   state_ops.assign_add(completed, math_ops.cast(
                                       done, dtypes.int32)), name=f"{name}_sweep_train_op")
        return seen.initializer, train

    reset_rows, row_train = side_ops(rows, params["num_rows"], model.update_row_factors,
                                     "rows")
    reset_cols, col_train = side_ops(
        cols, params["num_cols"], lambda sp: model.update_col_factors(sp, transpose_input=True),
        "cols")
    switch = builders.group(
        state_ops.assign(is_row_sweep, comparison_ops.logical_not(is_row_sweep.value())),
        reset_rows, reset_cols, name="sweep_switch_op")
    prep = {True: [model.row_update_prep_gramian_op, model.initialize_row_update_op],
            False: [model.col_update_prep_gramian_op, model.initialize_col_update_op]}
    hooks = [_SweepHook(is_row_sweep, is_sweep_done, model.worker_init, prep,
                        {True: row_train, False: col_train}, switch),
             _IncrementGlobalStepHook()]
    if params["max_sweeps"] is not None:
        hooks.append(_StopAtSweepHook(completed.value(), params["max_sweeps"]))
    return EstimatorSpec(mode=ModeKeys.TRAIN, loss=loss_var.value(),
                         train_op=control_flow_ops.no_op(), training_hooks=hooks)
