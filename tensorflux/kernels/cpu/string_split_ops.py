"""CPU kernels of UnicodeDecodeWithOffsets and StringNGrams
(tensorflux/ops/string_split_ops.py). Their Python loops over elements, characters and
n-grams check the step every few thousand items (`interrupt.each`)."""

from __future__ import annotations

import numpy as np

from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu.string_ops import _bytes, _codec, _invalid, _is_control
from tensorflux.kernels.registry import kernel_factory


def _decode_with_offsets(data: bytes, codec: str, mode: str, repl: int, ctx=None):
    """(code points, byte offsets): valid runs decode strictly; each invalid subsequence
    (as Python's decoder delimits it) becomes `repl` (replace), nothing (ignore) or an
    error (strict)."""
    points, offsets = [], []
    start = 0
    while start <= len(data):
        try:
            text, bad = data[start:].decode(codec), None
        except UnicodeDecodeError as e:
            text, bad = data[start:start + e.start].decode(codec), (e.start, e.end)
        pos = start
        for ch in interrupt.each(ctx, text):
            points.append(ord(ch))
            offsets.append(pos)
            pos += len(ch.encode(codec))
        if bad is None:
            break
        if mode == "strict":
            raise _invalid("Invalid formatting on input string")
        if mode == "replace":
            points.append(repl)
            offsets.append(start + bad[0])
        start += bad[1]
    return points, offsets


@kernel_factory("UnicodeDecodeWithOffsets")
def _unicode_decode_with_offsets(node):
    a = node.attrs
    mode, repl, controls = a["errors"], a["replacement_char"], a["replace_control_characters"]
    split_type = a["Tsplits"].as_numpy_dtype

    def compute(ctx, x):
        codec = _codec(a["input_encoding"])
        splits, values, starts = [0], [], []
        for s in interrupt.each(ctx, np.asarray(x, object).reshape(-1)):
            points, offsets = _decode_with_offsets(_bytes(s), codec, mode, repl, ctx)
            if controls:
                points = [repl if _is_control(p) else p for p in points]
            values.extend(points)
            starts.extend(offsets)
            splits.append(len(values))
        return (np.array(splits, split_type), np.array(values, np.int32),
                np.array(starts, np.int64))

    return compute


def _row_ngrams(tokens, widths, sep, left, right, pad_width, preserve, ctx=None):
    out = []
    for w in widths:
        pad = w - 1 if pad_width < 0 else min(pad_width, w - 1)
        padded = [left] * pad + tokens + [right] * pad
        out.extend(sep.join(padded[i:i + w])
                   for i in interrupt.each(ctx, range(len(padded) - w + 1)))
    if not out and preserve and tokens:
        pad = max(widths) - 1 if pad_width < 0 else min(pad_width, max(widths) - 1)
        out.append(sep.join([left] * pad + tokens + [right] * pad))
    return out


@kernel_factory("StringNGrams")
def _string_ngrams(node):
    a = node.attrs
    widths = list(a["ngram_widths"])
    sep, left, right = (_bytes(a[k]) for k in ("separator", "left_pad", "right_pad"))
    pad_width, preserve = a["pad_width"], a["preserve_short_sequences"]
    split_type = a["Tsplits"].as_numpy_dtype

    def compute(ctx, data, splits):
        tokens = [_bytes(t) for t in np.asarray(data, object).reshape(-1)]
        splits = np.asarray(splits).reshape(-1)
        if splits.size and (splits[0] != 0 or splits[-1] != len(tokens)
                            or np.any(np.diff(splits) < 0)):
            raise _invalid(f"Invalid split values: {splits.tolist()} for {len(tokens)} "
                           "tokens")
        grams, out_splits = [], [0]
        for i in interrupt.each(ctx, range(max(len(splits) - 1, 0))):
            grams.extend(_row_ngrams(tokens[splits[i]:splits[i + 1]], widths, sep, left,
                                     right, pad_width, preserve, ctx))
            out_splits.append(len(grams))
        values = np.empty(len(grams), object)
        values[:] = grams
        return values, np.array(out_splits, split_type)

    return compute
