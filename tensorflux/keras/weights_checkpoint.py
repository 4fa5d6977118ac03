"""`Model.save_weights` / `load_weights` as TensorFlow's Keras has them (tf_keras, TF1
graph mode).

Formats: "h5" (Keras's HDF5 layout, saving.py) for a path ending in ".h5", ".hdf5" or
".keras" or `save_format="h5"`; otherwise "tf": an object-based checkpoint whose root is the
model itself (train/checkpoint.py; no save counter), so its keys are TensorFlow's
("layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE", a subclassed model's attribute
names, the compiled optimizer's "optimizer/iter", hyperparameters and slots), recorded in
the directory's `checkpoint` state file as Keras records it (`tf.train.latest_checkpoint`
finds it). With TENSORFLUX_CHECKPOINT_FORMAT=tensorflow the files are TensorFlow's tensor
bundle and TensorFlow's `load_weights` reads them; TensorFlow's files are read either way.

`load_weights` tells the formats apart as Keras does: an HDF5 path; else a readable
checkpoint at the prefix; else a SavedModel directory's variables; else an HDF5 file. An
object-based checkpoint is restored as TensorFlow restores it in graph mode: what exists
now at once, in the Keras session, and what the model creates later -- its weights when an
unbuilt model is built, its optimizer's iterations, hyperparameters and slots when the
train function is made -- as soon as it exists (a streaming restore,
train/checkpoint_restore.py); the load status comes back (`assert_consumed` & co.).
Checkpoints of earlier tensorflux versions (tf.train.Saver's, keyed by variable name, with
no object graph) still load, by the names of the model's weights.
"""

from __future__ import annotations

import os

from tensorflux.checkpoint import open_checkpoint
from tensorflux.framework import errors
from tensorflux.keras import backend as K
from tensorflux.keras import saving
from tensorflux.saved_model import constants as saved_model_constants
from tensorflux.saved_model import loader as saved_model_loader
from tensorflux.train import checkpoint as checkpoint_lib
from tensorflux.train import checkpoint_management, checkpoint_restore

__all__: list[str] = []


def save_format(filepath: str, fmt) -> str:
    """"tf" or "h5": what `save_weights(filepath, save_format=fmt)` writes.

    Raises:
      ValueError: an unknown format; "tf" for an HDF5 path.
    """
    is_h5 = saving.is_hdf5_path(filepath)
    if fmt is None:
        return "h5" if is_h5 else "tf"
    user = str(fmt).lower().strip()
    if user in ("tensorflow", "tf"):
        fmt = "tf"
    elif user in ("hdf5", "h5", "keras"):
        fmt = "h5"
    else:
        raise ValueError(f"Unknown format. Received: `save_format`={fmt}. Was expecting one "
                         'of {"tf", "h5"}.')
    if fmt == "tf" and is_h5:
        raise ValueError(f'save_weights got save_format="tf"/"tensorflow", but the filepath '
                         f'({filepath}) looks like an HDF5 file. Omit the ".h5"/".keras" when '
                         "saving in TensorFlow format.")
    return fmt


def save_weights(model, filepath, fmt=None, options=None) -> None:
    """Writes `model`'s weights (and its optimizer's state, in the "tf" format): see the
    module docstring."""
    filepath = _path(filepath)
    if save_format(filepath, fmt) == "h5":
        saving.save_weights_hdf5(model, filepath)
        return
    session = K.get_session()  # initializes what is not yet
    writer = model.__dict__.get("_weights_writer")
    if writer is None:
        writer = model.__dict__["_weights_writer"] = checkpoint_lib.ObjectGraphWriter(model)
    writer.write(filepath, session=session, options=options)
    checkpoint_management.update_checkpoint_state(
        os.path.dirname(filepath), filepath, all_model_checkpoint_paths=[filepath],
        save_relative_paths=True)


