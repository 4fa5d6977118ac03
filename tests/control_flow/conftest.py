"""Fixtures of the control-flow tests: a fresh default graph, and each way of running loops."""

from __future__ import annotations

import pytest

import tensorflux as tf
from tests.op_test_util import STRATEGIES

# How the tests' sessions run: cheap loops compiled (the default), every loop on the
# dataflow executor's frames, or the reference executor (the specification).
LOOP_MODES = {"compiled": STRATEGIES["auto"], "frames": STRATEGIES["frames"],
              "reference": STRATEGIES["reference"]}


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


@pytest.fixture(params=list(LOOP_MODES))
def loop_mode(request):
    """Runs a test with each way of running loops (sessions from `session(loop_mode)`)."""
    return request.param


def session(loop_mode: str, **kwargs) -> tf.Session:
    """A Session running loops the way `loop_mode` names."""
    return tf.Session(exec_options=LOOP_MODES[loop_mode], **kwargs)
