"""TFRecord framing (tensorflux/lib/io/tf_record.py): CRC-32C both ways, round trips,
compression, corruption, and byte compatibility with TensorFlow's files in both directions."""

import os
import random
import struct

import pytest

import tensorflux as tf
from tensorflux.lib.io import tf_record
from tests.oracle import run_tf

RECORDS = [b"hello", b"", b"x" * 300, bytes(range(256)) * 5]


# ---- CRC-32C -----------------------------------------------------------------------------


@pytest.mark.parametrize("data,crc", [
    (b"", 0x00000000),
    (b"123456789", 0xE3069283),  # the CRC-32C check value
    (b"\x00" * 32, 0x8A9136AA),  # RFC 3720 B.4 test vectors
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
])
def test_crc32c_known_vectors(data, crc):
    assert tf_record.crc32c_python(data) == crc
    assert tf_record.crc32c(data) == crc


def test_pure_python_crc32c_equals_the_native_one():
    rng = random.Random(0)
    for n in list(range(0, 40)) + [255, 1024, 4097]:
        data = bytes(rng.getrandbits(8) for _ in range(n))
        assert tf_record.crc32c_python(data) == tf_record._crc32c_native(data)
    # chaining: crc(a + b) continues from crc(a)
    a, b = b"hello ", b"world"
    assert tf_record.crc32c_python(b, tf_record.crc32c_python(a)) == \
        tf_record.crc32c_python(a + b)


def test_native_crc32c_is_used_when_installed():
    pytest.importorskip("google_crc32c")
    assert tf_record.CRC32C_IMPLEMENTATION == "google-crc32c"


def test_fallback_is_used_without_the_wheel(monkeypatch):
    """A separate copy of the module, loaded while `google_crc32c` cannot be imported."""
    import importlib.util
    import sys

    monkeypatch.setitem(sys.modules, "google_crc32c", None)  # makes the import fail
    spec = importlib.util.spec_from_file_location("_tf_record_fallback", tf_record.__file__)
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)
    assert copy.CRC32C_IMPLEMENTATION == "python" and copy.crc32c is copy.crc32c_python
    assert copy.frame_record(b"hello") == tf_record.frame_record(b"hello")


def test_mask_round_trips():
    for c in (0, 1, 0xFFFFFFFF, 0xE3069283, 0x12345678):
        assert tf_record.unmask_crc(tf_record.mask_crc(c)) == c
    assert tf_record.masked_crc32c(b"123456789") == tf_record.mask_crc(0xE3069283)


# ---- writing and reading -----------------------------------------------------------------


def _write(path, records, options=None):
    with tf.python_io.TFRecordWriter(str(path), options) as w:
        for r in records:
            w.write(r)


def test_frame_layout(tmp_path):
    path = tmp_path / "a.tfrecord"
    _write(path, [b"hello"])
    data = path.read_bytes()
    assert len(data) == 8 + 4 + 5 + 4
    assert struct.unpack("<Q", data[:8])[0] == 5
    assert struct.unpack("<I", data[8:12])[0] == tf_record.masked_crc32c(data[:8])
    assert data[12:17] == b"hello"
    assert struct.unpack("<I", data[17:])[0] == tf_record.masked_crc32c(b"hello")


@pytest.mark.parametrize("compression", ["", "ZLIB", "GZIP"])
def test_round_trip(tmp_path, compression):
    path = tmp_path / "a.tfrecord"
    options = tf.python_io.TFRecordOptions(compression) if compression else None
    _write(path, RECORDS, options)
    assert list(tf.python_io.tf_record_iterator(str(path), options)) == RECORDS
    assert list(tf.python_io.tf_record_iterator(str(path), compression)) == RECORDS


def test_options_and_enum():
    opts = tf.python_io.TFRecordOptions
    assert opts.get_compression_type_string(None) == ""
    assert opts.get_compression_type_string("GZIP") == "GZIP"
    assert opts.get_compression_type_string(opts(tf.python_io.TFRecordCompressionType.ZLIB)) \
        == "ZLIB"
    with pytest.raises(ValueError, match="compression_type"):
        opts("LZ4")


def test_flush_makes_records_visible_and_close_is_final(tmp_path):
    path = tmp_path / "a.tfrecord"
    w = tf.python_io.TFRecordWriter(str(path))
    w.write(b"one")
    w.flush()
    assert list(tf.python_io.tf_record_iterator(str(path))) == [b"one"]
    w.write("two")  # str is written as UTF-8
    w.close()
    assert list(tf.python_io.tf_record_iterator(str(path))) == [b"one", b"two"]
    with pytest.raises(tf.errors.FailedPreconditionError):
        w.write(b"three")


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match="No such file or directory"):
        tf.python_io.tf_record_iterator(str(tmp_path / "nope.tfrecord"))
    with pytest.raises(tf.errors.NotFoundError):
        tf.python_io.TFRecordWriter(str(tmp_path / "no" / "dir.tfrecord"))


