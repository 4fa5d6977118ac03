"""RaggedTensor and SparseTensor components written by tf.data: `Dataset.cache(filename)`
files and iterator checkpoints (make_saveable_from_iterator) round-trip them exactly
(kernels/variant_codec.py); the elements are TensorFlow's."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels import variant_codec
from tensorflux.kernels.cpu.ragged_conversion_ops import RaggedVariant
from tests.oracle import run_tf


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


# (name, source building `ds`): every pipeline has a ragged or sparse component.
PIPELINES = [
    ("dense_to_ragged_batch", "ds = tf.data.Dataset.range(9).map(lambda x: tf.range(x))"
                              ".apply(tf.data.experimental.dense_to_ragged_batch(2))"),
    ("ragged_slices", "ds = tf.data.Dataset.from_tensor_slices(tf.ragged.constant("
                      "[[1, 2], [3], [], [4, 5, 6], [7], [8, 9], [10]]))"),
    ("ragged_rank_2_slices", "ds = tf.data.Dataset.from_tensor_slices(tf.ragged.constant("
                             "[[[1.5], [2, 3]], [], [[4]], [[5, 6], []], [[7]], [[8]]]))"),
    ("sparse_slices", "ds = tf.data.Dataset.from_tensor_slices(tf.SparseTensor("
                      "[[0, 0], [1, 2], [3, 1], [4, 0], [5, 2]], [1., 2., 3., 4., 5.], "
                      "[7, 3]))"),
    ("zip_sparse_batch", "ds = tf.data.Dataset.zip((tf.data.Dataset.range(12).map("
                         "lambda x: tf.range(x % 4)).apply("
                         "tf.data.experimental.dense_to_ragged_batch(2)), "
                         "tf.data.Dataset.range(12).map(lambda x: tf.SparseTensor("
                         "[[0]], [x], [3])).batch(2))).shuffle(3, seed=7)"),
    ("string_ragged", "ds = tf.data.Dataset.from_tensor_slices(tf.ragged.constant("
                      "[['a', 'bc'], [], ['d'], ['e', 'f', 'g'], ['h'], ['i']]))"),
]

PLAIN = """
def plain(v):
    if hasattr(v, "dense_shape"):
        return [plain(v.indices), plain(v.values), plain(v.dense_shape)]
    if hasattr(v, "to_list"):
        return v.to_list()
    if isinstance(v, (tuple, list)):
        return [plain(x) for x in v]
    return np.asarray(v).tolist()
"""

SAVE_PROGRAM = PLAIN + """
{source}
it = tf.data.make_initializable_iterator(ds)
nxt = it.get_next()
tf.add_to_collection(tf.GraphKeys.SAVEABLE_OBJECTS,
                     tf.data.experimental.make_saveable_from_iterator(it))
saver = tf.train.Saver()
with tf.Session() as sess:
    sess.run(it.initializer)
    before = [plain(sess.run(nxt)) for _ in range(2)]
    path = saver.save(sess, {path!r})
    after = [plain(sess.run(nxt)) for _ in range(3)]
with tf.Session() as sess:  # a fresh session (TensorFlow restores initialized iterators)
    sess.run(it.initializer)
    saver.restore(sess, path)
    again = [plain(sess.run(nxt)) for _ in range(3)]
"""

CACHE_PROGRAM = PLAIN + """
def drain(sess, nxt):
    out = []
    try:
        while True:
            out.append(plain(sess.run(nxt)))
    except tf.errors.OutOfRangeError:
        return out
{source}
it = tf.data.make_initializable_iterator(ds.cache({path!r}))
nxt = it.get_next()
passes = []
for _ in range(2):
    with tf.Session() as sess:
        sess.run(it.initializer)
        passes.append(drain(sess, nxt))
