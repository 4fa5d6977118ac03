"""tf.estimator (TF1): Estimator with model_fns, RunConfig, EstimatorSpec, ModeKeys,
numpy/pandas input_fns, train_and_evaluate, SavedModel export, and the canned DNN and linear
classifiers and regressors over tf.feature_column."""

from types import SimpleNamespace

from tensorflux.estimator import export
from tensorflux.estimator.canned import (
    BaselineClassifier,
    BaselineRegressor,
    DNNClassifier,
    DNNLinearCombinedClassifier,
    DNNLinearCombinedRegressor,
    DNNRegressor,
    LinearClassifier,
    LinearRegressor,
)
from tensorflux.estimator.estimator import Estimator
from tensorflux.estimator.export import FinalExporter, LatestExporter
from tensorflux.estimator.inputs import numpy_input_fn, pandas_input_fn
from tensorflux.estimator.model_fn import EstimatorSpec, ModeKeys
from tensorflux.estimator.run_config import RunConfig
from tensorflux.estimator.training import EvalSpec, TrainSpec, train_and_evaluate

inputs = SimpleNamespace(numpy_input_fn=numpy_input_fn, pandas_input_fn=pandas_input_fn)
Exporter = export.Exporter

__all__ = ["Estimator", "EstimatorSpec", "ModeKeys", "RunConfig", "TrainSpec", "EvalSpec",
           "train_and_evaluate", "inputs", "export", "Exporter", "LatestExporter",
           "FinalExporter", "DNNClassifier", "DNNRegressor", "LinearClassifier",
           "LinearRegressor", "DNNLinearCombinedClassifier", "DNNLinearCombinedRegressor",
           "BaselineClassifier", "BaselineRegressor"]
