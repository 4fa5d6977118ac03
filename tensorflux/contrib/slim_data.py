"""TF-Slim's data library: `slim.dataset.Dataset` (where the records are, how to read
and decode them), `slim.data_decoder.DataDecoder`, `slim.data_provider.DataProvider`,
`slim.dataset_data_provider.DatasetDataProvider`, `slim.parallel_reader` and
`slim.queues` (the decoder of tf.train.Examples is contrib/slim_tfexample_decoder.py).

A DatasetDataProvider is a queue pipeline, TF1 style:

    data files -> string_input_producer (filenames, shuffled unless shuffle=False)
      -> num_readers readers, each enqueuing (key, record) into one common queue
         (a RandomShuffleQueue of common_queue_capacity / common_queue_min, or a FIFOQueue)
      -> dequeue one record -> decoder.decode -> {item: tensor} (+ the record's key)

so its tensors need the QUEUE_RUNNERS started (`tf.train.start_queue_runners`,
`slim.queues.QueueRunners(sess)`, or the Supervisor of `slim.learning.train`); with
`num_epochs` set, the filename producer counts epochs in a local variable and the last
dequeue raises OutOfRangeError.
"""

from __future__ import annotations

import abc
import contextlib

from tensorflux.framework import dtypes as dtypes_lib
from tensorflux.framework import graph as graph_lib
from tensorflux.ops import data_flow_ops, io_ops, math_ops
from tensorflux.platform import gfile
from tensorflux.summary import summary
from tensorflux.train import input as tf_input
from tensorflux.train import queue_runner
from tensorflux.train.coordinator import Coordinator

__all__ = ["DataDecoder", "DataProvider", "Dataset", "DatasetDataProvider",
           "ParallelReader", "QueueRunners", "get_data_files", "parallel_read",
           "single_pass_read"]


# ---- slim.dataset ---------------------------------------------------------------------

class Dataset:
    """The description of a dataset: `data_sources` (file patterns), the `reader` class,
    the `decoder`, `num_samples`, `items_to_descriptions`, and any keyword arguments as
    further attributes (`num_classes`, `labels_to_names`, ...)."""

    def __init__(self, data_sources, reader, decoder, num_samples, items_to_descriptions,
                 **kwargs):
        kwargs["data_sources"] = data_sources
        kwargs["reader"] = reader
        kwargs["decoder"] = decoder
        kwargs["num_samples"] = num_samples
        kwargs["items_to_descriptions"] = items_to_descriptions
        self.__dict__.update(kwargs)


# ---- slim.data_decoder ----------------------------------------------------------------

class DataDecoder(abc.ABC):
    """Decodes one record into the tensors of named items."""

    @abc.abstractmethod
    def decode(self, data, items):
        """The tensors of `items` decoded from `data`."""

    @abc.abstractmethod
    def list_items(self):
        """The names of the items the decoder can produce."""


# ---- slim.data_provider ---------------------------------------------------------------

class DataProvider:
    """Named tensors of one sample (`get(["image", "label"])`).

    Args:
      items_to_tensors: `{item: tensor}`.
      num_samples: the number of samples of the dataset.
    """

    def __init__(self, items_to_tensors, num_samples):
        self._items_to_tensors = items_to_tensors
        self._num_samples = num_samples

    def get(self, items) -> list:
        """The tensors of `items`, in order.

        Raises:
          ValueError: `items` is not a list or tuple, or names an unknown item.
        """
        self._validate_items(items)
        return [self._items_to_tensors[item] for item in items]

    def list_items(self) -> list:
        return list(self._items_to_tensors.keys())

    def num_samples(self):
        return self._num_samples

    def _validate_items(self, items) -> None:
        if not isinstance(items, (list, tuple)):
            raise ValueError("items must be a list or tuple")
        valid_items = self.list_items()
        for item in items:
            if item not in valid_items:
                raise ValueError(f"Item [{item}] is invalid. Valid entries include: "
                                 f"{valid_items}")


# ---- slim.parallel_reader -------------------------------------------------------------

class ParallelReader(io_ops.ReaderBase):
    """`num_readers` readers of `reader_class` reading files from one filename queue and
    enqueuing their `(key, value)` pairs into `common_queue`, read from there.

    Raises:
      TypeError: `common_queue` does not hold two components.
    """

    def __init__(self, reader_class, common_queue, num_readers=4, reader_kwargs=None):
        if len(common_queue.dtypes) != 2:
            raise TypeError("common_queue.dtypes must be [key, value].")
        reader_kwargs = reader_kwargs or {}
        self._readers = [reader_class(**reader_kwargs) for _ in range(num_readers)]
        self._common_queue = common_queue
        self._reader_ref = self._readers[0].reader_ref
        self._supports_serialize = False

    @property
    def common_queue(self):
        return self._common_queue

    def read(self, queue, name=None):
        """The next `(key, value)` from the common queue, the readers set to read
        `queue`'s files (a QueueRunner added for them)."""
        self._configure_readers_by(queue)
        return self._common_queue.dequeue(name=name)

    def read_up_to(self, queue, num_records, name=None):
        """Up to `num_records` `(keys, values)` from the common queue."""
        self._configure_readers_by(queue)
        return self._common_queue.dequeue_up_to(num_records, name)

    def _configure_readers_by(self, queue) -> None:
        enqueue_ops = [self._common_queue.enqueue(reader.read(queue))
                       for reader in self._readers]
        queue_runner.add_queue_runner(queue_runner.QueueRunner(self._common_queue,
                                                               enqueue_ops))

    def num_records_produced(self, name=None):
        return math_ops.add_n([r.num_records_produced() for r in self._readers], name=name)

    def num_work_units_completed(self, name=None):
        return math_ops.add_n([r.num_work_units_completed() for r in self._readers],
                              name=name)


