"""The tf.strings functions whose result is ragged for non-scalar inputs: unicode_decode
(_with_offsets), unicode_split (_with_offsets), bytes_split, split with
result_type="RaggedTensor", and ngrams of ragged data. Scalar inputs keep the dense results
of tensorflux/ops/string_split_ops.py; inputs of rank k >= 1 give RaggedTensors of
ragged_rank k (the leading dims as uniform partitions), as in TensorFlow.
"""

from __future__ import annotations

import pprint

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    gather_ops,
    joining_ops,
    logging_ops,
    math_ops,
    reduction_ops,
    sequence_ops,
    slicing_ops,
    string_ops,
    string_split_ops,
)
from tensorflux.ragged.ragged_tensor import RaggedTensor, row_splits_to_segment_ids


def _strings(x, name="input"):
    if isinstance(x, RaggedTensor):
        return x
    return convert_to_tensor(x, dtype=dtypes.string, name=name)


def _outer(rt, x):
    """`rt` (one row per element of x, flattened) regrouped into x's leading dims (uniform
    partitions, as TF's)."""
    shape = array_ops.shape(x, out_type=dtypes.int64)
    for d in reversed(range(1, x.shape.ndims)):
        length = x.shape[d].value
        nrows = x.shape[:d].num_elements()
        rt = RaggedTensor.from_uniform_row_length(
            rt, shape[d] if length is None else length,
            nrows=reduction_ops.reduce_prod(shape[:d]) if nrows is None else nrows,
            validate=False)
    return rt


def _apply_rows(x, build):
    """`build(flat strings) -> RaggedTensor` applied to x (ragged or of rank >= 1)."""
    if isinstance(x, RaggedTensor):
        return x.with_flat_values(build(x.flat_values))
    if x.shape.ndims is None:
        raise ValueError("the input's rank must be known")
    flat = x if x.shape.ndims == 1 else array_ops.reshape(x, [-1])
    rows = build(flat)
    n = x.shape.num_elements()
    if n is not None:
        rows.row_splits.set_shape([n + 1])
    return _outer(rows, x)


def unicode_decode_with_offsets(input, input_encoding, errors="replace",  # noqa: A002
                                replacement_char=65533, replace_control_characters=False,
                                name=None):
    """Code points and byte offsets of each string (`tf.strings.unicode_decode_with_offsets`);
    ragged for non-scalar inputs."""
    with graph_lib.name_scope(name, "UnicodeDecodeWithOffsets", [input]):
        x = _strings(input)
        if not isinstance(x, RaggedTensor) and x.shape.ndims == 0:
            return string_split_ops.unicode_decode_with_offsets(
                x, input_encoding, errors, replacement_char, replace_control_characters)
        offsets = []

        def build(flat):
            splits, chars, starts = apply_op(
                "UnicodeDecodeWithOffsets", input=flat, input_encoding=input_encoding,
                errors=errors, replacement_char=replacement_char,
                replace_control_characters=replace_control_characters)
            offsets.append(starts)
            return RaggedTensor.from_row_splits(chars, splits, validate=False)

        codepoints = _apply_rows(x, build)
        return codepoints, codepoints.with_flat_values(offsets[0])


def unicode_decode(input, input_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                   replace_control_characters=False, name=None):
    """The code points of each string (`tf.strings.unicode_decode`); ragged for non-scalar
    inputs."""
    with graph_lib.name_scope(name, "UnicodeDecode", [input]):
        x = _strings(input)
        if not isinstance(x, RaggedTensor) and x.shape.ndims == 0:
            return string_ops.unicode_decode(x, input_encoding, errors, replacement_char,
                                             replace_control_characters)

        def build(flat):
            splits, chars = apply_op(
                "UnicodeDecode", input=flat, input_encoding=input_encoding, errors=errors,
                replacement_char=replacement_char,
                replace_control_characters=replace_control_characters)
            return RaggedTensor.from_row_splits(chars, splits, validate=False)

        return _apply_rows(x, build)


def _encode_chars(codepoints, encoding, errors, replacement_char):
    def encode(flat):
        return string_ops.unicode_encode(array_ops.expand_dims(flat, -1), encoding, errors,
                                         replacement_char)
    if isinstance(codepoints, RaggedTensor):
        return codepoints.with_flat_values(encode(codepoints.flat_values))
    return encode(codepoints)


def unicode_split_with_offsets(input, input_encoding, errors="replace",  # noqa: A002
                               replacement_char=65533, name=None):
    """Each string's characters and their byte offsets
    (`tf.strings.unicode_split_with_offsets`); ragged for non-scalar inputs."""
    with graph_lib.name_scope(name, "UnicodeSplitWithOffsets", [input]):
        codepoints, offsets = unicode_decode_with_offsets(input, input_encoding, errors,
                                                          replacement_char)
        return _encode_chars(codepoints, input_encoding, errors, replacement_char), offsets


