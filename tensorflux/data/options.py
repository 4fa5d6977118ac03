"""`tf.data.Options` and `ThreadingOptions`: a dataset's options, recorded with
`Dataset.with_options` and read back with `Dataset.options()`. tensorflux's datasets run on
the runtime's own threads, so the options change nothing at run time except where a
transformation reads them (`deterministic`): they are accepted so that TF1 programs that set
them run unchanged."""

from __future__ import annotations

INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2


class ThreadingOptions:
    """`tf.data.ThreadingOptions`: thread-pool sizes (recorded)."""

    def __init__(self):
        self.max_intra_op_parallelism = None
        self.private_threadpool_size = None


class AutoShardPolicy:
    """How a distributed dataset would be sharded (recorded)."""

    OFF, AUTO, FILE, DATA, HINT = -1, 0, 1, 2, 3


class AutotuneAlgorithm:
    """Which autotuning algorithm to use (recorded)."""

    DEFAULT, HILL_CLIMB, GRADIENT_DESCENT, MAX_PARALLELISM, STAGE_BASED = 0, 1, 2, 3, 4


class ExternalStatePolicy:
    """What to do with external state when a dataset is serialized (recorded)."""

    WARN, IGNORE, FAIL = 0, 1, 2


class _Recorded:
    """Options whose attributes are only recorded (None until set)."""

    _FIELDS: tuple = ()

    def __init__(self):
        for name in self._FIELDS:
            setattr(self, name, None)

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and vars(self) == vars(other)

    __hash__ = None


class OptimizationOptions(_Recorded):
    """`tf.data.experimental.OptimizationOptions`: static optimizations (recorded; the
    map+batch fusion is always on, see kernels/dataset_batching.py)."""

    _FIELDS = ("apply_default_optimizations", "filter_fusion", "map_and_batch_fusion",
               "map_and_filter_fusion", "map_fusion", "map_parallelization",
               "noop_elimination", "parallel_batch", "shuffle_and_repeat_fusion",
               "autotune", "autotune_buffers", "autotune_cpu_budget")


class DistributeOptions(_Recorded):
    _FIELDS = ("auto_shard_policy", "num_devices")


class AutotuneOptions(_Recorded):
    _FIELDS = ("enabled", "cpu_budget", "ram_budget", "autotune_algorithm")


class Options:
    """`tf.data.Options`: recorded per dataset; merging keeps the values set last."""

    def __init__(self):
        self.experimental_deterministic = None
        self.deterministic = None
        self.experimental_slack = False
        self.threading = ThreadingOptions()
        self.experimental_threading = self.threading
        self.experimental_optimization = OptimizationOptions()
        self.experimental_distribute = DistributeOptions()
        self.autotune = AutotuneOptions()
        self.experimental_external_state_policy = None

    def merge(self, options: Options) -> Options:
        out = Options()
        for src in (self, options):
            for k, v in vars(src).items():
                if v is not None:
                    setattr(out, k, v)
        return out

    def __eq__(self, other) -> bool:
        return isinstance(other, Options) and vars(self) == vars(other)

    __hash__ = None
