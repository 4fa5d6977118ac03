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


class Options:
    """`tf.data.Options`: recorded per dataset; merging keeps the values set last."""

    def __init__(self):
        self.experimental_deterministic = None
        self.deterministic = None
        self.experimental_slack = False
        self.threading = ThreadingOptions()
        self.experimental_threading = self.threading

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
