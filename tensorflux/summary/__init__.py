"""`tf.summary`: summary ops, event files and the protocol buffers they hold.

    loss_summary = tf.summary.scalar("loss", loss)
    merged = tf.summary.merge_all()
    writer = tf.summary.FileWriter(logdir, sess.graph)
    writer.add_summary(sess.run(merged), global_step)

`tensorboard --logdir <logdir>` shows what the writer wrote.
"""

from tensorflux.protos.event_pb2 import Event, SessionLog, TaggedRunMetadata
from tensorflux.protos.summary_pb2 import Summary, SummaryDescription
from tensorflux.summary.summary import (
    audio,
    get_summary_description,
    histogram,
    image,
    merge,
    merge_all,
    scalar,
    tensor_summary,
    text,
)
from tensorflux.summary.summary_ops_v2 import all_summary_ops as all_v2_summary_ops
from tensorflux.summary.summary_ops_v2 import initialize
from tensorflux.summary.writer import FileWriter
from tensorflux.summary.writer_cache import FileWriterCache

__all__ = ["Event", "FileWriter", "FileWriterCache", "SessionLog", "Summary",
           "SummaryDescription", "TaggedRunMetadata", "all_v2_summary_ops", "audio",
           "get_summary_description", "histogram", "image", "initialize", "merge",
           "merge_all", "scalar", "tensor_summary", "text"]
