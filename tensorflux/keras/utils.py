"""`tf.keras.utils`: to_categorical, normalize, Sequence, get_file (local cache only),
custom_object_scope, plot_model (not available)."""

from __future__ import annotations

import os

import numpy as np

__all__ = ["to_categorical", "normalize", "Sequence", "get_file", "custom_object_scope",
           "CustomObjectScope", "get_custom_objects", "plot_model", "print_summary"]

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


