"""tf.summary ops: node names, tags and the Summary protos they output, against TensorFlow
(one program run under both; PNG images compared as decoded pixels), plus the encodings
(histogram buckets, PNG, WAV) and run-time errors checked locally."""

from __future__ import annotations

import io
import logging
import wave

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import errors
from tensorflux.lib import histogram, png
from tests import oracle

# Every kind of summary with the inputs whose rules differ: uint8 and float images (no
# negative value / some negative / all zero / non-finite pixels; half and double),
# 1, 3 and 4 channels, max_outputs 1 and above the batch; 2-D and 3-D audio with samples
# out of range, at rounding halves and NaN; histograms of several types, empty, at the
# bucket edges; names with scopes, families and characters to clean.
PROGRAM = r"""
rng = np.random.RandomState(0)
imgs = {
    "u8_1": rng.randint(0, 256, (2, 5, 7, 1)).astype(np.uint8),
    "u8_3": rng.randint(0, 256, (4, 3, 4, 3)).astype(np.uint8),
    "f32_pos": rng.uniform(0, 3, (3, 6, 5, 3)).astype(np.float32),
    "f32_neg": rng.uniform(-2, 1, (2, 4, 4, 4)).astype(np.float32),
    "f64": rng.uniform(-1, 5, (2, 4, 4, 1)),
    "f16": rng.uniform(-1, 3, (2, 8, 8, 3)).astype(np.float16),
    "zero": np.zeros((1, 3, 3, 1), np.float32),
    "tiny": np.full((1, 3, 3, 1), 1e-7, np.float32),
}
bad = rng.uniform(-1, 1, (2, 4, 4, 3)).astype(np.float32)
bad[0, 1, 2, 1] = np.nan
bad[1, 0, 0, 0] = np.inf
bad[1, 3, 3, :] = -np.inf
imgs["nonfinite"] = bad
fetch = {}
for k, v in imgs.items():
    fetch["image_" + k] = tf.summary.image(k, tf.constant(v),
                                           max_outputs=1 if k == "zero" else 3)
clip = rng.uniform(-1.2, 1.2, (3, 50)).astype(np.float32)
fetch["audio2"] = tf.summary.audio("clip", tf.constant(clip), 8000.6, max_outputs=2)
a3 = rng.uniform(-1, 1, (2, 40, 2)).astype(np.float32)
a3[0, 0, 0], a3[0, 1, 0], a3[1, 2, 1] = 0.5 / 32768, -1.5 / 32768, np.nan
fetch["audio3"] = tf.summary.audio("stereo", tf.constant(a3), tf.constant(22050.0),
                                   max_outputs=1, family="sound")
fetch["hist_f32"] = tf.summary.histogram(
    "weights", tf.constant(rng.randn(1000).astype(np.float32) * 100), family="dist")
fetch["hist_f64"] = tf.summary.histogram("w64", tf.constant(rng.randn(33) * 1e-11))
fetch["hist_i32"] = tf.summary.histogram("ints",
                                         tf.constant(np.arange(-50, 70, 3, dtype=np.int32)))
fetch["hist_empty"] = tf.summary.histogram("empty", tf.zeros([0]))
fetch["hist_edges"] = tf.summary.histogram(
    "edges", tf.constant([0.0, -0.0, 1e-12, -1e-12, 1e20, -1e20, 1.1e-12], tf.float64))
with tf.name_scope("train"):
    fetch["scalar"] = tf.summary.scalar("loss/total (avg)", tf.constant(0.25))
    fetch["scalar_i"] = tf.summary.scalar("count", tf.constant(7, tf.int64), family="stats")
    fetch["scalar_again"] = tf.summary.scalar("count", tf.constant(8, tf.int64),
                                              family="stats")
fetch["text"] = tf.summary.text("notes", tf.constant(["hello", "w\u00f6rld"]))
fetch["tensor"] = tf.summary.tensor_summary(
    "t", tf.constant([[1, 2], [3, 4]], tf.int32), summary_description="desc",
    display_name="shown")
fetch["tensor_f"] = tf.summary.tensor_summary("tf", tf.constant(1.5, tf.float64))
fetch["merged_some"] = tf.summary.merge([fetch["scalar"], fetch["hist_i32"]], name="some")
fetch["merged"] = tf.summary.merge_all()
names = {k: v.name for k, v in fetch.items()}
with tf.Session() as sess:
    vals = sess.run(fetch)
result = {"names": names, "vals": vals}
"""


