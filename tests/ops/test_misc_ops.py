"""tf.timestamp, tf.math.nextafter, tf.extract_volume_patches, tf.batch_scatter_update and
tf.dtypes.as_string (tensorflux/ops/misc_ops.py): values against NumPy references,
finite-difference gradients, and TensorFlow as the oracle."""

import time

import numpy as np
import pytest

import tensorflux as tf
from tests.op_test_util import OpCase, check_gradient, check_value
from tests.oracle import run_tf


@pytest.fixture(autouse=True)
def _fresh_graph():
    with tf.Graph().as_default():
        yield


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def test_timestamp_is_stateful_and_current():
    t = tf.timestamp()
    assert t.dtype == tf.float64 and t.shape.as_list() == []
    assert t.op.op_def.is_stateful
    before = time.time()
    with tf.Session() as sess:
        a = sess.run(t)
        b = sess.run(t)
    assert before - 1 <= a <= b <= time.time() + 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nextafter_values_and_broadcasting(dtype):
    x1 = np.array([[1.0, 0.0, 2.0], [-1.0, 5.0, np.inf]], dtype)
    x2 = np.array([2.0, -1.0, 2.0], dtype)
    out = tf.math.nextafter(x1, x2)
    assert out.shape.as_list() == [2, 3] and out.dtype.as_numpy_dtype == dtype
    np.testing.assert_array_equal(_run(out), np.nextafter(x1, x2))


def test_nextafter_gradient():
    x = tf.constant([1.0, 2.0], tf.float64)
    y = tf.constant([3.0, 0.0], tf.float64)
    gx, gy = tf.gradients(tf.reduce_sum(tf.math.nextafter(x, y) * [2.0, 3.0]), [x, y])
    gx, gy = _run([gx, gy])
    assert gx.tolist() == [2.0, 3.0] and gy.tolist() == [0.0, 0.0]
    a = tf.constant(np.ones((2, 3)))
    b = tf.constant(np.zeros(3))
    ga, gb = _run(tf.gradients(tf.reduce_sum(tf.math.nextafter(a, b)), [a, b]))
    assert ga.shape == (2, 3) and gb.shape == (3,) and ga.sum() == 6 and gb.sum() == 0
    with pytest.raises(TypeError):
        tf.math.nextafter(tf.constant([1], tf.int32), tf.constant([2], tf.int32))


