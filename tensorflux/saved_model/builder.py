"""`tf.saved_model.builder.SavedModelBuilder`: writes a SavedModel directory that
TensorFlow's own loader reads (see constants.py for the layout).

The first MetaGraphDef comes with the variables (`add_meta_graph_and_variables`); later
ones share them (`add_meta_graph`). Variables are written in TensorFlow's tensor-bundle
format by the Saver (saver_tf_format.py); the Saver's graph is TensorFlow's, so
TensorFlow's loader restores them by running its restore op. Assets (string Consts in the
`assets_collection`) are copied into `assets/` and recorded in the `saved_model_assets`
collection as packed AssetFileDefs, as TensorFlow 1.x does.
"""

from __future__ import annotations

import filecmp
import logging
import os
import shutil

from google.protobuf import any_pb2, text_format

from tensorflux.checkpoint import files
from tensorflux.framework import dtypes, errors, op_registry, tensor_util
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.framework.operation import Operation, Tensor
from tensorflux.protos import meta_graph_pb2, saved_model_pb2, saver_pb2, types_pb2
from tensorflux.saved_model import constants
from tensorflux.saved_model import signature_constants as sc
from tensorflux.train.saver import Saver

__all__ = ["Builder", "SavedModelBuilder"]

_log = logging.getLogger("tensorflux")
_ASSET_TYPE_URL = "type.googleapis.com/tensorflow.AssetFileDef"


def get_variables_dir(export_dir: str) -> str:
    return os.path.join(os.fspath(export_dir), constants.VARIABLES_DIRECTORY)


def get_variables_path(export_dir: str) -> str:
    return os.path.join(get_variables_dir(export_dir), constants.VARIABLES_FILENAME)


def get_assets_dir(export_dir: str) -> str:
    return os.path.join(os.fspath(export_dir), constants.ASSETS_DIRECTORY)


def _text(x) -> str:
    return x.decode("utf-8") if isinstance(x, bytes) else os.fspath(x)


def _asset_path(asset_tensor) -> str:
    """The file path held by an asset tensor (a scalar string Const)."""
    if not isinstance(asset_tensor, Tensor):
        raise TypeError(f"Asset path tensor {asset_tensor} must be a Tensor.")
    if asset_tensor.op.type != "Const":
        raise TypeError(f"Asset path tensor {asset_tensor} must be of type constant.")
    if asset_tensor.dtype != dtypes.string:
        raise TypeError(f"Asset path tensor {asset_tensor} must be of type string.")
    value = tensor_util.MakeNdarray(asset_tensor.op.get_attr("value"))
    return _text(value.reshape(-1)[0])


def _asset_filename(source: str, taken: dict[str, str]) -> str:
    """The name `source` gets under `assets/`: its base name, unless a different file
    already took it, then `<name>_1`, `<name>_2`, ... (TensorFlow's naming)."""
    base = os.path.basename(source)
    other = taken.get(base)
    if other is None or other == source or filecmp.cmp(source, other, shallow=False):
        return base
    name, i = base, 1
    while name in taken:
        name, i = f"{base}_{i}", i + 1
    return name


def _strip_default_attrs(meta_graph_def) -> None:
    """Removes from every node the attrs whose value is their op's default (a consumer
    adds them back from its own op registry), and records that it did."""
    defaults: dict[str, dict] = {}
    for node in meta_graph_def.graph_def.node:
        if node.op not in defaults:
            opdef = op_registry.lookup(node.op)
            defaults[node.op] = {} if opdef is None else {
                a.name: a.default_value for a in opdef.to_proto().attr
                if a.HasField("default_value")}
        for key, default in defaults[node.op].items():
            if key in node.attr and node.attr[key] == default:
                del node.attr[key]
    meta_graph_def.meta_info_def.stripped_default_attrs = True


def _validate_tensor_info(info) -> None:
    if info is None:
        raise AssertionError("All TensorInfo protos used in the SignatureDefs must have the "
                             "name and dtype fields set.")
    if info.WhichOneof("encoding") is None:
        raise AssertionError(f"Invalid `tensor_info`: {info}. All TensorInfo protos used in "
                             "the SignatureDefs must have one of the 'encoding' fields (e.g., "
                             "name or coo_sparse) set.")
    if info.WhichOneof("encoding") == "composite_tensor":
        for component in info.composite_tensor.components:  # a composite has no dtype
            _validate_tensor_info(component)
    elif info.dtype == types_pb2.DT_INVALID:
        raise AssertionError(f"Invalid `tensor_info`: {info}. All TensorInfo protos used in "
                             "the SignatureDefs must have the dtype field set.")


