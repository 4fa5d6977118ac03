"""Checkpoint I/O: `tf.train.Saver` saving and restoring 1 GiB of float32 variables.

Sixteen float32 variables of 16 Mi elements each (1 GiB) are saved once to a fresh
directory (`Saver.save(..., write_meta_graph=False)`) and restored once into a fresh
session, best of 2 rounds. The disk's own sequential speed is measured in the same run with
`dd` (1 GiB, 16 MiB blocks, best of 2): writing with `conv=fdatasync`, reading after the
file was dropped from the page cache.

Figures (GiB/s, higher is better):
  checkpoint_save          Saver.save as a program calls it. tensorflux fsyncs every file
                           before it commits the checkpoint; TensorFlow does not fsync, so
                           its figure is the speed of writing into the page cache.
  checkpoint_save_durable  Saver.save plus an fsync of the checkpoint's files afterwards:
                           the time until the checkpoint is on disk, on both backends.
  checkpoint_restore       Saver.restore with the checkpoint's files dropped from the page
                           cache first (fsync, then POSIX_FADV_DONTNEED), so they come from
                           the disk.
  disk_write_dd, disk_read_dd   dd's sequential speeds (the reference for the issue's
                           target: save and restore at >= 50% of them).

    python benchmarks/programs/checkpoint_io.py --backend tensorflux|tensorflow [--gib 1]
"""

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

from _bench import BACKEND, emit, guarded

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

GIB = float(sys.argv[sys.argv.index("--gib") + 1]) if "--gib" in sys.argv else 1.0
N_VARS = 16
ELEMENTS = int(GIB * 2**30 / 4 / N_VARS)
ROUNDS = 2
SIZE = f"{GIB:g} GiB of float32 in {N_VARS} variables"


def evict(paths):
    """Writes the files' dirty pages back and drops them from the page cache."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def dd_speeds(directory):
    """(write, read) GiB/s of dd on 1 GiB in `directory`."""
    path = os.path.join(directory, "dd.bin")
    count = max(1, int(64 * GIB))
    t = time.perf_counter()
    subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=16M", f"count={count}",
                    "conv=fdatasync"], check=True, capture_output=True)
    write = count * 16 / 1024 / (time.perf_counter() - t)
    evict([path])
    t = time.perf_counter()
    subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=16M"], check=True,
                   capture_output=True)
    read = count * 16 / 1024 / (time.perf_counter() - t)
    os.unlink(path)
    return write, read


def build():
    g = tf.Graph()
    with g.as_default():
        variables = [tf.Variable(tf.fill([ELEMENTS], float(i)), name=f"v{i}")
                     for i in range(N_VARS)]
        saver = tf.train.Saver(variables, max_to_keep=None)
        init = tf.global_variables_initializer()
        check = variables[-1][:4]
    return g, check, saver, init


def files_of(prefix):
    return glob.glob(prefix + ".*")


def one_round(directory, g, check, saver, init):
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    prefix = os.path.join(directory, "model")
    with tf.Session(graph=g) as sess:
        sess.run(init)
        t = time.perf_counter()
        saver.save(sess, prefix, write_meta_graph=False)
        save = time.perf_counter() - t
        for path in files_of(prefix):
            fd = os.open(path, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
        durable = time.perf_counter() - t
    evict(files_of(prefix))
    with tf.Session(graph=g) as sess:
        t = time.perf_counter()
        saver.restore(sess, prefix)
        restore = time.perf_counter() - t
        if float(sess.run(check)[0]) != N_VARS - 1:
            raise RuntimeError("restored the wrong values")
    return GIB / save, GIB / durable, GIB / restore


def main():
    base = tempfile.mkdtemp(prefix="tfx-ckpt-bench-", dir=os.environ.get("TFX_BENCH_DIR"))
    write = read = None
    try:
        with guarded("disk_write_dd", "disk_read_dd"):
            speeds = [dd_speeds(base) for _ in range(ROUNDS)]
            write, read = max(w for w, _ in speeds), max(r for _, r in speeds)
            emit("disk_write_dd", write, "GiB/s", "higher",
                 label="dd write, 1 GiB, conv=fdatasync (the disk's sequential speed)")
            emit("disk_read_dd", read, "GiB/s", "higher",
                 label="dd read, 1 GiB, page cache dropped first")
        names = ("checkpoint_save", "checkpoint_save_durable", "checkpoint_restore")
        labels = {"checkpoint_save": f"Saver.save, {SIZE} (best of {ROUNDS})",
                  "checkpoint_save_durable": f"Saver.save + fsync of its files, {SIZE}",
                  "checkpoint_restore": f"Saver.restore from disk (page cache dropped), {SIZE}"}
        with guarded(*names, target=1.0):
            g, check, saver, init = build()
            best = [0.0, 0.0, 0.0]
            for _ in range(ROUNDS):
                figures = one_round(os.path.join(base, "ckpt"), g, check, saver, init)
                best = [max(b, f) for b, f in zip(best, figures, strict=True)]
            for name, value in zip(names, best, strict=True):
                extra = {"label": labels[name], "target": 1.0}
                dd = read if name == "checkpoint_restore" else write
                if dd:
                    extra["note"] = (f"{value / dd:.0%} of dd's "
                                     f"{'read' if dd is read else 'write'} speed in this run")
                emit(name, value, "GiB/s", "higher", **extra)
    finally:
        shutil.rmtree(base, ignore_errors=True)


main()