def _np_volume_patches(x, ksizes, strides, padding):
    n, planes, rows, cols, depth = x.shape
    out_dims, befores = [], []
    for size, k, s in zip((planes, rows, cols), ksizes[1:4], strides[1:4], strict=True):
        if padding == "VALID":
            o, b = max(0, (size - k + s) // s), 0
        else:
            o = -(-size // s)
            b = max(0, (o - 1) * s + k - size) // 2
        out_dims.append(o)
        befores.append(b)
    kp, kr, kc = ksizes[1:4]
    out = np.zeros((n, *out_dims, kp * kr * kc * depth), x.dtype)
    for i in range(out_dims[0]):
        for j in range(out_dims[1]):
            for m in range(out_dims[2]):
                patch = []
                for a in range(kp):
                    for b in range(kr):
                        for c in range(kc):
                            p = i * strides[1] - befores[0] + a
                            r = j * strides[2] - befores[1] + b
                            q = m * strides[3] - befores[2] + c
                            inside = 0 <= p < planes and 0 <= r < rows and 0 <= q < cols
                            patch.append(x[:, p, r, q] if inside else
                                         np.zeros((n, depth), x.dtype))
                out[:, i, j, m] = np.concatenate(patch, axis=1)
    return out


VOLUME_CASES = [
    ("valid", (2, 3, 4, 5, 2), [1, 2, 2, 2, 1], [1, 1, 2, 2, 1], "VALID"),
    ("same", (1, 3, 4, 5, 2), [1, 2, 3, 2, 1], [1, 2, 1, 2, 1], "SAME"),
    ("same_big_kernel", (1, 2, 3, 2, 1), [1, 3, 3, 3, 1], [1, 1, 1, 1, 1], "SAME"),
]


def _volume_case(name, shape, ksizes, strides, padding):
    return OpCase(f"volume_{name}",
                  lambda x: tf.extract_volume_patches(x, ksizes, strides, padding),
                  lambda x: _np_volume_patches(x, ksizes, strides, padding), shapes=[shape],
                  unknown_shapes=False)


@pytest.mark.parametrize("case", [_volume_case(*c) for c in VOLUME_CASES],
                         ids=lambda c: c.name)
def test_extract_volume_patches(case):
    check_value(case, np.float32)
    check_gradient(case, np.float64)


def test_extract_volume_patches_bad_arguments():
    x = tf.zeros([1, 2, 2, 2, 1])
    with pytest.raises(ValueError, match="ksizes"):
        tf.extract_volume_patches(x, [2, 1, 1, 1, 1], [1, 1, 1, 1, 1], "VALID")
    with pytest.raises(ValueError):
        tf.extract_volume_patches(x, [1, 1, 1, 1, 1], [1, 1, 1, 1, 1], "FULL")
    with pytest.raises(ValueError):
        tf.extract_volume_patches(tf.zeros([2, 2]), [1, 1, 1, 1, 1], [1, 1, 1, 1, 1], "SAME")


def test_batch_scatter_update():
    v = tf.Variable(np.arange(12, dtype=np.float32).reshape(2, 6), use_resource=True)
    upd = tf.batch_scatter_update(v, [[0, 5], [2, 3]], [[-1.0, -2.0], [-3.0, -4.0]])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(upd)
        np.testing.assert_array_equal(sess.run(v.read_value()), got)
    want = np.arange(12, dtype=np.float32).reshape(2, 6)
    want[0, [0, 5]] = [-1, -2]
    want[1, [2, 3]] = [-3, -4]
    np.testing.assert_array_equal(got, want)


def test_dtypes_as_string_is_as_string():
    assert tf.dtypes.as_string is tf.as_string
    assert _run(tf.dtypes.as_string([1.5, 2.0], precision=1)).tolist() == [b"1.5", b"2.0"]


@pytest.mark.oracle
def test_matches_tensorflow():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, 4, 5, 2)).astype(np.float32)
    code = f"""
x = np.array({x.tolist()!r}, np.float32)
v = tf.Variable(np.arange(12, dtype=np.float32).reshape(2, 6))
upd = tf.batch_scatter_update(v, [[0, 5], [2, 3]], [[-1.0, -2.0], [-3.0, -4.0]])
outs = [tf.extract_volume_patches(x, k, s, p) for k, s, p in
        {[(c[2], c[3], c[4]) for c in VOLUME_CASES]!r}]
nxt = tf.math.nextafter([1.0, 0.0, -2.0], [2.0, -1.0, -3.0])
with tf.Session() as s:
    s.run(tf.global_variables_initializer())
    result = [o.tolist() for o in s.run(outs)] + [s.run(upd).tolist(), s.run(nxt).tolist()]
"""
    want = run_tf(code)
    outs = [tf.extract_volume_patches(x, k, s, p) for _, _, k, s, p in VOLUME_CASES]
    v = tf.Variable(np.arange(12, dtype=np.float32).reshape(2, 6))
    upd = tf.batch_scatter_update(v, [[0, 5], [2, 3]], [[-1.0, -2.0], [-3.0, -4.0]])
    nxt = tf.math.nextafter([1.0, 0.0, -2.0], [2.0, -1.0, -3.0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = [o.tolist() for o in sess.run(outs)] + [sess.run(upd).tolist(),
                                                       sess.run(nxt).tolist()]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=0, atol=0)


# ---- tf.check_pinned ---------------------------------------------------------------------

CHECK_PINNED = """
a = tf.constant([1.0, 2.0])
x = tf.check_pinned(a)
shapes = [str(t.shape) for t in (x, tf.check_pinned(tf.constant("s")),
                                 tf.check_pinned(tf.constant([[1]], tf.int64), name="cp"))]
try:
    tf.gradients(x, a)
    grad = None
except LookupError as e:
    grad = type(e).__name__ + (" No gradient" if "No gradient defined" in str(e) else "")
with tf.Session() as sess:
    try:
        sess.run(x)
        run = None
    except tf.errors.InvalidArgumentError as e:
        run = e.message
"""


@pytest.mark.oracle
def test_check_pinned_is_tensorflows_on_cpu():
    want = run_tf(CHECK_PINNED + "result = [shapes, grad, run]")
    scope: dict = {"tf": tf}
    exec(CHECK_PINNED, scope)
    assert [scope["shapes"], scope["grad"]] == want[:2]
    assert scope["run"].startswith("not pinned") and "not pinned" in want[2]
