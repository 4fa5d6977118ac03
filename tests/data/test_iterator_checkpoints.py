"""tf.data.experimental.make_saveable_from_iterator: an iterator's position saved by
tf.train.Saver and restored (SerializeIterator / DeserializeIterator,
kernels/dataset_state.py), in the same session, a fresh one, and a fresh graph."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g

# Each pipeline: (name, source building `ds`, feed of its placeholder or None).
PIPELINES = [
    ("range_map_batch", "ds = tf.data.Dataset.range(20).map(lambda x: x * 2).batch(3)"),
    ("shuffle_seeded_repeat",
     "ds = tf.data.Dataset.range(7).shuffle(4, seed=3).repeat(3)"),
    ("shuffle_fixed", "ds = tf.data.Dataset.range(9).shuffle(5, seed=1, "
                      "reshuffle_each_iteration=False).repeat(2)"),
    ("slices_zip_filter",
     "ds = tf.data.Dataset.zip((tf.data.Dataset.from_tensor_slices(np.arange(12) * 3), "
     "tf.data.Dataset.range(12))).filter(lambda a, b: b % 3 > 0)"),
    ("interleave", "ds = tf.data.Dataset.range(1, 5).interleave("
                   "lambda x: tf.data.Dataset.range(x).map(lambda y: y * 10 + x), "
                   "cycle_length=2, block_length=1)"),
    ("padded_prefetch", "ds = tf.data.Dataset.range(1, 17).map(lambda x: tf.fill([x], x))"
                        ".padded_batch(2, [None]).prefetch(2)"),
    ("strings_take_skip", "ds = tf.data.Dataset.from_tensor_slices([b'a', b'bc', b'def', "
                          "b'g', b'hi', b'j']).skip(1).take(4).repeat(2)"),
]

PROGRAM = """
{source}
it = tf.data.make_initializable_iterator(ds)
nxt = it.get_next()
tf.add_to_collection(tf.GraphKeys.SAVEABLE_OBJECTS,
                     tf.data.experimental.make_saveable_from_iterator(it))
saver = tf.train.Saver()
def plain(v):
    return [plain(x) for x in v] if isinstance(v, (tuple, list)) else np.asarray(v).tolist()
with tf.Session() as sess:
    sess.run(it.initializer)
    before = [plain(sess.run(nxt)) for _ in range(4)]
    path = saver.save(sess, {path!r})
    after = [plain(sess.run(nxt)) for _ in range(3)]
    saver.restore(sess, path)
    again = [plain(sess.run(nxt)) for _ in range(3)]
