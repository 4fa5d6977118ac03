"""`tf.summary.FileWriter`: summaries, graphs and run metadata as Events in an event file.

Each `add_*` wraps its payload in an `Event` stamped with the current wall time and the
given step and queues it for the asynchronous `EventFileWriter`. As in TensorFlow, a
value's `SummaryMetadata` is written only with the first summary of its tag (TensorBoard
reads the plugin from that one), and a run-metadata tag may be used once.
"""

from __future__ import annotations

import logging
import time
import warnings

from tensorflux.framework import graph as graph_lib
from tensorflux.framework import meta_graph
from tensorflux.lib.io.event_file_writer import EventFileWriter
from tensorflux.protos import event_pb2, graph_pb2, meta_graph_pb2

__all__ = ["FileWriter"]

_log = logging.getLogger("tensorflux")


class FileWriter:
    """Writes Summary protocol buffers and graphs to an event file in `logdir`
    (`tf.summary.FileWriter`).

    Args:
      logdir: the directory of the event file (created if missing).
      graph: a Graph to write at once (its GraphDef and MetaGraphDef), e.g. `sess.graph`.
      max_queue: how many events may be pending before `add_*` blocks.
      flush_secs: how often, in seconds, pending events are synced to disk.
      graph_def: deprecated; a GraphDef to write instead of `graph`.
      filename_suffix: appended to the event file's name.
      session: accepted for compatibility; events are written by this writer's own thread.

    Raises:
      FailedPreconditionError, NotFoundError, PermissionDeniedError: the directory or the
        file cannot be created.
    """

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, graph_def=None,
                 filename_suffix=None, session=None):
        del session
        self.event_writer = EventFileWriter(logdir, max_queue, flush_secs, filename_suffix)
        self._closed = False
        self._seen_summary_tags: set[str] = set()
        self._session_run_tags: set[str] = set()
        if graph is not None or graph_def is not None:
            self.add_graph(graph=graph, graph_def=graph_def)
            source = graph if isinstance(graph, graph_lib.Graph) else None
            as_def = graph.as_graph_def(add_shapes=True) if source is not None else \
                (graph_def or graph)
            self.add_meta_graph(meta_graph.export_meta_graph(graph_def=as_def, graph=source))

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def get_logdir(self) -> str:
        """The directory the event file is written to."""
        return self.event_writer.get_logdir()

    def _warn_if_closed(self) -> None:
        if self._closed:
            warnings.warn("Attempting to use a closed FileWriter. The operation will be a "
                          "noop unless the FileWriter is explicitly reopened.", stacklevel=3)

    def _add_event(self, event, step) -> None:
        self._warn_if_closed()
        event.wall_time = time.time()
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None) -> None:
        """Adds a Summary (a proto, or its serialized bytes as a summary op outputs).

        Args:
          summary: a `Summary` or its serialization.
          global_step: the step to record with it.
        """
        event = event_pb2.Event()
        if isinstance(summary, bytes):
            event.summary.ParseFromString(summary)
        else:
            event.summary.CopyFrom(summary)
        for value in event.summary.value:
            if not value.HasField("metadata"):
                continue
            if value.tag in self._seen_summary_tags:
                value.ClearField("metadata")
            else:
                self._seen_summary_tags.add(value.tag)
        self._add_event(event, global_step)

    def add_session_log(self, session_log, global_step=None) -> None:
        """Adds a SessionLog (START, STOP, CHECKPOINT) at `global_step`."""
        event = event_pb2.Event()
        event.session_log.CopyFrom(session_log)
        self._add_event(event, global_step)

    def add_graph(self, graph, global_step=None, graph_def=None) -> None:
        """Adds a graph (its GraphDef with output shapes), shown by TensorBoard's graph tab.

        Args:
          graph: a Graph (or, deprecated, a GraphDef).
          global_step: the step to record with it.
          graph_def: deprecated; a GraphDef instead of `graph`.

        Raises:
          ValueError: both `graph` and `graph_def`.
          TypeError: neither is a Graph or a GraphDef.
        """
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def (deprecated), but not "
                             "both.")
        given = graph if graph is not None else graph_def
        if isinstance(given, graph_lib.Graph):
            as_def = given.as_graph_def(add_shapes=True)
        elif isinstance(given, graph_pb2.GraphDef):
            _log.warning("Passing a `GraphDef` to the SummaryWriter is deprecated. Pass a "
                         "`Graph` object instead, such as `sess.graph`.")
            as_def = given
        else:
            raise TypeError("The passed graph must be an instance of `Graph` or the "
                            "deprecated `GraphDef`")
        event = event_pb2.Event(graph_def=as_def.SerializeToString())
        self._add_event(event, global_step)

    def add_meta_graph(self, meta_graph_def, global_step=None) -> None:
        """Adds a MetaGraphDef.

        Raises:
          TypeError: `meta_graph_def` is not a MetaGraphDef.
        """
        if not isinstance(meta_graph_def, meta_graph_pb2.MetaGraphDef):
            raise TypeError("meta_graph_def must be type MetaGraphDef, saw type: "
                            f"{type(meta_graph_def)}")
        event = event_pb2.Event(meta_graph_def=meta_graph_def.SerializeToString())
        self._add_event(event, global_step)

    def add_run_metadata(self, run_metadata, tag, global_step=None) -> None:
        """Adds the RunMetadata of one step (timings, memory) under `tag`.

        Raises:
          ValueError: `tag` was used before.
        """
        if tag in self._session_run_tags:
            raise ValueError("The provided tag was already used for this event type")
        self._session_run_tags.add(tag)
        tagged = event_pb2.TaggedRunMetadata(tag=tag,
                                             run_metadata=run_metadata.SerializeToString())
        self._add_event(event_pb2.Event(tagged_run_metadata=tagged), global_step)

    def add_event(self, event) -> None:
        """Adds an Event as given (its wall time and step unchanged)."""
        self._warn_if_closed()
        self.event_writer.add_event(event)

    def flush(self) -> None:
        """Returns once every event added so far is on disk."""
        self._warn_if_closed()
        self.event_writer.flush()

    def close(self) -> None:
        """Flushes and closes the event file; `reopen()` starts a new one."""
        self.event_writer.close()
        self._closed = True

    def reopen(self) -> None:
        """Reopens a closed writer: later events go to a new file in the same directory."""
        self.event_writer.reopen()
        self._closed = False
