"""`tf.train.QueueRunner`: threads that keep a queue filled (whitepaper §4.7).

A QueueRunner holds a queue and the enqueue ops that fill it; `create_threads(sess, coord)`
starts one thread per enqueue op, each running its op in a loop. When an enqueue fails
because its input ran out (OutOfRangeError: an upstream queue closed) the thread ends; the
last one to end closes the queue, so consumers drain it and then see OutOfRangeError too.
Other errors are reported to the Coordinator. With a coordinator, one more thread waits for
the stop request and then cancels the queue (`close(cancel_pending_enqueues=True)`), which
unblocks enqueues waiting on a full queue.

`add_queue_runner` puts runners in the QUEUE_RUNNERS collection; `start_queue_runners`
starts every runner there.
"""

from __future__ import annotations

import logging
import threading
import weakref

from tensorflux.framework import errors, meta_graph
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.protos import queue_runner_pb2
from tensorflux.runtime.session import BaseSession, get_default_session

__all__ = ["QueueRunner", "add_queue_runner", "start_queue_runners"]

_log = logging.getLogger("tensorflux.train")


class QueueRunner:
    """Holds a list of enqueue operations for a queue, each to be run in a thread.

    Args:
      queue: a queue (e.g. `tf.FIFOQueue`).
      enqueue_ops: the ops each thread runs in a loop (the same op may repeat: one thread
        per entry).
      close_op: run when every thread has ended (default `queue.close()`).
      cancel_op: run when the coordinator stops (default
        `queue.close(cancel_pending_enqueues=True)`).
      queue_closed_exception_types: errors meaning "the input ended" (default
        `(tf.errors.OutOfRangeError,)`).
      queue_runner_def: a QueueRunnerDef naming the ops in the default graph (a meta
        graph's `queue_runners` collection); the other arguments must then be None.
      import_scope: the name scope `queue_runner_def`'s names were imported under.

    Raises:
      ValueError: `queue` or `enqueue_ops` is missing.
    """

    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None,
                 queue_closed_exception_types=None, queue_runner_def=None, import_scope=None):
        self._lock = threading.Lock()
        self._runs_per_session: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._exceptions_raised: list[BaseException] = []
        if queue_runner_def is not None:
            if queue or enqueue_ops:
                raise ValueError("queue_runner_def and queue are mutually exclusive.")
            self._init_from_proto(queue_runner_def, import_scope)
            return
        if not queue or not enqueue_ops:
            raise ValueError("Must provide queue and enqueue_ops.")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = cancel_op if cancel_op is not None else \
            queue.close(cancel_pending_enqueues=True)
        if queue_closed_exception_types is None:
            queue_closed_exception_types = (errors.OutOfRangeError,)
        elif not isinstance(queue_closed_exception_types, tuple) or not all(
                isinstance(t, type) and issubclass(t, errors.OpError)
                for t in queue_closed_exception_types):
            raise TypeError("queue_closed_exception_types, when provided, must be a tuple of "
                            f"tf.error types, but saw: {queue_closed_exception_types}")
        self._queue_closed_exception_types = queue_closed_exception_types

    def _init_from_proto(self, queue_runner_def, import_scope) -> None:
        """As TF: the queue becomes its op, the ops are looked up by name."""
        g = graph_lib.get_default_graph()

        def element(name):
            return g.as_graph_element(f"{import_scope.rstrip('/')}/{name}" if import_scope
                                      else name)

        self._queue = element(queue_runner_def.queue_name)
        self._enqueue_ops = [element(n) for n in queue_runner_def.enqueue_op_name]
        self._close_op = element(queue_runner_def.close_op_name)
        self._cancel_op = element(queue_runner_def.cancel_op_name)
        self._queue_closed_exception_types = tuple(
            errors.exception_type_from_error_code(code)
            for code in queue_runner_def.queue_closed_exception_types) or (
                errors.OutOfRangeError,)

    @property
    def queue(self):
        return self._queue

    @property
    def enqueue_ops(self) -> list:
        return self._enqueue_ops

    @property
    def close_op(self):
        return self._close_op

    @property
    def cancel_op(self):
        return self._cancel_op

    @property
    def queue_closed_exception_types(self) -> tuple:
        return self._queue_closed_exception_types

    @property
    def exceptions_raised(self) -> list:
        """Exceptions the threads raised when no coordinator was given."""
        return self._exceptions_raised

    @property
    def name(self) -> str:
        """The name of the queue's op."""
        return self._queue.name

    def _run(self, sess, enqueue_op, coord=None) -> None:
        decremented = False
        try:
            run = sess.make_callable(enqueue_op)
            while True:
                if coord is not None and coord.should_stop():
                    break
                try:
                    run()
                except self._queue_closed_exception_types:
                    # The input ended: the last thread out closes the queue.
                    with self._lock:
                        self._runs_per_session[sess] -= 1
                        decremented = True
                        last = self._runs_per_session[sess] == 0
                    if last:
                        try:
                            sess.run(self._close_op)
                        except Exception as e:  # noqa: BLE001 - e.g. the session closed
                            _log.debug("Ignored exception: %s", e)
                    return
        except Exception as e:  # noqa: BLE001 - reported to the coordinator
            if coord is not None and coord.should_stop():
                # A step cut short by the shutdown (the session closed under it): nothing
                # to report, and the coordinator may already have been joined.
                _log.debug("QueueRunner thread ended by the stop: %s", e)
            elif coord is not None:
                coord.request_stop(e)
            else:
                _log.error("Exception in QueueRunner: %s", e)
                with self._lock:
                    self._exceptions_raised.append(e)
                raise
        finally:
            if not decremented:
                with self._lock:
                    self._runs_per_session[sess] -= 1

    def _close_on_stop(self, sess, cancel_op, coord) -> None:
        coord.wait_for_stop()
        try:
            sess.run(cancel_op)
        except Exception as e:  # noqa: BLE001 - e.g. the session closed
            _log.debug("Ignored exception: %s", e)

    def create_threads(self, sess, coord=None, daemon=False, start=False) -> list:
        """Creates (and optionally starts) the threads for `sess`.

        Returns no threads if this runner's threads for `sess` are still running.

        Args:
          sess: the Session the enqueue ops run in.
          coord: an optional Coordinator; the threads register with it.
          daemon: make the threads daemons.
          start: start them.

        Returns:
          The list of threads.
        """
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [threading.Thread(target=self._run, args=(sess, op, coord),
                                    name=f"QueueRunnerThread-{self.name}-{op.name}")
                   for op in self._enqueue_ops]
        if coord is not None:
            threads.append(threading.Thread(target=self._close_on_stop,
                                            args=(sess, self._cancel_op, coord),
                                            name=f"QueueRunnerThread-{self.name}-close"))
        for t in threads:
            if coord is not None:
                coord.register_thread(t)
            if daemon:
                t.daemon = True
            if start:
                t.start()
        return threads

    def to_proto(self, export_scope=None):
        """A QueueRunnerDef naming this runner's ops without `export_scope`; None when the
        queue is outside that scope."""
        if export_scope and not self.queue.name.startswith(export_scope):
            return None

        def strip(name):
            prefix = export_scope.rstrip("/") + "/" if export_scope else ""
            return name[len(prefix):] if prefix and name.startswith(prefix) else name

        return queue_runner_pb2.QueueRunnerDef(
            queue_name=strip(self.queue.name),
            enqueue_op_name=[strip(op.name) for op in self.enqueue_ops],
            close_op_name=strip(self.close_op.name),
            cancel_op_name=strip(self.cancel_op.name),
            queue_closed_exception_types=[errors.error_code_from_exception_type(t)
                                          for t in self._queue_closed_exception_types])

    @staticmethod
    def from_proto(queue_runner_def, import_scope=None) -> QueueRunner:
        """The QueueRunner a QueueRunnerDef describes, over the default graph's ops."""
        return QueueRunner(queue_runner_def=queue_runner_def, import_scope=import_scope)


