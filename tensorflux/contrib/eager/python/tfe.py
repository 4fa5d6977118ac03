"""`tensorflow.contrib.eager.python.tfe`: the graph-mode helpers (see
tensorflux/contrib/eager/__init__.py for what each does without an eager mode)."""

from __future__ import annotations

import functools
import unittest

__all__ = ["defun", "executing_eagerly", "function", "in_graph_mode",
           "run_all_tests_in_graph_and_eager_modes", "run_test_in_graph_and_eager_modes"]


def executing_eagerly() -> bool:
    """False: ops build graph nodes (tensorflux has no eager mode)."""
    return False


def in_graph_mode() -> bool:
    """True: tensorflux always builds graphs."""
    return True


def defun(func=None, input_signature=None, autograph=False, experimental_autograph_options=None,
          experimental_relax_shapes=False):
    """`func`, called as it is (graph mode: its ops are built where it is called).

    Usable as `defun(f)` and as a decorator with or without arguments."""
    del input_signature, autograph, experimental_autograph_options, experimental_relax_shapes

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            return f(*args, **kwargs)
        return wrapper

    return decorate if func is None else decorate(func)


function = defun


def run_test_in_graph_and_eager_modes(func=None, config=None, use_gpu=True, reset_test=True,
                                      assert_no_eager_garbage=False):
    """A test-method decorator: the test runs in graph mode, its `cached_session` (with
    `config`) the default session, so `self.evaluate` runs what the test built."""
    del use_gpu, reset_test, assert_no_eager_garbage

    def decorate(f):
        if isinstance(f, type):
            raise ValueError("`run_test_in_graph_and_eager_modes` only supports test methods. "
                             "Did you mean to use `run_all_tests_in_graph_and_eager_modes`?")

        @functools.wraps(f)
        def decorated(self, *args, **kwargs):
            with self.cached_session(config=config):
                return f(self, *args, **kwargs)
        return decorated

    return decorate if func is None else decorate(func)


def run_all_tests_in_graph_and_eager_modes(cls):
    """A TestCase decorator: every `test*` method (but `testSkipEager*`/`test_skip_eager*`)
    runs as `run_test_in_graph_and_eager_modes` runs it."""
    prefix = unittest.TestLoader.testMethodPrefix
    for name, value in cls.__dict__.copy().items():
        if callable(value) and name.startswith(prefix) and not (
                name.startswith("testSkipEager") or name.startswith("test_skip_eager")
                or name == "test_session"):
            setattr(cls, name, run_test_in_graph_and_eager_modes(value))
    return cls
