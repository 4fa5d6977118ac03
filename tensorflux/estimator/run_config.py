"""RunConfig: where an Estimator writes and how often it checkpoints, summarizes, logs, and
which task of a cluster this process is (the `TF_CONFIG` environment variable)."""

from __future__ import annotations

import copy
import json
import os

_DEFAULT_SAVE_SECS = 600


_CHIEF, _WORKER, _PS, _EVALUATOR, _MASTER = "chief", "worker", "ps", "evaluator", "master"


def _task_env(tf_config: dict) -> dict:
    """The cluster settings of a parsed TF_CONFIG: task type and id, cluster spec, master,
    chief-ness and replica counts, as TensorFlow's RunConfig derives them.

    Raises:
      ValueError: a cluster without this task's type or index, an evaluator named in the
        cluster, a chief job with more than one task, or workers without a chief.
    """
    from tensorflux.distributed.cluster import ClusterSpec

    cluster = tf_config.get("cluster") or {}
    task = tf_config.get("task") or {}
    if not cluster:
        if task.get("type") == _EVALUATOR:
            return dict(task_type=_EVALUATOR, task_id=int(task.get("index", 0)),
                        cluster_spec=ClusterSpec({}), master="", is_chief=False,
                        global_id=None, num_ps_replicas=0, num_worker_replicas=0)
        return {}
    task_type, task_id = task.get("type"), task.get("index")
    if not task_type:
        raise ValueError("If `cluster` is set in TF_CONFIG, `task.type` must be set.")
    if task_id is None:
        raise ValueError("If `cluster` is set in TF_CONFIG, `task.index` must be set.")
    task_id = int(task_id)
    if _EVALUATOR in cluster:
        raise ValueError("`evaluator` should not be a job in the cluster spec of TF_CONFIG.")
    if len(cluster.get(_CHIEF, [])) > 1:
        raise ValueError("The `chief` job of TF_CONFIG's cluster must have exactly one task.")
    if cluster.get(_WORKER) and not (cluster.get(_CHIEF) or cluster.get(_MASTER)):
        raise ValueError("If `worker` tasks are in TF_CONFIG's cluster, a `chief` must be "
                         "too (tensorflux-cluster makes one with --chief).")
    spec = ClusterSpec(cluster)
    if task_type == _EVALUATOR:
        master = ""
    else:
        if task_type not in cluster or not 0 <= task_id < len(cluster[task_type]):
            raise ValueError(f"TF_CONFIG's task {task_type}:{task_id} is not in its cluster "
                             f"{sorted(cluster)}.")
        master = "grpc://" + spec.task_address(task_type, task_id)
    return dict(task_type=task_type, task_id=task_id, cluster_spec=spec, master=master,
                global_id=_global_id(cluster, task_type, task_id),
                is_chief=task_type in (_CHIEF, _MASTER),
                num_ps_replicas=len(cluster.get(_PS, [])),
                num_worker_replicas=sum(len(cluster.get(j, []))
                                        for j in (_CHIEF, _MASTER, _WORKER)))


def _global_id(cluster: dict, task_type: str, task_id: int) -> int | None:
    """The task's number in the whole cluster as TensorFlow counts: the chief (or master)
    first, then the other jobs but `ps` by name, then the ps tasks (an input pipeline's
    shard index); None for an evaluator, which is not in the cluster."""
    chief = _MASTER if _MASTER in cluster else _CHIEF
    order = [chief, *sorted(j for j in cluster if j not in (chief, _PS)), _PS]
    first = 0
    for job in order:
        if job == task_type:
            return first + task_id
        first += len(cluster.get(job, []))
    return None


def _distributed_session_config(task_type: str, task_id: int):
    """TensorFlow's default ConfigProto for a distributed task: a worker sees the PS tasks
    and itself (so no worker waits for another), the chief the PS tasks and the chief."""
    from tensorflux.protos import config_pb2

    if task_type in (_CHIEF, _MASTER):
        filters = ["/job:ps", f"/job:{task_type}"]
    elif task_type == _WORKER:
        filters = ["/job:ps", f"/job:worker/task:{task_id}"]
    else:
        return None
    return config_pb2.ConfigProto(allow_soft_placement=True, device_filters=filters)


class RunConfig:
    """An Estimator's run settings (`tf.estimator.RunConfig`).

    Checkpoints every `save_checkpoints_steps` or `save_checkpoints_secs` (default 600 s;
    both None: none but the last), summaries every `save_summary_steps`, the loss and step
    rate logged every `log_step_count_steps`; `session_config` is the ConfigProto of the
    sessions; `tf_random_seed` the graph-level seed.

    The task comes from the `TF_CONFIG` environment variable (JSON: `cluster`, a job ->
    addresses map with `chief`, `worker` and `ps` jobs, and `task`, {"type", "index"}),
    read when the config is made: `master` is "grpc://" + this task's address, `is_chief`
    whether it is the chief, the device function (when none is given) puts variables on
    the PS tasks (`replica_device_setter`), and `train_and_evaluate` runs the task's part.
    Without `cluster` the Estimator runs locally. An `evaluator` task is not in the
    cluster.

    Raises:
      ValueError: both `save_checkpoints_steps` and `save_checkpoints_secs` given; a
        TF_CONFIG that is not JSON or names a task its cluster lacks (see `_task_env`).
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
        self._experimental_max_worker_delay_secs = experimental_max_worker_delay_secs
        raw = os.environ.get("TF_CONFIG", "")
        try:
            tf_config = json.loads(raw) if raw.strip() else {}
        except ValueError as e:
            raise ValueError(f"TF_CONFIG is not JSON: {e}") from None
        env = _task_env(tf_config)
        self._task_type = env.get("task_type", _WORKER)
        self._task_id = env.get("task_id", 0)
        self._global_id_in_cluster = env.get("global_id", 0)
        self._cluster_spec = env.get("cluster_spec")
        self._master = env.get("master", "")
        self._is_chief = env.get("is_chief", True)
        self._num_ps_replicas = env.get("num_ps_replicas", 0)
        self._num_worker_replicas = env.get("num_worker_replicas", 1)
        if session_config is None and self._master:
            self._session_config = _distributed_session_config(self._task_type,
                                                               self._task_id)

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
    is_chief = property(lambda self: self._is_chief)
    num_ps_replicas = property(lambda self: self._num_ps_replicas)
    num_worker_replicas = property(lambda self: self._num_worker_replicas)
    task_type = property(lambda self: self._task_type)
    task_id = property(lambda self: self._task_id)
    global_id_in_cluster = property(lambda self: self._global_id_in_cluster)
    master = property(lambda self: self._master)
    cluster_spec = property(lambda self: self._cluster_spec)
    evaluation_master = property(lambda self: "")
    experimental_max_worker_delay_secs = property(
        lambda self: self._experimental_max_worker_delay_secs)
