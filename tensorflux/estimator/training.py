"""train_and_evaluate: locally, training with an evaluation after each checkpoint (at most
one per `throttle_secs`) and at the end, then the exporters; on a cluster (TF_CONFIG, see
RunConfig), this process's part: a `ps` task serves its variables, the `chief` and the
`worker`s train (between-graph replication, each with its server in-process; a worker
starts a few seconds after the chief, as TensorFlow's do), an `evaluator` evaluates each
new checkpoint until the last step's."""

from __future__ import annotations

import collections
import os
import time

from tensorflux.platform import tf_logging as logging


class TrainSpec(collections.namedtuple("TrainSpec", ["input_fn", "max_steps", "hooks",
                                                     "saving_listeners"])):
    def __new__(cls, input_fn, max_steps=None, hooks=None, saving_listeners=None):
        if not callable(input_fn):
            raise TypeError(f"`input_fn` must be callable, given: {input_fn}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        return super().__new__(cls, input_fn, max_steps, tuple(hooks or ()),
                               tuple(saving_listeners or ()))


class EvalSpec(collections.namedtuple("EvalSpec", [
        "input_fn", "steps", "name", "hooks", "exporters", "start_delay_secs",
        "throttle_secs"])):
    def __new__(cls, input_fn, steps=100, name=None, hooks=None, exporters=None,
                start_delay_secs=120, throttle_secs=600):
        if not callable(input_fn):
            raise TypeError(f"`input_fn` must be callable, given: {input_fn}")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if throttle_secs < 0:
            raise ValueError(f"Must specify throttle_secs >= 0, given: {throttle_secs}")
        if exporters is None:
            exporters = ()
        elif not isinstance(exporters, (list, tuple)):
            exporters = (exporters,)
        return super().__new__(cls, input_fn, steps, name, tuple(hooks or ()),
                               tuple(exporters), start_delay_secs, throttle_secs)


class _EvaluateAfterSave:
    """A checkpoint listener evaluating a new checkpoint when `throttle_secs` passed since
    the last evaluation; as TF's, not the first checkpoint of a `train` call (the model
    as it was before training)."""

    def __init__(self, run):
        self._run, self._last, self._first = run, None, True

    def begin(self):
        self._first = True

    def before_save(self, session, global_step_value):
        pass

    def after_save(self, session, global_step_value):
        if self._first:
            self._first = False
            return False
        now = time.time()
        if self._last is None or now - self._last >= self._run.throttle_secs:
            self._last = now
            self._run.evaluate(is_final=False)
        return False

    def end(self, session, global_step_value):
        pass


class _Run:
    def __init__(self, estimator, train_spec, eval_spec):
        self.estimator, self.train_spec, self.eval_spec = estimator, train_spec, eval_spec
        self.throttle_secs = eval_spec.throttle_secs
        self.result, self.exports, self.evaluated = None, [], None

    def evaluate(self, is_final: bool):
        est, spec = self.estimator, self.eval_spec
        checkpoint = est.latest_checkpoint()
        if checkpoint is None:
            return
        if checkpoint != self.evaluated:
            self.evaluated = checkpoint
            self.result = est.evaluate(spec.input_fn, steps=spec.steps,
                                       hooks=list(spec.hooks), checkpoint_path=checkpoint,
                                       name=spec.name)
        elif not is_final:
            return
        for exporter in spec.exporters:
            path = os.path.join(est.model_dir, "export", exporter.name)
            self.exports.append(exporter.export(est, path, checkpoint, self.result,
                                                is_final))


def train_and_evaluate(estimator, train_spec, eval_spec):
    """Trains `estimator` by `train_spec`, evaluating by `eval_spec` after checkpoints and
    at the end. Returns (the last evaluation's result, the exporters' results).

    Raises:
      TypeError: the specs are not a TrainSpec and an EvalSpec.
    """
    if not isinstance(train_spec, TrainSpec):
        raise TypeError(f"`train_spec` must have type `tf.estimator.TrainSpec`. Got: "
                        f"{type(train_spec)}")
    if not isinstance(eval_spec, EvalSpec):
        raise TypeError(f"`eval_spec` must have type `tf.estimator.EvalSpec`. Got: "
                        f"{type(eval_spec)}")
    run = _Run(estimator, train_spec, eval_spec)
    config = estimator.config
    if config.task_type == "evaluator":
        return _run_evaluator(run, train_spec, eval_spec)
    if config.master:
        return _run_distributed(estimator, config, train_spec)
    logging.info("Running training and evaluation locally (non-distributed).")
    listeners = list(train_spec.saving_listeners) + [_EvaluateAfterSave(run)]
    estimator.train(train_spec.input_fn, hooks=list(train_spec.hooks),
                    max_steps=train_spec.max_steps, saving_listeners=listeners)
    run.evaluate(is_final=True)
    return run.result, run.exports


_DELAY_SECS_PER_WORKER = 5
_MAX_DELAY_SECS = 60


def _run_distributed(estimator, config, train_spec):
    """A cluster task's part (see the module docstring): (None, None) once trained."""
    from tensorflux.distributed.server import Server

    logging.info("Running distributed training: this is task %s:%d of %s.",
                 config.task_type, config.task_id, config.cluster_spec)
    server = Server(config.cluster_spec, job_name=config.task_type,
                    task_index=config.task_id, config=config.session_config, start=True)
    if config.task_type == "ps":
        server.join()
        return None, None
    if config.task_type == "worker":
        limit = config.experimental_max_worker_delay_secs
        delay = min(_MAX_DELAY_SECS if limit is None else int(limit),
                    (config.task_id + 1) * _DELAY_SECS_PER_WORKER)
        if delay > 0:
            logging.info("Waiting %d secs before starting training.", delay)
            time.sleep(delay)
    estimator.train(train_spec.input_fn, hooks=list(train_spec.hooks),
                    max_steps=train_spec.max_steps,
                    saving_listeners=list(train_spec.saving_listeners))
    return None, None


def _run_evaluator(run, train_spec, eval_spec):
    """An evaluator task: after `start_delay_secs`, evaluates each new checkpoint (and runs
    the exporters), at most one per `throttle_secs`, until it has evaluated one of
    `train_spec.max_steps` (forever without max_steps). Returns (the last result, the
    exporters' results)."""
    estimator = run.estimator
    logging.info("Running the evaluator (waiting %d secs first).", eval_spec.start_delay_secs)
    time.sleep(eval_spec.start_delay_secs)
    while True:
        start = time.time()
        checkpoint = estimator.latest_checkpoint()
        if checkpoint is None:
            logging.info("Estimator is not trained yet. Will start an evaluation when a "
                         "checkpoint is ready.")
        elif checkpoint != run.evaluated:
            step = estimator._global_step_of(checkpoint)
            last = train_spec.max_steps is not None and step >= train_spec.max_steps
            run.evaluate(is_final=last)  # (the exporters' last export says is_final)
            if last:
                logging.info("Exiting evaluation, global step %d >= max step %d.", step,
                             train_spec.max_steps)
                return run.result, run.exports
        wait = eval_spec.throttle_secs - (time.time() - start)
        time.sleep(max(wait, 0.5))