# ---- corruption: DataLossError naming file and offset, never a garbage record ------------


def test_corrupt_data_crc(tmp_path):
    path = tmp_path / "bad.tfrecord"
    _write(path, [b"hello", b"world"])
    data = bytearray(path.read_bytes())
    data[21 + 12] ^= 0x01  # a byte of the second record's data
    path.write_bytes(bytes(data))
    it = tf.python_io.tf_record_iterator(str(path))
    assert next(it) == b"hello"
    with pytest.raises(tf.errors.DataLossError) as e:
        next(it)
    assert str(e.value) == f"corrupted record at 33 in file {path}"


@pytest.mark.parametrize("length", [2**33, 2**40, 2**63])
def test_huge_length_with_a_matching_crc_is_truncation_not_an_allocation(tmp_path, length):
    # Found by tests/fuzz: the reader asked the file for `length` bytes at once (MemoryError).
    path = tmp_path / "huge.tfrecord"
    header = struct.pack("<Q", length)
    path.write_bytes(header + struct.pack("<I", tf_record.masked_crc32c(header)) + b"abc")
    for compression in ("", "ZLIB"):
        if compression:
            _compress(path)
        it = tf.python_io.tf_record_iterator(str(path), compression or None)
        with pytest.raises(tf.errors.DataLossError, match="truncated record at 0"):
            next(it)


@pytest.mark.parametrize("compression", ["ZLIB", "GZIP"])
def test_corrupt_compressed_stream_is_data_loss(tmp_path, compression):
    # Found by tests/fuzz: zlib's own error came out.
    path = tmp_path / "bad.tfrecord"
    _write(path, [b"hello" * 50, b"world"], compression)
    data = bytearray(path.read_bytes())
    data[-8 if compression == "GZIP" else -1] ^= 0x40  # the stream's checksum
    path.write_bytes(bytes(data))
    with pytest.raises(tf.errors.DataLossError, match=f"inflate.*in file {path}"):
        list(tf.python_io.tf_record_iterator(str(path), compression))


def _compress(path):
    import zlib

    path.write_bytes(zlib.compress(path.read_bytes()))


def test_corrupt_length_at_start_says_not_a_tfrecord(tmp_path):
    path = tmp_path / "bad.tfrecord"
    path.write_bytes(b"this is not a TFRecord file at all")
    with pytest.raises(tf.errors.DataLossError,
                       match=r"corrupted record at 0 in file .*bad.tfrecord \(Is this even a "
                             r"TFRecord file\?\)"):
        list(tf.python_io.tf_record_iterator(str(path)))


def test_truncated_file(tmp_path):
    path = tmp_path / "t.tfrecord"
    _write(path, [b"hello", b"x" * 100])
    path.write_bytes(path.read_bytes()[:-3])
    it = tf.python_io.tf_record_iterator(str(path))
    assert next(it) == b"hello"
    with pytest.raises(tf.errors.DataLossError, match="truncated record at 21 in file"):
        next(it)


def test_a_file_cut_inside_the_last_header_ends_like_tensorflow(tmp_path):
    """TensorFlow's reader: fewer than the 12 header bytes left is the end of the file (a
    writer may still be appending); a cut after the header is DataLossError."""
    path = tmp_path / "t.tfrecord"
    _write(path, [b"hello", b"x" * 100])
    full = path.read_bytes()
    for cut in (21 + 1, 21 + 8, 21 + 11):
        path.write_bytes(full[:cut])
        assert list(tf.python_io.tf_record_iterator(str(path))) == [b"hello"], cut
    for cut in (21 + 12, 21 + 13, len(full) - 1):
        path.write_bytes(full[:cut])
        with pytest.raises(tf.errors.DataLossError, match="truncated record at 21 in file"):
            list(tf.python_io.tf_record_iterator(str(path)))
    # A reader that met the end inside a header reads on once the writer has appended.
    path.write_bytes(full[:21 + 5])
    reader = tf_record.RecordReader(str(path), buffer_size=16)
    assert reader.read() == (0, b"hello") and reader.read() is None
    with open(path, "ab") as f:
        f.write(full[21 + 5:])
    assert reader.read() == (21, b"x" * 100) and reader.read() is None
    reader.close()


def test_every_single_byte_flip_is_detected(tmp_path):
    path = tmp_path / "f.tfrecord"
    _write(path, [b"abcdef", b"ghij"])
    good = path.read_bytes()
    for pos in range(len(good)):
        data = bytearray(good)
        data[pos] ^= 0x40
        path.write_bytes(bytes(data))
        got = []
        with pytest.raises(tf.errors.DataLossError, match=f"in file {path}"):
            for r in tf.python_io.tf_record_iterator(str(path)):
                got.append(r)
        assert all(r in (b"abcdef", b"ghij") for r in got), (pos, got)


