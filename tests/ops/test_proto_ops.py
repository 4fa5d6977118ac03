"""tf.io.decode_proto / encode_proto: sizes, padded values and defaults, message fields as
bytes, text format, a FileDescriptorSet source, the round trip, typed errors; against
TensorFlow on the same serialized messages."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.protos import example_pb2, feature_pb2, tensor_shape_pb2

DIM = "tensorflow.TensorShapeProto.Dim"
SHAPE = "tensorflow.TensorShapeProto"


def _dims():
    return [tensor_shape_pb2.TensorShapeProto.Dim(size=3, name="a").SerializeToString(),
            tensor_shape_pb2.TensorShapeProto.Dim(size=-1).SerializeToString()]


def _shapes():
    return [tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=i) for i in range(k)],
        unknown_rank=(k == 0)).SerializeToString() for k in (0, 2, 3)]


def _run(*fetches):
    with tf.Session() as sess:
        return sess.run(list(fetches))


def test_singular_fields_sizes_and_defaults():
    with tf.Graph().as_default():
        sizes, (size, name) = tf.io.decode_proto(_dims(), DIM, ["size", "name"],
                                                 [tf.int64, tf.string])
        assert sizes.shape.as_list() == [2, 2] and size.shape.as_list() == [2, None]
        got = _run(sizes, size, name)
    assert got[0].tolist() == [[1, 1], [1, 0]]
    assert got[1].tolist() == [[3], [-1]] and got[2].tolist() == [[b"a"], [b""]]


def test_repeated_message_fields_round_trip():
    shapes = _shapes()
    with tf.Graph().as_default():
        sizes, values = tf.io.decode_proto(np.array(shapes).reshape(3, 1), SHAPE,
                                           ["dim", "unknown_rank"], [tf.string, tf.bool])
        encoded = tf.io.encode_proto(sizes, values, ["dim", "unknown_rank"], SHAPE)
        got_sizes, dims, ranks, back = _run(sizes, values[0], values[1], encoded)
    assert got_sizes.tolist() == [[[0, 1]], [[2, 0]], [[3, 0]]]
    assert dims.shape == (3, 1, 3) and ranks.tolist() == [[[True]], [[False]], [[False]]]
    sub = tensor_shape_pb2.TensorShapeProto.Dim.FromString(dims[2, 0, 2])
    assert sub.size == 2
    assert [tensor_shape_pb2.TensorShapeProto.FromString(b) for b in back.ravel()] == \
        [tensor_shape_pb2.TensorShapeProto.FromString(s) for s in shapes]


def test_text_format_and_descriptor_set(tmp_path):
    from google.protobuf import descriptor_pb2

    example = example_pb2.Example(features=feature_pb2.Features(feature={
        "x": feature_pb2.Feature(int64_list=feature_pb2.Int64List(value=[1, 2]))}))
    files = descriptor_pb2.FileDescriptorSet()
    tensor_shape_pb2.DESCRIPTOR.CopyToProto(files.file.add())
    path = tmp_path / "shape.desc"
    path.write_bytes(files.SerializeToString())
    with tf.Graph().as_default():
        _, (features,) = tf.io.decode_proto([example.SerializeToString()],
                                            "tensorflow.Example", ["features"], [tf.string])
        _, (size,) = tf.io.decode_proto(["size: 7 name: 'b'"], DIM, ["size"], [tf.int64],
                                        message_format="text")
        _, (from_file,) = tf.io.decode_proto(_dims(), "tensorflux.TensorShapeProto.Dim",
                                             ["size"], [tf.int64],
                                             descriptor_source=str(path))
        got = _run(features, size, from_file)
    assert feature_pb2.Features.FromString(got[0][0, 0]) == example.features
    assert got[1].tolist() == [[7]] and got[2].tolist() == [[3], [-1]]


@pytest.mark.parametrize("message_type, fields, types, error, message", [
    ("tensorflow.Nope", ["size"], [tf.int64], tf.errors.InvalidArgumentError,
     "No descriptor found for message type tensorflow.Nope"),
    (DIM, ["nope"], [tf.int64], tf.errors.InvalidArgumentError,
     "Unknown field: nope in message type tensorflow.TensorShapeProto.Dim"),
    (DIM, ["size"], [tf.int32], tf.errors.InvalidArgumentError,
     "Unexpected output type for tensorflow.TensorShapeProto.Dim.size: int64 to DT_INT32"),
])
def test_errors(message_type, fields, types, error, message):
    with tf.Graph().as_default():
        sizes, _ = tf.io.decode_proto(_dims(), message_type, fields, types, name="decode")
        with tf.Session() as sess, pytest.raises(error, match=message) as e:
            sess.run(sizes)
        assert "decode" in str(e.value)


def test_corrupt_bytes_and_bad_sizes():
    with tf.Graph().as_default():
        sizes, _ = tf.io.decode_proto([b"\xff\xff\xff"], DIM, ["size"], [tf.int64])
        with tf.Session() as sess, pytest.raises(tf.errors.DataLossError,
                                                 match="Unable to parse binary proto"):
            sess.run(sizes)
        too_many = tf.io.encode_proto([[2]], [tf.constant([[1, 2]], tf.int64)], ["size"], DIM)
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                                 match="not repeated but has size 2"):
            sess.run(too_many)


@pytest.mark.oracle
def test_against_tensorflow():
    from tests.oracle import run_tf

    shapes = [s.hex() for s in _shapes()]
    dims = [d.hex() for d in _dims()]
    theirs = run_tf(f"""
shapes = [bytes.fromhex(h) for h in {shapes!r}]
dims = [bytes.fromhex(h) for h in {dims!r}]
s1, (a, b) = tf.io.decode_proto(dims, "{DIM}", ["size", "name"], [tf.int64, tf.string])
s2, (c, d) = tf.io.decode_proto(shapes, "{SHAPE}", ["dim", "unknown_rank"],
                                [tf.string, tf.bool])
e = tf.io.encode_proto(s2, [c, d], ["dim", "unknown_rank"], "{SHAPE}")
def plain(x):  # bytes as hex text (the oracle's JSON keeps arrays of numbers and text)
    x = np.asarray(x)
    return np.vectorize(bytes.hex, otypes=[object])(x).tolist() if x.dtype == object \
        else x.tolist()
with tf.Session() as sess:
    result = [plain(v) for v in sess.run([s1, a, b, s2, c, d, e])]
""")
    with tf.Graph().as_default():
        s1, (a, b) = tf.io.decode_proto(_dims(), DIM, ["size", "name"], [tf.int64, tf.string])
        s2, (c, d) = tf.io.decode_proto(_shapes(), SHAPE, ["dim", "unknown_rank"],
                                        [tf.string, tf.bool])
        e = tf.io.encode_proto(s2, [c, d], ["dim", "unknown_rank"], SHAPE)
        ours = _run(s1, a, b, s2, c, d, e)
    def plain(x):
        x = np.asarray(x)
        return np.vectorize(bytes.hex, otypes=[object])(x).tolist() if x.dtype == object \
            else x.tolist()

    for mine, want in zip(ours[:6], theirs[:6], strict=True):
        assert plain(mine) == (want.tolist() if isinstance(want, np.ndarray) else want)
    assert [tensor_shape_pb2.TensorShapeProto.FromString(x) for x in ours[6]] == \
        [tensor_shape_pb2.TensorShapeProto.FromString(bytes.fromhex(x)) for x in theirs[6]]
