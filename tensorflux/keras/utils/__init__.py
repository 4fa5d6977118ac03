"""`tf.keras.utils`: to_categorical, normalize, Sequence, Progbar, get_file (local cache
only), custom_object_scope, plot_model (not available)."""

from __future__ import annotations

import os
import sys
import time

import numpy as np

__all__ = ["to_categorical", "normalize", "Sequence", "Progbar", "get_file",
           "custom_object_scope", "CustomObjectScope", "get_custom_objects", "plot_model",
           "print_summary"]

_CUSTOM_OBJECTS: dict = {}


def to_categorical(y, num_classes=None, dtype="float32"):
    """One-hot rows for integer labels `y` (a trailing axis of size 1 is dropped).

    Raises:
      ValueError: a label outside [0, num_classes)."""
    y = np.array(y, dtype="int")
    shape = y.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    y = y.ravel()
    if num_classes is None:
        num_classes = int(np.max(y)) + 1 if y.size else 0
    if y.size and (y.min() < 0 or y.max() >= num_classes):
        raise ValueError(f"to_categorical: labels must be in [0, {num_classes}); got "
                         f"{y.min()}..{y.max()}")
    out = np.zeros((y.shape[0], num_classes), dtype=dtype)
    out[np.arange(y.shape[0]), y] = 1
    return out.reshape(shape + (num_classes,))


def normalize(x, axis=-1, order=2):
    """`x` divided by its `order`-norm along `axis` (zero norms left as they are)."""
    norms = np.atleast_1d(np.linalg.norm(x, order, axis))
    norms[norms == 0] = 1
    return x / np.expand_dims(norms, axis)


class Sequence:
    """A dataset of batches: subclasses define `__len__` (batches per epoch) and
    `__getitem__(index)` (a batch (x, y)); `fit` calls `on_epoch_end` after each epoch."""

    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def on_epoch_end(self):
        pass

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]


def get_file(fname=None, origin=None, untar=False, md5_hash=None, file_hash=None,
             cache_subdir="datasets", hash_algorithm="auto", extract=False,
             archive_format="auto", cache_dir=None):
    """The path of `fname` in the Keras cache (`cache_dir`, $KERAS_HOME, ~/.keras) under
    `cache_subdir`. tensorflux never downloads.

    Raises:
      FileNotFoundError: the file is not in the cache (the message says where to put it
        and where it comes from)."""
    del untar, md5_hash, file_hash, hash_algorithm, extract, archive_format
    if fname is None:
        fname = os.path.basename(origin or "")
    base = cache_dir or os.environ.get("KERAS_HOME") or os.path.join(
        os.path.expanduser("~"), ".keras")
    path = os.path.join(base, cache_subdir, fname)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} is not in the Keras cache and tensorflux does not "
                                f"download files; fetch {origin or fname} yourself and put "
                                "it there.")
    return path


class CustomObjectScope:
    """Makes `custom_objects` visible to the `get`/`deserialize` functions' callers."""

    def __init__(self, *args):
        self.custom_objects = args
        self.backup = None

    def __enter__(self):
        self.backup = dict(_CUSTOM_OBJECTS)
        for objects in self.custom_objects:
            _CUSTOM_OBJECTS.update(objects)
        return self

    def __exit__(self, *args):
        _CUSTOM_OBJECTS.clear()
        _CUSTOM_OBJECTS.update(self.backup)


def custom_object_scope(*args):
    return CustomObjectScope(*args)


def get_custom_objects() -> dict:
    return _CUSTOM_OBJECTS


def plot_model(model, to_file="model.png", **kwargs):
    raise ImportError("plot_model needs pydot and graphviz, which tensorflux does not use.")


def print_summary(model, line_length=None, positions=None, print_fn=None):
    model.summary(line_length, positions, print_fn)




