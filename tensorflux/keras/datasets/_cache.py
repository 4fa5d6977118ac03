"""Reading the Keras datasets' cached files. Plain arrays are read with allow_pickle off;
the object arrays of imdb.npz/reuters.npz (lists of word ids) are unpickled by a reader
that builds only NumPy arrays, dtypes and Python containers and refuses every other class,
so a cached file runs no code."""

from __future__ import annotations

import io
import pickle
import zipfile

import numpy as np

from tensorflux.keras.utils import get_file

_BASE = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"

# (module, name) pairs a dataset's pickle may name: NumPy's array and scalar
# reconstructors under both of NumPy's module names, and the codec function protocol-2
# pickles written by Python 3 use for bytes; nothing that runs code.
_ALLOWED = {(m, n) for m in ("numpy.core.multiarray", "numpy._core.multiarray")
            for n in ("_reconstruct", "scalar")} | {
    ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode")}


class _DataUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(
                f"a cached dataset file names {module}.{name}: tensorflux reads only NumPy "
                "arrays and Python lists from dataset files")
        return super().find_class(module, name)


def _read_npy(raw):
    """The array of one .npy member, object arrays through `_DataUnpickler`."""
    f = io.BytesIO(raw)
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
    else:
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    if not dtype.hasobject:
        return np.load(io.BytesIO(raw), allow_pickle=False)
    del shape, fortran
    return _DataUnpickler(f, encoding="latin1").load()


def load_npz(fname, keys, origin=None):
    """The arrays `keys` of the cached file `fname` (object arrays included)."""
    path = get_file(fname, origin=origin or _BASE + fname)
    with zipfile.ZipFile(path) as z:
        return [_read_npy(z.read(k + ".npy")) for k in keys]


def unavailable(name):
    """A `load_data` for a dataset that is not kept as one plain .npz by Keras."""

    def load_data(*args, **kwargs):
        """Raises:
          FileNotFoundError: always (no network here, and the archive is not read)."""
        raise FileNotFoundError(f"tensorflux.keras.datasets.{name} is not available: "
                                "tensorflux does not download, and reads only the .npz "
                                "datasets (mnist, boston_housing, imdb, reuters, cifar10) from "
                                "~/.keras/datasets.")

    return load_data


def index_words(parts, num_words, skip_top, maxlen, start_char, oov_char, index_from,
                empty_error=True):
    """Keras's word-id preparation shared by imdb and reuters, over [(lists, labels)]
    parts (imdb's train and test halves): ids shifted by `index_from` after a
    `start_char`, sequences of `maxlen` ids or more dropped within each part, ids outside
    [skip_top, num_words) (num_words defaults to the largest id of all parts) replaced by
    `oov_char`, or dropped when it is None. Returns the parts as [(lists, labels)].

    Raises:
      ValueError: `maxlen` leaves a part empty (when `empty_error`)."""
    out = []
    for xs, labels in parts:
        if start_char is not None:
            xs = [[start_char] + [w + index_from for w in x] for x in xs]
        elif index_from:
            xs = [[w + index_from for w in x] for x in xs]
        if maxlen:
            keep = [i for i, x in enumerate(xs) if len(x) < maxlen]
            xs, labels = [xs[i] for i in keep], np.asarray(labels)[keep]
            if not xs and empty_error:
                raise ValueError(f"After filtering for sequences shorter than maxlen="
                                 f"{maxlen}, no sequence was kept. Increase maxlen.")
        out.append((xs, labels))
    if not num_words:
        num_words = max(max(x) for xs, _ in out for x in xs)
    if oov_char is not None:
        return [([[w if skip_top <= w < num_words else oov_char for w in x] for x in xs], y)
                for xs, y in out]
    return [([[w for w in x if skip_top <= w < num_words] for x in xs], y) for xs, y in out]


def object_array(lists):
    """A 1-D object array of the lists (np.array would make a 2-D array of equal ones)."""
    out = np.empty(len(lists), dtype=object)
    out[:] = [list(x) for x in lists]
    return out
