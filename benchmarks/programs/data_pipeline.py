"""tf.data input pipeline: records per second through a TFRecord -> parse -> batch pipeline.

20,000 tf.train.Examples (an int64 id, 16 floats, a short string) in 4 TFRecord files,
written beforehand (not timed) by the backend's own `tf.python_io.TFRecordWriter`. The
timed graph is the canonical TF1 tf.data pipeline:

    ds = (tf.data.TFRecordDataset(files)
          .map(parse_single_example, num_parallel_calls=4)
          .shuffle(1000, seed=1).batch(128).prefetch(2))
    next_batch = tf.data.make_one_shot_iterator(ds).get_next()

and the main thread fetches batches until OutOfRangeError. Figure: records fetched / wall
time from the first fetch to the last. A second, informational figure reads the raw records
only (TFRecordDataset -> batch(128) -> prefetch(2)). The record count can be scaled with
TFX_BENCH_RECORDS (default 20,000).

    python benchmarks/programs/data_pipeline.py --backend tensorflux|tensorflow
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

RECORDS = int(os.environ.get("TFX_BENCH_RECORDS", "20000"))
FILES = 4
BATCH = 128
NAME = "data_pipeline"
LABEL = (f"tf.data: {RECORDS:,} Examples, TFRecordDataset -> map(parse_single_example, "
         "4 parallel) -> shuffle(1000) -> batch(128) -> prefetch(2)")


def write_files(directory):
    rng = np.random.default_rng(0)
    files = []
    per_file = RECORDS // FILES
    for k in range(FILES):
        path = os.path.join(directory, f"part-{k:02d}.tfrecord")
        files.append(path)
        with tf.python_io.TFRecordWriter(path) as w:
            for i in range(k * per_file, (k + 1) * per_file):
                ex = tf.train.Example(features=tf.train.Features(feature={
                    "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                    "x": tf.train.Feature(float_list=tf.train.FloatList(
                        value=rng.standard_normal(16).tolist())),
                    "s": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"r%d" % i])),
                }))
                w.write(ex.SerializeToString())
    return files, per_file * FILES


def run(files, parse):
    features = {"id": tf.FixedLenFeature([], tf.int64),
                "x": tf.FixedLenFeature([16], tf.float32),
                "s": tf.FixedLenFeature([], tf.string)}
    g = tf.Graph()
    with g.as_default():
        ds = tf.data.TFRecordDataset(files)
        if parse:
            ds = ds.map(lambda r: tf.parse_single_example(r, features), num_parallel_calls=4)
            ds = ds.shuffle(1000, seed=1)
        ds = ds.batch(BATCH).prefetch(2)
        nxt = tf.data.make_one_shot_iterator(ds).get_next()
        ids = nxt["id"] if parse else nxt
    with tf.Session(graph=g) as sess:
        count = 0
        start = time.perf_counter()
        try:
            while True:
                count += len(sess.run(ids))
        except tf.errors.OutOfRangeError:
            pass
        elapsed = time.perf_counter() - start
    return count, elapsed


CASES = [
    (NAME, LABEL, True, {}),
    (f"{NAME}_raw", "the same reading raw records only: TFRecordDataset -> batch(128) -> "
     "prefetch(2)", False, {}),
]
directory = tempfile.mkdtemp(prefix="tfx_bench_data_")
try:
    with guarded(*(c[0] for c in CASES), label=LABEL):
        files, total = write_files(directory)
    for name, label, parse, extra in CASES:
        with guarded(name, label=label, **extra):
            count, elapsed = run(files, parse)
            if count != total:
                raise RuntimeError(f"read {count} records, wrote {total}")
            emit(name, count / elapsed, "records/s", "higher", label=label, **extra)
finally:
    shutil.rmtree(directory, ignore_errors=True)
