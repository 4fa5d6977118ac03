"""CPU kernels of the string ops (tensorflux/ops/string_ops.py).

Strings are object arrays of `bytes`. Per-element work is plain Python (strings have no
vectorized NumPy form); errors are TensorFlow's InvalidArgumentErrors. The loops over
elements check their step every `interrupt.EACH_EVERY` elements (`interrupt.each`), so a
huge input does not hold a step past its deadline or its session's close.
"""

from __future__ import annotations

import base64
import binascii
import re

import numpy as np

from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu.array_ops import _invalid, _shape_str
from tensorflux.kernels.registry import kernel, kernel_factory
from tensorflux.lib import hashing


def _map(fn, *arrays, ctx=None, otype=object) -> np.ndarray:
    """fn over the broadcast elements of `arrays` (as Python objects: `tolist`'s), as an
    array of `otype`, checking step `ctx` between blocks of a few thousand elements (the
    elements are made Python objects a block at a time: 16M floats at once took a second
    before the first check)."""
    arrays = np.broadcast_arrays(*[np.asarray(a) for a in arrays])
    out = np.empty(arrays[0].shape, dtype=otype)
    flat = out.reshape(-1)
    flats = [a.reshape(-1) for a in arrays]
    every = interrupt.EACH_EVERY
    for lo in range(0, flat.size, every):
        if lo:
            interrupt.check(ctx)
        for i, vals in enumerate(zip(*[f[lo:lo + every].tolist() for f in flats],
                                     strict=True), lo):
            flat[i] = fn(*vals)
    return out


def _bytes(v) -> bytes:
    return v if isinstance(v, bytes) else (v.encode() if isinstance(v, str) else bytes(v))


# ---- StringJoin ---------------------------------------------------------------------------


@kernel_factory("StringJoin")
def _string_join(node):
    sep = _bytes(node.attrs["separator"])

    def compute(ctx, *inputs):
        shape = None
        for x in inputs:
            if x.ndim:
                if shape is not None and x.shape != shape:
                    raise _invalid(f"Input shapes do not match: {_shape_str(shape)} vs. "
                                   f"{_shape_str(x.shape)}")
                shape = x.shape
        if not inputs:
            return np.array(b"", dtype=object)
        return _map(lambda *parts: sep.join(_bytes(p) for p in parts), *inputs, ctx=ctx)

    return compute


# ---- StringSplit, StringSplitV2 -----------------------------------------------------------


def _sparse(tokens: list[list[bytes]]):
    indices = [(i, j) for i, row in enumerate(tokens) for j in range(len(row))]
    values = np.empty(len(indices), dtype=object)
    values[:] = [t for row in tokens for t in row]
    width = max((len(row) for row in tokens), default=0)
    return (np.array(indices, np.int64).reshape(-1, 2), values,
            np.array([len(tokens), width], np.int64))


def _check_vector(x, delimiter):
    if x.ndim != 1:
        raise _invalid(f"input must be a vector, got shape: {_shape_str(x.shape)}")
    if np.ndim(delimiter) != 0:
        raise _invalid(f"delimiter must be a scalar, got shape: "
                       f"{_shape_str(np.shape(delimiter))}")


@kernel_factory("StringSplit")
def _string_split(node):
    skip_empty = node.attrs["skip_empty"]

    def compute(ctx, x, delimiter):
        _check_vector(x, delimiter)
        delim = _bytes(delimiter.item() if isinstance(delimiter, np.ndarray) else delimiter)
        rows = []
        for s in interrupt.each(ctx, x):
            s = _bytes(s)
            if not delim:
                rows.append([s[i:i + 1] for i in range(len(s))])
                continue
            parts = re.split(b"[" + re.escape(delim) + b"]", s)
            rows.append([p for p in parts if p or not skip_empty])
        return _sparse(rows)

    return compute


