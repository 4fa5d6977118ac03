"""tf.io: SerializeTensor/ParseTensor (wire-compatible with TensorFlow's), and the names
re-exported there (gfile, TFRecord, read/write_file, parsing, codecs) working together."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle


@pytest.fixture(autouse=True)
def _fresh_graph():
    with tf.Graph().as_default():
        yield


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


@pytest.mark.parametrize("value", [np.arange(6, dtype=np.float32).reshape(2, 3),
                                   np.array([b"a", b"bc"], object), np.int64(7),
                                   np.array([[True, False]])])
def test_serialize_parse_round_trip(value):
    dtype = tf.as_dtype(np.asarray(value).dtype if np.asarray(value).dtype != object
                        else tf.string)
    s = tf.io.serialize_tensor(value)
    back = tf.io.parse_tensor(s, dtype)
    got = _run(back)
    np.testing.assert_array_equal(got, value)


def test_parse_tensor_type_mismatch():
    s = tf.io.serialize_tensor(np.float32(1.0))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Type mismatch"):
        _run(tf.io.parse_tensor(s, tf.int32))
    with pytest.raises(tf.errors.InvalidArgumentError):
        _run(tf.io.parse_tensor(b"\xff\xff\xff", tf.int32))


@pytest.mark.oracle
def test_serialized_tensors_cross_with_tensorflow():
    theirs = oracle.run_tf("""
with tf.Session() as s:
    result = s.run(tf.io.serialize_tensor(np.arange(6, dtype=np.float32).reshape(2, 3)))
""")
    np.testing.assert_array_equal(_run(tf.io.parse_tensor(theirs, tf.float32)),
                                  np.arange(6, dtype=np.float32).reshape(2, 3))
    ours = _run(tf.io.serialize_tensor(np.array([[1, 2], [3, 4]], np.int32)))
    got = oracle.run_tf(f"""
with tf.Session() as s:
    result = s.run(tf.io.parse_tensor({ours!r}, tf.int32))
