"""tf.saved_model (TF1): round trips within tensorflux, and both ways with TensorFlow.

The models are small (a dense layer over resource variables, a string asset read by the
main op). One TensorFlow subprocess (module-scoped fixture) loads and runs every SavedModel
that tensorflux wrote, and writes the TF1 SavedModels that tensorflux then loads.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.checkpoint import open_checkpoint, tf_bundle
from tensorflux.framework import op_registry
from tensorflux.protos import meta_graph_pb2, saved_model_pb2, types_pb2
from tests.oracle import run_tf

W = np.arange(6, dtype=np.float32).reshape(3, 2) / 4.0 - 0.5
B = np.array([0.25, -1.0], np.float32)
X = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]], np.float32)


def _expected(x=X):
    return np.maximum(x @ W + B, 0.0)


def _model():
    """x -> relu(x W + b) in the default graph; returns (x, y)."""
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(W, name="w")
    b = tf.get_variable("b", initializer=B)
    return x, tf.nn.relu(tf.matmul(x, w) + b, name="y")


def _export_simple(export_dir):
    with tf.Graph().as_default(), tf.Session() as sess:
        x, y = _model()
        sess.run(tf.global_variables_initializer())
        tf.saved_model.simple_save(sess, export_dir, {"x": x}, {"y": y})


def _export_with_assets(export_dir, vocab_path, as_text=False):
    """Two meta graphs ("train" with variables, "serve" with a signature), an asset and a
    main op that reads it into local variables."""
    with tf.Graph().as_default(), tf.Session() as sess:
        x, y = _model()
        asset = tf.constant(vocab_path, name="asset_path")
        tf.add_to_collection(tf.GraphKeys.ASSET_FILEPATHS, asset)
        local = [tf.GraphKeys.LOCAL_VARIABLES]
        path_var = tf.Variable("", trainable=False, collections=local, name="asset_seen")
        text_var = tf.Variable("", trainable=False, collections=local, name="asset_text")
        main_op = tf.group(tf.assign(path_var, asset), tf.assign(text_var, tf.read_file(asset)),
                           name="main_op")
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        builder = tf.saved_model.builder.SavedModelBuilder(export_dir)
        builder.add_meta_graph_and_variables(
            sess, [tf.saved_model.tag_constants.TRAINING],
            assets_collection=tf.get_collection(tf.GraphKeys.ASSET_FILEPATHS),
            main_op=main_op)
        sig = tf.saved_model.signature_def_utils.predict_signature_def({"x": x}, {"y": y})
        builder.add_meta_graph([tf.saved_model.tag_constants.SERVING, "gpu"],
                               signature_def_map={"serving_default": sig},
                               strip_default_attrs=True)
        return builder.save(as_text=as_text)


def _export_lookup(export_dir, vocab_path):
    """words -> ids through a vocabulary file (an asset) and a table the main op fills."""
    with tf.Graph().as_default(), tf.Session() as sess:
        words = tf.placeholder(tf.string, [None], name="words")
        init = tf.lookup.TextFileInitializer(
            vocab_path, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64,
            tf.lookup.TextFileIndex.LINE_NUMBER)
        ids = tf.identity(tf.lookup.StaticHashTable(init, -1).lookup(words), name="ids")
        sess.run(tf.tables_initializer())
        tf.saved_model.simple_save(sess, export_dir, {"words": words}, {"ids": ids},
                                   legacy_init_op=tf.tables_initializer())


EMB = np.arange(13 * 3, dtype=np.float32).reshape(13, 3)


def _export_partitioned(export_dir):
    """An embedding table in three partitions (saved in slices), looked up by id."""
    with tf.Graph().as_default(), tf.Session() as sess:
        ids = tf.placeholder(tf.int32, [None], name="ids")
        table = tf.get_variable("emb", [13, 3], initializer=tf.constant_initializer(0.0),
                                partitioner=tf.fixed_size_partitioner(3))
        sess.run(tf.global_variables_initializer())
        start = 0
        for part in table:
            n = part.shape.as_list()[0]
            sess.run(part.assign(EMB[start:start + n]))
            start += n
        e = tf.identity(tf.nn.embedding_lookup(table, ids, partition_strategy="div"), name="e")
        tf.saved_model.simple_save(sess, export_dir, {"ids": ids}, {"e": e})


WORDS = [b"bird", b"cat", b"zebra"]
IDS = [2, 0, -1]


def _local(name):
    """The local variable `name` of the default graph (restored by a loader)."""
    return next(v for v in tf.local_variables() if v.op.name == name)


def _run_signature(sess, meta_graph_def, x=X, key="serving_default"):
    sig = meta_graph_def.signature_def[key]
    return sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: x})


@pytest.fixture
def vocab(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("alpha\nbeta\n")
    return str(path)


# ---- tensorflux -> tensorflux --------------------------------------------------------------


def test_simple_save_layout_and_round_trip(tmp_path):
    export_dir = str(tmp_path / "m")
    _export_simple(export_dir)
    files = sorted(os.path.relpath(os.path.join(r, f), export_dir)
                   for r, _, fs in os.walk(export_dir) for f in fs)
    assert files == ["saved_model.pb", "variables/variables.data-00000-of-00001",
                     "variables/variables.index"]
    assert tf.saved_model.loader.maybe_saved_model_directory(export_dir)
    assert not tf.saved_model.loader.maybe_saved_model_directory(str(tmp_path))
    with tf.Graph().as_default() as g, tf.Session(graph=g) as sess:
        mgd = tf.saved_model.loader.load(sess, [tf.saved_model.SERVING], export_dir)
        np.testing.assert_allclose(_run_signature(sess, mgd), _expected(), rtol=1e-6)
        assert {v.op.name for v in tf.global_variables()} == {"w", "b"}
    assert list(mgd.meta_info_def.tags) == ["serve"]
    sig = mgd.signature_def["serving_default"]
    assert sig.method_name == "tensorflow/serving/predict"
    assert sig.inputs["x"].dtype == types_pb2.DT_FLOAT
    assert [d.size for d in sig.outputs["y"].tensor_shape.dim] == [-1, 2]
    assert mgd.saver_def.sharded and all(not n.device for n in mgd.graph_def.node)


def test_variables_are_a_tensorflow_bundle(tmp_path):
    export_dir = str(tmp_path / "m")
    _export_simple(export_dir)
    prefix = os.path.join(export_dir, "variables", "variables")
    with open(prefix + ".index", "rb") as f:
        assert tf_bundle.is_table(f.read())
    reader = open_checkpoint(prefix)
    assert isinstance(reader, tf_bundle.TFBundleReader)
    np.testing.assert_array_equal(reader.get_tensor("w"), W)
    np.testing.assert_array_equal(reader.get_tensor("b"), B)


def test_tf_load_alias_and_import_scope(tmp_path):
    export_dir = str(tmp_path / "m")
    _export_simple(export_dir)
    with tf.Graph().as_default() as g, tf.Session(graph=g) as sess:
        mgd = tf.saved_model.load(sess, ["serve"], export_dir, import_scope="imported")
        sig = mgd.signature_def["serving_default"]
        x = tf.saved_model.utils.get_tensor_from_tensor_info(sig.inputs["x"],
                                                             import_scope="imported")
        y = tf.saved_model.get_tensor_from_tensor_info(sig.outputs["y"], g, "imported")
        assert x.name == "imported/x:0"
        np.testing.assert_allclose(sess.run(y, {x: X}), _expected(), rtol=1e-6)


@pytest.mark.parametrize("as_text", [False, True])
def test_two_meta_graphs_assets_and_main_op(tmp_path, vocab, as_text):
    export_dir = str(tmp_path / "m")
    path = _export_with_assets(export_dir, vocab, as_text)
    name = "saved_model.pbtxt" if as_text else "saved_model.pb"
    assert path == os.path.join(export_dir, name).encode()
    assert sorted(os.listdir(export_dir)) == ["assets", name, "variables"]
    assert os.listdir(os.path.join(export_dir, "assets")) == ["vocab.txt"]
    os.remove(vocab)  # the loader must use the copy
    for tags in (["train"], ["gpu", "serve"]):
        with tf.Graph().as_default() as g, tf.Session(graph=g) as sess:
            mgd = tf.saved_model.loader.load(sess, tags, export_dir)
            seen, text = sess.run([_local("asset_seen"), _local("asset_text")])
            assert seen.decode() == os.path.join(export_dir, "assets", "vocab.txt")
            assert text == b"alpha\nbeta\n"
            assert sess.run("y:0", {"x:0": X}).shape == (2, 2)
            if "serve" in tags:
                np.testing.assert_allclose(_run_signature(sess, mgd), _expected(), rtol=1e-6)
            else:
                assert not mgd.signature_def
    sm = saved_model_pb2.SavedModel()
    if not as_text:
        with open(os.path.join(export_dir, name), "rb") as f:
            sm.ParseFromString(f.read())
        assert sm.saved_model_schema_version == 1 and len(sm.meta_graphs) == 2
        assets = sm.meta_graphs[0].collection_def["saved_model_assets"].any_list.value
        assert assets[0].type_url == "type.googleapis.com/tensorflow.AssetFileDef"
        asset = meta_graph_pb2.AssetFileDef.FromString(assets[0].value)
        assert (asset.filename, asset.tensor_info.name) == ("vocab.txt", "asset_path:0")
        assert list(sm.meta_graphs[0].collection_def["saved_model_main_op"].node_list.value) \
            == ["main_op"]
        matmuls = [[n for n in mg.graph_def.node if n.op == "MatMul"][0] for mg in sm.meta_graphs]
        assert "transpose_a" in matmuls[0].attr and "transpose_a" not in matmuls[1].attr
        assert sm.meta_graphs[1].meta_info_def.stripped_default_attrs


def test_a_vocabulary_table_is_served_from_the_copied_asset(tmp_path):
    vocab = tmp_path / "words.txt"
    vocab.write_text("cat\ndog\nbird\n")
    export_dir = str(tmp_path / "m")
    _export_lookup(export_dir, str(vocab))
    vocab.unlink()
    with tf.Graph().as_default() as g, tf.Session(graph=g) as sess:
        mgd = tf.saved_model.loader.load(sess, ["serve"], export_dir)
        sig = mgd.signature_def["serving_default"]
        ids = sess.run(sig.outputs["ids"].name, {sig.inputs["words"].name: WORDS})
    np.testing.assert_array_equal(ids, IDS)


def test_partitioned_variables_are_saved_in_slices(tmp_path):
    export_dir = str(tmp_path / "m")
    _export_partitioned(export_dir)
    reader = open_checkpoint(os.path.join(export_dir, "variables", "variables"))
    np.testing.assert_array_equal(reader.get_tensor("emb"), EMB)
    np.testing.assert_array_equal(reader.read("emb", "13 3 5,4:-"), EMB[5:9])
    with tf.Graph().as_default() as g, tf.Session(graph=g) as sess:
        mgd = tf.saved_model.loader.load(sess, ["serve"], export_dir)
        sig = mgd.signature_def["serving_default"]
        e = sess.run(sig.outputs["e"].name, {sig.inputs["ids"].name: [0, 7, 12]})
    np.testing.assert_array_equal(e, EMB[[0, 7, 12]])


def test_asset_names_are_made_unique(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "c").mkdir()
    (tmp_path / "a" / "v.txt").write_text("1")
    (tmp_path / "b" / "v.txt").write_text("2")
    (tmp_path / "c" / "v.txt").write_text("1")  # same contents as a/v.txt: shares its name
    export_dir = str(tmp_path / "m")
    with tf.Graph().as_default(), tf.Session() as sess:
        assets = [tf.constant(str(tmp_path / d / "v.txt"), name=f"asset_{d}")
                  for d in ("a", "b", "c")]
        builder = tf.saved_model.Builder(export_dir)
        builder.add_meta_graph_and_variables(sess, ["t"], assets_collection=assets)
        builder.save()
        with pytest.raises(tf.errors.NotFoundError, match="missing.txt"):
            tf.saved_model.Builder(str(tmp_path / "m2")).add_meta_graph_and_variables(
                sess, ["t"], assets_collection=[tf.constant(str(tmp_path / "missing.txt"))])
    assets_dir = os.path.join(export_dir, "assets")
    assert sorted(os.listdir(assets_dir)) == ["v.txt", "v.txt_1"]  # TensorFlow's naming
    assert open(os.path.join(assets_dir, "v.txt_1")).read() == "2"
    with tf.Graph().as_default() as g, tf.Session(graph=g) as sess:
        mgd = tf.saved_model.loader.load(sess, ["t"], export_dir)
        fed = tf.saved_model.loader.get_asset_tensors(export_dir, mgd)
    assert fed == {f"asset_{d}:0": os.path.join(assets_dir, name)
                   for d, name in (("a", "v.txt"), ("b", "v.txt_1"), ("c", "v.txt"))}


def test_a_model_without_variables(tmp_path):
    export_dir = str(tmp_path / "m")
    with tf.Graph().as_default(), tf.Session() as sess:
        x = tf.placeholder(tf.float32, [2], name="x")
        y = tf.multiply(x, 3.0, name="y")
        tf.saved_model.simple_save(sess, export_dir, {"x": x}, {"y": y})
    with tf.Graph().as_default() as g, tf.Session(graph=g) as sess:
        mgd = tf.saved_model.loader.load(sess, ["serve"], export_dir)
        np.testing.assert_allclose(_run_signature(sess, mgd, np.ones(2, np.float32)), [3, 3])


# ---- bad input -------------------------------------------------------------------------------


def test_missing_and_corrupt_saved_model_pb(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with tf.Session(graph=tf.Graph()) as sess:
        with pytest.raises(OSError, match="SavedModel file does not exist at: .*empty"):
            tf.saved_model.loader.load(sess, ["serve"], str(empty))
    export_dir = str(tmp_path / "m")
    _export_simple(export_dir)
    pb = os.path.join(export_dir, "saved_model.pb")
    data = open(pb, "rb").read()
    with open(pb, "wb") as f:
        f.write(data[: len(data) // 2])
    with tf.Session(graph=tf.Graph()) as sess:
        with pytest.raises(OSError, match="Cannot parse file .*saved_model.pb"):
            tf.saved_model.loader.load(sess, ["serve"], export_dir)
    with open(pb, "wb") as f:
        f.write(b"\xff\xff\xff\xff garbage")
    with tf.Session(graph=tf.Graph()) as sess:
        with pytest.raises(OSError, match="Cannot parse file .*saved_model.pb"):
            tf.saved_model.loader.load(sess, ["serve"], export_dir)
    os.remove(pb)
    with open(os.path.join(export_dir, "saved_model.pbtxt"), "w") as f:
        f.write("meta_graphs { not_a_field: 1 }")
    with tf.Session(graph=tf.Graph()) as sess:
        with pytest.raises(OSError, match="Cannot parse file .*saved_model.pbtxt"):
            tf.saved_model.loader.load(sess, ["serve"], export_dir)


def test_unknown_tags_and_corrupt_variables(tmp_path):
    export_dir = str(tmp_path / "m")
    _export_simple(export_dir)
    with tf.Session(graph=tf.Graph()) as sess:
        with pytest.raises(RuntimeError, match=r"tags 'train' could not be found.*'serve'"):
            tf.saved_model.loader.load(sess, ["train"], export_dir)
    data_file = os.path.join(export_dir, "variables", "variables.data-00000-of-00001")
    raw = bytearray(open(data_file, "rb").read())
    raw[3] ^= 0xFF
    with open(data_file, "wb") as f:
        f.write(bytes(raw))
    with tf.Session(graph=tf.Graph()) as sess:
        with pytest.raises(tf.errors.DataLossError, match="variables.data-00000-of-00001"):
            tf.saved_model.loader.load(sess, ["serve"], export_dir)
    os.remove(os.path.join(export_dir, "variables", "variables.index"))
    with tf.Session(graph=tf.Graph()) as sess:
        with pytest.raises(ValueError, match="not a valid checkpoint: .*variables/variables"):
            tf.saved_model.loader.load(sess, ["serve"], export_dir)


def test_builder_misuse(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("x")
    with pytest.raises(AssertionError, match="already exists, and isn't empty"):
        tf.saved_model.builder.SavedModelBuilder(str(tmp_path / "full"))
    with tf.Graph().as_default(), tf.Session() as sess:
        x, y = _model()
        sess.run(tf.global_variables_initializer())
        builder = tf.saved_model.Builder(str(tmp_path / "m"))
        with pytest.raises(AssertionError, match="has not been saved yet"):
            builder.add_meta_graph(["serve"])
        with pytest.raises(TypeError, match="Operation"):
            builder.add_meta_graph_and_variables(sess, ["serve"], main_op=y)
        bad = meta_graph_pb2.SignatureDef()
        bad.inputs["x"].name = "x:0"  # no dtype
        with pytest.raises(AssertionError, match="dtype"):
            builder.add_meta_graph_and_variables(sess, ["serve"], {"s": bad})
        ok = tf.saved_model.predict_signature_def({"x": x}, {"y": y})
        with pytest.raises(KeyError, match="reserved"):
            builder.add_meta_graph_and_variables(sess, ["serve"],
                                                 {"__saved_model_init_op": ok})
        with pytest.raises(TypeError, match="Asset path tensor"):
            builder.add_meta_graph_and_variables(sess, ["serve"], assets_collection=[y])
        builder.add_meta_graph_and_variables(sess, ["serve"], {"s": ok})
        with pytest.raises(AssertionError, match="already been saved"):
            builder.add_meta_graph_and_variables(sess, ["serve"])


# ---- signatures ------------------------------------------------------------------------------


def test_signature_defs():
    sdu = tf.saved_model.signature_def_utils
    with tf.Graph().as_default():
        examples = tf.placeholder(tf.string, [None], name="examples")
        scores = tf.placeholder(tf.float32, [None, 3], name="scores")
        classes = tf.placeholder(tf.string, [None, 3], name="classes")
        floats = tf.placeholder(tf.float32, [None], name="floats")
        ints = tf.placeholder(tf.int32, [None], name="ints")
        cls = sdu.classification_signature_def(examples, classes, scores)
        assert cls.method_name == tf.saved_model.CLASSIFY_METHOD_NAME
        assert set(cls.outputs) == {"classes", "scores"} and cls.inputs["inputs"].name == \
            "examples:0"
        assert sdu.is_valid_signature(cls)
        assert sdu.is_valid_signature(sdu.classification_signature_def(examples, None, scores))
        reg = sdu.regression_signature_def(examples, floats)
        assert reg.method_name == "tensorflow/serving/regress" and sdu.is_valid_signature(reg)
        pred = tf.saved_model.predict_signature_def({"a": ints}, {"b": floats})
        assert sdu.is_valid_signature(pred)
        assert not sdu.is_valid_signature(None)
        assert not sdu.is_valid_signature(tf.saved_model.build_signature_def(
            {"inputs": tf.saved_model.build_tensor_info(ints)},
            {"outputs": tf.saved_model.build_tensor_info(floats)},
            tf.saved_model.REGRESS_METHOD_NAME))
        assert not sdu.is_valid_signature(sdu.build_signature_def(method_name="other"))
        with pytest.raises(ValueError, match="must be of type string"):
            sdu.regression_signature_def(floats, floats)
        with pytest.raises(ValueError, match="must be of type float"):
            sdu.regression_signature_def(examples, ints)
        with pytest.raises(ValueError, match="cannot both be None"):
            sdu.classification_signature_def(examples, None, None)
        with pytest.raises(ValueError, match="classes must be of type string"):
            sdu.classification_signature_def(examples, ints, None)
        with pytest.raises(ValueError, match="cannot be None"):
            sdu.classification_signature_def(None, classes, None)
        with pytest.raises(ValueError, match="cannot be None or empty"):
            sdu.predict_signature_def({}, {"b": floats})
        with_defaults = sdu.build_signature_def({}, {}, "m", defaults={"k": 3})
        assert with_defaults.defaults["k"].int_val == [3]
        sparse = tf.SparseTensor(indices=[[0, 0]], values=[1.5], dense_shape=[2, 2])
        info = tf.saved_model.utils.build_tensor_info(sparse)
        assert info.WhichOneof("encoding") == "coo_sparse" and info.dtype == types_pb2.DT_FLOAT
        back = tf.saved_model.utils.get_tensor_from_tensor_info(info)
        assert isinstance(back, tf.SparseTensor) and back.values is sparse.values
        with pytest.raises(ValueError, match="Invalid TensorInfo.encoding"):
            tf.saved_model.utils.get_tensor_from_tensor_info(meta_graph_pb2.TensorInfo())


def test_method_name_updater(tmp_path):
    export_dir = str(tmp_path / "m")
    _export_simple(export_dir)
    updater = tf.saved_model.signature_def_utils.MethodNameUpdater(export_dir)
    with pytest.raises(ValueError, match="does not have a signature_def with key: 'nope'"):
        updater.replace_method_name("nope", "m")
    with pytest.raises(ValueError, match="could not be found"):
        updater.replace_method_name("serving_default", "m", tags="train")
    updater.replace_method_name("serving_default", "tensorflow/serving/regress", tags="serve")
    path = updater.save(str(tmp_path / "copy"))
    assert path == os.path.join(str(tmp_path / "copy"), "saved_model.pb")
    sm = tf.saved_model.loader.parse_saved_model(str(tmp_path / "copy"))
    assert sm.meta_graphs[0].signature_def["serving_default"].method_name == \
        "tensorflow/serving/regress"


def test_constants_are_tensorflows():
    sm = tf.saved_model
    assert (sm.SERVING, sm.TRAINING, sm.GPU, sm.TPU) == ("serve", "train", "gpu", "tpu")
    assert sm.tag_constants.SERVING == "serve"
    assert sm.signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY == "serving_default"
    assert (sm.PREDICT_INPUTS, sm.PREDICT_OUTPUTS, sm.CLASSIFY_OUTPUT_SCORES) == \
        ("inputs", "outputs", "scores")
    assert (sm.SAVED_MODEL_FILENAME_PB, sm.VARIABLES_FILENAME, sm.ASSETS_KEY, sm.MAIN_OP_KEY,
            sm.LEGACY_INIT_OP_KEY) == ("saved_model.pb", "variables", "saved_model_assets",
                                       "saved_model_main_op", "legacy_init_op")
    assert sm.Builder is sm.builder.SavedModelBuilder and sm.load is sm.loader.load
    assert tf.compat.v1.saved_model.simple_save is sm.simple_save


# ---- with TensorFlow -------------------------------------------------------------------------

_TF_SIDE = """
import shutil
cfg = json.loads(CFG)
out = {}

