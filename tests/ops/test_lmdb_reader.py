"""tf.LMDBReader and the pure-Python LMDB data file parser behind it (lib/io/lmdb.py).

tests/ops/data/lmdb_records.mdb was written by the `lmdb` package (`write_database`
below; regenerate it with that function) so the reader is tested without the package;
with the package installed, databases written here are checked against its own cursor
(branch and overflow pages, DUPSORT sub-pages and sub-trees, LEAF2 pages). TensorFlow
2.21 keeps the LMDBReader op, with the same signatures, but no longer reads LMDB (its
kernel raises UnimplementedError), so keys and values cannot be compared with it: the
oracle test checks that and the ops' signatures.
"""

from __future__ import annotations

import os
import random
import shutil

import pytest

import tensorflux as tf
from tensorflux.framework import op_registry
from tensorflux.lib.io.lmdb import LMDBFile
from tests.oracle import run_tf

CHECKED_IN = os.path.join(os.path.dirname(__file__), "data", "lmdb_records.mdb")


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def expected_records() -> list[tuple[bytes, bytes]]:
    """What the checked-in file holds, in LMDB's key order (bytes, shorter first on ties)."""
    records = {b"%04d" % (i * 37 % 1000): b"v%d-" % i * (i % 5) for i in range(400)}
    records[b"big"] = bytes(range(256)) * 24  # on overflow pages
    records[b"\xff\x00bin"] = b"\x00\x01"
    records[b"empty"] = b""
    return sorted(records.items())


def write_database(directory: str) -> None:
    """Writes `expected_records()` with the `lmdb` package (the checked-in file)."""
    lmdb = pytest.importorskip("lmdb")
    env = lmdb.open(directory, map_size=1 << 20)
    with env.begin(write=True) as txn:
        for key, value in reversed(expected_records()):
            txn.put(key, value)
    env.close()


def _read_all(reader, work, up_to=None):
    q = tf.FIFOQueue(10, tf.string)
    kv = reader.read(q) if up_to is None else reader.read_up_to(q, up_to)
    out = []
    with tf.Session() as sess:
        sess.run(q.enqueue_many([work]))
        sess.run(q.close())
        while True:
            try:
                k, v = sess.run(kv)
            except tf.errors.OutOfRangeError:
                break
            out.extend(zip(k, v, strict=True) if up_to else [(k, v)])
        counts = sess.run([reader.num_records_produced(), reader.num_work_units_completed()])
    return out, counts


def test_the_checked_in_file_parses_to_its_records():
    with LMDBFile(CHECKED_IN) as f:
        assert f.page_size == 4096 and len(f) == len(expected_records())
        assert list(f) == expected_records()


def test_lmdb_reader_reads_every_file_in_key_order(graph):
    want = expected_records()
    out, counts = _read_all(tf.LMDBReader(), [CHECKED_IN, CHECKED_IN])
    assert out == want * 2 and counts == [2 * len(want), 2]


def test_read_up_to_stays_within_a_file(graph):
    want = expected_records()
    out, counts = _read_all(tf.LMDBReader(name="lmdb"), [CHECKED_IN], up_to=64)
    assert out == want and counts == [len(want), 1]


def test_ref_reader_ops_are_tensorflows(graph):
    reader = tf.LMDBReader()
    assert reader.reader_ref.dtype == tf.string._as_ref and not reader.supports_serialize
    key, _ = reader.read(tf.FIFOQueue(2, tf.string))
    assert key.op.type == "ReaderRead" and key.op.inputs[1].op.type == "FakeQueue"
    assert reader.reset().type == "ReaderReset"
    with tf.Session() as sess, pytest.raises(tf.errors.UnimplementedError):
        sess.run(reader.serialize_state())


def test_a_directory_is_read_as_its_data_file(graph, tmp_path):
    shutil.copy(CHECKED_IN, tmp_path / "data.mdb")
    out, _ = _read_all(tf.LMDBReader(), [str(tmp_path)])
    assert out == expected_records()


@pytest.mark.parametrize("content,error", [
    (None, tf.errors.NotFoundError), ("dir", tf.errors.NotFoundError),
    (b"", tf.errors.DataLossError), (b"not lmdb" * 1000, tf.errors.DataLossError)])
def test_files_that_are_not_lmdb_fail_their_read(graph, tmp_path, content, error):
    bad = tmp_path / "bad.mdb"
    if content == "dir":
        bad.mkdir()
    elif content is not None:
        bad.write_bytes(content)
    q = tf.FIFOQueue(3, tf.string)
    key, value = tf.LMDBReader().read(q)
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[str(bad), CHECKED_IN]]))
        with pytest.raises(error):
            sess.run(key)
        assert sess.run([key, value]) == list(expected_records()[0])  # the next unit


