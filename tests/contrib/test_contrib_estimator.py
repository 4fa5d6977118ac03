"""tf.contrib.estimator's boosted-trees trainers of in-memory data: the whole first epoch of
an unbatched dataset as every layer's batch, trained to n_trees."""

from __future__ import annotations

import numpy as np

import tensorflux as tf
from tests.estimator.test_boosted_trees import (
    COLUMNS,
    FEATURES,
    Y_REG,
    Y,
    _classifier,
    _logits,
    _train_input,
)


def test_contrib_train_in_memory(tmp_path):
    def unbatched(y):
        return lambda: tf.data.Dataset.from_tensor_slices((FEATURES, y))

    est = tf.contrib.estimator.boosted_trees_classifier_train_in_memory(
        unbatched(Y), COLUMNS, model_dir=str(tmp_path / "c"), n_trees=3, max_depth=2)
    assert est.get_variable_value("global_step") == 6
    same = _classifier(str(tmp_path / "same"), n_trees=3, max_depth=2)
    same.train(_train_input(Y), max_steps=100)
    np.testing.assert_allclose(_logits(est), _logits(same), rtol=1e-6)
    reg = tf.contrib.estimator.boosted_trees_regressor_train_in_memory(
        unbatched(Y_REG), COLUMNS, model_dir=str(tmp_path / "r"), n_trees=2, max_depth=2)
    assert reg.get_variable_value("global_step") == 4
