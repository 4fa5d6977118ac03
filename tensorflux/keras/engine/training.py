"""`tf.keras.Model`: compile / fit / evaluate / predict in graph mode, run in the Keras
session (backend.get_session).

`compile` makes one target placeholder per output ("<output layer>_target") and one
sample-weight placeholder (default ones), the total loss (the mean per-sample loss of
each output times its weight, plus the model's regularization losses) and, per metric, a
(weighted sum, weight) pair of tensors for the batch. The train op (built on first use,
as Keras does) minimizes the total loss over the trainable weights and runs the model's
update ops (batch-norm statistics) in the same step. `fit` feeds batches with the
learning phase set to 1.

What is reported follows TF1 Keras (training_v1): the loss of a batch, and its epoch
value the mean of the batch losses weighted by batch size; a metric is a stateful mean,
so its value after a batch is the sum of its weighted values over the epoch so far
divided by the sum of their weights (the per-output losses of a multi-output model are
means of their batch values). An output's Keras mask (`_keras_mask`, from
`Embedding(mask_zero=True)`, `Masking`, ...) weights its per-step losses and metric
values: the loss is sum(loss * sample weight * mask) / sum(mask) and a metric the mean
over the unmasked entries, as Keras computes them.
"""

from __future__ import annotations

import numpy as np

from tensorflux.control_flow import builders
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Tensor
from tensorflux.keras import backend as K
from tensorflux.keras import callbacks as cbks
from tensorflux.keras import losses as losses_lib
from tensorflux.keras import metrics as metrics_lib
from tensorflux.keras import optimizers as optimizers_lib
from tensorflux.keras import saving, weights_checkpoint
from tensorflux.keras.engine import data_adapter as data
from tensorflux.keras.engine.network import Network
from tensorflux.ops import array_ops, constant_op, joining_ops, math_ops, reduction_ops
from tensorflux.train import checkpoint_restore

__all__ = ["Model"]

_SPARSE = (losses_lib.sparse_categorical_crossentropy,)


