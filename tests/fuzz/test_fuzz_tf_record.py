"""Fuzzing TFRecord framing: mutated and truncated record files.

Each case writes a file of records (uncompressed or ZLIB/GZIP), mutates its bytes (for a
compressed file, either the compressed bytes or the framing under the compression), or sets
one record's length to a huge value with a matching length CRC, then reads it with
`tf.python_io.tf_record_iterator`. Reading yields a prefix of the records written and then
either ends or raises DataLossError; nothing else comes out, and memory stays bounded.
"""

from __future__ import annotations

import gzip
import os
import random
import struct
import tempfile
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensorflux as tf
from tensorflux.lib.io import tf_record
from tests.fuzz.fuzz_util import GiB, bounded_memory, byte_mutations, fuzz_settings, mutate_bytes

_HUGE = [2**31, 2**32 + 5, 2**40, 2**62, 2**64 - 1]


def _records(seed: int) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(rng.choice([1, 3, 20, 300])) for _ in range(rng.randint(1, 6))]


def _frames(records: list[bytes]) -> bytes:
    return b"".join(tf_record.frame_record(r) for r in records)


def _huge_length(data: bytes, records: list[bytes], which: int, length: int) -> bytes:
    """`data` with record `which`'s length set to `length`, its length CRC made to match."""
    offset = sum(16 + len(r) for r in records[:which % len(records)])
    header = struct.pack("<Q", length)
    return data[:offset] + header + struct.pack("<I", tf_record.masked_crc32c(header)) + \
        data[offset + 12:]


@st.composite
def cases(draw):
    records = _records(draw(st.integers(0, 2**32 - 1)))
    compression = draw(st.sampled_from(["", "", "ZLIB", "GZIP"]))
    data = _frames(records)
    how = draw(st.sampled_from(["bytes", "bytes", "huge"]))
    if how == "huge":
        data = _huge_length(data, records, draw(st.integers(0, 5)), draw(st.sampled_from(_HUGE)))
    mutations = draw(byte_mutations()) if how == "bytes" else []
    under = draw(st.booleans())  # mutate the framing under the compression
    if compression and under:
        data = mutate_bytes(data, mutations)
    if compression == "ZLIB":
        data = zlib.compress(data)
    elif compression == "GZIP":
        data = gzip.compress(data, mtime=0)
    if not (compression and under):
        data = mutate_bytes(data, mutations)
    return records, compression, data


def _check(case) -> None:
    records, compression, data = case
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "f.tfrecord")
        with open(path, "wb") as f:
            f.write(data)
        got = []
        try:
            for r in tf.python_io.tf_record_iterator(path, compression or None):
                got.append(r)
        except tf.errors.DataLossError:
            pass
    assert got == records[:len(got)], "a record came back that was not written"


def test_unmutated_files_read_back():
    for seed in range(5):
        records = _records(seed)
        data = _frames(records)
        for compression, packed in [("", data), ("ZLIB", zlib.compress(data)),
                                    ("GZIP", gzip.compress(data))]:
            with tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "f")
                with open(path, "wb") as f:
                    f.write(packed)
                assert list(tf.python_io.tf_record_iterator(path, compression or None)) == \
                    records


def _fuzz(n):
    @fuzz_settings(n)
    @given(cases())
    def run(case):
        _check(case)

    with bounded_memory(GiB):
        run()


@pytest.mark.timeout(90)
def test_fuzz_tf_record():
    _fuzz(200)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_fuzz_tf_record_long():
    _fuzz(8000)
