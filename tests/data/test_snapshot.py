"""tf.data.experimental.snapshot / Dataset.snapshot (data/snapshot.py,
kernels/dataset_snapshot.py): the first complete pass writes TensorFlow's layout while
handing the elements on, later passes and sessions read it; the elements, the metadata and
the shard files are TensorFlow's (each reads the other's files)."""

from __future__ import annotations

import glob
import os
import shutil

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels import dataset_snapshot
from tensorflux.kernels.cpu.ragged_conversion_ops import RaggedVariant
from tensorflux.lib.io import snappy
from tests.oracle import run_tf


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


PLAIN = """
def plain(v):
    if hasattr(v, "dense_shape"):
        return [plain(v.indices), plain(v.values), plain(v.dense_shape)]
    if hasattr(v, "to_list"):
        return v.to_list()
    if isinstance(v, dict):
        return dict((k, plain(x)) for k, x in v.items())
    if isinstance(v, (tuple, list)):
        return [plain(x) for x in v]
    return np.asarray(v).tolist()
def drain(ds):
    it = tf.data.make_initializable_iterator(ds)
    nxt = it.get_next()
    out = []
    with tf.Session() as sess:
        sess.run(it.initializer)
        try:
            while True:
                out.append(plain(sess.run(nxt)))
        except tf.errors.OutOfRangeError:
            return out
"""

# (name, source of `make()`, a new dataset each call, and snapshot arguments)
PIPELINES = [
    ("range_map", "tf.data.Dataset.range(9).map(lambda x: x * 3)", ""),
    ("tuples_gzip", "tf.data.Dataset.range(6).map(lambda x: (x, tf.strings.as_string(x)))",
     ", compression='GZIP'"),
    ("dict_none", "tf.data.Dataset.range(5).map(lambda x: {'a': tf.fill([x], 1.5), "
                  "'b': x})", ", compression=None"),
    ("shard_and_reader_funcs", "tf.data.Dataset.range(10)",
     ", shard_func=lambda x: x % 3, reader_func=lambda d: d.flat_map(lambda s: s)"),
    ("ragged", "tf.data.Dataset.range(7).map(lambda x: tf.range(x)).apply("
               "tf.data.experimental.dense_to_ragged_batch(3))", ", compression='SNAPPY'"),
]

PROGRAM = PLAIN + """
def make():
    return {source}.snapshot({path!r}{args})
first = drain(make())
second = drain(make())
"""


def _ours(source: str, path: str, args: str) -> dict:
    scope: dict = {"tf": tf, "np": np}
    exec(PROGRAM.format(source=source, path=path, args=args), scope)
    return scope


def _layout(path: str) -> list[str]:
    return sorted(os.path.relpath(p, path) for p in glob.glob(f"{path}/**", recursive=True)
                  if os.path.isfile(p))


def test_the_first_pass_writes_and_later_passes_read(graph, tmp_path):
    calls = []

    def count(x):
        calls.append(1)
        return x

    ds = tf.data.Dataset.range(5).map(
        lambda x: tf.py_func(count, [x], tf.int64, stateful=False)).snapshot(str(tmp_path))
    it = tf.data.make_initializable_iterator(ds)
    nxt = it.get_next()
    for _ in range(2):
        with tf.Session() as sess:
            for _ in range(2):
                sess.run(it.initializer)
                assert [sess.run(nxt) for _ in range(5)] == [0, 1, 2, 3, 4]
                with pytest.raises(tf.errors.OutOfRangeError):
                    sess.run(nxt)
    assert len(calls) == 5  # the input ran once; three passes read the files
    files = _layout(str(tmp_path))
    (fingerprint,) = {f.split("/")[0] for f in files}
    meta = dataset_snapshot.decode_metadata(
        (tmp_path / fingerprint / "snapshot.metadata").read_bytes(), "")
    assert meta["finalized"] and meta["version"] == 2 and meta["graph_hash"] == fingerprint
    assert meta["dtypes"] == [9, 9]  # the index of the default sharding, the element
    shards = min(5, os.cpu_count() or 1)
    assert files == sorted([f"{fingerprint}/snapshot.metadata"] + [
        f"{fingerprint}/{meta['run_id']}/{i:08d}.shard/00000000.snapshot"
        for i in range(shards)])


