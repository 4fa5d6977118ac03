"""`tf.saved_model.simple_save`: a one-call SavedModel for serving."""

from __future__ import annotations

from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.saved_model import builder, signature_def_utils, tag_constants
from tensorflux.saved_model.signature_constants import DEFAULT_SERVING_SIGNATURE_DEF_KEY

__all__ = ["simple_save"]


def simple_save(session, export_dir, inputs, outputs, legacy_init_op=None):
    """Saves `session`'s graph and variables as a SavedModel tagged "serve", with one
    Predict signature ("serving_default") from the `inputs` and `outputs` dicts of tensors,
    the ASSET_FILEPATHS collection as assets, and devices cleared.

    Raises:
      AssertionError: `export_dir` exists and is not empty.
      ValueError: `inputs` or `outputs` is empty.
    """
    signatures = {DEFAULT_SERVING_SIGNATURE_DEF_KEY:
                  signature_def_utils.predict_signature_def(inputs, outputs)}
    b = builder.SavedModelBuilder(export_dir)
    with session.graph.as_default():
        assets = graph_lib.get_collection(GraphKeys.ASSET_FILEPATHS)
    b.add_meta_graph_and_variables(session, tags=[tag_constants.SERVING],
                                   signature_def_map=signatures, assets_collection=assets,
                                   main_op=legacy_init_op, clear_devices=True)
    b.save()
