"""`tf.saved_model.loader.load`: loads a TF1-style SavedModel (ours or TensorFlow's) into a
Session.

Steps, as TensorFlow's loader takes them: parse `saved_model.pb` (or `.pbtxt`); pick the
MetaGraphDef whose tag set equals `tags`; import its graph and collections into the
session's graph (train/saver.py's import_meta_graph); run its Saver's restore op on
`variables/variables` (a TensorFlow bundle or a tensorflux checkpoint: RestoreV2 reads
both); then run the main op (or legacy init op) with every asset tensor fed the path of its
file under `assets/`.
"""

from __future__ import annotations

import logging
import os

from google.protobuf import message, text_format

from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.protos import meta_graph_pb2, saved_model_pb2
from tensorflux.saved_model import constants
from tensorflux.saved_model import signature_constants as sc
from tensorflux.train import saver as saver_lib

__all__ = ["contains_saved_model", "load", "maybe_saved_model_directory"]

_log = logging.getLogger("tensorflux")


def _text(x) -> str:
    return x.decode("utf-8") if isinstance(x, bytes) else os.fspath(x)


def _prepend(name: str, scope: str | None) -> str:
    return f"{scope.rstrip('/')}/{name}" if scope else name


def parse_saved_model(export_dir) -> saved_model_pb2.SavedModel:
    """The SavedModel proto of `export_dir` (`saved_model.pb`, else `saved_model.pbtxt`).

    Raises:
      IOError: neither file exists, or the one there does not parse (file named).
    """
    export_dir = _text(export_dir)
    pb = os.path.join(export_dir, constants.SAVED_MODEL_FILENAME_PB)
    pbtxt = os.path.join(export_dir, constants.SAVED_MODEL_FILENAME_PBTXT)
    saved_model = saved_model_pb2.SavedModel()
    if os.path.isfile(pb):
        with open(pb, "rb") as f:
            data = f.read()
        try:
            saved_model.ParseFromString(data)
        except message.DecodeError as e:
            raise OSError(f"Cannot parse file {pb}: {e}.") from None
        if data and not saved_model.meta_graphs:
            raise OSError(f"Cannot parse file {pb}: it holds no MetaGraphDef.")
    elif os.path.isfile(pbtxt):
        with open(pbtxt, "rb") as f:
            data = f.read()
        try:
            text_format.Merge(data.decode("utf-8"), saved_model)
        except (UnicodeDecodeError, text_format.ParseError) as e:
            raise OSError(f"Cannot parse file {pbtxt}: {e}.") from None
    else:
        raise OSError(f"SavedModel file does not exist at: {export_dir}{os.path.sep}"
                      f"{{{constants.SAVED_MODEL_FILENAME_PBTXT}|"
                      f"{constants.SAVED_MODEL_FILENAME_PB}}}")
    return saved_model


def maybe_saved_model_directory(export_dir) -> bool:
    """Whether `export_dir` holds a `saved_model.pb` or `saved_model.pbtxt`."""
    export_dir = _text(export_dir)
    return any(os.path.isfile(os.path.join(export_dir, name)) for name in
               (constants.SAVED_MODEL_FILENAME_PB, constants.SAVED_MODEL_FILENAME_PBTXT))


contains_saved_model = maybe_saved_model_directory


def get_meta_graph_def_from_tags(saved_model, tags) -> meta_graph_pb2.MetaGraphDef:
    """The MetaGraphDef whose tag set equals `tags`.

    Raises:
      RuntimeError: no MetaGraphDef has that tag set (the available ones are listed).
    """
    available = []
    for mgd in saved_model.meta_graphs:
        have = set(mgd.meta_info_def.tags)
        available.append(have)
        if have == set(tags):
            return mgd
    raise RuntimeError(f"MetaGraphDef associated with tags {str(list(tags)).strip('[]')} "
                       "could not be found in SavedModel, with available tags "
                       f"'{available}'. To inspect available tag-sets in the SavedModel, "
                       "please use the SavedModel CLI: `saved_model_cli`.")


