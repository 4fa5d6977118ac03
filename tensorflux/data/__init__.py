"""tf.data in TF1 graph mode: datasets as graph ops, iterators as resources."""

from tensorflux.data import experimental
from tensorflux.data.dataset_ops import AUTOTUNE, Dataset, DatasetSpec, DatasetV1
from tensorflux.data.iterator_ops import (
    Iterator,
    get_output_classes,
    get_output_shapes,
    get_output_types,
    make_initializable_iterator,
    make_one_shot_iterator,
)
from tensorflux.data.options import (
    INFINITE_CARDINALITY,
    UNKNOWN_CARDINALITY,
    Options,
    ThreadingOptions,
)
from tensorflux.data.readers import FixedLengthRecordDataset, TextLineDataset, TFRecordDataset

__all__ = ["AUTOTUNE", "Dataset", "DatasetSpec", "DatasetV1", "Iterator", "TFRecordDataset",
           "TextLineDataset", "FixedLengthRecordDataset", "make_one_shot_iterator",
           "make_initializable_iterator", "get_output_types", "get_output_shapes",
           "get_output_classes", "experimental", "Options", "ThreadingOptions",
           "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"]
