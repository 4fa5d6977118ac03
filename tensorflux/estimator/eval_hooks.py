"""tf.estimator.experimental's evaluation hooks (TF1.15; also in tf.contrib.estimator):
`InMemoryEvaluatorHook`, which evaluates during training with the training session's
variable values, and `make_stop_at_checkpoint_step_hook`, which ends an evaluation once the
training's last checkpoint is written."""

from __future__ import annotations

from tensorflux.estimator.model_fn import ModeKeys
from tensorflux.train.session_run_hook import SessionRunHook

__all__ = ["InMemoryEvaluatorHook", "make_stop_at_checkpoint_step_hook"]


class InMemoryEvaluatorHook(SessionRunHook):
    """Evaluates `estimator` on `input_fn` during training, every `every_n_iter` steps and at
    the end, with the training session's current variable values (no checkpoint needed);
    the results go to the estimator's eval directory `name` as `evaluate` writes them.

    Raises:
      ValueError: every_n_iter is not positive; `steps` is not positive.
      TypeError: a hook that is not a SessionRunHook.
    """

    def __init__(self, estimator, input_fn, steps=None, hooks=None, name=None,
                 every_n_iter=100):
        if every_n_iter is None or every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        for h in hooks or []:
            if not isinstance(h, SessionRunHook):
                raise TypeError(f"All hooks must be SessionRunHook instances, given: {h}")
        self._estimator, self._input_fn, self._steps = estimator, input_fn, steps
        self._hooks, self._name, self._every = list(hooks or []), name, every_n_iter
        self._iter = 0
        self._evaluated_at = None

    def begin(self):
        from tensorflux.framework import graph as graph_lib

        self._train_vars = {v.op.name: v for v in graph_lib.get_collection(
            graph_lib.GraphKeys.GLOBAL_VARIABLES)}

    def after_run(self, run_context, run_values):
        self._iter += 1
        if self._iter % self._every == 0:
            self._evaluate(run_context.session)

    def end(self, session):
        self._evaluate(session)

    def _evaluate(self, train_session):
        from tensorflux.estimator.estimator import _scalar
        from tensorflux.framework import graph as graph_lib
        from tensorflux.metrics import metrics_impl
        from tensorflux.train import basic_session_run_hooks as hooks_lib
        from tensorflux.train import monitored_session
        from tensorflux.train.global_step import get_or_create_global_step

        names = sorted(self._train_vars)
        values = dict(zip(names, train_session.run([self._train_vars[n] for n in names]),
                          strict=True))
        est = self._estimator
        with graph_lib.Graph().as_default() as g:
            step = get_or_create_global_step(g)
            features, labels, input_hooks = est._input(self._input_fn, ModeKeys.EVAL)
            spec = est._spec(features, labels, ModeKeys.EVAL)
            metrics = dict(spec.eval_metric_ops)
            metrics.setdefault("loss", metrics_impl.mean(spec.loss))
            fetch = {k: v[0] for k, v in metrics.items()}
            fetch["global_step"] = step
            update = [v[1] for v in metrics.values()]
            eval_vars = graph_lib.get_collection(graph_lib.GraphKeys.GLOBAL_VARIABLES)

            def init_fn(scaffold, sess):
                for v in eval_vars:
                    if v.op.name in values:
                        v.load(values[v.op.name], sess)

            final = hooks_lib.FinalOpsHook(fetch)
            creator = monitored_session.ChiefSessionCreator(
                scaffold=monitored_session.Scaffold(init_fn=init_fn),
                config=est.config.session_config)
            done = 0
            with monitored_session.MonitoredSession(
                    session_creator=creator,
                    hooks=input_hooks + list(spec.evaluation_hooks) + self._hooks + [final]
            ) as sess:
                while not sess.should_stop() and (self._steps is None or done < self._steps):
                    sess.run(update)
                    done += 1
        results = {k: _scalar(v) for k, v in final.final_ops_values.items()}
        if results["global_step"] == self._evaluated_at:
            return
        self._evaluated_at = results["global_step"]
        est._write_eval_summaries(results, self._name)
        self.last_results = results


class _StopAtCheckpointStepHook(SessionRunHook):
    """Stops once the global step reaches `last_step` and a checkpoint of that step exists
    in `model_dir` (waiting `wait_after_file_check_secs` between looks)."""

    def __init__(self, model_dir, last_step, wait_after_file_check_secs):
        self._model_dir, self._last_step = model_dir, last_step
        self._wait = wait_after_file_check_secs

    def begin(self):
        from tensorflux.train.global_step import get_global_step

        self._step = get_global_step()
        if self._step is None:
            raise RuntimeError("Global step should be created to use "
                               "StopAtCheckpointStepHook.")

    def before_run(self, run_context):
        from tensorflux.train.session_run_hook import SessionRunArgs

        return SessionRunArgs(self._step)

    def after_run(self, run_context, run_values):
        import time

        from tensorflux.framework import errors
        from tensorflux.train import checkpoint_utils

        if run_values.results + 1 < self._last_step:
            return
        try:
            saved = int(checkpoint_utils.load_variable(self._model_dir, "global_step"))
        except (ValueError, OSError, errors.OpError):
            saved = 0
        if saved >= self._last_step:
            run_context.request_stop()
        else:
            time.sleep(self._wait)


def make_stop_at_checkpoint_step_hook(estimator, last_step, wait_after_file_check_secs=30):
    """A hook (for evaluation alongside training) that stops once the global step is
    `last_step` and the estimator's model_dir holds a checkpoint of that step."""
    return _StopAtCheckpointStepHook(estimator.model_dir, last_step,
                                     wait_after_file_check_secs)