def get_asset_tensors(export_dir, meta_graph_def, import_scope=None) -> dict[str, str]:
    """Asset tensor name -> the path of its file under `export_dir/assets`."""
    protos = list(meta_graph_def.asset_file_def)
    if not protos and constants.ASSETS_KEY in meta_graph_def.collection_def:
        for packed in meta_graph_def.collection_def[constants.ASSETS_KEY].any_list.value:
            protos.append(meta_graph_pb2.AssetFileDef.FromString(packed.value))
    assets_dir = os.path.join(_text(export_dir), constants.ASSETS_DIRECTORY)
    return {_prepend(p.tensor_info.name, import_scope): os.path.join(assets_dir, p.filename)
            for p in protos}


def get_init_op(meta_graph_def, import_scope=None):
    """The main op, legacy init op or init-op signature's op of `meta_graph_def`, or None.

    Raises:
      RuntimeError: a collection names more than one op.
    """
    graph = graph_lib.get_default_graph()
    for key in (constants.MAIN_OP_KEY, constants.LEGACY_INIT_OP_KEY):
        if key in meta_graph_def.collection_def:
            names = meta_graph_def.collection_def[key].node_list.value
            if len(names) != 1:
                raise RuntimeError(f"Expected exactly one SavedModel init op under {key}. "
                                   f"Found {len(names)}: {list(names)}.")
            return graph.as_graph_element(_prepend(names[0], import_scope))
    sig = meta_graph_def.signature_def.get(sc.INIT_OP_SIGNATURE_KEY)
    if sig is not None and sc.INIT_OP_SIGNATURE_KEY in sig.outputs:
        name = sig.outputs[sc.INIT_OP_SIGNATURE_KEY].name
        return graph.as_graph_element(_prepend(name.split(":")[0], import_scope))
    return None


def load(sess, tags, export_dir, import_scope=None, **saver_kwargs):
    """Loads the MetaGraphDef tagged `tags` from the SavedModel at `export_dir` into
    `sess` (graph, variables, init op); `tf.saved_model.loader.load`.

    Args:
      sess: the Session to restore into; the graph is imported into `sess.graph`.
      tags: the tag set of the MetaGraphDef to load.
      export_dir: the SavedModel directory.
      import_scope: a name scope to import the graph under.
      **saver_kwargs: passed to import_meta_graph.

    Returns:
      The loaded MetaGraphDef (signatures in `signature_def`).

    Raises:
      IOError: no SavedModel there, or `saved_model.pb` does not parse (file named).
      RuntimeError: no MetaGraphDef with these tags.
      tf.errors.OpError: restoring the variables or running the init op failed.
    """
    export_dir = _text(export_dir)
    tags = [tags] if isinstance(tags, str) else list(tags)
    saved_model = parse_saved_model(export_dir)
    mgd = get_meta_graph_def_from_tags(saved_model, tags)
    with sess.graph.as_default():
        saver = saver_lib.import_meta_graph(mgd, import_scope=import_scope, **saver_kwargs)
        variables_path = os.path.join(export_dir, constants.VARIABLES_DIRECTORY,
                                      constants.VARIABLES_FILENAME)
        if saver is not None:
            saver.restore(sess, variables_path)
        elif sess.graph.get_collection(GraphKeys.GLOBAL_VARIABLES, import_scope):
            raise ValueError("No tf.train.Saver object was passed to the function "
                             "`SavedModelLoader.restore_variables`. Since there are "
                             "variables in the graph, a saver is required.")
        else:
            _log.info("The specified SavedModel has no variables; no checkpoints were "
                      "restored.")
        init_op = get_init_op(mgd, import_scope)
        if init_op is not None:
            sess.run([init_op], get_asset_tensors(export_dir, mgd, import_scope))
    return mgd
