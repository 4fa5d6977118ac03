"""`tf.contrib.data`: TF1's home of the dataset transformations that later moved to
`tf.data.experimental` (the same functions, tensorflux/data/experimental.py), plus its own
`batch_and_drop_remainder`, `padded_batch_and_drop_remainder` and `sloppy_interleave`."""

from __future__ import annotations

from tensorflux.data.experimental import (  # noqa: F401
    Counter,
    CsvDataset,
    Optional,
    RandomDataset,
    Reducer,
    SqlDataset,
    TFRecordWriter,
    bucket_by_sequence_length,
    choose_from_datasets,
    copy_to_device,
    dense_to_sparse_batch,
    enumerate_dataset,
    get_next_as_optional,
    get_single_element,
    group_by_reducer,
    group_by_window,
    ignore_errors,
    make_batched_features_dataset,
    make_csv_dataset,
    map_and_batch,
    parallel_interleave,
    parse_example_dataset,
    prefetch_to_device,
    rejection_resample,
    sample_from_datasets,
    scan,
    shuffle_and_repeat,
    unbatch,
)


def batch_and_drop_remainder(batch_size):
    """A transformation batching `batch_size` elements and dropping a short last batch."""
    return lambda dataset: dataset.batch(batch_size, drop_remainder=True)


def padded_batch_and_drop_remainder(batch_size, padded_shapes, padding_values=None):
    """`padded_batch` with the short last batch dropped."""
    return lambda dataset: dataset.padded_batch(batch_size, padded_shapes, padding_values,
                                                drop_remainder=True)


def sloppy_interleave(map_func, cycle_length, block_length=1):
    """`parallel_interleave` that may return elements out of order."""
    return parallel_interleave(map_func, cycle_length, block_length, sloppy=True)
