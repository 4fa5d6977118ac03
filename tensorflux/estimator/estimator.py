"""tf.estimator.Estimator: train, evaluate, predict and export a model given by a model_fn.

Each call builds a fresh graph: the input_fn's features and labels, the model_fn's
EstimatorSpec for the mode, then runs it in a session that restores the latest checkpoint of
`model_dir` (training initializes when there is none). Training goes through
`tf.train.MonitoredTrainingSession` with TensorFlow's hooks (loss and step logged, NaN loss
stops, summaries and checkpoints written to model_dir); evaluation runs the metrics' update
ops until the input ends (or `steps`) and returns their values with the loss and the global
step, writing them as summaries to model_dir/eval[_name]; prediction yields the predictions
per example (or per batch).
"""

from __future__ import annotations

import collections
import copy
import inspect
import os
import tempfile
import time

import numpy as np

from tensorflux.estimator.model_fn import EstimatorSpec, ModeKeys
from tensorflux.estimator.run_config import RunConfig
from tensorflux.framework import errors, random_seed
from tensorflux.framework import graph as graph_lib
from tensorflux.platform import tf_logging as logging


def _args(fn) -> set[str]:
    target = fn.func if hasattr(fn, "func") else fn  # functools.partial
    try:
        return set(inspect.signature(target).parameters)
    except (TypeError, ValueError):
        return set()


def _call_with(fn, available: dict):
    """`fn` called with those of `available` it takes by name."""
    names = _args(fn)
    return fn(**{k: v for k, v in available.items() if k in names})


class _IteratorInitializerHook:
    """Runs a dataset iterator's initializer once the session is created."""

    def __init__(self, iterator):
        self._iterator = iterator

    def begin(self):
        pass

    def after_create_session(self, session, coord):
        session.run(self._iterator.initializer)

    def before_run(self, run_context):
        return None

    def after_run(self, run_context, run_values):
        pass

    def end(self, session):
        pass


def _features_and_labels(result):
    """(features, labels, hooks) from an input_fn's result: a Dataset of (features,
    labels) or of features, or those tensors themselves."""
    from tensorflux.data.dataset_ops import DatasetV1

    hooks = []
    if isinstance(result, DatasetV1):
        iterator = result.make_initializable_iterator()
        hooks.append(_IteratorInitializerHook(iterator))
        result = iterator.get_next()
    if isinstance(result, (tuple, list)):
        if len(result) != 2:
            raise ValueError(f"input_fn should return (features, labels) as a len 2 tuple, "
                             f"got {len(result)} values.")
        return result[0], result[1], hooks
    return result, None, hooks


