"""`tf.keras.preprocessing.sequence.pad_sequences`."""

from __future__ import annotations

import numpy as np

__all__ = ["pad_sequences"]


def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre",
                  value=0.0):
    """Sequences as one [num, maxlen] array: shorter ones padded with `value` ("pre" or
    "post"), longer ones cut ("pre": keep the end; "post": keep the start).

    Raises:
      ValueError: a bad padding or truncating mode, or an item that is not a sequence."""
    if not hasattr(sequences, "__len__"):
        raise ValueError("`sequences` must be iterable.")
    lengths = []
    for x in sequences:
        if not hasattr(x, "__len__"):
            raise ValueError(f"`sequences` must be a list of iterables. Found non-iterable: {x}")
        lengths.append(len(x))
    if maxlen is None:
        maxlen = max(lengths) if lengths else 0
    sample_shape = ()
    for s in sequences:
        if len(s):
            sample_shape = np.asarray(s).shape[1:]
            break
    out = np.full((len(sequences), maxlen) + sample_shape, value, dtype=dtype)
    for i, s in enumerate(sequences):
        if not len(s):
            continue
        if truncating == "pre":
            trunc = s[-maxlen:]
        elif truncating == "post":
            trunc = s[:maxlen]
        else:
            raise ValueError(f'Truncating type "{truncating}" not understood')
        trunc = np.asarray(trunc, dtype=dtype)
        if padding == "post":
            out[i, :len(trunc)] = trunc
        elif padding == "pre":
            out[i, maxlen - len(trunc):] = trunc
        else:
            raise ValueError(f'Padding type "{padding}" not understood')
    return out
