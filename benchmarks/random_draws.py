"""One large draw of each stateful random op (TF's Philox streams since the thirteenth
session), median wall and CPU time of 7 runs in one Session.

    .venv/bin/python benchmarks/random_draws.py tensorflux
    ~/.cache/tensorflux-oracle-venv/bin/python benchmarks/random_draws.py tensorflow
"""

import statistics
import sys
import time

if len(sys.argv) > 1 and sys.argv[1] == "tensorflow":
    import tensorflow.compat.v1 as tf

    tf.disable_eager_execution()
else:
    import tensorflux as tf


def main() -> None:
    backend = sys.argv[1] if len(sys.argv) > 1 else "tensorflux"
    with tf.Graph().as_default():
        ops = {"truncated_normal [4096, 4096]": tf.truncated_normal([4096, 4096], seed=1),
               "random_normal [4096, 4096]": tf.random_normal([4096, 4096], seed=1),
               "random_uniform [4096, 4096]": tf.random_uniform([4096, 4096], seed=1)}
        with tf.Session() as sess:
            for name, t in ops.items():
                sess.run(t.op)
                wall, cpu = [], []
                for _ in range(7):
                    c0, w0 = time.process_time(), time.perf_counter()
                    sess.run(t.op)
                    wall.append(time.perf_counter() - w0)
                    cpu.append(time.process_time() - c0)
                print(f"{backend} {name}: wall {statistics.median(wall) * 1e3:.1f} ms, "
                      f"cpu {statistics.median(cpu) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
