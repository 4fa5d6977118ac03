"""The row-wise parallel map: a map of parse_single_example with num_parallel_calls parses
each chunk of elements with one ParseExampleV2 call (kernels/functions.row_wise,
kernels/datasets._call_rows), and ParseExampleV2 reads plain records straight from the wire
(lib/example_wire). Results are those of the sequential, per-element map; an element that
fails raises its own typed error and the elements after it follow. Such a map followed by
batch is fused (one call per batch), with TensorFlow's map_and_batch results and errors."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels import functions as functions_lib
from tensorflux.protos import example_pb2

pytestmark = pytest.mark.timeout(120)

FEATURES = {"id": tf.FixedLenFeature([], tf.int64),
            "x": tf.FixedLenFeature([3], tf.float32),
            "s": tf.FixedLenFeature([], tf.string, default_value=b"none")}


def _example(i: int, with_s: bool = True, x=None) -> bytes:
    ex = example_pb2.Example()
    f = ex.features.feature
    f["id"].int64_list.value.append(i - 20)
    f["x"].float_list.value.extend([i, i / 2, -i] if x is None else x)
    if with_s:
        f["s"].bytes_list.value.append(b"r%d" % i)
    return ex.SerializeToString()


def _records(n: int, bad=()) -> list[bytes]:
    out = []
    for i in range(n):
        if i in bad:
            out.append(b"\x0a\x05oops" if i % 2 else _example(i, x=[1.0]))
        else:
            out.append(_example(i, with_s=i % 3 != 0))
    return out


def _write(tmp_path, records) -> str:
    path = str(tmp_path / "r.tfrecord")
    with tf.python_io.TFRecordWriter(path) as w:
        for r in records:
            w.write(r)
    return path


def _reference(r):
    """The same parse, not row-wise (its input is not the argument): mapped per element."""
    return tf.parse_single_example(tf.identity(r), FEATURES)


def _run(path, parallel, batch=None, drop=False, shuffle=False, fn=None):
    with tf.Graph().as_default():
        ds = tf.data.TFRecordDataset(path).map(
            fn or (lambda r: tf.parse_single_example(r, FEATURES)),
            num_parallel_calls=parallel)
        if shuffle:
            ds = ds.shuffle(7, seed=3)
        if batch:
            ds = ds.batch(batch, drop_remainder=drop)
        nxt = tf.data.make_one_shot_iterator(ds).get_next()
        out = []
        with tf.Session() as s:
            for _ in range(10_000):
                try:
                    v = s.run(nxt)
                    out.append({k: np.asarray(a).tolist() for k, a in sorted(v.items())})
                except tf.errors.OutOfRangeError:
                    return out
                except tf.errors.InvalidArgumentError as e:
                    out.append(("error", type(e).__name__, e.message.split(",")[0]))
    raise AssertionError("did not end")


@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, 150])
@pytest.mark.parametrize("parallel", [None, 4, tf.data.experimental.AUTOTUNE])
def test_row_wise_map_matches_the_per_element_map(tmp_path, n, parallel):
    path = _write(tmp_path, _records(n))
    want = _run(path, None, fn=_reference)
    if n == 0:
        assert _run(path, parallel) == want == []
        return
    assert len(want) == n and want[0]["s"] == b"none" and want[-1]["id"] == n - 21
    assert _run(path, parallel) == want


@pytest.mark.parametrize("drop", [False, True])
def test_shuffle_and_batch_after_the_row_wise_map(tmp_path, drop):
    path = _write(tmp_path, _records(45))
    want = _run(path, None, batch=8, drop=drop, shuffle=True, fn=_reference)
    assert len(want) == (5 if drop else 6)
    assert _run(path, 4, batch=8, drop=drop, shuffle=True) == want


def test_a_bad_record_raises_for_its_element_and_the_rest_follow(tmp_path):
    path = _write(tmp_path, _records(150, bad={5, 18, 64, 149}))
    want = _run(path, None, fn=_reference)
    assert want[5] == ("error", "InvalidArgumentError", "Name: <unknown>")
    assert want[18][0] == "error" and want[17]["id"] == -3 and want[19]["id"] == -1
    assert len(want) == 150 and want[149][0] == "error"
    assert _run(path, 4) == want
    assert _run(path, None) == want


def test_parse_example_batch_mixes_wire_and_protobuf_records():
    # A record the wire reader declines (an unknown field) is parsed by protobuf.
    odd = _example(3) + b"\x28\x01"
    plain = _example(4)
    with tf.Graph().as_default():
        out = tf.parse_example(tf.constant([odd, plain, _example(5, with_s=False)]), FEATURES)
        with tf.Session() as s:
            got = s.run(out)
    assert got["id"].tolist() == [-17, -16, -15]
    assert got["x"].dtype == np.float32 and got["x"][1].tolist() == [4, 2, -4]
    assert got["s"].tolist() == [b"r3", b"r4", b"none"]


@pytest.mark.parametrize("record, message", [
    (_example(1, x=[1.0, 2.0]), "Number of float values != expected"),
    (b"\x0a\x05oops", "Could not parse example input"),
])
def test_parse_example_errors_on_the_wire_path(record, message):
    with tf.Graph().as_default():
        out = tf.parse_example(tf.constant([_example(0), record]), FEATURES)
        with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError, match=message):
            s.run(out)


def test_type_mismatch_and_missing_required_feature():
    ex = example_pb2.Example()
    ex.features.feature["id"].float_list.value.append(1.0)
    with tf.Graph().as_default():
        out = tf.parse_example(tf.constant([ex.SerializeToString()]), FEATURES)
        with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError,
                                              match="Data type: float but expected type: "
                                                    "int64"):
            s.run(out)
        out = tf.parse_example(tf.constant([b""]), FEATURES)
        with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError,
                                              match="Feature: id .* is required"):
            s.run(out)


def _f(fn):
    with tf.Graph().as_default():
        ds = tf.data.Dataset.from_tensors(tf.constant(b"")).map(fn, num_parallel_calls=2)
        return ds._variant_tensor.op._attrs["f"]


def test_which_functions_are_row_wise():
    assert functions_lib.row_wise(_f(lambda r: tf.parse_single_example(r, FEATURES)))
    seq = {"v": tf.FixedLenSequenceFeature([], tf.int64, allow_missing=True)}
    assert not functions_lib.row_wise(_f(lambda r: tf.parse_single_example(r, seq)))
    assert not functions_lib.row_wise(_f(
        lambda r: tf.parse_single_example(r, FEATURES)["id"] + 1))
    assert not functions_lib.row_wise(_f(
        lambda r: (tf.parse_single_example(r, FEATURES)["id"], tf.constant(1))))
    assert not functions_lib.row_wise(_f(lambda r: r))
    assert not functions_lib.row_wise(_f(_reference))
    with tf.Graph().as_default():
        key = tf.placeholder_with_default(tf.constant(b""), [])
        ds = tf.data.Dataset.from_tensors(tf.constant(b"")).map(
            lambda r: tf.parse_single_example(r, {"a": tf.FixedLenFeature(
                [], tf.string, default_value=key)}), num_parallel_calls=2)
        assert not functions_lib.row_wise(ds._variant_tensor.op._attrs["f"])


def test_chunks_are_mapped_with_one_call(tmp_path, monkeypatch):
    from tensorflux.kernels import datasets
    results = []
    real = datasets._call_rows

    def spy(fn, elements, captured):
        out = real(fn, elements, captured)
        results.append((len(elements), out is not None))
        return out

    monkeypatch.setattr(datasets, "_call_rows", spy)
    path = _write(tmp_path, _records(140, bad={100}))
    assert len(_run(path, 2)) == 140
    assert results == [(64, True), (64, False), (12, True)]  # the 2nd holds the bad one


def test_an_input_error_is_raised_in_its_place(tmp_path):
    path = _write(tmp_path, _records(100))
    data = bytearray(open(path, "rb").read())
    data[len(data) * 7 // 10] ^= 0xFF  # a record about 70% in
    with open(path, "wb") as f:
        f.write(data)

    def run(fn, parallel):
        with tf.Graph().as_default():
            ds = tf.data.TFRecordDataset(path).map(fn, num_parallel_calls=parallel)
            nxt = tf.data.make_one_shot_iterator(ds).get_next()
            got = []
            with tf.Session() as s:
                for _ in range(200):
                    try:
                        got.append(int(s.run(nxt)["id"]))
                    except tf.errors.OutOfRangeError:
                        return got
                    except tf.errors.DataLossError:
                        got.append("data loss")
        raise AssertionError("did not end")

    want = run(_reference, None)
    assert "data loss" in want and 50 < len(want) < 100
    assert run(lambda r: tf.parse_single_example(r, FEATURES), None) == want
    assert run(lambda r: tf.parse_single_example(r, FEATURES), 4) == want


@pytest.mark.parametrize("n", [0, 1, 7, 8, 45])
@pytest.mark.parametrize("drop", [False, True])
@pytest.mark.parametrize("parallel", [None, 4])
def test_map_and_batch_fused_matches_the_unfused_pipeline(tmp_path, n, drop, parallel):
    path = _write(tmp_path, _records(n))
    want = _run(path, None, batch=8, drop=drop, fn=_reference)
    assert len(want) == (n // 8 if drop else -(-n // 8))
    assert _run(path, parallel, batch=8, drop=drop) == want


@pytest.mark.parametrize("drop", [False, True])
def test_map_and_batch_fused_errors_as_tensorflow(tmp_path, drop):
    # TensorFlow 2.21 (map_and_batch fusion on by default) gives this sequence: a batch
    # holding a bad record raises, its elements are dropped, and the next batch follows.
    path = _write(tmp_path, _records(45, bad={5, 18}))
    got = [b if isinstance(b, tuple) else b["id"] for b in _run(path, 4, batch=8, drop=drop)]
    want = [("error", "InvalidArgumentError", "Name: <unknown>"), list(range(-12, -4)),
            ("error", "InvalidArgumentError", "Name: <unknown>"), list(range(4, 12)),
            list(range(12, 20))] + ([] if drop else [list(range(20, 25))])
    assert got == want


def test_an_unparsable_record_is_reported_before_value_errors():
    # As when every record is parsed first: the bad record (index 2) wins over the
    # count error of record 1.
    with tf.Graph().as_default():
        out = tf.parse_example(tf.constant([_example(0), _example(1, x=[1.0]), b"\x0a\x05oops"]),
                               FEATURES)
        with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError,
                                              match="Could not parse example input"):
            s.run(out)
