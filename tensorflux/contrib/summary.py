"""`tf.contrib.summary`: resource-based summary writers in graph mode (TF 1.13-1.15).

The implementation is tensorflux/summary/summary_ops_v2.py (ops: tensorflux/ops/
summary_ops_v2.py). `create_db_writer` (SQLite) raises UnimplementedError.
"""

from tensorflux.summary.summary_ops_v2 import (
    SummaryWriter,
    all_summary_ops,
    always_record_summaries,
    audio,
    create_db_writer,
    create_file_writer,
    create_summary_file_writer,
    eval_dir,
    flush,
    generic,
    graph,
    histogram,
    image,
    import_event,
    initialize,
    never_record_summaries,
    record_summaries_every_n_global_steps,
    scalar,
    should_record_summaries,
    summary_writer_initializer_op,
)

__all__ = ["SummaryWriter", "all_summary_ops", "always_record_summaries", "audio",
           "create_db_writer", "create_file_writer", "create_summary_file_writer", "eval_dir",
           "flush", "generic", "graph", "histogram", "image", "import_event", "initialize",
           "never_record_summaries", "record_summaries_every_n_global_steps", "scalar",
           "should_record_summaries", "summary_writer_initializer_op"]
