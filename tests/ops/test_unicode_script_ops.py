"""tf.strings.unicode_script (tensorflux/ops/unicode_script_ops.py): known scripts, invalid
code points, shapes, and the whole code-point range against TensorFlow (ICU)."""

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

# (code point, ICU UScriptCode): Latin 25, Han 17, Cyrillic 8, Greek 14, Arabic 2,
# Hebrew 19, Devanagari 10, Hiragana 20, Common 0 (digits, space), Inherited 1.
KNOWN = [(ord("A"), 25), (0x4E00, 17), (0x0416, 8), (0x03B1, 14), (0x0628, 2),
         (0x05D0, 19), (0x0915, 10), (0x3042, 20), (ord("7"), 0), (ord(" "), 0),
         (0x0301, 1), (-1, -1), (0x110000, -1), (2**31 - 1, -1)]


def test_known_scripts_and_shape():
    with tf.Graph().as_default():
        cps = np.array([c for c, _ in KNOWN], np.int32).reshape(2, 7)
        out = tf.strings.unicode_script(cps)
        assert out.dtype == tf.int32 and out.shape.as_list() == [2, 7]
        with tf.Session() as sess:
            got = sess.run(out)
    assert got.reshape(-1).tolist() == [s for _, s in KNOWN]


@pytest.mark.oracle
def test_every_code_point_matches_tensorflow():
    sample = ("np.concatenate([np.arange(0, 0x3400), np.arange(0x3400, 0x110000, 7), "
              "[-7, 0x10FFFF, 0x110000]]).astype(np.int32)")
    want = run_tf(f"""
cp = {sample}
with tf.Session() as s:
    result = s.run(tf.strings.unicode_script(cp)).tolist()
""", timeout=180)
    with tf.Graph().as_default(), tf.Session() as sess:
        got = sess.run(tf.strings.unicode_script(eval(sample)))  # noqa: S307
    assert got.tolist() == want
