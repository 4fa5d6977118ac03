"""tf.audio.decode_wav / encode_wav (tensorflux/ops/audio_ops.py): round trips, channel and
sample adjustment, corrupt files, and TensorFlow as the oracle on the same bytes."""

import struct

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

AUDIO = np.array([[0.0, 0.5], [-0.5, 1.0], [0.25, -1.0]], np.float32)
# TensorFlow's EncodeWav of AUDIO at 8000 Hz.
TF_WAV = bytes.fromhex("524946463000000057415645666d74201000000001000200401f0000007d0000"
                       "04001000646174610c0000000000004000c0ff7f00200080")


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def _run(fetch, feed=None):
    with tf.Session() as sess:
        return sess.run(fetch, feed)


def _corrupt(offset, value: bytes) -> bytes:
    b = bytearray(TF_WAV)
    b[offset:offset + len(value)] = value
    return bytes(b)


def test_encode_matches_tensorflow_bytes(graph):
    enc = tf.audio.encode_wav(AUDIO, 8000)
    assert enc.shape.as_list() == [] and enc.op.type == "EncodeWav"
    assert _run(enc) == TF_WAV


def test_decode_round_trip(graph):
    audio, rate = tf.audio.decode_wav(TF_WAV)
    assert audio.shape.as_list() == [None, None] and rate.dtype == tf.int32
    got, r = _run((audio, rate))
    assert r == 8000 and got.dtype == np.float32
    want = AUDIO.copy()
    want[1, 1] = 32767 / 32768
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("channels,samples,static,want", [
    (1, -1, [None, 1], [[0.0], [-0.5], [0.25]]),
    (3, -1, [None, 3], [[0, .5, .5], [-.5, 32767 / 32768, 32767 / 32768], [.25, -1, -1]]),
    (-1, 5, [5, None], [[0, .5], [-.5, 32767 / 32768], [.25, -1], [0, 0], [0, 0]]),
    (-1, 2, [2, None], [[0, .5], [-.5, 32767 / 32768]]),
    (1, 4, [4, 1], [[0.0], [-0.5], [0.25], [0.0]]),
    (0, -1, [None, 0], np.zeros((3, 0))),
])
def test_desired_channels_and_samples(graph, channels, samples, static, want):
    audio, _ = tf.audio.decode_wav(TF_WAV, desired_channels=channels, desired_samples=samples)
    assert audio.shape.as_list() == static
    np.testing.assert_array_equal(_run(audio), np.asarray(want, np.float32))


def test_encode_clips_and_zeroes_nan(graph):
    enc = tf.audio.encode_wav(np.array([[2.0], [np.nan], [-3.0]], np.float32), 8000)
    audio, _ = tf.audio.decode_wav(enc)
    np.testing.assert_array_equal(_run(audio)[:, 0], [32767 / 32768, 0.0, -1.0])


def test_extra_chunks_are_skipped(graph):
    extra = TF_WAV[:36] + b"LIST" + struct.pack("<I", 4) + b"abcd" + TF_WAV[36:]
    audio, rate = tf.audio.decode_wav(extra)
    assert _run(audio).shape == (3, 2)


CORRUPT = [
    (b"garbage", "Header mismatch: Expected RIFF but found garb"),
    (b"", "Data too short"),
    (TF_WAV[:40], "Data too short"),
    (TF_WAV[:-1], "Data too short"),
    (_corrupt(34, b"\x08"), "Can only read 16-bit WAV files, but received 8"),
    (_corrupt(20, b"\x03"), "Bad audio format for WAV: Expected 1 \\(PCM\\)"),
    (_corrupt(22, b"\x00"), "Bad number of channels for WAV"),
    (_corrupt(8, b"WAVX"), "Header mismatch: Expected WAVE but found WAVX"),
    (_corrupt(16, b"\x14"), "Bad format chunk size for WAV: Expected 16 or 18"),
    (TF_WAV[:36], "No data chunk found in WAV"),
]


@pytest.mark.parametrize("data,message", CORRUPT)
def test_corrupt_files(graph, data, message):
    contents = tf.placeholder(tf.string, [])
    audio, _ = tf.audio.decode_wav(contents)
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        _run(audio, {contents: data})


def test_bad_arguments(graph):
    with pytest.raises(ValueError, match="rank 0"):
        tf.audio.decode_wav([TF_WAV])
    with pytest.raises(ValueError, match="rank 2"):
        tf.audio.encode_wav(np.zeros(3, np.float32), 8000)
    with pytest.raises(tf.errors.InvalidArgumentError, match="sample_rate must be in"):
        _run(tf.audio.encode_wav(AUDIO, -1))
    with pytest.raises(tf.errors.InvalidArgumentError):
        _run(tf.audio.encode_wav(np.zeros((3, 0), np.float32), 8000))


@pytest.mark.oracle
def test_decode_matches_tensorflow(graph):
    files = [TF_WAV, TF_WAV[:36] + b"LIST" + struct.pack("<I", 4) + b"abcd" + TF_WAV[36:]]
    files += [c[0] for c in CORRUPT]
    code = f"""
p = tf.placeholder(tf.string, [])
outs = [tf.audio.decode_wav(p, desired_channels=c, desired_samples=n)
        for c, n in ((-1, -1), (1, 4), (3, 2))]
result = []
with tf.Session() as s:
    for f in {files!r}:
        try:
            result.append([[a.tolist(), int(r)] for a, r in s.run(outs, {{p: f}})])
        except tf.errors.OpError as e:
            result.append(type(e).__name__)
"""
    want = run_tf(code)
    p = tf.placeholder(tf.string, [])
    outs = [tf.audio.decode_wav(p, desired_channels=c, desired_samples=n)
            for c, n in ((-1, -1), (1, 4), (3, 2))]
    with tf.Session() as sess:
        for f, w in zip(files, want, strict=True):
            try:
                got = [[a.tolist(), int(r)] for a, r in sess.run(outs, {p: f})]
            except tf.errors.OpError as e:
                got = type(e).__name__
            assert got == w, f
