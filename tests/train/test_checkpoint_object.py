"""tf.train.Checkpoint (TF1's, graph mode): object-based checkpoints of variables, lists
and dicts, nested Checkpoints, the global step and tf.train optimizers; restore statuses,
deferred restoration, errors, and how tf.train.Saver and the checkpoint readers see them.
The keys and the object graph are TensorFlow's (test_checkpoint_vs_tensorflow.py compares
them with TensorFlow's own)."""

import os

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.protos import trackable_object_graph_pb2

GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


def _program():
    """Variables, the global step and Adam's slots under a Checkpoint, trained one step."""
    v = tf.get_variable("v", initializer=np.array([1.0, 2.0], np.float32))
    w = tf.Variable([5.0], name="w")
    gs = tf.train.get_or_create_global_step()
    opt = tf.train.AdamOptimizer(0.1)
    train = opt.minimize(tf.reduce_sum(v * v) + tf.reduce_sum(w * w), global_step=gs)
    ck = tf.train.Checkpoint(v=v, sub=tf.train.Checkpoint(w=w), opt=opt, step=gs,
                             lst=[v, w], d={"a": w}, e=[])
    return ck, train, (v, w, gs, opt)


def _object_graph(path):
    data = tf.train.NewCheckpointReader(path).get_tensor(GRAPH_KEY)
    return trackable_object_graph_pb2.TrackableObjectGraph.FromString(data)


# the keys TensorFlow 2.21 writes for _program (tf.compat.v1.train.Checkpoint)
PROGRAM_KEYS = [
    "d/a/.ATTRIBUTES/VARIABLE_VALUE",
    "d/a/.OPTIMIZER_SLOT/opt/m/.ATTRIBUTES/VARIABLE_VALUE",
    "d/a/.OPTIMIZER_SLOT/opt/v/.ATTRIBUTES/VARIABLE_VALUE",
    "opt/beta1_power/.ATTRIBUTES/VARIABLE_VALUE",
    "opt/beta2_power/.ATTRIBUTES/VARIABLE_VALUE",
    "save_counter/.ATTRIBUTES/VARIABLE_VALUE",
    "step/.ATTRIBUTES/VARIABLE_VALUE",
    "v/.ATTRIBUTES/VARIABLE_VALUE",
    "v/.OPTIMIZER_SLOT/opt/m/.ATTRIBUTES/VARIABLE_VALUE",
    "v/.OPTIMIZER_SLOT/opt/v/.ATTRIBUTES/VARIABLE_VALUE",
]


def _save_program(tmp_path):
    with tf.Graph().as_default():
        ck, train, (v, w, gs, opt) = _program()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            path = ck.save(str(tmp_path / "ck"), session=sess)
            values = sess.run([v, w, gs, opt.get_slot(v, "m"), opt.get_slot(w, "v")])
    return path, values


def test_save_writes_tensorflows_keys_and_object_graph(tmp_path):
    path, _ = _save_program(tmp_path)
    assert path == str(tmp_path / "ck-1")
    names = dict(tf.train.list_variables(path))
    assert sorted(names) == sorted(PROGRAM_KEYS + [GRAPH_KEY])
    assert names["v/.ATTRIBUTES/VARIABLE_VALUE"] == [2]
    graph = _object_graph(path)
    root = graph.nodes[0]
    assert [c.local_name for c in root.children] == ["d", "e", "lst", "opt", "step", "sub",
                                                      "v", "save_counter"]
    assert not graph.nodes[2].has_checkpoint_values.value  # e=[]: nothing below it
    opt = graph.nodes[4]
    assert [(s.slot_name, graph.nodes[s.slot_variable_node_id].attributes[0].full_name)
            for s in opt.slot_variables] == [("m", "v/Adam"), ("m", "w/Adam"),
                                             ("v", "v/Adam_1"), ("v", "w/Adam_1")]
    reader = tf.train.load_checkpoint(path)
    assert reader.get_tensor("save_counter/.ATTRIBUTES/VARIABLE_VALUE") == 1
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == path
    assert open(tmp_path / "checkpoint").read().startswith('model_checkpoint_path: "ck-1"')


def test_restore_brings_back_every_value(tmp_path):
    path, want = _save_program(tmp_path)
    with tf.Graph().as_default():
        ck, train, (v, w, gs, opt) = _program()
        status = ck.restore(path)
        status.assert_consumed().assert_existing_objects_matched().assert_nontrivial_match()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            status.run_restore_ops(sess)
            got = sess.run([v, w, gs, opt.get_slot(v, "m"), opt.get_slot(w, "v")])
            assert sess.run(ck.save_counter) == 1
            assert ck.save(str(tmp_path / "ck"), session=sess).endswith("ck-2")
    for a, b in zip(want, got, strict=True):
        np.testing.assert_array_equal(a, b)