class Estimator:
    """Trains, evaluates and serves the model `model_fn(features, labels, mode, params,
    config)` builds (it may take any of these by name; `features` is required).

    Raises:
      ValueError: `model_fn` takes no `features`; `model_dir` given both here and in
        `config`, differently.
    """

    def __init__(self, model_fn, model_dir=None, config=None, params=None,
                 warm_start_from=None):
        if not callable(model_fn):
            raise ValueError(f"model_fn must be callable, given: {model_fn}")
        args = _args(model_fn)
        if "features" not in args:
            raise ValueError(f"model_fn ({model_fn}) must include features argument.")
        config = config or RunConfig()
        if not isinstance(config, RunConfig):
            raise ValueError(f"config must be an instance of `RunConfig`, but provided "
                             f"{config}.")
        if model_dir is not None and config.model_dir is not None and \
                os.fspath(model_dir) != os.fspath(config.model_dir):
            raise ValueError("`model_dir` are set both in constructor and `RunConfig`, but "
                             f"with different values. In constructor: '{model_dir}', in "
                             f"`RunConfig`: '{config.model_dir}' ")
        model_dir = model_dir or config.model_dir
        if model_dir is None:
            model_dir = tempfile.mkdtemp()
            logging.warning("Using temporary folder as model directory: %s", model_dir)
        self._model_dir = os.fspath(model_dir)
        self._config = config.replace(model_dir=self._model_dir)
        self._params = copy.deepcopy(params or {})
        self._model_fn = model_fn
        self._warm_start_from = warm_start_from
        self._device_fn = self._config.device_fn or _replica_device_setter(self._config)
        logging.info("Using config: %s", {k.lstrip("_"): v for k, v in vars(
            self._config).items()})

    model_dir = property(lambda self: self._model_dir)
    config = property(lambda self: copy.deepcopy(self._config))
    params = property(lambda self: copy.deepcopy(self._params))
    model_fn = property(lambda self: self._model_fn)

    def eval_dir(self, name=None) -> str:
        """Where `evaluate(name=...)` writes its summaries: model_dir/eval[_name]."""
        return os.path.join(self._model_dir, "eval" if not name else f"eval_{name}")

    # ---- checkpoints -------------------------------------------------------------------
    def latest_checkpoint(self):
        from tensorflux.train import checkpoint_management

        return checkpoint_management.latest_checkpoint(self._model_dir)

    def get_variable_names(self) -> list[str]:
        from tensorflux.train import checkpoint_utils

        return [name for name, _ in checkpoint_utils.list_variables(self._model_dir)]

    def get_variable_value(self, name) -> np.ndarray:
        from tensorflux.train import checkpoint_utils

        return checkpoint_utils.load_variable(self._model_dir, name)

    def _required_checkpoint(self, checkpoint_path, suffix: str):
        checkpoint = checkpoint_path or self.latest_checkpoint()
        if checkpoint is None:
            raise ValueError(f"Could not find trained model in model_dir: "
                             f"{self._model_dir}{suffix}")
        return checkpoint

    def _restoring(self, spec, checkpoint):
        """A session creator restoring `checkpoint` into the spec's graph."""
        from tensorflux.train import monitored_session

        return monitored_session.ChiefSessionCreator(
            scaffold=spec.scaffold or monitored_session.Scaffold(),
            checkpoint_filename_with_path=checkpoint, config=self._config.session_config)

    def _global_step_of(self, checkpoint) -> int:
        from tensorflux.train import checkpoint_utils

        if checkpoint is None:
            return 0
        try:
            return int(checkpoint_utils.load_variable(checkpoint, "global_step"))
        except (errors.NotFoundError, ValueError, KeyError):
            return 0

    # ---- graph building ------------------------------------------------------------------
    def _input(self, input_fn, mode):
        result = _call_with(input_fn, {"mode": mode, "params": self.params,
                                       "config": self.config})
        return _features_and_labels(result)

    def _call_model_fn(self, features, labels, mode):
        available = {"features": features, "mode": mode, "params": self.params,
                     "config": self.config}
        if "labels" in _args(self._model_fn):
            available["labels"] = labels
        elif labels is not None:
            raise ValueError("model_fn does not take labels, but input_fn returns labels.")
        return _call_with(self._model_fn, available)

    def _spec(self, features, labels, mode) -> EstimatorSpec:
        spec = self._call_model_fn(features, labels, mode)
        if not isinstance(spec, EstimatorSpec):
            raise ValueError(f"model_fn should return an EstimatorSpec. Given: {spec}")
        return spec

    def _graph(self):
        return graph_lib.Graph()

    # ---- training ------------------------------------------------------------------------
    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        """Trains until the input ends, `steps` more steps, or global step `max_steps`.

        Raises:
          ValueError: both `steps` and `max_steps`, or either not positive.
        """
        from tensorflux.train import basic_session_run_hooks as hooks_lib

        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        for what, n in (("steps", steps), ("max_steps", max_steps)):
            if n is not None and n <= 0:
                raise ValueError(f"Must specify {what} > 0, given: {n}")
        if max_steps is not None and \
                self._global_step_of(self.latest_checkpoint()) >= max_steps:
            logging.info("Skipping training since max_steps has already saved.")
            return self
        hooks = list(hooks or [])
        if steps is not None or max_steps is not None:
            hooks.append(hooks_lib.StopAtStepHook(num_steps=steps, last_step=max_steps))
        loss = self._train_model(input_fn, hooks, list(saving_listeners or []))
        logging.info("Loss for final step: %s.", loss)
        return self

    def _train_model(self, input_fn, hooks, listeners):
        from tensorflux.summary import summary
        from tensorflux.train import basic_session_run_hooks as hooks_lib
        from tensorflux.train import monitored_session, saver
        from tensorflux.train.global_step import get_or_create_global_step

        cfg = self._config
        with self._graph().as_default() as g, g.device(self._device_fn):
            random_seed.set_random_seed(cfg.tf_random_seed)
            global_step = get_or_create_global_step(g)
            features, labels, input_hooks = self._input(input_fn, ModeKeys.TRAIN)
            spec = self._spec(features, labels, ModeKeys.TRAIN)
            summary.scalar("loss", spec.loss)
            worker_hooks = [hooks_lib.NanTensorHook(spec.loss)]
            if cfg.log_step_count_steps:
                worker_hooks.append(hooks_lib.LoggingTensorHook(
                    {"loss": spec.loss, "step": global_step},
                    every_n_iter=cfg.log_step_count_steps))
            worker_hooks += input_hooks + list(spec.training_hooks) + hooks
            scaffold = spec.scaffold or monitored_session.Scaffold()
            if self._warm_start_from is not None:
                _warm_start(self._warm_start_from)
            if scaffold.saver is None and not graph_lib.get_collection(graph_lib.GraphKeys.SAVERS):
                graph_lib.add_to_collection(graph_lib.GraphKeys.SAVERS, saver.Saver(
                    sharded=True, max_to_keep=cfg.keep_checkpoint_max,
                    keep_checkpoint_every_n_hours=cfg.keep_checkpoint_every_n_hours,
                    defer_build=True, save_relative_paths=True))
            chief_hooks = list(spec.training_chief_hooks)
            if cfg.save_checkpoints_secs or cfg.save_checkpoints_steps:
                chief_hooks.append(hooks_lib.CheckpointSaverHook(
                    self._model_dir, save_secs=cfg.save_checkpoints_secs,
                    save_steps=cfg.save_checkpoints_steps, scaffold=scaffold,
                    listeners=listeners))
            loss = None
            with monitored_session.MonitoredTrainingSession(
                    master=cfg.master, is_chief=cfg.is_chief,
                    checkpoint_dir=self._model_dir, scaffold=scaffold, hooks=worker_hooks,
                    chief_only_hooks=chief_hooks, save_checkpoint_secs=0,
                    save_summaries_steps=cfg.save_summary_steps,
                    config=cfg.session_config,
                    log_step_count_steps=cfg.log_step_count_steps) as sess:
                while not sess.should_stop():
                    _, loss = sess.run([spec.train_op, spec.loss])
        return loss

    # ---- evaluation ----------------------------------------------------------------------
    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        """The metrics of the model at `checkpoint_path` (default: the latest) over the
        input (or `steps` batches): a dict with the eval_metric_ops' values, "loss" (the
        mean loss) and "global_step".

        Raises:
          ValueError: no checkpoint to evaluate; `steps` not positive.
        """
        from tensorflux.metrics import metrics_impl
        from tensorflux.train import basic_session_run_hooks as hooks_lib
        from tensorflux.train import monitored_session
        from tensorflux.train.global_step import get_or_create_global_step

        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        checkpoint = self._required_checkpoint(checkpoint_path, ".")
        with self._graph().as_default() as g:
            random_seed.set_random_seed(self._config.tf_random_seed)
            global_step = get_or_create_global_step(g)
            features, labels, input_hooks = self._input(input_fn, ModeKeys.EVAL)
            spec = self._spec(features, labels, ModeKeys.EVAL)
            metrics = dict(spec.eval_metric_ops)
            if "loss" not in metrics:
                metrics["loss"] = metrics_impl.mean(spec.loss)
            values = {k: v[0] for k, v in metrics.items()}
            values["global_step"] = global_step
            update = [v[1] for v in metrics.values()]
            all_hooks = input_hooks + list(spec.evaluation_hooks) + list(hooks or [])
            final = hooks_lib.FinalOpsHook(values)
            creator = self._restoring(spec, checkpoint)
            logging.info("Starting evaluation at %s", time.strftime("%Y-%m-%dT%H:%M:%S"))
            done = 0
            with monitored_session.MonitoredSession(
                    session_creator=creator, hooks=all_hooks + [final]) as sess:
                while not sess.should_stop() and (steps is None or done < steps):
                    sess.run(update)
                    done += 1
            results = final.final_ops_values
        results = {k: _scalar(v) for k, v in results.items()}
        logging.info("Saving dict for global step %d: %s", results["global_step"],
                     ", ".join(f"{k} = {v}" for k, v in sorted(results.items())))
        self._write_eval_summaries(results, name)
        return results

    def _write_eval_summaries(self, results: dict, name) -> None:
        from tensorflux.protos import summary_pb2
        from tensorflux.summary import writer_cache

        out_dir = self.eval_dir(name)
        writer = writer_cache.FileWriterCache.get(out_dir)
        values = [summary_pb2.Summary.Value(tag=k, simple_value=float(v))
                  for k, v in sorted(results.items())
                  if k != "global_step" and np.ndim(v) == 0 and
                  np.issubdtype(np.asarray(v).dtype, np.number)]
        writer.add_summary(summary_pb2.Summary(value=values), int(results["global_step"]))
        writer.flush()

    # ---- prediction ----------------------------------------------------------------------
    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):
        """Yields the model's predictions for the input, one example at a time (or one
        batch at a time without `yield_single_examples`), until the input ends.

        Raises:
          ValueError: no checkpoint; a `predict_keys` entry not among the predictions.
        """
        from tensorflux.train import monitored_session
        from tensorflux.train.global_step import get_or_create_global_step

        checkpoint = self._required_checkpoint(checkpoint_path,
                                               ", running initialization to predict.")
        with self._graph().as_default() as g:
            random_seed.set_random_seed(self._config.tf_random_seed)
            get_or_create_global_step(g)
            features, _labels, input_hooks = self._input(input_fn, ModeKeys.PREDICT)
            spec = self._spec(features, None, ModeKeys.PREDICT)
            predictions = spec.predictions
            if predict_keys is not None:
                if not isinstance(predictions, dict):
                    raise ValueError("predict_keys argument is not valid in case of "
                                     "non-dict predictions.")
                missing = [k for k in predict_keys if k not in predictions]
                if missing:
                    raise ValueError(f"Expected to run at least one output from "
                                     f"{list(predictions)}, provided {missing}.")
                predictions = {k: predictions[k] for k in predict_keys}
            creator = self._restoring(spec, checkpoint)
            all_hooks = input_hooks + list(spec.prediction_hooks) + list(hooks or [])
            with monitored_session.MonitoredSession(session_creator=creator,
                                                    hooks=all_hooks) as sess:
                while not sess.should_stop():
                    batch = sess.run(predictions)
                    if not yield_single_examples:
                        yield batch
                        continue
                    yield from _examples(batch)

    # ---- export --------------------------------------------------------------------------
    def export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                           assets_extra=None, as_text=False, checkpoint_path=None,
                           experimental_mode=ModeKeys.PREDICT):
        """Writes a SavedModel of the PREDICT graph (served by `tensorflux-serve`) under
        export_dir_base/<timestamp> and returns that directory (as bytes, as TF does).

        Raises:
          ValueError: no checkpoint, or a receiver_fn that returns no ServingInputReceiver.
        """
        from tensorflux.estimator import export as export_lib
        from tensorflux.saved_model import builder as builder_lib
        from tensorflux.saved_model import tag_constants
        from tensorflux.train import monitored_session
        from tensorflux.train import saver as saver_lib
        from tensorflux.train.global_step import get_or_create_global_step

        checkpoint = checkpoint_path or self.latest_checkpoint()
        if checkpoint is None:
            raise ValueError(f"Couldn't find trained model at {self._model_dir}.")
        export_dir = export_lib.timestamped_dir(export_dir_base)
        with self._graph().as_default() as g:
            get_or_create_global_step(g)
            receiver = serving_input_receiver_fn()
            if not isinstance(receiver, export_lib.ServingInputReceiver):
                raise ValueError("serving_input_receiver_fn must return a "
                                 "ServingInputReceiver.")
            spec = self._spec(receiver.features, None, experimental_mode)
            signatures = export_lib.signature_defs(receiver, spec)
            from tensorflux.runtime.session import Session

            # the loader initializes local variables and tables, as TF1's export does
            local_init = (spec.scaffold.local_init_op if spec.scaffold is not None
                          else None) or monitored_session.Scaffold.default_local_init_op()
            with Session(config=self._config.session_config) as sess:
                saver_lib.Saver(sharded=True).restore(sess, checkpoint)
                builder = builder_lib.SavedModelBuilder(export_dir)
                builder.add_meta_graph_and_variables(
                    sess, [tag_constants.SERVING], signature_def_map=signatures,
                    assets_collection=graph_lib.get_collection(
                        graph_lib.GraphKeys.ASSET_FILEPATHS),
                    main_op=local_init, strip_default_attrs=True)
                builder.save(as_text)
        export_lib.copy_assets_extra(export_dir, assets_extra)
        logging.info("SavedModel written to: %s", export_dir)
        return os.fsencode(export_dir)

    export_savedmodel = export_saved_model

    def experimental_export_all_saved_models(self, export_dir_base, input_receiver_fn_map,
                                             assets_extra=None, as_text=False,
                                             checkpoint_path=None):
        """One SavedModel of the graphs of the modes of `input_receiver_fn_map` ({mode:
        receiver_fn}; TRAIN and EVAL take supervised receivers); returns its directory.

        Raises:
          ValueError: no checkpoint; an unknown mode; a receiver_fn of the wrong kind.
        """
        from tensorflux.estimator import export_modes

        return export_modes.export_all_saved_models(
            self, export_dir_base, input_receiver_fn_map, assets_extra=assets_extra,
            as_text=as_text, checkpoint_path=checkpoint_path)