def _pixels(encoded: bytes) -> np.ndarray:
    image = pytest.importorskip("PIL.Image")
    return np.asarray(image.open(io.BytesIO(encoded)))


def _comparable(serialized: bytes):
    """The Summary with each PNG replaced by its decoded pixels and their shape."""
    summary = tf.Summary.FromString(serialized)
    for value in summary.value:
        if value.HasField("image"):
            px = _pixels(value.image.encoded_image_string)
            value.image.encoded_image_string = px.tobytes() + repr(px.shape).encode()
    return summary


@pytest.mark.oracle
def test_summaries_are_tensorflows():
    ours, theirs = oracle.run_both(PROGRAM, tf)
    assert ours["names"] == theirs["names"]
    assert set(ours["vals"]) == set(theirs["vals"])
    for key in sorted(theirs["vals"]):
        assert _comparable(ours["vals"][key]) == _comparable(theirs["vals"][key]), key


def test_tags_follow_scopes_and_families(caplog):
    with tf.Graph().as_default():
        x = tf.constant(1.0)
        with tf.name_scope("outer"):
            a = tf.summary.scalar("loss value!", x, family="fam")
            b = tf.summary.scalar("loss value!", x, family="fam")
        c = tf.summary.image("/lead", tf.zeros([1, 2, 2, 1]), max_outputs=1)
        assert a.op.name == "outer/fam/loss_value_" and b.op.name == "outer/fam/loss_value__1"
        assert tf.get_collection(tf.GraphKeys.SUMMARIES) == [a, b, c]
        with tf.Session() as sess:
            tags = [v.tag for s in sess.run([a, b, c]) for v in tf.Summary.FromString(s).value]
    assert tags == ["fam/outer/fam/loss_value_", "fam/outer/fam/loss_value__1", "lead/image"]
    assert "Summary name loss value! is illegal; using loss_value_ instead." in caplog.text


def test_collections_and_merge_all():
    with tf.Graph().as_default():
        a = tf.summary.scalar("a", 1.0, collections=["mine"])
        with tf.name_scope("s"):
            b = tf.summary.scalar("b", 2.0)
        tf.summary.scalar("c", 3.0)
        assert tf.summary.merge_all() is not None
        assert tf.summary.merge_all("nothing") is None
        mine = tf.summary.merge_all("mine")
        scoped = tf.summary.merge_all(scope="s")
        with tf.Session() as sess:
            got = [[v.tag for v in tf.Summary.FromString(s).value]
                   for s in sess.run([mine, scoped])]
    assert a.name == "a:0" and b.name == "s/b:0"
    assert got == [["a"], ["s/b"]]


def test_scalar_of_a_non_scalar_fails_at_run_time_naming_the_node():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32)
        s = tf.summary.scalar("loss", x)
        with tf.Session() as sess:
            assert tf.Summary.FromString(sess.run(s, {x: 2.0})).value[0].simple_value == 2.0
            with pytest.raises(errors.InvalidArgumentError,
                               match=r"tags and values are not the same shape: \[\] != \[2\] "
                                     r"\(tag 'loss'\)") as info:
                sess.run(s, {x: [1.0, 2.0]})
    assert "loss" in info.value.message.split("\n", 1)[1]  # the node, after the message


@pytest.mark.parametrize("value,message", [
    (np.nan, "Nan in summary histogram for: hist"),
    (np.inf, "Infinity in Histogram for: hist"),
])
def test_histogram_of_non_finite_values_fails(value, message):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32)
        h = tf.summary.histogram("hist", x)
        with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError, match=message):
            sess.run(h, {x: [1.0, value]})


