"""tf.map_fn, tf.foldl, tf.foldr and tf.scan: values against NumPy, structures, static
shapes, gradients, errors."""

import numpy as np
import pytest

import tensorflux as tf


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


XV = (np.arange(12, dtype=np.float32).reshape(4, 3) - 5.0) / 10.0


def test_map_fn(graph):
    x = tf.placeholder(tf.float32, [4, 3])
    squares = tf.map_fn(lambda r: tf.reduce_sum(r * r), x)
    pair = tf.map_fn(lambda r: (r * 2.0, tf.cast(tf.reduce_sum(r) > 0, tf.int32)), x,
                     dtype=(tf.float32, tf.int32))
    nested = tf.map_fn(lambda e: e["a"] + e["b"][0], {"a": x, "b": (x * 10.0,)},
                       dtype=tf.float32, parallel_iterations=1)
    assert squares.shape.as_list() == [4] and pair[0].shape.as_list() == [4, 3]
    assert squares.op.name.startswith("map/")
    with tf.Session() as s:
        sq, (doubled, positive), ne = s.run([squares, pair, nested], {x: XV})
    np.testing.assert_allclose(sq, (XV * XV).sum(1), rtol=1e-6)
    np.testing.assert_allclose(doubled, XV * 2)
    np.testing.assert_array_equal(positive, (XV.sum(1) > 0).astype(np.int32))
    np.testing.assert_allclose(ne, XV * 11, rtol=1e-6)


def test_folds_and_scans(graph):
    x = tf.placeholder(tf.float32, [4, 3])
    got = {
        "foldl": tf.foldl(lambda a, e: a + e * 2.0, x),
        "foldl_init": tf.foldl(lambda a, e: a * e, x, initializer=tf.ones([3])),
        "foldr": tf.foldr(lambda a, e: a * 0.5 + e, x, initializer=tf.zeros([3])),
        "foldr_noinit": tf.foldr(lambda a, e: a - e, x),
        "scan": tf.scan(lambda a, e: a + e, x),
        "scan_rev": tf.scan(lambda a, e: a * e, x, initializer=tf.ones([3]), reverse=True),
        "scan_nested": tf.scan(lambda a, e: (a[0] + e, a[1] * 2.0), x,
                               initializer=(tf.zeros([3]), tf.ones([]))),
    }
    assert got["scan"].shape.as_list() == [4, 3] and got["foldl"].shape.as_list() == [3]
    with tf.Session() as s:
        v = s.run(got, {x: XV})
    fr = np.zeros(3)
    for e in XV[::-1]:
        fr = fr * 0.5 + e
    np.testing.assert_allclose(v["foldl"], XV[0] + 2 * XV[1:].sum(0), rtol=1e-6)
    np.testing.assert_allclose(v["foldl_init"], XV.prod(0), rtol=1e-6)
    np.testing.assert_allclose(v["foldr"], fr, rtol=1e-6)
    np.testing.assert_allclose(v["foldr_noinit"], XV[3] - XV[2] - XV[1] - XV[0], rtol=1e-6)
    np.testing.assert_allclose(v["scan"], np.cumsum(XV, 0), rtol=1e-6)
    np.testing.assert_allclose(v["scan_rev"], np.cumprod(XV[::-1], 0)[::-1], rtol=1e-6)
    np.testing.assert_allclose(v["scan_nested"][0], np.cumsum(XV, 0), rtol=1e-6)
    np.testing.assert_allclose(v["scan_nested"][1], [2, 4, 8, 16])


def test_unknown_leading_dimension(graph):
    x = tf.placeholder(tf.float32, [None, 3])
    m = tf.map_fn(lambda r: r + 1.0, x)
    sc = tf.scan(lambda a, e: a + e, x)
    assert m.shape.as_list() == [None, 3]
    with tf.Session() as s:
        np.testing.assert_allclose(s.run(m, {x: XV[:2]}), XV[:2] + 1)
        np.testing.assert_allclose(s.run(sc, {x: XV[:1]}), XV[:1])


def test_gradients(graph):
    x = tf.placeholder(tf.float64, [4, 3])
    w = tf.placeholder(tf.float64, [3])
    losses = [
        tf.reduce_sum(tf.map_fn(lambda r: tf.reduce_sum(tf.sin(r) * w), x)),
        tf.reduce_sum(tf.scan(lambda a, e: a * w + e, x)),
        tf.reduce_sum(tf.foldl(lambda a, e: tf.tanh(a + e * w), x)),
        tf.reduce_sum(tf.foldr(lambda a, e: a * e, x, initializer=w)),
    ]
    xv, wv = XV.astype(np.float64) + 0.1, np.array([0.5, -1.0, 0.25])
    with tf.Session() as s:
        for loss in losses:
            gx, gw = s.run(tf.gradients(loss, [x, w]), {x: xv, w: wv})
            for var, value, grad in ((x, xv, gx), (w, wv, gw)):
                numeric = np.zeros_like(value)
                for idx in np.ndindex(*value.shape):
                    plus, minus = value.copy(), value.copy()
                    plus[idx] += 1e-6
                    minus[idx] -= 1e-6
                    feed = {x: xv, w: wv}
                    numeric[idx] = (s.run(loss, {**feed, var: plus}) -
                                    s.run(loss, {**feed, var: minus})) / 2e-6
                np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-8)


def test_errors(graph):
    x = tf.constant([1.0, 2.0])
    with pytest.raises(TypeError, match="is not callable"):
        tf.foldl(3, x)
    with pytest.raises(TypeError, match="is not callable"):
        tf.scan(3, x)
    with pytest.raises(ValueError, match="elems must be a 1\\+ dimensional Tensor, not a "
                                         "scalar"):
        tf.map_fn(lambda e: e, tf.constant(1.0))
    with pytest.raises(ValueError, match="same nested structure"):
        tf.map_fn(lambda e: (e, e), x)
    with pytest.raises(ValueError, match="same nested structure"):
        tf.scan(lambda a, e: (a, e), x)
