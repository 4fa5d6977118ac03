"""An element whose map function fails raises its error from get_next, and the elements
after it follow, sequential or parallel (TensorFlow 2.21 gives the same sequence; the
expected list below is its output)."""

from __future__ import annotations

import pytest

import tensorflux as tf

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("parallel", [1, 4])
def test_an_error_in_map_raises_for_its_element_and_the_rest_follow(parallel):
    with tf.Graph().as_default():
        ds = tf.data.Dataset.range(40).map(
            lambda x: tf.debugging.check_numerics(1.0 / tf.cast(x - 2, tf.float32), "bad"),
            num_parallel_calls=parallel)
        nxt = tf.data.make_one_shot_iterator(ds).get_next()
        out = []
        with tf.Session() as s:
            while True:
                try:
                    out.append(round(float(s.run(nxt)), 4))
                except tf.errors.OutOfRangeError:
                    break
                except tf.errors.InvalidArgumentError:
                    out.append("error")
    assert out[:6] == [-0.5, -1.0, "error", 1.0, 0.5, 0.3333]
    assert len(out) == 40 and out[-1] == round(1 / 37, 4)
