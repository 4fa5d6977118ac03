"""tf.train.Saver, checkpoint management and meta graphs, checked against TensorFlow."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import errors
from tensorflux.train import saver as saver_lib
from tests.oracle import run_tf

ROOT = Path(__file__).resolve().parents[2]


def _graph_with(*specs):
    """A graph with variables (name, value, dtype); returns (graph, variables)."""
    g = tf.Graph()
    with g.as_default():
        vs = [tf.Variable(value, name=name, dtype=dtype) for name, value, dtype in specs]
    return g, vs


# ---- graph structure, as TensorFlow builds it --------------------------------------------

# Recorded from TensorFlow 2.21 (tf.compat.v1, resource variables); see
# test_saver_graph_matches_tensorflow for the live comparison.
TF_SAVER_OPS = [
    ("save/filename/input", "Const", []),
    ("save/filename", "PlaceholderWithDefault", ["save/filename/input:0"]),
    ("save/Const", "PlaceholderWithDefault", ["save/filename:0"]),
    ("save/SaveV2/tensor_names", "Const", []),
    ("save/SaveV2/shape_and_slices", "Const", []),
    ("save/SaveV2", "SaveV2", ["save/Const:0", "save/SaveV2/tensor_names:0",
                               "save/SaveV2/shape_and_slices:0", "v/Read/ReadVariableOp:0",
                               "w/Read/ReadVariableOp:0"]),
    ("save/control_dependency", "Identity", ["save/Const:0"]),
    ("save/RestoreV2/tensor_names", "Const", []),
    ("save/RestoreV2/shape_and_slices", "Const", []),
    ("save/RestoreV2", "RestoreV2", ["save/Const:0", "save/RestoreV2/tensor_names:0",
                                     "save/RestoreV2/shape_and_slices:0"]),
    ("save/Identity", "Identity", ["save/RestoreV2:0"]),
    ("save/AssignVariableOp", "AssignVariableOp", ["v:0", "save/Identity:0"]),
    ("save/Identity_1", "Identity", ["save/RestoreV2:1"]),
    ("save/AssignVariableOp_1", "AssignVariableOp", ["w:0", "save/Identity_1:0"]),
    ("save/restore_all", "NoOp", []),
]


def _saver_ops(graph):
    return [(o.name, o.type, [t.name for t in o.inputs]) for o in graph.get_operations()
            if o.name.startswith("save")]


def test_saver_graph_and_saver_def_are_tensorflows():
    g, _ = _graph_with(("w", [1.0], None), ("v", [2.0, 3.0], None))
    with g.as_default():
        saver = tf.train.Saver()
    assert _saver_ops(g) == TF_SAVER_OPS
    d = saver.as_saver_def()
    assert (d.filename_tensor_name, d.save_tensor_name, d.restore_op_name) == (
        "save/Const:0", "save/control_dependency:0", "save/restore_all")
    assert (d.max_to_keep, d.keep_checkpoint_every_n_hours, d.version) == (
        5, 10000.0, tf.train.SaverDef.V2)
    assert g.get_operation_by_name("save/RestoreV2").device == "/device:CPU:0"


@pytest.mark.oracle
def test_saver_graph_matches_tensorflow():
    got = run_tf("""
        v = tf.get_variable("v", [2], use_resource=True)
        w = tf.get_variable("w", [1], use_resource=True)
        tf.train.Saver()
        result = [(o.name, o.type, [t.name for t in o.inputs])
                  for o in tf.get_default_graph().get_operations() if o.name.startswith("save")]
    """)
    assert [tuple(x) for x in got] == TF_SAVER_OPS


def test_construction_errors_are_tensorflows():
    g, (v,) = _graph_with(("v", [1.0], None))
    with g.as_default():
        with pytest.raises(ValueError, match="^No variables to save$"):
            tf.train.Saver([])
        with pytest.raises(ValueError, match="At least two variables have the same name: v"):
            tf.train.Saver([v, v])
        with pytest.raises(ValueError, match="The same saveable will be restored with two "
                           "names: b"):
            tf.train.Saver({"a": v, "b": v})
        with pytest.raises(TypeError, match="not a Variable"):
            tf.train.Saver([3])
        assert tf.train.Saver([], allow_empty=True).save(tf.Session(), "/nonexistent/x",
                                                         write_meta_graph=False) is None


# ---- round trips -------------------------------------------------------------------------

DTYPES = {
    tf.float16: [0.5, -2.0], tf.bfloat16: [1.5, 3.0], tf.float32: [[1.0, 2.0], [3.0, 4.0]],
    tf.float64: [np.pi], tf.int8: [-128, 127], tf.int16: [-3], tf.int32: [[7]],
    tf.int64: 2**40, tf.uint8: [255], tf.uint16: [65535], tf.uint32: [2**32 - 1],
    tf.uint64: [2**64 - 1], tf.bool: [True, False], tf.complex64: [1 + 2j],
    tf.complex128: [[-1j]], tf.string: [b"a", b"", b"\xff" * 40],
}


def test_every_dtype_round_trips_through_a_saver(tmp_path):
    specs = [(f"v_{d.name}", np.array(val, dtype=d.numpy_dtype), d) for d, val in DTYPES.items()]
    g, vs = _graph_with(*specs)
    with g.as_default():
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "all"))
        with tf.Session() as sess:  # a fresh session: restoring initializes
            saver.restore(sess, path)
            for (_, want, _), got in zip(specs, sess.run(vs), strict=True):
                got = np.asarray(got)
                assert got.dtype == want.dtype
                assert got.tolist() == want.tolist()
    shapes = dict(tf.train.list_variables(str(tmp_path)))
    assert shapes["v_float32"] == [2, 2] and shapes["v_int64"] == []


def test_name_mapped_restore(tmp_path):
    g, (a, b) = _graph_with(("a", [1.0, 2.0], None), ("b", [[5]], tf.int32))
    with g.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = tf.train.Saver({"layer/weights": a, "step": b}).save(sess, str(tmp_path / "m"))
    assert tf.train.list_variables(path) == [("layer/weights", [2]), ("step", [1, 1])]
    g2, (x, y) = _graph_with(("x", [0.0, 0.0], None), ("y", [[0]], tf.int32))
    with g2.as_default(), tf.Session() as sess:
        tf.train.Saver({"layer/weights": x, "step": y}).restore(sess, path)
        assert sess.run(x).tolist() == [1.0, 2.0] and sess.run(y).tolist() == [[5]]
    g3, (z,) = _graph_with(("z", [0.0, 0.0], None))
    with g3.as_default(), tf.Session() as sess:  # a subset, under another name
        tf.train.Saver({"layer/weights": z}).restore(sess, path)
        assert sess.run(z).tolist() == [1.0, 2.0]


def test_partitioned_variables_round_trip(tmp_path):
    g = tf.Graph()
    with g.as_default():
        p = tf.get_variable("emb", [10, 3], initializer=tf.random_normal_initializer(),
                            partitioner=tf.fixed_size_partitioner(3))
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            want = np.concatenate([sess.run(s) for s in p], axis=0)
            path = saver.save(sess, str(tmp_path / "p"))
    assert tf.train.list_variables(path) == [("emb", [10, 3])]
    np.testing.assert_array_equal(tf.train.load_variable(path, "emb"), want)
    with g.as_default(), tf.Session() as sess:
        saver.restore(sess, path)
        np.testing.assert_array_equal(np.concatenate([sess.run(s) for s in p]), want)


def test_sharded_save_writes_one_shard_per_device(tmp_path):
    config = tf.ConfigProto(device_count={"CPU": 2})
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:0"):
            a = tf.Variable(np.arange(4.0), name="a")
        with tf.device("/cpu:1"):
            b = tf.Variable(np.ones((2, 2), np.float32), name="b")
            c = tf.Variable([b"s"], name="c")
        saver = tf.train.Saver(sharded=True)
        assert saver.as_saver_def().sharded
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "sharded"), global_step=3)
            assert path == str(tmp_path / "sharded-3")
        names = sorted(os.listdir(tmp_path))
        data = [n for n in names if ".data-" in n]
        assert [n.split(".data-")[1][:14] for n in data] == ["00000-of-00002", "00001-of-00002"]
        assert not any(n.endswith("_temp") for n in names)
        with tf.Session(config=config) as sess:
            saver.restore(sess, path)
            assert sess.run(a).tolist() == [0.0, 1.0, 2.0, 3.0]
            assert sess.run(c).tolist() == [b"s"] and sess.run(b).sum() == 4.0
    assert tf.train.list_variables(str(tmp_path)) == [("a", [4]), ("b", [2, 2]), ("c", [1])]


# ---- checkpoint state, retention ---------------------------------------------------------


def _counter_graph():
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(0, name="v")
        inc = v.assign_add(1)
    return g, v, inc


def test_max_to_keep_and_state_file(tmp_path):
    g, v, inc = _counter_graph()
    with g.as_default(), tf.Session() as sess:
        sess.run(v.initializer)
        saver = tf.train.Saver(max_to_keep=2)
        paths = []
        for step in range(1, 5):
            sess.run(inc)
            paths.append(saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step))
    assert saver.last_checkpoints == paths[-2:]
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == paths[-1]
    assert list(state.all_model_checkpoint_paths) == paths[-2:]
    assert tf.train.latest_checkpoint(str(tmp_path)) == paths[-1]
    assert [tf.train.checkpoint_exists(p) for p in paths] == [False, False, True, True]
    prefixes = {n.split(".")[1] for n in os.listdir(tmp_path) if n != "checkpoint"}
    assert prefixes == {"ckpt-3", "ckpt-4"}  # data, index and meta of 1 and 2 are gone
    assert tf.train.load_variable(str(tmp_path), "v") == 4


def test_keep_checkpoint_every_n_hours_with_a_fake_clock(tmp_path, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(saver_lib, "_now", lambda: clock[0])
    g, v, inc = _counter_graph()
    with g.as_default(), tf.Session() as sess:
        sess.run(v.initializer)
        saver = tf.train.Saver(max_to_keep=2, keep_checkpoint_every_n_hours=1.0)
        made = []
        for step in range(1, 9):  # one save every 20 minutes
            clock[0] += 20 * 60
            made.append(saver.save(sess, str(tmp_path / "m"), global_step=step,
                                   write_meta_graph=False))
    left = [p for p in made if tf.train.checkpoint_exists(p)]
    # The 2 most recent, plus the first checkpoint made more than one hour after the saver
    # was built (step 3 at +60 min is not "more than"; step 4 at +80 min is), and the next
    # one more than another hour later (step 7 at +140 min).
    assert left == [made[3], made[6], made[7]]
    assert saver.last_checkpoints == made[-2:]


def test_recover_last_checkpoints_after_restart(tmp_path):
    g, v, inc = _counter_graph()
    with g.as_default(), tf.Session() as sess:
        sess.run(v.initializer)
        first = tf.train.Saver(max_to_keep=3)
        for step in range(3):
            first.save(sess, str(tmp_path / "m"), global_step=step, write_meta_graph=False)
        # A new process: a new Saver that knows nothing until it recovers the state.
        second = tf.train.Saver(max_to_keep=3)
        state = tf.train.get_checkpoint_state(str(tmp_path))
        second.recover_last_checkpoints(list(state.all_model_checkpoint_paths) +
                                        [str(tmp_path / "deleted-meanwhile")])
        assert second.last_checkpoints == list(state.all_model_checkpoint_paths)
        second.save(sess, str(tmp_path / "m"), global_step=3, write_meta_graph=False)
    assert not tf.train.checkpoint_exists(str(tmp_path / "m-0"))
    assert second.last_checkpoints == [str(tmp_path / f"m-{i}") for i in (1, 2, 3)]


def test_a_state_file_naming_another_directory_never_deletes_there(tmp_path, caplog):
    victim, run = tmp_path / "victim", tmp_path / "run"
    victim.mkdir()
    run.mkdir()
    g, v, inc = _counter_graph()
    with g.as_default(), tf.Session() as sess:
        sess.run(v.initializer)
        theirs = tf.train.Saver().save(sess, str(victim / "model"), global_step=1)
        before = sorted(os.listdir(victim))
        # A hostile (or stale, or copied) state file in our directory names their checkpoint.
        (run / "checkpoint").write_text(
            'model_checkpoint_path: "../victim/model-1"\n'
            'all_model_checkpoint_paths: "../victim/model-1"\n')
        with caplog.at_level("WARNING", logger="tensorflux"):
            state = tf.train.get_checkpoint_state(str(run))
        assert "outside" in caplog.text and "victim/model-1" in caplog.text
        saver = tf.train.Saver(max_to_keep=1)
        saver.restore(sess, state.model_checkpoint_path)  # restoring from there still works
        saver.recover_last_checkpoints(list(state.all_model_checkpoint_paths))
        caplog.clear()
        with caplog.at_level("WARNING", logger="tensorflux"):
            ours = [saver.save(sess, str(run / "model"), global_step=s) for s in (2, 3)]
        assert "Not deleting the old checkpoint" in caplog.text
    assert tf.train.checkpoint_exists(theirs)  # retention stayed inside run/
    assert sorted(os.listdir(victim)) == before
    assert [tf.train.checkpoint_exists(p) for p in ours] == [False, True]


def test_relative_paths_and_moving_the_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkdir("run")
    g, v, inc = _counter_graph()
    with g.as_default(), tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(inc)
        tf.train.Saver(save_relative_paths=True).save(sess, str(tmp_path / "run" / "m"),
                                                      global_step=1)
        tf.train.Saver().save(sess, "run/other", latest_filename="other_state")
    assert (tmp_path / "run" / "checkpoint").read_text() == (
        'model_checkpoint_path: "m-1"\nall_model_checkpoint_paths: "m-1"\n')
    assert 'model_checkpoint_path: "other"' in (tmp_path / "run" / "other_state").read_text()
    shutil.move(str(tmp_path / "run"), str(tmp_path / "moved"))
    latest = tf.train.latest_checkpoint(str(tmp_path / "moved"))
    assert latest == str(tmp_path / "moved" / "m-1")
    assert tf.train.load_variable(latest, "v") == 1


def test_state_proto_helpers_are_tensorflows():
    p = tf.train.generate_checkpoint_state_proto("ckpts", "ckpts/m-2", ["ckpts/m-1"])
    assert p.model_checkpoint_path == "m-2" and list(p.all_model_checkpoint_paths) == \
        ["m-1", "m-2"]
    with pytest.raises(ValueError, match="must match checkpoint paths"):
        tf.train.generate_checkpoint_state_proto("/d", "/d/a", ["/d/a"], [1.0, 2.0])
    assert tf.train.get_checkpoint_state("/nonexistent") is None
    assert tf.train.latest_checkpoint("/nonexistent") is None


# ---- bad input -----------------------------------------------------------------------------


@pytest.fixture()
def saved_vw(tmp_path):
    g, (v, w) = _graph_with(("v", [1.0, 2.0], None), ("w", [3.0, 4.0, 5.0], None))
    with g.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return tf.train.Saver().save(sess, str(tmp_path / "vw"))


def test_restore_errors_are_typed_and_name_what_is_wrong(saved_vw, tmp_path):
    g, (v, z, z2) = _graph_with(("v", [0.0, 0.0], None), ("z", [0.0], None),
                                ("z2", [0.0], None))
    with g.as_default(), tf.Session() as sess:
        saver = tf.train.Saver()
        with pytest.raises(ValueError, match="^Can't load save_path when it is None.$"):
            saver.restore(sess, None)
        with pytest.raises(ValueError, match="The passed save_path is not a valid checkpoint: "
                           ".*nope$"):
            saver.restore(sess, str(tmp_path / "nope"))
        with pytest.raises(errors.NotFoundError) as info:  # a checkpoint of another model
            saver.restore(sess, saved_vw)
        message = info.value.message
        assert message.startswith("Restoring from checkpoint failed. This is most likely due "
                                  "to a Variable name or other graph key that is missing")
        assert "Key z not found in checkpoint" in message
        assert "missing from the checkpoint: z, z2" in message
        assert sess.run(tf.report_uninitialized_variables()).tolist() == [b"v", b"z", b"z2"]


def test_restoring_into_another_shape_or_dtype_names_the_variable(saved_vw):
    g, (w,) = _graph_with(("w", [0.0, 0.0], None))
    with g.as_default(), tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError) as info:
            tf.train.Saver().restore(sess, saved_vw)
        assert "mismatch between the current graph and the graph" in info.value.message
        assert "tensor_name = w; shape in checkpoint [3] does not match the shape of the " \
               "variable it is restored into: [2]" in info.value.message
    g, (v,) = _graph_with(("v", [0, 0], tf.int32))
    with g.as_default(), tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError,
                           match="tensor_name = v; expected dtype int32 does not equal original "
                                 "dtype float"):
            tf.train.Saver().restore(sess, saved_vw)
    g, (w,) = _graph_with(("w", [[0.0], [0.0], [0.0]], None))
    with g.as_default(), tf.Session() as sess:  # reshape=True allows the same element count
        tf.train.Saver(reshape=True).restore(sess, saved_vw)
        assert sess.run(w).tolist() == [[3.0], [4.0], [5.0]]


def test_corrupt_checkpoint_fails_restore_with_data_loss(saved_vw, tmp_path):
    data = next(p for p in tmp_path.iterdir() if p.name.endswith(".safetensors"))
    raw = bytearray(data.read_bytes())
    raw[-3] ^= 0xFF  # inside w, the last tensor
    data.write_bytes(bytes(raw))
    g, (v, w) = _graph_with(("v", [0.0, 0.0], None), ("w", [0.0, 0.0, 0.0], None))
    with g.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(errors.DataLossError) as info:
            tf.train.Saver().restore(sess, saved_vw)
        assert str(data) in info.value.message and "tensor 'w'" in info.value.message
        assert sess.run(w).tolist() == [0.0, 0.0, 0.0]  # nothing was loaded


def test_save_errors_leave_the_latest_checkpoint_alone(tmp_path):
    g, v, inc = _counter_graph()
    with g.as_default(), tf.Session() as sess:
        sess.run(v.initializer)
        saver = tf.train.Saver()
        good = saver.save(sess, str(tmp_path / "m"), global_step=1)
        with pytest.raises(ValueError, match="Parent directory of .*nodir/sub/m doesn't exist, "
                           "can't save."):
            saver.save(sess, str(tmp_path / "nodir" / "sub" / "m"))
        # One missing level is created, as TensorFlow's SaveV2 does.
        assert saver.save(sess, str(tmp_path / "newdir" / "m"), write_state=False) == \
            str(tmp_path / "newdir" / "m")
        (tmp_path / "afile").write_text("x")
        with pytest.raises(ValueError, match="Parent directory of .*afile/m doesn't exist"):
            saver.save(sess, str(tmp_path / "afile" / "m"))
        with pytest.raises(ValueError, match="'latest_filename' must not contain path"):
            saver.save(sess, str(tmp_path / "m"), latest_filename="a/b")
        with pytest.raises(TypeError, match="'sess' must be a Session"):
            saver.save(object(), str(tmp_path / "m"))
        unwritable = _unwritable_dir(tmp_path)
        if unwritable is not None:
            with pytest.raises(errors.PermissionDeniedError, match="Permission denied"):
                saver.save(sess, os.path.join(unwritable, "m"))
    assert tf.train.latest_checkpoint(str(tmp_path)) == good
    assert not [n for n in os.listdir(tmp_path) if ".tmp-" in n]


def _unwritable_dir(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    if not os.access(d, os.W_OK):
        return str(d)
    if os.path.isdir("/sys") and not os.access("/sys", os.W_OK):
        return "/sys"  # root can write anywhere else
    try:
        fd = os.open("/sys/tfx-probe", os.O_WRONLY | os.O_CREAT)
    except OSError:
        return "/sys"
    os.close(fd)
    return None


# ---- readers -------------------------------------------------------------------------------


def test_checkpoint_reader_api(saved_vw):
    reader = tf.train.NewCheckpointReader(saved_vw)
    assert reader.has_tensor("v") and not reader.has_tensor("zz")
    assert reader.get_variable_to_shape_map() == {"v": [2], "w": [3]}
    assert reader.get_variable_to_dtype_map() == {"v": tf.float32, "w": tf.float32}
    with pytest.raises(errors.NotFoundError, match="^Key zz not found in checkpoint$"):
        reader.get_tensor("zz")
    assert tf.train.load_variable(saved_vw, "w:0").tolist() == [3.0, 4.0, 5.0]
    with pytest.raises(errors.NotFoundError, match="Unsuccessful TensorSliceReader constructor"):
        tf.train.NewCheckpointReader(saved_vw + "nope")


def test_restores_a_tensorflow_checkpoint_into_variables(tmp_path):
    data = Path(__file__).resolve().parents[1] / "checkpoint" / "data"
    for name in ("tf_model.index", "tf_model.data-00000-of-00001"):
        shutil.copy(data / name, tmp_path / name)
    g, (f32, s) = _graph_with(("f32", np.zeros((2, 3), np.float32), None),
                              ("s", [b"", b"", b""], None))
    with g.as_default(), tf.Session() as sess:
        tf.train.Saver().restore(sess, str(tmp_path / "tf_model"))
        assert sess.run(f32).tolist() == [[0, 1, 2], [3, 4, 5]]
        assert sess.run(s).tolist() == [b"hello", b"", b"world!!"]


# ---- meta graphs -------------------------------------------------------------------------

_TRAIN = textwrap.dedent("""
    import sys, numpy as np
    import tensorflux as tf
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.get_variable("w", [3, 1], initializer=tf.ones_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0), name="loss")
    step = tf.train.get_or_create_global_step()
    train_op = tf.train.MomentumOptimizer(0.05, 0.9).minimize(loss, global_step=step)
    tf.add_to_collection("train_op", train_op)
    tf.add_to_collection("labels", "xyz")
    saver = tf.train.Saver()
    data = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(int(sys.argv[2])):
            sess.run(train_op, {x: data})
        saver.save(sess, sys.argv[1], global_step=step)
        print(repr(sess.run(w).tolist()))