class WarmStartSettings(collections.namedtuple("WarmStartSettings", [
        "ckpt_to_initialize_from", "vars_to_warm_start", "var_name_to_vocab_info",
        "var_name_to_prev_var_name"])):
    """Where to warm-start from: `tf.train.warm_start`'s arguments. The variables
    (trainable ones whose names match the regex `vars_to_warm_start`, or as the other forms
    of that argument say) take their values from `ckpt_to_initialize_from` (a checkpoint
    or a directory) when training initializes a model directory with no checkpoint."""

    def __new__(cls, ckpt_to_initialize_from, vars_to_warm_start=".*",
                var_name_to_vocab_info=None, var_name_to_prev_var_name=None):
        return super().__new__(cls, ckpt_to_initialize_from, vars_to_warm_start,
                               var_name_to_vocab_info or {}, var_name_to_prev_var_name or {})


def _warm_start(settings) -> None:
    """Rewrites the initializers of the warm-started variables (a model directory with a
    checkpoint of its own restores that instead, so they do not run)."""
    from tensorflux.train import warm_starting

    if not isinstance(settings, WarmStartSettings):
        settings = WarmStartSettings(settings)
    logging.info("Warm-starting with WarmStartSettings: %s", settings)
    warm_starting.warm_start(*settings)