def test_write_numbers_nothing_and_returns_the_prefix(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(3.0, name="v")
        ck = tf.train.Checkpoint(v=v)
        with tf.Session() as sess:
            sess.run(v.initializer)
            prefix = str(tmp_path / "sub" / "dir" / "plain")  # directories are made
            assert ck.write(prefix, session=sess) == prefix
            assert ck._save_counter is None
    assert not os.path.exists(tmp_path / "sub" / "dir" / "checkpoint")
    assert tf.train.load_variable(prefix, "v/.ATTRIBUTES/VARIABLE_VALUE") == 3.0


def test_deferred_restoration_binds_objects_made_after_restore(tmp_path):
    path, want = _save_program(tmp_path)
    with tf.Graph().as_default():
        ck = tf.train.Checkpoint()
        status = ck.restore(path)
        with pytest.raises(AssertionError, match=r"Unresolved object in checkpoint "
                                                  r"\(root\)\.step: attributes"):
            status.assert_consumed()
        status.assert_existing_objects_matched()  # nothing made yet, nothing unmatched
        ck.v = tf.get_variable("v", initializer=np.zeros(2, np.float32))
        ck.opt = tf.train.AdamOptimizer(0.1)
        ck.opt.minimize(tf.reduce_sum(ck.v * ck.v))  # makes v's slots after restore
        with tf.Session() as sess:
            status.run_restore_ops(sess)
            np.testing.assert_array_equal(sess.run(ck.v), want[0])
            np.testing.assert_array_equal(sess.run(ck.opt.get_slot(ck.v, "m")), want[3])
            with pytest.raises(AssertionError, match=r"\(root\)\.step"):
                status.assert_consumed()  # the step and w are still missing
            ck.extra = tf.Variable([0.0], name="extra")
            with pytest.raises(AssertionError, match=r"Found 1 Python objects that were not "
                                                      r"bound.*'extra:0'"):
                status.assert_existing_objects_matched()
            status.expect_partial()
            status.initialize_or_restore(sess)  # extra is initialized, not restored
            assert sess.run(ck.extra) == [0.0]
            assert not sess.run(tf.report_uninitialized_variables()).size


def test_a_changed_variable_name_still_restores_by_object_path(tmp_path):
    path, want = _save_program(tmp_path)
    with tf.Graph().as_default():
        other = tf.Variable(np.zeros(2, np.float32), name="completely/different")
        ck = tf.train.Checkpoint(v=other)
        status = ck.restore(path)
        with tf.Session() as sess:
            status.run_restore_ops(sess)
            np.testing.assert_array_equal(sess.run(other), want[0])
        status.assert_existing_objects_matched()
        with pytest.raises(AssertionError, match="Unresolved object"):
            status.assert_consumed()


def test_restore_of_nothing_and_of_a_missing_path(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0], name="v")
        ck = tf.train.Checkpoint(v=v)
        status = ck.restore(None)
        for check in (status.assert_consumed, status.assert_existing_objects_matched,
                      status.assert_nontrivial_match):
            with pytest.raises(AssertionError, match=r"No checkpoint specified "
                                                      r"\(save_path=None\)"):
                check()
        with tf.Session() as sess:
            status.run_restore_ops(sess)  # nothing to run
            status.initialize_or_restore(sess)
            np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
        missing = str(tmp_path / "nothing-here")
        with pytest.raises(tf.errors.NotFoundError, match="Failed to find any matching files "
                                                          f"for {missing}"):
            ck.restore(missing)


def test_only_trackable_objects_are_accepted():
    with tf.Graph().as_default():
        for bad in (1, "x", np.ones(2), tf.constant(1.0)):
            with pytest.raises(ValueError, match="`Checkpoint` was expecting a trackable "
                                                 "object"):
                tf.train.Checkpoint(a=bad)
        ck = tf.train.Checkpoint()
        ck.note = "not tracked"
        ck._private = tf.Variable(1.0, name="p")
        assert [name for name, _ in ck._checkpoint_children()] == ["_private"]


def test_assert_nontrivial_match_needs_more_than_the_root(tmp_path):
    path, _ = _save_program(tmp_path)
    with tf.Graph().as_default():
        ck = tf.train.Checkpoint(unrelated=tf.Variable(1.0, name="u"))
        ck.restore(path).assert_nontrivial_match()  # the save counters match (as in TF)
        v = tf.Variable(1.0, name="v")
        with tf.Session() as sess:
            sess.run(v.initializer)
            written = tf.train.Checkpoint(v=v).write(str(tmp_path / "w"), session=sess)
        status = ck.restore(written)  # written without a save counter
        with pytest.raises(AssertionError, match=r"Nothing except the root object matched.*"
                                                  r"'u:0'.*'save_counter:0'"):
            status.assert_nontrivial_match()