@kernel_factory("StringSplitV2")
def _string_split_v2(node):
    maxsplit = node.attrs["maxsplit"]

    def compute(ctx, x, sep):
        _check_vector(x, sep)
        sep = _bytes(sep.item() if isinstance(sep, np.ndarray) else sep)
        rows = []
        for s in interrupt.each(ctx, x):
            s = _bytes(s)
            if not sep:
                rows.append(s.split(None, maxsplit))
            else:
                rows.append(s.split(sep, maxsplit))
        return _sparse(rows)

    return compute


# ---- Substr, StringLength, case, strip ------------------------------------------------------


@kernel_factory("Substr")
def _substr(node):
    utf8 = node.attrs["unit"] == "UTF8_CHAR"

    def compute(ctx, x, pos, length):
        x_b, pos_b, len_b = np.broadcast_arrays(np.asarray(x, object), pos, length)
        out = np.empty(x_b.shape, dtype=object)
        flat = out.reshape(-1)
        for i, (s, p, n) in enumerate(interrupt.each(ctx, zip(
                x_b.reshape(-1), pos_b.reshape(-1), len_b.reshape(-1), strict=True),
                count=flat.size)):
            s = _bytes(s)
            text = s.decode("utf-8", "replace") if utf8 else s
            size = len(text)
            p = int(p)
            if not -size <= p <= size:
                raise _invalid(f"pos {p} out of range for string b'{s.decode('latin-1')}' "
                               f"at index {i}")
            if p < 0:
                p += size
            part = text[p:p + max(int(n), 0)]
            flat[i] = part.encode("utf-8") if utf8 else part
        return out

    return compute


def _utf8_chars(s: bytes) -> int:
    return sum(1 for b in s if b & 0xC0 != 0x80)


@kernel_factory("StringLength")
def _string_length(node):
    count = _utf8_chars if node.attrs["unit"] == "UTF8_CHAR" else len

    def compute(ctx, x):
        return _map(lambda s: count(_bytes(s)), x, ctx=ctx, otype=np.int32)

    return compute


def _case(node, method: str):
    unicode = node.attrs["encoding"].lower().replace("-", "") == "utf8"

    def convert(s):
        s = _bytes(s)
        if unicode:
            return getattr(s.decode("utf-8", "replace"), method)().encode("utf-8")
        return getattr(s, method)()  # bytes methods change ASCII letters only

    return lambda ctx, x: _map(convert, x, ctx=ctx)


@kernel_factory("StringLower")
def _lower(node):
    return _case(node, "lower")


@kernel_factory("StringUpper")
def _upper(node):
    return _case(node, "upper")


@kernel("StringStrip")
def _strip(ctx, x):
    return _map(lambda s: _bytes(s).strip(), x, ctx=ctx)


# ---- regular expressions --------------------------------------------------------------------


def _compile(pattern: bytes):
    try:
        return re.compile(pattern)
    except re.error as e:
        raise _invalid(f"Invalid pattern: {pattern.decode('latin-1')}, error: {e}") from None


def _rewriter(rewrite: bytes):
    """RE2's rewrite string (\\0-\\9 groups, \\\\ a backslash) as a re.sub function."""
    parts: list = []
    i = 0
    while i < len(rewrite):
        c = rewrite[i:i + 1]
        if c == b"\\" and i + 1 < len(rewrite):
            nxt = rewrite[i + 1:i + 2]
            if nxt.isdigit():
                parts.append(int(nxt))
            elif nxt == b"\\":
                parts.append(b"\\")
            else:
                raise _invalid(f"Invalid rewrite pattern: {rewrite.decode('latin-1')}")
            i += 2
            continue
        parts.append(c)
        i += 1
    return lambda m: b"".join(p if isinstance(p, bytes) else (m.group(p) or b"")
                              for p in parts)


