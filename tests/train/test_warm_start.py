"""tf.train.init_from_checkpoint, tf.train.warm_start and VocabInfo: one TF1 program run
here and (with the oracle) under TensorFlow 2.21, whose values and error messages must
agree; the expected values are also written out below from the checkpoint's contents."""

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

PROGRAM = r'''
def program(d):
    import os
    out = {}

    def err(f):
        try:
            f()
        except ValueError as e:
            return str(e)
        return None

    def values(*vs):
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            return [np.asarray(s.run(tf.convert_to_tensor(v))).tolist() for v in vs]

    ck = os.path.join(d, "ck")
    with open(os.path.join(d, "old.txt"), "w") as f:
        f.write("a\nb\nc\nd\n")
    with open(os.path.join(d, "new.txt"), "w") as f:
        f.write("c\nx\na\n")
    with open(os.path.join(d, "cols.txt"), "w") as f:
        f.write("x\nc\nq\n")
    with tf.Graph().as_default():
        with tf.variable_scope("old"):
            tf.get_variable("emb", initializer=np.arange(12, dtype=np.float32).reshape(4, 3))
            tf.get_variable("w", initializer=np.arange(6, dtype=np.float32).reshape(2, 3))
        tf.get_variable("top", initializer=np.float32([5, 6]))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            tf.train.Saver().save(s, ck)

    # init_from_checkpoint: scope to scope, one name, a Variable, partitioned targets.
    with tf.Graph().as_default():
        with tf.variable_scope("new"):
            e = tf.get_variable("emb", shape=[4, 3], initializer=tf.zeros_initializer())
            w = tf.get_variable("w", shape=[2, 3], initializer=tf.zeros_initializer())
        t = tf.get_variable("t", shape=[2], initializer=tf.zeros_initializer())
        p = tf.get_variable("p", shape=[4, 3], initializer=tf.zeros_initializer(),
                            partitioner=tf.fixed_size_partitioner(3))
        other = tf.Variable(np.zeros([2, 3], np.float32), name="plain")
        untouched = tf.get_variable("u", shape=[2], initializer=tf.ones_initializer())
        tf.train.init_from_checkpoint(d, {"old/": "new/", "top": "t", "old/emb": "p"})
        tf.train.init_from_checkpoint(ck, [("old/w", other)])
        out["init"] = values(e, w, t, p, other, untouched)
    with tf.Graph().as_default():
        with tf.variable_scope("deep"):
            with tf.variable_scope("old"):
                a = tf.get_variable("emb", shape=[4, 3])
                b = tf.get_variable("w", shape=[2, 3])
            c = tf.get_variable("top", shape=[2])
        tf.train.init_from_checkpoint(ck, {"/": "deep/"})
        out["root"] = values(a, b, c)
    with tf.Graph().as_default():
        with tf.variable_scope("old"):
            tf.get_variable("emb", shape=[4, 3])
            tf.get_variable("zz", shape=[4, 3])
        out["err_missing_in_scope"] = err(lambda: tf.train.init_from_checkpoint(
            ck, {"old/": "old/"}))
        out["err_shape"] = err(lambda: tf.train.init_from_checkpoint(ck, {"old/w": "old/emb"}))
        out["err_missing"] = err(lambda: tf.train.init_from_checkpoint(
            ck, {"old/nope": "old/emb"}))
        out["err_scope_to_name"] = err(lambda: tf.train.init_from_checkpoint(
            ck, {"old/emb": "nosuch/"}))

    # warm_start: vocabularies on axis 0 (OOV buckets, a backup initializer), axis 1,
    # a partitioned variable, a renamed variable, a cut old vocabulary.
    with tf.Graph().as_default():
        with tf.variable_scope("old"):
            e = tf.get_variable("emb", shape=[5, 3], initializer=tf.constant_initializer(-1))
        w2 = tf.get_variable("w2", shape=[2, 5], initializer=tf.constant_initializer(-1))
        rows = tf.train.VocabInfo(new_vocab=os.path.join(d, "new.txt"), new_vocab_size=3,
                                  num_oov_buckets=2, old_vocab=os.path.join(d, "old.txt"),
                                  backup_initializer=tf.random_uniform_initializer(7.0, 7.0))
        cols = tf.train.VocabInfo(new_vocab=os.path.join(d, "new.txt"), new_vocab_size=3,
                                  num_oov_buckets=2, old_vocab=os.path.join(d, "cols.txt"),
                                  axis=1)
        tf.train.warm_start(ck, vars_to_warm_start=".*",
                            var_name_to_vocab_info={"old/emb": rows, "w2": cols},
                            var_name_to_prev_var_name={"w2": "old/w"})
        out["vocab"] = values(e, w2)
    with tf.Graph().as_default():
        with tf.variable_scope("old"):
            e = tf.get_variable("emb", shape=[5, 3], partitioner=tf.fixed_size_partitioner(2))
            w = tf.get_variable("w", shape=[2, 3], initializer=tf.zeros_initializer())
        rows = tf.train.VocabInfo(new_vocab=os.path.join(d, "new.txt"), new_vocab_size=3,
                                  num_oov_buckets=2, old_vocab=os.path.join(d, "old.txt"),
                                  old_vocab_size=2)
        tf.train.warm_start(d, vars_to_warm_start=None, var_name_to_vocab_info={"old/emb": rows})
        out["partitioned_cut_vocab"] = values(e, w)
    with tf.Graph().as_default():
        with tf.variable_scope("old"):
            e = tf.get_variable("emb", shape=[4, 3], trainable=False)
            w = tf.get_variable("w", shape=[2, 3], initializer=tf.zeros_initializer())
        tf.train.warm_start(ck, vars_to_warm_start=["old/e"])
        out["regex_list"] = values(e, w)
    with tf.Graph().as_default():
        with tf.variable_scope("old"):
            tf.get_variable("emb", shape=[4, 3])
            tf.get_variable("w", shape=[2, 3])
        rows = tf.train.VocabInfo(os.path.join(d, "new.txt"), 3, 0, os.path.join(d, "old.txt"))
        out["err_unused_prev"] = err(lambda: tf.train.warm_start(
            ck, var_name_to_prev_var_name={"nosuch": "x"}))
        out["err_unused_vocab"] = err(lambda: tf.train.warm_start(
            ck, vars_to_warm_start=["old/w"], var_name_to_vocab_info={"old/emb": rows}))
    return out
'''

