"""`tf.io.gfile`: the file API under its lower-case names (the TF1 `tf.gfile` names are in
tensorflux/platform/gfile.py)."""

import os

from tensorflux.platform import gfile as _gfile

GFile = _gfile.GFile
copy = _gfile.Copy
exists = _gfile.Exists
glob = _gfile.Glob
isdir = _gfile.IsDirectory
join = os.path.join
listdir = _gfile.ListDirectory
makedirs = _gfile.MakeDirs
mkdir = _gfile.MkDir
remove = _gfile.Remove
rename = _gfile.Rename
rmtree = _gfile.DeleteRecursively
stat = _gfile.Stat
walk = _gfile.Walk
