"""tf.data file datasets (TFRecord with every compression, text lines, fixed-length
records) and a whole input pipeline: TFRecord -> parse_single_example -> map -> shuffle ->
batch -> prefetch."""

from __future__ import annotations

import gzip
import zlib

import numpy as np
import pytest

import tensorflux as tf
from tests.data.test_dataset_ops import drain

COMPRESSIONS = {"": None, "GZIP": tf.python_io.TFRecordCompressionType.GZIP,
                "ZLIB": tf.python_io.TFRecordCompressionType.ZLIB}


def write_records(path, records, compression=""):
    options = tf.python_io.TFRecordOptions(COMPRESSIONS[compression])
    with tf.python_io.TFRecordWriter(str(path), options=options) as w:
        for r in records:
            w.write(r)
    return str(path)


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_tfrecord_dataset_several_files(tmp_path, compression):
    files = [write_records(tmp_path / f"f{i}.tfrecord", [f"{i}-{j}".encode() for j in range(3)],
                           compression) for i in range(2)]
    ds = tf.data.TFRecordDataset(files, compression_type=compression)
    assert ds.output_types == tf.string and ds.output_shapes.as_list() == []
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    one = tf.data.make_one_shot_iterator(
        tf.data.TFRecordDataset(files[1], compression_type=compression)).get_next()
    with tf.Session() as sess:
        assert drain(sess, nxt) == [b"0-0", b"0-1", b"0-2", b"1-0", b"1-1", b"1-2"]
        assert drain(sess, one) == [b"1-0", b"1-1", b"1-2"]


def test_tfrecord_dataset_parallel_reads_interleave_files(tmp_path):
    files = [write_records(tmp_path / f"f{i}", [f"{i}{j}".encode() for j in range(2)])
             for i in range(3)]
    ds = tf.data.TFRecordDataset(files, num_parallel_reads=2)
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    with tf.Session() as sess:
        assert drain(sess, nxt) == [b"00", b"10", b"01", b"11", b"20", b"21"]


def test_tfrecord_dataset_missing_file_and_corruption(tmp_path):
    path = write_records(tmp_path / "ok", [b"abc", b"defg"])
    data = bytearray(open(path, "rb").read())
    data[-6] ^= 0xFF
    bad = tmp_path / "bad"
    bad.write_bytes(bytes(data))
    missing = tf.data.make_one_shot_iterator(
        tf.data.TFRecordDataset(str(tmp_path / "nope"))).get_next()
    corrupt = tf.data.make_one_shot_iterator(tf.data.TFRecordDataset(str(bad))).get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.NotFoundError):
            sess.run(missing)
        assert sess.run(corrupt) == b"abc"
        with pytest.raises(tf.errors.DataLossError):
            sess.run(corrupt)


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_text_line_dataset(tmp_path, compression):
    raw = [b"first\nsecond\r\n\nlast", b"x\n"]
    paths = []
    for i, content in enumerate(raw):
        p = tmp_path / f"t{i}.txt"
        p.write_bytes({"": content, "GZIP": gzip.compress(content),
                       "ZLIB": zlib.compress(content)}[compression])
        paths.append(str(p))
    nxt = tf.data.make_one_shot_iterator(
        tf.data.TextLineDataset(paths, compression_type=compression)).get_next()
    with tf.Session() as sess:
        assert drain(sess, nxt) == [b"first", b"second", b"", b"last", b"x"]


def test_fixed_length_record_dataset(tmp_path):
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(b"HH" + b"abcdef" + b"FFF")
    b.write_bytes(b"HH" + b"xyz" + b"FFF")
    ds = tf.data.FixedLengthRecordDataset([str(a), str(b)], 3, header_bytes=2,
                                          footer_bytes=3)
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    c = tmp_path / "c.bin"
    c.write_bytes(b"HH" + b"abcd" + b"FFF")
    bad = tf.data.make_one_shot_iterator(tf.data.FixedLengthRecordDataset(
        str(c), 3, header_bytes=2, footer_bytes=3)).get_next()
    with tf.Session() as sess:
        assert drain(sess, nxt) == [b"abc", b"def", b"xyz"]
        with pytest.raises(tf.errors.InvalidArgumentError, match="not an exact multiple"):
            sess.run(bad)


def make_examples(n):
    out = []
    for i in range(n):
        ex = tf.train.Example(features=tf.train.Features(feature={
            "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
            "x": tf.train.Feature(float_list=tf.train.FloatList(value=[i * 0.5, -i])),
            "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"n%d" % i])),
        }))
        out.append(ex.SerializeToString())
    return out


def pipeline(files, batch_size=4, seed=11):
    features = {"id": tf.FixedLenFeature([], tf.int64),
                "x": tf.FixedLenFeature([2], tf.float32),
                "name": tf.FixedLenFeature([], tf.string)}

    def parse(record):
        ex = tf.parse_single_example(record, features)
        return {"id": ex["id"], "x": ex["x"] * 2.0, "name": ex["name"]}

    return (tf.data.TFRecordDataset(files).map(parse, num_parallel_calls=2)
            .shuffle(8, seed=seed).batch(batch_size).prefetch(2))


def test_tfrecord_parse_map_shuffle_batch_prefetch_pipeline(tmp_path):
    files = [write_records(tmp_path / f"p{i}", make_examples(10)[i * 5:(i + 1) * 5])
             for i in range(2)]
    ds = pipeline(files)
    assert ds.output_shapes["x"].as_list() == [None, 2]
    assert ds.output_types == {"id": tf.int64, "x": tf.float32, "name": tf.string}
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    with tf.Session() as sess:
        batches = drain(sess, nxt)
    assert [len(b["id"]) for b in batches] == [4, 4, 2]
    ids = np.concatenate([b["id"] for b in batches])
    assert sorted(ids.tolist()) == list(range(10)) and ids.tolist() != list(range(10))
    for b in batches:
        np.testing.assert_allclose(b["x"], np.stack([b["id"] * 1.0, -2.0 * b["id"]], 1))
        assert b["name"].tolist() == [b"n%d" % i for i in b["id"]]


def test_cache_to_a_file_is_reused_by_later_sessions(tmp_path):
    calls = []

    def gen():
        calls.append(1)
        yield from [(1, b"a"), (2, b"bc")]

    prefix = str(tmp_path / "cache")
    ds = tf.data.Dataset.from_generator(gen, (tf.int64, tf.string)).cache(prefix).repeat(2)
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    partial = tf.data.make_one_shot_iterator(
        tf.data.Dataset.range(5).cache(str(tmp_path / "partial"))).get_next()
    expected = [(1, b"a"), (2, b"bc")] * 2
    for _ in range(2):
        with tf.Session() as sess:
            assert [tuple(x.item() if hasattr(x, "item") else x for x in e)
                    for e in drain(sess, nxt)] == expected
    assert len(calls) == 1  # the second epoch and the second session read the file
    with tf.Session() as sess:
        assert sess.run(partial) == 0
    # A pass that did not reach the end leaves no cache file behind.
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("partial")]