def run_sig(sess, mgd, x, key="serving_default"):
    sig = mgd.signature_def[key]
    return sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: x})

x_val = np.array(cfg["x"], np.float32)
# --- load what tensorflux wrote ---
with tf.Session(graph=tf.Graph()) as sess:
    mgd = tf.saved_model.loader.load(sess, ["serve"], cfg["simple"])
    out["simple"] = run_sig(sess, mgd, x_val)
for key in ("assets", "assets_text"):
    with tf.Session(graph=tf.Graph()) as sess:
        mgd = tf.saved_model.loader.load(sess, ["serve", "gpu"], cfg[key])
        local = {v.op.name: v for v in tf.local_variables()}
        out[key] = [run_sig(sess, mgd, x_val)] + sess.run([local["asset_seen"],
                                                           local["asset_text"]])
with tf.Session(graph=tf.Graph()) as sess:
    mgd = tf.saved_model.loader.load(sess, ["serve"], cfg["lookup"])
    sig = mgd.signature_def["serving_default"]
    out["lookup"] = sess.run(sig.outputs["ids"].name,
                             {sig.inputs["words"].name: ["bird", "cat", "zebra"]})
with tf.Session(graph=tf.Graph()) as sess:
    mgd = tf.saved_model.loader.load(sess, ["serve"], cfg["parted"])
    sig = mgd.signature_def["serving_default"]
    out["parted"] = sess.run(sig.outputs["e"].name, {sig.inputs["ids"].name: [0, 7, 12]})
