"""`tf.contrib.predictor`: a callable over a SavedModel's signature, in a graph and session
of its own: `predictor({input key: value}) -> {output key: value}`.

`from_saved_model(export_dir, signature_def_key=None, signature_def=None, tags=None,
graph=None, config=None)` loads the MetaGraphDef tagged `tags` (default "serve") and takes
the named signature (default "serving_default"); `from_estimator(estimator,
serving_input_receiver_fn, output_key=None, graph=None, config=None)` exports the
estimator's latest checkpoint to a temporary directory with the receiver function and
loads that (the signature `output_key`; by default serving_default, or "predict" where the
export left serving_default out, as it does for a regression head fed raw tensors).
"""

from __future__ import annotations

import shutil
import tempfile

from tensorflux.framework import graph as graph_lib
from tensorflux.runtime.session import Session
from tensorflux.saved_model import loader, signature_constants, tag_constants

__all__ = ["Predictor", "from_saved_model", "from_estimator"]


class Predictor:
    """Runs one signature of a loaded SavedModel: called with a dict keyed by the
    signature's input keys, returns a dict keyed by its output keys.

    Attributes:
      graph, session: where the model lives.
      feed_tensors, fetch_tensors: the signature's inputs and outputs by key.
    """

    def __init__(self, session, signature):
        self.session = session
        self.graph = session.graph
        self.feed_tensors = {k: self.graph.get_tensor_by_name(v.name)
                             for k, v in signature.inputs.items()}
        self.fetch_tensors = {k: self.graph.get_tensor_by_name(v.name)
                              for k, v in signature.outputs.items()}

    def __call__(self, input_dict: dict) -> dict:
        """The signature's outputs for `input_dict`.

        Raises:
          ValueError: a key that is not one of the signature's inputs.
        """
        unknown = sorted(set(input_dict) - set(self.feed_tensors))
        if unknown:
            raise ValueError(f"Got unexpected keys in input_dict: {unknown}\n"
                             f"expected: {sorted(self.feed_tensors)}")
        feed = {self.feed_tensors[k]: v for k, v in input_dict.items()}
        return self.session.run(self.fetch_tensors, feed_dict=feed)

    def __repr__(self) -> str:
        return (f"Predictor with feed tensors {sorted(self.feed_tensors)} and fetch tensors "
                f"{sorted(self.fetch_tensors)}")


def from_saved_model(export_dir, signature_def_key=None, signature_def=None, tags=None,
                     graph=None, config=None) -> Predictor:
    """A Predictor over the SavedModel at `export_dir`.

    Raises:
      ValueError: both `signature_def_key` and `signature_def` given; no such signature.
    """
    if signature_def_key is not None and signature_def is not None:
        raise ValueError("Cannot specify both signature_def_key and signature_def.")
    tags = [tag_constants.SERVING] if tags is None else \
        ([tags] if isinstance(tags, str) else list(tags))
    graph = graph or graph_lib.Graph()
    session = Session(graph=graph, config=config)
    with graph.as_default():
        meta_graph = loader.load(session, tags, export_dir)
    if signature_def is None:
        key = signature_def_key or signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY
        if key not in meta_graph.signature_def:
            raise ValueError(f"Could not find signature def with key {key}. Available "
                             f"keys: {sorted(meta_graph.signature_def)}")
        signature_def = meta_graph.signature_def[key]
    return Predictor(session, signature_def)


def from_estimator(estimator, serving_input_receiver_fn, output_key=None, graph=None,
                   config=None) -> Predictor:
    """A Predictor over `estimator`'s latest checkpoint, exported with
    `serving_input_receiver_fn` (the signature `output_key`, default serving_default)."""
    base = tempfile.mkdtemp(prefix="tfx-predictor-")
    try:
        export_dir = estimator.export_saved_model(base, serving_input_receiver_fn)
        export_dir = export_dir.decode() if isinstance(export_dir, bytes) else export_dir
        if output_key is None:
            keys = loader.get_meta_graph_def_from_tags(
                loader.parse_saved_model(export_dir), [tag_constants.SERVING]).signature_def
            default = signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY
            output_key = default if default in keys or "predict" not in keys else "predict"
        return from_saved_model(export_dir, signature_def_key=output_key, graph=graph,
                                config=config)
    finally:
        shutil.rmtree(base, ignore_errors=True)
