"""`tf.keras.datasets.imdb` from the cached imdb.npz and imdb_word_index.json."""

import json

import numpy as np

from tensorflux.keras.datasets._cache import index_words, load_npz, object_array
from tensorflux.keras.utils import get_file

_ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"


def load_data(path="imdb.npz", num_words=None, skip_top=0, maxlen=None, seed=113,
              start_char=1, oov_char=2, index_from=3):
    """((x_train, y_train), (x_test, y_test)) as tf_keras builds them: each half
    shuffled with `seed`, word ids shifted by `index_from` after a `start_char`, reviews
    of `maxlen` words or more dropped (in each half), ids outside [skip_top, num_words)
    made `oov_char`. x arrays are 1-D object arrays of lists.

    Raises:
      FileNotFoundError: the file is not cached (tensorflux does not download).
      ValueError: `maxlen` drops every review of a half."""
    x_train, y_train, x_test, y_test = load_npz(
        path, ["x_train", "y_train", "x_test", "y_test"], origin=_ORIGIN + "imdb.npz")
    rng = np.random.RandomState(seed)
    idx = np.arange(len(x_train))
    rng.shuffle(idx)
    x_train, y_train = x_train[idx], y_train[idx]
    idx = np.arange(len(x_test))
    rng.shuffle(idx)
    x_test, y_test = x_test[idx], y_test[idx]
    (xa, ya), (xb, yb) = index_words([(list(x_train), y_train), (list(x_test), y_test)],
                                     num_words, skip_top, maxlen, start_char, oov_char,
                                     index_from)
    return (object_array(xa), ya), (object_array(xb), yb)


def get_word_index(path="imdb_word_index.json"):
    """The word -> rank dictionary from the cached imdb_word_index.json.

    Raises:
      FileNotFoundError: the file is not cached."""
    with open(get_file(path, origin=_ORIGIN + "imdb_word_index.json")) as f:
        return json.load(f)
