"""Fixtures of the tf.linalg library tests."""

from __future__ import annotations

import pytest

import tensorflux as tf


@pytest.fixture
def fresh_graph():
    """Each test on a fresh default graph."""
    with tf.Graph().as_default() as g:
        yield g
