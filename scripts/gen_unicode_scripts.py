"""Regenerates tensorflux/lib/unicode_scripts.py: the ICU script code (UScriptCode) of every
Unicode code point, as runs, read from TensorFlow's UnicodeScript op (ICU's data).

    ~/.cache/tensorflux-oracle-venv/bin/python scripts/gen_unicode_scripts.py
"""

from __future__ import annotations

import base64
import zlib
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tensorflux" / "lib" / "unicode_scripts.py"

HEADER = '''"""The ICU script code (UScriptCode, as tf.strings.unicode_script returns) of
every Unicode code point, stored as runs: code points from STARTS[i] up to STARTS[i + 1]
have script CODES[i]. Generated from TensorFlow's UnicodeScript op (ICU data) by
scripts/gen_unicode_scripts.py; do not edit by hand.
"""

from __future__ import annotations

import base64
import zlib

import numpy as np

__all__ = ["script_of"]

_RUNS = (
'''

FOOTER = '''
)


def _load():
    raw = np.frombuffer(zlib.decompress(base64.b64decode("".join(_RUNS))), "<i4")
    starts = np.cumsum(raw[0::2]).astype(np.int64)  # stored as deltas
    return starts, raw[1::2].astype(np.int32)


STARTS, CODES = _load()
MAX_CODE_POINT = 0x10FFFF


def script_of(code_points) -> np.ndarray:
    """The script code of each code point (int32, same shape); -1 outside [0, 0x10FFFF]."""
    cp = np.asarray(code_points, np.int64)
    out = CODES[np.clip(np.searchsorted(STARTS, cp, side="right") - 1, 0, None)]
    return np.where((cp < 0) | (cp > MAX_CODE_POINT), -1, out).astype(np.int32)
'''


def main() -> None:
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
    cp = np.arange(0, 0x110000, dtype=np.int32)
    with tf.Session() as sess:
        scripts = sess.run(tf.strings.unicode_script(cp))
    starts = np.concatenate([[0], np.flatnonzero(np.diff(scripts)) + 1])
    deltas = np.diff(np.concatenate([[0], starts]))
    pairs = np.stack([deltas, scripts[starts]], 1).astype("<i4").tobytes()
    text = base64.b64encode(zlib.compress(pairs, 9)).decode()
    lines = "".join(f'    "{text[i:i + 88]}"\n' for i in range(0, len(text), 88))
    OUT.write_text(HEADER + lines + FOOTER)
    print(f"wrote {OUT}: {len(starts)} runs")


if __name__ == "__main__":
    main()
