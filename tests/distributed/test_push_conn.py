"""push_conn.FrameReader: a push connection's frames read with as few system calls as it
takes, whatever way the producer's writes are cut up on the socket."""

from __future__ import annotations

import random
import socket
import struct
import threading

import numpy as np
import pytest

from tensorflux.distributed import push_conn

pytestmark = pytest.mark.timeout(60)

BUFFER = push_conn._FRAME_BUFFER
BIG = push_conn._BIG_FRAME
SIZES = [0, 1, 100, BIG - 1, BIG, BIG + 1, 3, BUFFER - 8, BUFFER + 5, 2 * BUFFER + 17, 9]


def _frame(size: int, seed: int) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, size, np.uint8).tobytes()


def _wire(frames: list[bytes]) -> bytes:
    return b"".join(struct.pack("<Q", len(f)) + f for f in frames)


def _write_in_pieces(sock: socket.socket, data: bytes, cuts: str) -> threading.Thread:
    """Writes `data` on another thread: "whole" in one call, "bytes" cut at random points
    (some 1-byte writes, some inside a length prefix)."""
    def run():
        if cuts == "whole":
            sock.sendall(data)
        else:
            rng, pos = random.Random(7), 0
            while pos < len(data):
                n = rng.choice([1, 3, 7, 4096, 70_000])
                sock.sendall(data[pos:pos + n])
                pos += n
        sock.shutdown(socket.SHUT_WR)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("cuts", ["whole", "bytes"])
@pytest.mark.parametrize("family", ["unix", "tcp"])
def test_frames_come_back_whole_and_in_order(cuts, family):
    if family == "unix":
        a, b = socket.socketpair()
    else:
        listener = socket.create_server(("127.0.0.1", 0))
        a = socket.create_connection(listener.getsockname())
        b, _ = listener.accept()
        listener.close()
    frames = [_frame(n, k) for k, n in enumerate(SIZES)]
    writer = _write_in_pieces(a, _wire(frames), cuts)
    reader = push_conn.FrameReader(b, 1 << 30)
    got = []
    for want in frames:
        frame = reader.next()
        assert isinstance(frame, bytearray if len(want) < BIG else np.ndarray)
        got.append(frame)
        assert bytes(frame) == want
    with pytest.raises(EOFError):
        reader.next()
    # each frame has a buffer of its own: later reads did not change earlier frames
    assert [bytes(f) for f in got] == frames
    writer.join()
    a.close()
    b.close()


def test_buffered_tells_whether_a_whole_frame_is_already_read():
    a, b = socket.socketpair()
    reader = push_conn.FrameReader(b, 1 << 30)
    assert not reader.buffered()
    a.sendall(_wire([b"x" * 10, b"y" * 20]) + struct.pack("<Q", 5) + b"ab")
    assert bytes(reader.next()) == b"x" * 10  # one read took all that was there
    assert reader.buffered()
    assert bytes(reader.next()) == b"y" * 20
    assert not reader.buffered()  # the third frame is cut short
    a.sendall(b"cde")
    assert bytes(reader.next()) == b"abcde"
    assert not reader.buffered()
    a.close()
    b.close()


@pytest.mark.parametrize("tail", [b"", b"\x05\x00", struct.pack("<Q", 10) + b"abc"],
                         ids=["at_a_boundary", "in_a_length", "in_a_frame"])
def test_a_connection_that_ends_raises_eof(tail):
    a, b = socket.socketpair()
    a.sendall(_wire([b"ok"]) + tail)
    a.close()
    reader = push_conn.FrameReader(b, 1 << 30)
    assert bytes(reader.next()) == b"ok"
    with pytest.raises(EOFError):
        reader.next()
    b.close()


def test_a_frame_over_the_limit_is_refused_before_it_is_read():
    a, b = socket.socketpair()
    a.sendall(_wire([b"1234"]) + struct.pack("<Q", 1 << 40))
    reader = push_conn.FrameReader(b, 100)
    assert bytes(reader.next()) == b"1234"
    with pytest.raises(ValueError, match="limit is 100"):
        reader.next()
    a.close()
    b.close()


def test_malformed_call_reply_and_connect_frames_are_refused_not_crashed():
    """Random and cut frames: the decoders answer with their result or ValueError (the
    Connect answer's: OSError), never another exception; a whole call frame round-trips."""
    from tensorflux.distributed import push, wire

    call = (b"\x08" + wire._varint(2500) + b"\x12\x03abc" + b"\x18" + wire._varint(77)
            + b"\x20\x02" + b"\x2a\x02xy")
    timeout, step, method, request, shared = push_conn.decode_call(memoryview(call))
    assert (timeout, step, method, bytes(request), [bytes(s) for s in shared]) == \
        (2.5, 77, 2, b"abc", [b"xy"])
    rng = random.Random(0)
    frames = [bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 40)))
              for _ in range(2000)] + [call[:n] for n in range(1, len(call))]
    for frame in frames:
        for decode, allowed in ((push_conn.decode_call, ValueError),
                                (push_conn.decode_reply, ValueError),
                                (push._decode_connect, OSError)):
            try:
                decode(memoryview(frame))
            except allowed:
                pass
