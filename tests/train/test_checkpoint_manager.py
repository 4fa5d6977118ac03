"""tf.train.CheckpointManager: numbering, rotation (max_to_keep, keep_checkpoint_every_n_hours
with a fake clock), the state file it keeps and a later manager recovering it."""

import os

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.train import checkpoint_manager


def _files(directory) -> list:
    return sorted(n for n in os.listdir(directory) if n.endswith(".index"))


def _setup():
    v = tf.Variable([1.0, 2.0], name="v")
    return v, tf.train.Checkpoint(v=v)


def test_rotation_keeps_the_newest(tmp_path):
    with tf.Graph().as_default():
        v, ck = _setup()
        manager = tf.train.CheckpointManager(ck, str(tmp_path), max_to_keep=2)
        assert manager.latest_checkpoint is None and manager.checkpoints == []
        with tf.Session() as sess:
            sess.run(v.initializer)
            paths = []
            for i in range(4):
                sess.run(v.assign([float(i), 0.0]))
                paths.append(manager.save())
            assert sess.run(ck.save_counter) == 4
    assert [os.path.basename(p) for p in paths] == ["ckpt-1", "ckpt-2", "ckpt-3", "ckpt-4"]
    assert manager.checkpoints == paths[2:]
    assert manager.latest_checkpoint == paths[-1]
    assert _files(tmp_path) == ["ckpt-3.index", "ckpt-4.index"]
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert list(state.all_model_checkpoint_paths) == paths[2:]
    assert len(state.all_model_checkpoint_timestamps) == 2
    assert tf.train.latest_checkpoint(str(tmp_path)) == paths[-1]
    assert 'model_checkpoint_path: "ckpt-4"' in open(tmp_path / "checkpoint").read()
    value = tf.train.load_variable(paths[-1], "v/.ATTRIBUTES/VARIABLE_VALUE")
    np.testing.assert_array_equal(value, [3.0, 0.0])


def test_a_new_manager_goes_on_where_the_last_stopped(tmp_path):
    with tf.Graph().as_default():
        v, ck = _setup()
        with tf.Session() as sess:
            sess.run(v.initializer)
            first = tf.train.CheckpointManager(ck, str(tmp_path), max_to_keep=3,
                                               checkpoint_name="model")
            for _ in range(2):
                first.save()
            second = tf.train.CheckpointManager(ck, str(tmp_path), max_to_keep=3,
                                                checkpoint_name="model")
            assert second.checkpoints == first.checkpoints
            assert second.latest_checkpoint == first.latest_checkpoint
            for _ in range(3):
                second.save()
    assert _files(tmp_path) == ["model-3.index", "model-4.index", "model-5.index"]


def test_checkpoint_numbers_and_max_to_keep_none(tmp_path):
    with tf.Graph().as_default():
        v, ck = _setup()
        step = tf.train.get_or_create_global_step()
        manager = tf.train.CheckpointManager(ck, str(tmp_path), max_to_keep=None)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert manager.save(checkpoint_number=100).endswith("ckpt-100")
            sess.run(step.assign(7))
            assert manager.save(checkpoint_number=step).endswith("ckpt-7")
            assert manager.save(checkpoint_number=100).endswith("ckpt-100")  # to the end
            assert sess.run(ck.save_counter) == 3  # counts every save anyway
    assert [os.path.basename(p) for p in manager.checkpoints] == ["ckpt-7", "ckpt-100"]
    with pytest.raises(ValueError, match="Expected a positive integer or `None` for "
                                         "`max_to_keep`, got 0"):
        tf.train.CheckpointManager(ck, str(tmp_path), max_to_keep=0)


def test_keep_checkpoint_every_n_hours_preserves_some(tmp_path, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(checkpoint_manager, "_now", lambda: clock[0])
    with tf.Graph().as_default():
        v, ck = _setup()
        with tf.Session() as sess:
            sess.run(v.initializer)
            manager = tf.train.CheckpointManager(ck, str(tmp_path), max_to_keep=1,
                                                 keep_checkpoint_every_n_hours=1)
            for _ in range(5):
                clock[0] += 1800  # half an hour per save
                manager.save()
    # saved at t = 2800, 4600, 6400, 8200, 10000; leaving the kept set, a checkpoint is
    # preserved when it is an hour past the last preserved one (at first t = 999):
    # ckpt-1 is not (deleted), ckpt-2 is, ckpt-3 is not (after ckpt-2), ckpt-4 is
    assert _files(tmp_path) == ["ckpt-2.index", "ckpt-4.index", "ckpt-5.index"]
    assert [os.path.basename(p) for p in manager.checkpoints] == ["ckpt-5"]


def test_checkpoint_interval_and_restore_or_initialize(tmp_path):
    with tf.Graph().as_default():
        v, ck = _setup()
        step = tf.train.get_or_create_global_step()
        inits = []
        manager = tf.train.CheckpointManager(ck, str(tmp_path), max_to_keep=5,
                                             step_counter=step, checkpoint_interval=10,
                                             init_fn=lambda: inits.append(1))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert manager.restore_or_initialize() is None and inits == [1]
            saved = []
            for s in (0, 0, 5, 10, 12, 20):
                sess.run(step.assign(s))
                saved.append(manager.save() is not None)
            assert saved == [True, False, False, True, False, True]
            assert manager.save(check_interval=False) is None  # this step was saved
            sess.run(step.assign(21))
            assert manager.save(check_interval=False) is not None
            assert manager.restore_or_initialize() == manager.latest_checkpoint
    with pytest.raises(ValueError, match="`step_counter` should be passed"):
        tf.train.CheckpointManager(ck, str(tmp_path), 1, checkpoint_interval=3)


def test_save_needs_a_default_session(tmp_path):
    with tf.Graph().as_default():
        _, ck = _setup()
        manager = tf.train.CheckpointManager(ck, str(tmp_path), max_to_keep=1)
        with pytest.raises(ValueError, match="default session"):
            manager.save()
