"""tf.strings functions with ragged results (tensorflux/ragged/ragged_string_ops.py), against
values TF gives (and, with the `oracle` marker, against TensorFlow itself)."""

from __future__ import annotations

import pytest

import tensorflux as tf
from tests import oracle


def as_list(x):
    with tf.Session() as sess:
        v = sess.run(x)
    return v.to_list() if isinstance(v, tf.ragged.RaggedTensorValue) else v.tolist()


@pytest.fixture(autouse=True)
def _graph():
    with tf.Graph().as_default():
        yield


def test_vector_inputs_give_ragged():
    assert as_list(tf.strings.unicode_split(["héllo", "ab"], "UTF-8")) == [
        [b"h", b"\xc3\xa9", b"l", b"l", b"o"], [b"a", b"b"]]
    assert as_list(tf.strings.bytes_split(["abc", ""])) == [[b"a", b"b", b"c"], []]
    assert as_list(tf.strings.unicode_decode([["hé", "x"]], "UTF-8")) == [[[104, 233], [120]]]
    cps, offs = tf.strings.unicode_decode_with_offsets(["hé", ""], "UTF-8")
    assert as_list(cps) == [[104, 233], []] and as_list(offs) == [[0, 1], []]
    chars, offs = tf.strings.unicode_split_with_offsets(["aé"], "UTF-8")
    assert as_list(chars) == [[b"a", b"\xc3\xa9"]] and as_list(offs) == [[0, 1]]
    assert as_list(tf.strings.split(["a b", "c"], result_type="RaggedTensor")) == [
        [b"a", b"b"], [b"c"]]
    assert isinstance(tf.strings.split(["a b"]), tf.SparseTensor)
    assert as_list(tf.strings.ngrams(tf.ragged.constant([["a", "b", "c"], ["d"]]), 2)) == [
        [b"a b", b"b c"], []]
    # An empty row is padded like any other (TF: one n-gram of pads).
    rows = tf.ragged.constant([[], ["a"]], dtype=tf.string)
    assert as_list(tf.strings.ngrams(rows, 2, pad_values="#")) == [[b"# #"], [b"# a", b"a #"]]
    assert as_list(tf.strings.ngrams(rows, 3, pad_values="#", padding_width=1)) == [
        [], [b"# a #"]]


def test_scalar_inputs_stay_dense():
    assert as_list(tf.strings.unicode_split("hé", "UTF-8")) == [b"h", b"\xc3\xa9"]
    assert as_list(tf.strings.bytes_split("ab")) == [b"a", b"b"]
    assert as_list(tf.strings.unicode_decode("hé", "UTF-8")) == [104, 233]


def test_split_result_type_error():
    with pytest.raises(ValueError):
        tf.strings.split(["a"], result_type="Dense")


@pytest.mark.oracle
def test_against_tensorflow():
    program = """
    s = ["héllo wörld", "", "a  b"]
    with tf.Session() as sess:
        out = sess.run({
            "split": tf.strings.unicode_split(s, "UTF-8"),
            "bytes": tf.strings.bytes_split(s),
            "decode": tf.strings.unicode_decode(s, "UTF-8"),
            "offsets": tf.strings.unicode_decode_with_offsets(s, "UTF-8")[1],
            "words": tf.strings.split(s, result_type="RaggedTensor"),
            "grams": tf.strings.ngrams(tf.strings.split(s, result_type="RaggedTensor"), 2,
                                       pad_values="#"),
            "sum": tf.reduce_sum(tf.ragged.constant([[1, 2], [], [3]]), axis=1),
            "dense": tf.ragged.constant([[1, 2], [], [3]]).to_tensor(),
        })
    def norm(v):
        v = v.to_list() if hasattr(v, "to_list") else v.tolist()
        return json.loads(json.dumps(v, default=lambda b: b.decode("utf-8", "replace")))
    result = {k: norm(v) for k, v in out.items()}
    """
    ours, theirs = oracle.run_both(program, tf)
    assert ours == theirs
