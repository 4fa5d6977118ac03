"""Persistent tensors through a server (tf.get_session_handle on a grpc:// session): the
fetched handles are TensorHandles, as in-process; eval, feeding, delete; a handle that is
garbage collected has its tensor deleted on the server by the session's next run."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.ops.session_ops import TensorHandle

from .conftest import Cluster

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def pair():
    c = Cluster(1, 1)
    yield c
    c.stop()


def test_handles_through_a_server_are_tensor_handles_deleted_when_collected(pair, graph):
    with tf.device("/job:ps/task:0"):
        x = tf.placeholder(tf.float32, [3])
        kept = tf.get_session_handle(x * 2.0)
    with pair.session(graph) as s:
        held = s.run(kept, {x: [1.0, 2.0, 3.0]})
        assert isinstance(held, TensorHandle) and "/job:ps/" in held.handle
        np.testing.assert_array_equal(held.eval(), [2.0, 4.0, 6.0])
        p, t = tf.get_session_tensor(held.handle, tf.float32)
        np.testing.assert_array_equal(s.run(t + 1.0, {p: held}), [3.0, 5.0, 7.0])
        raw = held.handle
        del held
        gc.collect()
        with pytest.raises(tf.errors.InvalidArgumentError, match="not in the session store"):
            s.run(t, {p: raw})  # this run first deleted the collected handle's tensor
        second = s.run(kept, {x: [5.0, 5.0, 5.0]})
        second.delete()
        with pytest.raises(tf.errors.InvalidArgumentError, match="not in the session store"):
            s.run(t, {p: second.handle})
        with pytest.raises(TypeError, match="deleted"):
            second.eval()
        several = [s.run(kept, {x: [float(k)] * 3}) for k in range(4)]
        names = [h.handle for h in several]
        del several
        gc.collect()
        s.run(x * 1.0, {x: [0.0, 0.0, 0.0]})  # deletes them all, in this one run
        for name in names:
            with pytest.raises(tf.errors.InvalidArgumentError, match="not in the session store"):
                s.run(t, {p: name})
