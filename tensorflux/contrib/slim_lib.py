"""TF-Slim's library part, gathered for `tensorflux/contrib/slim.py` to re-export:
`slim.learning`, `slim.evaluation`, `slim.losses`, `slim.metrics`, `slim.summaries`, the
data modules (`slim.dataset`, `data_decoder`, `data_provider`, `dataset_data_provider`,
`parallel_reader`, `queues`: contrib/slim_data.py; `tfexample_decoder`) and the variable
helpers of `tf.contrib.framework` (`assign_from_checkpoint_fn`, ...)."""

from tensorflux.contrib import losses, metrics
from tensorflux.contrib import slim_data as data_decoder
from tensorflux.contrib import slim_data as data_provider
from tensorflux.contrib import slim_data as dataset
from tensorflux.contrib import slim_data as dataset_data_provider
from tensorflux.contrib import slim_data as parallel_reader
from tensorflux.contrib import slim_data as queues
from tensorflux.contrib import slim_evaluation as evaluation
from tensorflux.contrib import slim_learning as learning
from tensorflux.contrib import slim_summaries as summaries
from tensorflux.contrib import slim_tfexample_decoder as tfexample_decoder
from tensorflux.contrib.framework_variables import *  # noqa: F403
from tensorflux.contrib.framework_variables import __all__ as _variables_all

__all__ = ["data_decoder", "data_provider", "dataset", "dataset_data_provider",
           "evaluation", "learning", "losses", "metrics", "parallel_reader", "queues",
           "summaries", "tfexample_decoder", *_variables_all]
