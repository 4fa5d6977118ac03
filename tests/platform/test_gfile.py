"""`tf.gfile` on local files (tensorflux/platform/gfile.py): results, error classes and
messages against TensorFlow's."""

from __future__ import annotations

import os

import pytest

import tensorflux as tf
from tests.oracle import run_both

# One program, run under TensorFlow and under tensorflux, each in a fresh temporary
# directory (written as ROOT in the results).
PROGRAM = r'''
import os, tempfile
gfile = tf.gfile
d = tempfile.mkdtemp()

def outcome(fn):
    try:
        r = fn()
    except tf.errors.OpError as e:
        return [type(e).__name__, e.message.replace(d, "ROOT")]
    if isinstance(r, list):
        return ["ok", [x.replace(d, "ROOT") if isinstance(x, str) else x for x in r]]
    return ["ok", r if r is None or isinstance(r, (bool, int, str, bytes)) else type(r).__name__]

result = {}
cases = [
    ("makedirs", lambda: gfile.MakeDirs(d + "/a/b")),
    ("makedirs_again", lambda: gfile.MakeDirs(d + "/a/b")),
    ("mkdir_existing", lambda: gfile.MkDir(d + "/a")),
    ("mkdir_no_parent", lambda: gfile.MkDir(d + "/x/y")),
    ("write", lambda: gfile.GFile(d + "/a/f.txt", "w").write("hello\nworld\n")),
    ("read_missing", lambda: gfile.GFile(d + "/missing").read()),
    ("open_missing_lazily", lambda: gfile.GFile(d + "/missing") is not None),
    ("write_no_dir", lambda: gfile.GFile(d + "/nodir/x", "w").write("x")),
    ("read_dir", lambda: gfile.GFile(d + "/a").read()),
    ("bad_mode", lambda: gfile.GFile(d + "/a/f.txt", "x")),
    ("read_write_only", lambda: gfile.GFile(d + "/a/w", "w").read()),
    ("write_read_only", lambda: gfile.GFile(d + "/a/f.txt").write("x")),
    ("exists", lambda: [gfile.Exists(d + "/a/f.txt"), gfile.Exists(d + "/zz")]),
    ("isdir", lambda: [gfile.IsDirectory(d + "/a"), gfile.IsDirectory(d + "/a/f.txt")]),
    ("stat", lambda: [gfile.Stat(d + "/a/f.txt").length, gfile.Stat(d + "/a").is_directory,
                      gfile.Stat(d + "/a/f.txt").mtime_nsec > 10 ** 18]),
    ("stat_missing", lambda: gfile.Stat(d + "/zz")),
    ("listdir", lambda: sorted(gfile.ListDirectory(d + "/a"))),
    ("listdir_missing", lambda: gfile.ListDirectory(d + "/zz")),
    ("listdir_file", lambda: gfile.ListDirectory(d + "/a/f.txt")),
    ("glob", lambda: gfile.Glob(d + "/a/*")),
    ("glob_nested", lambda: gfile.Glob(d + "/*/f.*") + gfile.Glob(d + "/q*")),
    ("copy", lambda: gfile.Copy(d + "/a/f.txt", d + "/a/g.txt")),
    ("copy_exists", lambda: gfile.Copy(d + "/a/f.txt", d + "/a/g.txt")),
    ("copy_overwrite", lambda: gfile.Copy(d + "/a/f.txt", d + "/a/g.txt", overwrite=True)),
    ("copy_missing", lambda: gfile.Copy(d + "/a/zz", d + "/a/h.txt")),
    ("rename_exists", lambda: gfile.Rename(d + "/a/g.txt", d + "/a/f.txt")),
    ("rename_overwrite", lambda: gfile.Rename(d + "/a/g.txt", d + "/a/f.txt", overwrite=True)),
    ("rename_missing", lambda: gfile.Rename(d + "/a/zz", d + "/a/q")),
    ("remove_missing", lambda: gfile.Remove(d + "/a/zz")),
    ("remove_dir", lambda: gfile.Remove(d + "/a/b")),
    ("makedirs_under_file", lambda: gfile.MakeDirs(d + "/a/f.txt/x")),
    ("walk", lambda: [[t.replace(d, "ROOT"), sorted(s), sorted(f)]
                      for t, s, f in gfile.Walk(d)]),
    ("walk_bottom_up", lambda: [t.replace(d, "ROOT") for t, _, _ in gfile.Walk(d, False)]),
    ("walk_missing", lambda: list(gfile.Walk(d + "/zz"))),
    ("delete_missing", lambda: gfile.DeleteRecursively(d + "/zz")),
    ("delete_file", lambda: gfile.DeleteRecursively(d + "/a/f.txt")),
    ("delete_tree", lambda: [gfile.DeleteRecursively(d + "/a"), gfile.Exists(d + "/a")]),
]
for key, fn in cases:
    result[key] = outcome(fn)

with gfile.GFile(d + "/t", "w") as f:
    f.write("héllo\nwörld\nend")
with gfile.GFile(d + "/t", "a") as f:
    f.write(b"!\n")
with gfile.GFile(d + "/t") as f:
    result["text"] = [f.read(3), f.tell(), f.readline(), f.readlines(), f.size(), f.mode]
    f.seek(1)
    result["seek"] = [f.read(2), f.tell()]
    f.seek(0, 2)
    result["seek_end"] = [f.tell(), f.read()]
with gfile.GFile(d + "/t", "rb") as f:
    result["bytes"] = [f.read(4), list(f)]
result["iter"] = list(gfile.Open(d + "/t"))
result["fast"] = gfile.FastGFile(d + "/t", "rb").read()
'''


@pytest.fixture(scope="module")
def both():
    return run_both(PROGRAM, tf)


@pytest.mark.oracle
def test_gfile_matches_tensorflow(both):
    ours, theirs = both
    assert set(ours) == set(theirs)
    differ = {k: (ours[k], theirs[k]) for k in theirs if _plain(ours[k]) != theirs[k]}
    assert not differ


def _plain(value):
    """Our results as they come back from TensorFlow's side through JSON."""
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_permission_denied(tmp_path):
    path = tmp_path / "secret"
    path.write_text("x")
    path.chmod(0)
    with pytest.raises(tf.errors.PermissionDeniedError, match="Permission denied"):
        tf.gfile.GFile(str(path)).read()


def test_write_modes_and_lazy_creation(tmp_path):
    path = str(tmp_path / "f")
    f = tf.gfile.GFile(path, "w")
    assert not tf.gfile.Exists(path)  # opened on the first write, as TensorFlow's
    f.close()
    with tf.gfile.GFile(path, "w") as f:
        f.write("ab")
    with tf.gfile.GFile(path, "a+") as f:
        f.write("c")
    with tf.gfile.GFile(path, "r+") as f:
        assert f.read() == "abc"
    assert tf.gfile.Stat(path).length == 3
    assert isinstance(tf.gfile.FastGFile(path), tf.gfile.GFile)
