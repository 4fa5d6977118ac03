"""String ops: StringJoin, StringSplit / StringSplitV2 (SparseTensor results, as TF1's
`tf.string_split` and `tf.strings.split`), Substr, StringLength, StringLower/Upper, StringStrip,
RegexReplace / StaticRegexReplace, RegexFullMatch, StringToNumber, the hash-bucket ops
(StringToHashBucket: TF's legacy Hash64; StringToHashBucketFast: FarmHash Fingerprint64;
StringToHashBucketStrong: keyed SipHash-2-4), ReduceJoin, AsString and
web-safe base64 (EncodeBase64, DecodeBase64), and `tf.strings.format` over logging_ops'
StringFormat.

Strings are bytes (object arrays of `bytes` in kernels). Kernels are in
tensorflux/kernels/cpu/string_ops.py; the hash functions in tensorflux/lib/hashing.py. None
of these ops has a gradient.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import (
    broadcast_shapes,
    checked_dims,
    constant_value,
    unchanged,
)
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.sparse_tensor import SparseTensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.framework.tensor_shape import TensorShape
from tensorflux.ops import array_ops, joining_ops, math_ops, sequence_ops

__all__ = ["string_join", "string_split", "substr", "string_length", "regex_replace",
           "string_to_number", "string_to_hash_bucket", "string_to_hash_bucket_fast",
           "string_to_hash_bucket_strong", "reduce_join", "string_strip", "as_string",
           "encode_base64", "decode_base64"]


def _strings(x, name="input"):
    return convert_to_tensor(x, dtype=dtypes.string, name=name)


# ---- StringJoin ---------------------------------------------------------------------------


def _join_shape(op):
    shape = TensorShape([])
    for t in op.inputs:
        if t.shape.ndims != 0:
            shape = shape.merge_with(t.shape) if shape.ndims != 0 else t.shape
    return [shape]


define_op("StringJoin", inputs=["inputs: N * string"], outputs=["output: string"],
          attrs=["N: int >= 0", "separator: string = ''"], shape_fn=_join_shape)
not_differentiable("StringJoin")


def string_join(inputs, separator="", name=None):
    """Joins strings elementwise, scalars broadcasting (`tf.strings.join`)."""
    return apply_op("StringJoin", inputs=[_strings(x) for x in inputs], separator=separator,
                    name=name or "StringJoin")


# ---- StringSplit, StringSplitV2 -----------------------------------------------------------


def _split_shape(op):
    checked_dims(op.inputs[0], rank=1)
    checked_dims(op.inputs[1], rank=0)
    return [[None, 2], [None], [2]]


define_op("StringSplit", inputs=["input: string", "delimiter: string"],
          outputs=["indices: int64", "values: string", "shape: int64"],
          attrs=["skip_empty: bool = true"], shape_fn=_split_shape)
define_op("StringSplitV2", inputs=["input: string", "sep: string"],
          outputs=["indices: int64", "values: string", "shape: int64"],
          attrs=["maxsplit: int = -1"], shape_fn=_split_shape)
not_differentiable("StringSplit")
not_differentiable("StringSplitV2")


def _check_result_type(result_type):
    """The SparseTensor forms only: the public tf.string_split / tf.strings.split are
    tensorflux/ragged/ragged_string_ops.py's, which also give RaggedTensors."""
    if result_type == "RaggedTensor":
        raise ValueError("this is the SparseTensor form of the split; tf.string_split and "
                         "tf.strings.split (tensorflux.ragged.ragged_string_ops) give "
                         "RaggedTensors")
    if result_type != "SparseTensor":
        raise ValueError("result_type must be 'RaggedTensor' or 'SparseTensor'.")


def string_split(source, sep=None, skip_empty=True, delimiter=None,
                 result_type="SparseTensor", name=None):
    """Splits each string of a 1-D tensor on any character of `sep` (default " "), as a
    SparseTensor [num_strings, max_tokens] (`tf.string_split`)."""
    if sep is not None and delimiter is not None:
        raise ValueError("Cannot specify both 'sep' and 'delimiter'")
    sep = delimiter if sep is None else sep
    _check_result_type(result_type)
    with graph_lib.name_scope(name, "StringSplit", [source]):
        out = apply_op("StringSplit", input=_strings(source, "source"),
                       delimiter=_strings(" " if sep is None else sep, "delimiter"),
                       skip_empty=skip_empty)
        return SparseTensor(*out)


