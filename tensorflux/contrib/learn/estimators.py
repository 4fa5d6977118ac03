"""tf.contrib.learn's canned estimators with the scikit-learn style interface of TF 1.0-1.2
(`fit(x, y, steps, batch_size)`, `evaluate(x, y)`, `predict(x)`), as thin shells over the
tf.estimator canned estimators: arrays become input functions (a feature array is the
feature "" that `infer_real_valued_columns_from_input` and `real_valued_column("")`
name; a dict of arrays its keys), classifiers' `predict` yields class ids (`predict_proba`
the probabilities), regressors' the scores. `SKCompat(estimator)` gives any tf.estimator
the same methods.
"""

from __future__ import annotations

import numpy as np

from tensorflux.estimator import canned
from tensorflux.estimator.inputs import numpy_input_fn

__all__ = ["DNNClassifier", "DNNRegressor", "LinearClassifier", "LinearRegressor", "SKCompat",
           "infer_real_valued_columns_from_input"]


def infer_real_valued_columns_from_input(x):
    """One real-valued column named "" for the features of array `x` ([n, d...])."""
    from tensorflux.contrib.layers_feature_columns import real_valued_column

    shape = np.shape(x)
    return [real_valued_column("", dimension=int(np.prod(shape[1:])) if len(shape) > 1
                               else 1, dtype=_float_or(np.asarray(x).dtype))]


def _float_or(dtype):
    from tensorflux.framework import dtypes

    return dtypes.as_dtype(dtype) if np.issubdtype(dtype, np.floating) else dtypes.float32


def _features(x):
    if isinstance(x, dict):
        return x
    x = np.asarray(x)
    return {"": x.reshape(len(x), -1) if x.ndim > 2 else x}


class SKCompat:
    """fit/evaluate/predict on arrays for a tf.estimator (`tf.contrib.learn.SKCompat`)."""

    _classes = False

    def __init__(self, estimator):
        self._estimator = estimator

    @property
    def model_dir(self):
        return self._estimator.model_dir

    def get_variable_names(self):
        return self._estimator.get_variable_names()

    def get_variable_value(self, name):
        return self._estimator.get_variable_value(name)

    def fit(self, x=None, y=None, input_fn=None, steps=None, batch_size=None, monitors=None,
            max_steps=None):
        """Trains on arrays (batches of `batch_size`, default 32, shuffled, repeated) or
        on `input_fn`.

        Raises:
          ValueError: both arrays and `input_fn`, or neither.
        """
        input_fn = self._input_fn(x, y, input_fn, batch_size or 32, None, True)
        self._estimator.train(input_fn, hooks=monitors, steps=steps, max_steps=max_steps)
        return self

    def evaluate(self, x=None, y=None, input_fn=None, feed_fn=None, batch_size=None,
                 steps=None, metrics=None, name=None, checkpoint_path=None, hooks=None):
        """The evaluation metrics on arrays (one pass) or on `input_fn`."""
        del feed_fn, metrics
        input_fn = self._input_fn(x, y, input_fn, batch_size or 128, 1, False)
        return self._estimator.evaluate(input_fn, steps=steps, hooks=hooks,
                                        checkpoint_path=checkpoint_path, name=name)

    def _predictions(self, x, input_fn, batch_size, key):
        input_fn = self._input_fn(x, None, input_fn, batch_size or 128, 1, False)
        for p in self._estimator.predict(input_fn):
            yield p if key is None else p[key]

    def predict(self, x=None, input_fn=None, batch_size=None, outputs=None,
                as_iterable=True):
        """Class ids (classifiers) or scores (regressors); an iterator, or an array when
        not `as_iterable`."""
        del outputs
        out = self._predictions(x, input_fn, batch_size,
                                "class_ids" if self._classes else "predictions")
        out = (np.squeeze(v) for v in out)
        return out if as_iterable else np.array(list(out))

    @staticmethod
    def _input_fn(x, y, input_fn, batch_size, epochs, shuffle):
        if (x is None) == (input_fn is None):
            raise ValueError("Either x or input_fn must be provided (and not both).")
        if input_fn is not None:
            return input_fn
        labels = None if y is None else np.asarray(y)
        return numpy_input_fn(_features(x), labels, batch_size=batch_size, num_epochs=epochs,
                              shuffle=shuffle)


