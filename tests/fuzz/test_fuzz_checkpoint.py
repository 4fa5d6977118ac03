"""Fuzzing checkpoint reads: corrupted and truncated index and data files.

Two formats: a tensorflux checkpoint (index + safetensors data, see checkpoint/format.py)
saved here, and TensorFlow's own bundle (tests/checkpoint/data). Each case mutates the
bytes of one of the checkpoint's files (flips, insertions, deletions, truncation, ...),
opens the checkpoint and reads every tensor. Each open and each read either raises a
`tf.errors.OpError` (DataLossError for corruption) or returns exactly the value that was
saved: the CRC32Cs cover every byte, so a wrong value is never returned silently.

A second mutator edits the tensorflux index's JSON body (a field set to a huge, negative or
wrongly typed value, removed, ...) and seals it again with a matching CRC: the checksum
proves an index unchanged, not well formed. Reading such a checkpoint gives values or
OpErrors (DataLossError for a malformed index), never another exception, and never
allocates more than the files hold.
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensorflux as tf
from tensorflux import checkpoint
from tensorflux.checkpoint import format
from tests.fuzz.fuzz_util import GiB, bounded_memory, byte_mutations, fuzz_settings, mutate_bytes

TF_DATA = Path(__file__).parent.parent / "checkpoint" / "data"
ENTRIES = [
    checkpoint.Entry("w", tf.float32, np.arange(12, dtype=np.float32).reshape(3, 4) / 7),
    checkpoint.Entry("step", tf.int64, np.array(1234567, np.int64)),
    checkpoint.Entry("names", tf.string, np.array([b"a", b"", b"\xff" * 40], dtype=object)),
    checkpoint.Entry("c", tf.complex128, np.array([1 - 2j, 3j])),
    checkpoint.Entry("part", tf.float32, np.ones((2, 3), np.float32), "4 3 0,2:-"),
    checkpoint.Entry("part", tf.float32, np.full((2, 3), 2, np.float32), "4 3 2,2:-"),
]


def _files(prefix: str) -> dict[str, bytes]:
    d, base = os.path.split(prefix)
    return {n: (Path(d) / n).read_bytes() for n in sorted(os.listdir(d)) if n.startswith(base)}


def _read_all(prefix: str) -> dict:
    """name -> value or the OpError class; only OpErrors are caught."""
    out = {}
    try:
        reader = checkpoint.open_checkpoint(prefix)
    except tf.errors.OpError as e:
        return {"<open>": type(e)}
    with reader:
        for name in sorted(reader.entries()):
            try:
                out[name] = reader.get_tensor(name)
            except tf.errors.OpError as e:
                out[name] = type(e)
    return out


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return a.tolist() == b.tolist() if a.dtype == object else \
        a.tobytes() == b.tobytes()


def _make_tensorflux() -> tuple[dict[str, bytes], dict]:
    with tempfile.TemporaryDirectory() as d:
        prefix = os.path.join(d, "model")
        checkpoint.write_checkpoint(prefix, ENTRIES)
        return _files(prefix), _read_all(prefix)


def _make_tf() -> tuple[dict[str, bytes], dict]:
    files = {n: (TF_DATA / n).read_bytes() for n in ("tf_model.index",
                                                      "tf_model.data-00000-of-00001")}
    with tempfile.TemporaryDirectory() as d:
        for n, data in files.items():
            Path(d, n).write_bytes(data)
        return files, _read_all(os.path.join(d, "tf_model"))


SEEDS = {"tensorflux": _make_tensorflux(), "tf": _make_tf()}


def test_seeds_read_back():
    for files, values in SEEDS.values():
        assert len(files) == 2 and values, values
        assert not any(isinstance(v, type) for v in values.values()), values


@st.composite
def cases(draw):
    kind = draw(st.sampled_from(sorted(SEEDS)))
    files = SEEDS[kind][0]
    target = draw(st.sampled_from(sorted(files)))
    return kind, target, draw(byte_mutations())


def _check(case) -> None:
    kind, target, mutations = case
    files, want = SEEDS[kind]
    with tempfile.TemporaryDirectory() as d:
        for n, data in files.items():
            Path(d, n).write_bytes(mutate_bytes(data, mutations) if n == target else data)
        prefix = os.path.join(d, "model" if kind == "tensorflux" else "tf_model")
        got = _read_all(prefix)
    for name, value in got.items():
        if isinstance(value, type):
            continue  # a typed error
        assert name in want, f"a tensor {name!r} appeared from corrupted {target}"
        assert _same(value, want[name]), f"{name!r} read back wrong from corrupted {target}"


_ODD = st.sampled_from([None, True, -1, 0, 2**31, 2**40, 2**64, -(2**63), 1.5, "x", "0,1:-",
                        "", [], [2**40], [-1, 3], {}, {"a": 1}])


@st.composite
def resealed_cases(draw):
    """(index bytes, data file name, data bytes): the tensorflux seed with its index body
    edited at one to three places and sealed again."""
    files = SEEDS["tensorflux"][0]
    index = next(n for n in files if n.endswith(".index"))
    body = json.loads(files[index][20:-4])
    for _ in range(draw(st.integers(1, 3))):
        node = body
        while True:  # walk down to a random field
            keys = sorted(node) if isinstance(node, dict) else list(range(len(node)))
            if not keys:
                break
            key = draw(st.sampled_from(keys))
            child = node[key]
            if isinstance(child, (dict, list)) and child and draw(st.integers(0, 3)):
                node = child
                continue
            if draw(st.integers(0, 5)) == 0 and isinstance(node, dict):
                del node[key]
            else:
                node[key] = copy.deepcopy(draw(_ODD))
            break
    return format.encode_index(body), files


def _check_resealed(case) -> None:
    index_bytes, files = case
    with tempfile.TemporaryDirectory() as d:
        for n, data in files.items():
            Path(d, n).write_bytes(index_bytes if n.endswith(".index") else data)
        _read_all(os.path.join(d, "model"))  # only OpErrors are caught there


def _fuzz(n, strategy=None, check=_check):
    @fuzz_settings(n)
    @given(cases() if strategy is None else strategy)
    def run(case):
        check(case)

    with bounded_memory(GiB):
        run()


@pytest.mark.timeout(90)
def test_fuzz_checkpoint_bytes():
    _fuzz(150)


@pytest.mark.timeout(90)
def test_fuzz_checkpoint_index_resealed():
    _fuzz(150, resealed_cases(), _check_resealed)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_fuzz_checkpoint_bytes_long():
    _fuzz(5000)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_fuzz_checkpoint_index_resealed_long():
    _fuzz(5000, resealed_cases(), _check_resealed)
