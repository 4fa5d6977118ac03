"""`tf.contrib.learn`: the piece TF1 text programs still use, `learn.preprocessing`'s
VocabularyProcessor (tensorflux/contrib/learn/preprocessing.py). The rest of contrib.learn
(its Estimators, `learn_runner`) was replaced by `tf.estimator`, which tensorflux has."""

from tensorflux.contrib.learn import preprocessing  # noqa: F401