"""


def _run_ours(source: str, path: str):
    scope: dict = {"tf": tf, "np": np}
    exec(PROGRAM.format(source=source, path=path), scope)
    return scope


@pytest.mark.parametrize("name,source", PIPELINES)
def test_restore_continues_after_the_saved_position(graph, tmp_path, name, source):
    scope = _run_ours(source, str(tmp_path / "ckpt"))
    assert scope["again"] == scope["after"]
    # A fresh Session (its iterator never initialized) restores the same position.
    with tf.Session() as sess:
        scope["saver"].restore(sess, scope["path"])
        assert [scope["plain"](sess.run(scope["nxt"])) for _ in range(3)] == scope["after"]


@pytest.mark.oracle
@pytest.mark.parametrize("name,source", [p for p in PIPELINES if p[0] != "padded_prefetch"])
def test_elements_around_the_saved_position_are_tensorflows(graph, tmp_path, name, source):
    want = run_tf("import numpy as np\n" + PROGRAM.format(
        source=source, path=str(tmp_path / "theirs")) + "result = [before, after, again]")
    scope = _run_ours(source, str(tmp_path / "ours"))
    plain = _b64 if name.startswith("strings") else (lambda v: v)
    assert [scope["before"], scope["after"], scope["again"]] == plain(want)


def _b64(v):
    import base64

    if isinstance(v, dict) and "__b64__" in v:
        return base64.b64decode(v["__b64__"])
    return [_b64(x) for x in v] if isinstance(v, list) else v


def test_a_fresh_graph_restores_from_the_meta_graph(graph, tmp_path):
    p = tf.placeholder(tf.int64, [None])
    it = tf.data.make_initializable_iterator(
        tf.data.Dataset.from_tensor_slices(p).shuffle(10).map(lambda x: x + 100))
    nxt = it.get_next()
    graph.add_to_collection(tf.GraphKeys.SAVEABLE_OBJECTS,
                            tf.data.experimental.make_saveable_from_iterator(it))
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(it.initializer, {p: np.arange(30)})
        seen = [sess.run(nxt) for _ in range(12)]
        path = saver.save(sess, str(tmp_path / "ckpt"))
        rest = [sess.run(nxt) for _ in range(18)]
    assert sorted(seen + rest) == list(range(100, 130))
    with tf.Graph().as_default():
        restorer = tf.train.import_meta_graph(path + ".meta")
        nxt = tf.get_default_graph().get_tensor_by_name(nxt.name)
        with tf.Session() as sess:
            restorer.restore(sess, path)  # no feed: the slices are in the checkpoint
            assert [sess.run(nxt) for _ in range(18)] == rest
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(nxt)


def test_one_shot_and_reinitializable_iterators(graph, tmp_path):
    one_shot = tf.data.make_one_shot_iterator(tf.data.Dataset.range(10).map(lambda x: -x))
    it = tf.data.Iterator.from_structure(tf.int64, [])
    init = it.make_initializer(tf.data.Dataset.range(5, 15))
    a, b = one_shot.get_next(), it.get_next()
    saver = tf.train.Saver([tf.data.experimental.make_saveable_from_iterator(x)
                            for x in (one_shot, it)])
    with tf.Session() as sess:
        sess.run(init)
        sess.run([a, b])
        sess.run([a, b])
        path = saver.save(sess, str(tmp_path / "ckpt"))
        assert sess.run([a, b]) == [-2, 7]
        saver.restore(sess, path)
        assert sess.run([a, b]) == [-2, 7]


def test_a_position_past_the_end_restores_to_the_end(graph, tmp_path):
    it = tf.data.make_initializable_iterator(tf.data.Dataset.range(3))
    nxt = it.get_next()
    saver = tf.train.Saver([tf.data.experimental.make_saveable_from_iterator(it)])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="not been initialized"):
            saver.save(sess, str(tmp_path / "early"))
        sess.run(it.initializer)
        for _ in range(3):
            sess.run(nxt)
        path = saver.save(sess, str(tmp_path / "ckpt"))
        sess.run(it.initializer)
        assert sess.run(nxt) == 0
        saver.restore(sess, path)
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(nxt)


STATEFUL = [
    ("py_func", "tf.data.Dataset.range(5).map(lambda x: tf.py_func(lambda v: v, [x], tf.int64))",
     "PyFunc is stateful."),
    # TF names the generator's EagerPyFunc, or PyFunc after some other programs ran.
    ("generator", "tf.data.Dataset.from_generator(lambda: iter(range(5)), tf.int64)",
     "PyFunc is stateful."),
    ("random", "tf.data.Dataset.range(5).map(lambda x: x + tf.cast(tf.random.uniform([]) * 0, "
               "tf.int64))", "RandomUniform is stateful."),
]


@pytest.mark.parametrize("name,source,message", STATEFUL)
def test_external_state_policies(graph, tmp_path, caplog, name, source, message):
    it = tf.data.make_initializable_iterator(eval(source, {"tf": tf}))
    nxt = it.get_next()
    policy = tf.data.experimental.ExternalStatePolicy
    savers = {p: tf.train.Saver([tf.data.experimental.make_saveable_from_iterator(
        it, external_state_policy=p)]) for p in (None, policy.WARN, policy.IGNORE)}
    with tf.Session() as sess:
        sess.run(it.initializer)
        sess.run(nxt)
        with pytest.raises(tf.errors.FailedPreconditionError, match=message):
            savers[None].save(sess, str(tmp_path / "fail"))
        with caplog.at_level(logging.WARNING, logger="tensorflux"):
            path = savers[policy.WARN].save(sess, str(tmp_path / "warn"))
        assert message.split()[0] in caplog.text
        savers[policy.IGNORE].save(sess, str(tmp_path / "ignore"))
        expected = sess.run(nxt)
        savers[policy.IGNORE].restore(sess, path)
        assert sess.run(nxt) == expected


@pytest.mark.oracle
def test_external_state_messages_are_tensorflows(graph, tmp_path):
    program = """
got = []
for source in {sources!r}:
    tf.reset_default_graph()
    it = tf.data.make_initializable_iterator(eval(source))
    saver = tf.train.Saver([tf.data.experimental.make_saveable_from_iterator(it)])
    with tf.Session() as sess:
        sess.run(it.initializer)
        try:
            saver.save(sess, {path!r})
            got.append(None)
        except tf.errors.FailedPreconditionError as e:
            got.append(e.message)
"""
    sources = [s for _, s, _ in STATEFUL]
    want = run_tf(program.format(sources=sources, path=str(tmp_path / "t")) +
                  "result = got")
    assert all(m in w for (_, _, m), w in zip(STATEFUL, want, strict=True))
