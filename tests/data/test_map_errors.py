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


# An element that fails inside a transformation's input, through every transformation:
# TensorFlow raises for that get_next and goes on (a batch of a map, fused by TF's default
# map_and_batch optimization, drops the whole batch; an unfused batch, window or zip drops
# what it had gathered; a shuffle raises while filling its buffer and keeps it).
ERROR_PROGRAM = """
def bad3(x):
    if x == 3:
        raise ValueError("bad element")
    return np.float32(x) * 2

D = tf.data.Dataset
def base():
    return D.range(8).map(lambda x: tf.py_func(bad3, [x], tf.float32))
inf = D.from_tensor_slices(np.array([1., 2., np.inf, 4., 5.], np.float32)).map(
    lambda x: tf.debugging.check_numerics(x, "not finite"))
pipelines = {
    "map": base(), "batch": base().batch(3),
    "batch_drop": base().batch(3, drop_remainder=True),
    "padded_batch": base().map(lambda x: tf.fill([2], x)).padded_batch(3, [3]),
    "check_numerics_batch": inf.batch(2), "prefetch": base().prefetch(2),
    "batch_prefetch": base().batch(3).prefetch(1),
    "take_repeat_batch": base().take(5).repeat(2).batch(4),
    "unbatch": base().batch(3).unbatch(), "filter": base().filter(lambda x: x > 2),
    "cache_repeat": base().cache().repeat(2), "zip": D.zip((base(), D.range(8))),
    "skip": base().skip(2), "skip_over_error": base().take(6).skip(4),
    "concatenate": base().concatenate(base().take(4)),
    "flat_map": D.range(3).flat_map(lambda i: base().skip(2 * i).take(3)),
    "interleave": D.range(2).interleave(lambda i: base().skip(i), cycle_length=2),
    "shuffle": base().shuffle(4, seed=1), "check_numerics_shuffle": inf.shuffle(10, seed=3),
}
result = {}
for name, ds in pipelines.items():
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    out = []
    with tf.Session() as s:
        for _ in range(30):
            try:
                out.append(json.loads(json.dumps(np.asarray(s.run(nxt)).tolist())))
            except tf.errors.OutOfRangeError:
                break
            except tf.errors.OpError as e:
                out.append(type(e).__name__)
    result[name] = out
"""


@pytest.mark.oracle
def test_errors_inside_any_transformation_as_tensorflow():
    from tests.oracle import run_both

    ours, theirs = run_both(ERROR_PROGRAM, tf)
    assert set(ours) == set(theirs)
    for name in sorted(theirs):
        if "shuffle" in name:  # the orders differ (other generators); the errors come first
            assert ours[name][0] == theirs[name][0] == "InvalidArgumentError"
            assert sorted(map(str, ours[name])) == sorted(map(str, theirs[name])), name
        else:
            assert ours[name] == theirs[name], name


def test_errors_inside_batch_and_shuffle_inputs_do_not_end_them():
    # (the oracle's answers, for runs without TensorFlow)
    with tf.Graph().as_default():
        def run(ds):
            nxt = tf.data.make_one_shot_iterator(ds).get_next()
            out = []
            with tf.Session() as s:
                while len(out) < 30:
                    try:
                        out.append(s.run(nxt).tolist())
                    except tf.errors.OutOfRangeError:
                        return out
                    except tf.errors.InvalidArgumentError:
                        out.append("error")
            return out

        x = tf.data.Dataset.from_tensor_slices([1.0, 2.0, float("inf"), 4.0, 5.0, 6.0])
        checked = x.map(lambda v: tf.debugging.check_numerics(v, "not finite"))
        assert run(checked.batch(2)) == [[1.0, 2.0], "error", [5.0, 6.0]]
        assert run(checked.filter(lambda v: v > 0).batch(2)) == [[1.0, 2.0], "error",
                                                                 [4.0, 5.0], [6.0]]
        shuffled = run(checked.shuffle(10, seed=3))
        assert shuffled[0] == "error" and sorted(shuffled[1:]) == [1.0, 2.0, 4.0, 5.0, 6.0]
        assert run(checked.prefetch(1)) == [1.0, 2.0, "error", 4.0, 5.0, 6.0]