"""


def _run_ours(program: str, source: str, path: str) -> dict:
    scope: dict = {"tf": tf, "np": np}
    exec(program.format(source=source, path=path), scope)
    return scope


def _b64(v):
    import base64

    if isinstance(v, dict) and "__b64__" in v:
        return base64.b64decode(v["__b64__"])
    return [_b64(x) for x in v] if isinstance(v, list) else v


@pytest.mark.parametrize("name,source", PIPELINES)
def test_iterator_checkpoints_restore_composite_elements(graph, tmp_path, name, source):
    scope = _run_ours(SAVE_PROGRAM, source, str(tmp_path / "ckpt"))
    assert scope["again"] == scope["after"]


@pytest.mark.parametrize("name,source", PIPELINES)
def test_cache_files_hold_composite_elements(graph, tmp_path, name, source):
    scope = _run_ours(CACHE_PROGRAM, source, str(tmp_path / "cache"))
    first, second = scope["passes"]
    assert first and second == first
    assert (tmp_path / "cache.tfxcache").exists()  # the second pass read the file


@pytest.mark.oracle
@pytest.mark.parametrize("name,source", PIPELINES)
def test_checkpointed_and_cached_elements_are_tensorflows(graph, tmp_path, name, source):
    want = run_tf(SAVE_PROGRAM.format(source=source, path=str(tmp_path / "theirs")) +
                  CACHE_PROGRAM.format(source=source, path=str(tmp_path / "tcache")) +
                  "result = [before, after, again, passes]")
    ours = _run_ours(SAVE_PROGRAM, source, str(tmp_path / "ours"))
    with tf.Graph().as_default():
        cached = _run_ours(CACHE_PROGRAM, source, str(tmp_path / "ocache"))
    got = [ours["before"], ours["after"], ours["again"], cached["passes"]]
    assert got == _b64(want)


def test_the_codec_round_trips_variants_exactly():
    ragged = np.empty(2, dtype=object)
    ragged[0] = RaggedVariant((np.array([0, 2, 2], np.int32),), np.array([1.5, -0.0]))
    ragged[1] = RaggedVariant((), np.array([[b"x", b""]], dtype=object))
    sparse = np.empty((1, 3), dtype=object)
    sparse[0] = [np.array([[0, 1]]), np.array([7], np.int8), np.array([2, 3])]
    for arr in (ragged, sparse, np.arange(3), np.array([b"s"], dtype=object)):
        back = variant_codec.from_proto(variant_codec.to_proto(arr))
        assert back.shape == arr.shape and back.dtype == arr.dtype
        for a, b in zip(arr.reshape(-1), back.reshape(-1), strict=True):
            if isinstance(a, RaggedVariant):
                assert len(a.splits) == len(b.splits)
                for x, y in zip((*a.splits, a.values), (*b.splits, b.values), strict=True):
                    assert _same(x, y)
            else:
                assert _same(np.asarray(a), np.asarray(b))


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    """Equal dtype, shape and values, signed zeros included."""
    if x.dtype != y.dtype or x.shape != y.shape:
        return False
    return x.tolist() == y.tolist() if x.dtype == object else x.tobytes() == y.tobytes()


def test_variants_without_an_encoding_are_refused(graph, tmp_path):
    nested = tf.data.Dataset.range(4).window(2)
    it = tf.data.make_initializable_iterator(
        nested.cache(str(tmp_path / "c")).flat_map(lambda w: w))
    nxt = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer)
        with pytest.raises(tf.errors.FailedPreconditionError, match="RaggedTensors"):
            sess.run(nxt)


def test_tensorflows_compact_string_and_variant_tensors_are_read():
    """TensorFlow's snapshots write string and variant tensors as tensor_content: the
    items' lengths as varints, then the items (a variant item: its VariantTensorData)."""
    from tensorflux.protos import tensor_pb2

    strings = tensor_pb2.TensorProto(dtype=tf.string.as_datatype_enum,
                                     tensor_content=b"\x01\x02\x00abc")
    strings.tensor_shape.dim.add().size = 3
    assert variant_codec.from_proto(strings).tolist() == [b"a", b"bc", b""]
    ragged = tensor_pb2.TensorProto(  # what tf.io.serialize_tensor gives for [[1, 2], [3]]
        dtype=tf.variant.as_datatype_enum,
        tensor_content=b"3\n\x13RaggedTensorVariant\x1a\r\x08\t\x12\x04\x12\x02\x08\x03R"
                       b"\x03\x00\x02\x03\x1a\r\x08\x03\x12\x04\x12\x02\x08\x03:\x03\x01\x02\x03")
    (rv,) = variant_codec.from_proto(ragged).reshape(-1)
    assert [s.tolist() for s in rv.splits] == [[0, 2, 3]] and rv.splits[0].dtype == np.int64
    assert rv.values.tolist() == [1, 2, 3] and rv.values.dtype == np.int32
    strings.tensor_content = b"\x05ab"
    with pytest.raises(tf.errors.DataLossError):
        variant_codec.from_proto(strings)
