"""The assertions `tf.test.TestCase` inherits from absltest's TestCase in TensorFlow (its base
class there), which TF1 test suites call beside unittest's: container sizes and contents,
sequence prefixes, dict subsets. Written here so tensorflux needs no absl-py."""

from __future__ import annotations

import collections.abc


class AbslAssertions:
    """Mixin for `unittest.TestCase` subclasses: absltest's container assertions."""

    def assertEmpty(self, container, msg=None):  # noqa: N802
        """The container has no elements (`len(container) == 0`)."""
        self._assert_sized(container, msg)
        if len(container):
            self.fail(msg or f"{container!r} has length of {len(container)}.")

    def assertNotEmpty(self, container, msg=None):  # noqa: N802
        """The container has at least one element."""
        self._assert_sized(container, msg)
        if not len(container):
            self.fail(msg or f"{container!r} has length of 0.")

    def assertLen(self, container, expected_len, msg=None):  # noqa: N802
        """The container has exactly `expected_len` elements."""
        self._assert_sized(container, msg)
        if len(container) != expected_len:
            self.fail(msg or f"{container!r} has length of {len(container)}, expected "
                      f"{expected_len}.")

    def assertContainsSubset(self, expected_subset, actual_set, msg=None):  # noqa: N802
        """Every element of `expected_subset` is in `actual_set`."""
        missing = [e for e in expected_subset if e not in actual_set]
        if missing:
            self.fail(msg or f"Missing elements {missing!r} from {actual_set!r}")

    def assertNoCommonElements(self, expected_seq, actual_seq, msg=None):  # noqa: N802
        """The two collections share no element."""
        common = [e for e in expected_seq if e in actual_seq]
        if common:
            self.fail(msg or f"Common elements: {common!r}")

    def assertSequenceStartsWith(self, prefix, whole, msg=None):  # noqa: N802
        """`whole` begins with the elements of `prefix`, in order."""
        prefix, whole = list(prefix), list(whole)
        if whole[:len(prefix)] != prefix:
            self.fail(msg or f"{whole!r} does not start with {prefix!r}")

    def assertDictContainsSubset(self, subset, dictionary, msg=None):  # noqa: N802
        """Every key of `subset` is in `dictionary` with the same value (unittest dropped
        this one in Python 3.12; absltest keeps it)."""
        bad = {k: v for k, v in subset.items() if k not in dictionary or dictionary[k] != v}
        if bad:
            self.fail(msg or f"Missing or different: {bad!r} in {dictionary!r}")

    def assertContainsInOrder(self, strings, target, msg=None):  # noqa: N802
        """Each string occurs in `target` after the previous one."""
        if isinstance(strings, str):
            strings = (strings,)
        pos = 0
        for s in strings:
            i = target.find(s, pos)
            if i < 0:
                self.fail(msg or f"Did not find {s!r} after position {pos} in {target!r}")
            pos = i + len(s)

    def assertBetween(self, value, minv, maxv, msg=None):  # noqa: N802
        """`minv <= value <= maxv`."""
        if not minv <= value <= maxv:
            self.fail(msg or f"{value!r} is not between {minv!r} and {maxv!r}")

    def _assert_sized(self, container, msg):
        if not isinstance(container, collections.abc.Sized):
            self.fail(msg or f"Expected a Sized object, got: {type(container).__name__!r}")
