"""`tf.profiler`: parameter counts, float operations, time and memory of a graph's nodes.

`profile(graph, run_meta=None, op_log=None, cmd="scope", options=...)` prints a tfprof-style
report and returns the displayed tree as a `GraphNodeProto` (tensorflux/protos/
tfprof_output.proto, wire-compatible with TensorFlow's). `ProfileOptionBuilder` makes the
options. Float operations come from each op's FLOP formula (`define_op(..., flops=...)`).
`Profiler` keeps the RunMetadata of several traced steps (`add_step`) for the scope and op
views and `advise` (the expensive-operation, accelerator-utilization and operation
checks); `write_op_log` writes the per-op log (`OpLogProto`) a later profile reads.
"""

from tensorflux.profiler.model_analyzer import (  # noqa: F401
    ALL_ADVICE,
    Profiler,
    advise,
    profile,
)
from tensorflux.profiler.option_builder import ProfileOptionBuilder  # noqa: F401
from tensorflux.profiler.tfprof_logger import write_op_log  # noqa: F401
from tensorflux.protos.tfprof_log_pb2 import OpLogProto  # noqa: F401
from tensorflux.protos.tfprof_output_pb2 import (  # noqa: F401
    AdviceProto,
    GraphNodeProto,
    MultiGraphNodeProto,
)
