"""Fuzzing `tf.parse_single_example` and `tf.parse_example` with mutated Examples.

One graph with a fixed feature spec (dense float/int64/string features with and without
defaults, a var-len sparse feature) is built once; each case feeds serialized
`tf.train.Example`s mutated in their bytes or their proto fields (a feature's kind swapped,
its list lengthened, shortened or emptied, keys dropped or added), one through
parse_single_example and a batch of them through parse_example. Each run gives the parsed
values or InvalidArgumentError (what TensorFlow's kernel raises for bad input), never
another exception.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensorflux as tf
from tests.fuzz.fuzz_util import GiB, bounded_memory, byte_mutations, fuzz_settings, mutate_bytes

SPEC = {
    "x": tf.FixedLenFeature([3], tf.float32),
    "label": tf.FixedLenFeature([], tf.int64, default_value=-1),
    "name": tf.FixedLenFeature([], tf.string, default_value=""),
    "ids": tf.VarLenFeature(tf.int64),
    "m": tf.FixedLenFeature([2, 2], tf.int64, default_value=[[0, 0], [0, 0]]),
}
_RUN_OPTIONS = tf.RunOptions(timeout_in_ms=5000)


def _example(x=(1.0, 2.0, 3.0), label=7, name=b"abc", ids=(4, 5), m=(1, 2, 3, 4)):
    f = tf.train.Feature
    return tf.train.Example(features=tf.train.Features(feature={
        "x": f(float_list=tf.train.FloatList(value=x)),
        "label": f(int64_list=tf.train.Int64List(value=[label])),
        "name": f(bytes_list=tf.train.BytesList(value=[name])),
        "ids": f(int64_list=tf.train.Int64List(value=ids)),
        "m": f(int64_list=tf.train.Int64List(value=m)),
    }))


SEED = _example()
_KEYS = sorted(SPEC) + ["other", ""]
_VALUES = {
    "float_list": st.lists(st.floats(width=32), max_size=6),
    "int64_list": st.lists(st.integers(-(2**63), 2**63 - 1), max_size=6),
    "bytes_list": st.lists(st.binary(max_size=8), max_size=6),
}


@st.composite
def _mutated_example(draw) -> bytes:
    ex = tf.train.Example()
    ex.CopyFrom(SEED)
    feats = ex.features.feature
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.sampled_from(_KEYS))
        what = draw(st.sampled_from(["kind", "drop", "clear"]))
        if what == "drop":
            if key in feats:
                del feats[key]
        elif what == "clear":
            feats[key].Clear()
        else:
            kind = draw(st.sampled_from(sorted(_VALUES)))
            getattr(feats[key], kind).value[:] = draw(_VALUES[kind])
    data = ex.SerializeToString()
    if draw(st.booleans()):
        data = mutate_bytes(data, draw(byte_mutations()))
    return data


class _Graph:
    """The parse graphs, built once per test session."""

    def __init__(self):
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.one = tf.placeholder(tf.string, [])
            self.many = tf.placeholder(tf.string, [None])
            self.single = tf.parse_single_example(self.one, SPEC)
            self.batch = tf.parse_example(self.many, SPEC)
        self.sess = tf.Session(graph=self.graph)


@pytest.fixture(scope="module")
def parser():
    p = _Graph()
    yield p
    p.sess.close()


def _check(p: _Graph, batch: list[bytes]) -> None:
    for fetch, feed in ((p.single, {p.one: batch[0]}), (p.batch, {p.many: batch})):
        try:
            p.sess.run(fetch, feed, options=_RUN_OPTIONS)
        except tf.errors.InvalidArgumentError:
            pass


def test_seed_parses(parser):
    out = parser.sess.run(parser.single, {parser.one: SEED.SerializeToString()})
    assert out["label"] == 7 and out["ids"].values.tolist() == [4, 5]


def _fuzz(parser, n):
    @fuzz_settings(n)
    @given(st.lists(_mutated_example(), min_size=1, max_size=3))
    def run(batch):
        _check(parser, batch)

    with bounded_memory(GiB):
        run()


@pytest.mark.timeout(90)
def test_fuzz_parse_example(parser):
    _fuzz(parser, 100)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_fuzz_parse_example_long(parser):
    _fuzz(parser, 4000)
