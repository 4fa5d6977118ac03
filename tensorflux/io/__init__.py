"""`tf.io`: parsing, serialization, file and image-codec functions under their TF1
`tf.io.*` names, re-exported from where they live (ops/parsing_ops.py, ops/io_ops.py,
ops/string_ops.py, ops/image_ops.py, lib/io/tf_record.py, the queues of data_flow_ops)."""

from tensorflux.io import gfile  # noqa: F401
from tensorflux.lib.io.tf_record import (  # noqa: F401
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordWriter,
    tf_record_iterator,
)
from tensorflux.ops.data_flow_ops import (  # noqa: F401
    PaddingFIFOQueue,
    PriorityQueue,
    QueueBase,
    RandomShuffleQueue,
)
from tensorflux.ops.image_ops import (  # noqa: F401
    decode_and_crop_jpeg,
    decode_bmp,
    decode_gif,
    decode_image,
    decode_jpeg,
    decode_png,
    encode_jpeg,
    encode_png,
    extract_jpeg_shape,
    is_jpeg,
)
from tensorflux.ops.image_webp_ops import decode_webp  # noqa: F401
from tensorflux.ops.io_ops import matching_files, read_file, write_file  # noqa: F401
from tensorflux.ops.parsing_ops import (  # noqa: F401
    FixedLenFeature,
    FixedLenSequenceFeature,
    SparseFeature,
    VarLenFeature,
    decode_compressed,
    decode_csv,
    decode_json_example,
    decode_raw,
    deserialize_many_sparse,
    parse_example,
    parse_single_example,
    parse_tensor,
    serialize_many_sparse,
    serialize_sparse,
    serialize_tensor,
)
from tensorflux.ops.parsing_seq_ops import (  # noqa: F401
    parse_sequence_example,
    parse_single_sequence_example,
)
from tensorflux.ops.proto_ops import decode_proto, encode_proto  # noqa: F401
from tensorflux.ops.string_ops import decode_base64, encode_base64  # noqa: F401
from tensorflux.train import match_filenames_once, write_graph  # noqa: F401