meta_graph.register_proto_function(GraphKeys.QUEUE_RUNNERS, queue_runner_pb2.QueueRunnerDef,
                                   QueueRunner.to_proto, QueueRunner.from_proto)


def add_queue_runner(qr: QueueRunner, collection=GraphKeys.QUEUE_RUNNERS) -> None:
    """Adds `qr` to the graph collection `collection` (QUEUE_RUNNERS by default)."""
    graph_lib.add_to_collection(collection, qr)


def start_queue_runners(sess=None, coord=None, daemon=True, start=True,
                        collection=GraphKeys.QUEUE_RUNNERS) -> list:
    """Starts every queue runner in `collection` of `sess`'s graph.

    Args:
      sess: the Session (default: the default session).
      coord: an optional Coordinator for the threads.
      daemon: make the threads daemons.
      start: start the threads.
      collection: the graph collection holding the runners.

    Returns:
      All the threads started.

    Raises:
      ValueError: no session was given and there is no default one.
      TypeError: `sess` is not a Session.
    """
    if sess is None:
        sess = get_default_session()
        if not sess:
            raise ValueError("Cannot start queue runners: No default session is registered. "
                             "Use `with sess.as_default()` or pass an explicit session to "
                             "tf.start_queue_runners(sess=sess)")
    if not isinstance(sess, BaseSession):
        if type(sess).__name__ in ("MonitoredSession", "SingularMonitoredSession"):
            return []  # a monitored session starts its own runners
        raise TypeError(f"sess must be a `tf.Session` object. Given class: {type(sess)}")
    threads = []
    with sess.graph.as_default():
        for qr in sess.graph.get_collection(collection):
            threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