def test_a_changed_dataset_writes_a_snapshot_of_its_own(graph, tmp_path):
    path = str(tmp_path)
    scope = _ours("tf.data.Dataset.range(4)", path, "")
    assert scope["first"] == scope["second"] == [0, 1, 2, 3]
    assert scope["drain"](tf.data.Dataset.range(4).map(lambda x: -x).snapshot(path)) == \
        [0, -1, -2, -3]
    assert len(os.listdir(path)) == 2
    with tf.Graph().as_default():  # the same pipeline in another graph: the same snapshot
        tf.data.Dataset.range(3).map(lambda x: x + 1)  # (function names count on)
        scope["drain"](tf.data.Dataset.range(4).map(lambda x: -x).snapshot(path))
    assert len(os.listdir(path)) == 2


@pytest.mark.parametrize("name,source,args", PIPELINES)
def test_snapshots_round_trip(graph, tmp_path, name, source, args):
    scope = _ours(source, str(tmp_path), args)
    if name == "shard_and_reader_funcs":  # read shard after shard
        assert scope["second"] == [0, 3, 6, 9, 1, 4, 7, 2, 5, 8]
    else:
        assert scope["first"] and scope["second"] == scope["first"]
    assert len(os.listdir(tmp_path)) == 1


def test_a_pass_closed_before_the_end_leaves_nothing(graph, tmp_path):
    ds = tf.data.Dataset.range(6).snapshot(str(tmp_path))
    it = tf.data.make_initializable_iterator(ds)
    nxt = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer)
        sess.run(nxt)
        assert len(_layout(str(tmp_path))) > 1  # the metadata, a shard begun
        sess.run(it.initializer)  # the first pass is closed; the next has not begun
        assert _layout(str(tmp_path)) == []
        assert [sess.run(nxt) for _ in range(6)] == list(range(6))
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(nxt)
    (fingerprint,) = os.listdir(tmp_path)
    assert len(os.listdir(tmp_path / fingerprint)) == 2  # one run and the metadata


def test_an_unfinalized_snapshot_is_written_again(graph, tmp_path):
    ds = tf.data.Dataset.range(4).snapshot(str(tmp_path))
    drain = _ours("tf.data.Dataset.range(1)", str(tmp_path / "x"), "")["drain"]
    assert drain(ds) == [0, 1, 2, 3]
    (fingerprint,) = [p for p in os.listdir(tmp_path) if p != "x"]
    meta = tmp_path / fingerprint / "snapshot.metadata"
    record = dataset_snapshot.decode_metadata(meta.read_bytes(), "")
    shutil.rmtree(tmp_path / fingerprint / record["run_id"])  # a writer killed midway
    meta.write_bytes(dataset_snapshot.encode_metadata(fingerprint, "7", [9, 9], False, 0))
    assert drain(ds) == [0, 1, 2, 3]  # written again, as TensorFlow does
    record = dataset_snapshot.decode_metadata(meta.read_bytes(), "")
    assert record["finalized"] and record["run_id"] != "7"
    assert sorted(os.listdir(tmp_path / fingerprint)) == [record["run_id"],
                                                          "snapshot.metadata"]
    assert drain(ds) == [0, 1, 2, 3]


def test_bad_arguments_are_refused(graph, tmp_path):
    ds = tf.data.Dataset.range(3)
    with pytest.raises(ValueError, match="compression"):
        ds.snapshot(str(tmp_path), compression="LZ4")
    with pytest.raises(ValueError, match="int64"):
        ds.snapshot(str(tmp_path), shard_func=lambda x: tf.cast(x, tf.int32))
    with pytest.raises(TypeError, match="Dataset"):
        ds.snapshot(str(tmp_path), reader_func=lambda d: 3)
    drain = _ours("tf.data.Dataset.range(1)", str(tmp_path / "x"), "")["drain"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="non-negative"):
        drain(ds.snapshot(str(tmp_path), shard_func=lambda x: x - 1))


def test_snappy_streams_round_trip_and_decode_copies():
    data = bytes(range(256)) * 700 + b"tail"
    assert snappy.decode_stream(snappy.encode_stream(data)) == data
    assert snappy.decode_stream(b"") == b""
    # varint 12, a literal of 2 bytes, a copy of 6 bytes from 1 back (overlapping),
    # a 2-byte-offset copy of 4 bytes from 8 back
    block = b"\x0c\x04\x0e\x00\x09\x01\x0e\x08\x00"
    assert snappy.decompress_block(block) == b"\x0e" + b"\x00" * 7 + b"\x0e" + b"\x00" * 3
    for bad in (b"\x05\x00", block[:-1], b"\x02\x05\x02"):
        with pytest.raises(tf.errors.DataLossError):
            snappy.decompress_block(bad)


