"""Resource-based summary writers (`tf.contrib.summary`), in graph mode.

    writer = tf.contrib.summary.create_file_writer(logdir)
    with writer.as_default(), tf.contrib.summary.always_record_summaries():
        tf.contrib.summary.scalar("loss", loss)
    with tf.Session() as sess:
        tf.contrib.summary.initialize(graph=tf.get_default_graph(), session=sess)
        sess.run(tf.contrib.summary.all_summary_ops())

Unlike `tf.summary.*`, these ops write their Event themselves (tensorflux/ops/
summary_ops_v2.py), into the writer set as default while they are built.

Two pieces of state are kept per thread while a graph is built: the default writer
(`as_default`, `set_as_default`) and the recording condition (`always_record_summaries`,
`never_record_summaries`, `record_summaries_every_n_global_steps`; off by default). A summary
function then returns
- a NoOp when there is no default writer;
- a constant False when recording is off (nothing is written);
- when it is on, a constant True that runs after the write op (named by the summary's
  scope, tagged as `tf.summary` tags it, with its family prefix repeated as TensorFlow's);
- for a condition tensor, the Merge of a `tf.cond` between the two (the write op inside the
  true branch, named and tagged as if outside it).
The result goes into the `_SUMMARY_V2` collection (`all_summary_ops()`). Its step is `step`
(an int64 scalar) or, when None, the global step (created if missing). Writer init ops go
into `_SUMMARY_WRITER_V2` (`summary_writer_initializer_op()`).
"""

from __future__ import annotations

import contextlib
import os
import threading

import numpy as np

from tensorflux.control_flow import builders
from tensorflux.framework import dtypes, errors
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, comparison_ops, constant_op, control_flow_ops, math_ops
from tensorflux.ops import summary_ops_v2 as gen
from tensorflux.protos import graph_pb2
from tensorflux.runtime.session import get_default_session
from tensorflux.summary.summary import _summary_scope
from tensorflux.train.global_step import get_or_create_global_step

__all__ = ["SummaryWriter", "all_summary_ops", "always_record_summaries", "audio",
           "create_db_writer", "create_file_writer", "create_summary_file_writer", "eval_dir",
           "flush", "generic", "graph", "histogram", "image", "import_event", "initialize",
           "never_record_summaries", "record_summaries_every_n_global_steps", "scalar",
           "should_record_summaries", "summary_writer_initializer_op"]

SUMMARY_COLLECTION = "_SUMMARY_V2"
WRITER_INIT_COLLECTION = "_SUMMARY_WRITER_V2"
_CPU = "/device:CPU:0"


class _State(threading.local):
    """The default writer and the recording condition of the building thread."""

    def __init__(self):
        self.writer = None  # a SummaryWriter with a resource, or None
        self.recording = False  # a Python bool or a scalar bool tensor


_state = _State()


class SummaryWriter:
    """A summary writer resource and how to create it (`tf.contrib.summary.SummaryWriter`).

    Made by `create_file_writer`; a writer with no resource (logdir None) does nothing.
    """

    def __init__(self, resource, init_op_fn):
        self._resource = resource
        self._init_op_fn = init_op_fn

    def set_as_default(self):
        """Makes this the writer of the summary functions called later in this thread."""
        if self._resource is not None:
            _state.writer = self

    @contextlib.contextmanager
    def as_default(self):
        """A context in which this is the default writer; yields the writer."""
        if self._resource is None:
            yield self
            return
        old = _state.writer
        _state.writer = self
        try:
            yield self
        finally:
            _state.writer = old

    def init(self):
        """An op creating the writer (its events file); a no-op once it exists."""
        return self._init_op_fn() if self._resource is not None else control_flow_ops.no_op()

    def flush(self):
        """An op syncing everything written so far to disk."""
        return flush(writer=self)

    def close(self):
        """An op flushing, then closing the writer (deleting the resource)."""
        if self._resource is None:
            return control_flow_ops.no_op()
        with graph_lib.device(_CPU), graph_lib.control_dependencies([self.flush()]):
            return gen.close_summary_writer(self._resource)


def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None,
                       name=None):
    """A SummaryWriter of an events file in `logdir` (`tf.contrib.summary.create_file_writer`).

    Writers of the same `name` share one resource (by default the name is "logdir:" and the
    directory, so writers of one directory share their file). The writer is created when its
    init op runs (`init()`, `summary_writer_initializer_op()` or `initialize()`).

    Args:
      logdir: the directory (a string or string tensor; created if missing), or None for a
        writer that writes nothing.
      max_queue: how many events may wait to be written (default 10).
      flush_millis: how often, in milliseconds, the file is synced (default 120000).
      filename_suffix: appended to the events file's name (default ".v2").
      name: the resource's shared name.

    Returns:
      A SummaryWriter.
    """
    if logdir is None:
        return SummaryWriter(None, None)
    with graph_lib.device(_CPU):
        if max_queue is None:
            max_queue = constant_op.constant(10)
        if flush_millis is None:
            flush_millis = constant_op.constant(2 * 60 * 1000)
        if filename_suffix is None:
            filename_suffix = constant_op.constant(".v2")
        if name is None:
            name = f"logdir:{logdir}"
        resource = gen.summary_writer(shared_name=name)

        def init_op():
            with graph_lib.device(_CPU):
                return gen.create_summary_file_writer(resource, logdir, max_queue,
                                                      flush_millis, filename_suffix)

        graph_lib.add_to_collection(WRITER_INIT_COLLECTION, init_op())
    return SummaryWriter(resource, init_op)


