"""`tf.keras.callbacks`: Callback, History, BaseLogger-free logging (the logs `fit`
passes are already epoch means), ProgbarLogger (what `fit(verbose=1 or 2)` prints),
EarlyStopping, ModelCheckpoint, LambdaCallback, LearningRateScheduler,
TerminateOnNaN, CSVLogger."""

from __future__ import annotations

import csv
import math

import numpy as np

from tensorflux.keras import backend as K

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "EarlyStopping",
           "ModelCheckpoint",
           "LambdaCallback", "LearningRateScheduler", "TerminateOnNaN", "CSVLogger"]


class Callback:
    """Hooks `fit`, `evaluate` and `predict` call; `self.model` and `self.params` are set
    before training starts."""

    def __init__(self):
        self.model = None
        self.params = {}
        self.validation_data = None

    def set_params(self, params) -> None:
        self.params = params

    def set_model(self, model) -> None:
        self.model = model

    def on_epoch_begin(self, epoch, logs=None): ...
    def on_epoch_end(self, epoch, logs=None): ...
    def on_batch_begin(self, batch, logs=None): ...
    def on_batch_end(self, batch, logs=None): ...
    def on_train_begin(self, logs=None): ...
    def on_train_end(self, logs=None): ...
    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs)

    def on_test_begin(self, logs=None): ...
    def on_test_end(self, logs=None): ...
    def on_test_batch_begin(self, batch, logs=None): ...
    def on_test_batch_end(self, batch, logs=None): ...
    def on_predict_begin(self, logs=None): ...
    def on_predict_end(self, logs=None): ...
    def on_predict_batch_begin(self, batch, logs=None): ...
    def on_predict_batch_end(self, batch, logs=None): ...


class CallbackList:
    """Calls each hook on every callback in order."""

    def __init__(self, callbacks, model, params):
        self.callbacks = list(callbacks)
        for c in self.callbacks:
            c.set_model(model)
            c.set_params(params)

    def __getattr__(self, hook):
        if not hook.startswith("on_"):
            raise AttributeError(hook)

        takes_index = not hook.endswith(("_begin", "_end")) or "batch" in hook or \
            "epoch" in hook

        def call(*args, **kwargs):
            if "logs" not in kwargs and len(args) < (2 if takes_index else 1):
                args = args + ({},)
            for c in self.callbacks:
                getattr(c, hook)(*args, **kwargs)

        return call


class ProgbarLogger(Callback):
    """Prints `fit`'s progress as TF1 Keras does: "Epoch i/n" (when n > 1), then a
    `utils.Progbar` over the samples (`count_mode="samples"`) or steps, updated after
    each batch with the batch logs (verbose 1) and closed with the epoch logs.

    The loss is averaged over the epoch by the bar; the model's metrics (stateful in
    Keras) are shown as logged. Counting steps, Keras's batch logs keep their "batch" and
    "size" entries, and the bar shows them too.

    Raises:
      ValueError: an unknown count_mode."""

    def __init__(self, count_mode="samples", stateful_metrics=None):
        super().__init__()
        if count_mode not in ("samples", "steps"):
            raise ValueError(f"Unknown `count_mode`: {count_mode}. Expected values are "
                             '["samples", "steps"]')
        self.use_steps = count_mode == "steps"
        self.stateful_metrics = set(stateful_metrics or ())
        self.seen, self.progbar, self.target, self.verbose, self.epochs = 0, None, None, 1, 1

    def set_params(self, params) -> None:
        super().set_params(params)
        self.verbose, self.epochs = params["verbose"], params["epochs"]
        self.target = params.get("steps") if self.use_steps else params.get("samples")
        if self.model is not None:
            self.stateful_metrics |= set(getattr(self.model, "metrics_names", [])[1:])

    def on_epoch_begin(self, epoch, logs=None):
        from tensorflux.keras.utils import Progbar

        self.seen = 0
        self.progbar = Progbar(self.target, verbose=self.verbose,
                               stateful_metrics=self.stateful_metrics,
                               unit_name="step" if self.use_steps else "sample")
        if self.verbose and self.epochs > 1:
            print(f"Epoch {epoch + 1}/{self.epochs}")

    def on_train_batch_end(self, batch, logs=None):
        logs = dict(logs or {})
        if self.use_steps:
            self.seen = batch + 1
        else:
            size = logs.pop("size", 0)
            logs.pop("batch", None)
            self.seen += size
        if self.verbose == 1:
            self.progbar.update(self.seen, list(logs.items()), finalize=False)

    def on_epoch_end(self, epoch, logs=None):
        if self.target is None:
            self.target = self.seen
            self.progbar.target = self.target
        self.progbar.update(self.target, list((logs or {}).items()), finalize=True)


class History(Callback):
    """Records each epoch's logs: `history[key]` is a list with one value per epoch."""

    def __init__(self):
        super().__init__()
        self.epoch, self.history = [], {}

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)


def _monitor_op(mode, monitor):
    if mode not in ("auto", "min", "max"):
        mode = "auto"
    if mode == "max" or (mode == "auto" and ("acc" in monitor or monitor.startswith("fmeasure"))):
        return np.greater, 1
    return np.less, -1


