"""`tf.profiler`: parameter counts, float operations, time and memory of a graph's nodes.

`profile(graph, run_meta=None, op_log=None, cmd="scope", options=...)` prints a tfprof-style
report and returns the displayed tree as a `GraphNodeProto` (tensorflux/protos/
tfprof_output.proto, wire-compatible with TensorFlow's). `ProfileOptionBuilder` makes the
options. Float operations come from each op's FLOP formula (`define_op(..., flops=...)`).
"""

from tensorflux.profiler.model_analyzer import profile  # noqa: F401
from tensorflux.profiler.option_builder import ProfileOptionBuilder  # noqa: F401
from tensorflux.protos.tfprof_output_pb2 import (  # noqa: F401
    AdviceProto,
    GraphNodeProto,
    MultiGraphNodeProto,
)
