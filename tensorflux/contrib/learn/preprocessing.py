"""`tf.contrib.learn.preprocessing`: turning text into fixed-length id sequences.

- `tokenizer(documents)`: each document's tokens by TF1's regular expression (runs of
  capitals, capitalised words split at the next capital, and words of letters, digits,
  apostrophes and hyphens);
- `CategoricalVocabulary`: token -> id with "<UNK>" as 0, counts, `trim` by frequency,
  `freeze`;
- `VocabularyProcessor(max_document_length, min_frequency, vocabulary, tokenizer_fn)`:
  `fit`/`transform`/`fit_transform` (each document as an int64 array of
  `max_document_length` ids, 0-padded, cut at the length), `reverse`, `save`/`restore`.

`save` writes JSON (TensorFlow pickled the object; tensorflux reads and writes no pickle),
so a file saved by TensorFlow's VocabularyProcessor does not restore here; a custom
`tokenizer_fn` is not saved (restore takes it as an argument).
"""

from __future__ import annotations

import json
import re

import numpy as np

from tensorflux.io import gfile

__all__ = ["CategoricalVocabulary", "VocabularyProcessor", "tokenizer"]

TOKENIZER_RE = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Z][a-z]+(?=[A-Z])|[\'\w\-]+", re.UNICODE)


def tokenizer(iterator):
    """The tokens of each document of `iterator`."""
    for value in iterator:
        yield TOKENIZER_RE.findall(value)


class CategoricalVocabulary:
    """Ids for categories, "<UNK>" (or `unknown_token`) being 0. While not frozen, `get` of a
    new category adds it; once frozen, unknown categories are 0."""

    def __init__(self, unknown_token="<UNK>", support_reverse=True):
        self._unknown_token = unknown_token
        self._mapping = {unknown_token: 0}
        self._support_reverse = support_reverse
        self._reverse_mapping = [unknown_token] if support_reverse else None
        self._freq = {}
        self._freeze = False

    def __len__(self) -> int:
        return len(self._mapping)

    def freeze(self, freeze=True) -> None:
        self._freeze = freeze

    def get(self, category) -> int:
        if category not in self._mapping:
            if self._freeze:
                return 0
            self._mapping[category] = len(self._mapping)
            if self._support_reverse:
                self._reverse_mapping.append(category)
            self._freq[category] = 0
        return self._mapping[category]

    def add(self, category, count=1) -> None:
        category_id = self.get(category)
        if category_id > 0:
            self._freq[category] = self._freq.get(category, 0) + count

    def trim(self, min_frequency, max_frequency=-1) -> None:
        """Keeps the categories counted more than `min_frequency` times (and fewer than
        `max_frequency`, when positive), renumbered by falling count, then by name."""
        ranked = sorted(sorted(self._freq.items(), key=lambda x: (isinstance(x[0], str), x[0])),
                        key=lambda x: x[1], reverse=True)
        self._mapping = {self._unknown_token: 0}
        if self._support_reverse:
            self._reverse_mapping = [self._unknown_token]
        kept = {}
        for category, count in ranked:
            if 0 < max_frequency <= count:
                continue
            if count <= min_frequency:
                break
            self._mapping[category] = len(self._mapping)
            if self._support_reverse:
                self._reverse_mapping.append(category)
            kept[category] = count
        self._freq = kept

    def reverse(self, class_id):
        if not self._support_reverse:
            raise ValueError("This vocabulary wasn't initialized with support_reverse to "
                             "support reverse() function.")
        return self._reverse_mapping[class_id]

    def _to_json(self) -> dict:
        return {"unknown_token": self._unknown_token, "support_reverse": self._support_reverse,
                "mapping": list(self._mapping.items()), "freq": list(self._freq.items()),
                "freeze": self._freeze}

    @classmethod
    def _from_json(cls, d: dict) -> CategoricalVocabulary:
        v = cls(d["unknown_token"], d["support_reverse"])
        v._mapping = dict(d["mapping"])
        if v._support_reverse:
            v._reverse_mapping = [None] * len(v._mapping)
            for category, i in v._mapping.items():
                v._reverse_mapping[i] = category
        v._freq = dict(d["freq"])
        v._freeze = d["freeze"]
        return v


class VocabularyProcessor:
    """Maps documents to sequences of word ids of length `max_document_length`."""

    _FORMAT = "tensorflux.VocabularyProcessor/1"

    def __init__(self, max_document_length, min_frequency=0, vocabulary=None,
                 tokenizer_fn=None):
        self.max_document_length = max_document_length
        self.min_frequency = min_frequency
        self.vocabulary_ = vocabulary if vocabulary is not None else CategoricalVocabulary()
        self._tokenizer = tokenizer_fn or tokenizer

    def fit(self, raw_documents, unused_y=None):
        """Adds every token of the documents to the vocabulary, trims it by
        `min_frequency`, and freezes it; returns self."""
        for tokens in self._tokenizer(raw_documents):
            for token in tokens:
                self.vocabulary_.add(token)
        if self.min_frequency > 0:
            self.vocabulary_.trim(self.min_frequency)
        self.vocabulary_.freeze()
        return self

    def fit_transform(self, raw_documents, unused_y=None):
        self.fit(raw_documents)
        return self.transform(raw_documents)

    def transform(self, raw_documents):
        """Yields each document as an int64 array of `max_document_length` ids."""
        for tokens in self._tokenizer(raw_documents):
            ids = np.zeros(self.max_document_length, np.int64)
            for i, token in enumerate(tokens[:self.max_document_length]):
                ids[i] = self.vocabulary_.get(token)
            yield ids

    def reverse(self, documents):
        """Yields each id sequence as its words joined by spaces."""
        for item in documents:
            yield " ".join(self.vocabulary_.reverse(class_id) for class_id in item)

    def save(self, filename) -> None:
        """Writes the processor as JSON (not TensorFlow's pickle)."""
        state = {"format": self._FORMAT, "max_document_length": self.max_document_length,
                 "min_frequency": self.min_frequency,
                 "vocabulary": self.vocabulary_._to_json()}
        with gfile.GFile(filename, "w") as f:
            f.write(json.dumps(state))

    @classmethod
    def restore(cls, filename, tokenizer_fn=None) -> VocabularyProcessor:
        """A processor saved by `save`.

        Raises:
          ValueError: the file is not a tensorflux VocabularyProcessor (e.g. TensorFlow's
            pickle, which tensorflux does not read).
        """
        with gfile.GFile(filename, "rb") as f:
            data = f.read()
        try:
            state = json.loads(data)
            if state.get("format") != cls._FORMAT:
                raise ValueError
        except (ValueError, AttributeError, UnicodeDecodeError):
            raise ValueError(f"{filename} is not a VocabularyProcessor saved by tensorflux "
                             f"(TensorFlow's are pickles, which tensorflux does not load)") \
                from None
        out = cls(state["max_document_length"], state["min_frequency"],
                  CategoricalVocabulary._from_json(state["vocabulary"]), tokenizer_fn)
        return out
