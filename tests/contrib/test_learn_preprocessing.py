"""tf.contrib.learn.preprocessing: TF1's tokenizer, CategoricalVocabulary and
VocabularyProcessor (as cnn-text-classification-tf uses them), saved as JSON."""

import numpy as np
import pytest

from tensorflux.contrib import learn

pre = learn.preprocessing


@pytest.mark.parametrize("text,tokens", [
    ("Hello, world!", ["Hello", "world"]),
    ("it's a well-known NASA thing", ["it's", "a", "well-known", "NASA", "thing"]),
    ("CamelCase words", ["Camel", "Case", "words"]),
    ("USAToday 42x", ["USA", "Today", "42x"]),
    ("", []),
])
def test_tokenizer(text, tokens):
    assert list(pre.tokenizer([text])) == [tokens]


def test_fit_transform_pads_cuts_and_maps_unknowns_to_zero():
    vp = pre.VocabularyProcessor(4)
    got = np.array(list(vp.fit_transform(["a b c", "c d e f g"])))
    np.testing.assert_array_equal(got, [[1, 2, 3, 0], [3, 4, 5, 6]])
    assert got.dtype == np.int64 and len(vp.vocabulary_) == 8  # <UNK> + a..g
    np.testing.assert_array_equal(next(vp.transform(["zz a"])), [0, 1, 0, 0])
    assert list(vp.reverse([[1, 2, 0]])) == ["a b <UNK>"]


def test_min_frequency_keeps_words_seen_more_often_ranked_by_count():
    vp = pre.VocabularyProcessor(3, min_frequency=1)
    vp.fit(["x y y", "z z z x q"])
    # counts: z 3, x 2, y 2, q 1 -> q dropped (count <= 1); ties by name
    assert [vp.vocabulary_.reverse(i) for i in range(len(vp.vocabulary_))] == \
        ["<UNK>", "z", "x", "y"]
    np.testing.assert_array_equal(next(vp.transform(["q z y"])), [0, 1, 3])


def test_save_restore_round_trip_and_refuse_other_files(tmp_path):
    vp = pre.VocabularyProcessor(5)
    docs = ["the cat sat", "the dog ran far away"]
    want = np.array(list(vp.fit_transform(docs)))
    path = str(tmp_path / "vocab")
    vp.save(path)
    back = pre.VocabularyProcessor.restore(path)
    np.testing.assert_array_equal(np.array(list(back.transform(docs))), want)
    assert back.max_document_length == 5 and len(back.vocabulary_) == len(vp.vocabulary_)
    bad = tmp_path / "pickled"
    bad.write_bytes(b"\x80\x04\x95 not json")
    with pytest.raises(ValueError, match="not a VocabularyProcessor saved by tensorflux"):
        pre.VocabularyProcessor.restore(str(bad))
