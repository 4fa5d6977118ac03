"""Null-op dispatch: how many do-nothing ops per second the executor gets through.

Two graphs of 10,000 ops: a chain of Identity ops (each reads the one before, starting from
a scalar Const) and a fan of NoOps (all control dependencies of one final NoOp). Graph
optimizations are off (L0, no CSE, no constant folding, no function inlining, and
TensorFlow's grappler meta optimizer disabled) and one thread runs the step. Figure:
10,000 / the best of 7 runs after one warm-up run, in ops/s.

tensorflux also reports the chain and fan with its static schedule switched off, i.e. on
the dataflow executor that graphs with control flow or asynchronous kernels use.

    python benchmarks/programs/null_ops.py --backend tensorflux|tensorflow
"""

import time

from _bench import BACKEND, emit, guarded, optimizations_off

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

N = 10_000
REPS = 7
OFF = optimizations_off(tf)


def chain(n):
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(1.0)
        for _ in range(n):
            x = tf.identity(x)
    return g, x


def fan(n):
    g = tf.Graph()
    with g.as_default():
        with tf.control_dependencies([tf.no_op() for _ in range(n)]):
            done = tf.no_op()
    return g, done


def best_time(graph, fetch, expected, mode="default"):
    # tensorflux's execution options (runtime/exec_options.py): "dataflow" sends every node
    # through the dataflow executor; "calls" keeps the compiled schedule but makes every
    # node a real kernel call (no inlined Identity/NoOp).
    kwargs = {}
    if mode != "default":
        from tensorflux.runtime.exec_options import ExecOptions

        kwargs["exec_options"] = (ExecOptions(strategy="dataflow") if mode == "dataflow"
                                  else ExecOptions(inline_kernels=False))
    with tf.Session(graph=graph, config=OFF, **kwargs) as sess:
        got = sess.run(fetch)
        if got != expected:
            raise RuntimeError(f"wrong result: expected {expected!r}, got {got!r}")
        best = float("inf")
        for _ in range(REPS):
            t = time.perf_counter()
            sess.run(fetch)
            best = min(best, time.perf_counter() - t)
    return best


COMMON = "10,000 ops, optimizations off, 1 thread, best of 7"
# What tensorflux's static schedule makes of these graphs: the figures measure the generated
# step function, not kernel dispatch.
STATIC_NOTES = {
    "identity_chain": "tensorflux's static schedule inlines Identity as a local-variable move "
                      "(`v2 = v1`), so no kernel is called per node",
    "noop_fan": "tensorflux's static schedule emits nothing for NoOp: the step function is "
                "`return []`, so the figure is Session.run overhead spread over 10,000",
}
CASES = [
    ("identity_chain", f"Identity chain ({COMMON})", chain, 1.0),
    ("noop_fan", f"NoOp fan ({COMMON})", fan, None),
]
for name, label, build, expected in CASES:
    extra = {"label": label, "target": 1.0}
    if BACKEND == "tensorflux":
        extra["note"] = STATIC_NOTES[name]
    with guarded(name, **extra):
        graph, fetch = build(N)
        emit(name, N / best_time(graph, fetch, expected), "ops/s", "higher", **extra)

VARIANTS = {
    "calls": ("compiled schedule, one kernel call per node (no inlining)",
              "tensorflux's static schedule with inlining off (ExecOptions(inline_kernels="
              "False)): a Python call to the Identity/NoOp kernel per node"),
    "dataflow": ("dataflow executor, no compiled schedule",
                 "tensorflux's dataflow executor (ExecOptions(strategy=\"dataflow\")), the path of "
                 "graphs with control flow or asynchronous kernels"),
}
if BACKEND == "tensorflux":
    for mode, (suffix, note) in VARIANTS.items():
        for name, label, build, expected in CASES:
            row = f"{name}_{mode}"
            row_label = label.split(" (")[0] + " - " + suffix
            with guarded(row, label=row_label, compare_to=name, note=note):
                graph, fetch = build(N)
                emit(row, N / best_time(graph, fetch, expected, mode=mode), "ops/s",
                     "higher", label=row_label, compare_to=name, note=note)