def _regex_replace(ctx, x, pattern, rewrite, replace_global):
    regex = _compile(_bytes(pattern))
    fn = _rewriter(_bytes(rewrite))
    count = 0 if replace_global else 1
    return _map(lambda s: regex.sub(fn, _bytes(s), count=count), x, ctx=ctx)


@kernel_factory("RegexReplace")
def _regex_replace_kernel(node):
    replace_global = node.attrs["replace_global"]
    return lambda ctx, x, pattern, rewrite: _regex_replace(
        ctx, x, np.asarray(pattern).item(), np.asarray(rewrite).item(), replace_global)


@kernel_factory("StaticRegexReplace")
def _static_regex_replace(node):
    a = node.attrs
    return lambda ctx, x: _regex_replace(ctx, x, a["pattern"], a["rewrite"],
                                         a["replace_global"])


@kernel("RegexFullMatch")
def _regex_full_match(ctx, x, pattern):
    regex = _compile(_bytes(np.asarray(pattern).item()))
    return _map(lambda s: regex.fullmatch(_bytes(s)) is not None, x, ctx=ctx,
                otype=np.bool_)


# ---- numbers and hashes --------------------------------------------------------------------


def _to_float(s: bytes) -> float:
    text = s.decode("latin-1").strip()
    if "_" in text:
        raise ValueError(text)
    try:
        return float(text)
    except ValueError:
        if not text.lstrip("+-").lower().startswith("0x"):  # strtod reads hex floats too
            raise
        return float.fromhex(text)


def _to_int(s: bytes) -> int:
    text = s.decode("latin-1").strip()
    if "_" in text:
        raise ValueError(text)
    return int(text, 10)


@kernel_factory("StringToNumber")
def _string_to_number(node):
    dtype = node.attrs["out_type"].as_numpy_dtype
    parse = _to_float if np.issubdtype(dtype, np.floating) else _to_int

    def compute(ctx, x):
        out = np.empty(x.shape, dtype)
        flat = out.reshape(-1)
        for i, s in enumerate(interrupt.each(ctx, np.asarray(x, object).reshape(-1))):
            try:
                v = parse(_bytes(s))
                if not np.issubdtype(dtype, np.floating):
                    info = np.iinfo(dtype)
                    if not info.min <= v <= info.max:
                        raise ValueError(v)
                flat[i] = v
            except ValueError:
                raise _invalid(f"StringToNumberOp could not correctly convert string: "
                               f"{_bytes(s).decode('latin-1')}") from None
        return out

    return compute


def _bucket(hash_fn, num_buckets):
    def compute(ctx, x):
        out = np.empty(x.shape, np.int64)
        flat = out.reshape(-1)
        for i, s in enumerate(interrupt.each(ctx, np.asarray(x, object).reshape(-1))):
            flat[i] = hash_fn(_bytes(s)) % num_buckets
        return out
    return compute


@kernel_factory("StringToHashBucket")
def _hash_bucket(node):
    return _bucket(hashing.hash64, node.attrs["num_buckets"])


@kernel_factory("StringToHashBucketFast")
def _hash_bucket_fast(node):
    return _bucket(hashing.fingerprint64, node.attrs["num_buckets"])


@kernel_factory("StringToHashBucketStrong")
def _hash_bucket_strong(node):
    key = tuple(node.attrs["key"])
    return _bucket(lambda s: hashing.siphash24(key, s), node.attrs["num_buckets"])


# ---- ReduceJoin ---------------------------------------------------------------------------