@pytest.mark.oracle
@pytest.mark.parametrize("name,source,args", PIPELINES)
def test_elements_are_tensorflows(graph, tmp_path, name, source, args):
    want = run_tf(PROGRAM.format(source=source, path=str(tmp_path / "theirs"), args=args) +
                  "result = [first, second]")
    scope = _ours(source, str(tmp_path / "ours"), args)
    assert [scope["first"], scope["second"]] == _b64(want)


def _b64(v):
    import base64

    if isinstance(v, dict) and "__b64__" in v:
        return base64.b64decode(v["__b64__"])
    if isinstance(v, dict):
        return {k: _b64(x) for k, x in v.items()}
    return [_b64(x) for x in v] if isinstance(v, list) else v


SWAP = PLAIN + """
import glob, os, shutil
def make():
    return {source}.snapshot({theirs!r}{args})
drain(make())
(run,) = glob.glob(os.path.join({theirs!r}, "*", "*", ""))
meta = open(glob.glob(os.path.join({theirs!r}, "*", "snapshot.metadata"))[0], "rb").read()
shutil.rmtree(run)
shutil.copytree(glob.glob(os.path.join({ours!r}, "*", "*", ""))[0], run)
result = [drain(make()), meta]
"""


@pytest.mark.oracle
@pytest.mark.parametrize("name,source,args", PIPELINES)
def test_each_reads_the_others_files(graph, tmp_path, name, source, args):
    """TensorFlow reads our shard files in place of its own, and our shard datasets and
    metadata parser read TensorFlow's."""
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    scope = _ours(source, ours, args)
    got, meta = run_tf(SWAP.format(source=source, theirs=theirs, ours=ours, args=args))
    assert _b64(got) == scope["second"]
    record = dataset_snapshot.decode_metadata(_b64(meta), "theirs")
    mine = dataset_snapshot.decode_metadata(
        open(glob.glob(f"{ours}/*/snapshot.metadata")[0], "rb").read(), "ours")
    assert record["finalized"] and record["version"] == 2
    assert record["dtypes"] == mine["dtypes"]
    # A snapshot TensorFlow wrote, read shard by shard by ours: the same components.
    fresh = str(tmp_path / "fresh")
    run_tf(PROGRAM.format(source=source, path=fresh, args=args) + "result = 0")
    assert _shard_elements(fresh, args) == _shard_elements(ours, args)


def _shard_elements(path: str, args: str) -> list:
    """The components of every element of the snapshot under `path`, shard by shard."""
    compression = "SNAPPY"  # AUTO
    for word, c in (("None", ""), ("GZIP", "GZIP"), ("SNAPPY", "SNAPPY")):
        compression = c if word in args else compression
    (run_dir,) = glob.glob(f"{path}/*/*/")
    n = len(dataset_snapshot.decode_metadata(open(glob.glob(
        f"{path}/*/snapshot.metadata")[0], "rb").read(), path)["dtypes"])
    out = []
    for d in sorted(glob.glob(f"{run_dir}*.shard/")):
        shard = dataset_snapshot.ShardDataset(sorted(glob.glob(f"{d}*.snapshot")), n,
                                              compression)
        out.extend([[_component(c) for c in x] for x in _elements(shard)])
    return out


def _component(c: np.ndarray) -> list:
    flat = c.reshape(-1)
    if c.dtype == object and flat.size and isinstance(flat[0], RaggedVariant):
        return [list(c.shape)] + [[s.tolist() for s in v.splits] + [v.values.tolist()]
                                  for v in flat]
    return [c.dtype.str, c.tolist()]


def _elements(shard) -> list:
    it = shard.iterate(None)
    out = []
    while (x := it.next()) is not None:
        out.append(x)
    return out


def test_iterator_checkpoints_hold_a_snapshot_pass(graph, tmp_path):
    ds = tf.data.Dataset.range(8).snapshot(str(tmp_path / "s")).map(lambda x: x * 10)
    it = tf.data.make_initializable_iterator(ds)
    nxt = it.get_next()
    saver = tf.train.Saver([tf.data.experimental.make_saveable_from_iterator(it)])
    with tf.Session() as sess:
        sess.run(it.initializer)
        assert [sess.run(nxt) for _ in range(3)] == [0, 10, 20]
        path = saver.save(sess, str(tmp_path / "ckpt"))
        after = [sess.run(nxt) for _ in range(5)]
    with tf.Session() as sess:  # the restored pass reads the snapshot the first one wrote
        saver.restore(sess, path)
        assert [sess.run(nxt) for _ in range(5)] == after == [30, 40, 50, 60, 70]
    assert len(os.listdir(tmp_path / "s")) == 1
