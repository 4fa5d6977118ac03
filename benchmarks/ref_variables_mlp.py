"""MLP 784-512-512-10 Adam step (benchmarks/programs/_models.mlp): tensorflux with resource
or TF1 reference variables, or TensorFlow 1 (reference variables); median wall and CPU ms
over 60 steps after 10 warm-up steps, one line.

    python benchmarks/ref_variables_mlp.py resource|ref|tf    (from the repository root)
"""

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks", "programs"))


def main(mode: str) -> None:
    if mode == "tf":
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
        import tensorflow.compat.v1 as tf

        tf.disable_v2_behavior()
    else:
        import tensorflux as tf

        if mode == "ref":
            tf.disable_resource_variables()
    from _models import mlp

    g, x, y, init, train = mlp(tf)
    kinds = sorted({op.type for op in g.get_operations()
                    if op.type in ("VariableV2", "VarHandleOp")})
    rng = np.random.default_rng(0)
    feed = {x: rng.standard_normal((128, 784)).astype(np.float32),
            y: rng.integers(0, 10, 128)}
    with tf.Session(graph=g) as sess:
        sess.run(init)
        for _ in range(10):
            sess.run(train, feed)
        wall, cpu = [], []
        for _ in range(60):
            t, c = time.perf_counter(), time.process_time()
            sess.run(train, feed)
            wall.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
    print(f"{mode} {kinds} wall_ms={np.median(wall) * 1e3:.3f} "
          f"cpu_ms={np.median(cpu) * 1e3:.3f}")


if __name__ == "__main__":
    main(sys.argv[1])
