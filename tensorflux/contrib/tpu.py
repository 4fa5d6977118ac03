"""`tf.contrib.tpu`'s Estimator API, for TF1 programs written for TPUs and run without one
(`use_tpu=False`, as BERT's run_classifier.py and many others are run on CPUs and GPUs).

TPUEstimator is then an Estimator whose input_fn and model_fn see `params["batch_size"]`
(the train, eval or predict batch size of the mode) and whose model_fn returns a
TPUEstimatorSpec: `eval_metrics=(metric_fn, tensors)` becomes the metric ops and
`scaffold_fn()` the Scaffold. There is no TPU: `use_tpu=True` and TPUClusterResolver raise
a ValueError saying so; CrossShardOptimizer over one shard is its optimizer.
"""

from __future__ import annotations

import collections

from tensorflux.estimator import estimator as estimator_lib
from tensorflux.estimator.model_fn import EstimatorSpec, ModeKeys
from tensorflux.estimator.run_config import RunConfig as _RunConfig
from tensorflux.platform import tf_logging as logging
from tensorflux.train.optimizer import WrappingOptimizer
from tensorflux.train.session_run_hook import SessionRunArgs, SessionRunHook

__all__ = ["CrossShardOptimizer", "InputPipelineConfig", "RunConfig", "TPUConfig",
           "TPUEstimator", "TPUEstimatorSpec"]

_NO_TPU = "tensorflux has no TPU devices: run TPU programs with use_tpu=False"


class InputPipelineConfig:
    """How a TPU job's hosts feed it (only recorded: there is no TPU)."""

    PER_SHARD_V1 = 1
    PER_HOST_V1 = 2
    PER_HOST_V2 = 3
    BROADCAST = 4
    SLICED = 5


class TPUConfig(collections.namedtuple("TPUConfig", [
        "iterations_per_loop", "num_shards", "num_cores_per_replica",
        "per_host_input_for_training", "tpu_job_name", "initial_infeed_sleep_secs",
        "input_partition_dims", "eval_training_input_configuration",
        "experimental_host_call_every_n_steps"])):
    """A TPU job's settings; without a TPU only their validity matters."""

    def __new__(cls, iterations_per_loop=2, num_shards=None, num_cores_per_replica=None,
                per_host_input_for_training=True, tpu_job_name=None,
                initial_infeed_sleep_secs=None, input_partition_dims=None,
                eval_training_input_configuration=InputPipelineConfig.PER_HOST_V1,
                experimental_host_call_every_n_steps=1):
        if iterations_per_loop < 1:
            raise ValueError(f"iterations_per_loop must be positive, given: "
                             f"{iterations_per_loop}")
        if num_shards is not None and num_shards < 1:
            raise ValueError(f"num_shards must be positive, given: {num_shards}")
        return super().__new__(cls, iterations_per_loop, num_shards, num_cores_per_replica,
                               per_host_input_for_training, tpu_job_name,
                               initial_infeed_sleep_secs, input_partition_dims,
                               eval_training_input_configuration,
                               experimental_host_call_every_n_steps)


class RunConfig(_RunConfig):
    """An Estimator RunConfig with a `tpu_config` (and the TPU master, unused)."""

    def __init__(self, tpu_config=None, evaluation_master=None, master=None, cluster=None,
                 **kwargs):
        super().__init__(**kwargs)
        self._tpu_config = tpu_config or TPUConfig()
        self._master = master or ""
        self._evaluation_master = evaluation_master or self._master
        self._cluster = cluster

    tpu_config = property(lambda self: self._tpu_config)
    master = property(lambda self: self._master)
    evaluation_master = property(lambda self: self._evaluation_master)
    cluster = property(lambda self: self._cluster)