def _scalar(v):
    # As fetched: NumPy scalars (float32 loss, int64 global step), as TF's evaluate gives;
    # programs read `results["loss"].shape` and `.dtype`.
    a = np.asarray(v)
    return a[()] if a.ndim == 0 else a


def _examples(batch):
    """The rows of a batch of predictions (a tensor's value or a dict of them)."""
    if not isinstance(batch, dict):
        yield from np.asarray(batch)
        return
    sizes = {np.shape(v)[0] for v in batch.values() if np.ndim(v) > 0}
    if len(sizes) != 1:
        raise ValueError(f"Batch length of predictions should be same. {sizes}")
    for i in range(sizes.pop()):
        yield {k: np.asarray(v)[i] for k, v in batch.items()}


def _replica_device_setter(config):
    """TensorFlow's default device function for a config with PS tasks: variables (and the
    other ops of `STANDARD_PS_OPS`) on the PS tasks round-robin, the rest on this task;
    None without PS tasks."""
    from tensorflux.train import device_setter

    if not config.num_ps_replicas:
        return None
    worker = f"/job:{config.task_type}/task:{config.task_id}" if config.task_type else \
        "/job:worker"
    return device_setter.replica_device_setter(
        ps_tasks=config.num_ps_replicas, worker_device=worker, merge_devices=True,
        ps_ops=list(device_setter.STANDARD_PS_OPS), cluster=config.cluster_spec)