def test_merge_rejects_a_repeated_tag_and_text_a_non_string():
    with tf.Graph().as_default():
        a = tf.summary.scalar("a", 1.0)
        dup = tf.summary.merge([a, a])
        with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError,
                                                 match="Duplicate tag a found"):
            sess.run(dup)
        with pytest.raises(ValueError, match="to have dtype string"):
            tf.summary.text("t", tf.constant(1.0))


def test_bucket_indices_are_a_binary_search_over_the_edges():
    limits = histogram.default_bucket_limits()
    with np.errstate(over="ignore"):
        near = np.concatenate([limits, np.nextafter(limits, np.inf),
                               np.nextafter(limits, -np.inf)])
    rng = np.random.default_rng(0)
    spread = rng.standard_normal(20000) * 10.0 ** rng.integers(-16, 25, 20000)
    for v in (near[np.isfinite(near)], spread, np.array([0.0, -0.0, 5e-324, -5e-324])):
        np.testing.assert_array_equal(histogram.bucket_indices(v),
                                      np.searchsorted(limits, v, side="right"))


def test_histogram_buckets():
    limits = histogram.default_bucket_limits()
    assert limits[len(limits) // 2] == 0.0 and limits[-1] == np.finfo(np.float64).max
    assert limits[len(limits) // 2 + 1] == 1e-12 and np.all(np.diff(limits) > 0)
    proto = tf.HistogramProto()
    histogram.fill_histogram_proto(proto, [1.0, 1.0, 2.0, -5.0])
    assert (proto.min, proto.max, proto.num, proto.sum, proto.sum_squares) == \
        (-5.0, 2.0, 4.0, -1.0, 31.0)
    # Filled buckets, each run of empty ones collapsed into its last edge with count 0.
    assert list(proto.bucket) == [0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0]
    i = np.searchsorted(limits, [-5.0, 1.0, 2.0], side="right")
    assert list(proto.bucket_limit) == [limits[i[0] - 1], limits[i[0]], limits[i[1] - 1],
                                        limits[i[1]], limits[i[2] - 1], limits[i[2]],
                                        limits[-1]]
    histogram.fill_histogram_proto(proto, [])
    assert list(proto.bucket_limit) == [limits[-1]] and list(proto.bucket) == [0.0]


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_png_round_trip(channels):
    px = np.random.default_rng(channels).integers(0, 256, (5, 9, channels), dtype=np.uint8)
    decoded = _pixels(png.encode_png(px))
    np.testing.assert_array_equal(decoded.reshape(px.shape), px)
    with pytest.raises(ValueError, match="uint8"):
        png.encode_png(px.astype(np.float32))


def test_audio_is_a_wav_file():
    clip = np.stack([np.linspace(-1, 1, 100), np.zeros(100)], axis=1).astype(np.float32)
    with tf.Graph().as_default():
        s = tf.summary.audio("a", tf.constant(clip[None]), 16000.0, max_outputs=1)
        with tf.Session() as sess:
            value = tf.Summary.FromString(sess.run(s)).value[0]
    assert value.tag == "a/audio" and value.audio.content_type == "audio/wav"
    assert (value.audio.num_channels, value.audio.length_frames) == (2, 100)
    with wave.open(io.BytesIO(value.audio.encoded_audio_string)) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()) == \
            (2, 2, 16000, 100)
        samples = np.frombuffer(w.readframes(100), "<i2").reshape(100, 2)
    assert samples[0, 0] == -32768 and samples[-1, 0] == 32767 and not samples[:, 1].any()


def test_clean_tag_warning_is_logged_once_per_name(caplog):
    with caplog.at_level(logging.WARNING, logger="tensorflux"), tf.Graph().as_default():
        tf.summary.histogram("ok_name", [1.0])
        tf.summary.histogram("bad name", [1.0])
    assert [r.getMessage() for r in caplog.records] == [
        "Summary name bad name is illegal; using bad_name instead."]
