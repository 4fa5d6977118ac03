"""`tf.saved_model.signature_def_utils`: SignatureDefs for TensorFlow Serving's Predict,
Classify and Regress APIs, and their validation."""

from __future__ import annotations

import os

from google.protobuf import text_format

from tensorflux.checkpoint import files
from tensorflux.framework import tensor_util
from tensorflux.framework.operation import Tensor
from tensorflux.protos import meta_graph_pb2, types_pb2
from tensorflux.saved_model import constants, loader, utils
from tensorflux.saved_model import signature_constants as sc

# (MethodNameUpdater is public here but, as in TensorFlow, not in tf.saved_model itself.)
__all__ = ["build_signature_def", "classification_signature_def", "is_valid_signature",
           "predict_signature_def", "regression_signature_def"]


def build_signature_def(inputs=None, outputs=None, method_name=None, defaults=None):
    """A SignatureDef from dicts of TensorInfo protos, a method name and default values
    (a dict of input names to values)."""
    sig = meta_graph_pb2.SignatureDef()
    for key, info in (inputs or {}).items():
        sig.inputs[key].CopyFrom(info)
    for key, info in (outputs or {}).items():
        sig.outputs[key].CopyFrom(info)
    if method_name is not None:
        sig.method_name = method_name
    for key, value in (defaults or {}).items():
        sig.defaults[key].CopyFrom(tensor_util.make_tensor_proto(value))
    return sig


def _examples_info(examples, what: str):
    if examples is None:
        raise ValueError(f"{what} `examples` cannot be None.")
    if not isinstance(examples, Tensor):
        raise ValueError(f"Expected {what.lower()} `examples` to be of type Tensor. Found "
                         f"`examples` of type {type(examples)}.")
    info = utils.build_tensor_info(examples)
    if info.dtype != types_pb2.DT_STRING:
        raise ValueError(f"{what} input tensors must be of type string. Found tensors with "
                         f"type {info.dtype}.")
    return info


def regression_signature_def(examples, predictions):
    """The Regress signature: serialized tf.Examples in, float predictions out.

    Raises:
      ValueError: a missing argument, or a wrong dtype.
    """
    inputs = {sc.REGRESS_INPUTS: _examples_info(examples, "Regression")}
    if predictions is None:
        raise ValueError("Regression `predictions` cannot be None.")
    out = utils.build_tensor_info(predictions)
    if out.dtype != types_pb2.DT_FLOAT:
        raise ValueError("Regression output tensors must be of type float. Found tensors "
                         f"with type {out.dtype}.")
    return build_signature_def(inputs, {sc.REGRESS_OUTPUTS: out}, sc.REGRESS_METHOD_NAME)


def classification_signature_def(examples, classes, scores):
    """The Classify signature: serialized tf.Examples in, string classes and/or float
    scores out.

    Raises:
      ValueError: a missing argument, or a wrong dtype.
    """
    inputs = {sc.CLASSIFY_INPUTS: _examples_info(examples, "Classification")}
    if classes is None and scores is None:
        raise ValueError("Classification `classes` and `scores` cannot both be None.")
    outputs = {}
    if classes is not None:
        info = utils.build_tensor_info(classes)
        if info.dtype != types_pb2.DT_STRING:
            raise ValueError("Classification classes must be of type string Tensor. Found "
                             f"tensors of type {info.dtype}.")
        outputs[sc.CLASSIFY_OUTPUT_CLASSES] = info
    if scores is not None:
        info = utils.build_tensor_info(scores)
        if info.dtype != types_pb2.DT_FLOAT:
            raise ValueError("Classification scores must be a float Tensor.")
        outputs[sc.CLASSIFY_OUTPUT_SCORES] = info
    return build_signature_def(inputs, outputs, sc.CLASSIFY_METHOD_NAME)


def predict_signature_def(inputs, outputs):
    """The Predict signature: any named tensors in and out.

    Raises:
      ValueError: `inputs` or `outputs` is None or empty.
    """
    if not inputs:
        raise ValueError("Prediction `inputs` cannot be None or empty.")
    if not outputs:
        raise ValueError("Prediction `outputs` cannot be None or empty.")
    return build_signature_def({k: utils.build_tensor_info(t) for k, t in inputs.items()},
                               {k: utils.build_tensor_info(t) for k, t in outputs.items()},
                               sc.PREDICT_METHOD_NAME)