# ---- byte compatibility with TensorFlow, both ways ---------------------------------------


@pytest.mark.oracle
def test_files_are_byte_compatible_with_tensorflow(tmp_path):
    ours = tmp_path / "ours.tfrecord"
    _write(ours, RECORDS)
    theirs = tmp_path / "theirs.tfrecord"
    for compression in ("", "GZIP", "ZLIB"):
        _write(tmp_path / f"ours{compression}.tfrecord", RECORDS, compression)
    got = run_tf(f"""
records = {RECORDS!r}
with tf.python_io.TFRecordWriter({str(theirs)!r}) as w:
    for r in records:
        w.write(r)
for c in ("GZIP", "ZLIB"):
    with tf.python_io.TFRecordWriter({str(tmp_path)!r} + "/theirs" + c + ".tfrecord",
                                     tf.python_io.TFRecordOptions(c)) as w:
        for r in records:
            w.write(r)
result = {{c: list(tf.python_io.tf_record_iterator(
              {str(tmp_path)!r} + "/ours" + c + ".tfrecord", tf.python_io.TFRecordOptions(c)))
          for c in ("", "GZIP", "ZLIB")}}
""")
    assert ours.read_bytes() == theirs.read_bytes()
    for c in ("", "GZIP", "ZLIB"):
        assert got[c] == RECORDS, c  # TensorFlow reads our files
    for c in ("GZIP", "ZLIB"):  # and we read TensorFlow's compressed files
        path = str(tmp_path / f"theirs{c}.tfrecord")
        assert list(tf.python_io.tf_record_iterator(path, c)) == RECORDS


@pytest.mark.oracle
def test_tensorflow_reports_corruption_of_our_files_at_the_same_offset(tmp_path):
    path = tmp_path / "bad.tfrecord"
    _write(path, [b"hello", b"world"])
    data = bytearray(path.read_bytes())
    data[21 + 12] ^= 0x01
    path.write_bytes(bytes(data))
    got = run_tf(f"""
try:
    list(tf.python_io.tf_record_iterator({str(path)!r}))
except tf.errors.DataLossError as e:
    result = str(e)
""")
    assert got == "corrupted record at 33"
    with pytest.raises(tf.errors.DataLossError, match="^corrupted record at 33 "):
        list(tf.python_io.tf_record_iterator(str(path)))


def test_reader_offsets(tmp_path):
    path = tmp_path / "a.tfrecord"
    _write(path, RECORDS)
    reader = tf_record.RecordReader(str(path))
    offsets = []
    while (rec := reader.read()) is not None:
        offsets.append(rec[0])
    reader.close()
    expected, pos = [], 0
    for r in RECORDS:
        expected.append(pos)
        pos += 16 + len(r)
    assert offsets == expected
    assert pos == os.path.getsize(path)


@pytest.mark.parametrize("block", [7, 64, 1 << 20])
def test_read_many_matches_read_across_buffer_refills(tmp_path, block):
    """Batches of every size, with a read buffer smaller than a record, larger than a few,
    and larger than the file: the same records and offsets as one `read` at a time, and
    False only once the file has ended."""
    records = [bytes([i % 256]) * (i * 7 % 50) for i in range(40)]
    path = tmp_path / "m.tfrecord"
    _write(path, records)
    for n in (1, 3, 16, 100):
        reader = tf_record.RecordReader(str(path), buffer_size=block)
        offsets, datas, more = [], [], True
        while more:
            before = len(datas)
            more = reader.read_many(n, offsets, datas)
            assert more == (len(datas) - before == n)
        reader.close()
        assert datas == records
        one = tf_record.RecordReader(str(path), buffer_size=block)
        assert offsets == [one.read()[0] for _ in records] and one.read() is None
        one.close()


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_read_many_stops_at_a_bad_record_and_stays_there(tmp_path, damage):
    """The records before a corrupt or truncated one are appended, then DataLossError names
    the bad record's offset; reading again raises again (the reader does not skip it)."""
    path = tmp_path / "bad.tfrecord"
    _write(path, [b"hello", b"world", b"x" * 100])
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[21 + 12] ^= 0x01  # a byte of the second record's data
        want = "corrupted record at 33"
    else:
        data = data[:-3]
        want = "truncated record at 42"
    path.write_bytes(bytes(data))
    reader = tf_record.RecordReader(str(path), buffer_size=16)
    offsets, datas = [], []
    with pytest.raises(tf.errors.DataLossError, match=want):
        reader.read_many(10, offsets, datas)
    expected = [b"hello"] if damage == "flip" else [b"hello", b"world"]
    assert datas == expected and offsets == [0, 21][:len(expected)]
    with pytest.raises(tf.errors.DataLossError, match=want):
        reader.read_many(10, [], [])
    reader.close()
