"""`tf.contrib.learn.Experiment`, `learn_runner.run` and `make_export_strategy`: TF 1.2-1.4's
way of running an Estimator's training and evaluation, kept for the programs written for it
(`learn_runner.run(experiment_fn, ...)` with a core `tf.estimator.Estimator`).

An Experiment holds an estimator and its train/eval input functions; its schedules are its
methods: `train`, `evaluate`, `train_and_evaluate` (train, evaluating every
`min_eval_frequency` steps when given, then a last evaluation and the exports),
`continuous_eval` (evaluate each new checkpoint), `test` (one step each), and
`run_std_server` (a PS task serving until killed). `learn_runner.run` makes the
Experiment from `experiment_fn(run_config, hparams)` (or TF 1.0's
`experiment_fn(output_dir)`) and runs the schedule asked for, or the task's default:
`train_and_evaluate` for a local run or the chief, `train` for other workers,
`run_std_server` for a PS."""

from __future__ import annotations

import inspect
import os
import time

__all__ = ["Experiment", "ExportStrategy", "make_export_strategy", "run"]


class ExportStrategy:
    """A named export: `export(estimator, export_path, checkpoint_path=None,
    eval_result=None)` (`tf.contrib.learn.ExportStrategy`)."""

    def __init__(self, name, export_fn, strip_default_attrs=None):
        self.name, self.export_fn = name, export_fn
        self.strip_default_attrs = strip_default_attrs

    def export(self, estimator, export_path, checkpoint_path=None, eval_result=None):
        return self.export_fn(estimator, export_path, checkpoint_path, eval_result)


def make_export_strategy(serving_input_fn, default_output_alternative_key=None,
                         assets_extra=None, as_text=False, exports_to_keep=5,
                         strip_default_attrs=None):
    """An ExportStrategy writing a SavedModel under the export path with
    `serving_input_fn`, keeping the newest `exports_to_keep` (None: all)."""
    del default_output_alternative_key

    def export_fn(estimator, export_dir_base, checkpoint_path=None, eval_result=None):
        del eval_result
        path = estimator.export_savedmodel(export_dir_base, serving_input_fn,
                                           assets_extra=assets_extra, as_text=as_text,
                                           checkpoint_path=checkpoint_path)
        if exports_to_keep is not None:
            _keep_newest(export_dir_base, exports_to_keep)
        return path.decode() if isinstance(path, bytes) else path

    return ExportStrategy("Servo", export_fn, strip_default_attrs)


def _keep_newest(base: str, keep: int) -> None:
    import shutil

    found = sorted(d for d in os.listdir(base) if d.isdigit()) if os.path.isdir(base) else []
    for old in found[:-keep] if keep else found:
        shutil.rmtree(os.path.join(base, old), ignore_errors=True)