class Progbar:
    """Keras's progress bar: `update(current, values)` redraws one line ("16/40
    [===========>......] - ETA: 0s - loss: 1.4591 - acc: 0.3125") at most every
    `interval` seconds and on the final update; `verbose=2` prints only the final line
    ("40/40 - 0s - loss: ... - 41ms/epoch - 1ms/sample").

    Values named in `stateful_metrics` are shown as given; the others are averaged over
    the units seen, each update weighted by the units it adds. The line is redrawn in
    place with backspaces and a carriage return, as Keras does on a POSIX system.
    """

    def __init__(self, target, width=30, verbose=1, interval=0.05, stateful_metrics=None,
                 unit_name="step"):
        self.target, self.width, self.verbose = target, width, verbose
        self.interval, self.unit_name = interval, unit_name
        self.stateful_metrics = set(stateful_metrics or ())
        self._total_width = 0
        self._seen_so_far = 0
        self._values: dict = {}
        self._values_order: list = []
        self._start = time.time()
        self._last_update = 0.0
        self._time_at_epoch_start = self._start
        self._time_at_epoch_end = None
        self._time_after_first_step = None

    def update(self, current, values=None, finalize=None) -> None:
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        for k, v in values or []:
            if k not in self._values_order:
                self._values_order.append(k)
            if k in self.stateful_metrics:
                self._values[k] = [v, 1]
            else:
                base = max(current - self._seen_so_far, 1)
                total = self._values.setdefault(k, [0.0, 0])
                total[0] += v * base
                total[1] += base
        self._seen_so_far = current
        now = time.time()
        info = f" - {now - self._start:.0f}s"
        if current == self.target:
            self._time_at_epoch_end = now
        if self.verbose == 1:
            if now - self._last_update < self.interval and not finalize:
                return
            self._draw(current, now, info, finalize)
        elif self.verbose == 2 and finalize:
            self._final_line(current, now, info)
        self._last_update = now

    def _draw(self, current, now, info, finalize) -> None:
        prev_width = self._total_width
        message = "\b" * prev_width + "\r"
        if self.target is not None:
            digits = int(np.log10(self.target)) + 1
            bar = f"{current:{digits}d}/{self.target} ["
            filled = int(self.width * float(current) / self.target)
            if filled > 0:
                bar += "=" * (filled - 1) + (">" if current < self.target else "=")
            bar += "." * (self.width - filled) + "]"
        else:
            bar = f"{current:7d}/Unknown"
        self._total_width = len(bar)
        message += bar
        per_unit = self._step_duration(current, now)
        if self.target is None or finalize:
            info += _format_time(per_unit, self.unit_name)
        else:
            eta = per_unit * (self.target - current)
            if eta > 3600:
                text = f"{int(eta // 3600)}:{int((eta % 3600) // 60):02d}:{int(eta % 60):02d}"
            elif eta > 60:
                text = f"{int(eta // 60)}:{int(eta % 60):02d}"
            else:
                text = f"{int(eta)}s"
            info = f" - ETA: {text}"
        for k in self._values_order:
            avg = self._values[k][0] / max(1, self._values[k][1])
            info += f" - {k}: {avg:.4f}" if abs(avg) > 1e-3 else f" - {k}: {avg:.4e}"
        self._total_width += len(info)
        if prev_width > self._total_width:
            info += " " * (prev_width - self._total_width)
        if finalize:
            info += "\n"
        sys.stdout.write(message + info)
        sys.stdout.flush()

    def _final_line(self, current, now, info) -> None:
        digits = int(np.log10(self.target)) + 1
        line = f"{current:{digits}d}/{self.target}" + info
        for k in self._values_order:
            avg = self._values[k][0] / max(1, self._values[k][1])
            line += f" - {k}: {avg:.4f}" if avg > 1e-3 else f" - {k}: {avg:.4e}"
        if self._time_at_epoch_end:
            per_epoch = self._time_at_epoch_end - self._time_at_epoch_start
            self._time_at_epoch_start, self._time_at_epoch_end = now, None
            line += " -" + _format_time(per_epoch, "epoch")
            line += " -" + _format_time(per_epoch / self.target, self.unit_name) + "\n"
        sys.stdout.write(line)
        sys.stdout.flush()

    def _step_duration(self, current, now) -> float:
        """Seconds a unit, leaving the first step out once there are more."""
        if not current:
            return 0.0
        if self._time_after_first_step is not None and current > 1:
            per_unit = (now - self._time_after_first_step) / (current - 1)
        else:
            per_unit = (now - self._start) / current
        if current == 1:
            self._time_after_first_step = now
        return per_unit

    def add(self, n, values=None) -> None:
        self.update(self._seen_so_far + n, values)


def _format_time(seconds, unit) -> str:
    if seconds >= 1 or seconds == 0:
        return f" {seconds:.0f}s/{unit}"
    if seconds >= 1e-3:
        return f" {seconds * 1e3:.0f}ms/{unit}"
    return f" {seconds * 1e6:.0f}us/{unit}"