reader = tf.train.load_checkpoint(cfg["bundle"])
def plain(v):  # complex values as [real, imag], strings as a list (for JSON)
    if v.dtype == object:
        return list(v.reshape(-1))
    return np.stack([v.real, v.imag]) if np.iscomplexobj(v) else v
out["bundle"] = {k: [plain(reader.get_tensor(k)), str(reader.get_tensor(k).dtype)]
                 for k in sorted(reader.get_variable_to_shape_map())}
try:
    tf.saved_model.loader.load(tf.Session(graph=tf.Graph()), ["nope"], cfg["simple"])
except Exception as e:
    out["bad_tags"] = type(e).__name__

# --- write TF1 SavedModels for tensorflux ---
w = np.array(cfg["w"], np.float32)
b = np.array(cfg["b"], np.float32)
def model():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    wv = tf.Variable(w, name="w")                                    # a ref variable
    bv = tf.get_variable("b", initializer=b, use_resource=True)       # a resource variable
    return x, tf.nn.relu(tf.matmul(x, wv) + bv, name="y")
with tf.Graph().as_default(), tf.Session() as sess:
    x, y = model()
    sess.run(tf.global_variables_initializer())
    tf.saved_model.simple_save(sess, cfg["tf_simple"], {"x": x}, {"y": y})
    out["tf_simple"] = sess.run(y, {x: x_val})
