"""String splitting and n-grams: UnicodeDecodeWithOffsets, StringNGrams, and the
tf.strings wrappers bytes_split, unicode_split, unicode_split_with_offsets,
unicode_decode_with_offsets and ngrams.

In TensorFlow these return RaggedTensors for inputs of rank >= 1 (ngrams: for ragged
inputs). The functions here are the dense forms: the splitting functions take a scalar
string (whose result is a plain vector in TensorFlow too) and raise ValueError
otherwise; `ngrams` takes dense data of any rank >= 1. `tf.strings.*` points at
tensorflux/ragged/ragged_string_ops.py, which uses these for scalars and builds
RaggedTensors for everything else (ops cannot import the ragged library).

- UnicodeDecodeWithOffsets: per string, its code points and the byte offset where each
  starts; invalid input is replaced ("replace", one replacement per maximal invalid
  subsequence), dropped ("ignore") or an InvalidArgumentError ("strict").
- StringNGrams: per row of `data` (split by `data_splits`), for each width w the joins of
  w consecutive tokens with `separator`, after padding the row on each side with
  min(pad_width, w - 1) pads (pad_width < 0: w - 1). A row shorter than every window gives
  nothing, or, with `preserve_short_sequences`, one join of the whole padded row.

Kernels: tensorflux/kernels/cpu/string_split_ops.py.
"""

from __future__ import annotations

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, joining_ops, math_ops, sequence_ops, string_ops

__all__ = ["bytes_split", "unicode_split", "unicode_split_with_offsets",
           "unicode_decode_with_offsets", "ngrams"]

TensorShape = tensor_shape.TensorShape

define_op("UnicodeDecodeWithOffsets", inputs=["input: string"],
          outputs=["row_splits: Tsplits", "char_values: int32",
                   "char_to_byte_starts: int64"],
          attrs=["input_encoding: string",
                 "errors: {'strict', 'replace', 'ignore'} = 'replace'",
                 "replacement_char: int = 65533", "replace_control_characters: bool = false",
                 "Tsplits: {int32, int64} = DT_INT64"],
          shape_fn=lambda op: [TensorShape([None])] * 3)
define_op("StringNGrams", inputs=["data: string", "data_splits: Tsplits"],
          outputs=["ngrams: string", "ngrams_splits: Tsplits"],
          attrs=["separator: string", "ngram_widths: list(int) >= 0", "left_pad: string",
                 "right_pad: string", "pad_width: int", "preserve_short_sequences: bool",
                 "Tsplits: {int32, int64} = DT_INT64"],
          shape_fn=lambda op: [TensorShape([None]), op.inputs[1].shape])
not_differentiable("UnicodeDecodeWithOffsets")
not_differentiable("StringNGrams")


def _scalar(input, what):  # noqa: A002
    x = convert_to_tensor(input, dtype=dtypes.string, name="input")
    if x.shape.ndims != 0:
        raise ValueError(f"this {what} takes a scalar string: a non-scalar input gives a "
                         f"RaggedTensor, from tf.strings.{what} "
                         "(tensorflux/ragged/ragged_string_ops.py)")
    return x


def unicode_decode_with_offsets(input, input_encoding, errors="replace",  # noqa: A002
                                replacement_char=65533, replace_control_characters=False,
                                name=None):
    """The code points of a scalar string and the byte offset where each starts
    (`tf.strings.unicode_decode_with_offsets`).

    Returns:
      (codepoints int32 [chars], offsets int64 [chars]).

    Raises:
      ValueError: a non-scalar input (tf.strings.* returns RaggedTensors for it).
    """
    with graph_lib.name_scope(name, "UnicodeDecodeWithOffsets", [input]):
        x = _scalar(input, "unicode_decode_with_offsets")
        _, values, offsets = apply_op(
            "UnicodeDecodeWithOffsets", input=x, input_encoding=input_encoding,
            errors=errors, replacement_char=replacement_char,
            replace_control_characters=replace_control_characters)
        return values, offsets


def unicode_split_with_offsets(input, input_encoding, errors="replace",  # noqa: A002
                               replacement_char=65533, name=None):
    """The characters of a scalar string, each encoded in `input_encoding`, and the byte
    offset where each starts (`tf.strings.unicode_split_with_offsets`)."""
    with graph_lib.name_scope(name, "UnicodeSplitWithOffsets", [input]):
        codepoints, offsets = unicode_decode_with_offsets(
            input, input_encoding, errors, replacement_char)
        chars = string_ops.unicode_encode(array_ops.expand_dims(codepoints, -1),
                                          input_encoding, errors, replacement_char)
        return chars, offsets