def create_summary_file_writer(*args, **kwargs):
    """The old name of `create_file_writer`."""
    return create_file_writer(*args, **kwargs)


def create_db_writer(db_uri, experiment_name=None, run_name=None, user_name=None,
                     name=None):
    """SQLite summary writers are not implemented.

    Raises:
      UnimplementedError: always.
    """
    del db_uri, experiment_name, run_name, user_name, name
    raise errors.UnimplementedError(
        None, None, "tf.contrib.summary.create_db_writer: tensorflux has no SQLite summary "
        "writer (the CreateSummaryDbWriter op and TensorBoard's database schema are not "
        "implemented); use create_file_writer")


# ---- recording ---------------------------------------------------------------------------


@contextlib.contextmanager
def _recording(condition):
    old = _state.recording
    _state.recording = condition
    try:
        yield
    finally:
        _state.recording = old


def always_record_summaries():
    """A context in which summary functions write."""
    return _recording(True)


def never_record_summaries():
    """A context in which summary functions write nothing."""
    return _recording(False)


def record_summaries_every_n_global_steps(n, global_step=None):
    """A context in which summaries are written when `global_step % n == 0`.

    Args:
      n: the period, in steps.
      global_step: the step tensor (default: the global step, created if missing).
    """
    if global_step is None:
        global_step = get_or_create_global_step()
    with graph_lib.device(_CPU):
        condition = comparison_ops.equal(math_ops.floormod(global_step, n), 0)
    return _recording(condition)


def should_record_summaries():
    """A bool scalar tensor: whether summaries built now would be written."""
    recording = _state.recording
    return recording if isinstance(recording, Tensor) else constant_op.constant(recording)


# ---- summary functions -------------------------------------------------------------------


def _choose_step(step):
    if step is None:
        return get_or_create_global_step()
    return convert_to_tensor(step, dtype=dtypes.int64)


def _summary_writer_function(name, tensor, function, family=None, step=None):
    """Builds `function(writer, tag, scope, step)` under the recording condition (see the
    module docstring)."""
    writer = _state.writer
    if writer is None:
        return control_flow_ops.no_op()
    g = graph_lib.get_default_graph()
    outer = g.get_name_scope()
    recording = _state.recording

    def record(step):
        with g.name_scope(outer + "/" if outer else ""), \
                _summary_scope(name, family, values=[tensor]) as (tag, scope):
            with graph_lib.control_dependencies([function(writer._resource, tag, scope,
                                                          _choose_step(step))]):
                return constant_op.constant(True)

    with graph_lib.device(_CPU):
        if isinstance(recording, Tensor):
            if step is None:  # the global step is made outside the cond
                step = get_or_create_global_step()
            result = builders.cond(recording, lambda: record(step),
                                   lambda: constant_op.constant(False))
        elif recording:
            result = record(step)
        else:
            result = constant_op.constant(False)
        graph_lib.add_to_collection(SUMMARY_COLLECTION, result)
    return result


def generic(name, tensor, metadata=None, family=None, step=None):
    """Writes `tensor` whole, with the SummaryMetadata `metadata` (a proto or its bytes).

    Returns:
      See the module docstring: a bool tensor, or a NoOp without a default writer.
    """
    def function(writer, tag, scope, step):
        serialized = metadata if metadata is not None else b""
        if hasattr(serialized, "SerializeToString"):
            serialized = serialized.SerializeToString()
        return gen.write_summary(writer, step, array_ops.identity(tensor), tag,
                                 constant_op.constant(serialized, dtype=dtypes.string),
                                 name=scope)

    return _summary_writer_function(name, tensor, function, family=family, step=step)


def scalar(name, tensor, family=None, step=None):
    """Writes the real scalar `tensor` as a `simple_value` (another shape fails at run time).

    Returns:
      See the module docstring.
    """
    def function(writer, tag, scope, step):
        return gen.write_scalar_summary(writer, step, tag, array_ops.identity(tensor),
                                        name=scope)

    return _summary_writer_function(name, tensor, function, family=family, step=step)


