"""tf.strings.bytes_split, unicode_split(_with_offsets), unicode_decode_with_offsets and
ngrams (tensorflux/ops/string_split_ops.py): the scalar (splits) and dense (ngrams) forms,
whose TensorFlow results are plain tensors, against what TensorFlow 2.21 gave, and live
under the oracle."""

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

# (expression, TensorFlow's result: a list, a pair of lists, or "ErrorClass")
CASES = [
    ("tf.strings.bytes_split('hello')", ["h", "e", "l", "l", "o"]),
    ("tf.strings.bytes_split('')", []),
    ("tf.strings.unicode_split('h\u00e9llo\u20ac', 'UTF-8')",
     ["h", "\u00e9", "l", "l", "o", "\u20ac"]),
    ("tf.strings.unicode_split(b'a\\xffb', 'UTF-8')", ["a", "\ufffd", "b"]),
    ("tf.strings.unicode_split(b'a\\xffb', 'UTF-8', errors='ignore')", ["a", "b"]),
    ("tf.strings.unicode_split_with_offsets('h\u00e9llo\u20ac', 'UTF-8')",
     [["h", "\u00e9", "l", "l", "o", "\u20ac"], [0, 1, 3, 4, 5, 6]]),
    ("tf.strings.unicode_decode_with_offsets('h\u00e9llo\u20ac', 'UTF-8')",
     [[104, 233, 108, 108, 111, 8364], [0, 1, 3, 4, 5, 6]]),
    ("tf.strings.unicode_decode_with_offsets(b'a\\xff\\xe2\\x82b', 'UTF-8')",
     [[97, 65533, 65533, 98], [0, 1, 2, 4]]),
    ("tf.strings.unicode_decode_with_offsets(b'a\\xff\\xe2\\x82b', 'UTF-8', errors='ignore')",
     [[97, 98], [0, 4]]),
    ("tf.strings.unicode_decode_with_offsets(b'a\\xffb', 'UTF-8', errors='strict')",
     "InvalidArgumentError"),
    ("tf.strings.unicode_decode_with_offsets(b'a\\x01b', 'UTF-8', "
     "replace_control_characters=True)", [[97, 65533, 98], [0, 1, 2]]),
    ("tf.strings.unicode_decode_with_offsets('a\u00e9b'.encode('utf-16-be'), 'UTF-16-BE')",
     [[97, 233, 98], [0, 2, 4]]),
    ("tf.strings.ngrams(['a', 'b', 'c', 'd'], 2)", ["a b", "b c", "c d"]),
    ("tf.strings.ngrams([['a', 'b', 'c'], ['d', 'e', 'f']], 2, separator='-')",
     [["a-b", "b-c"], ["d-e", "e-f"]]),
    ("tf.strings.ngrams([['a', 'b', 'c'], ['d', 'e', 'f']], [1, 3])",
     [["a", "b", "c", "a b c"], ["d", "e", "f", "d e f"]]),
    ("tf.strings.ngrams(['a', 'b', 'c'], 2, pad_values='#')", ["# a", "a b", "b c", "c #"]),
    ("tf.strings.ngrams(['a', 'b', 'c'], 3, pad_values=('<', '>'), padding_width=1)",
     ["< a b", "a b c", "b c >"]),
    ("tf.strings.ngrams(['a', 'b'], 3)", []),
    ("tf.strings.ngrams(['a', 'b'], 3, preserve_short_sequences=True)", ["a b"]),
    ("tf.strings.ngrams(['a', 'b'], 4, pad_values='#', padding_width=1, "
     "preserve_short_sequences=True)", ["# a b #"]),
    ("tf.strings.ngrams(tf.constant([], tf.string), 2, pad_values='#')", []),
    ("tf.strings.ngrams(['a', 'b', 'c'], 2, pad_values='#', padding_width=5)",
     ["# a", "a b", "b c", "c #"]),
    ("tf.strings.ngrams('a', 2)", "ValueError"),
    ("tf.strings.ngrams(['a', 'b', 'c'], 2, padding_width=1)", "ValueError"),
    ("tf.strings.ngrams(['a', 'b', 'c'], 2, pad_values='#', padding_width=0)", "ValueError"),
    ("tf.strings.ngrams(['a', 'b', 'c'], 0)", "ValueError"),
]

RUNNER = """
def _plain(v):
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    if isinstance(v, np.ndarray):
        return _plain(v.tolist())
    if isinstance(v, bytes):
        return v.decode("utf-8", "backslashreplace")
    return v


def run_case(code):
    with tf.Graph().as_default():
        try:
            out = eval(code)
            with tf.Session() as s:
                return _plain(s.run(out))
        except (ValueError, TypeError, tf.errors.OpError) as e:
            return type(e).__name__
"""


def _ours(code):
    scope = {"tf": tf, "np": np}
    exec(RUNNER, scope)  # noqa: S102 - the same runner the oracle runs
    return scope["run_case"](code)


@pytest.mark.parametrize("code,want", CASES, ids=[c[0][11:60] for c in CASES])
def test_matches_recorded_tensorflow(code, want):
    assert _ours(code) == want


def test_vector_inputs_give_ragged_tensors():
    # (the ragged results themselves are tested in tests/ragged/test_ragged_strings.py)
    with tf.Graph().as_default():
        assert isinstance(tf.strings.bytes_split(["ab", "c"]), tf.RaggedTensor)
        assert isinstance(tf.strings.unicode_split(["ab"], "UTF-8"), tf.RaggedTensor)


def test_static_shapes():
    with tf.Graph().as_default():
        assert tf.strings.ngrams(tf.placeholder(tf.string, [3, 5]), 2).shape.as_list() == \
            [3, None]
        assert tf.strings.bytes_split("abc").shape.as_list() == [None]


@pytest.mark.oracle
def test_matches_live_tensorflow():
    want = run_tf(RUNNER + f"""
result = [run_case(c) for c in {[c for c, _ in CASES]!r}]
""", timeout=180)
    for (code, _), w in zip(CASES, want, strict=True):
        assert _ours(code) == w, code