def unicode_split(input, input_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                  name=None):
    """The characters of a scalar string, each encoded in `input_encoding`
    (`tf.strings.unicode_split`)."""
    with graph_lib.name_scope(name, "UnicodeSplit", [input]):
        return unicode_split_with_offsets(input, input_encoding, errors, replacement_char)[0]


def bytes_split(input, name=None):  # noqa: A002
    """The bytes of a scalar string, each as a one-byte string (`tf.strings.bytes_split`).

    Raises:
      ValueError: a non-scalar input (tf.strings.* returns a RaggedTensor for it).
    """
    with graph_lib.name_scope(name, "StringsByteSplit", [input]):
        x = _scalar(input, "bytes_split")
        n = string_ops.string_length(x)
        pos = sequence_ops.range(0, n)
        return string_ops.substr(array_ops.fill(array_ops.expand_dims(n, 0), x), pos,
                                 array_ops.ones_like(pos))


def _pads(pad_values, padding_width, widths):
    if pad_values is None:
        if padding_width is not None:
            raise ValueError("pad_values must be provided if padding_width is set.")
        return "", "", 0
    if isinstance(pad_values, (list, tuple)):
        if len(pad_values) != 2 or not all(isinstance(p, (str, bytes)) for p in pad_values):
            raise ValueError("pad_values must be a string, tuple of strings, or None.")
        left, right = pad_values
    elif isinstance(pad_values, (str, bytes)):
        left = right = pad_values
    else:
        raise ValueError("pad_values must be a string, tuple of strings, or None.")
    if padding_width is not None and padding_width < 1:
        raise ValueError("padding_width must be greater than 0.")
    return left, right, -1 if padding_width is None else padding_width


def ngrams(data, ngram_width, separator=" ", pad_values=None, padding_width=None,
           preserve_short_sequences=False, name=None):
    """The n-grams of each sequence (the last axis) of dense string `data`
    (`tf.strings.ngrams`).

    Args:
      data: a string tensor of rank >= 1.
      ngram_width: the n-gram width, or a list of widths (their n-grams concatenated).
      separator: the string between the tokens of an n-gram.
      pad_values: None (no padding), a string for both ends, or a (left, right) pair.
      padding_width: pads per end (default: width - 1); needs `pad_values`.
      preserve_short_sequences: a sequence too short for any n-gram gives one n-gram of
        all its (padded) tokens.
      name: a name for the op.

    Returns:
      A string tensor: data's leading dims + [n-grams per sequence].

    Raises:
      ValueError: a scalar `data`, a width < 1, or inconsistent padding arguments.
    """
    widths = [ngram_width] if isinstance(ngram_width, int) else list(ngram_width)
    bad = [w for w in widths if w <= 0]
    if bad:
        raise ValueError(f"All ngram_widths must be greater than 0. Got {ngram_width}")
    left, right, pad_width = _pads(pad_values, padding_width, widths)
    with graph_lib.name_scope(name, "StringNGrams", [data]):
        x = convert_to_tensor(data, dtype=dtypes.string, name="data")
        if x.shape.ndims == 0:
            raise ValueError("Data must have rank>0")
        if x.shape.ndims is None:
            raise ValueError("ngrams needs data of known rank")
        shape = array_ops.shape(x, out_type=dtypes.int64)
        values = array_ops.reshape(x, [-1])
        total = array_ops.size(values, out_type=dtypes.int64)
        row = shape[-1]
        rows = math_ops.floordiv(total, math_ops.maximum(row, 1))
        splits = sequence_ops.range(0, rows + 1, dtype=dtypes.int64) * row
        grams, _ = apply_op("StringNGrams", data=values, data_splits=splits,
                            separator=separator, ngram_widths=widths, left_pad=left,
                            right_pad=right, pad_width=pad_width,
                            preserve_short_sequences=preserve_short_sequences)
        out = array_ops.reshape(grams, joining_ops.concat([shape[:-1], [-1]], 0))
        out.set_shape(x.shape[:-1].concatenate([None]))
        return out
