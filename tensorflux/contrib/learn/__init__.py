"""`tf.contrib.learn`: the pieces TF1 programs still use, `learn.preprocessing`'s
VocabularyProcessor (tensorflux/contrib/learn/preprocessing.py) and `ModeKeys` (the mode
strings of contrib.learn's models, as tensorflow/nmt passes them). The rest of
contrib.learn (its Estimators, `learn_runner`) was replaced by `tf.estimator`, which
tensorflux has."""

from tensorflux.contrib.learn import preprocessing  # noqa: F401


class ModeKeys:
    """The modes a contrib.learn model is built for (`tf.contrib.learn.ModeKeys`); unlike
    tf.estimator.ModeKeys, prediction is "infer"."""

    TRAIN = "train"
    EVAL = "eval"
    INFER = "infer"