class EarlyStopping(Callback):
    """Stops training when `monitor` has not improved by `min_delta` for `patience`
    epochs (optionally restoring the best weights)."""

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto",
                 baseline=None, restore_best_weights=False, start_from_epoch=0):
        super().__init__()
        self.monitor, self.patience, self.verbose = monitor, patience, verbose
        self.baseline, self.restore_best_weights = baseline, restore_best_weights
        self.start_from_epoch = start_from_epoch
        self.monitor_op, sign = _monitor_op(mode, monitor)
        self.min_delta = abs(min_delta) * sign
        self.wait = self.stopped_epoch = 0
        self.best = self.best_weights = None

    def on_train_begin(self, logs=None):
        self.wait, self.stopped_epoch, self.best_weights = 0, 0, None
        self.best = np.inf if self.monitor_op is np.less else -np.inf

    def on_epoch_end(self, epoch, logs=None):
        current = (logs or {}).get(self.monitor)
        if current is None or epoch < self.start_from_epoch:
            if current is None:
                print(f"Early stopping conditioned on metric `{self.monitor}` which is not "
                      f"available. Available metrics are: {','.join(logs or {})}")
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self.monitor_op(current - self.min_delta, self.best):
            self.best = current
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self.monitor_op(current - self.min_delta,
                                                        self.baseline):
                self.wait = 0
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")


class ModelCheckpoint(Callback):
    """Saves the model after epochs: every epoch, or only when `monitor` improves
    (`save_best_only`); the whole model (`model.save`: Keras's HDF5 file, as TF1 Keras
    writes whatever the extension), or its weights with `save_weights_only`. `filepath`
    may hold format fields ("w.{epoch:02d}-{val_loss:.2f}").

    Raises:
      ValueError: save_freq other than "epoch"."""

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False,
                 save_weights_only=False, mode="auto", save_freq="epoch", period=1,
                 **kwargs):
        super().__init__()
        del kwargs
        if save_freq != "epoch":
            raise ValueError("tensorflux.keras: ModelCheckpoint(save_freq) other than "
                             "'epoch' is not supported")
        self.filepath, self.monitor, self.verbose = str(filepath), monitor, verbose
        self.save_best_only, self.period = save_best_only, period
        self.save_weights_only = save_weights_only
        self.monitor_op, _ = _monitor_op(mode, monitor)
        self.best = np.inf if self.monitor_op is np.less else -np.inf
        self._since = 0

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        self._since += 1
        if self._since < self.period:
            return
        self._since = 0
        path = self.filepath.format(epoch=epoch + 1, **logs)
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None or not self.monitor_op(current, self.best):
                return
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: {self.monitor} improved from {self.best:.5f} to "
                      f"{current:.5f}, saving model to {path}")
            self.best = current
        if self.save_weights_only:
            self.model.save_weights(path)
        else:
            self.model.save(path)


class LambdaCallback(Callback):
    """A callback from functions: on_epoch_begin/end(epoch, logs), on_batch_begin/end(
    batch, logs), on_train_begin/end(logs)."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_batch_begin=None,
                 on_batch_end=None, on_train_begin=None, on_train_end=None, **kwargs):
        super().__init__()
        self.__dict__.update(kwargs)
        for name, fn in (("on_epoch_begin", on_epoch_begin), ("on_epoch_end", on_epoch_end),
                         ("on_batch_begin", on_batch_begin), ("on_batch_end", on_batch_end),
                         ("on_train_begin", on_train_begin), ("on_train_end", on_train_end)):
            if fn is not None:
                setattr(self, name, fn)


class LearningRateScheduler(Callback):
    """Sets the optimizer's learning rate to `schedule(epoch)` (or `schedule(epoch, lr)`)
    at each epoch's start.

    Raises:
      ValueError: an optimizer without a learning-rate variable, or a schedule value that
        is not a float."""

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch, logs=None):
        optimizer = self.model.optimizer
        if not hasattr(optimizer, "lr"):
            raise ValueError('Optimizer must have a "lr" attribute.')
        try:
            lr = self.schedule(epoch, float(K.get_value(optimizer.lr)))
        except TypeError:
            lr = self.schedule(epoch)
        if not isinstance(lr, (float, np.floating, int, np.integer)):
            raise ValueError('The output of the "schedule" function should be float.')
        K.set_value(optimizer.lr, float(lr))
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to {lr}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = float(K.get_value(self.model.optimizer.lr))


class TerminateOnNaN(Callback):
    """Stops training when a batch's loss is NaN or infinite."""

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and (math.isnan(loss) or math.isinf(loss)):
            print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True


class CSVLogger(Callback):
    """Writes each epoch's logs as a CSV row."""

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename, self.sep, self.append = filename, separator, append
        self._file = self._writer = None

    def on_train_begin(self, logs=None):
        self._file = open(self.filename, "a" if self.append else "w", newline="")  # noqa: SIM115
        self._writer = None

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self._writer is None:
            self._writer = csv.DictWriter(self._file, fieldnames=["epoch"] + sorted(logs),
                                          delimiter=self.sep)
            if not self.append:
                self._writer.writeheader()
        self._writer.writerow({"epoch": epoch, **logs})
        self._file.flush()

    def on_train_end(self, logs=None):
        if self._file is not None:
            self._file.close()
            self._file = None