class Experiment:
    """An estimator with what to train and evaluate it on (see the module docstring).

    Raises:
      ValueError: `estimator` is not an Estimator, or no train/eval input function.
    """

    def __init__(self, estimator, train_input_fn, eval_input_fn, eval_metrics=None,
                 train_steps=None, eval_steps=100, train_monitors=None, eval_hooks=None,
                 local_eval_frequency=None, eval_delay_secs=120,
                 continuous_eval_throttle_secs=60, min_eval_frequency=None,
                 delay_workers_by_global_step=False, export_strategies=None,
                 train_steps_per_iteration=None, checkpoint_and_export=False,
                 saving_listeners=None, check_interval_secs=5):
        del local_eval_frequency, delay_workers_by_global_step, train_steps_per_iteration
        del check_interval_secs
        if not hasattr(estimator, "train") or not hasattr(estimator, "evaluate"):
            raise ValueError(f"`estimator` must implement `train` and `evaluate`, got "
                             f"{type(estimator).__name__}")
        if eval_metrics is not None:
            raise ValueError("`eval_metrics` must be `None` with a core Estimator: add the "
                             "metrics to its model_fn's EstimatorSpec")
        self._estimator = estimator
        self._train_input_fn, self._eval_input_fn = train_input_fn, eval_input_fn
        self._train_steps, self._eval_steps = train_steps, eval_steps
        self._train_monitors = list(train_monitors or [])
        self._eval_hooks = list(eval_hooks or [])
        self._eval_delay_secs = eval_delay_secs
        self._throttle_secs = continuous_eval_throttle_secs
        self._min_eval_frequency = min_eval_frequency
        self._checkpoint_and_export = checkpoint_and_export
        self._saving_listeners = saving_listeners
        self._export_strategies = _as_list(export_strategies)

    estimator = property(lambda self: self._estimator)
    train_steps = property(lambda self: self._train_steps)
    eval_steps = property(lambda self: self._eval_steps)
    eval_metrics = property(lambda self: None)

    def extend_train_hooks(self, additional_hooks) -> None:
        self._train_monitors.extend(additional_hooks)

    def reset_export_strategies(self, new_export_strategies=None):
        old, self._export_strategies = self._export_strategies, \
            _as_list(new_export_strategies)
        return old

    def train(self, delay_secs=None):
        """Trains for `train_steps` (to the end of the input when None)."""
        if delay_secs:
            time.sleep(delay_secs)
        return self._estimator.train(self._train_input_fn, hooks=self._train_monitors,
                                     max_steps=self._train_steps,
                                     saving_listeners=self._saving_listeners)

    def evaluate(self, delay_secs=None, name=None):
        """One evaluation of the latest checkpoint over `eval_steps` batches."""
        if delay_secs:
            time.sleep(delay_secs)
        return self._estimator.evaluate(self._eval_input_fn, steps=self._eval_steps,
                                        hooks=self._eval_hooks, name=name)

    def train_and_evaluate(self):
        """Trains (evaluating every `min_eval_frequency` steps when given), evaluates
        once more at the end and runs the export strategies; returns (the last
        evaluation, the export paths)."""
        every = self._min_eval_frequency if self._checkpoint_and_export or \
            self._min_eval_frequency else None
        if every and self._train_steps:
            step = 0
            while step < self._train_steps:
                step = min(step + every, self._train_steps)
                self._estimator.train(self._train_input_fn, hooks=self._train_monitors,
                                      max_steps=step, saving_listeners=self._saving_listeners)
                if step < self._train_steps:
                    self.evaluate()
        else:
            self.train()
        result = self.evaluate()
        return result, self._maybe_export(result)

    def _maybe_export(self, eval_result) -> list:
        paths = []
        for strategy in self._export_strategies:
            base = os.path.join(self._estimator.model_dir, "export", strategy.name)
            paths.append(strategy.export(self._estimator, base, None, eval_result))
        return paths

    def continuous_eval(self, delay_secs=None, throttle_delay_secs=None,
                        evaluate_checkpoint_only_once=True, continuous_eval_predicate_fn=None,
                        name=None):
        """Evaluates each new checkpoint until `continuous_eval_predicate_fn(result)` says
        stop (without one: until the model's global step reaches `train_steps`)."""
        from tensorflux.train.checkpoint_management import latest_checkpoint

        time.sleep(self._eval_delay_secs if delay_secs is None else delay_secs)
        throttle = self._throttle_secs if throttle_delay_secs is None else throttle_delay_secs
        last, result = None, None
        while True:
            path = latest_checkpoint(self._estimator.model_dir)
            if path is not None and (path != last or not evaluate_checkpoint_only_once):
                last = path
                result = self.evaluate(name=name)
                if continuous_eval_predicate_fn is not None:
                    if not continuous_eval_predicate_fn(result):
                        return result
                elif self._train_steps and result.get("global_step", 0) >= self._train_steps:
                    return result
            time.sleep(throttle)

    def continuous_train_and_eval(self, continuous_eval_predicate_fn=None):
        """Trains and evaluates in turns (`min_eval_frequency` steps each, default 1000)
        until the predicate says stop or `train_steps` are done."""
        every = self._min_eval_frequency or 1000
        step, result = 0, None
        while self._train_steps is None or step < self._train_steps:
            step += every
            if self._train_steps:
                step = min(step, self._train_steps)
            self._estimator.train(self._train_input_fn, hooks=self._train_monitors,
                                  max_steps=step, saving_listeners=self._saving_listeners)
            result = self.evaluate()
            if continuous_eval_predicate_fn is not None and \
                    not continuous_eval_predicate_fn(result):
                break
        return result, self._maybe_export(result)

    def test(self):
        """One training step and one evaluation step (a smoke test of the input
        functions and the model)."""
        self._estimator.train(self._train_input_fn, steps=1, hooks=self._train_monitors)
        return self._estimator.evaluate(self._eval_input_fn, steps=1, name="one_pass")

    def run_std_server(self):
        """Serves this task (a PS) until the process is killed."""
        from tensorflux.distributed.server import Server

        config = self._estimator.config
        server = Server(config.cluster_spec, job_name=config.task_type,
                        task_index=config.task_id, start=True)
        server.join()


def _as_list(strategies) -> list:
    if strategies is None:
        return []
    return list(strategies) if isinstance(strategies, (list, tuple)) else [strategies]


def _default_schedule(config) -> str:
    if not config.cluster_spec:
        return "train_and_evaluate"
    if config.task_type == "ps":
        return "run_std_server"
    return "train_and_evaluate" if config.is_chief else "train"


def run(experiment_fn, output_dir=None, schedule=None, run_config=None, hparams=None):
    """Makes the Experiment and runs `schedule` (a method name) on it (see the module
    docstring); returns what the schedule returns.

    Raises:
      ValueError: both or neither of `output_dir` and `run_config` in TF 1.0's form; an
        unknown schedule; `experiment_fn` returning something else than an Experiment.
    """
    if run_config is not None:
        if output_dir is not None:
            raise ValueError("Cannot provide both `output_dir` and `run_config`")
        experiment = _call(experiment_fn, run_config, hparams)
        config = run_config
    else:
        if output_dir is None:
            raise ValueError("Must specify either `output_dir` or `run_config`")
        experiment = experiment_fn(output_dir)
        config = experiment.estimator.config
    if not isinstance(experiment, Experiment):
        raise ValueError(f"Experiment function returned {type(experiment).__name__}, "
                         "expected an Experiment instance.")
    schedule = schedule or _default_schedule(config)
    task = getattr(experiment, schedule, None)
    if schedule.startswith("_") or not callable(task):
        raise ValueError(f"Schedule references non-existent task {schedule}")
    return task()


def _call(experiment_fn, run_config, hparams):
    params = inspect.signature(experiment_fn).parameters
    if "run_config" in params or len(params) >= 2:
        return experiment_fn(run_config, hparams)
    return experiment_fn(run_config)