def test_unused_attributes_fail_assert_consumed(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable([1.0], name="v")
        with tf.Session() as sess:
            sess.run(v.initializer)
            path = tf.train.Checkpoint(v=v).save(str(tmp_path / "ck"), session=sess)
    with tf.Graph().as_default():
        # "v" was a variable; here it is a list: its value has nowhere to go
        status = tf.train.Checkpoint(v=[]).restore(path)
        with pytest.raises(AssertionError, match=r"(?s)Unused attributes in these objects.*"
                                                  r"\(root\)\.v.*VARIABLE_VALUE"):
            status.assert_consumed()


def test_saver_restores_an_object_based_checkpoint_by_full_names(tmp_path, caplog):
    path, want = _save_program(tmp_path)
    with tf.Graph().as_default():
        v = tf.get_variable("v", initializer=np.zeros(2, np.float32))
        gs = tf.train.get_or_create_global_step()
        saver = tf.train.Saver([v, gs])
        with tf.Session() as sess:
            saver.restore(sess, path)
            np.testing.assert_array_equal(sess.run(v), want[0])
            assert sess.run(gs) == want[2]
        assert "Restoring an object-based checkpoint using a name-based saver" in caplog.text
        tf.get_variable("u", [2])
        with tf.Session() as sess, pytest.raises(
                tf.errors.NotFoundError, match=r"Existing variables not in the checkpoint: u"
                r"\n\nVariables names when this checkpoint was written which don't exist "
                r"now: beta1_power, .*\n\n\(2 variable name\(s\) did match\)"):
            tf.train.Saver().restore(sess, path)


def test_checkpoint_restores_a_saver_checkpoint_by_graph_names(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable([7.0, 8.0], name="v")
        with tf.Session() as sess:
            sess.run(v.initializer)
            path = tf.train.Saver().save(sess, str(tmp_path / "names"))
    with tf.Graph().as_default():
        v = tf.Variable([0.0, 0.0], name="v")
        ck = tf.train.Checkpoint(x=v)
        status = ck.restore(path)
        assert type(status).__name__ == "NameBasedSaverStatus"
        with tf.Session() as sess:
            # as in TensorFlow's graph mode, the save counter restore() made is looked up
            # by its name too, and the Saver checkpoint has none
            with pytest.raises(tf.errors.NotFoundError, match="save_counter"):
                status.run_restore_ops(sess)
    with tf.Graph().as_default():
        v = tf.Variable([0.0, 0.0], name="v")
        status = tf.train.Checkpoint(x=v).restore(path)
        with pytest.raises(AssertionError, match="Object not restored"):
            status.assert_consumed()


def test_options_skip_slots_and_call_back(tmp_path):
    seen = []
    options = tf.train.CheckpointOptions(experimental_skip_slot_variables=True,
                                         experimental_write_callbacks=[seen.append,
                                                                       lambda: seen.append(0)])
    with tf.Graph().as_default():
        ck, train, _ = _program()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            path = ck.write(str(tmp_path / "noslots"), session=sess, options=options)
    assert seen == [path, 0]
    names = [n for n, _ in tf.train.list_variables(path)]
    assert not [n for n in names if "OPTIMIZER_SLOT" in n]
    assert "opt/beta1_power/.ATTRIBUTES/VARIABLE_VALUE" in names


def test_save_reads_uninitialized_variables_as_an_error(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable([1.0], name="v")
        ck = tf.train.Checkpoint(v=v)
        with tf.Session() as sess, pytest.raises(tf.errors.FailedPreconditionError):
            ck.save(str(tmp_path / "ck"), session=sess)


def test_the_default_session_is_used_and_saves_are_numbered(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable([1.0], name="v")
        ck = tf.train.Checkpoint(v=v)
        with tf.Session() as sess:
            sess.run(v.initializer)
            paths = [ck.save(str(tmp_path / "ck")) for _ in range(3)]
            assert sess.run(ck.save_counter) == 3
    assert [os.path.basename(p) for p in paths] == ["ck-1", "ck-2", "ck-3"]
    assert tf.train.latest_checkpoint(str(tmp_path)) == paths[-1]
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert list(state.all_model_checkpoint_paths) == [paths[-1]]  # save keeps no list


@pytest.mark.parametrize("fmt", ["tensorflux", "tensorflow"])
def test_both_file_formats_round_trip(tmp_path, monkeypatch, fmt):
    monkeypatch.setenv("TENSORFLUX_CHECKPOINT_FORMAT", fmt)
    with tf.Graph().as_default():
        s = tf.Variable([b"a", b"bc"], name="s")
        i = tf.Variable(np.arange(6, dtype=np.int64).reshape(2, 3), name="i")
        ck = tf.train.Checkpoint(strings=s, ints={"x": i})
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = ck.save(str(tmp_path / "ck"), session=sess)
            sess.run([s.assign([b"", b""]), i.assign(tf.zeros_like(i))])
            ck.restore(path).run_restore_ops(sess)
            assert list(sess.run(s)) == [b"a", b"bc"]
            np.testing.assert_array_equal(sess.run(i), np.arange(6).reshape(2, 3))