# Rows of the checkpoint's old/emb = arange(12).reshape(4, 3) for old tokens a b c d;
# the new vocabulary is c x a (+2 OOV rows).
EMB = np.arange(12, dtype=np.float32).reshape(4, 3)
W = np.arange(6, dtype=np.float32).reshape(2, 3)
EXPECTED = {
    "init": [EMB, W, [5, 6], EMB, W, [1, 1]],
    "root": [EMB, W, [5, 6]],
    "vocab": [[EMB[2], [7] * 3, EMB[0], [7] * 3, [7] * 3],
              # columns: new c x a + 2 OOV from old columns x c q
              [[1, 0, 0, 0, 0], [4, 3, 0, 0, 0]]],
    # old vocabulary cut to "a b": only "a" (new row 2) is found
    "partitioned_cut_vocab": [[[0] * 3, [0] * 3, EMB[0], [0] * 3, [0] * 3], [[0] * 3] * 2],
    "regex_list": [EMB, [[0] * 3] * 2],
}
ERRORS = {
    "err_missing_in_scope": "Tensor old/zz (zz in old/) is not found in",
    "err_shape": "Shape of variable old/emb:0 ((4, 3)) doesn't match with shape of tensor "
                 "old/w ([2, 3]) from checkpoint reader.",
    "err_missing": "Tensor old/nope is not found in",
    "err_scope_to_name": "Assignment map with scope only name nosuch should map to scope only "
                         "old/emb. Should be 'scope/': 'other_scope/'.",
    "err_unused_prev": "You provided the following variables in var_name_to_prev_var_name "
                       "that were not used: {'nosuch'}.",
    "err_unused_vocab": "You provided the following variables in var_name_to_vocab_info that "
                        "were not used: {'old/emb'}.",
}


def _run_here(d):
    env = {"tf": tf, "np": np}
    exec(PROGRAM, env)
    return env["program"](str(d))


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    return _run_here(tmp_path_factory.mktemp("warm"))


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_values(ours, key):
    for got, want in zip(ours[key], EXPECTED[key], strict=True):
        np.testing.assert_array_equal(np.asarray(got, np.float32),
                                      np.asarray(want, np.float32), err_msg=key)


@pytest.mark.parametrize("key", sorted(ERRORS))
def test_errors(ours, key):
    assert ours[key] is not None and ERRORS[key] in ours[key], ours[key]


def test_initializers_read_the_checkpoint_when_run(tmp_path):
    """The values load when the initializer runs: a checkpoint rewritten after
    init_from_checkpoint is the one read."""
    prefix = str(tmp_path / "ck")

    def save(value):
        with tf.Graph().as_default():
            tf.get_variable("v", initializer=np.float32(value))
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                tf.train.Saver().save(s, prefix)

    save([1, 2])
    with tf.Graph().as_default():
        v = tf.get_variable("v", shape=[2])
        tf.train.init_from_checkpoint(prefix, {"v": "v"})
        assert v.initial_value.op.type == "RestoreV2"
        save([3, 4])
        with tf.Session() as s:
            s.run(v.initializer)
            np.testing.assert_array_equal(s.run(v), [3, 4])
            # initialized_value reads through the new initial value too
            np.testing.assert_array_equal(s.run(v.initialized_value()), [3, 4])


def test_bad_vocab_info():
    with pytest.raises(ValueError, match="Invalid axis entry"):
        tf.train.VocabInfo("a", 1, 0, "b", axis=2)


@pytest.mark.oracle
def test_matches_tensorflow(ours):
    code = PROGRAM + "\nimport tempfile\nresult = program(tempfile.mkdtemp())\n"
    theirs = run_tf(code)
    assert sorted(theirs) == sorted(ours)
    for key in EXPECTED:
        for got, want in zip(ours[key], theirs[key], strict=True):
            np.testing.assert_array_equal(np.asarray(got, np.float32),
                                          np.asarray(want, np.float32), err_msg=key)
    for key in ERRORS:
        assert ERRORS[key] in theirs[key], (key, theirs[key])
