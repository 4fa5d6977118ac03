"""The checkpoint format: round trips of every dtype, slices, safetensors compatibility,
corruption and truncation anywhere, leftovers of interrupted saves, TensorFlow bundles."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import tensorflux as tf
from tensorflux import checkpoint
from tensorflux.checkpoint import files, format, tf_bundle
from tensorflux.framework import errors
from tests.oracle import run_tf

DATA = Path(__file__).parent / "data"

# dtype -> a value exercising it (edge values included)
VALUES = {
    tf.float16: np.array([[0.5, -2.0], [np.inf, 65504.0]], np.float16),
    tf.bfloat16: np.array([1.5, -3.0, 1e30], dtype=tf.bfloat16.as_numpy_dtype),
    tf.float32: np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
    tf.float64: np.array([np.pi, -0.0, np.nan]),
    tf.int8: np.array([-128, 127], np.int8),
    tf.int16: np.array([-32768, 7], np.int16),
    tf.int32: np.array([[2**31 - 1]], np.int32),
    tf.int64: np.array(-(2**62), np.int64),
    tf.uint8: np.array([0, 255], np.uint8),
    tf.uint16: np.array([65535], np.uint16),
    tf.uint32: np.array([2**32 - 1], np.uint32),
    tf.uint64: np.array([2**64 - 1], np.uint64),
    tf.bool: np.array([[True, False, True]]),
    tf.complex64: np.array([1 + 2j, -3.5j], np.complex64),
    tf.complex128: np.array([[1e300 - 1j]], np.complex128),
    tf.string: np.array([b"hello", b"", "\u00e9t\u00e9".encode(), b"\x00\xff" * 100],
                        dtype=object),
    tf.qint8: np.array([-5, 5], np.int8),
    tf.quint8: np.array([200], np.uint8),
    tf.qint32: np.array([123456], np.int32),
}


def _entries():
    return [checkpoint.Entry(f"t_{d.name}", d, v) for d, v in VALUES.items()] + [
        checkpoint.Entry("scalar_string", tf.string, np.array(b"one", dtype=object)),
        checkpoint.Entry("empty", tf.float32, np.zeros((0, 3), np.float32)),
    ]


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    if a.dtype == object:
        assert a.tolist() == b.tolist()
    else:
        np.testing.assert_array_equal(a, b)


@pytest.fixture()
def saved(tmp_path):
    prefix = str(tmp_path / "model")
    checkpoint.write_checkpoint(prefix, _entries())
    return prefix


def test_round_trip_every_dtype(saved):
    with checkpoint.open_checkpoint(saved) as reader:
        for e in _entries():
            dtype, shape = reader.entries()[e.name]
            assert dtype == e.dtype and shape == list(np.shape(e.value))
            _same(reader.read(e.name), np.asarray(e.value, dtype=e.dtype.numpy_dtype))


def test_files_are_named_and_committed(saved, tmp_path):
    names = sorted(os.listdir(tmp_path))
    assert names[1] == "model.index"
    assert files.DATA_RE.search(names[0]).group(1, 2) == ("00000", "00001")
    assert names[0].endswith(".safetensors") and not any(".tmp-" in n for n in names)


def test_data_files_are_standard_safetensors(saved, tmp_path):
    from safetensors import safe_open

    data = next(p for p in tmp_path.iterdir() if p.name.endswith(".safetensors"))
    with safe_open(str(data), framework="numpy") as f:
        np.testing.assert_array_equal(f.get_tensor("t_float32"), VALUES[tf.float32])
        np.testing.assert_array_equal(f.get_tensor("t_complex64"), VALUES[tf.complex64])
        assert f.get_tensor("t_complex128").shape == (1, 1, 2)  # real pairs
    reader = tf.train.NewCheckpointReader(str(data))  # a plain safetensors file
    np.testing.assert_array_equal(reader.get_tensor("t_int16"), VALUES[tf.int16])
    assert reader.get_variable_to_dtype_map()["t_bfloat16"] == tf.bfloat16
    np.testing.assert_array_equal(reader.get_tensor("t_bfloat16"), VALUES[tf.bfloat16])


def test_slices_assemble_and_check_coverage(tmp_path):
    prefix = str(tmp_path / "p")
    full = np.arange(40, dtype=np.float32).reshape(10, 4)
    checkpoint.write_checkpoint(prefix, [
        checkpoint.Entry("p", tf.float32, full[:6], "10 4 0,6:-"),
        checkpoint.Entry("p", tf.float32, full[6:], "10 4 6,4:-"),
        checkpoint.Entry("q", tf.float32, full[:5], "10 4 0,5:-"),
    ])
    with checkpoint.open_checkpoint(prefix) as r:
        np.testing.assert_array_equal(r.read("p"), full)
        np.testing.assert_array_equal(r.read("p", "10 4 4,4:1,2"), full[4:8, 1:3])
        assert r.get_variable_to_shape_map() == {"p": [10, 4], "q": [10, 4]}
        with pytest.raises(errors.InvalidArgumentError, match="do not cover"):
            r.read("q")
        with pytest.raises(errors.InvalidArgumentError, match=r"spec \[9,4\] does not match"):
            r.read("p", "9 4 0,1:-")
        with pytest.raises(errors.NotFoundError, match="Key zz not found in checkpoint"):
            r.read("zz")


def test_bad_entries_are_rejected(tmp_path):
    prefix = str(tmp_path / "bad")
    with pytest.raises(errors.InvalidArgumentError, match="saved twice"):
        checkpoint.write_checkpoint(prefix, [checkpoint.Entry("a", tf.float32, np.ones(2)),
                                             checkpoint.Entry("a", tf.float32, np.ones(2))])
    with pytest.raises(errors.InvalidArgumentError, match="asks for shape"):
        checkpoint.write_checkpoint(prefix, [checkpoint.Entry("a", tf.float32, np.ones(2),
                                                              "4 0,3")])
    with pytest.raises(errors.InvalidArgumentError, match="resource is not supported"):
        checkpoint.write_checkpoint(prefix, [checkpoint.Entry("a", tf.resource,
                                                              np.array(None))])
    assert os.listdir(tmp_path) == []  # nothing half-written


def _read_everything(prefix):
    with checkpoint.open_checkpoint(prefix) as r:
        for name in r.entries():
            r.read(name)


@pytest.mark.parametrize("which", ["data", "index"])
def test_every_flipped_byte_is_data_loss(saved, tmp_path, which):
    path = next(p for p in tmp_path.iterdir()
                if (p.name.endswith(".safetensors") if which == "data" else p.suffix == ".index"))
    original = path.read_bytes()
    tensor_names = {e.name for e in _entries()}
    for pos in range(len(original)):
        corrupt = bytearray(original)
        corrupt[pos] ^= 0x5A
        path.write_bytes(bytes(corrupt))
        with pytest.raises(errors.DataLossError) as info:
            _read_everything(saved)
        assert str(path) in info.value.message, (pos, info.value.message)
        if which == "data":  # data errors name the tensor being read
            assert any(f"'{n}'" in info.value.message for n in tensor_names), pos
    path.write_bytes(original)
    _read_everything(saved)


@pytest.mark.parametrize("which", ["data", "index"])
def test_every_truncation_is_data_loss(saved, tmp_path, which):
    path = next(p for p in tmp_path.iterdir()
                if (p.name.endswith(".safetensors") if which == "data" else p.suffix == ".index"))
    original = path.read_bytes()
    for size in list(range(0, len(original), 7)) + [len(original) - 1]:
        path.write_bytes(original[:size])
        with pytest.raises(errors.DataLossError, match="truncated|corrupted") as info:
            _read_everything(saved)
        assert str(path) in info.value.message
    path.write_bytes(original + b"\0")  # an extended file is caught too
    with pytest.raises(errors.DataLossError):
        _read_everything(saved)


def test_missing_checkpoint_and_missing_data_file(saved, tmp_path):
    with pytest.raises(errors.NotFoundError, match="Unsuccessful TensorSliceReader constructor: "
                       "Failed to find any matching files for .*nope"):
        checkpoint.open_checkpoint(str(tmp_path / "nope"))
    for p in tmp_path.iterdir():
        if p.name.endswith(".safetensors"):
            p.unlink()
    with pytest.raises(errors.DataLossError, match="is missing .*tensor '"):
        _read_everything(saved)


def test_rewriting_a_prefix_replaces_data_and_cleans_old_files(saved, tmp_path):
    before = {p.name for p in tmp_path.iterdir()}
    checkpoint.write_checkpoint(saved, [checkpoint.Entry("x", tf.int32, np.array([7]))])
    after = {p.name for p in tmp_path.iterdir()}
    assert len(after) == 2 and "model.index" in after and not (after - {"model.index"}) & before
    with checkpoint.open_checkpoint(saved) as r:
        assert list(r.entries()) == ["x"]


def test_leftovers_of_dead_writers_are_ignored_and_cleaned(saved, tmp_path):
    dead = 2**22 + 12345  # above pid_max on Linux: never alive
    junk = [tmp_path / f"model.index.tmp-{dead}-0123abcd",
            tmp_path / f"other.data-00000-of-00001.deadbeef.safetensors.tmp-{dead}-89abcdef"]
    mine = tmp_path / f"x.index.tmp-{os.getpid()}-00000000"
    for p in junk + [mine]:
        p.write_bytes(b"partial")
    files._in_flight.add(str(mine))  # a save of ours still writing it
    try:
        _read_everything(saved)  # readers never look at temporaries
        removed = files.cleanup_directory(str(tmp_path))
        assert sorted(removed) == sorted(str(p) for p in junk) and mine.exists()
    finally:
        files._in_flight.discard(str(mine))
    assert files.cleanup_directory(str(tmp_path)) == [str(mine)]


def test_orphaned_data_of_an_interrupted_save_is_cleaned_on_next_save(saved, tmp_path):
    orphan = tmp_path / files.data_file_name("model", 0, 1, "0badf00d").split("/")[-1]
    orphan.write_bytes(b"renamed before the index commit")
    _read_everything(saved)
    checkpoint.write_checkpoint(saved, _entries())
    assert not orphan.exists()
    checkpoint.delete_checkpoint(saved)
    assert os.listdir(tmp_path) == []


def test_merge_joins_shards_into_one_checkpoint(tmp_path):
    parts = [str(tmp_path / "m_temp" / f"part-{i:05d}-of-00002") for i in range(2)]
    checkpoint.write_checkpoint(parts[0], [checkpoint.Entry("a", tf.float32, np.ones(3))])
    checkpoint.write_checkpoint(parts[1], [checkpoint.Entry("b", tf.string,
                                                            np.array([b"z"], dtype=object))])
    checkpoint.merge_checkpoints(parts, str(tmp_path / "m"))
    names = sorted(os.listdir(tmp_path))
    assert names[-1] == "m.index" and len(names) == 3 and "m_temp" not in names
    assert [files.DATA_RE.search(n).group(1) for n in names[:2]] == ["00000", "00001"]
    with checkpoint.open_checkpoint(str(tmp_path / "m")) as r:
        assert r.get_tensor("b") .tolist() == [b"z"] and r.get_tensor("a").sum() == 3


# ---- TensorFlow's own checkpoints --------------------------------------------------------

TF_VALUES = {"f32": np.arange(6, dtype=np.float32).reshape(2, 3), "f64": np.array([1.5, -2.0]),
             "i32": np.array([1, 2, 3], np.int32), "i64": np.array(7, np.int64),
             "b": np.array([True, False]), "c64": np.array([1 + 2j], np.complex64),
             "c128": np.array([[3 - 1j]]), "f16": np.array([0.5], np.float16),
             "u8": np.array([255], np.uint8),
             "s": np.array([b"hello", b"", b"world!!"], dtype=object),
             "bf16": np.array([1.0, 2.0], dtype=tf.bfloat16.as_numpy_dtype)}


def _check_tf_values(reader):
    for name, want in TF_VALUES.items():
        got = reader.get_tensor(name)
        assert np.asarray(got).dtype == want.dtype, name
        _same(got, want)
    assert reader.get_tensor("s0") == b"scalar"


def test_reads_tensorflow_bundle_fixture(tmp_path):
    for name in ("tf_model.index", "tf_model.data-00000-of-00001"):
        shutil.copy(DATA / name, tmp_path / name)
    reader = tf.train.NewCheckpointReader(str(tmp_path / "tf_model"))
    assert isinstance(reader, tf_bundle.TFBundleReader)
    _check_tf_values(reader)
    assert reader.get_variable_to_shape_map()["f32"] == [2, 3]


@pytest.mark.parametrize("which", ["index", "data-00000-of-00001"])
def test_corrupt_tensorflow_bundle_is_data_loss(tmp_path, which):
    for name in ("tf_model.index", "tf_model.data-00000-of-00001"):
        shutil.copy(DATA / name, tmp_path / name)
    path = tmp_path / f"tf_model.{which}"
    original = path.read_bytes()
    # The index's footer padding and block restarts are not all checksummed by TensorFlow;
    # every byte of a block and of the data is.
    positions = range(len(original) - 48) if which == "index" else range(len(original))
    for pos in positions:
        corrupt = bytearray(original)
        corrupt[pos] ^= 0x01
        path.write_bytes(bytes(corrupt))
        with pytest.raises((errors.DataLossError, errors.NotFoundError)):
            _check_tf_values(tf.train.NewCheckpointReader(str(tmp_path / "tf_model")))


def test_masking_matches_tensorflow():
    for crc in (0, 1, 0xFFFFFFFF, 0x12345678):
        assert tf_bundle.unmask(tf_bundle.mask(crc)) == crc
    assert format.crc32c(b"123456789") == 0xE3069283  # the CRC32C check value


@pytest.mark.oracle
def test_reads_a_checkpoint_tensorflow_writes_now(tmp_path):
    prefix = str(tmp_path / "fresh")
    run_tf(f"""
        import numpy as np
        w = tf.Variable(np.arange(20, dtype=np.float32).reshape(4, 5), name="layer/w")
        s = tf.Variable([b"a", b"bc"], name="names")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            tf.train.Saver().save(sess, {prefix!r})
    """)
    reader = tf.train.NewCheckpointReader(prefix)
    np.testing.assert_array_equal(reader.get_tensor("layer/w"),
                                  np.arange(20, dtype=np.float32).reshape(4, 5))
    assert reader.get_tensor("names").tolist() == [b"a", b"bc"]


def test_concurrent_saves_of_one_prefix_leave_a_readable_checkpoint(tmp_path):
    import threading

    prefix = str(tmp_path / "same")
    failures = []

    def saver(k):
        try:
            for i in range(10):
                checkpoint.write_checkpoint(prefix, [checkpoint.Entry(
                    "x", tf.int64, np.full(1000, 100 * k + i, np.int64))], sync=False)
                with checkpoint.open_checkpoint(prefix) as r:
                    value = r.read("x")
                    assert (value == value[0]).all()
        except Exception as e:  # noqa: BLE001 - reported below
            failures.append(e)

    threads = [threading.Thread(target=saver, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not failures, [str(f) for f in failures]
    _read_everything(prefix)
    assert len([n for n in os.listdir(tmp_path) if ".data-" in n]) == 1


def _rewrite_index(prefix, edit):
    """Rewrites `prefix.index` with `edit(body)` applied and a valid checksum, as an attacker
    who controls the file would (the checksum proves integrity, not trust)."""
    path = prefix + ".index"
    body = format.decode_index(Path(path).read_bytes(), prefix)
    edit(body)
    Path(path).write_bytes(format.encode_index(body))


@pytest.mark.parametrize("name", [
    "/etc/passwd", "../outside.data-00000-of-00001.0123abcd.safetensors",
    "sub/model.data-00000-of-00001.0123abcd.safetensors", "other.data-00000-of-00001.0123abcd"
    ".safetensors", "model.data-00001-of-00001.0123abcd.safetensors", "model.index", "", 7])
def test_index_naming_files_that_are_not_its_shards_is_data_loss(saved, tmp_path, name):
    victim = tmp_path.parent / "outside.data-00000-of-00001.0123abcd.safetensors"
    victim.write_bytes(b"secret")

    def edit(body):
        body["shards"][0]["file"] = name

    _rewrite_index(saved, edit)
    with pytest.raises(errors.DataLossError, match="shard 0 names the data file"):
        _read_everything(saved)
    # Nothing else was touched: a save over the prefix and a merge keep away from it too.
    checkpoint.write_checkpoint(saved, _entries())
    _read_everything(saved)
    assert victim.read_bytes() == b"secret"


def test_a_fifo_in_place_of_a_data_file_is_data_loss_not_a_hang(saved, tmp_path):
    data = next(p for p in tmp_path.iterdir() if p.name.endswith(".safetensors"))
    data.unlink()
    os.mkfifo(data)
    with pytest.raises(errors.DataLossError, match="not a regular file"):
        _read_everything(saved)


# A malformed index body sealed with a matching CRC (found by tests/fuzz): each edit of
# tensor "w" (a whole 3x4 float32) or of the shard is DataLossError at open, never a bare
# TypeError, IndexError or MemoryError while reading.
_RESEALED = {
    "end past the file": lambda b: b["tensors"]["w"]["parts"][0].update(end=2**40),
    "negative begin": lambda b: b["tensors"]["w"]["parts"][0].update(begin=-5),
    "shape not a list": lambda b: b["tensors"]["w"].update(shape="ab"),
    "more elements than bytes": lambda b: b["tensors"]["w"].update(shape=[2**40, 4]),
    "unknown dtype": lambda b: b["tensors"]["w"].update(dtype_enum=999),
    "shard out of range": lambda b: b["tensors"]["w"]["parts"][0].update(shard=7),
    "parts not a list": lambda b: b["tensors"]["w"].update(parts=None),
    "tensors not a table": lambda b: b.update(tensors=[]),
    "header past the file": lambda b: b["shards"][0].update(header_size=2**40),
    "size not a number": lambda b: b["shards"][0].update(size="1"),
}


@pytest.mark.parametrize("edit", list(_RESEALED.values()), ids=list(_RESEALED))
def test_malformed_index_with_a_valid_checksum_is_data_loss(tmp_path, edit):
    import json

    prefix = str(tmp_path / "m")
    checkpoint.write_checkpoint(prefix, [checkpoint.Entry("w", tf.float32, np.ones((3, 4)))])
    with open(prefix + ".index", "rb") as f:
        body = json.loads(f.read()[20:-4])
    edit(body)
    with open(prefix + ".index", "wb") as f:
        f.write(format.encode_index(body))
    with pytest.raises(errors.DataLossError, match="is corrupted"):
        checkpoint.open_checkpoint(prefix)


def test_huge_partitioned_tensor_saved_in_part_is_not_allocated(tmp_path):
    prefix = str(tmp_path / "m")
    checkpoint.write_checkpoint(prefix, [
        checkpoint.Entry("p", tf.float32, np.ones((2, 3), np.float32), f"{2**40} 3 0,2:-")])
    with checkpoint.open_checkpoint(prefix) as r:
        np.testing.assert_array_equal(r.read("p", f"{2**40} 3 0,2:-"), np.ones((2, 3)))
        with pytest.raises(errors.InvalidArgumentError, match="do not cover"):
            r.read("p")