@kernel_factory("ReduceJoin")
def _reduce_join(node):
    keep, sep = node.attrs["keep_dims"], _bytes(node.attrs["separator"])

    def compute(ctx, x, axes):
        n = x.ndim
        axes = np.reshape(axes, -1)
        seen = set()
        for a in axes:
            if not -n <= a < n:
                raise _invalid(f"Invalid reduction dimension {int(a)} for input with {n} "
                               "dimensions")
            if int(a) % n in seen:
                raise _invalid(f"Duplicate reduction dimension {int(a)}")
            seen.add(int(a) % n)
        reduced = sorted(seen)
        kept = [i for i in range(n) if i not in seen]
        moved = np.transpose(np.asarray(x, object), kept + reduced)
        flat = moved.reshape([x.shape[i] for i in kept] + [-1])
        out = np.empty(flat.shape[:-1], dtype=object)
        for idx in interrupt.each(ctx, np.ndindex(*out.shape), max(
                1, interrupt.EACH_EVERY // max(1, flat.shape[-1]))):
            out[idx] = sep.join(_bytes(s) for s in flat[idx])
        if keep:
            out = out.reshape([1 if i in seen else x.shape[i] for i in range(n)])
        return out

    return compute


# ---- AsString, base64 -----------------------------------------------------------------------


@kernel_factory("AsString")
def _as_string(node):
    a = node.attrs
    dtype = a["T"]
    fill, width, precision = a["fill"], a["width"], a["precision"]
    spec = "%" + fill + (str(width) if width > -1 else "")
    if dtype.is_floating or dtype.is_complex:
        spec += (f".{precision}" if precision > -1 else "") + \
            ("e" if a["scientific"] else "g" if a["shortest"] else "f")
    elif dtype.is_integer:
        if precision > -1 or a["scientific"] or a["shortest"]:
            raise _invalid("precision, scientific and shortest are not supported for "
                           "integer types")
        spec += "d"
    else:
        spec += "s"

    def fmt(v):
        if dtype.is_complex:
            return (f"({spec % v.real},{spec % v.imag})").encode()
        if dtype.is_bool:
            return (spec % ("true" if v else "false")).encode()
        if dtype.name == "string":
            return (spec % _bytes(v).decode("latin-1")).encode("latin-1")
        return (spec % (float(v) if dtype.is_floating else int(v))).encode()

    return lambda ctx, x: _map(fmt, x, ctx=ctx)


@kernel_factory("EncodeBase64")
def _encode_base64(node):
    pad = node.attrs["pad"]

    def encode(s):
        out = base64.urlsafe_b64encode(_bytes(s))
        return out if pad else out.rstrip(b"=")

    return lambda ctx, x: _map(encode, x, ctx=ctx)


def _decode64(s: bytes) -> bytes:
    s = s.rstrip(b"=") if len(s) % 4 == 0 else s
    if len(s) % 4 == 1:
        raise _invalid("Invalid base64 length")
    try:
        return base64.b64decode(s.translate(bytes.maketrans(b"-_", b"+/")) +
                                b"=" * (-len(s) % 4), validate=True)
    except binascii.Error:
        raise _invalid("Invalid character found in base64.") from None


@kernel("DecodeBase64")
def _decode_base64(ctx, x):
    return _map(lambda s: _decode64(_bytes(s)), x, ctx=ctx)


# ---- UnicodeDecode, UnicodeEncode ---------------------------------------------------------

_CODECS = {"UTF-8": "utf-8", "UTF-16-BE": "utf-16-be", "UTF-32-BE": "utf-32-be"}


def _codec(name: str) -> str:
    key = name.upper().replace("_", "-")
    key = {"UTF8": "UTF-8", "UTF16-BE": "UTF-16-BE", "UTF32-BE": "UTF-32-BE"}.get(key, key)
    if key not in _CODECS:
        raise _invalid(f"Could not create converter for input encoding: {name}")
    return _CODECS[key]


def _is_control(cp: int) -> bool:
    return cp < 0x20 or 0x7F <= cp < 0xA0


@kernel_factory("UnicodeDecode")
def _unicode_decode(node):
    a = node.attrs
    errors_mode, repl = a["errors"], chr(a["replacement_char"])
    split_type = a["Tsplits"].as_numpy_dtype if a.get("Tsplits") else np.int64
    controls = a["replace_control_characters"]

    def compute(ctx, x):
        codec = _codec(a["input_encoding"])
        splits, values = [0], []
        for s in interrupt.each(ctx, np.asarray(x, object).reshape(-1)):
            try:
                text = _bytes(s).decode(codec, "strict" if errors_mode == "strict" else
                                        "replace" if errors_mode == "replace" else "ignore")
            except UnicodeDecodeError:
                raise _invalid("Invalid formatting on input string") from None
            if errors_mode == "replace" and repl != "\ufffd":
                text = text.replace("\ufffd", repl)
            points = [ord(c) for c in interrupt.each(ctx, text)]
            if controls:
                points = [a["replacement_char"] if _is_control(p) else p for p in points]
            values.extend(points)
            splits.append(len(values))
        return np.array(splits, split_type), np.array(values, np.int32)

    return compute


@kernel_factory("UnicodeEncode")
def _unicode_encode(node):
    a = node.attrs
    codec = _codec(a["output_encoding"])
    errors_mode, repl = a["errors"], a["replacement_char"]

    def char(cp: int) -> str:
        if 0 <= cp <= 0x10FFFF and not 0xD800 <= cp <= 0xDFFF:
            return chr(cp)
        if errors_mode == "strict":
            raise _invalid(f"Invalid code point: {cp}")
        return "" if errors_mode == "ignore" else chr(repl)

    def compute(ctx, values, splits):
        if splits.ndim != 1 or splits.size == 0 or splits[0] != 0 or \
                splits[-1] != values.size or (np.diff(splits) < 0).any():
            raise _invalid("Invalid input_splits")
        out = np.empty(splits.size - 1, dtype=object)
        for i in interrupt.each(ctx, range(splits.size - 1)):
            text = "".join(char(int(cp)) for cp in interrupt.each(
                ctx, values[splits[i]:splits[i + 1]]))
            out[i] = text.encode(codec)
        return out

    return compute


@kernel_factory("UnicodeTranscode")
def _unicode_transcode(node):
    a = node.attrs
    decode = _unicode_decode(node)
    out_codec = _codec(a["output_encoding"])

    def compute(ctx, x):
        splits, values = decode(ctx, x)
        out = np.empty(x.shape, dtype=object)
        flat = out.reshape(-1)
        for i in interrupt.each(ctx, range(len(splits) - 1)):
            text = "".join(chr(int(v)) for v in interrupt.each(
                ctx, values[splits[i]:splits[i + 1]]))
            flat[i] = text.encode(out_codec, "replace")
        return out

    return compute


@kernel_factory("UnsortedSegmentJoin")
def _unsorted_segment_join(node):
    sep = _bytes(node.attrs["separator"])

    def compute(ctx, inputs, segment_ids, num_segments):
        n = int(num_segments)
        if segment_ids.shape != inputs.shape[:segment_ids.ndim]:
            raise _invalid(f"segment_ids.shape = {_shape_str(segment_ids.shape)} does not "
                           f"prefix inputs.shape = {_shape_str(inputs.shape)}")
        inner = inputs.shape[segment_ids.ndim:]
        rows = inputs.reshape((-1,) + inner)
        parts: list[list] = [[] for _ in range(n)]
        for k, seg in enumerate(interrupt.each(ctx, segment_ids.reshape(-1))):
            if not 0 <= seg < n:
                raise _invalid("segment_ids are not allowed to exceed num_segments or to have "
                               "negative values.")
            parts[int(seg)].append(k)
        out = np.empty((n,) + inner, dtype=object)
        per_segment = int(np.prod(inner, dtype=np.int64)) * (1 + segment_ids.size // max(n, 1))
        for s in interrupt.each(ctx, range(n), max(1, interrupt.EACH_EVERY // per_segment)):
            for idx in np.ndindex(*inner):
                out[(s,) + idx] = sep.join(_bytes(rows[(k,) + idx]) for k in parts[s])
        return out

    return compute