with tf.Graph().as_default(), tf.Session() as sess:
    x, y = model()
    asset = tf.constant(cfg["vocab"], name="asset_path")
    tf.add_to_collection(tf.GraphKeys.ASSET_FILEPATHS, asset)
    seen = tf.Variable("", trainable=False, collections=[tf.GraphKeys.LOCAL_VARIABLES],
                       name="asset_seen")
    init = tf.group(tf.assign(seen, asset), name="legacy_init")
    sess.run(tf.global_variables_initializer())
    builder = tf.saved_model.Builder(cfg["tf_builder"])
    examples = tf.placeholder(tf.string, [None], name="examples")
    sigs = {"serving_default": tf.saved_model.predict_signature_def({"x": x}, {"y": y}),
            "classify": tf.saved_model.classification_signature_def(
                examples, None, tf.identity(y, name="scores"))}
    builder.add_meta_graph_and_variables(
        sess, ["serve"], sigs, assets_collection=tf.get_collection(tf.GraphKeys.ASSET_FILEPATHS),
        legacy_init_op=init, saver=tf.train.Saver(sharded=False))
    builder.save()
    out["tf_builder"] = sess.run(y, {x: x_val})
result = out
"""


@pytest.fixture(scope="module")
def tf_side(tmp_path_factory):
    root = tmp_path_factory.mktemp("sm_oracle")
    vocab = root / "vocab.txt"
    vocab.write_text("alpha\nbeta\n")
    cfg = {k: str(root / k) for k in ("simple", "assets", "assets_text", "tf_simple",
                                      "tf_builder")}
    _export_simple(cfg["simple"])
    _export_with_assets(cfg["assets"], str(vocab))
    _export_with_assets(cfg["assets_text"], str(vocab), as_text=True)
    from tensorflux.checkpoint.tf_bundle_writer import write_tf_bundle

    lookup_vocab = root / "words.txt"
    lookup_vocab.write_text("cat\ndog\nbird\n")
    cfg["lookup"] = str(root / "lookup")
    _export_lookup(cfg["lookup"], str(lookup_vocab))
    lookup_vocab.unlink()  # TensorFlow must read the copy under assets/
    cfg["parted"] = str(root / "parted")
    _export_partitioned(cfg["parted"])
    cfg["bundle"] = str(root / "bundle" / "ckpt")
    os.makedirs(os.path.dirname(cfg["bundle"]))
    write_tf_bundle(cfg["bundle"], _BUNDLE_TENSORS + _BUNDLE_SLICES)
    cfg.update(vocab=str(vocab), x=X.tolist(), w=W.tolist(), b=B.tolist())
    theirs = run_tf(f"CFG = {json.dumps(json.dumps(cfg))}\n" + _TF_SIDE, timeout=180)
    return cfg, theirs


_BUNDLE_TENSORS = [
    ("f32", tf.float32, np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)),
    ("f16", tf.float16, np.array([0.5, -2.0], np.float16)),
    ("f64/scalar", tf.float64, np.float64(np.pi)),
    ("i8", tf.int8, np.array([-128, 127], np.int8)),
    ("i64", tf.int64, np.array([[1 << 40]], np.int64)),
    ("u8", tf.uint8, np.arange(5, dtype=np.uint8)),
    ("b", tf.bool, np.array([True, False, True])),
    ("c64", tf.complex64, np.array([1 + 2j], np.complex64)),
    ("s", tf.string, np.array([b"", b"abc", "\u00e9".encode()], dtype=object)),
    ("empty", tf.float32, np.zeros([0, 3], np.float32)),
]


PARTED = np.arange(10, dtype=np.float32).reshape(5, 2)
_BUNDLE_SLICES = [("parted", tf.float32, PARTED[3:], "5 2 3,2:-"),
                  ("parted", tf.float32, PARTED[:3, 1:], "5 2 0,3:1,1"),
                  ("parted", tf.float32, PARTED[:3, :1], "5 2 0,3:0,1")]


@pytest.mark.oracle
def test_tensorflow_loads_tensorflux_saved_models(tf_side):
    cfg, theirs = tf_side
    np.testing.assert_allclose(theirs["simple"], _expected(), rtol=1e-6)
    for key in ("assets", "assets_text"):
        y, seen, text = theirs[key]
        np.testing.assert_allclose(y, _expected(), rtol=1e-6)
        assert seen == os.path.join(cfg[key], "assets", "vocab.txt").encode()
        assert text == b"alpha\nbeta\n"
    assert theirs["bad_tags"] == "RuntimeError"
    np.testing.assert_array_equal(theirs["lookup"], IDS)
    np.testing.assert_array_equal(theirs["parted"], EMB[[0, 7, 12]])


@pytest.mark.oracle
def test_tensorflow_reads_our_bundle_of_every_dtype(tf_side):
    _, theirs = tf_side
    got = theirs["bundle"]
    assert sorted(got) == sorted([name for name, _, _ in _BUNDLE_TENSORS] + ["parted"])
    np.testing.assert_array_equal(got["parted"][0], PARTED)
    for name, dtype, value in _BUNDLE_TENSORS:
        got_value, got_dtype = got[name]
        if dtype.is_complex:
            value = np.stack([value.real, value.imag])
        if dtype != tf.string:
            assert got_dtype == dtype.as_numpy_dtype().dtype.name, name
        if dtype == tf.string:
            assert got_value == list(value), name
        else:
            np.testing.assert_array_equal(np.asarray(got_value).reshape(np.shape(value)),
                                          value, err_msg=name)


@pytest.mark.oracle
def test_tensorflux_loads_a_tensorflow_builder_saved_model(tf_side):
    cfg, theirs = tf_side
    with tf.Graph().as_default() as g, tf.Session(graph=g) as sess:
        mgd = tf.saved_model.loader.load(sess, ["serve"], cfg["tf_builder"])
        np.testing.assert_allclose(_run_signature(sess, mgd), theirs["tf_builder"], rtol=1e-6)
        np.testing.assert_allclose(theirs["tf_builder"], _expected(), rtol=1e-6)
        assert sess.run(_local("asset_seen")).decode() == os.path.join(cfg["tf_builder"], "assets",
                                                                  "vocab.txt")
        cls = mgd.signature_def["classify"]
        assert tf.saved_model.signature_def_utils.is_valid_signature(cls)
        assert {v.op.type for v in tf.global_variables()} == {"VariableV2", "VarHandleOp"}


@pytest.mark.oracle
def test_tensorflux_loads_a_tensorflow_simple_save(tf_side):
    if op_registry.lookup("StringJoin") is None:
        pytest.skip("TensorFlow's sharded saver graph needs the StringJoin op (tf.strings)")
    cfg, theirs = tf_side
    with tf.Graph().as_default() as g, tf.Session(graph=g) as sess:
        mgd = tf.saved_model.loader.load(sess, ["serve"], cfg["tf_simple"])
        np.testing.assert_allclose(_run_signature(sess, mgd), theirs["tf_simple"], rtol=1e-6)
        # Re-export what TensorFlow wrote; it loads again with the same outputs.
        tf.saved_model.simple_save(sess, cfg["tf_simple"] + "_again",
                                   {"x": g.get_tensor_by_name("x:0")},
                                   {"y": g.get_tensor_by_name("y:0")})
    with tf.Graph().as_default() as g, tf.Session(graph=g) as sess:
        mgd = tf.saved_model.loader.load(sess, ["serve"], cfg["tf_simple"] + "_again")
        np.testing.assert_allclose(_run_signature(sess, mgd), theirs["tf_simple"], rtol=1e-6)


@pytest.mark.oracle
def test_a_tensorflow_model_re_exported_by_tensorflux_loads_in_tensorflow(tf_side, tmp_path):
    """Ref variables (VariableV2) survive the trip TF -> tensorflux -> TF: restored with
    Assign, exported as non-resource VariableDefs."""
    cfg, theirs = tf_side
    again = str(tmp_path / "again")
    with tf.Graph().as_default() as g, tf.Session(graph=g) as sess:
        tf.saved_model.loader.load(sess, ["serve"], cfg["tf_builder"])
        tf.saved_model.simple_save(sess, again, {"x": g.get_tensor_by_name("x:0")},
                                   {"y": g.get_tensor_by_name("y:0")})
    with tf.Graph().as_default() as g, tf.Session(graph=g) as sess:
        mgd = tf.saved_model.loader.load(sess, ["serve"], again)
        np.testing.assert_allclose(_run_signature(sess, mgd), theirs["tf_builder"], rtol=1e-6)
    y = run_tf(f"d, x = {again!r}, np.array({X.tolist()}, np.float32)\n" + """
with tf.Session(graph=tf.Graph()) as sess:
    mgd = tf.saved_model.loader.load(sess, ["serve"], d)
    sig = mgd.signature_def["serving_default"]
    result = sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: x})
""")
    np.testing.assert_allclose(y, theirs["tf_builder"], rtol=1e-6)
