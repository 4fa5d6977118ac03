"""`tf.train.summary_iterator`: the Events of an event file, in order."""

from __future__ import annotations

from tensorflux.framework import errors
from tensorflux.lib.io.tf_record import RecordReader
from tensorflux.protos import event_pb2

__all__ = ["summary_iterator"]


class _SummaryIterator:
    def __init__(self, path):
        self._reader = RecordReader(path)

    def __iter__(self):
        return self

    def __next__(self) -> event_pb2.Event:
        if self._reader is None:
            raise StopIteration
        try:
            record = self._reader.read()
        except errors.DataLossError as e:
            # A file whose writer was killed may end inside its last record: the records
            # before it are the file. A record that is whole but corrupt is still an error.
            if "truncated record" not in e.message:
                raise
            record = None
        if record is None:
            self._reader.close()
            self._reader = None
            raise StopIteration
        return event_pb2.Event.FromString(record[1])


def summary_iterator(path):
    """An iterator over the Events of the event file `path` (`tf.train.summary_iterator`).

    A last record cut short (a writer killed mid-write) ends the iteration.

    Args:
      path: an event file.

    Returns:
      An iterator of `Event` protocol buffers.

    Raises:
      NotFoundError: `path` does not exist.
      DataLossError: (while iterating) a record is corrupt.
    """
    return _SummaryIterator(path)