class TPUEstimatorSpec(collections.namedtuple("TPUEstimatorSpec", [
        "mode", "predictions", "loss", "train_op", "eval_metrics", "export_outputs",
        "scaffold_fn", "host_call", "training_hooks", "evaluation_hooks",
        "prediction_hooks"])):
    """What a TPUEstimator's model_fn returns: an EstimatorSpec whose metrics are
    `eval_metrics = (metric_fn, tensors)` (a list or a dict of tensors passed to
    `metric_fn`) and whose scaffold is made by `scaffold_fn()`."""

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metrics=None,
                export_outputs=None, scaffold_fn=None, host_call=None, training_hooks=None,
                evaluation_hooks=None, prediction_hooks=None):
        if eval_metrics is not None:
            if not isinstance(eval_metrics, (tuple, list)) or len(eval_metrics) != 2 or \
                    not callable(eval_metrics[0]):
                raise ValueError(f"eval_metrics should be a tuple (metric_fn, tensors), "
                                 f"given: {eval_metrics}")
        return super().__new__(cls, mode, predictions, loss, train_op, eval_metrics,
                               export_outputs, scaffold_fn, host_call,
                               tuple(training_hooks or ()), tuple(evaluation_hooks or ()),
                               tuple(prediction_hooks or ()))

    def as_estimator_spec(self) -> EstimatorSpec:
        metric_ops = None
        if self.eval_metrics is not None:
            fn, tensors = self.eval_metrics
            metric_ops = fn(**tensors) if isinstance(tensors, dict) else fn(*tensors)
        training_hooks, evaluation_hooks = list(self.training_hooks), \
            list(self.evaluation_hooks)
        if self.host_call is not None:  # its ops run with every step, as on a TPU's host
            fn, tensors = self.host_call
            ops = fn(**tensors) if isinstance(tensors, dict) else fn(*tensors)
            if ops is not None:
                training_hooks.append(_RunWithEachStep(ops))
                evaluation_hooks.append(_RunWithEachStep(ops))
        scaffold = self.scaffold_fn() if self.scaffold_fn is not None else None
        return EstimatorSpec(mode=self.mode, predictions=self.predictions, loss=self.loss,
                             train_op=self.train_op, eval_metric_ops=metric_ops,
                             export_outputs=self.export_outputs, scaffold=scaffold,
                             training_hooks=training_hooks, evaluation_hooks=evaluation_hooks,
                             prediction_hooks=self.prediction_hooks)


class _RunWithEachStep(SessionRunHook):
    """Runs `ops` (a host_call's result) with every step."""

    def __init__(self, ops):
        self._ops = ops

    def before_run(self, run_context):
        return SessionRunArgs(self._ops)


class TPUEstimator(estimator_lib.Estimator):
    """An Estimator for programs written for TPUs, run here with `use_tpu=False`."""

    def __init__(self, model_fn=None, model_dir=None, config=None, params=None, use_tpu=True,
                 train_batch_size=None, eval_batch_size=None, predict_batch_size=None,
                 batch_axis=None, eval_on_tpu=True, export_to_tpu=True, export_to_cpu=True,
                 warm_start_from=None, embedding_config_spec=None,
                 export_saved_model_api_version=None):
        if use_tpu:
            raise ValueError(_NO_TPU + ".")
        if params is not None and "batch_size" in params:
            raise ValueError("batch_size is reserved by TPUEstimator: do not set it in "
                             "params.")
        for what, size in (("train_batch_size", train_batch_size),
                           ("eval_batch_size", eval_batch_size),
                           ("predict_batch_size", predict_batch_size)):
            if size is not None and (not isinstance(size, int) or size < 1):
                raise ValueError(f"{what} must be a positive integer, given: {size}")
        super().__init__(model_fn, model_dir=model_dir, config=config or RunConfig(),
                         params=params, warm_start_from=warm_start_from)
        self._batch_sizes = {ModeKeys.TRAIN: train_batch_size,
                             ModeKeys.EVAL: eval_batch_size,
                             ModeKeys.PREDICT: predict_batch_size}
        self._mode_params = None

    @property
    def params(self):
        params = super().params
        if self._mode_params is not None:
            params.update(self._mode_params)
        return params

    def _use_mode(self, mode) -> None:
        """`params["batch_size"]` becomes the mode's batch size (if one was given)."""
        size = self._batch_sizes.get(mode)
        self._mode_params = {} if size is None else {"batch_size": size}

    def _input(self, input_fn, mode):
        self._use_mode(mode)
        return super()._input(input_fn, mode)

    def _spec(self, features, labels, mode):
        self._use_mode(mode)
        spec = self._call_model_fn(features, labels, mode)
        if isinstance(spec, TPUEstimatorSpec):
            spec = spec.as_estimator_spec()
        if not isinstance(spec, EstimatorSpec):
            raise ValueError(f"model_fn should return a TPUEstimatorSpec or an "
                             f"EstimatorSpec. Given: {spec}")
        return spec


class CrossShardOptimizer(WrappingOptimizer):
    """Averages (or sums) gradients over TPU shards; with no TPU there is one shard and it
    is `opt` itself."""

    def __init__(self, opt, reduction="mean", name="CrossShardOptimizer",
                 group_assignment=None):
        super().__init__(False, name)
        if reduction not in ("mean", "sum"):
            raise ValueError(f"Unsupported reduction: {reduction}.")
        self._opt = opt
        logging.warning("CrossShardOptimizer outside a TPU computation: one shard, the "
                        "wrapped optimizer runs as it is.")

    def compute_gradients(self, loss, var_list=None, **kwargs):
        return self._opt.compute_gradients(loss, var_list=var_list, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        return self._opt.apply_gradients(grads_and_vars, global_step, name)



class TPUClusterResolver:
    """Finds a Cloud TPU by name; there are none here."""

    def __init__(self, tpu=None, zone=None, project=None, job_name="worker",
                 coordinator_name=None, coordinator_address=None, credentials="default",
                 service=None, discovery_url=None):
        raise ValueError(f"{_NO_TPU}: cannot resolve TPU {tpu!r}.")