def test_damaged_pages_are_data_loss_never_garbage(tmp_path):
    """A damaged page header (free-space bounds, flags) or a cut file raises; LMDB keeps
    no checksums, so damaged bytes of keys and values cannot be told (as in LMDB)."""
    data = open(CHECKED_IN, "rb").read()
    damages = [data[:4096 * 4]]  # cut short: pages of the tree are missing
    page = 2
    while page < len(data) // 4096:
        at = page * 4096
        flags = int.from_bytes(data[at + 10:at + 12], "little")
        # an overflow page's count of pages (the next ones hold value bytes, no header)
        page += int.from_bytes(data[at + 12:at + 16], "little") if flags & 0x04 else 1
        if flags & 0x03:  # a branch or leaf page: free space from beyond the page
            damages.append(data[:at + 12] + b"\xff\xff" + data[at + 14:])
        if flags & 0x07:  # any tree page: neither branch, leaf nor overflow
            damages.append(data[:at + 10] + b"\x00\x00" + data[at + 12:])
    assert len(damages) > 8
    for i, damaged in enumerate(damages):
        path = tmp_path / f"d{i}.mdb"
        path.write_bytes(damaged)
        with pytest.raises(tf.errors.DataLossError), LMDBFile(str(path)) as f:
            list(f)


def _lmdb_case(tmp_path, name: str, flags: dict, fill):
    """(records the `lmdb` package's cursor gives, ours) of a database written by `fill`."""
    lmdb = pytest.importorskip("lmdb")
    directory = str(tmp_path / name)
    env = lmdb.open(directory, map_size=1 << 26, max_dbs=2)
    db = env.open_db(name.encode(), **flags) if flags is not None else None
    with env.begin(write=True, db=db) as txn:
        fill(txn)
    with env.begin(db=db) as txn:
        want = list(txn.cursor())
    env.close()
    with LMDBFile(os.path.join(directory, "data.mdb")) as f:
        got = list(f) if flags is None else list(f.database(name.encode()))
    shutil.rmtree(directory)
    return want, got


def _random_values(txn):
    rng = random.Random(0)
    for _ in range(2000):
        txn.put(b"k%06d" % rng.randrange(10 ** 6),
                rng.randbytes(rng.choice([0, 1, 10, 100, 3000, 9000])))


def _duplicates(txn):
    rng = random.Random(1)
    for i in range(200):
        txn.put(b"a%03d" % (i % 17), b"v%05d" % rng.randrange(10 ** 5))  # sub-pages
    for i in range(2000):
        txn.put(b"many", b"d%06d" % i)  # a sub-tree
    txn.put(b"single", b"one")


def _fixed_duplicates(txn):
    for i in range(3000):
        txn.put(b"k%d" % (i % 3), b"%08d" % i)  # LEAF2 sub-trees
    txn.put(b"y", b"12345678")
    txn.put(b"y", b"02345678")  # a LEAF2 sub-page


@pytest.mark.parametrize("name,flags,fill", [
    ("main", None, _random_values), ("dups", {"dupsort": True}, _duplicates),
    ("fixed", {"dupsort": True, "dupfixed": True}, _fixed_duplicates)])
def test_records_are_the_lmdb_cursors(tmp_path, name, flags, fill):
    want, got = _lmdb_case(tmp_path, name, flags, fill)
    assert got == want and len(got) > 1900


def test_the_checked_in_file_is_what_write_database_writes(tmp_path):
    write_database(str(tmp_path))
    with LMDBFile(str(tmp_path / "data.mdb")) as f:
        assert list(f) == expected_records()


@pytest.mark.oracle
def test_tensorflow_keeps_the_ops_but_no_longer_reads_lmdb(graph):
    got = run_tf(f"""
from tensorflow.python.framework import op_def_registry
sigs = {{}}
for n in ["LMDBReader", "FakeQueue", "ReaderRead", "ReaderReadUpTo", "ReaderReset"]:
    od = op_def_registry.get(n)
    sigs[n] = [[[a.name, a.type, a.is_ref] for a in od.input_arg],
               [[a.name, a.type, a.is_ref] for a in od.output_arg]]
r = tf.LMDBReader()
q = tf.FIFOQueue(3, tf.string)
k, v = r.read(q)
with tf.Session() as s:
    s.run(q.enqueue({CHECKED_IN!r}))
    try:
        s.run(k)
        err = None
    except tf.errors.UnimplementedError as e:
        err = e.message
result = [sigs, err]
""")
    sigs, err = got
    assert "LMDB support is removed" in err
    for name, (inputs, outputs) in sigs.items():
        assert _signature(name) == [inputs, outputs], name


def _signature(op_type: str) -> list:
    opdef = op_registry.lookup(op_type)
    return [[[a.name, a.dtype.base_dtype.as_datatype_enum if a.dtype else None,
              a.is_ref] for a in args] for args in (opdef.inputs, opdef.outputs)]
