"""`tf.contrib.learn`: the pieces TF1 programs still use, `learn.preprocessing`'s
VocabularyProcessor (tensorflux/contrib/learn/preprocessing.py), `learn.datasets` (MNIST's
`read_data_sets`, the CSV readers; also under `learn.python.learn.datasets`) and `ModeKeys`
(the mode strings of contrib.learn's models, as tensorflow/nmt passes them), and its canned
estimators with TF 1.0's array interface (`DNNClassifier`, `DNNRegressor`,
`LinearClassifier`, `LinearRegressor`, `SKCompat`, `infer_real_valued_columns_from_input`;
contrib/learn/estimators.py), and `Experiment`/`learn_runner`/`make_export_strategy`
over core Estimators (contrib/learn/experiment.py). contrib.learn's own `Estimator`
(ModelFnOps) was replaced by `tf.estimator`, which tensorflux has."""

from tensorflux.contrib.learn import datasets, preprocessing, python  # noqa: F401
from tensorflux.contrib.learn import experiment as learn_runner  # noqa: F401
from tensorflux.contrib.learn.estimators import (  # noqa: F401
    DNNClassifier,
    DNNRegressor,
    LinearClassifier,
    LinearRegressor,
    SKCompat,
    infer_real_valued_columns_from_input,
)
from tensorflux.contrib.learn.experiment import (  # noqa: F401
    Experiment,
    ExportStrategy,
    make_export_strategy,
)
from tensorflux.contrib.learn.python.learn import datasets as _long_path  # noqa: F401
from tensorflux.contrib.learn.run_config import RunConfig  # noqa: F401


class ModeKeys:
    """The modes a contrib.learn model is built for (`tf.contrib.learn.ModeKeys`); unlike
    tf.estimator.ModeKeys, prediction is "infer"."""

    TRAIN = "train"
    EVAL = "eval"
    INFER = "infer"