def unicode_split(input, input_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                  name=None):
    """Each string's characters (`tf.strings.unicode_split`); ragged for non-scalar
    inputs."""
    with graph_lib.name_scope(name, "UnicodeSplit", [input]):
        codepoints = unicode_decode(input, input_encoding, errors, replacement_char)
        return _encode_chars(codepoints, input_encoding, errors, replacement_char)


def bytes_split(input, name=None):  # noqa: A002
    """Each string's bytes as one-byte strings (`tf.strings.bytes_split`); ragged for
    non-scalar inputs."""
    with graph_lib.name_scope(name, "StringsByteSplit", [input]):
        x = _strings(input)
        if not isinstance(x, RaggedTensor) and x.shape.ndims == 0:
            return string_split_ops.bytes_split(x)

        def build(flat):
            lengths = math_ops.cast(string_ops.string_length(flat), dtypes.int64)
            splits = joining_ops.concat([array_ops.zeros([1], dtypes.int64),
                                         sequence_ops.cumsum(lengths)], 0)
            ids = row_splits_to_segment_ids(splits)
            pos = sequence_ops.range(0, splits[-1], dtype=dtypes.int64) - \
                gather_ops.gather(splits, ids)
            pos = math_ops.cast(pos, dtypes.int32)
            chars = string_ops.substr(gather_ops.gather(flat, ids), pos,
                                      array_ops.ones_like(pos))
            return RaggedTensor.from_row_splits(chars, splits, validate=False)

        return _apply_rows(x, build)



def _check_result_type(result_type):
    if result_type not in ("SparseTensor", "RaggedTensor"):
        raise ValueError("result_type must be 'RaggedTensor' or 'SparseTensor'.")


def _rows_of_sparse(sparse):
    """The rows of a 2-D [strings, tokens] SparseTensor as a RaggedTensor."""
    return RaggedTensor.from_value_rowids(sparse.values, sparse.indices[:, 0],
                                          nrows=sparse.dense_shape[0], validate=False)


def split(input=None, sep=None, maxsplit=-1, result_type="SparseTensor",  # noqa: A002
          source=None, name=None):
    """Splits each string on `sep` (runs of whitespace when None), at most `maxsplit` times
    (`tf.strings.split`, TF1 form). A scalar is read as a vector of one string; a tensor of
    rank k gives a RaggedTensor of ragged_rank k (a ragged input: one more), or with the
    default result_type its SparseTensor of rank k + 1.

    Raises:
      ValueError: result_type is neither 'SparseTensor' nor 'RaggedTensor'.
    """
    _check_result_type(result_type)
    if input is None:
        input = source  # noqa: A001
    with graph_lib.name_scope(name, "StringSplit", [input]):
        x = _strings(input)
        if not isinstance(x, RaggedTensor) and x.shape.ndims == 0:
            x = array_ops.expand_dims(x, 0)

        def build(flat):
            return _rows_of_sparse(string_ops.strings_split(flat, sep, maxsplit))

        if result_type == "SparseTensor":
            if not isinstance(x, RaggedTensor) and x.shape.ndims == 1:
                return string_ops.strings_split(x, sep, maxsplit)
            return _apply_rows(x, build).to_sparse()
        return _apply_rows(x, build)


def string_split(source, sep=None, skip_empty=True, delimiter=None,
                 result_type="SparseTensor", name=None):
    """Splits each string of a vector on any character of `sep` (default " ")
    (`tf.string_split`): a SparseTensor [strings, tokens], or with
    result_type="RaggedTensor" a RaggedTensor with a row per string.

    Raises:
      ValueError: both sep and delimiter, a result_type of another kind, or an input that
        is not a vector.
    """
    _check_result_type(result_type)
    with graph_lib.name_scope(name, "StringSplit", [source]):
        source = _strings(source, "source")
        sparse = string_ops.string_split(source, sep, skip_empty, delimiter)
        if result_type == "SparseTensor":
            return sparse
        rows = _rows_of_sparse(sparse)
        if source.shape.num_elements() is not None:
            rows.row_splits.set_shape([source.shape.num_elements() + 1])
        return rows


def ngrams(data, ngram_width, separator=" ", pad_values=None, padding_width=None,
           preserve_short_sequences=False, name=None):
    """`tf.strings.ngrams`: the n-grams of each row of ragged `data` (a RaggedTensor result),
    or of each sequence along the last axis of dense `data`."""
    if not isinstance(data, RaggedTensor):
        return string_split_ops.ngrams(data, ngram_width, separator, pad_values,
                                       padding_width, preserve_short_sequences, name)
    widths = [ngram_width] if isinstance(ngram_width, int) else list(ngram_width)
    if any(w <= 0 for w in widths):
        raise ValueError(f"All ngram_widths must be greater than 0. Got {ngram_width}")
    left, right, pad_width = string_split_ops._pads(pad_values, padding_width, widths)
    with graph_lib.name_scope(name, "StringNGrams", [data]):
        def grams(rt):
            if isinstance(rt.values, RaggedTensor):
                return rt.with_values(grams(rt.values))
            out, splits = apply_op(
                "StringNGrams", data=rt.values, data_splits=rt.row_splits,
                separator=separator, ngram_widths=widths, left_pad=left, right_pad=right,
                pad_width=pad_width, preserve_short_sequences=preserve_short_sequences)
            return RaggedTensor.from_row_splits(out, splits, validate=False)
        return grams(data)