def _validate_signature_def_map(signature_def_map) -> None:
    for key, sig in signature_def_map.items():
        if not isinstance(sig, meta_graph_pb2.SignatureDef):
            raise TypeError(f"The value of signature {key!r} must be a SignatureDef, got "
                            f"{type(sig).__name__}")
        for info in list(sig.inputs.values()) + list(sig.outputs.values()):
            _validate_tensor_info(info)
    for reserved in (sc.INIT_OP_SIGNATURE_KEY, sc.TRAIN_OP_SIGNATURE_KEY):
        if reserved in signature_def_map:
            raise KeyError(f"SignatureDef map key \"{reserved}\" is reserved for "
                           "initialization or training ops. Please use a different key.")


class SavedModelBuilder:
    """Builds a SavedModel at `export_dir` (`tf.saved_model.Builder`).

    Args:
      export_dir: the directory to write; it must not exist or be empty.

    Raises:
      AssertionError: `export_dir` exists and is not empty.
    """

    def __init__(self, export_dir):
        self._export_dir = _text(export_dir)
        if os.path.exists(self._export_dir):
            if os.listdir(self._export_dir):
                raise AssertionError(
                    f"Export directory {self._export_dir} already exists, and isn't empty. "
                    "Please choose a different export directory, or delete all the contents "
                    "of the specified directory.")
        else:
            os.makedirs(self._export_dir)
        self._saved_model = saved_model_pb2.SavedModel(
            saved_model_schema_version=constants.SAVED_MODEL_SCHEMA_VERSION)
        self._has_saved_variables = False

    # ---- collections --------------------------------------------------------------------
    def _save_and_write_assets(self, assets_collection) -> None:
        taken: dict[str, str] = {}
        for asset_tensor in assets_collection or []:
            source = _asset_path(asset_tensor)
            if not os.path.isfile(source):
                raise errors.NotFoundError(None, None, f"Asset file {source} (tensor "
                                           f"{asset_tensor.name}) does not exist")
            name = _asset_filename(source, taken)
            taken[name] = source  # every tensor gets its AssetFileDef, duplicates too
            asset = meta_graph_pb2.AssetFileDef(filename=name)
            asset.tensor_info.name = asset_tensor.name
            # TensorFlow's loader unpacks it by TensorFlow's full message name.
            packed = any_pb2.Any(type_url=_ASSET_TYPE_URL, value=asset.SerializeToString())
            graph_lib.add_to_collection(constants.ASSETS_KEY, packed)
        if not taken:
            return
        assets_dir = get_assets_dir(self._export_dir)
        os.makedirs(assets_dir, exist_ok=True)
        for name, source in taken.items():
            try:
                shutil.copyfile(source, os.path.join(assets_dir, name))
            except OSError as e:
                raise errors.NotFoundError(None, None, f"Failed to copy asset {source} into "
                                           f"{assets_dir}: {e.strerror or e}") from None

    def _maybe_add_main_op(self, main_op) -> None:
        if main_op is None:
            return
        if not isinstance(main_op, Operation):
            raise TypeError(f"main_op needs to be an Operation: {main_op!r}")
        for key in (constants.MAIN_OP_KEY, constants.LEGACY_INIT_OP_KEY):
            if graph_lib.get_collection(key):
                raise ValueError("Graph already contains one or more main ops under the "
                                 f"collection {key}.")
        graph_lib.add_to_collection(constants.MAIN_OP_KEY, main_op)

    def _add_collections(self, assets_collection, main_op) -> None:
        self._save_and_write_assets(assets_collection)
        self._maybe_add_main_op(main_op)

    @staticmethod
    def _maybe_create_saver(saver):
        if saver is not None:
            return saver
        graph = graph_lib.get_default_graph()
        var_list = graph.get_collection(GraphKeys.GLOBAL_VARIABLES) + \
            graph.get_collection(GraphKeys.SAVEABLE_OBJECTS)
        return Saver(var_list, sharded=True, write_version=saver_pb2.SaverDef.V2,
                     allow_empty=True)

    def _tag_and_add_meta_graph(self, meta_graph_def, tags, signature_def_map,
                                strip_default_attrs=False) -> None:
        if strip_default_attrs:
            _strip_default_attrs(meta_graph_def)
        meta_graph_def.meta_info_def.tags.extend(tags)
        for key, sig in (signature_def_map or {}).items():
            meta_graph_def.signature_def[key].CopyFrom(sig)
        self._saved_model.meta_graphs.add().CopyFrom(meta_graph_def)

    # ---- public -------------------------------------------------------------------------
    def add_meta_graph_and_variables(self, sess, tags, signature_def_map=None,
                                     assets_collection=None, legacy_init_op=None,
                                     clear_devices=False, main_op=None,
                                     strip_default_attrs=False, saver=None):
        """Saves the variables of `sess` and adds the current graph under `tags`.

        Args:
          sess: the Session holding the variables (its graph is the default graph).
          tags: the tag set (list of strings) that names this MetaGraphDef.
          signature_def_map: signature key -> SignatureDef.
          assets_collection: string Const tensors naming files to copy into `assets/`.
          legacy_init_op, main_op: an Operation the loader runs after restoring.
          clear_devices: drop device placements from the graph.
          strip_default_attrs: leave out attrs that have their op's default value.
          saver: the Saver to use (default: a sharded Saver of all saveable variables).

        Raises:
          AssertionError: variables were saved already, or a TensorInfo is incomplete.
          TypeError: `main_op` is not an Operation; an asset tensor is not a string Const.
        """
        if self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has already "
                                 "been saved. Please invoke `add_meta_graph()` instead.")
        signature_def_map = signature_def_map or {}
        _validate_signature_def_map(signature_def_map)
        with sess.graph.as_default():
            self._add_collections(assets_collection,
                                  main_op if main_op is not None else legacy_init_op)
            os.makedirs(get_variables_dir(self._export_dir), exist_ok=True)
            saver = self._maybe_create_saver(saver)
            saver.save_tf_bundle(sess, get_variables_path(self._export_dir))
            meta_graph_def = saver.export_meta_graph(clear_devices=clear_devices,
                                                     strip_default_attrs=strip_default_attrs)
        self._tag_and_add_meta_graph(meta_graph_def, tags, signature_def_map,
                                     strip_default_attrs)
        self._has_saved_variables = True

    def add_meta_graph(self, tags, signature_def_map=None, assets_collection=None,
                       legacy_init_op=None, clear_devices=False, main_op=None,
                       strip_default_attrs=False, saver=None):
        """Adds the default graph under `tags`, sharing the variables saved already.

        Raises:
          AssertionError: `add_meta_graph_and_variables` was not called first.
        """
        if not self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has not been "
                                 "saved yet. Please invoke `add_meta_graph_and_variables()` "
                                 "first.")
        signature_def_map = signature_def_map or {}
        _validate_signature_def_map(signature_def_map)
        self._add_collections(assets_collection,
                              main_op if main_op is not None else legacy_init_op)
        saver = self._maybe_create_saver(saver)
        meta_graph_def = saver.export_meta_graph(clear_devices=clear_devices,
                                                 strip_default_attrs=strip_default_attrs)
        self._tag_and_add_meta_graph(meta_graph_def, tags, signature_def_map,
                                     strip_default_attrs)

    def save(self, as_text=False) -> bytes:
        """Writes `saved_model.pb` (or `saved_model.pbtxt`); returns its path as bytes."""
        os.makedirs(self._export_dir, exist_ok=True)
        if as_text:
            path = os.path.join(self._export_dir, constants.SAVED_MODEL_FILENAME_PBTXT)
            data = text_format.MessageToString(self._saved_model).encode("utf-8")
        else:
            path = os.path.join(self._export_dir, constants.SAVED_MODEL_FILENAME_PB)
            data = self._saved_model.SerializeToString(deterministic=True)
        files.atomic_write(path, data)
        _log.info("SavedModel written to: %s", path)
        return path.encode("utf-8")


Builder = SavedModelBuilder