def strings_split(input=None, sep=None, maxsplit=-1, result_type="SparseTensor",  # noqa: A002
                  source=None, name=None):
    """Splits each string on the string `sep` (runs of whitespace when None), as a
    SparseTensor (`tf.strings.split` in TF1)."""
    if input is None:
        input = source  # noqa: A001
    _check_result_type(result_type)
    with graph_lib.name_scope(name, "StringSplit", [input]):
        out = apply_op("StringSplitV2", input=_strings(input), sep=_strings(sep or ""),
                       maxsplit=maxsplit)
        return SparseTensor(*out)


# ---- Substr, StringLength, case, strip ------------------------------------------------------


def _substr_shape(op):
    shape = op.inputs[0].shape
    pos, length = op.inputs[1].shape, op.inputs[2].shape
    if pos.ndims is not None and length.ndims is not None and pos.ndims == length.ndims:
        pos.merge_with(length)
    return [broadcast_shapes(shape, pos)]


define_op("Substr", inputs=["input: string", "pos: T", "len: T"], outputs=["output: string"],
          attrs=["T: {int32, int64}", "unit: {'BYTE', 'UTF8_CHAR'} = 'BYTE'"],
          shape_fn=_substr_shape)
define_op("StringLength", inputs=["input: string"], outputs=["output: int32"],
          attrs=["unit: {'BYTE', 'UTF8_CHAR'} = 'BYTE'"], shape_fn=unchanged)
define_op("StringLower", inputs=["input: string"], outputs=["output: string"],
          attrs=["encoding: string = ''"], shape_fn=unchanged)
define_op("StringUpper", inputs=["input: string"], outputs=["output: string"],
          attrs=["encoding: string = ''"], shape_fn=unchanged)
define_op("StringStrip", inputs=["input: string"], outputs=["output: string"],
          shape_fn=unchanged)
for _op in ("Substr", "StringLength", "StringLower", "StringUpper", "StringStrip"):
    not_differentiable(_op)


def substr(input, pos, len, name=None, unit="BYTE"):  # noqa: A002
    """Substrings [pos, pos + len) of each string; negative `pos` counts from the end
    (`tf.strings.substr`)."""
    pos = convert_to_tensor(pos, name="pos")
    if pos.dtype not in (dtypes.int32, dtypes.int64):
        pos = convert_to_tensor(pos, dtype=dtypes.int32)
    return apply_op("Substr", input=_strings(input), pos=pos,
                    len=convert_to_tensor(len, dtype=pos.dtype, name="len"), unit=unit,
                    name=name or "Substr")


def string_length(input, name=None, unit="BYTE"):  # noqa: A002
    """Bytes (or UTF-8 characters) per string (`tf.strings.length`)."""
    return apply_op("StringLength", input=_strings(input), unit=unit,
                    name=name or "StringLength")


def lower(input, encoding="", name=None):  # noqa: A002
    """Lower case: ASCII letters, or all of Unicode with encoding 'utf-8'
    (`tf.strings.lower`)."""
    return apply_op("StringLower", input=_strings(input), encoding=encoding,
                    name=name or "StringLower")


def upper(input, encoding="", name=None):  # noqa: A002
    """Upper case: ASCII letters, or all of Unicode with encoding 'utf-8'
    (`tf.strings.upper`)."""
    return apply_op("StringUpper", input=_strings(input), encoding=encoding,
                    name=name or "StringUpper")


def string_strip(input, name=None):  # noqa: A002
    """Strips leading and trailing whitespace (`tf.strings.strip`)."""
    return apply_op("StringStrip", input=_strings(input), name=name or "StringStrip")


# ---- regular expressions --------------------------------------------------------------------


define_op("RegexReplace", inputs=["input: string", "pattern: string", "rewrite: string"],
          outputs=["output: string"], attrs=["replace_global: bool = true"],
          shape_fn=unchanged)
define_op("StaticRegexReplace", inputs=["input: string"], outputs=["output: string"],
          attrs=["pattern: string", "rewrite: string", "replace_global: bool = true"],
          shape_fn=unchanged)
define_op("RegexFullMatch", inputs=["input: string", "pattern: string"],
          outputs=["output: bool"], shape_fn=unchanged)
for _op in ("RegexReplace", "StaticRegexReplace", "RegexFullMatch"):
    not_differentiable(_op)