def get_data_files(data_sources) -> list:
    """The files of `data_sources` (a path, a glob pattern, or a list of them).

    Raises:
      ValueError: no file found.
    """
    if isinstance(data_sources, (list, tuple)):
        data_files = []
        for source in data_sources:
            data_files += get_data_files(source)
    elif any(c in data_sources for c in "*?["):
        data_files = gfile.Glob(data_sources)
    else:
        data_files = [data_sources]
    if not data_files:
        raise ValueError(f"No data files found in {data_sources}")
    return data_files


def parallel_read(data_sources, reader_class, num_epochs=None, num_readers=4,
                  reader_kwargs=None, shuffle=True, dtypes=None, capacity=256,
                  min_after_dequeue=128, seed=None, scope=None):
    """`(key, value)` of one record read by `num_readers` parallel readers through a
    common queue (shuffled unless `shuffle=False`; also the filenames' order).

    Args:
      data_sources: a path, a glob pattern, or a list of them.
      reader_class: e.g. `tf.TFRecordReader`.
      num_epochs: read the files this many times (None: forever).
      num_readers: readers enqueuing in parallel.
      reader_kwargs: the readers' constructor arguments.
      shuffle: shuffle the filenames and the records (through a RandomShuffleQueue).
      dtypes: the common queue's component types (default two strings).
      capacity, min_after_dequeue: the common queue's.
      seed: for both shuffles.
      scope: the name scope (default "parallel_read").

    Returns:
      (key, value) string tensors.
    """
    data_files = get_data_files(data_sources)
    with graph_lib.name_scope(scope, "parallel_read"):
        filename_queue = tf_input.string_input_producer(
            data_files, num_epochs=num_epochs, shuffle=shuffle, seed=seed, name="filenames")
        dtypes_list = dtypes or [dtypes_lib.string, dtypes_lib.string]
        if shuffle:
            common_queue = data_flow_ops.RandomShuffleQueue(
                capacity=capacity, min_after_dequeue=min_after_dequeue, dtypes=dtypes_list,
                seed=seed, name="common_queue")
        else:
            common_queue = data_flow_ops.FIFOQueue(capacity=capacity, dtypes=dtypes_list,
                                                   name="common_queue")
        summary.scalar(f"fraction_of_{capacity}_full",
                       math_ops.cast(common_queue.size(), dtypes_lib.float32) * (1. / capacity))
        return ParallelReader(reader_class, common_queue, num_readers=num_readers,
                              reader_kwargs=reader_kwargs).read(filename_queue)


def single_pass_read(data_sources, reader_class, reader_kwargs=None, scope=None):
    """`(key, value)` of each record of the files, in order, once (one reader; the last
    read raises OutOfRangeError)."""
    data_files = get_data_files(data_sources)
    with graph_lib.name_scope(scope, "single_pass_read"):
        filename_queue = tf_input.string_input_producer(
            data_files, num_epochs=1, shuffle=False, capacity=1, name="filenames")
        return reader_class(**(reader_kwargs or {})).read(filename_queue)


# ---- slim.dataset_data_provider -------------------------------------------------------

class DatasetDataProvider(DataProvider):
    """The decoded items of one record of `dataset`, read through `parallel_read`, plus
    the record's key as item `record_key`.

    Args:
      dataset: a `Dataset`.
      num_readers: parallel readers.
      reader_kwargs: the readers' constructor arguments.
      shuffle: shuffle files and records.
      num_epochs: epochs to read (None: forever).
      common_queue_capacity, common_queue_min: the common queue's capacity and
        min_after_dequeue.
      record_key: the item name of the record's key.
      seed: the shuffles' seed.
      scope: the name scope.

    Raises:
      ValueError: `record_key` is also an item of the decoder.
    """

    def __init__(self, dataset, num_readers=1, reader_kwargs=None, shuffle=True,
                 num_epochs=None, common_queue_capacity=256, common_queue_min=128,
                 record_key="record_key", seed=None, scope=None):
        key, data = parallel_read(
            dataset.data_sources, reader_class=dataset.reader, num_epochs=num_epochs,
            num_readers=num_readers, reader_kwargs=reader_kwargs, shuffle=shuffle,
            capacity=common_queue_capacity, min_after_dequeue=common_queue_min, seed=seed,
            scope=scope)
        items = dataset.decoder.list_items()
        tensors = dataset.decoder.decode(data, items)
        items_to_tensors = dict(zip(items, tensors, strict=True))
        if record_key in items_to_tensors:
            raise ValueError("The item name used for `record_key` cannot also be used for a "
                             f"dataset item: {record_key}")
        items_to_tensors[record_key] = key
        super().__init__(items_to_tensors=items_to_tensors, num_samples=dataset.num_samples)


# ---- slim.queues ----------------------------------------------------------------------

@contextlib.contextmanager
def QueueRunners(session):  # noqa: N802 - TF-Slim's name
    """A context manager running the graph's QUEUE_RUNNERS for `session` while its body
    runs, stopping and joining them when it exits.

        with slim.queues.QueueRunners(sess):
            images = sess.run(provider_images)
    """
    coord = Coordinator()
    threads = queue_runner.start_queue_runners(session, coord=coord)
    try:
        yield
    finally:
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=120)
