"""`tf.contrib.learn.RunConfig`: TF 1.x's contrib run settings, tf.estimator's RunConfig
with the session settings of TF 1.0's interface (`num_cores`, `log_device_placement`,
`gpu_memory_fraction`) and the masters it names (`master`, `evaluation_master`)."""

from __future__ import annotations

from tensorflux.estimator import run_config as core

_USE_DEFAULT = object()


class RunConfig(core.RunConfig):
    """contrib.learn's run settings: as `tf.estimator.RunConfig`, and, when no
    `session_config` is given, a ConfigProto from `num_cores` (both thread pools; 0: the
    runtime's choice), `log_device_placement` and `gpu_memory_fraction`; `master` and
    `evaluation_master` where the estimator's sessions connect (the task's own when
    TF_CONFIG names a cluster)."""

    def __init__(self, master=None, num_cores=0, log_device_placement=False,
                 gpu_memory_fraction=1, tf_random_seed=None, save_summary_steps=100,
                 save_checkpoints_secs=_USE_DEFAULT, save_checkpoints_steps=None,
                 keep_checkpoint_max=5, keep_checkpoint_every_n_hours=10000,
                 log_step_count_steps=100, protocol=None, evaluation_master="",
                 model_dir=None, session_config=None, session_creation_timeout_secs=7200):
        if session_config is None:
            from tensorflux.protos import config_pb2

            session_config = config_pb2.ConfigProto(
                intra_op_parallelism_threads=num_cores,
                inter_op_parallelism_threads=num_cores,
                log_device_placement=log_device_placement)
            session_config.gpu_options.per_process_gpu_memory_fraction = gpu_memory_fraction
        kwargs = {} if save_checkpoints_secs is _USE_DEFAULT else \
            {"save_checkpoints_secs": save_checkpoints_secs}
        super().__init__(model_dir=model_dir, tf_random_seed=tf_random_seed,
                         save_summary_steps=save_summary_steps,
                         save_checkpoints_steps=save_checkpoints_steps,
                         session_config=session_config, keep_checkpoint_max=keep_checkpoint_max,
                         keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
                         log_step_count_steps=log_step_count_steps, protocol=protocol,
                         session_creation_timeout_secs=session_creation_timeout_secs,
                         **kwargs)
        if master is not None:
            self._master = master
        self._evaluation_master = evaluation_master or ""
        self._num_cores = num_cores
        self._gpu_memory_fraction = gpu_memory_fraction

    evaluation_master = property(lambda self: self._evaluation_master)
    num_cores = property(lambda self: self._num_cores)
    gpu_memory_fraction = property(lambda self: self._gpu_memory_fraction)

    @property
    def tf_config(self):
        """The session ConfigProto (contrib.learn's name for it)."""
        return self.session_config
