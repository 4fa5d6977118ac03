"""`tf.contrib.learn.datasets.base`: the containers and CSV readers of TF1's example data
sets (`Dataset`, `Datasets`, `load_csv_with_header`, `load_iris`, `maybe_download`).

Nothing is downloaded: `maybe_download` returns the file when it is already in
`work_directory` and otherwise raises, naming the file and where TF1 would have fetched it
from (TF1 fetched it with urllib; a program points `train_dir` at a folder holding it).
"""

from __future__ import annotations

import collections
import csv
import errno
import os

import numpy as np

from tensorflux.platform import gfile

Dataset = collections.namedtuple("Dataset", ["data", "target"])
Datasets = collections.namedtuple("Datasets", ["train", "validation", "test"])


def load_csv_with_header(filename, target_dtype, features_dtype, target_column=-1):
    """A Dataset from a CSV file whose first row is `n_samples,n_features,...` and whose
    other rows are the features with the target at `target_column`."""
    with gfile.GFile(filename) as csv_file:
        rows = csv.reader(csv_file)
        header = next(rows)
        n_samples, n_features = int(header[0]), int(header[1])
        data = np.zeros((n_samples, n_features), dtype=features_dtype)
        target = np.zeros((n_samples,), dtype=target_dtype)
        for i, row in enumerate(rows):
            target[i] = np.asarray(row.pop(target_column), dtype=target_dtype)
            data[i] = np.asarray(row, dtype=features_dtype)
    return Dataset(data=data, target=target)


def load_csv_without_header(filename, target_dtype, features_dtype, target_column=-1):
    """A Dataset from a CSV file of feature rows with the target at `target_column`."""
    data, target = [], []
    with gfile.GFile(filename) as csv_file:
        for row in csv.reader(csv_file):
            target.append(row.pop(target_column))
            data.append(np.asarray(row, dtype=features_dtype))
    return Dataset(data=np.array(data), target=np.array(target, dtype=target_dtype))


def shrink_csv(filename, ratio):
    """Writes every `ratio`-th row of `filename` (and its first) to `<name>_<ratio>.csv`."""
    root, ext = os.path.splitext(filename)
    with gfile.GFile(filename) as inp, gfile.GFile(f"{root}_{ratio}{ext}", "w") as out:
        writer = csv.writer(out)
        for i, row in enumerate(csv.reader(inp)):
            if i % ratio == 0:
                writer.writerow(row)


def _bundled_csv(name: str, data_path):
    if data_path is not None:
        return data_path
    try:  # TF1 shipped iris.csv; scikit-learn ships the same file (same header row)
        import sklearn.datasets
    except ImportError:
        sklearn = None
    if sklearn is not None:
        path = os.path.join(os.path.dirname(sklearn.datasets.__file__), "data", name)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(errno.ENOENT, f"tensorflux does not bundle {name}; pass "
                            "data_path= (a CSV with TF1's header row)", name)


def load_iris(data_path=None):
    """The iris data set (150 samples, 4 float features, int targets)."""
    return load_csv_with_header(_bundled_csv("iris.csv", data_path), target_dtype=np.int64,
                                features_dtype=np.float64)


def load_boston(data_path=None):
    """The Boston house prices (506 samples, 13 features, float targets): from `data_path`
    only (neither tensorflux nor scikit-learn bundles the file any more)."""
    return load_csv_with_header(_bundled_csv("boston_house_prices.csv", data_path),
                                target_dtype=np.float64, features_dtype=np.float64)


def maybe_download(filename, work_directory, source_url):
    """The path of `filename` in `work_directory` (created if missing).

    Raises:
      FileNotFoundError: the file is not there; tensorflux does not download it.
    """
    if not gfile.Exists(work_directory):
        gfile.MakeDirs(work_directory)
    filepath = os.path.join(work_directory, filename)
    if not gfile.Exists(filepath):
        raise FileNotFoundError(
            errno.ENOENT, f"{filename} is not in {work_directory!r} and tensorflux does not "
            f"download data sets (TF1 fetched it from {source_url}); put the file there",
            filepath)
    return filepath
