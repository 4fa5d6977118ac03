"""RunConfig: where an Estimator writes and how often it checkpoints, summarizes, logs."""

from __future__ import annotations

import copy

_DEFAULT_SAVE_SECS = 600


class RunConfig:
    """An Estimator's run settings (`tf.estimator.RunConfig`).

    Checkpoints every `save_checkpoints_steps` or `save_checkpoints_secs` (default 600 s;
    both None: none but the last), summaries every `save_summary_steps`, the loss and step
    rate logged every `log_step_count_steps`; `session_config` is the ConfigProto of the
    sessions; `tf_random_seed` the graph-level seed.

    Raises:
      ValueError: both `save_checkpoints_steps` and `save_checkpoints_secs` given.
    """

    def __init__(self, model_dir=None, tf_random_seed=None, save_summary_steps=100,
                 save_checkpoints_steps=None, save_checkpoints_secs=_DEFAULT_SAVE_SECS,
                 session_config=None, keep_checkpoint_max=5,
                 keep_checkpoint_every_n_hours=10000, log_step_count_steps=100,
                 train_distribute=None, device_fn=None, protocol=None, eval_distribute=None,
                 experimental_distribute=None, experimental_max_worker_delay_secs=None,
                 session_creation_timeout_secs=7200, checkpoint_save_graph_def=True):
        if save_checkpoints_steps is not None and save_checkpoints_secs not in (
                None, _DEFAULT_SAVE_SECS):
            raise ValueError("Can not provide both save_checkpoints_steps and "
                             "save_checkpoints_secs.")
        if save_checkpoints_steps is not None:
            save_checkpoints_secs = None
        self._model_dir = model_dir
        self._tf_random_seed = tf_random_seed
        self._save_summary_steps = save_summary_steps
        self._save_checkpoints_steps = save_checkpoints_steps
        self._save_checkpoints_secs = save_checkpoints_secs
        self._session_config = session_config
        self._keep_checkpoint_max = keep_checkpoint_max
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._log_step_count_steps = log_step_count_steps
        self._device_fn = device_fn
        self._session_creation_timeout_secs = session_creation_timeout_secs
        self._checkpoint_save_graph_def = checkpoint_save_graph_def

    def replace(self, **kwargs) -> RunConfig:
        """A copy with the given settings changed."""
        out = copy.copy(self)
        for key, value in kwargs.items():
            if not hasattr(out, "_" + key):
                raise ValueError(f"{key} is not a RunConfig setting.")
            setattr(out, "_" + key, value)
        return out

    model_dir = property(lambda self: self._model_dir)
    tf_random_seed = property(lambda self: self._tf_random_seed)
    save_summary_steps = property(lambda self: self._save_summary_steps)
    save_checkpoints_steps = property(lambda self: self._save_checkpoints_steps)
    save_checkpoints_secs = property(lambda self: self._save_checkpoints_secs)
    session_config = property(lambda self: self._session_config)
    keep_checkpoint_max = property(lambda self: self._keep_checkpoint_max)
    keep_checkpoint_every_n_hours = property(
        lambda self: self._keep_checkpoint_every_n_hours)
    log_step_count_steps = property(lambda self: self._log_step_count_steps)
    device_fn = property(lambda self: self._device_fn)
    is_chief = property(lambda self: True)
    num_ps_replicas = property(lambda self: 0)
    num_worker_replicas = property(lambda self: 1)
    task_type = property(lambda self: "worker")
    task_id = property(lambda self: 0)
    master = property(lambda self: "")
    cluster_spec = property(lambda self: None)
    evaluation_master = property(lambda self: "")
