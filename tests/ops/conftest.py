"""Fixtures of the op tests; a module opts in with `pytest.mark.usefixtures`."""

from __future__ import annotations

import pytest

import tensorflux as tf


@pytest.fixture
def fresh_graph():
    """Each test on a fresh default graph."""
    with tf.Graph().as_default() as g:
        yield g


@pytest.fixture
def split_everything(monkeypatch):
    """Every float kernel takes its intra-op path, in many small chunks over two threads."""
    from tensorflux.kernels import intra_op

    monkeypatch.setattr(intra_op, "MIN_ELEMENTS", 0)
    monkeypatch.setattr(intra_op, "MIN_FLOPS", 0)
    monkeypatch.setattr(intra_op, "CHUNK_ELEMENTS", 16)
    monkeypatch.setattr(intra_op, "workers", lambda ctx=None: 2)
