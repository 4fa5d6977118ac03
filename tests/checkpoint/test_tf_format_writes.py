"""TENSORFLUX_CHECKPOINT_FORMAT=tensorflow: SaveV2 writes TensorFlow's own tensor bundle and
MergeV2Checkpoints merges bundles (checkpoint/tf_bundle_writer.py), so `tf.train.Saver`
checkpoints are restorable by TensorFlow itself; tensorflux restores them as its own."""

import os

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.checkpoint import files, tf_bundle
from tests import oracle


@pytest.fixture
def tf_format(monkeypatch):
    monkeypatch.setenv("TENSORFLUX_CHECKPOINT_FORMAT", "tensorflow")


def _model():
    with tf.device("/cpu:0"):
        a = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="a")
        s = tf.Variable([b"x", b"", b"yz" * 40], name="s")
        i = tf.Variable(np.array([[1, -2]], np.int64), name="i")
    # one partitioned variable with its slices on two devices: a sharded save writes them
    # in two parts, and the merged index lists all three slices of one tensor
    with tf.device(lambda op: "/cpu:1" if "part_1" in op.name else "/cpu:0"):
        with tf.variable_scope("emb"):
            p = tf.get_variable("p", [10, 2], partitioner=tf.fixed_size_partitioner(3),
                                initializer=tf.random_normal_initializer(seed=1))
    return [a, s, i, p]


def _values(sess, variables):
    return [sess.run(v.as_tensor() if hasattr(v, "as_tensor") else v) for v in variables]


@pytest.mark.parametrize("sharded", [False, True])
def test_saver_writes_a_tensorflow_bundle_and_restores_it(tmp_path, tf_format, sharded):
    config = tf.ConfigProto(device_count={"CPU": 2})
    with tf.Graph().as_default():
        variables = _model()
        saver = tf.train.Saver(sharded=sharded, max_to_keep=2)
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            want = _values(sess, variables)
            for step in range(3):
                path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
            sess.run([v.initializer for v in tf.global_variables()])  # forget the values
            sess.run(tf.assign(variables[0], tf.zeros([2, 3])))
            saver.restore(sess, path)
            got = _values(sess, variables)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_array_equal(g, w)
    with open(path + ".index", "rb") as f:
        assert tf_bundle.is_table(f.read())
    names = sorted(os.listdir(tmp_path))
    assert not any(n.startswith("model.ckpt-0.") for n in names)  # max_to_keep deleted it
    assert not any(n.endswith(".safetensors") for n in names)
    data = [n for n in names if n.startswith("model.ckpt-2.data-")]
    assert data and all(n.endswith(f"-of-{len(data):05d}") for n in data)
    assert not os.path.exists(str(tmp_path / "model.ckpt-2_temp"))


def test_a_bundle_replaces_a_tensorflux_checkpoint_at_the_same_prefix(tmp_path, monkeypatch):
    prefix = str(tmp_path / "ckpt")
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0], name="v")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(v.initializer)
            saver.save(sess, prefix)
            assert any(n.endswith(".safetensors") for n in os.listdir(tmp_path))
            monkeypatch.setenv("TENSORFLUX_CHECKPOINT_FORMAT", "tensorflow")
            sess.run(v.assign([3.0, 4.0]))
            saver.save(sess, prefix)
            assert not any(n.endswith(".safetensors") for n in os.listdir(tmp_path))
            sess.run(v.assign([0.0, 0.0]))
            saver.restore(sess, prefix)
            np.testing.assert_array_equal(sess.run(v), [3.0, 4.0])


def test_a_flipped_byte_of_a_bundle_is_data_loss(tmp_path, tf_format):
    prefix = str(tmp_path / "ckpt")
    with tf.Graph().as_default():
        v = tf.Variable(np.arange(100, dtype=np.float32), name="v")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(v.initializer)
            saver.save(sess, prefix)
            [data] = files.data_files_of(prefix)
            raw = bytearray(open(data, "rb").read())
            raw[37] ^= 0x10
            open(data, "wb").write(bytes(raw))
            with pytest.raises(tf.errors.DataLossError, match="checksum"):
                saver.restore(sess, prefix)


def test_an_unknown_format_name_fails_the_save(tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORFLUX_CHECKPOINT_FORMAT", "hdf5")
    with tf.Graph().as_default():
        v = tf.Variable([1.0], name="v")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(v.initializer)
            with pytest.raises(tf.errors.InvalidArgumentError, match="tensorflux, tensorflow"):
                saver.save(sess, str(tmp_path / "ckpt"))


_READ_BACK = """
r = tf.train.NewCheckpointReader(PATH)
result = {k: r.get_tensor(k) for k in ["a", "i", "emb/p", "global_step"]}
result["s"] = [x.decode() for x in r.get_tensor("s")]
result["shapes"] = {k: list(v) for k, v in r.get_variable_to_shape_map().items()}
"""


@pytest.mark.oracle
@pytest.mark.timeout(300)
def test_tensorflow_reads_a_sharded_bundle_written_by_saver(tmp_path, tf_format):
    with tf.Graph().as_default():
        variables = _model()
        tf.train.get_or_create_global_step()
        saver = tf.train.Saver(sharded=True)
        with tf.Session(config=tf.ConfigProto(device_count={"CPU": 2})) as sess:
            sess.run(tf.global_variables_initializer())
            want = _values(sess, variables)
            path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=7)
    theirs = oracle.run_tf(_READ_BACK.replace("PATH", repr(path)))
    np.testing.assert_array_equal(theirs["a"], want[0])
    assert theirs["s"] == [x.decode() for x in want[1]]
    np.testing.assert_array_equal(theirs["i"], want[2])
    np.testing.assert_array_equal(theirs["emb/p"], want[3])
    assert theirs["global_step"] == 0
    assert theirs["shapes"] == {"a": [2, 3], "s": [3], "i": [1, 2], "emb/p": [10, 2],
                                "global_step": []}