def histogram(name, tensor, family=None, step=None):
    """Writes the histogram of `tensor` (a NaN or infinity fails at run time).

    Returns:
      See the module docstring.
    """
    def function(writer, tag, scope, step):
        return gen.write_histogram_summary(writer, step, tag, array_ops.identity(tensor),
                                           name=scope)

    return _summary_writer_function(name, tensor, function, family=family, step=step)


def image(name, tensor, bad_color=None, max_images=3, family=None, step=None):
    """Writes up to `max_images` PNGs of the [batch, h, w, 1|3|4] `tensor` (float images are
    scaled as `tf.summary.image` scales them; non-finite pixels get `bad_color`, default
    opaque red).

    Returns:
      See the module docstring.
    """
    def function(writer, tag, scope, step):
        color = constant_op.constant([255, 0, 0, 255], dtype=dtypes.uint8) \
            if bad_color is None else bad_color
        return gen.write_image_summary(writer, step, tag, array_ops.identity(tensor), color,
                                       max_images, name=scope)

    return _summary_writer_function(name, tensor, function, family=family, step=step)


def audio(name, tensor, sample_rate, max_outputs, family=None, step=None):
    """Writes up to `max_outputs` WAV clips of the float [batch, frames(, channels)] `tensor`.

    Returns:
      See the module docstring.
    """
    def function(writer, tag, scope, step):
        rate = convert_to_tensor(sample_rate, dtype=dtypes.float32, name="sample_rate")
        return gen.write_audio_summary(writer, step, tag, array_ops.identity(tensor), rate,
                                       max_outputs=max_outputs, name=scope)

    return _summary_writer_function(name, tensor, function, family=family, step=step)


def graph(param, step=None, name=None):
    """Writes a graph (whatever the recording condition), shown by TensorBoard's graph tab.

    Args:
      param: a string tensor holding a serialized GraphDef (a placeholder fed
        `graph.as_graph_def().SerializeToString()`).
      step: the step (default: the global step).
      name: a name for the op.

    Returns:
      The WriteGraphSummary op, or a NoOp without a default writer.

    Raises:
      TypeError: `param` is not a tensor.
    """
    if not isinstance(param, Tensor):
        raise TypeError(f"graph() needs a tf.Tensor (e.g. tf.placeholder) in graph mode, "
                        f"but was: {type(param)}")
    writer = _state.writer
    if writer is None:
        return control_flow_ops.no_op()
    with graph_lib.device(_CPU):
        return gen.write_graph_summary(writer._resource, _choose_step(step),
                                       array_ops.identity(param), name=name)


_write_graph = graph  # for initialize(), whose argument hides the name


def import_event(tensor, name=None):
    """Writes the serialized `tf.Event`s of the string tensor `tensor` as they are.

    Returns:
      The ImportEvent op (unparseable bytes fail with DataLossError when it runs).
    """
    writer = _state.writer
    if writer is None:
        return control_flow_ops.no_op()
    return gen.import_event(writer._resource, tensor, name=name)


def flush(writer=None, name=None):
    """An op syncing `writer` (default: the default writer) to disk; a NoOp without one."""
    writer = _state.writer if writer is None else writer
    resource = getattr(writer, "_resource", writer)
    if resource is None:
        return control_flow_ops.no_op()
    with graph_lib.device(_CPU):
        return gen.flush_summary_writer(resource, name=name)


def all_summary_ops():
    """The summary results built so far in the default graph (`_SUMMARY_V2`)."""
    return graph_lib.get_collection(SUMMARY_COLLECTION)


def summary_writer_initializer_op():
    """The init ops of every writer made in the default graph."""
    return graph_lib.get_collection(WRITER_INIT_COLLECTION)


def initialize(graph=None, session=None):  # noqa: A002 - TensorFlow's argument name
    """Creates every writer of the default graph and, given `graph`, writes it at step 0.

    Args:
      graph: a Graph (or GraphDef) to write with the default writer.
      session: the Session to run in (default: the default session).

    Raises:
      RuntimeError: no default writer.
      ValueError: no session given and no default session.
    """
    if _state.writer is None:
        raise RuntimeError("No default tf.contrib.summary.SummaryWriter found")
    if session is None:
        session = get_default_session()
        if session is None:
            raise ValueError("session must be passed if no default session exists")
    session.run(summary_writer_initializer_op())
    if graph is not None:
        data = graph if isinstance(graph, graph_pb2.GraphDef) else graph.as_graph_def(
            add_shapes=True)
        fed = array_ops.placeholder(dtypes.string)
        session.run(_write_graph(fed, 0), feed_dict={fed: np.array(data.SerializeToString(),
                                                                dtype=object)})


def eval_dir(model_dir, name=None):
    """The directory of evaluation summaries: `model_dir/eval` or `model_dir/eval_<name>`."""
    return os.path.join(model_dir, "eval" if not name else "eval_" + name)
