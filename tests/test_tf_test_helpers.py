"""tf.test.StubOutForTesting (tensorflux/test/stubout.py) and tf.test.disable_with_predicate:
stubs set and undone on modules, classes and instances; tests skipped by a predicate."""

from __future__ import annotations

import os
import unittest

import pytest

import tensorflux as tf


class Base:
    greeting = "base"

    def hello(self):
        return "hello"

    @staticmethod
    def static():
        return "static"

    @classmethod
    def kind(cls):
        return cls.__name__


class Derived(Base):
    pass


def test_set_and_unset_all_restore_in_reverse_order():
    stubs = tf.test.StubOutForTesting()
    exists = os.path.exists
    stubs.Set(os.path, "exists", lambda p: "first")
    stubs.Set(os.path, "exists", lambda p: "second")
    stubs.Set(Derived, "static", staticmethod(lambda: "stub"))
    assert os.path.exists("/nowhere") == "second" and Derived.static() == "stub"
    stubs.UnsetAll()
    assert os.path.exists is exists
    assert Derived.static() == "static" and "static" not in vars(Derived)
    with pytest.raises(AttributeError):
        stubs.Set(os.path, "no_such_function", None)


def test_smart_set_stubs_the_class_of_an_instance_and_keeps_descriptors():
    obj, other = Derived(), Derived()
    with tf.test.StubOutForTesting() as stubs:
        stubs.SmartSet(obj, "hello", lambda self: "stubbed")
        stubs.SmartSet(Base, "kind", classmethod(lambda cls: "stub " + cls.__name__))
        stubs.SmartSet(os.path, "sep", "#")
        assert other.hello() == "stubbed" and Derived.kind() == "stub Derived"
        assert os.path.sep == "#"
        obj.__dict__["own"] = 1
        stubs.SmartSet(obj, "own", 2)  # an instance's own attribute: the instance
        assert obj.own == 2 and "own" not in vars(Derived)
        with pytest.raises(AttributeError, match="Attribute not found"):
            stubs.SmartSet(obj, "missing", 0)
    assert obj.hello() == "hello" and obj.own == 1 and os.path.sep == "/"
    assert Derived.kind() == "Derived" and isinstance(vars(Base)["kind"], classmethod)
    assert "hello" not in vars(Derived)


def test_clean_up_undoes_both_kinds():
    stubs = tf.test.StubOutForTesting()
    stubs.Set(Base, "greeting", "set")
    stubs.SmartSet(Derived(), "greeting", "smart")
    assert Derived.greeting == "smart" and Base.greeting == "set"
    stubs.CleanUp()
    assert Derived.greeting == Base.greeting == "base"
    stubs.CleanUp()  # again: nothing left to undo


def test_disable_with_predicate_skips_when_true_at_run_time():
    flag = {"skip": True}

    class Case(unittest.TestCase):
        @tf.test.disable_with_predicate(lambda: flag["skip"], "not here")
        def test_it(self):
            flag["ran"] = True

    def run():
        return unittest.TextTestRunner(stream=open(os.devnull, "w")).run(  # noqa: SIM115
            unittest.TestLoader().loadTestsFromTestCase(Case))

    result = run()
    assert [reason for _, reason in result.skipped] == ["not here"] and "ran" not in flag
    flag["skip"] = False
    result = run()
    assert result.wasSuccessful() and not result.skipped and flag["ran"]
    assert Case.test_it.__name__ == "test_it"


def test_test_case_seeds_every_test_as_tensorflow():
    # TF's TestCase.setUp seeds Python's and NumPy's generators and the new default graph
    # with DEFAULT_GRAPH_SEED (87654321); the values below are TF 2.21's in such a test.
    import random

    import numpy as np

    seen = {}

    class Seeded(tf.test.TestCase):
        def test_draws(self):
            seen["np"], seen["py"] = np.random.rand(), random.random()
            seen["seed"] = tf.get_default_graph().seed
            seen["op"] = self.evaluate(tf.random_uniform([2]))

    class Unseeded(tf.test.TestCase):
        _set_default_seed = False

        def test_graph(self):
            seen["unseeded"] = tf.get_default_graph().seed

    for case in (Seeded("test_draws"), Unseeded("test_graph")):
        result = unittest.TestResult()
        case.run(result)
        assert result.wasSuccessful(), result.errors + result.failures
    assert seen["seed"] == 87654321 and seen["unseeded"] is None
    assert seen["np"] == pytest.approx(0.18463433217903202, rel=0, abs=0)
    assert seen["py"] == pytest.approx(0.3499765785632496, rel=0, abs=0)
    np.testing.assert_array_equal(seen["op"], np.float32([0.10086262, 0.9701668]))


def test_absltest_flags_exist_as_with_tf_test():
    # TF's tf.test imports absltest, which defines these two (programs read test data
    # from FLAGS.test_srcdir); the defaults are absltest's.
    flags = tf.flags.FLAGS
    assert flags["test_srcdir"].default == os.environ.get("TEST_SRCDIR", "")
    assert flags["test_tmpdir"].default.endswith("absl_testing") or "TEST_TMPDIR" in os.environ
