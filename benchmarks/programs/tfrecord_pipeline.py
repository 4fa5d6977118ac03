"""TFRecord input pipeline: records per second through the TF1 queue-based reader.

100,000 records of 1 KiB (random bytes) in 10 TFRecord files, written beforehand (not
timed) by the backend's own `tf.python_io.TFRecordWriter`. The timed graph is the
canonical TF1 pipeline:

    filename_queue = tf.train.string_input_producer(files, num_epochs=1, shuffle=False)
    _, value = tf.TFRecordReader().read(filename_queue)
    batch = tf.train.shuffle_batch([value], 128, capacity=1000 + 3 * 128,
                                   min_after_dequeue=1000, num_threads=4,
                                   allow_smaller_final_batch=True)

with the queue runners started under a Coordinator; the main thread fetches batches until
OutOfRangeError. Figure: records fetched / wall time from starting the runners to the
last batch. The record count can be scaled with TFX_BENCH_RECORDS (default 100,000).

A second, informational figure reads with `reader.read_up_to(filename_queue, 128)` and
batches with `shuffle_batch(..., enqueue_many=True)`: one step per 128 records.

    python benchmarks/programs/tfrecord_pipeline.py --backend tensorflux|tensorflow
"""

import os
import shutil
import tempfile
import time

import numpy as np
from _bench import BACKEND, emit, guarded

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

RECORDS = int(os.environ.get("TFX_BENCH_RECORDS", "100000"))
FILES = 10
RECORD_BYTES = 1024
BATCH = 128
NAME = "tfrecord_pipeline"
LABEL = (f"TFRecord pipeline: {RECORDS:,} x 1 KiB records, string_input_producer -> "
         "TFRecordReader -> shuffle_batch(128), 4 threads")


def write_files(directory):
    rng = np.random.default_rng(0)
    payload = rng.integers(0, 256, size=RECORDS * RECORD_BYTES, dtype=np.uint8).tobytes()
    files = []
    per_file = RECORDS // FILES
    for k in range(FILES):
        path = os.path.join(directory, f"part-{k:02d}.tfrecord")
        files.append(path)
        with tf.python_io.TFRecordWriter(path) as w:
            for i in range(k * per_file, (k + 1) * per_file):
                w.write(payload[i * RECORD_BYTES:(i + 1) * RECORD_BYTES])
    return files, per_file * FILES


def run(files, up_to):
    g = tf.Graph()
    with g.as_default():
        filename_queue = tf.train.string_input_producer(files, num_epochs=1, shuffle=False)
        reader = tf.TFRecordReader()
        if up_to:
            _, value = reader.read_up_to(filename_queue, BATCH)
        else:
            _, value = reader.read(filename_queue)
        batch = tf.train.shuffle_batch([value], BATCH, capacity=1000 + 3 * BATCH,
                                       min_after_dequeue=1000, num_threads=4, seed=1,
                                       enqueue_many=up_to, allow_smaller_final_batch=True)
        init = [tf.global_variables_initializer(), tf.local_variables_initializer()]
    with tf.Session(graph=g) as sess:
        sess.run(init)
        coord = tf.train.Coordinator()
        start = time.perf_counter()
        threads = tf.train.start_queue_runners(sess, coord)
        count = 0
        try:
            while True:
                values = sess.run(batch)
                count += len(values)
        except tf.errors.OutOfRangeError:
            pass
        elapsed = time.perf_counter() - start
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
    return count, elapsed


CASES = [
    (NAME, LABEL, False, {"target": 1.0}),
    (f"{NAME}_read_up_to", "the same with reader.read_up_to(128) and shuffle_batch("
     "enqueue_many=True)", True, {}),
]
directory = tempfile.mkdtemp(prefix="tfx_bench_tfrecord_")
try:
    with guarded(*(c[0] for c in CASES), label=LABEL):
        files, total = write_files(directory)
    for name, label, up_to, extra in CASES:
        with guarded(name, label=label, **extra):
            count, elapsed = run(files, up_to)
            if count != total:
                raise RuntimeError(f"read {count} records, wrote {total}")
            emit(name, count / elapsed, "records/s", "higher", label=label, **extra)
finally:
    shutil.rmtree(directory, ignore_errors=True)