""")


def _run(code, *args):
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_meta_graph_lets_another_process_train_further(tmp_path):
    uninterrupted = _run(_TRAIN, tmp_path / "full", 8)
    _run(_TRAIN, tmp_path / "half", 5)
    g = tf.Graph()
    with g.as_default():
        saver = tf.train.import_meta_graph(str(tmp_path / "half-5.meta"))
        assert saver.as_saver_def().restore_op_name == "save/restore_all"
        # minimize() put the op in "train_op" and the program again: TF lists it twice
        train_op, again = tf.get_collection("train_op")
        assert again is train_op
        assert tf.get_collection("labels") == [b"xyz"]
        step = tf.train.get_global_step()
        assert step.dtype == tf.int64
        assert sorted(v.op.name for v in tf.global_variables()) == \
            ["global_step", "w", "w/Momentum"]
        assert [v.op.name for v in tf.trainable_variables()] == ["w"]
        data = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
        with tf.Session() as sess:
            saver.restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
            for _ in range(3):
                sess.run(train_op, {"x:0": data})
            assert sess.run(step) == 8
            w = sess.run(g.get_tensor_by_name("w/Read/ReadVariableOp:0"))
    np.testing.assert_allclose(w.tolist(), eval(uninterrupted), rtol=1e-6)


def test_export_meta_graph_round_trip_and_scope(tmp_path):
    g = tf.Graph()
    with g.as_default():
        with tf.name_scope("net"):
            a = tf.Variable(1.0, name="a")
            b = tf.add(a, 2.0, name="b")
        tf.add_to_collection("outputs", b)
        tf.add_to_collection("numbers", 7)
        mgd = tf.train.export_meta_graph(str(tmp_path / "g.meta"), as_text=True)
    assert mgd.collection_def["numbers"].int64_list.value == [7]
    assert "AddV2" in [op.name for op in mgd.meta_info_def.stripped_op_list.op]
    g2 = tf.Graph()
    with g2.as_default():
        assert tf.train.import_meta_graph(str(tmp_path / "g.meta"), import_scope="imp") \
            is not None
        (out,) = tf.get_collection("outputs")
        assert out.name == "imp/net/b:0"
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(out) == 3.0


@pytest.mark.oracle
def test_tensorflow_imports_our_meta_graph_and_checkpoint_state(tmp_path):
    g, v, inc = _counter_graph()
    with g.as_default(), tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(inc)
        tf.train.Saver().save(sess, str(tmp_path / "m"), global_step=1)
    got = run_tf(f"""
        saver = tf.train.import_meta_graph({str(tmp_path / "m-1.meta")!r})
        result = [tf.train.latest_checkpoint({str(tmp_path)!r}),
                  [op.name for op in tf.get_default_graph().get_operations()
                   if op.type == "RestoreV2"]]
    """)
    assert got == [str(tmp_path / "m-1"), ["save/RestoreV2"]]


# ---- restored tensors become variable storage without a copy ----------------------------


def test_restore_copies_each_tensor_once(tmp_path, monkeypatch):
    """Restored tensors are read into new buffers that the assigns keep as the variables'
    storage (no second copy); the variables still behave as snapshots afterwards."""
    from tensorflux.kernels.cpu import state_ops

    g, (v, w) = _graph_with(("v", np.arange(6.0, dtype=np.float32), None),
                            ("w", [[1, 2]], tf.int64))
    with g.as_default():
        saver = tf.train.Saver()
        bump = v.assign_add(tf.ones([6]))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "m"))
        copies = []
        real = state_ops._private_copy
        monkeypatch.setattr(state_ops, "_private_copy",
                            lambda *a: copies.append(1) or real(*a))
        with tf.Session() as sess:
            saver.restore(sess, path)
            assert copies == []
            got = sess.run(v)
            got_again = sess.run(v)
            assert got is not got_again  # fetched values the variable holds are copies
            sess.run(bump)
            assert got.tolist() == list(range(6))  # a snapshot stays a snapshot
            assert sess.run(v).tolist() == [float(i + 1) for i in range(6)]
            assert sess.run(w).tolist() == [[1, 2]]


def test_one_restored_tensor_assigned_twice_gives_two_variables(tmp_path):
    """The first assign keeps the restored buffer, the second copies it: updating one
    variable in place leaves the other alone. A fed value is always copied."""
    from tensorflux.ops.save_restore_ops import restore_v2

    g, (v,) = _graph_with(("v", [1.0, 2.0, 3.0], None))
    with g.as_default():
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = tf.train.Saver().save(sess, str(tmp_path / "m"))
        a = tf.Variable(tf.zeros([3]), name="a")
        b = tf.Variable(tf.zeros([3]), name="b")
        (value,) = restore_v2(path, ["v"], [""], [tf.float32])
        both = tf.group(a.assign(value), b.assign(value))
        fed = tf.placeholder(tf.float32, [3])
        assign_fed = a.assign(fed)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            restored, _ = sess.run([value, both])
            sess.run(a.assign_add([10.0, 10.0, 10.0]))
            assert sess.run(b).tolist() == [1.0, 2.0, 3.0]
            assert sess.run(a).tolist() == [11.0, 12.0, 13.0]
            assert restored.tolist() == [1.0, 2.0, 3.0]
            user = np.array([7.0, 8.0, 9.0], np.float32)
            sess.run(assign_fed, {fed: user})
            user[:] = 0
            assert sess.run(a).tolist() == [7.0, 8.0, 9.0]


def test_save_starts_writeback_of_each_tensor_as_it_is_written(tmp_path, monkeypatch):
    """Each tensor's bytes are handed to the disk right after they are written (the final
    fsync then waits only for the tail): the ranges follow each other from the header's
    end to the file's end, and the checkpoint reads back."""
    from tensorflux.checkpoint import files

    ranges = []
    real = files.start_writeback
    monkeypatch.setattr(files, "start_writeback",
                        lambda fd, off, n: ranges.append((off, n)) or real(fd, off, n))
    g, (a, b) = _graph_with(("a", np.arange(1000.0), None), ("b", [[1, 2, 3]], tf.int32))
    with g.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = tf.train.Saver().save(sess, str(tmp_path / "m"))
    data = [f for f in os.listdir(tmp_path) if ".data-" in f]
    size = os.path.getsize(tmp_path / data[0])
    assert len(ranges) == 2 and ranges[0][0] + ranges[0][1] == ranges[1][0]
    assert ranges[1][0] + ranges[1][1] == size
    assert tf.train.load_variable(path, "a").tolist() == list(np.arange(1000.0))


