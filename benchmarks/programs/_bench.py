"""What every benchmark program shares: which backend it runs on, and how it reports.

A program is a TF1 script written against a module named `tf`. It picks its backend from
`--backend tensorflux|tensorflow` on the command line or, failing that, the
`TFX_BENCH_BACKEND` environment variable (default: tensorflux), imports `tf` accordingly at
its top, and prints one JSON line per figure:

    {"name": "identity_chain", "value": 5.6e6, "unit": "ops/s", "better": "higher", ...}

Optional keys: `label` (the row's text in the table), `target` (the speed-up vs TensorFlow
the figure must reach, > 1 meaning tensorflux must be faster), `compare_to` (the name of the
TensorFlow figure this one is compared with, when TensorFlow has no figure of the same name),
`note`. A figure that could not be measured is printed as `{"name": ..., "error": "..."}`
instead, so a missing op shows up as "n/a (error)" in the table rather than as a crash.

This module imports neither TensorFlow nor tensorflux when it is imported (only
`optimizations_off`, called after the program imported its backend, reaches into it).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback

BACKENDS = ("tensorflux", "tensorflow")


def _backend() -> str:
    argv = sys.argv[1:]
    choice = os.environ.get("TFX_BENCH_BACKEND", "tensorflux")
    for k, arg in enumerate(argv):
        if arg == "--backend" and k + 1 < len(argv):
            choice = argv[k + 1]
        elif arg.startswith("--backend="):
            choice = arg.split("=", 1)[1]
    if choice not in BACKENDS:
        raise SystemExit(f"unknown backend {choice!r}; expected one of {', '.join(BACKENDS)}")
    return choice


BACKEND = _backend()
if BACKEND == "tensorflow":
    # Must be set before TensorFlow is imported to silence its C++ logging.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def emit(name: str, value: float, unit: str, better: str, **extra) -> None:
    """Prints one figure as a JSON line on stdout."""
    if better not in ("higher", "lower"):
        raise ValueError(f"better must be 'higher' or 'lower', not {better!r}")
    record = {"name": name, "value": float(value), "unit": unit, "better": better,
              "backend": BACKEND}
    record.update(extra)
    print(json.dumps(record), flush=True)


def emit_error(name: str, exc: BaseException, **extra) -> None:
    """Prints a figure that could not be measured, with the reason."""
    message = f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:300]
    record = {"name": name, "error": message, "backend": BACKEND}
    record.update(extra)
    print(json.dumps(record), flush=True)


@contextlib.contextmanager
def guarded(*names: str, **extra):
    """Runs a measurement; if it raises, prints an error line for each of `names` instead.

    `extra` (e.g. `label=`, `target=`) goes into the error lines so the table keeps its
    labels and targets for rows that are not runnable yet.
    """
    try:
        yield
    except Exception as e:  # noqa: BLE001 - reported as a figure, never a crash
        traceback.print_exc(file=sys.stderr)
        for name in names:
            emit_error(name, e, **extra)


def optimizations_off(tf):
    """The ConfigProto of the dispatch benchmarks, the same on both backends: graph
    optimizations off (L0, no CSE, no constant folding, no inlining; TensorFlow's grappler
    meta optimizer off too, a switch tensorflux accepts and has no use for), one inter-op
    and one intra-op thread. `tf` is the backend module the program imported."""
    if BACKEND == "tensorflow":
        from tensorflow.core.protobuf import rewriter_config_pb2
    else:
        from tensorflux.protos import rewriter_config_pb2
    return tf.ConfigProto(
        graph_options=tf.GraphOptions(
            optimizer_options=tf.OptimizerOptions(opt_level=tf.OptimizerOptions.L0,
                                                  do_common_subexpression_elimination=False,
                                                  do_constant_folding=False,
                                                  do_function_inlining=False),
            rewrite_options=rewriter_config_pb2.RewriterConfig(disable_meta_optimizer=True)),
        inter_op_parallelism_threads=1, intra_op_parallelism_threads=1)