class Model(Network):
    """A Keras model: `Model(inputs, outputs)` (functional), or a subclass defining
    `call` (see engine/network.py), with Keras's training methods."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.optimizer = None
        self.stop_training = False
        self.history = None
        self._compiled = None
        self._functions: dict = {}

    # ---- compile ----------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None,
                sample_weight_mode=None, weighted_metrics=None, target_tensors=None,
                **kwargs):
        """Configures training: `optimizer` (a name, a Keras or tf.train optimizer),
        `loss` (a name or function; a list or dict for several outputs), `metrics`
        (names such as 'accuracy'/'acc', functions, Metric objects; a list, or a dict by
        output name).

        Raises:
          ValueError: an unknown optimizer, loss or metric name; a loss list or dict that
            does not fit the outputs.
          TypeError: unexpected keyword arguments.
        """
        kwargs.pop("run_eagerly", None)
        kwargs.pop("experimental_run_tf_function", None)
        if kwargs:
            raise TypeError(f"Invalid keyword argument(s) in `compile()`: {sorted(kwargs)}")
        _check_sample_weight_mode(sample_weight_mode)
        self._sample_weight_mode = sample_weight_mode
        if target_tensors is not None or weighted_metrics:
            raise ValueError("tensorflux.keras: target_tensors and weighted_metrics are not "
                             "supported")
        self.optimizer = optimizers_lib.get(optimizer)
        self._compile_args = (loss, metrics, loss_weights)
        if loss is not None:  # None: the model's own losses (add_loss) are the objective
            _check_loss_names(loss)
        self._compiled = None
        self._functions = {}
        if self.outputs:
            self._compile_graph()

    def _compile_graph(self) -> None:
        loss, metrics, loss_weights = self._compile_args
        if loss is None:
            self._compile_lossless()
            return
        names = self.output_names
        loss_fns = _per_output(loss, names, "loss")
        weights = _per_output(loss_weights if loss_weights is not None else 1.0, names,
                              "loss_weights")
        metric_lists = _per_output_metrics(metrics, names)
        modes = _modes(getattr(self, "_sample_weight_mode", None), names)
        with graph_lib.name_scope(None):
            targets, sample_weights, total, metric_tensors, metric_names = [], [], 0.0, [], []
            per_output_losses = []
            for i, (out, fn) in enumerate(zip(self.outputs, loss_fns, strict=True)):
                fn = losses_lib.get(fn)
                sparse = _is_sparse(fn)
                rank = out.shape.ndims
                target = array_ops.placeholder(
                    out.dtype.base_dtype, shape=None if sparse or rank is None else
                    [None] * rank, name=f"{names[i]}_target")
                sw = _sample_weights_placeholder(out, modes[i], names[i]) if rank else None
                targets.append(target)
                sample_weights.append(sw)
                mask = getattr(out, "_keras_mask", None)
                with graph_lib.name_scope(f"loss/{names[i]}_loss"):
                    values = fn(target, out)
                    n = values.shape.ndims
                    if sw is not None and n:
                        values = _weighted(values, sw, modes[i] == "temporal")
                    if mask is not None:  # Keras: the mean over the unmasked entries
                        m = _mask_like(mask, values)
                        entries = math_ops.cast(array_ops.size(m), values.dtype)
                        values = values * (m * (entries / reduction_ops.reduce_sum(m)))
                    out_loss = reduction_ops.reduce_mean(values)
                per_output_losses.append(out_loss)
                total = total + float(weights[i]) * out_loss if weights[i] != 1.0 else \
                    total + out_loss
                for m in metric_lists[i]:
                    name, pair = _metric(m, fn, target, out, mask)
                    metric_names.append(name if len(names) == 1 else f"{names[i]}_{name}")
                    metric_tensors.extend(pair)
            reg = self.losses
            if reg:
                total = total + math_ops.add_n([math_ops.cast(r, total.dtype) for r in reg])
        self.total_loss = total
        names_out = ["loss"]
        extra = []
        if len(names) > 1:
            names_out += [f"{n}_loss" for n in names]
            one = constant_op.constant(1.0, total.dtype)
            extra = [t for loss in per_output_losses for t in (loss, one)]
        self.metrics_names = names_out + metric_names
        self._compiled = {"targets": targets, "sample_weights": sample_weights,
                          "modes": modes, "fetches": [total] + extra + metric_tensors,
                          "sparse": [_is_sparse(losses_lib.get(f)) for f in loss_fns]}

    def _compile_lossless(self) -> None:
        """compile(loss=None): the objective is the sum of `model.losses` (added with
        `add_loss`); no targets are fed and no metrics computed (Keras skips the metrics
        of outputs without a loss)."""
        reg = self.losses
        if not reg:
            raise ValueError("The model cannot be compiled because it has no loss to "
                             "optimize: compile() got loss=None and the model has no "
                             "losses of its own (add_loss).")
        with graph_lib.name_scope(None):
            total = math_ops.add_n([math_ops.cast(r, reg[0].dtype) for r in reg])
        self.total_loss = total
        self.metrics_names = ["loss"]
        self._compiled = {"targets": [], "sample_weights": [], "fetches": [total],
                          "sparse": []}

    @property
    def metrics(self):
        return list(getattr(self, "metrics_names", [])[1:])

    # ---- the functions ----------------------------------------------------------------
    def _ensure_compiled(self, x=None) -> None:
        if self._compiled is None and getattr(self, "_compile_args", None) is None:
            raise RuntimeError("You must compile your model before training/testing. Use "
                               "`model.compile(optimizer, loss)`.")
        if not self.outputs:
            self._build_for_data(x)
        if self._compiled is None:
            self._compile_graph()

    def _build_for_data(self, x) -> None:
        """Builds an unbuilt model from a batch of input arrays (Sequential, subclassed)."""
        if x is None:
            raise ValueError("This model has not yet been built; call it on data first.")
        arrays = x if isinstance(x, (list, tuple)) else [x]
        from tensorflux.keras.engine.input_layer import Input

        inputs = [Input(batch_shape=(None,) + _shape_of(a)[1:],
                        dtype=_dtype_of(a)) for a in arrays]
        self._build_graph_from_inputs(inputs[0] if len(inputs) == 1 else inputs)

    def _build_graph_from_inputs(self, inputs) -> None:
        """A subclassed model: its first call on Input placeholders gives the tensors
        fit/predict feed and fetch (it stays a subclassed model)."""
        outputs = self(inputs)
        self._nested_inputs, self._nested_outputs = inputs, outputs
        self.inputs, self.outputs = _flat_list(inputs), _flat_list(outputs)
        self.built = True

    def _make_train_function(self) -> None:
        """Builds the train op now (TF1 Keras's entry point): the optimizer's slots then
        exist, so an object-based restore can fill them before the first step."""
        self._ensure_compiled()
        self._train_op()

    def _train_op(self):
        if "train" not in self._functions:
            with graph_lib.name_scope("training"):
                params = self.trainable_weights
                if not params:
                    train = builders.no_op()
                else:
                    train = self.optimizer.minimize(self.total_loss, var_list=params)
                updates = self.updates
                self._functions["train"] = builders.group(train, *updates) if updates \
                    else train
            checkpoint_restore.run_streaming_restores(graph_lib.get_default_graph())
        return self._functions["train"]

    def _feed(self, xs, ys=None, sw=None, training=False) -> dict:
        feeds = {t: x.value() if isinstance(x, data.SparseRows) else x
                 for t, x in zip(self.inputs, xs, strict=True)}
        if ys is not None:
            for t, y in zip(self._compiled["targets"], ys, strict=True):
                feeds[t] = y
        if sw is not None:
            for p, w in zip(self._compiled["sample_weights"], sw, strict=True):
                if p is not None and w is not None:
                    feeds[p] = w
        feeds.update(K._phase_feed(1 if training else 0))
        return feeds

    def _run(self, fetches, feeds):
        return K.get_session().run(fetches, feed_dict=feeds)

    # ---- batch methods ----------------------------------------------------------------
    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       reset_metrics=True, return_dict=False):
        """One gradient step on a batch; returns the loss (and metric values)."""
        del reset_metrics
        self._ensure_compiled(_first_x(x))
        xs, ys, sw = self._standardize(x, y, sample_weight, class_weight)
        out = self._run([self._train_op()] + self._compiled["fetches"],
                        self._feed(xs, ys, sw, training=True))[1:]
        return self._result(_Means(out).values(), return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, reset_metrics=True,
                      return_dict=False):
        del reset_metrics
        self._ensure_compiled(_first_x(x))
        xs, ys, sw = self._standardize(x, y, sample_weight)
        out = self._run(self._compiled["fetches"], self._feed(xs, ys, sw))
        return self._result(_Means(out).values(), return_dict)

    def predict_on_batch(self, x):
        if not self.outputs:
            self._build_for_data(_first_x(x))
        xs = self._standardize_inputs(x)
        out = self._run(self.outputs, self._feed(xs))
        return out[0] if len(out) == 1 else out

    def _result(self, values, return_dict=False):
        values = [float(v) for v in values]
        if return_dict:
            return dict(zip(self.metrics_names, values, strict=True))
        return values[0] if len(values) == 1 else values

    # ---- fit / evaluate / predict -----------------------------------------------------
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose=1, callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_freq=1, max_queue_size=10, workers=1, use_multiprocessing=False,
            **kwargs):
        """Trains for `epochs` over arrays, a `keras.utils.Sequence`, a generator (with
        `steps_per_epoch`), a `tf.data.Dataset` of (x, y[, sample_weight]) batches or a
        tf.data iterator (with `steps_per_epoch`); returns the History. `verbose=1`
        prints Keras's progress bar, `verbose=2` one line an epoch.

        Raises:
          ValueError: arrays whose shapes do not fit the model's inputs or outputs, input
            and target arrays of different lengths, a bad validation_split.
          RuntimeError: a model not compiled.
        """
        del max_queue_size, workers, use_multiprocessing
        if kwargs:
            raise TypeError(f"Unrecognized keyword arguments: {sorted(kwargs)}")
        batch_size = batch_size or 32
        source = data.make_source(x, y, sample_weight, batch_size, steps_per_epoch, epochs,
                                  "steps_per_epoch")
        self._ensure_compiled(source.peek_x())
        val = None
        if validation_data is not None:
            val = data.make_source(*data.unpack_validation(validation_data), batch_size,
                                   validation_steps, 1, "validation_steps", restart=True)
        elif validation_split:
            if not 0.0 < validation_split < 1.0:
                raise ValueError(f"`validation_split` must be in (0, 1); got {validation_split}")
            source, val = source.split(validation_split)
        return self._fit_loop(source, val, epochs, verbose, callbacks, shuffle, class_weight,
                              initial_epoch, validation_freq, batch_size)

    def _fit_loop(self, source, val, epochs, verbose, callbacks, shuffle, class_weight,
                  initial_epoch, validation_freq, batch_size):
        self.history = cbks.History()
        do_val = val is not None
        metric_names = list(self.metrics_names)
        params = {"batch_size": batch_size, "epochs": epochs, "steps": source.steps,
                  "samples": source.samples, "verbose": verbose, "do_validation": do_val,
                  "metrics": metric_names + ([f"val_{n}" for n in metric_names]
                                             if do_val else [])}
        logger = [cbks.ProgbarLogger("steps" if source.use_steps else "samples")] \
            if verbose else []
        callback_list = cbks.CallbackList(list(callbacks or []) + [self.history] + logger,
                                          self, params)
        self.stop_training = False
        train_op = self._train_op()
        K.get_session()
        if verbose and not isinstance(source, data.SequenceSource):
            _print_train_info(source, val)
        callback_list.on_train_begin()
        for epoch in range(initial_epoch, epochs):
            callback_list.on_epoch_begin(epoch)
            means = _Means()
            for step, (xb, yb, swb) in enumerate(source.batches(shuffle)):
                xs, ys, sw = self._standardize(xb, yb, swb, class_weight)
                n = len(xs[0])
                logs = {"batch": step,
                        "size": 1 if isinstance(source, data.DatasetSource) else n}
                callback_list.on_train_batch_begin(step, logs)
                out = self._run([train_op] + self._compiled["fetches"],
                                self._feed(xs, ys, sw, training=True))[1:]
                means.add(out, 1 if source.use_steps else n)
                logs.update(zip(metric_names, means.running(out), strict=True))
                callback_list.on_train_batch_end(step, logs)
                if self.stop_training:
                    break
            if source.exhausted:
                self.stop_training = True
                if not means.seen:
                    break
            epoch_logs = dict(zip(metric_names, means.values(), strict=True))
            if do_val and (epoch + 1) % validation_freq == 0:
                # Keras 1/2 (v1 graph mode) shuffles the validation samples too: the same
                # means, but the same NumPy draws, so a seeded NumPy gives Keras's batches.
                val_values = self._evaluate_source(val, shuffle=True)
                epoch_logs.update({f"val_{k}": v for k, v in
                                   zip(metric_names, val_values, strict=True)})
            source.on_epoch_end()
            callback_list.on_epoch_end(epoch, epoch_logs)
            if self.stop_training:
                break
        callback_list.on_train_end()
        return self.history

    def _evaluate_source(self, source, shuffle=False) -> list:
        means = _Means()
        for xb, yb, swb in source.batches(shuffle):
            xs, ys, sw = self._standardize(xb, yb, swb)
            means.add(self._run(self._compiled["fetches"], self._feed(xs, ys, sw)),
                      1 if source.use_steps else len(xs[0]))
        if not means.seen:
            raise ValueError("evaluate: no data to evaluate on")
        return means.values()

    def evaluate(self, x=None, y=None, batch_size=None, verbose=1, sample_weight=None,
                 steps=None, callbacks=None, max_queue_size=10, workers=1,
                 use_multiprocessing=False, return_dict=False):
        """The loss (and metrics) over the data: a float, or a list matching
        `metrics_names`. Prints nothing, whatever `verbose` (TF1 Keras shows no progress
        bar outside `fit`).

        Raises:
          ValueError: arrays that do not fit the model."""
        del callbacks, max_queue_size, workers, use_multiprocessing, verbose
        source = data.make_source(x, y, sample_weight, batch_size or 32, steps)
        self._ensure_compiled(source.peek_x())
        K.get_session()
        values = self._evaluate_source(source)
        return self._result(values, return_dict)

    def predict(self, x, batch_size=None, verbose=0, steps=None, callbacks=None,
                max_queue_size=10, workers=1, use_multiprocessing=False):
        """The outputs for `x`, batch by batch, concatenated (a list for several
        outputs)."""
        del verbose, callbacks, max_queue_size, workers, use_multiprocessing
        source = data.make_source(x, None, None, batch_size or 32, steps)
        if not self.outputs:
            self._build_for_data(source.peek_x())
        K.get_session()
        chunks = None
        for xb, _, _ in source.batches(False):
            out = self._run(self.outputs, self._feed(self._standardize_inputs(xb)))
            chunks = [[o] for o in out] if chunks is None else \
                [c + [o] for c, o in zip(chunks, out, strict=True)]
        if chunks is None:
            raise ValueError("predict: no data to predict on")
        outs = [np.concatenate(c, axis=0) for c in chunks]
        return outs[0] if len(outs) == 1 else outs

    def fit_generator(self, generator, steps_per_epoch=None, epochs=1, verbose=1,
                      callbacks=None, validation_data=None, validation_steps=None,
                      class_weight=None, shuffle=True, initial_epoch=0, **kwargs):
        """`fit` on a generator or Sequence yielding (x, y[, sample_weight])."""
        kwargs = {k: v for k, v in kwargs.items()
                  if k not in ("max_queue_size", "workers", "use_multiprocessing",
                               "validation_freq")}
        if kwargs:
            raise TypeError(f"Unrecognized keyword arguments: {sorted(kwargs)}")
        return self.fit(generator, steps_per_epoch=steps_per_epoch, epochs=epochs,
                        verbose=verbose, callbacks=callbacks, validation_data=validation_data,
                        validation_steps=validation_steps, class_weight=class_weight,
                        shuffle=shuffle, initial_epoch=initial_epoch)

    def evaluate_generator(self, generator, steps=None, **kwargs):
        return self.evaluate(generator, steps=steps, verbose=kwargs.get("verbose", 0))

    def predict_generator(self, generator, steps=None, **kwargs):
        del kwargs
        return self.predict(generator, steps=steps)

    # ---- arrays -----------------------------------------------------------------------
    def _standardize_inputs(self, x) -> list:
        return data.check_arrays(x, self.inputs, self.input_names, "input")

    def _standardize(self, x, y, sample_weight=None, class_weight=None):
        xs = self._standardize_inputs(x)
        if not self._compiled["targets"]:  # compiled without a loss: no targets
            return xs, [], []
        if y is None:
            raise ValueError("Target data is missing. Your model was compiled with a loss, "
                             "and therefore expects target data to be provided in `fit()`.")
        ys = data.check_targets(y, self.outputs, self.output_names, self._compiled["sparse"])
        data.check_lengths(xs, ys)
        sw = data.sample_weights(ys, sample_weight, class_weight, len(self.outputs),
                                 self._compiled.get("modes"), self.output_names)
        return xs, ys, sw

    # ---- weights I/O ------------------------------------------------------------------
    def save_weights(self, filepath, overwrite=True, save_format=None, options=None):
        """Saves the weights: as TensorFlow's object-based checkpoint (the model and its
        optimizer, TensorFlow's keys; `save_format="tf"`, the default for a path that does
        not end in ".h5"/".hdf5"/".keras"), or in Keras's HDF5 layout (`save_format="h5"`
        or such a path; needs h5py). See keras/weights_checkpoint.py.

        Raises:
          ValueError: an unknown `save_format`; "tf" for an HDF5 path."""
        del overwrite
        weights_checkpoint.save_weights(self, filepath, save_format, options)

    def load_weights(self, filepath, by_name=False, skip_mismatch=False, options=None):
        """Restores weights saved by `save_weights` (here or by TensorFlow's Keras): from
        an object-based checkpoint, by the model's structure, also into a model built later
        (its weights, and its optimizer's state once the train function exists, restore as
        they are created); from a checkpoint of earlier tensorflux versions by variable
        name; from an HDF5 file by layer order, or by layer name with `by_name`.

        Returns:
          The checkpoint's load status (`assert_consumed`, ...), None for HDF5.

        Raises:
          ValueError: skip_mismatch without by_name; weights that do not fit.
          NotImplementedError: by_name with a checkpoint.
          AssertionError: nothing of the model matches the checkpoint.
          NotFoundError: nothing at `filepath`."""
        del options
        return weights_checkpoint.load_weights(self, filepath, by_name, skip_mismatch)

    def __call__(self, inputs, *args, **kwargs):
        outputs = super().__call__(inputs, *args, **kwargs)
        checkpoint_restore.run_streaming_restores(graph_lib.get_default_graph())
        return outputs

    def save(self, filepath, overwrite=True, include_optimizer=True, save_format=None,
             **kwargs):
        """Saves the whole model (config, weights, compile arguments) in Keras's HDF5
        layout (needs h5py); `tf.keras.models.load_model` reads it back.

        Raises:
          ValueError: save_format "tf" (SavedModel: use tf.saved_model's builder).
          NotImplementedError: a subclassed model."""
        if save_format == "tf":
            raise ValueError("tensorflux.keras: save_format='tf' is not supported; save "
                             "an HDF5 file, or export with tf.saved_model.simple_save")
        saving.save_model(self, filepath, overwrite, include_optimizer)

    def get_config(self) -> dict:
        return saving.model_config(self)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return saving.model_from_config(
            {"class_name": "Sequential" if cls.__name__ == "Sequential" else "Functional",
             "config": config}, custom_objects)

    def to_json(self, **kwargs) -> str:
        """The model's config as Keras's JSON (`model_from_json` reads it)."""
        return saving.model_to_json(self, **kwargs)

    def reset_metrics(self) -> None:
        """Per-batch metrics keep no state here: nothing to reset."""

    def build(self, input_shape=None) -> None:
        """Builds a subclassed or Sequential model for inputs of `input_shape` (with the
        batch axis)."""
        if self._is_graph_network or getattr(self, "_in_call", False):
            self.built = True  # (the first call of a subclassed model builds it)
            return
        if input_shape is None:
            raise ValueError("You must provide an `input_shape` argument.")
        from tensorflux.keras.engine.input_layer import Input

        shapes = input_shape if isinstance(input_shape, list) else [input_shape]
        inputs = [Input(batch_shape=tuple(s)) for s in shapes]
        self._build_graph_from_inputs(inputs[0] if len(inputs) == 1 else inputs)
        checkpoint_restore.run_streaming_restores(graph_lib.get_default_graph())


def _flat_list(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _first_x(x):
    if isinstance(x, dict):
        return list(x.values())
    return x


def _shape_of(a) -> tuple:
    if isinstance(a, Tensor):
        return tuple(a.shape.as_list())
    return tuple(np.shape(a))


def _dtype_of(a):
    if isinstance(a, Tensor):
        return a.dtype.base_dtype.name
    dt = np.asarray(a).dtype
    return "float32" if dt == np.float64 else dt.name


def _is_sparse(fn) -> bool:
    return fn in _SPARSE or isinstance(fn, losses_lib.SparseCategoricalCrossentropy)


def _check_loss_names(loss) -> None:
    items = loss.values() if isinstance(loss, dict) else \
        loss if isinstance(loss, (list, tuple)) else [loss]
    for item in items:
        losses_lib.get(item)


_MODES = (None, "samplewise", "temporal")


def _check_sample_weight_mode(mode) -> None:
    """compile's sample_weight_mode: None, "temporal" (or "samplewise"), or a list or dict
    of them per output."""
    values = mode.values() if isinstance(mode, dict) else \
        mode if isinstance(mode, (list, tuple)) else [mode]
    for m in values:
        if m not in _MODES:
            raise ValueError(f"\"sample_weight_mode should be None or \"temporal\". Found: {m}")


def _modes(mode, names) -> list:
    """The sample_weight_mode of each output (None for an output a dict leaves out)."""
    return _per_output(mode, names, "sample_weight_mode", missing=None)


def _sample_weights_placeholder(out, mode, name):
    """The weights fed for an output: one per sample, or per sample and timestep
    ("temporal"); ones when none are fed."""
    temporal = mode == "temporal"
    if temporal and out.shape.ndims is not None and out.shape.ndims < 3:
        raise ValueError(f"Timestep-wise sample weighting (use of sample_weight_mode="
                         f"\"temporal\") is restricted to outputs that are at least 3D, i.e. "
                         f"that have a time dimension; output {name} has shape {out.shape}.")
    lead = 2 if temporal else 1
    return array_ops.placeholder_with_default(
        array_ops.ones(array_ops.shape(out)[:lead], out.dtype.base_dtype),
        shape=[None] * lead, name=f"{name}_sample_weights")


def _weighted(values, sw, temporal: bool):
    """The loss values times their weights, broadcast over the values' trailing axes."""
    n, lead = values.shape.ndims, 2 if temporal else 1
    if n == lead:
        return values * sw
    if n < lead:
        raise ValueError(f"A loss of shape {values.shape} cannot take timestep-wise sample "
                         "weights: it has no time dimension")
    return values * array_ops.reshape(sw, joining_ops.concat(
        [array_ops.shape(sw), [1] * (n - lead)], 0))


def _per_output(value, names, what, missing=1.0):
    """`value` (one for all, a list, or a dict by output name, `missing` for names it
    leaves out) as one entry per output."""
    if isinstance(value, dict):
        unknown = set(value) - set(names)
        if unknown:
            raise ValueError(f"Unknown entries in {what} dictionary: {sorted(unknown)}. Only "
                             f"expected following keys: {names}")
        if what == "loss":
            missing = [n for n in names if n not in value]
            if missing:
                raise ValueError(f"Output {missing[0]} missing from {what} dictionary. We "
                                 f"assume this was done on purpose. Give a loss for every "
                                 "output.")
        return [value.get(n, missing) for n in names]
    if isinstance(value, (list, tuple)):
        if len(value) != len(names):
            raise ValueError(f"When passing a list as {what}, it should have one entry per "
                             f"model output. The model has {len(names)} outputs, but you "
                             f"passed {what}={value}")
        return list(value)
    return [value] * len(names)


def _per_output_metrics(metrics, names):
    if metrics is None:
        return [[] for _ in names]
    if isinstance(metrics, dict):
        out = []
        for n in names:
            m = metrics.get(n, [])
            out.append(list(m) if isinstance(m, (list, tuple)) else [m])
        return out
    if not isinstance(metrics, (list, tuple)):
        raise TypeError(f"Type of `metrics` argument not understood. Expected a list or "
                        f"dictionary, found: {metrics}")
    return [list(metrics) for _ in names]


class _Means:
    """What fit/evaluate report from the batches' fetches [loss, (sum, weight) per
    metric]: the loss averaged over the batches weighted by their sizes, each metric its
    summed values over its summed weights (Keras's stateful means)."""

    def __init__(self, first=None):
        self.loss, self.seen, self.sums = 0.0, 0, None
        if first is not None:
            self.add(first, 1)

    def add(self, out, n) -> None:
        values = np.asarray([float(v) for v in out], np.float64)
        self.loss += values[0] * n
        self.seen += n
        self.sums = values[1:] if self.sums is None else self.sums + values[1:]

    def _ratios(self) -> list:
        num, den = self.sums[0::2], self.sums[1::2]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(den != 0, num / np.where(den != 0, den, 1.0), 0.0).tolist()

    def running(self, out) -> list:
        """The values after this batch: its loss, the metrics so far."""
        return [float(out[0])] + self._ratios()

    def values(self) -> list:
        return [float(self.loss / max(self.seen, 1))] + self._ratios()


def _mask_like(mask, values):
    """`mask` as a float tensor of `values`'s rank (a trailing axis squeezed or added)."""
    m = math_ops.cast(mask, values.dtype)
    n, k = values.shape.ndims, m.shape.ndims
    if n is not None and k is not None:
        if k == n + 1:
            m = array_ops.squeeze(m, axis=[-1])
        elif k == n - 1:
            m = array_ops.expand_dims(m, -1)
    return m


def _metric(metric, loss_fn, target, out, mask=None):
    """(name, (weighted sum, weight) tensors of the batch) for one metric of one output;
    the weights are the output's mask, or ones."""
    if metric in ("accuracy", "acc"):
        metric = "acc"  # TF1 Keras names both 'acc'
        if _is_sparse(loss_fn):
            fn = metrics_lib.sparse_categorical_accuracy
        elif loss_fn is losses_lib.binary_crossentropy or out.shape.as_list()[-1] == 1:
            fn = metrics_lib.binary_accuracy
        else:
            fn = metrics_lib.categorical_accuracy
        name = metric
    elif metric in ("crossentropy", "ce"):
        metric = "ce"
        fn, name = (losses_lib.sparse_categorical_crossentropy if _is_sparse(loss_fn) else
                    losses_lib.categorical_crossentropy), metric
    elif isinstance(metric, metrics_lib.MeanMetricWrapper):
        fn, name = metric.fn, metric.name
    elif isinstance(metric, metrics_lib.Metric):
        raise ValueError(f"tensorflux.keras: metric {metric.name} cannot be used in compile "
                         "(only mean-of-a-function metrics)")
    elif isinstance(metric, str):
        fn, name = metrics_lib.get(metric), metric
    elif callable(metric):
        fn, name = metric, getattr(metric, "__name__", type(metric).__name__)
    else:
        raise ValueError(f"Could not interpret metric identifier: {metric}")
    with graph_lib.name_scope(f"metrics/{name}"):
        values = math_ops.cast(fn(target, out), K.floatx())
        if mask is None:
            return name, (reduction_ops.reduce_sum(values),
                          math_ops.cast(array_ops.size(values), K.floatx()))
        w = _mask_like(mask, values) * array_ops.ones_like(values)
        return name, (reduction_ops.reduce_sum(values * w), reduction_ops.reduce_sum(w))


def _print_train_info(source, val) -> None:
    """Keras's "Train on 40 samples, validate on 10 samples" (steps for datasets)."""
    if isinstance(source, data.DatasetSource):
        unit, count = "steps", source.steps
        val_count = None if val is None else (val.steps if val.use_steps else val.samples)
    else:
        unit, count = "samples", source.samples
        val_count = None if val is None else (val.samples or val.steps)
    msg = f"Train on {count} {unit}"
    if val_count:
        msg += f", validate on {val_count} {unit}"
    print(msg)