def _as_str(v) -> str:
    return v.decode() if isinstance(v, bytes) else v


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    """Replaces matches of the RE2 `pattern` with `rewrite` (\\1 back-references, \\0 the
    whole match) (`tf.strings.regex_replace`); constant patterns use StaticRegexReplace."""
    if isinstance(pattern, (str, bytes)) and isinstance(rewrite, (str, bytes)):
        return apply_op("StaticRegexReplace", input=_strings(input),
                        pattern=_as_str(pattern), rewrite=_as_str(rewrite),
                        replace_global=replace_global, name=name or "StaticRegexReplace")
    return apply_op("RegexReplace", input=_strings(input), pattern=_strings(pattern),
                    rewrite=_strings(rewrite), replace_global=replace_global,
                    name=name or "RegexReplace")


def regex_full_match(input, pattern, name=None):  # noqa: A002
    """Whether each whole string matches the RE2 `pattern` (`tf.strings.regex_full_match`)."""
    return apply_op("RegexFullMatch", input=_strings(input), pattern=_strings(pattern),
                    name=name or "RegexFullMatch")


# ---- numbers and hashes --------------------------------------------------------------------


define_op("StringToNumber", inputs=["string_tensor: string"], outputs=["output: out_type"],
          attrs=["out_type: {float, double, int32, int64, uint32, uint64} = DT_FLOAT"],
          shape_fn=unchanged)
define_op("StringToHashBucket", inputs=["string_tensor: string"], outputs=["output: int64"],
          attrs=["num_buckets: int >= 1"], shape_fn=unchanged)
define_op("StringToHashBucketFast", inputs=["input: string"], outputs=["output: int64"],
          attrs=["num_buckets: int >= 1"], shape_fn=unchanged)
define_op("StringToHashBucketStrong", inputs=["input: string"], outputs=["output: int64"],
          attrs=["num_buckets: int >= 1", "key: list(int)"], shape_fn=unchanged)
for _op in ("StringToNumber", "StringToHashBucket", "StringToHashBucketFast",
            "StringToHashBucketStrong"):
    not_differentiable(_op)


def _either(a, b, name_a, name_b):
    if a is not None and b is not None:
        raise ValueError(f"Cannot specify both '{name_a}' and '{name_b}'")
    return a if a is not None else b


def string_to_number(string_tensor=None, out_type=dtypes.float32, name=None, input=None):  # noqa: A002
    """Parses each string as a number of `out_type` (`tf.strings.to_number`)."""
    string_tensor = _either(string_tensor, input, "string_tensor", "input")
    return apply_op("StringToNumber", string_tensor=_strings(string_tensor),
                    out_type=dtypes.as_dtype(out_type), name=name or "StringToNumber")


def string_to_hash_bucket(string_tensor=None, num_buckets=None, name=None, input=None):  # noqa: A002
    """TF's legacy Hash64 of each string modulo `num_buckets` (`tf.strings.to_hash_bucket`)."""
    string_tensor = _either(string_tensor, input, "string_tensor", "input")
    return apply_op("StringToHashBucket", string_tensor=_strings(string_tensor),
                    num_buckets=num_buckets, name=name or "StringToHashBucket")


def string_to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002
    """FarmHash Fingerprint64 of each string modulo `num_buckets`
    (`tf.strings.to_hash_bucket_fast`)."""
    return apply_op("StringToHashBucketFast", input=_strings(input), num_buckets=num_buckets,
                    name=name or "StringToHashBucketFast")


def string_to_hash_bucket_strong(input, num_buckets, key, name=None):  # noqa: A002
    """SipHash-2-4 keyed by two uint64s, modulo `num_buckets`
    (`tf.strings.to_hash_bucket_strong`)."""
    if len(key) != 2:
        raise ValueError(f"Key must have 2 elements, got {len(key)}")
    return apply_op("StringToHashBucketStrong", input=_strings(input), num_buckets=num_buckets,
                    key=[int(k) for k in key], name=name or "StringToHashBucketStrong")


# ---- StringFormat, ReduceJoin, AsString, base64 ---------------------------------------------


def string_format(template, inputs, placeholder="{}", summarize=3, name=None):
    """Fills each `placeholder` of `template` with a tensor printed as tf.print does
    (`tf.strings.format`; the StringFormat op is tf.print's, in logging_ops.py)."""
    if isinstance(inputs, (list, tuple)):
        tensors = [convert_to_tensor(t) for t in inputs]
    else:
        tensors = [convert_to_tensor(inputs)]
    if template.count(placeholder) != len(tensors):
        raise ValueError(f"{template.count(placeholder)} placeholder(s) in template does not "
                         f"match {len(tensors)} tensor(s) provided as input")
    return apply_op("StringFormat", inputs=tensors, template=template,
                    placeholder=placeholder, summarize=summarize, name=name or "StringFormat")