def _valid_classification(sig) -> bool:
    if set(sig.inputs) != {sc.CLASSIFY_INPUTS} or \
            sig.inputs[sc.CLASSIFY_INPUTS].dtype != types_pb2.DT_STRING:
        return False
    allowed = {sc.CLASSIFY_OUTPUT_CLASSES: types_pb2.DT_STRING,
               sc.CLASSIFY_OUTPUT_SCORES: types_pb2.DT_FLOAT}
    return bool(sig.outputs) and all(
        key in allowed and info.dtype == allowed[key] for key, info in sig.outputs.items())


def _valid_regression(sig) -> bool:
    return (set(sig.inputs) == {sc.REGRESS_INPUTS}
            and sig.inputs[sc.REGRESS_INPUTS].dtype == types_pb2.DT_STRING
            and set(sig.outputs) == {sc.REGRESS_OUTPUTS}
            and sig.outputs[sc.REGRESS_OUTPUTS].dtype == types_pb2.DT_FLOAT)


def is_valid_signature(signature_def) -> bool:
    """Whether `signature_def` is a well-formed Predict, Classify or Regress signature."""
    if signature_def is None:
        return False
    method = signature_def.method_name
    if method == sc.PREDICT_METHOD_NAME:
        return bool(signature_def.inputs) and bool(signature_def.outputs)
    if method == sc.CLASSIFY_METHOD_NAME:
        return _valid_classification(signature_def)
    if method == sc.REGRESS_METHOD_NAME:
        return _valid_regression(signature_def)
    return False


class MethodNameUpdater:
    """Changes the method names of signatures in an existing SavedModel (e.g. to serve a
    Predict signature through Classify), without loading its graph.

    Args:
      export_dir: the SavedModel directory.

    Raises:
      IOError: no SavedModel there, or it does not parse.
    """

    def __init__(self, export_dir):
        self._export_dir = os.fspath(export_dir)
        self._saved_model = loader.parse_saved_model(self._export_dir)

    def replace_method_name(self, signature_key, method_name, tags=None) -> None:
        """Sets `method_name` on signature `signature_key` of the MetaGraphDefs tagged
        `tags` (all of them when None).

        Raises:
          ValueError: an empty key or name, a matching MetaGraphDef without that signature,
            or no MetaGraphDef with these tags.
        """
        if not signature_key:
            raise ValueError("`signature_key` must be defined.")
        if not method_name:
            raise ValueError("`method_name` must be defined.")
        if tags is not None and not isinstance(tags, list):
            tags = [tags]
        found = False
        for mgd in self._saved_model.meta_graphs:
            if tags is not None and set(tags) != set(mgd.meta_info_def.tags):
                continue
            if signature_key not in mgd.signature_def:
                raise ValueError(f"MetaGraphDef associated with tags {tags} does not have a "
                                 f"signature_def with key: '{signature_key}'.")
            mgd.signature_def[signature_key].method_name = method_name
            found = True
        if not found:
            raise ValueError(f"MetaGraphDef associated with tags {tags} could not be found in "
                             "SavedModel.")

    def save(self, new_export_dir=None) -> str:
        """Writes the SavedModel proto (in the input's format) to `new_export_dir`, by
        default over the original; returns the file's path."""
        directory = os.fspath(new_export_dir) if new_export_dir else self._export_dir
        os.makedirs(directory, exist_ok=True)
        if os.path.isfile(os.path.join(self._export_dir, constants.SAVED_MODEL_FILENAME_PBTXT)):
            path = os.path.join(directory, constants.SAVED_MODEL_FILENAME_PBTXT)
            data = text_format.MessageToString(self._saved_model).encode("utf-8")
        else:
            path = os.path.join(directory, constants.SAVED_MODEL_FILENAME_PB)
            data = self._saved_model.SerializeToString(deterministic=True)
        files.atomic_write(path, data)
        return path