def detect_format(filepath: str) -> tuple[str, str]:
    """(path to read, "tf" or "h5") for `load_weights(filepath)`.

    Raises:
      NotFoundError: nothing at `filepath`.
      ValueError: a SavedModel directory without readable variables.
    """
    if saving.is_hdf5_path(filepath):
        return filepath, "h5"
    if _readable_checkpoint(filepath):
        return filepath, "tf"
    if saved_model_loader.contains_saved_model(filepath):
        variables = os.path.join(filepath, saved_model_constants.VARIABLES_DIRECTORY,
                                 saved_model_constants.VARIABLES_FILENAME)
        if os.path.exists(variables + ".index") and _readable_checkpoint(variables):
            return variables, "tf"
        raise ValueError(f"Unable to load weights. filepath {filepath} appears to be a "
                         "SavedModel directory, but checkpoint either doesn't exist, or is "
                         "incorrectly formatted.")
    return filepath, "h5"


def _readable_checkpoint(prefix: str) -> bool:
    """Whether a checkpoint is at `prefix`; False for other files there (TensorFlow's
    reader fails with DataLossError on them), NotFoundError when nothing is there."""
    try:
        with open_checkpoint(prefix):
            return True
    except errors.NotFoundError:
        if os.path.exists(prefix):
            return False
        raise
    except errors.DataLossError:
        return False


def load_weights(model, filepath, by_name=False, skip_mismatch=False):
    """Restores `model`'s weights from `filepath` (see the module docstring).

    Returns:
      The load status of an object-based checkpoint (CheckpointLoadStatus), a
      NameBasedSaverStatus for a name-keyed one, None for an HDF5 file.

    Raises:
      ValueError: skip_mismatch without by_name; weights that do not fit (HDF5); an
        unbuilt subclassed model and an HDF5 file; an unbuilt model and a name-keyed
        checkpoint.
      NotImplementedError: by_name with a checkpoint.
      AssertionError: nothing of the model matched the checkpoint.
      NotFoundError: nothing at `filepath`.
    """
    if skip_mismatch and not by_name:
        raise ValueError("When calling model.load_weights, skip_mismatch can only be set to "
                         "True when by_name is True.")
    filepath, fmt = detect_format(_path(filepath))
    if fmt == "h5":
        if not model._is_graph_network and not model.built:
            raise ValueError("Unable to load weights saved in HDF5 format into a subclassed "
                             "Model which has not created its variables yet. Call the Model "
                             "first, then load the weights.")
        saving.load_weights_hdf5(model, filepath, by_name, skip_mismatch)
        return None
    if by_name:
        raise NotImplementedError("Weights may only be loaded based on topology into Models "
                                  "when loading TensorFlow-formatted weights (got "
                                  "by_name=True to load_weights).")
    session = K.get_session()
    with session.graph.as_default():
        status = checkpoint_restore.restore(model, filepath)
        if isinstance(status, checkpoint_restore.NameBasedSaverStatus):
            if not model.weights:
                raise ValueError(
                    f"The checkpoint at {filepath} is keyed by variable names (tf.train."
                    "Saver's, as tensorflux's save_weights wrote before it wrote object-"
                    "based checkpoints): build the model before loading it, its weights "
                    "are restored by their names.")
            status = _NameBasedWeightsStatus(model, filepath)
            status.run_restore_ops(session)
            return status
        previous = model.__dict__.get("_weights_load_status")
        if previous is not None:
            checkpoint_restore.stop_streaming(previous)
        model.__dict__["_weights_load_status"] = status
        checkpoint_restore.streaming_restore(status, session)
        status.assert_nontrivial_match()
    return status


class _NameBasedWeightsStatus(checkpoint_restore.NameBasedSaverStatus):
    """A checkpoint of tf.train.Saver keyed by variable name (what tensorflux's
    `save_weights` wrote before it wrote object-based checkpoints): the model's weights
    restore by their names, its optimizer's state is not there."""

    def _variables(self) -> list:
        return list(self._root.weights)


def _path(filepath) -> str:
    filepath = os.fspath(filepath)
    return filepath.decode() if isinstance(filepath, bytes) else filepath