def test_a_restored_slice_is_copied_not_kept(tmp_path, monkeypatch):
    """A slice read from a stored tensor is a view of the whole tensor's buffer: the assign
    copies it, so the variable does not keep the rest of the tensor alive."""
    from tensorflux.kernels.cpu import state_ops
    from tensorflux.ops.save_restore_ops import restore_v2

    g, (v,) = _graph_with(("v", [1.0, 2.0, 3.0, 4.0], None))
    with g.as_default():
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = tf.train.Saver().save(sess, str(tmp_path / "m"))
        part = tf.Variable(tf.zeros([2]), name="part")
        (value,) = restore_v2(path, ["v"], ["4 1,2"], [tf.float32])
        copies = []
        real = state_ops._private_copy
        monkeypatch.setattr(state_ops, "_private_copy",
                            lambda *a: copies.append(1) or real(*a))
        with tf.Session() as sess:
            sess.run(part.assign(value))  # `part` is uninitialized: a copy or the buffer
            assert copies == [1]
            assert sess.run(part).tolist() == [2.0, 3.0]


# ---- SaveableObjects (GraphKeys.SAVEABLE_OBJECTS) -----------------------------------------


class _DoubledSaveable(saver_lib.BaseSaverBuilder.SaveableObject):
    """Saves a variable doubled under two names; restore halves the first one back."""

    def __init__(self, var, name):
        specs = [saver_lib.BaseSaverBuilder.SaveSpec(var.read_value() * 2, "", name + "/a"),
                 saver_lib.BaseSaverBuilder.SaveSpec(var.read_value() * 3, "", name + "/b")]
        super().__init__(var, specs, name)
        self.var = var

    def restore(self, restored_tensors, restored_shapes):
        assert restored_shapes == [None, None]
        return self.var.assign(restored_tensors[0] / 2 + 0 * restored_tensors[1])


def test_saveable_objects_save_their_specs_and_restore_through_their_op(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0], name="v", collections=[])
        tf.add_to_collection(tf.GraphKeys.SAVEABLE_OBJECTS, _DoubledSaveable(v, "dbl"))
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(v.initializer)
            path = saver.save(sess, str(tmp_path / "ckpt"))
            sess.run(v.assign([7.0, 7.0]))
            saver.restore(sess, path)
            np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
    reader = tf.train.NewCheckpointReader(path)
    np.testing.assert_array_equal(reader.get_tensor("dbl/a"), [2.0, 4.0])
    np.testing.assert_array_equal(reader.get_tensor("dbl/b"), [3.0, 6.0])