def _reduce_join_shape(op):
    dims = checked_dims(op.inputs[0])
    axes = constant_value(op.inputs[1])
    if dims is None or axes is None:
        return [None]
    axes = np.reshape(axes, -1)
    if axes.size == 0 and op.inputs[1].shape.ndims == 1:
        return [dims]
    n = len(dims)
    for a in axes:
        if not -n <= a < n:
            raise ValueError(f"Invalid reduction dimension {a} for input with {n} "
                             "dimensions.")
    axes = {int(a) % n for a in axes}
    keep = op.attrs["keep_dims"]
    return [[1 if i in axes else d for i, d in enumerate(dims)] if keep else
            [d for i, d in enumerate(dims) if i not in axes]]


define_op("ReduceJoin", inputs=["inputs: string", "reduction_indices: int32"],
          outputs=["output: string"],
          attrs=["keep_dims: bool = false", "separator: string = ''"],
          shape_fn=_reduce_join_shape)
not_differentiable("ReduceJoin")


def reduce_join(inputs, axis=None, keep_dims=None, separator="", name=None,
                reduction_indices=None, keepdims=None):
    """Joins strings along `axis` (all axes when None) (`tf.strings.reduce_join`)."""
    axis = _either(axis, reduction_indices, "axis", "reduction_indices")
    keep = bool(_either(keepdims, keep_dims, "keepdims", "keep_dims"))
    inputs = _strings(inputs, "inputs")
    with graph_lib.name_scope(name, "ReduceJoin", [inputs]) as scope:
        if axis is None:
            rank = inputs.shape.ndims
            if rank is None:  # all axes of an unknown rank: one axis of the flattened input
                inputs = array_ops.reshape(inputs, [-1])
                rank = 1
            axis = list(range(rank))
        return apply_op("ReduceJoin", inputs=inputs,
                        reduction_indices=convert_to_tensor(axis, dtype=dtypes.int32),
                        keep_dims=keep, separator=separator, name=scope)


define_op("AsString", inputs=["input: T"], outputs=["output: string"],
          attrs=["T: {half, bfloat16, float, double, int8, int16, int32, int64, uint8, uint16, "
                 "uint32, uint64, complex64, complex128, bool, string}",
                 "precision: int = -1", "scientific: bool = false", "shortest: bool = false",
                 "width: int = -1", "fill: string = ''"], shape_fn=unchanged)
define_op("EncodeBase64", inputs=["input: string"], outputs=["output: string"],
          attrs=["pad: bool = false"], shape_fn=unchanged)
define_op("DecodeBase64", inputs=["input: string"], outputs=["output: string"],
          shape_fn=unchanged)
for _op in ("AsString", "EncodeBase64", "DecodeBase64"):
    not_differentiable(_op)


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="",  # noqa: A002
              name=None):
    """Formats each number as a string, printf-style (`tf.strings.as_string`)."""
    if scientific and shortest:
        raise ValueError("Cannot select both scientific and shortest notation")
    if fill and len(fill) > 1:
        raise ValueError(f"Fill string must be one or fewer characters: {fill}")
    return apply_op("AsString", input=convert_to_tensor(input), precision=precision,
                    scientific=scientific, shortest=shortest, width=width, fill=fill,
                    name=name or "AsString")


def encode_base64(input, pad=False, name=None):  # noqa: A002
    """Web-safe base64 ('-' and '_'), unpadded unless `pad` (`tf.io.encode_base64`)."""
    return apply_op("EncodeBase64", input=_strings(input), pad=pad,
                    name=name or "EncodeBase64")


def decode_base64(input, name=None):  # noqa: A002
    """Decodes web-safe base64, padded or not (`tf.io.decode_base64`)."""
    return apply_op("DecodeBase64", input=_strings(input), name=name or "DecodeBase64")


# ---- UnicodeDecode, UnicodeEncode ---------------------------------------------------------

_ENCODINGS = "{'UTF-8', 'UTF-16-BE', 'UTF-32-BE'}"
_ERRORS = "errors: {'strict', 'replace', 'ignore'} = 'replace'"

define_op("UnicodeDecode", inputs=["input: string"],
          outputs=["row_splits: Tsplits", "char_values: int32"],
          attrs=["input_encoding: string", _ERRORS, "replacement_char: int = 65533",
                 "replace_control_characters: bool = false",
                 "Tsplits: {int32, int64} = DT_INT64"],
          shape_fn=lambda op: [[None], [None]])
define_op("UnicodeEncode", inputs=["input_values: int32", "input_splits: Tsplits"],
          outputs=["output: string"],
          attrs=[_ERRORS, f"output_encoding: {_ENCODINGS}", "replacement_char: int = 65533",
                 "Tsplits: {int32, int64} = DT_INT64"],
          shape_fn=lambda op: [[None]])
