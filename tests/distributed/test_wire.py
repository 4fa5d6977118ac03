"""Tensors on the wire: RecvTensorResponse written and read by hand, checked against the
protobuf classes both ways, for every dtype that crosses tasks."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tensorflux.distributed import wire
from tensorflux.framework import errors
from tensorflux.protos import worker_pb2

VALUES = [
    np.arange(12, dtype=np.float32).reshape(3, 4),
    np.array(3.5),
    np.array(7, dtype=np.int64),
    np.arange(6, dtype=np.int8).reshape(2, 3).T,  # not contiguous
    np.array([1.5, -2.25], dtype=ml_dtypes.bfloat16),
    np.array([1.0, 65504.0], dtype=np.float16),
    np.array([1 + 2j, -3j], dtype=np.complex128),
    np.array([[True, False]]),
    np.array([b"ab", b"", b"\x00\xff"], dtype=object),
    np.array(b"fixed-width"),  # NumPy's 'S' dtype, as a string scalar
    np.array([b"a", b"bc"]),
    np.zeros((0, 3), np.float32),
    np.arange(5, dtype=np.uint16).astype(">u2"),  # big-endian input
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: f"{v.dtype}{list(v.shape)}")
def test_round_trip_and_protobuf_agree(value):
    data = wire.encode_recv_tensor_response(value, False, 123)
    got, dead = wire.decode_recv_tensor_response(data)
    assert not dead
    # Strings come back as TensorFlow's: object arrays of bytes.
    want_dtype = np.dtype(object) if value.dtype.kind in "OSU" else \
        value.dtype.newbyteorder("=")
    assert got.shape == value.shape and got.dtype == want_dtype
    np.testing.assert_array_equal(got, value)
    parsed = worker_pb2.RecvTensorResponse.FromString(data)  # what TensorFlow reads
    assert parsed.send_start_micros == 123
    np.testing.assert_array_equal(wire.from_tensor_proto(parsed.tensor), value)
    # Fields in another order (as a TensorFlow worker may write them) read the same.
    shuffled = worker_pb2.RecvTensorResponse(send_start_micros=5, is_dead=False)
    wire.to_tensor_proto(value, shuffled.tensor)
    got2, _ = wire.decode_recv_tensor_response(shuffled.SerializeToString())
    np.testing.assert_array_equal(got2, value)


def test_dead_values_and_malformed_messages():
    value, dead = wire.decode_recv_tensor_response(wire.encode_recv_tensor_response(None, True))
    assert dead and value is None
    good = wire.encode_recv_tensor_response(np.arange(4, dtype=np.float32), False)
    for bad in (good[:-3], good[:2], b"\x0a\xff\xff\xff\xff\x0f", b"\x0b"):
        with pytest.raises(errors.InvalidArgumentError):
            wire.decode_recv_tensor_response(bad)


def test_error_status_round_trip():
    err = errors.NotFoundError(None, None, "no such thing {{node x}}")
    code, message = wire.status_of(err)
    back = wire.error_from_status(code, message)
    assert type(back) is errors.NotFoundError and back.message == err.message
    assert type(wire.error_from_status(99, "?")) is errors.UnknownError
    assert wire.status_of(ValueError("v"))[0] == errors.INVALID_ARGUMENT


def test_scan_fields_against_protobuf():
    """scan_fields reads what protobuf writes (varints, bytes, a skipped fixed64), and a
    field that runs past the end is a ValueError."""
    msg = worker_pb2.RunGraphRequest(step_id=2 ** 40 + 3, graph_handle="g/1",
                                     is_partial=True)
    msg.recv_key.append("k")
    data = msg.SerializeToString()
    got = [(k, v if isinstance(v, int) else bytes(v)) for k, v in wire.scan_fields(data)]
    want = {(1 << 3 | 2, b"g/1"), (2 << 3, 2 ** 40 + 3), (4 << 3 | 2, b"k"), (6 << 3, 1)}
    assert set(got) == want and len(got) == len(want)
    skipped = bytes([1 << 3 | 1]) + b"\0" * 8 + bytes([2 << 3, 5])  # fixed64, then a varint
    assert list(wire.scan_fields(skipped)) == [(2 << 3, 5)]
    for bad in (data[:-1], bytes([1 << 3 | 2, 5]) + b"abc", bytes([1 << 3 | 1, 0])):
        with pytest.raises(ValueError):
            list(wire.scan_fields(bad))