class _Classifier(SKCompat):
    _classes = True

    def predict_classes(self, x=None, input_fn=None, batch_size=None, as_iterable=True):
        return self.predict(x, input_fn, batch_size, as_iterable=as_iterable)

    def predict_proba(self, x=None, input_fn=None, batch_size=None, as_iterable=True):
        out = self._predictions(x, input_fn, batch_size, "probabilities")
        return out if as_iterable else np.array(list(out))


class _Regressor(SKCompat):
    def predict_scores(self, x=None, input_fn=None, batch_size=None, as_iterable=True):
        return self.predict(x, input_fn, batch_size, as_iterable=as_iterable)


def _label_keys(n_classes, label_keys):
    return list(label_keys) if label_keys is not None else None


class DNNClassifier(_Classifier):
    """A feed-forward classifier (`tf.contrib.learn.DNNClassifier`)."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, n_classes=2,
                 weight_column_name=None, optimizer=None, activation_fn=None, dropout=None,
                 gradient_clip_norm=None, enable_centered_bias=False, config=None,
                 feature_engineering_fn=None, embedding_lr_multipliers=None,
                 input_layer_min_slice_size=None, label_keys=None):
        del gradient_clip_norm, enable_centered_bias, feature_engineering_fn
        del embedding_lr_multipliers, input_layer_min_slice_size
        super().__init__(canned.DNNClassifier(
            hidden_units, feature_columns, model_dir=model_dir, n_classes=n_classes,
            weight_column=weight_column_name, label_vocabulary=_label_keys(n_classes,
                                                                           label_keys),
            optimizer=optimizer or "Adagrad", activation_fn=activation_fn, dropout=dropout,
            config=config))


class DNNRegressor(_Regressor):
    """A feed-forward regressor (`tf.contrib.learn.DNNRegressor`)."""

    def __init__(self, hidden_units, feature_columns, model_dir=None,
                 weight_column_name=None, optimizer=None, activation_fn=None, dropout=None,
                 gradient_clip_norm=None, enable_centered_bias=False, config=None,
                 feature_engineering_fn=None, label_dimension=1,
                 embedding_lr_multipliers=None, input_layer_min_slice_size=None):
        del gradient_clip_norm, enable_centered_bias, feature_engineering_fn
        del embedding_lr_multipliers, input_layer_min_slice_size
        super().__init__(canned.DNNRegressor(
            hidden_units, feature_columns, model_dir=model_dir,
            label_dimension=label_dimension, weight_column=weight_column_name,
            optimizer=optimizer or "Adagrad", activation_fn=activation_fn, dropout=dropout,
            config=config))


class LinearClassifier(_Classifier):
    """A linear classifier (`tf.contrib.learn.LinearClassifier`)."""

    def __init__(self, feature_columns, model_dir=None, n_classes=2, weight_column_name=None,
                 optimizer=None, gradient_clip_norm=None, enable_centered_bias=False,
                 _joint_weight=False, config=None, feature_engineering_fn=None,
                 label_keys=None):
        del gradient_clip_norm, enable_centered_bias, _joint_weight, feature_engineering_fn
        super().__init__(canned.LinearClassifier(
            feature_columns, model_dir=model_dir, n_classes=n_classes,
            weight_column=weight_column_name, label_vocabulary=_label_keys(n_classes,
                                                                           label_keys),
            optimizer=optimizer or "Ftrl", config=config))


class LinearRegressor(_Regressor):
    """A linear regressor (`tf.contrib.learn.LinearRegressor`)."""

    def __init__(self, feature_columns, model_dir=None, weight_column_name=None,
                 optimizer=None, gradient_clip_norm=None, enable_centered_bias=False,
                 label_dimension=1, _joint_weights=False, config=None,
                 feature_engineering_fn=None):
        del gradient_clip_norm, enable_centered_bias, _joint_weights, feature_engineering_fn
        super().__init__(canned.LinearRegressor(
            feature_columns, model_dir=model_dir, label_dimension=label_dimension,
            weight_column=weight_column_name, optimizer=optimizer or "Ftrl",
            config=config))