# ---- ragged tensors as text (tf.strings.format, tf.print) -----------------------------------


def _summarized_rows(items, splits, summarize):
    """Each row of the 1-D strings `items` (cut by `splits`) as "[a, b, ..., y, z]": at
    most `summarize` items at each end (-1: all)."""
    dtype = splits.dtype
    rowids = row_splits_to_segment_ids(splits)
    nrows = array_ops.size(splits, out_type=dtype) - 1
    if summarize is not None and summarize >= 0:
        n = array_ops.size(items, out_type=dtype)
        pos = sequence_ops.range(0, n, dtype=dtype) - gather_ops.gather(splits, rowids)
        lengths = gather_ops.gather(splits[1:] - splits[:-1], rowids)
        cut = comparison_ops.greater(lengths, 2 * summarize)
        marker = comparison_ops.logical_and(cut, comparison_ops.equal(pos, summarize))
        keep = comparison_ops.logical_or(
            comparison_ops.logical_or(comparison_ops.less(pos, summarize),
                                comparison_ops.greater_equal(pos, lengths - summarize)), marker)
        items = comparison_ops.where(marker, array_ops.fill(array_ops.shape(items), "..."), items)
        items = slicing_ops.boolean_mask(items, keep)
        rowids = slicing_ops.boolean_mask(rowids, keep)
    joined = string_ops.unsorted_segment_join(items, rowids, nrows, separator=", ")
    return string_ops.string_join(["[", joined, "]"])


def ragged_tensor_to_string(rt, summarize=None, name=None):
    """rt as one string of nested brackets, "[[1, 2], [], [3]]" (`tf.strings.format` and
    `tf.print` of a RaggedTensor); strings quoted, at most `summarize` items at each end
    of every row (None or -1: all)."""
    with graph_lib.name_scope(name, "RaggedTensorToString", [rt]):
        rank = rt.shape.ndims
        if rank is None:
            raise ValueError("RaggedTensor to string needs a known rank")
        values = rt.flat_values
        if rank > rt.ragged_rank + 1:  # inner dims printed as ragged ones
            rt = rt.with_flat_values(RaggedTensor.from_tensor(
                values, ragged_rank=rank - rt.ragged_rank - 1,
                row_splits_dtype=rt.row_splits.dtype))
            values = rt.flat_values
        if values.dtype == dtypes.string:
            items = string_ops.string_join(["'", values, "'"])
        else:
            items = string_ops.as_string(values)
        for splits in reversed(rt.nested_row_splits):
            items = _summarized_rows(items, splits, summarize)
        outer = math_ops.cast(joining_ops.stack([0, array_ops.size(items)]), splits.dtype)
        return array_ops.reshape(_summarized_rows(items, outer, summarize), [])


def string_format(template, inputs, placeholder="{}", summarize=3, name=None):
    """`tf.strings.format` with RaggedTensor inputs: each printed as nested lists
    (`ragged_tensor_to_string`), the dense ones as the dense format prints them.

    Raises:
      ValueError: placeholders and inputs that differ in number.
    """
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    pieces = template.split(placeholder)
    if len(pieces) - 1 != len(inputs):
        raise ValueError(f"{len(pieces) - 1} placeholder(s) in template does not match "
                         f"{len(inputs)} tensor(s) provided as input")
    with graph_lib.name_scope(name, "StringFormat", [i for i in inputs
                                                     if isinstance(i, RaggedTensor)]):
        parts = [pieces[0]]
        for x, piece in zip(inputs, pieces[1:], strict=True):
            parts.append(_as_text(x, summarize))
            parts.append(piece)
        return string_ops.string_join(parts)


def _as_text(x, summarize):
    if isinstance(x, RaggedTensor):
        return ragged_tensor_to_string(x, summarize)
    return string_ops.string_format("{}", [x], summarize=summarize)


def print_ragged(*inputs, **kwargs):
    """`tf.print` with RaggedTensor inputs, printed as nested lists."""
    summarize = kwargs.get("summarize", 3)
    parts = []
    for x in inputs:
        if isinstance(x, str):
            parts.append(x)
        elif isinstance(x, RaggedTensor) or hasattr(x, "dtype"):
            parts.append(_as_text(x, summarize))
        else:
            parts.append(pprint.pformat(x))
    line = string_ops.string_join(parts, separator=kwargs.get("sep", " "))
    rest = {k: v for k, v in kwargs.items() if k != "sep"}
    return logging_ops.print(line, **rest)