""")
    np.testing.assert_array_equal(got, [[1, 2], [3, 4]])


def test_io_names_work_together(tmp_path):
    path = str(tmp_path / "data.tfrecord")
    example = tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[1.5, 2.5]))}))
    with tf.io.TFRecordWriter(path) as writer:
        writer.write(example.SerializeToString())
    records = list(tf.io.tf_record_iterator(path))
    parsed = tf.io.parse_single_example(records[0],
                                        {"x": tf.io.FixedLenFeature([2], tf.float32)})
    np.testing.assert_array_equal(_run(parsed["x"]), [1.5, 2.5])
    assert tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path)
    assert tf.io.gfile.listdir(str(tmp_path)) == ["data.tfrecord"]
    png = tf.io.encode_png(np.zeros((2, 3, 1), np.uint8))
    out = str(tmp_path / "img.png")
    _run(tf.io.write_file(out, png))
    img = _run(tf.io.decode_image(tf.io.read_file(out)))
    assert img.shape == (2, 3, 1)
    with tf.io.gfile.GFile(out, "rb") as f:
        assert f.read().startswith(b"\x89PNG")
    for name in ("VarLenFeature", "FixedLenSequenceFeature", "parse_example", "decode_csv",
                 "decode_raw", "decode_base64", "encode_base64", "decode_jpeg", "matching_files",
                 "TFRecordOptions", "TFRecordCompressionType", "RandomShuffleQueue"):
        assert hasattr(tf.io, name), name


SPARSE_FEATURE_PROGRAM = '''
def ex(idx, idx2, vals):
    f = {"i": tf.train.Feature(int64_list=tf.train.Int64List(value=idx)),
         "j": tf.train.Feature(int64_list=tf.train.Int64List(value=idx2)),
         "v": tf.train.Feature(float_list=tf.train.FloatList(value=vals))}
    return tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString()
records = [ex([3, 0], [1, 2], [1.5, 2.5]), ex([], [], []), ex([5], [0], [7.0])]
feats = {"sp": tf.io.SparseFeature("i", "v", tf.float32, 6),
         "sp2": tf.io.SparseFeature(["i", "j"], "v", tf.float32, [6, 3]),
         "v": tf.io.VarLenFeature(tf.float32)}
batch = tf.io.parse_example(records, feats)
one = tf.io.parse_single_example(records[0],
                                 {"sp": tf.io.SparseFeature("i", "v", tf.float32, 6)})
with tf.Session() as s:
    b, o = s.run([batch, one])
result = {}
for key, value in list(b.items()) + [("one", o["sp"])]:
    result[key + ".indices"] = value.indices
    result[key + ".values"] = value.values
    result[key + ".shape"] = value.dense_shape
result["keys"] = sorted(b)
'''


@pytest.mark.oracle
def test_sparse_feature_matches_tensorflow():
    ours, theirs = oracle.run_both(SPARSE_FEATURE_PROGRAM, tf)
    assert ours["keys"] == theirs["keys"]
    for key in theirs:
        if key != "keys":
            np.testing.assert_array_equal(np.asarray(ours[key]), np.asarray(theirs[key]),
                                          err_msg=key)


SPARSE_SERIALIZATION_PROGRAM = '''
sp = tf.SparseTensor([[0, 0], [0, 2], [2, 1]], [1.5, 2.5, 3.5], [3, 4])
many = tf.io.serialize_many_sparse(sp)
back = tf.io.deserialize_many_sparse(many, tf.float32)
one = tf.io.serialize_sparse(sp)
with tf.Session() as s:
    m, b, o = s.run([many, back, one])
result = {"many": [list(r) for r in m], "one": list(o), "indices": b.indices,
          "values": b.values, "shape": b.dense_shape}
'''


@pytest.mark.oracle
def test_sparse_serialization_matches_tensorflow():
    ours, theirs = oracle.run_both(SPARSE_SERIALIZATION_PROGRAM, tf)
    for key in ("indices", "values", "shape"):
        np.testing.assert_array_equal(np.asarray(ours[key]), np.asarray(theirs[key]),
                                      err_msg=key)
    # TensorProtos may encode the same tensor differently; both sides must read both.
    cross = _run(tf.io.deserialize_many_sparse(np.array(theirs["many"], object), tf.float32))
    np.testing.assert_array_equal(cross.indices, theirs["indices"])
    np.testing.assert_array_equal(cross.values, theirs["values"])


def test_sparse_serialization_round_trip_through_a_queue():
    sp = tf.SparseTensor([[0, 1], [1, 0], [1, 2]], np.array([b"a", b"b", b"c"], object),
                         [2, 3])
    q = tf.FIFOQueue(10, tf.string, shapes=[[3]])
    enq = q.enqueue_many(tf.io.serialize_many_sparse(sp))
    batch = q.dequeue_many(2)
    back = tf.io.deserialize_many_sparse(batch, tf.string)
    with tf.Session() as s:
        s.run(enq)
        v = s.run(back)
    np.testing.assert_array_equal(v.indices, [[0, 1], [1, 0], [1, 2]])
    np.testing.assert_array_equal(v.values, [b"a", b"b", b"c"])
    np.testing.assert_array_equal(v.dense_shape, [2, 3])


JSON_PROGRAM = '''
js = ['{"features": {"feature": {"a": {"int64List": {"value": ["3", "-4"]}}, '
      '"b": {"floatList": {"value": [1.5]}}, "c": {"bytesList": {"value": ["aGk="]}}}}}']
binary = tf.io.decode_json_example(js)
parsed = tf.io.parse_example(binary, {"a": tf.io.VarLenFeature(tf.int64),
                                      "b": tf.io.FixedLenFeature([1], tf.float32),
                                      "c": tf.io.FixedLenFeature([], tf.string)})
with tf.Session() as s:
    p = s.run(parsed)
result = {"a": p["a"].values, "b": p["b"], "c": list(p["c"])}
'''


@pytest.mark.oracle
def test_decode_json_example_matches_tensorflow():
    ours, theirs = oracle.run_both(JSON_PROGRAM, tf)
    np.testing.assert_array_equal(ours["a"], theirs["a"])
    np.testing.assert_array_equal(ours["b"], theirs["b"])
    assert [bytes(x) for x in ours["c"]] == theirs["c"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="JSON"):
        _run(tf.io.decode_json_example(["{not json"]))