not_differentiable("UnicodeDecode")
not_differentiable("UnicodeEncode")


def unicode_decode(input, input_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                   replace_control_characters=False, name=None):
    """The code points of a scalar string as an int32 vector (`tf.strings.unicode_decode`).

    Raises:
      ValueError: a non-scalar input (tf.strings.unicode_decode, in
        tensorflux/ragged/ragged_string_ops.py, gives its RaggedTensor).
    """
    with graph_lib.name_scope(name, "UnicodeDecode", [input]):
        x = _strings(input)
        if x.shape.ndims != 0:
            raise ValueError("this unicode_decode takes a scalar string: a non-scalar input "
                             "gives a RaggedTensor, from tf.strings.unicode_decode "
                             "(tensorflux/ragged/ragged_string_ops.py)")
        _, values = apply_op("UnicodeDecode", input=x, input_encoding=input_encoding,
                             errors=errors, replacement_char=replacement_char,
                             replace_control_characters=replace_control_characters)
        return values


def unicode_encode(input, output_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                   name=None):
    """Encodes the code points of the innermost dimension of a dense int32 tensor as
    strings (`tf.strings.unicode_encode`): shape [..., chars] -> [...]."""
    with graph_lib.name_scope(name, "UnicodeEncode", [input]):
        x = convert_to_tensor(input, dtype=dtypes.int32, name="input")
        if x.shape.ndims is None or x.shape.ndims == 0:
            raise ValueError("unicode_encode needs a dense input of known rank >= 1")
        shape = array_ops.shape(x, out_type=dtypes.int64)
        inner = shape[-1]
        values = array_ops.reshape(x, [-1])
        total = math_ops.cast(array_ops.size(values, out_type=dtypes.int64), dtypes.int64)
        splits = sequence_ops.range(math_ops.cast(0, dtypes.int64), total + 1,
                                    math_ops.maximum(inner, 1))
        if x.shape.ndims == 1:
            splits = joining_ops.stack([math_ops.cast(0, dtypes.int64), total])
        out = apply_op("UnicodeEncode", input_values=values, input_splits=splits,
                       errors=errors, output_encoding=output_encoding,
                       replacement_char=replacement_char)
        result = array_ops.reshape(out, shape[:-1])
        result.set_shape(x.shape[:-1])
        return result


# ---- UnicodeTranscode, UnsortedSegmentJoin ------------------------------------------------

define_op("UnicodeTranscode", inputs=["input: string"], outputs=["output: string"],
          attrs=["input_encoding: string", f"output_encoding: {_ENCODINGS}", _ERRORS,
                 "replacement_char: int = 65533", "replace_control_characters: bool = false"],
          shape_fn=unchanged)
not_differentiable("UnicodeTranscode")


def unicode_transcode(input, input_encoding, output_encoding, errors="replace",  # noqa: A002
                      replacement_char=65533, replace_control_characters=False, name=None):
    """Re-encodes each string (`tf.strings.unicode_transcode`)."""
    return apply_op("UnicodeTranscode", input=_strings(input), input_encoding=input_encoding,
                    output_encoding=output_encoding, errors=errors,
                    replacement_char=replacement_char,
                    replace_control_characters=replace_control_characters,
                    name=name or "UnicodeTranscode")


def _segment_join_shape(op):
    data = checked_dims(op.inputs[0])
    ids = checked_dims(op.inputs[1])
    n = constant_value(op.inputs[2])
    if data is None or ids is None:
        return [None]
    return [[None if n is None else int(n)] + data[len(ids):]]


define_op("UnsortedSegmentJoin",
          inputs=["inputs: string", "segment_ids: Tindices", "num_segments: Tnumsegments"],
          outputs=["output: string"],
          attrs=["separator: string = ''", "Tindices: {int32, int64}",
                 "Tnumsegments: {int32, int64} = DT_INT32"], shape_fn=_segment_join_shape)
not_differentiable("UnsortedSegmentJoin")


def unsorted_segment_join(inputs, segment_ids, num_segments, separator="", name=None):
    """Joins the strings of each segment, in order (`tf.strings.unsorted_segment_join`)."""
    return apply_op("UnsortedSegmentJoin", inputs=_strings(inputs, "inputs"),
                    segment_ids=convert_to_tensor(segment_ids, name="segment_ids"),
                    num_segments=convert_to_tensor(num_segments, name="num_segments"),
                    separator=separator, name=name or "UnsortedSegmentJoin")
