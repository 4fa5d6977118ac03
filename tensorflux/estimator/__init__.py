"""tf.estimator (TF1): Estimator with model_fns, RunConfig, EstimatorSpec, ModeKeys,
numpy/pandas input_fns, train_and_evaluate, SavedModel export, the canned DNN, linear
and boosted-trees classifiers and regressors over tf.feature_column, the heads
(BinaryClassHead, ...) and the estimators of a given head (DNNEstimator, ...)."""

from types import SimpleNamespace

from tensorflux import train as _train
from tensorflux.estimator import canned as _canned
from tensorflux.estimator import eval_hooks as _eval_hooks
from tensorflux.estimator import export
from tensorflux.estimator import export_modes as _export_modes
from tensorflux.estimator import extras as _extras
from tensorflux.estimator.boosted_trees import BoostedTreesClassifier, BoostedTreesRegressor
from tensorflux.estimator.canned import (
    BaselineClassifier,
    BaselineEstimator,
    BaselineRegressor,
    DNNClassifier,
    DNNEstimator,
    DNNLinearCombinedClassifier,
    DNNLinearCombinedEstimator,
    DNNLinearCombinedRegressor,
    DNNRegressor,
    LinearClassifier,
    LinearEstimator,
    LinearRegressor,
)
from tensorflux.estimator.estimator import Estimator, WarmStartSettings
from tensorflux.estimator.export import BestExporter, Exporter, FinalExporter, LatestExporter
from tensorflux.estimator.extras import (
    add_metrics,
    classifier_parse_example_spec,
    regressor_parse_example_spec,
)
from tensorflux.estimator.heads import (
    BinaryClassHead,
    Head,
    LogisticRegressionHead,
    MultiClassHead,
    MultiHead,
    MultiLabelHead,
    PoissonRegressionHead,
    RegressionHead,
)
from tensorflux.estimator.inputs import numpy_input_fn, pandas_input_fn
from tensorflux.estimator.model_fn import EstimatorSpec, ModeKeys
from tensorflux.estimator.run_config import RunConfig
from tensorflux.estimator.training import EvalSpec, TrainSpec, train_and_evaluate
from tensorflux.train.warm_starting import VocabInfo

inputs = SimpleNamespace(numpy_input_fn=numpy_input_fn, pandas_input_fn=pandas_input_fn)
experimental = SimpleNamespace(**{name: getattr(_extras, name) for name in (
    "call_logit_fn", "make_early_stopping_hook", "read_eval_metrics", "stop_if_higher_hook",
    "stop_if_lower_hook", "stop_if_no_decrease_hook", "stop_if_no_increase_hook")},
    InMemoryEvaluatorHook=_eval_hooks.InMemoryEvaluatorHook,
    make_stop_at_checkpoint_step_hook=_eval_hooks.make_stop_at_checkpoint_step_hook,
    dnn_logit_fn_builder=_canned.dnn_logit_fn_builder,
    linear_logit_fn_builder=_canned.linear_logit_fn_builder,
    build_raw_supervised_input_receiver_fn=(
        _export_modes.build_raw_supervised_input_receiver_fn))

# TF1 exposes the session-run hooks here too.
_HOOKS = ("CheckpointSaverHook", "CheckpointSaverListener", "FeedFnHook", "FinalOpsHook",
          "GlobalStepWaiterHook", "LoggingTensorHook", "NanLossDuringTrainingError",
          "NanTensorHook", "ProfilerHook", "SecondOrStepTimer", "StepCounterHook",
          "StopAtStepHook", "SessionRunArgs", "SessionRunContext", "SessionRunHook",
          "SessionRunValues", "SummarySaverHook")
globals().update({name: getattr(_train, name) for name in _HOOKS})

__all__ = ["Estimator", "EstimatorSpec", "ModeKeys", "RunConfig", "TrainSpec", "EvalSpec",
           "train_and_evaluate", "inputs", "export", "Exporter", "LatestExporter",
           "FinalExporter", "BestExporter", "add_metrics", "classifier_parse_example_spec",
           "regressor_parse_example_spec", "experimental", "DNNClassifier", "DNNRegressor",
           "LinearClassifier",
           "LinearRegressor", "DNNLinearCombinedClassifier", "DNNLinearCombinedRegressor",
           "BaselineClassifier", "BaselineRegressor", "BoostedTreesClassifier",
           "DNNEstimator", "LinearEstimator", "DNNLinearCombinedEstimator",
           "BaselineEstimator", "Head", "BinaryClassHead", "MultiClassHead", "MultiLabelHead",
           "RegressionHead", "PoissonRegressionHead", "LogisticRegressionHead", "MultiHead",
           "BoostedTreesRegressor", "WarmStartSettings", "VocabInfo", *_HOOKS]
