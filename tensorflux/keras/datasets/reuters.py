"""`tf.keras.datasets.reuters` from the cached reuters.npz and reuters_word_index.json."""

import json

import numpy as np

from tensorflux.keras.datasets._cache import index_words, load_npz, object_array
from tensorflux.keras.utils import get_file

_ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"


def load_data(path="reuters.npz", num_words=None, skip_top=0, maxlen=None, test_split=0.2,
              seed=113, start_char=1, oov_char=2, index_from=3):
    """((x_train, y_train), (x_test, y_test)) as Keras builds them: the newswires
    shuffled with `seed`, word ids prepared as in `imdb.load_data` (wires of `maxlen`
    words or more dropped), the last `test_split` of them the test set.

    Raises:
      FileNotFoundError: the file is not cached (tensorflux does not download)."""
    xs, labels = load_npz(path, ["x", "y"], origin=_ORIGIN + "reuters.npz")
    rng = np.random.RandomState(seed)
    idx = np.arange(len(xs))
    rng.shuffle(idx)
    ((xs, labels),) = index_words([(list(xs[idx]), labels[idx])], num_words, skip_top,
                                  maxlen, start_char, oov_char, index_from,
                                  empty_error=False)
    cut = int(len(xs) * (1 - test_split))
    return ((object_array(xs[:cut]), labels[:cut]), (object_array(xs[cut:]), labels[cut:]))


def get_word_index(path="reuters_word_index.json"):
    """The word -> index dictionary from the cached reuters_word_index.json.

    Raises:
      FileNotFoundError: the file is not cached."""
    with open(get_file(path, origin=_ORIGIN + "reuters_word_index.json")) as f:
        return json.load(f)
