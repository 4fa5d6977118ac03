"""`tf.strings`: the string ops under their TF1 `tf.strings.*` names (the same functions are
also top-level `tf.string_join`, `tf.substr`, ... ; see tensorflux/ops/string_ops.py)."""

from tensorflux.ops import string_ops as _s

as_string = _s.as_string
format = _s.string_format  # noqa: A001 - tf.strings.format
join = _s.string_join
length = _s.string_length
lower = _s.lower
reduce_join = _s.reduce_join
regex_full_match = _s.regex_full_match
regex_replace = _s.regex_replace
strip = _s.string_strip
substr = _s.substr
to_hash_bucket = _s.string_to_hash_bucket
to_hash_bucket_fast = _s.string_to_hash_bucket_fast
to_hash_bucket_strong = _s.string_to_hash_bucket_strong
to_number = _s.string_to_number
unicode_encode = _s.unicode_encode
unicode_transcode = _s.unicode_transcode
unsorted_segment_join = _s.unsorted_segment_join
upper = _s.upper
from tensorflux.ops.unicode_script_ops import unicode_script  # noqa: E402,F401
from tensorflux.ragged.ragged_string_ops import (  # noqa: E402,F401 - ragged for vectors
    bytes_split,
    ngrams,
    split,
    unicode_decode,
    unicode_decode_with_offsets,
    unicode_split,
    unicode_split_with_offsets,
)
