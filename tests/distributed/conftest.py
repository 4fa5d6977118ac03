"""Fixtures for distributed tests: in-process clusters on loopback, always torn down."""

from __future__ import annotations

import pytest

import tensorflux as tf
from tensorflux.distributed import server as server_lib


class Cluster:
    """Servers of one in-process cluster: `workers`, `ps`, and `config` for sessions that
    go through gRPC even though the master is in this process."""

    def __init__(self, num_workers: int, num_ps: int, **kwargs):
        self.workers, self.ps = server_lib.create_local_cluster(num_workers, num_ps, **kwargs)
        self.rpc_config = tf.ConfigProto()
        self.rpc_config.rpc_options.use_rpc_for_inprocess_master = True

    @property
    def target(self) -> str:
        return self.workers[0].target

    def session(self, graph, via_rpc: bool = True, **config_fields):
        config = tf.ConfigProto(**config_fields)
        if via_rpc:
            config.rpc_options.use_rpc_for_inprocess_master = True
        return tf.Session(self.target, graph=graph, config=config)

    def stop(self) -> None:
        for s in self.workers + self.ps:
            s.stop(0)


@pytest.fixture
def cluster():
    """1 PS and 2 workers."""
    c = Cluster(2, 1)
    yield c
    c.stop()


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g
