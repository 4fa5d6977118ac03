"""tensorflux/checkpoint/tf_bundle_writer.py: TensorFlow's bundle format, read back by
tf_bundle.py (its checks included). TensorFlow itself reads these files in
test_saved_model.py::test_tensorflow_reads_our_bundle_of_every_dtype."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.checkpoint import open_checkpoint, tf_bundle, tf_bundle_writer


def test_many_blocks_and_restarts_read_back(tmp_path, monkeypatch):
    monkeypatch.setattr(tf_bundle_writer, "_BLOCK_SIZE", 100)  # many data blocks
    tensors = [(f"layer_{i:03d}/kernel", tf.float32, np.full([2, i % 3 + 1], i, np.float32))
               for i in range(70)]
    tensors.append(("s", tf.string, np.array([[b"x" * 300, b""]], dtype=object)))
    prefix = str(tmp_path / "ckpt")
    tf_bundle_writer.write_tf_bundle(prefix, tensors[::-1])  # any order: keys are sorted
    table = tf_bundle.parse_table(open(prefix + ".index", "rb").read(), prefix)
    assert list(table) == sorted(table) and len(table) == 72  # the header under b""
    reader = open_checkpoint(prefix)
    assert isinstance(reader, tf_bundle.TFBundleReader)
    for name, _, value in tensors:
        np.testing.assert_array_equal(reader.get_tensor(name), value)
    assert reader.get_variable_to_shape_map()["layer_005/kernel"] == [2, 3]


def test_corruption_is_detected(tmp_path):
    prefix = str(tmp_path / "ckpt")
    tf_bundle_writer.write_tf_bundle(prefix, [("a", tf.float32, np.ones(4, np.float32)),
                                              ("b", tf.string, np.array([b"xyz"], object))])
    data = prefix + ".data-00000-of-00001"
    raw = bytearray(open(data, "rb").read())
    raw[2] ^= 1
    raw[-1] ^= 1
    open(data, "wb").write(bytes(raw))
    reader = open_checkpoint(prefix)
    for name in ("a", "b"):
        with pytest.raises(tf.errors.DataLossError, match=f"tensor '{name}'"):
            reader.get_tensor(name)
    index = bytearray(open(prefix + ".index", "rb").read())
    index[5] ^= 1
    open(prefix + ".index", "wb").write(bytes(index))
    with pytest.raises(tf.errors.DataLossError, match="ckpt.index is corrupted"):
        open_checkpoint(prefix)


def test_bad_names_and_missing_directory(tmp_path):
    with pytest.raises(ValueError, match="unique"):
        tf_bundle_writer.write_tf_bundle(str(tmp_path / "c"), [("a", tf.int32, 1),
                                                                ("a", tf.int32, 2)])
    with pytest.raises(tf.errors.NotFoundError):
        tf_bundle_writer.write_tf_bundle(str(tmp_path / "no" / "dir" / "c"),
                                         [("a", tf.int32, 1)])
    # a missing last level is created, as TF's BundleWriter (and sharded saves) do
    tf_bundle_writer.write_tf_bundle(str(tmp_path / "newdir" / "c"), [("a", tf.int32, 1)])
    assert (tmp_path / "newdir" / "c.index").exists()


@pytest.mark.parametrize("sharded", [True, False])
def test_saver_save_tf_bundle_restores_with_the_same_saver(tmp_path, sharded):
    with tf.Graph().as_default(), tf.Session() as sess:
        v = tf.Variable(np.arange(4, dtype=np.float32), name="v")
        n = tf.Variable(7, dtype=tf.int64, name="n")
        saver = tf.train.Saver(sharded=sharded)
        sess.run(tf.global_variables_initializer())
        prefix = str(tmp_path / "tfckpt")
        assert saver.save_tf_bundle(sess, prefix) == prefix
        assert isinstance(open_checkpoint(prefix), tf_bundle.TFBundleReader)
        sess.run([v.assign(tf.zeros(4)), n.assign(0)])
        saver.restore(sess, prefix)
        np.testing.assert_array_equal(sess.run(v), np.arange(4))
        assert sess.run(n) == 7


def test_slices_round_trip_and_misuse(tmp_path):
    full = np.arange(12, dtype=np.float64).reshape(4, 3)
    prefix = str(tmp_path / "sliced")
    tf_bundle_writer.write_tf_bundle(prefix, [
        ("t", tf.float64, full[2:], "4 3 2,2:-"), ("t", tf.float64, full[:2], "4 3 0,2:-"),
        ("u", tf.int32, np.int32(5))])
    reader = open_checkpoint(prefix)
    assert reader.get_variable_to_shape_map() == {"t": [4, 3], "u": []}
    np.testing.assert_array_equal(reader.get_tensor("t"), full)
    np.testing.assert_array_equal(reader.read("t", "4 3 1,2:1,2"), full[1:3, 1:3])
    bad = str(tmp_path / "bad")
    part = ("t", tf.float64, full[:2], "4 3 0,2:-")
    for tensors in ([part, part], [("t", tf.float64, full), part], [part, ("t", tf.float64, full)]):
        with pytest.raises(ValueError, match="whole or in distinct slices"):
            tf_bundle_writer.write_tf_bundle(bad, tensors)
    with pytest.raises(tf.errors.InvalidArgumentError, match="has shape"):
        tf_bundle_writer.write_tf_bundle(bad, [("t", tf.float64, full, "4 3 0,2:-")])
