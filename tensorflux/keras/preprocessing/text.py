"""`tf.keras.preprocessing.text`: text_to_word_sequence and Keras's Tokenizer (word
counts, a frequency-ranked word index, texts and sequences to id lists and to
binary/count/freq/tfidf matrices)."""

from __future__ import annotations

from collections import OrderedDict, defaultdict

import numpy as np

__all__ = ["text_to_word_sequence", "Tokenizer"]

_FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'


def text_to_word_sequence(text, filters=_FILTERS, lower=True, split=" "):
    """The words of `text`: lowercased (`lower`), each character of `filters` made a
    separator, split on `split`, empty pieces dropped."""
    if lower:
        text = text.lower()
    text = text.translate(str.maketrans({c: split for c in filters}))
    return [w for w in text.split(split) if w]


class Tokenizer:
    """Keras's Tokenizer. `fit_on_texts` counts words (and the documents holding them);
    `word_index` ranks them by count, most frequent first, ties in first-seen order,
    from 1 (the `oov_token` first when given). Lookups keep ids below `num_words` (when
    set); others become the `oov_token`'s id, or are dropped without one."""

    def __init__(self, num_words=None, filters=_FILTERS, lower=True, split=" ",
                 char_level=False, oov_token=None, document_count=0):
        self.num_words = num_words
        self.filters = filters
        self.lower = lower
        self.split = split
        self.char_level = char_level
        self.oov_token = oov_token
        self.document_count = document_count
        self.word_counts = OrderedDict()
        self.word_docs = defaultdict(int)
        self.index_docs = defaultdict(int)
        self.word_index = {}
        self.index_word = {}

    def _words(self, text):
        if self.char_level or isinstance(text, list):
            if self.lower:
                text = ([t.lower() for t in text] if isinstance(text, list)
                        else text.lower())
            return text
        return text_to_word_sequence(text, self.filters, self.lower, self.split)

    def fit_on_texts(self, texts):
        for text in texts:
            self.document_count += 1
            seq = self._words(text)
            for w in seq:
                self.word_counts[w] = self.word_counts.get(w, 0) + 1
            for w in set(seq):
                self.word_docs[w] += 1
        ranked = sorted(self.word_counts.items(), key=lambda wc: -wc[1])
        vocab = ([self.oov_token] if self.oov_token is not None else []) + [
            w for w, _ in ranked]
        self.word_index = {w: i for i, w in enumerate(vocab, 1)}
        self.index_word = {i: w for w, i in self.word_index.items()}
        for w, c in self.word_docs.items():
            self.index_docs[self.word_index[w]] = c

    def fit_on_sequences(self, sequences):
        """Document counts by id (what tfidf needs) from id sequences."""
        self.document_count += len(sequences)
        for seq in sequences:
            for i in set(seq):
                self.index_docs[i] += 1

    def _lookup(self, seq, table):
        oov = self.word_index.get(self.oov_token) if self.oov_token is not None else None
        out = []
        for w in seq:
            i = self.word_index.get(w) if table is self.word_index else (
                w if w in self.index_word else None)
            if i is not None and not (self.num_words and i >= self.num_words):
                out.append(i if table is self.word_index else self.index_word[i])
            elif oov is not None:
                out.append(oov if table is self.word_index else self.index_word[oov])
        return out

    def texts_to_sequences_generator(self, texts):
        for text in texts:
            yield self._lookup(self._words(text), self.word_index)

    def texts_to_sequences(self, texts):
        return list(self.texts_to_sequences_generator(texts))

    def sequences_to_texts_generator(self, sequences):
        for seq in sequences:
            yield " ".join(self._lookup(seq, self.index_word))

    def sequences_to_texts(self, sequences):
        return list(self.sequences_to_texts_generator(sequences))

    def texts_to_matrix(self, texts, mode="binary"):
        return self.sequences_to_matrix(self.texts_to_sequences(texts), mode=mode)

    def sequences_to_matrix(self, sequences, mode="binary"):
        """A [len(sequences), num_words] float64 matrix: per id below num_words, 1
        (binary), its count, its count / the sequence's length (freq), or
        (1 + log count) * log(1 + documents / (1 + documents holding it)) (tfidf).

        Raises:
          ValueError: no `num_words` and nothing fitted; tfidf before any fit; an
            unknown mode."""
        if mode not in ("binary", "count", "tfidf", "freq"):
            raise ValueError(f"Unknown vectorization mode: {mode!r} (binary, count, tfidf "
                             "or freq)")
        num_words = self.num_words
        if not num_words:
            if not self.word_index:
                raise ValueError("Specify a dimension (`num_words` argument), or fit on "
                                 "some text data first.")
            num_words = len(self.word_index) + 1
        if mode == "tfidf" and not self.document_count:
            raise ValueError("Fit the Tokenizer on some data before using tfidf mode.")
        x = np.zeros((len(sequences), num_words))
        for row, seq in enumerate(sequences):
            if not len(seq):
                continue
            counts = defaultdict(int)
            for j in seq:
                if j < num_words:
                    counts[j] += 1
            for j, c in counts.items():
                if mode == "count":
                    x[row, j] = c
                elif mode == "freq":
                    x[row, j] = c / len(seq)
                elif mode == "binary":
                    x[row, j] = 1
                else:
                    x[row, j] = (1 + np.log(c)) * np.log(
                        1 + self.document_count / (1 + self.index_docs.get(j, 0)))
        return x
