"""Array ops (array_ops, slicing_ops, gather_ops): values against NumPy (table-driven, known
and unknown shapes, both executors), finite-difference gradients in float32 and float64,
NumPy indexing of tensors, static shapes with unknown dimensions, strings, TensorFlow's
errors, and a batch of results compared with TensorFlow itself."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import op_registry
from tensorflux.framework.common_shapes import constant_value, constant_value_as_shape
from tensorflux.kernels import registry as kernel_registry
from tests import oracle
from tests.op_test_util import OpCase, check_gradient, check_value

F32_64 = [np.float32, np.float64]
OTHER_DTYPES = [np.int32, np.int64, np.uint8, np.float16, ml_dtypes.bfloat16, np.complex64,
                np.bool_]


def distinct(rng, shape, dtype):
    """A permutation of well-separated values: no ties (top_k, sorting)."""
    n = int(np.prod(shape))
    return (rng.permutation(n).reshape(shape) * 0.37 - n * 0.15).astype(dtype)


def np_shape(dt=np.int32):
    return lambda *xs: [np.array(x.shape, dt) for x in xs] if len(xs) > 1 else \
        np.array(xs[0].shape, dt)


def np_gather_batch(x, idx, axis):
    return np.stack([np.take(x[b], idx[b], axis=axis - 1) for b in range(x.shape[0])])


def np_scatter(indices, updates, shape):
    out = np.zeros(shape, updates.dtype)
    np.add.at(out, tuple(np.asarray(indices).T), updates)
    return out


def np_top_k(x, k):
    idx = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    return [np.take_along_axis(x, idx, -1), idx.astype(np.int32)]


def np_partition(x, parts, n):
    parts = np.asarray(parts)
    return [x[parts == i] for i in range(n)]


def np_stitch(indices, data):
    size = max(max(i) for i in indices) + 1
    out = np.zeros((size,) + data[0].shape[np.ndim(indices[0]):], data[0].dtype)
    for i, d in zip(indices, data, strict=True):
        out[np.asarray(i)] = d
    return out


# ---- value and gradient cases ------------------------------------------------------------

I32 = np.int32
CASES = [
    OpCase("shape", lambda x: tf.shape(x), np_shape(), shapes=[(2, 3, 4)], grad=False),
    OpCase("shape_int64", lambda x: tf.shape(x, out_type=tf.int64), np_shape(np.int64),
           shapes=[(2, 3)], grad=False),
    OpCase("shape_n", lambda x, y: tf.shape_n([x, y]), np_shape(), shapes=[(2, 3), (4,)],
           grad=False),
    OpCase("size", lambda x: tf.size(x), lambda x: np.array(x.size, np.int32),
           shapes=[(2, 3, 4)], grad=False),
    OpCase("rank", lambda x: tf.rank(x), lambda x: np.array(x.ndim, np.int32),
           shapes=[(2, 3, 4)], grad=False),
    OpCase("reshape", lambda x: tf.reshape(x, [4, -1]), lambda x: x.reshape(4, -1),
           shapes=[(2, 3, 4)]),
    OpCase("reshape_flat", lambda x: tf.reshape(x, [-1]), lambda x: x.reshape(-1),
           shapes=[(2, 3)]),
    OpCase("reshape_to_shape_of", lambda x, y: tf.reshape(x, tf.shape(y)),
           lambda x, y: x.reshape(y.shape), shapes=[(2, 3, 4), (6, 4)], grad_inputs=[0]),
    OpCase("reshape_partial", lambda x: tf.reshape(x, [-1, tf.shape(x)[2]]),
           lambda x: x.reshape(-1, x.shape[2]), shapes=[(2, 3, 4)]),
    OpCase("reshape_scalar", lambda x: tf.reshape(x, []), lambda x: x.reshape(()),
           shapes=[(1, 1)]),
    OpCase("expand_dims", lambda x: tf.expand_dims(x, 1), lambda x: np.expand_dims(x, 1),
           shapes=[(2, 3)]),
    OpCase("expand_dims_neg", lambda x: tf.expand_dims(x, -1),
           lambda x: np.expand_dims(x, -1), shapes=[(2, 3)]),
    OpCase("squeeze_all", lambda x: tf.squeeze(x), np.squeeze, shapes=[(1, 3, 1, 2)]),
    OpCase("squeeze_axis", lambda x: tf.squeeze(x, [2]), lambda x: np.squeeze(x, 2),
           shapes=[(1, 3, 1, 2)]),
    OpCase("squeeze_neg", lambda x: tf.squeeze(x, axis=-1), lambda x: np.squeeze(x, -1),
           shapes=[(3, 1)]),
    OpCase("transpose_default", lambda x: tf.transpose(x), np.transpose, shapes=[(2, 3, 4)]),
    OpCase("transpose_perm", lambda x: tf.transpose(x, [1, 2, 0]),
           lambda x: np.transpose(x, [1, 2, 0]), shapes=[(2, 3, 4)]),
    OpCase("concat0", lambda x, y: tf.concat([x, y], 0),
           lambda x, y: np.concatenate([x, y], 0), shapes=[(2, 3), (4, 3)]),
    OpCase("concat_neg", lambda x, y: tf.concat([x, y], -1),
           lambda x, y: np.concatenate([x, y], -1), shapes=[(2, 3), (2, 1)]),
    OpCase("concat3", lambda x, y, z: tf.concat([x, y, z], 1),
           lambda x, y, z: np.concatenate([x, y, z], 1), shapes=[(2, 1, 2), (2, 3, 2),
                                                                   (2, 2, 2)]),
    OpCase("concat1", lambda x: tf.concat([x], 0), lambda x: x, shapes=[(2, 3)]),
    OpCase("split_even", lambda x: tf.split(x, 3, axis=1), lambda x: np.split(x, 3, 1),
           shapes=[(2, 6)], grad=False),
    OpCase("split_sizes", lambda x: tf.split(x, [1, -1, 2], axis=1),
           lambda x: np.split(x, [1, 4], 1), shapes=[(2, 6)], grad=False),
    OpCase("split_two", lambda x: tf.split(x, 2, axis=1), lambda x: np.split(x, 2, 1),
           shapes=[(2, 6)]),
    OpCase("split_sizes_two", lambda x: tf.split(x, [-1, 2], axis=1),
           lambda x: np.split(x, [4], 1), shapes=[(2, 6)]),
    OpCase("split_one_used", lambda x: tf.split(x, 2)[1], lambda x: np.split(x, 2)[1],
           shapes=[(4, 3)]),
    OpCase("stack0", lambda x, y: tf.stack([x, y]), lambda x, y: np.stack([x, y]),
           shapes=[(2, 3), (2, 3)]),
    OpCase("stack_neg", lambda x, y: tf.stack([x, y], axis=-1),
           lambda x, y: np.stack([x, y], -1), shapes=[(2, 3), (2, 3)]),
    OpCase("unstack1", lambda x: tf.unstack(x, num=3, axis=1),
           lambda x: list(np.moveaxis(x, 1, 0)), shapes=[(2, 3, 4)], grad=False),
    OpCase("unstack_two", lambda x: tf.unstack(x, axis=-1), lambda x: [x[..., 0], x[..., 1]],
           shapes=[(3, 2)], unknown_shapes=False),
    OpCase("unstack_one_used", lambda x: tf.unstack(x, num=2)[1], lambda x: x[1],
           shapes=[(2, 3)]),
    OpCase("tile", lambda x: tf.tile(x, [2, 1, 3]), lambda x: np.tile(x, [2, 1, 3]),
           shapes=[(2, 3, 2)]),
    OpCase("pad", lambda x: tf.pad(x, [[1, 0], [2, 3]]),
           lambda x: np.pad(x, [[1, 0], [2, 3]]), shapes=[(2, 3)]),
    OpCase("pad_value", lambda x: tf.pad(x, [[1, 1], [0, 2]], constant_values=2),
           lambda x: np.pad(x, [[1, 1], [0, 2]], constant_values=2), shapes=[(2, 3)]),
    OpCase("pad_reflect", lambda x: tf.pad(x, [[1, 2], [2, 1]], mode="REFLECT"),
           lambda x: np.pad(x, [[1, 2], [2, 1]], mode="reflect"), shapes=[(4, 3)]),
    OpCase("pad_symmetric", lambda x: tf.pad(x, [[2, 1], [0, 3]], mode="symmetric"),
           lambda x: np.pad(x, [[2, 1], [0, 3]], mode="symmetric"), shapes=[(2, 3)]),
    OpCase("fill", lambda v: tf.fill([2, 3], v), lambda v: np.full((2, 3), v), shapes=[()]),
    OpCase("fill_like", lambda x, v: tf.fill(tf.shape(x), v),
           lambda x, v: np.full(x.shape, v), shapes=[(2, 3), ()], grad_inputs=[1]),
    OpCase("zeros_like", lambda x: tf.zeros_like(x), np.zeros_like, shapes=[(2, 3)],
           grad=False),
    OpCase("ones_like", lambda x: tf.ones_like(x), np.ones_like, shapes=[(2, 3)], grad=False),
    OpCase("slice", lambda x: tf.slice(x, [1, 0, 1], [1, -1, 2]),
           lambda x: x[1:2, :, 1:3], shapes=[(2, 3, 4)]),
    OpCase("getitem", lambda x: x[1:, ::-2, None, 0], lambda x: x[1:, ::-2, None, 0],
           shapes=[(3, 4, 5)]),
    OpCase("getitem_scalar", lambda x: x[1, -1], lambda x: x[1, -1], shapes=[(2, 3)]),
    OpCase("strided_slice", lambda x: tf.strided_slice(x, [0, 1], [2, 4], [1, 2]),
           lambda x: x[0:2, 1:4:2], shapes=[(3, 5)]),
    OpCase("gather", lambda x: tf.gather(x, [2, 0, 2]), lambda x: x[[2, 0, 2]],
           shapes=[(3, 4)]),
    OpCase("gather_2d_indices", lambda x: tf.gather(x, [[1, 0], [2, 2]]),
           lambda x: x[np.array([[1, 0], [2, 2]])], shapes=[(3, 2)]),
    OpCase("gather_axis1", lambda x: tf.gather(x, [3, 0, 0], axis=1),
           lambda x: x[:, [3, 0, 0]], shapes=[(2, 4, 2)]),
    OpCase("gather_batch", lambda x: tf.gather(x, [[0, 2], [1, 1]], axis=1, batch_dims=1),
           lambda x: np_gather_batch(x, [[0, 2], [1, 1]], 1), shapes=[(2, 3, 4)]),
    OpCase("gather_batch_axis2",
           lambda x: tf.gather(x, [[0, 3, 3], [1, 0, 2]], axis=2, batch_dims=1),
           lambda x: np_gather_batch(x, [[0, 3, 3], [1, 0, 2]], 2), shapes=[(2, 3, 4)]),
    OpCase("gather_nd", lambda x: tf.gather_nd(x, [[0, 1], [2, 0], [0, 1]]),
           lambda x: x[[0, 2, 0], [1, 0, 1]], shapes=[(3, 2, 2)]),
    OpCase("gather_nd_rows", lambda x: tf.gather_nd(x, [[2], [0]]), lambda x: x[[2, 0]],
           shapes=[(3, 2)]),
    OpCase("scatter_nd", lambda u: tf.scatter_nd([[1], [3], [1]], u, [5, 2]),
           lambda u: np_scatter([[1], [3], [1]], u, (5, 2)), shapes=[(3, 2)]),
    OpCase("scatter_nd_2d", lambda u: tf.scatter_nd([[0, 1], [2, 0]], u, [3, 2, 2]),
           lambda u: np_scatter([[0, 1], [2, 0]], u, (3, 2, 2)), shapes=[(2, 2)]),
    OpCase("reverse", lambda x: tf.reverse(x, [0, 2]), lambda x: x[::-1, :, ::-1],
           shapes=[(2, 3, 4)]),
    OpCase("broadcast_to", lambda x: tf.broadcast_to(x, [2, 3, 4]),
           lambda x: np.broadcast_to(x, (2, 3, 4)), shapes=[(3, 1)]),
    OpCase("top_k", lambda x: tf.nn.top_k(x, 3), lambda x: np_top_k(x, 3), shapes=[(2, 7)],
           make=distinct),
    OpCase("top_k_wide", lambda x: tf.nn.top_k(x, 2), lambda x: np_top_k(x, 2),
           shapes=[(3, 100)], make=distinct),
    OpCase("dynamic_partition", lambda x: tf.dynamic_partition(x, [0, 2, 0, 1], 3),
           lambda x: np_partition(x, [0, 2, 0, 1], 3), shapes=[(4, 2)], grad=False),
    OpCase("dynamic_stitch", lambda x, y: tf.dynamic_stitch([[0, 3], [2, 1, 4]], [x, y]),
           lambda x, y: np_stitch([[0, 3], [2, 1, 4]], [x, y]), shapes=[(2, 3), (3, 3)]),
    OpCase("one_hot", lambda v: tf.one_hot([[0, 2], [3, 1]], 3, on_value=v, axis=1),
           lambda v: np.where(np.array([[0, 2], [3, 1]])[:, None, :] == np.arange(3)[:, None],
                              v, 0).astype(v.dtype), shapes=[()], grad=False),
    OpCase("boolean_mask", lambda x: tf.boolean_mask(x, [True, False, True]),
           lambda x: x[[0, 2]], shapes=[(3, 2)], grad=False),
    OpCase("boolean_mask_2d", lambda x: tf.boolean_mask(x, [[True, False], [False, True]]),
           lambda x: x[np.array([[True, False], [False, True]])], shapes=[(2, 2, 3)],
           grad=False),
    OpCase("identity", lambda x: tf.identity(x), lambda x: x, shapes=[(2, 3)]),
]

# Ops whose kernels are dtype-generic: their values are also checked on these dtypes.
GENERIC = {"reshape", "transpose_perm", "concat0", "split_sizes", "stack0", "unstack1", "tile",
           "pad", "slice", "getitem", "gather", "gather_axis1", "gather_nd", "reverse",
           "broadcast_to", "dynamic_partition", "dynamic_stitch", "squeeze_all",
           "expand_dims", "fill", "zeros_like", "identity", "pad_reflect"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", F32_64, ids=lambda d: np.dtype(d).name)
def test_value(case, dtype):
    check_value(case, dtype)


@pytest.mark.parametrize("case", [c for c in CASES if c.name in GENERIC], ids=lambda c: c.name)
def test_value_other_dtypes(case):
    for dtype in OTHER_DTYPES:
        if dtype is np.bool_ and case.name in ("pad_reflect",):
            continue
        check_value(case, dtype)


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", F32_64, ids=lambda d: np.dtype(d).name)
def test_gradient(case, dtype):
    check_gradient(case, dtype)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_static_shape_is_exact_when_inputs_are_known(case):
    """With fully known inputs every output's static shape is its value's shape (except
    the data-dependent ones)."""
    arrays = case.inputs(np.float32)
    g = tf.Graph()
    with g.as_default():
        outs = case.build(*[tf.constant(a) for a in arrays])
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        with tf.Session() as sess:
            values = sess.run(outs)
    for t, v in zip(outs, values, strict=True):
        if case.name.startswith(("dynamic_partition", "boolean_mask")):
            assert t.shape.is_compatible_with(np.shape(v))
        else:
            assert t.shape.as_list() == list(np.shape(v)), (case.name, t.shape, np.shape(v))


# Ops whose outputs have data-dependent shapes: gradients of a scalar function of them.
SCALAR_GRADIENTS = [
    ("boolean_mask", lambda x: tf.boolean_mask(x, [True, False, True]), (3, 2)),
    ("boolean_mask_2d", lambda x: tf.boolean_mask(x, [[True, False], [True, True]]), (2, 2, 3)),
    ("dynamic_partition", lambda x: tf.dynamic_partition(x, [0, 2, 0, 1], 3), (4, 2)),
    ("dynamic_partition_2d", lambda x: tf.dynamic_partition(x, [[1, 0], [0, 0]], 2), (2, 2, 2)),
    ("unique_gather", lambda x: tf.gather(x, tf.unique([2, 0, 2])[0]), (3, 2)),
    ("split_three", lambda x: tf.split(x, [1, -1, 2], axis=1), (2, 6)),
    ("unstack_three", lambda x: tf.unstack(x, axis=1), (2, 3, 4)),
    ("top_k_dynamic", lambda x: tf.nn.top_k(tf.reshape(x, [-1, 5]), 2)[0], (2, 5)),
    ("gather_dynamic", lambda x: tf.gather(tf.reshape(x, [-1, 3]), [1, 1], axis=1), (2, 3)),
    ("gather_batch_dynamic", lambda x: tf.gather(tf.reshape(x, [2, -1, 2]), [[0, 1], [1, 1]],
                                                 axis=1, batch_dims=1), (2, 3, 2)),
    ("broadcast_to_dynamic", lambda x: tf.broadcast_to(tf.reshape(x, [-1, 1]), [2, 3, 3]), (3,)),
    ("slice_dynamic", lambda x: tf.slice(tf.reshape(x, [2, -1]), [0, 1], [-1, 2]), (2, 4)),
    ("tile_dynamic", lambda x: tf.tile(tf.reshape(x, [-1, 2]), [2, 2]), (3, 2)),
    ("concat_dynamic", lambda x: tf.concat([tf.reshape(x, [-1, 2]), x[:, :1]], 1), (3, 2)),
    ("pad_dynamic", lambda x: tf.pad(tf.reshape(x, [-1, 2]), [[1, 0], [0, 2]]), (3, 2)),
    ("strided_slice_grad_grad", lambda x: tf.gradients(tf.reduce_sum(x[1:, ::2] ** 2), x)[0],
     (3, 4)),
]


@pytest.mark.parametrize("case", SCALAR_GRADIENTS, ids=lambda c: c[0])
@pytest.mark.parametrize("dtype", [tf.float32, tf.float64], ids=["float32", "float64"])
def test_gradient_of_scalar_function(case, dtype):
    _, build, shape = case
    value = np.random.default_rng(5).standard_normal(shape)
    with tf.Graph().as_default():
        x = P(dtype, shape)
        outs = build(x)
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        y = tf.constant(0.0, dtype)
        for k, o in enumerate(outs):
            y = y + tf.reduce_sum(o * o * 0.5 + o * float(k + 1))
        with tf.Session():
            err = tf.test.compute_gradient_error(x, list(shape), y, [],
                                                 x_init_value=value.astype(dtype.as_numpy_dtype),
                                                 delta=1e-2 if dtype == tf.float32 else 1e-5)
    assert err < (2e-2 if dtype == tf.float32 else 1e-6), err


# ---- Tensor.__getitem__ against NumPy indexing ------------------------------------------


class _Index:
    def __getitem__(self, idx):
        return idx


_I = _Index()
INDEXES = [
    _I[0], _I[-1], _I[3], _I[1:], _I[:-1], _I[::2], _I[::-1], _I[1::-1], _I[-2:], _I[5:],
    _I[:, 0], _I[..., 0], _I[..., None], _I[None], _I[None, ..., None], _I[1, ..., 2],
    _I[:, None, 1:3], _I[::-2, 1], _I[..., ::-1, :], _I[-1, -1, -1], _I[2:0:-1], _I[0:100],
    _I[-100:100], _I[3:1], _I[:, :, ::3], _I[:, -1:-4:-2], _I[..., 1:2, ::-2], _I[1, None, 2],
    _I[None, None, 0], _I[:, 1:4, None, 5:0:-2], _I[-3:, ..., -1], _I[...], _I[:], _I[()],
    _I[1:2, 3:4, 5:6], _I[::3, ::-3, ::4], _I[-4, :0], _I[..., None, None], _I[:, :, :, None],
    _I[0, 0], _I[1:3, ...], _I[-1::-1, -1, ...], _I[:-100], _I[100:],
]


@pytest.mark.parametrize("known", [True, False], ids=["known", "unknown"])
def test_getitem_matches_numpy(known):
    value = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4, 5, 6] if known else [None, 5, None])
        outs = [x[idx] for idx in INDEXES]
        with tf.Session() as sess:
            got = sess.run(outs, {x: value})
    for idx, t, v in zip(INDEXES, outs, got, strict=True):
        want = value[idx]
        np.testing.assert_array_equal(v, want, err_msg=repr(idx))
        assert np.shape(v) == want.shape, idx
        if known:
            assert t.shape.as_list() == list(want.shape), (idx, t.shape)
        else:
            assert t.shape.is_compatible_with(want.shape), (idx, t.shape)
            assert t.shape.ndims == want.ndim, (idx, t.shape)


def test_getitem_with_tensor_indices():
    value = np.arange(24, dtype=np.float64).reshape(4, 6)
    with tf.Graph().as_default():
        x = tf.constant(value)
        i = tf.placeholder(tf.int32, [])
        j = tf.placeholder(tf.int64, [])
        outs = [x[i], x[i:], x[:, i - 1], x[i:i + 2, ::i], x[j], x[1, j], x[tf.constant(2)]]
        assert outs[0].shape.as_list() == [6]
        assert outs[1].shape.as_list() == [None, 6]
        assert outs[4].op.inputs[1].dtype == tf.int64
        with tf.Session() as sess:
            got = sess.run(outs, {i: 2, j: 3})
    want = [value[2], value[2:], value[:, 1], value[2:4, ::2], value[3], value[1, 3], value[2]]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_getitem_bad_indices_are_type_errors():
    x = tf.zeros([3, 4])
    for bad in (1.5, [1.0], "a", tf.constant(1.0), tf.constant([1, 2])):
        with pytest.raises(TypeError, match="Only integers, slices"):
            x[bad]  # noqa: B018
    with pytest.raises(ValueError, match="Multiple ellipses"):
        x[..., ...]  # noqa: B018


def test_getitem_op_structure_matches_tf():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3, 4])
        y = x[1:, 2]
        assert y.op.type == "StridedSlice" and y.op.name == "strided_slice"
        assert [t.op.name for t in y.op.inputs[1:]] == ["strided_slice/stack",
                                                          "strided_slice/stack_1",
                                                          "strided_slice/stack_2"]
        assert y.op.get_attr("end_mask") == 1 and y.op.get_attr("shrink_axis_mask") == 2
        assert list(constant_value(y.op.inputs[2])) == [0, 3]


def test_boolean_tensor_index_is_boolean_mask():
    value = np.arange(6, dtype=np.float32).reshape(3, 2)
    with tf.Graph().as_default():
        x = tf.constant(value)
        y = x[x > 2.0]
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(y), value[value > 2.0])


# ---- static shapes with unknown dimensions (TensorFlow's answers) ------------------------

P = tf.placeholder

STATIC_SHAPES = [
    (lambda: tf.reshape(P(tf.float32, [None, 6]), [-1, 2, 3]), [None, 2, 3]),
    (lambda: tf.reshape(P(tf.float32, [None, 6]), [2, -1]), [2, None]),
    (lambda: tf.reshape(P(tf.float32, [None, 3]), [-1, tf.shape(P(tf.float32, [None, 3]))[1]]),
     [None, 3]),
    (lambda: tf.reshape(P(tf.float32, [2, 3]), P(tf.int32)), None),
    (lambda: tf.reshape(P(tf.float32, [2, 3]), P(tf.int32, [2])), [None, None]),
    (lambda: tf.reshape(P(tf.float32, [None, 3]), tf.shape(P(tf.float32, [4, None]))),
     [4, None]),
    (lambda: tf.reshape(P(tf.float32, [2, 3]),
                        tf.concat([[2], tf.shape(P(tf.float32, [None, 3]))[1:]], 0)), [2, 3]),
    (lambda: tf.reshape(P(tf.float32, [0, 3]), [-1, 0]), [None, 0]),
    (lambda: tf.reshape(P(tf.float32), [3, -1]), [3, None]),
    (lambda: tf.squeeze(P(tf.float32, [None, 1, 3])), None),
    (lambda: tf.squeeze(P(tf.float32, [None, 1, 3]), [1]), [None, 3]),
    (lambda: tf.expand_dims(P(tf.float32, [None, 3]), P(tf.int32, [])), None),
    (lambda: tf.transpose(P(tf.float32, [None, 3, 4])), [4, 3, None]),
    (lambda: tf.transpose(P(tf.float32, [None, 3, 4]), P(tf.int32, [3])), [None] * 3),
    (lambda: tf.concat([P(tf.float32, [None, 3]), P(tf.float32, [2, None])], 1), [2, None]),
    (lambda: tf.concat([P(tf.float32, [None, 3]), P(tf.float32)], 1), [None, None]),
    (lambda: tf.concat([P(tf.float32, [None, 3]), P(tf.float32, [2, 3])],
                       P(tf.int32, [])), [None, None]),
    (lambda: tf.split(P(tf.float32, [4, None]), [1, -1, 2], axis=1)[1], [4, None]),
    (lambda: tf.split(P(tf.float32, [None, 6]), [1, -1, 2], axis=1)[1], [None, 3]),
    (lambda: tf.slice(P(tf.float32, [5, 6]), P(tf.int32, [2]), [2, -1]), [2, None]),
    (lambda: tf.stack([P(tf.float32, [None, 3]), P(tf.float32, [2, None])], axis=1),
     [2, 2, 3]),
    (lambda: tf.tile(P(tf.float32, [None, 3]), P(tf.int32, [2])), [None, None]),
    (lambda: tf.pad(P(tf.float32, [None, 3]), [[1, 1], [2, 2]]), [None, 7]),
    (lambda: tf.fill([2, tf.shape(P(tf.float32, [None, 4]))[1]], 1.0), [2, 4]),
    (lambda: tf.fill(P(tf.int32, [3]), 1.0), [None] * 3),
    (lambda: tf.gather(P(tf.float32, [None, 3]), P(tf.int32, [4, None])), [4, None, 3]),
    (lambda: tf.gather(P(tf.float32, [5, 3, 2]), P(tf.int32, [5, 4]), axis=P(tf.int32, [])),
     [None] * 4),
    (lambda: tf.gather_nd(P(tf.float32, [5, 3, 2]), P(tf.int32, [4, None])), None),
    (lambda: tf.one_hot(P(tf.int32, [None, 2]), 4, axis=0), [4, None, 2]),
    (lambda: tf.broadcast_to(P(tf.float32, [3]), P(tf.int32, [2])), [None, 3]),
    (lambda: tf.nn.top_k(P(tf.float32, [None, 5]), P(tf.int32, []))[1], [None, None]),
    (lambda: tf.dynamic_stitch([[0, 2], [1, 3]], [P(tf.float32, [2, 3]),
                                                  P(tf.float32, [None, 3])]), [4, 3]),
    (lambda: tf.zeros([2, tf.shape(P(tf.float32, [None, 4]))[1]]), [2, 4]),
    (lambda: tf.zeros(P(tf.int32, [2])), [None, None]),
    (lambda: tf.ones_like(P(tf.float32, [None, 3]), dtype=tf.int32), [None, 3]),
    (lambda: P(tf.float32, [None, 5, None])[1:, ::2, 3], [None, 3]),
    (lambda: P(tf.float32)[1:, 0], None),
]


@pytest.mark.parametrize("k", range(len(STATIC_SHAPES)))
def test_static_shapes_with_unknown_dims(k):
    build, want = STATIC_SHAPES[k]
    with tf.Graph().as_default():
        t = build()
    assert (t.shape.as_list() if t.shape.ndims is not None else None) == want


def test_static_shape_ops_are_constants_when_known():
    with tf.Graph().as_default():
        x = P(tf.float32, [2, 3])
        for t in (tf.shape(x), tf.size(x), tf.rank(x), tf.rank(P(tf.float32, [None]))):
            assert t.op.type == "Const"
        assert tf.shape(P(tf.float32, [None, 3])).op.type == "Shape"
        assert tf.size(P(tf.float32, [None])).op.type == "Size"
        assert tf.rank(P(tf.float32)).op.type == "Rank"
        assert tf.zeros([2, 3]).op.type == "Const"
        assert tf.zeros([100, 100]).op.type == "Fill"
        assert tf.zeros_like(P(tf.float32, [None])).op.type == "ZerosLike"
        assert tf.ones_like(x).op.type == "Fill"


def test_constant_value_through_shape_ops():
    with tf.Graph().as_default():
        x = P(tf.float32, [None, 3, 4])
        k = P(tf.float32, [2, 3])
        assert constant_value(tf.shape(k)).tolist() == [2, 3]
        assert constant_value_as_shape(tf.shape(x)).as_list() == [None, 3, 4]
        assert constant_value_as_shape(tf.shape(x)[1:]).as_list() == [3, 4]
        assert constant_value_as_shape(tf.stack([tf.shape(x)[2], 5, -1])).as_list() == [4, 5,
                                                                                         None]
        assert constant_value(tf.concat([[1], [2, 3]], 0)).tolist() == [1, 2, 3]
        assert constant_value(tf.stack([1, 2])).tolist() == [1, 2]
        assert constant_value(tf.constant([[1, 2], [3, 4]])[1, ::-1]).tolist() == [4, 3]
        assert constant_value(tf.slice(tf.constant([1, 2, 3]), [1], [-1])).tolist() == [2, 3]
        assert constant_value(tf.reshape(tf.constant([1, 2, 3, 4]), [2, 2])).shape == (2, 2)
        assert constant_value(tf.expand_dims(tf.constant(3), 0)).tolist() == [3]
        assert constant_value(tf.fill([2], 7)).tolist() == [7, 7]
        assert constant_value(tf.size(k)) == 6 and constant_value(tf.rank(x)) == 3
        assert constant_value(tf.shape_n([k, x])[0]).tolist() == [2, 3]
        assert constant_value(tf.shape_n([k, x])[1]) is None


# ---- auto-packing -------------------------------------------------------------------------


def test_convert_to_tensor_autopacks_lists_with_tensors():
    with tf.Graph().as_default():
        a, b = tf.constant(1.0), P(tf.float32, [])
        t = tf.convert_to_tensor([a, b])
        assert t.op.type == "Pack" and t.shape.as_list() == [2]
        nested = tf.convert_to_tensor([[a, 2.0], (3.0, b)])
        assert nested.op.type == "Pack" and nested.shape.as_list() == [2, 2]
        plain = tf.convert_to_tensor([[1, 2], [3, 4]])
        assert plain.op.type == "Const"
        cast = tf.convert_to_tensor([tf.constant(1), 2], dtype=tf.int64)
        assert cast.dtype == tf.int64
        s = tf.stack([a, b])
        assert s.op.name == "stack" and s.op.type == "Pack"
        with tf.Session() as sess:
            assert sess.run(nested, {b: 4.0}).tolist() == [[1.0, 2.0], [3.0, 4.0]]
            assert sess.run(cast).tolist() == [1, 2]


# ---- strings --------------------------------------------------------------------------------


def test_string_tensors():
    words = np.array([[b"a", b"bb", b"ccc"], [b"d", b"", b"f"]], dtype=object)
    with tf.Graph().as_default():
        s = tf.constant(words)
        p = P(tf.string, [None, 3])
        outs = {
            "reshape": (tf.reshape(p, [-1]), words.reshape(-1)),
            "concat": (tf.concat([s, p], 0), np.concatenate([words, words])),
            "gather": (tf.gather(p, [1, 0, 1]), words[[1, 0, 1]]),
            "gather_axis1": (tf.gather(s, [2], axis=1), words[:, [2]]),
            "stack": (tf.stack([s, p], axis=1), np.stack([words, words], 1)),
            "unstack": (tf.unstack(s)[1], words[1]),
            "identity": (tf.identity(p), words),
            "tile": (tf.tile(s, [1, 2]), np.tile(words, [1, 2])),
            "transpose": (tf.transpose(p), words.T),
            "expand_squeeze": (tf.squeeze(tf.expand_dims(s, 0)), words),
            "slice": (p[1, ::-1], words[1, ::-1]),
            "split": (tf.split(s, [1, 2], axis=1)[1], words[:, 1:]),
            "pad": (tf.pad(s, [[0, 1], [0, 0]]),
                    np.concatenate([words, np.array([[b""] * 3], dtype=object)])),
            "reverse": (tf.reverse(s, [1]), words[:, ::-1]),
            "fill": (tf.fill([2], "x"), np.array([b"x", b"x"], dtype=object)),
            "zeros_like": (tf.zeros_like(p), np.full((2, 3), b"", dtype=object)),
            "partition": (tf.dynamic_partition(s, [1, 0], 2)[0], words[1:]),
            "stitch": (tf.dynamic_stitch([[1], [0]], [s[:1], s[1:]]), words[::-1]),
            "unique": (tf.unique(tf.reshape(s, [-1]))[0], words.reshape(-1)),
            "broadcast": (tf.broadcast_to(s[:1], [2, 3]), np.stack([words[0], words[0]])),
            "gather_nd": (tf.gather_nd(s, [[1, 2]]), np.array([b"f"], dtype=object)),
            "scalar": (s[0, 1], np.array(b"bb", dtype=object)),
        }
        with tf.Session() as sess:
            got = sess.run({k: v[0] for k, v in outs.items()}, {p: words})
    for k, (t, want) in outs.items():
        assert t.dtype == tf.string, k
        assert np.asarray(got[k]).tolist() == np.asarray(want).tolist(), k


# ---- edge values ----------------------------------------------------------------------------


def test_unique_keeps_first_appearance_order():
    with tf.Graph().as_default():
        y, idx = tf.unique([4, 1, 4, 2, 1, 1])
        y64, idx64 = tf.unique(tf.constant([3.0, 3.0, -1.0]), out_idx=tf.int64)
        with tf.Session() as sess:
            vals = sess.run([y, idx, y64, idx64])
    assert vals[0].tolist() == [4, 1, 2] and vals[1].tolist() == [0, 1, 0, 2, 1, 1]
    assert vals[1].dtype == np.int32 and vals[3].dtype == np.int64
    assert vals[2].tolist() == [3.0, -1.0] and vals[3].tolist() == [0, 0, 1]


def test_top_k_ties_take_lower_indices_first():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 4, size=(5, 300)).astype(np.float32)
    with tf.Graph().as_default():
        v, i = tf.nn.top_k(x, 7)
        vi, ii = tf.nn.top_k(x.astype(np.int32), 300)
        vu, iu = tf.nn.top_k(np.array([[3, 200, 7, 200]], np.uint8), 3)
        _, iinf = tf.nn.top_k(np.array([[-np.inf, 1.0, -np.inf, 0.0, 1.0]], np.float32), 4)
        with tf.Session() as sess:
            got = sess.run([v, i, vi, ii, vu, iu, iinf])
    assert got[6].tolist() == [[1, 4, 3, 0]]
    order = np.argsort(-x, axis=1, kind="stable")
    assert got[1].tolist() == order[:, :7].tolist() and got[1].dtype == np.int32
    assert got[3].tolist() == order.tolist()
    assert got[5].tolist() == [[1, 3, 2]] and got[4].tolist() == [[200, 200, 7]]


def test_dynamic_stitch_later_indices_win_and_gaps_are_zero():
    with tf.Graph().as_default():
        y = tf.dynamic_stitch([[0, 5], [5]], [[1.0, 2.0], [3.0]])
        with tf.Session() as sess:
            assert sess.run(y).tolist() == [1.0, 0, 0, 0, 0, 3.0]


def test_reshape_and_split_of_empty_tensors():
    with tf.Graph().as_default():
        x = P(tf.float32)
        r = tf.reshape(x, [-1, 0])
        s = tf.split(x, [0, -1], axis=1)
        with tf.Session() as sess:
            assert sess.run(r, {x: np.zeros((0, 3))}).shape == (3, 0)
            assert [a.shape for a in sess.run(s, {x: np.zeros((2, 3))})] == [(2, 0), (2, 3)]


def test_kernels_never_write_into_inputs_and_fetches_are_owned():
    value = np.arange(12, dtype=np.float32).reshape(3, 4)
    keep = value.copy()
    with tf.Graph().as_default():
        c = tf.constant(value)
        p = P(tf.float32, [3, 4])
        views = [tf.reshape(c, [4, 3]), tf.transpose(p), c[::-1], tf.split(p, 2, axis=1)[0],
                 tf.squeeze(tf.expand_dims(c, 0)), tf.reverse(p, [0]), tf.unstack(c)[0]]
        with tf.Session() as sess:
            got = sess.run(views, {p: value})
            for g in got:
                g[...] = -1  # the caller owns fetched arrays
            again = sess.run(views, {p: value})
    np.testing.assert_array_equal(value, keep)
    assert all(np.all(a >= 0) for a in again)


def test_mirror_pad_gradient_values():
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    with tf.Graph().as_default():
        p = tf.constant(x)
        for mode, pads in (("REFLECT", [[1, 1], [2, 1]]), ("SYMMETRIC", [[2, 1], [3, 2]])):
            y = tf.pad(p, pads, mode=mode)
            g = tf.gradients(y, p)[0]
            with tf.Session() as sess:
                got = sess.run(g)
            # Each input element's gradient is the number of copies of it in the output.
            marks = np.arange(6).reshape(2, 3)
            padded = np.pad(marks, pads, mode=mode.lower())
            want = np.bincount(padded.reshape(-1), minlength=6).reshape(2, 3)
            np.testing.assert_array_equal(got, want)


def test_gather_gradient_is_indexed_slices():
    with tf.Graph().as_default():
        params = tf.constant(np.ones((5, 3), np.float32))
        y = tf.gather(params, [[4, 0], [4, 4]])
        g = tf.gradients(tf.reduce_sum(y), params)[0]
        assert isinstance(g, tf.IndexedSlices) if hasattr(tf, "IndexedSlices") else \
            hasattr(g, "_is_indexed_slices")
        assert g.values.shape.as_list() == [-1, 3][1:] or g.values.shape.as_list()[1] == 3
        with tf.Session() as sess:
            v = sess.run(g)
            dense = sess.run(tf.convert_to_tensor(g))
        assert v.indices.tolist() == [4, 0, 4, 4] and list(v.dense_shape) == [5, 3]
        np.testing.assert_array_equal(dense[:, 0], [1, 0, 0, 0, 3])


# ---- errors ---------------------------------------------------------------------------------

STATIC_ERRORS = [
    (lambda: tf.reshape(tf.zeros([2, 3]), [4]),
     r"Cannot reshape a tensor with 6 elements to shape \[4\] \(4 elements\) for "
     r"'\{\{node Reshape\}\} = Reshape\[T=DT_FLOAT, Tshape=DT_INT32\]\(zeros, \S*shape\)'"
     r" with input shapes: \[2,3\], \[1\]"),
    (lambda: tf.reshape(tf.zeros([2, 3]), [-1, 4]),
     "Dimension size must be evenly divisible by 4 but is 6"),
    (lambda: tf.concat([tf.zeros([2, 3]), tf.zeros([2])], 0),
     "Shape must be rank 2 but is rank 1"),
    (lambda: tf.concat([tf.zeros([2, 3]), tf.zeros([2, 4])], 0),
     r"Dimension 0 in both shapes must be equal, but are 3 and 4. Shapes are \[3\] and \[4\]"),
    (lambda: tf.squeeze(tf.zeros([2, 3]), [0]),
     r"Can not squeeze dim\[0\], expected a dimension of 1, got 2"),
    (lambda: tf.transpose(tf.zeros([2, 3]), [0, 2]), "perm dim 2 is out of range"),
    (lambda: tf.split(tf.zeros([5, 3]), 2), "evenly divisible by 2 but is 5"),
    (lambda: tf.split(tf.zeros([5, 3]), [2, 2]), r"can't split axis of size 5"),
    (lambda: tf.zeros([3])[5], "slice index 5 of dimension 0 out of bounds."),
    (lambda: tf.zeros([3])[1, 2], "Index out of range using input dim 1"),
    (lambda: tf.stack([tf.zeros([2]), tf.zeros([3])]),
     "Dimension 0 in both shapes must be equal, but are 2 and 3"),
    (lambda: tf.stack([tf.zeros([2]), tf.zeros([2])], axis=3),
     r"Argument `axis` = 3 not in range \[-2, 2\)"),
    (lambda: tf.unstack(P(tf.float32, [None, 2])), r"Cannot infer argument `num`"),
    (lambda: tf.expand_dims(tf.zeros([2, 3]), 4), r"dim 4 not in the interval \[-3, 2\]"),
    (lambda: tf.tile(tf.zeros([2, 3]), [2]), "Shape must be rank 2 but is rank 1"),
    (lambda: tf.fill([2, -1], 1.0), "Fill dimensions must be >= 0"),
    (lambda: tf.gather(tf.zeros([2, 3]), [0], axis=2), "Shape must be at least rank 3"),
    (lambda: tf.pad(tf.zeros([2, 3]), [[1, 1], [-1, 0]]), "Paddings must be non-negative"),
    (lambda: tf.pad(tf.zeros([2]), [[1, 1]], mode="FOO"), "Value of argument `mode`"),
    (lambda: tf.reverse(tf.zeros([2, 3]), [1, 1]), "axis 1 specified more than once"),
    (lambda: tf.broadcast_to(tf.zeros([2, 3]), [4, 3]), "Dimensions must be equal"),
    (lambda: tf.nn.top_k(tf.zeros([2, 3]), 4), "input must have last dimension >= k = 4"),
    (lambda: tf.gather_nd(tf.zeros([2, 3]), [[0, 1, 2]]), r"indices.shape\[-1\] must be <="),
    (lambda: tf.scatter_nd([[0], [1]], [1.0, 2.0, 3.0], [4]), r"Dimensions \[0,1\) of indices"),
    (lambda: tf.one_hot([1], -2), "must be non-negative but is -2"),
    (lambda: tf.boolean_mask(tf.zeros([2]), True), "mask cannot be scalar"),
]


@pytest.mark.parametrize("k", range(len(STATIC_ERRORS)))
def test_static_errors(k):
    build, pattern = STATIC_ERRORS[k]
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=pattern):
            build()


RUN_ERRORS = [
    ("reshape", lambda x: tf.reshape(x, [4]), np.zeros((2, 3)),
     "Input to reshape is a tensor with 6 values, but the requested shape has 4"),
    ("reshape_m1", lambda x: tf.reshape(x, [-1, 4]), np.zeros((2, 3)),
     "requires a multiple of 4"),
    ("gather", lambda x: tf.gather(x, [0, 7]), np.zeros((5, 3)),
     r"indices\[1\] = 7 is not in \[0, 5\)"),
    ("gather_neg", lambda x: tf.gather(x, [[0], [-1]], axis=1), np.zeros((5, 3)),
     r"indices\[1,0\] = -1 is not in \[0, 3\)"),
    ("concat", lambda x: tf.concat([x, tf.zeros([2, 4], tf.float64)], 0), np.zeros((2, 3)),
     r"ConcatOp : Dimension 1 in both shapes must be equal: shape\[0\] = \[2,3\] vs\. "
     r"shape\[1\] = \[2,4\]"),
    ("squeeze", lambda x: tf.squeeze(x, [0]), np.zeros((2, 3)), "Can not squeeze dim"),
    ("split", lambda x: tf.split(x, 2)[0], np.zeros((5, 3)),
     r"split_dim 0 \(size = 5\) and num_split 2"),
    ("slice", lambda x: tf.slice(x, [0, 1], [2, 3]), np.zeros((2, 3)),
     r"Expected size\[1\] in \[0, 2\], but got 3"),
    ("strided_slice", lambda x: x[5], np.zeros(3), "slice index 5 of dimension 0 out of"),
    ("stack", lambda x: tf.stack([x, tf.zeros([2], tf.float64)]), np.zeros(3),
     r"Shapes of all inputs must match: values\[0\].shape = \[3\] != values\[1\].shape"),
    ("mirror_pad", lambda x: tf.pad(x, [[3, 3], [0, 0]], mode="REFLECT"), np.zeros((2, 3)),
     "paddings must be less than the dimension size: 3, 3 not less than 2"),
    ("broadcast_to", lambda x: tf.broadcast_to(x, [4, 3]), np.zeros((2, 3)),
     r"Incompatible shapes: \[2,3\] vs. \[4,3\]"),
    ("broadcast_to_narrower", lambda x: tf.broadcast_to(x, [1, 4]), np.zeros((5, 1)),
     r"Incompatible shapes: \[5,1\] vs. \[1,4\]"),
    ("top_k", lambda x: tf.nn.top_k(x, 4)[0], np.zeros((2, 3)),
     "input must have at least k columns. Had 3, needed 4"),
    ("partition", lambda x: tf.dynamic_partition(x, [0, 1, 2], 2)[0], np.zeros(3),
     r"partitions\[2\] = 2 is not in \[0, 2\)"),
    ("gather_nd", lambda x: tf.gather_nd(x, [[0, 1], [5, 0]]), np.zeros((5, 3)),
     r"indices\[1\] = \[5, 0\] does not index into param shape \[5,3\]"),
    ("scatter_nd", lambda x: tf.scatter_nd([[0], [5]], x, [4]), np.zeros(2),
     r"indices\[1\] = \[5\] does not index into shape \[4\]"),
    ("unstack", lambda x: tf.unstack(x, num=3)[0], np.zeros((2, 3)),
     r"Input shape axis 0 must equal 3, got shape \[2,3\]"),
    ("expand_dims", lambda x: tf.expand_dims(x, tf.constant(5) + 0), np.zeros((2, 3)),
     "Tried to expand dim index 5 for tensor with 2 dimensions."),
    ("tile", lambda x: tf.tile(x, tf.constant([2]) + 0), np.zeros((2, 3)),
     "Expected multiples argument to be a vector of length 2 but got length 1"),
]


@pytest.mark.parametrize("case", RUN_ERRORS, ids=lambda c: c[0])
def test_run_time_errors_name_the_node_and_session_survives(case):
    _, build, value, pattern = case
    with tf.Graph().as_default():
        x = P(tf.float64)
        y = build(x)
        ok = tf.identity(x)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match=pattern) as info:
                sess.run(y, {x: value})
            assert y.op.name in str(info.value)
            np.testing.assert_array_equal(sess.run(ok, {x: value}), value)


def test_invert_permutation_errors():
    with tf.Graph().as_default():
        x = P(tf.int32, [None])
        y = tf.invert_permutation(x)
        with tf.Session() as sess:
            assert sess.run(y, {x: [2, 0, 1]}).tolist() == [1, 2, 0]
            with pytest.raises(tf.errors.InvalidArgumentError, match="1 is duplicated"):
                sess.run(y, {x: [0, 1, 1]})
            with pytest.raises(tf.errors.InvalidArgumentError, match="5 is not between 0 and"):
                sess.run(y, {x: [0, 5, 1]})


# ---- registry completeness --------------------------------------------------------------

MY_OPS = [
    "Placeholder", "PlaceholderWithDefault", "Identity", "IdentityN", "StopGradient", "Shape",
    "ShapeN", "Size", "Rank", "Reshape", "ExpandDims", "Squeeze", "Transpose",
    "ConjugateTranspose", "InvertPermutation", "Fill", "ZerosLike", "OnesLike", "ConcatV2",
    "ConcatOffset", "Split", "SplitV", "Pack", "Unpack", "Tile", "Pad", "PadV2", "MirrorPad",
    "MirrorPadGrad", "BroadcastTo", "BroadcastArgs", "ReverseV2", "Slice", "StridedSlice",
    "StridedSliceGrad", "Gather", "GatherV2", "GatherNd", "ScatterNd", "OneHot", "Unique",
    "TopKV2", "DynamicPartition", "DynamicStitch", "ParallelDynamicStitch",
]


@pytest.mark.parametrize("op_type", MY_OPS)
def test_every_op_has_shape_fn_kernel_and_gradient(op_type):
    opdef = op_registry.get(op_type)
    assert opdef.shape_fn is not None
    assert kernel_registry.has_kernel(op_type, "CPU")
    assert op_registry.get_gradient(op_type) is not None


def test_public_names():
    for name in ("shape", "shape_n", "size", "rank", "reshape", "expand_dims", "squeeze",
                 "transpose", "invert_permutation", "fill", "zeros", "ones", "zeros_like",
                 "ones_like", "concat", "split", "stack", "unstack", "tile", "pad",
                 "broadcast_to", "reverse", "slice", "strided_slice", "boolean_mask", "gather",
                 "gather_nd", "scatter_nd", "one_hot", "unique", "dynamic_partition",
                 "dynamic_stitch", "sequence_mask", "newaxis", "identity", "placeholder"):
        assert hasattr(tf, name), name
    assert tf.newaxis is None
    assert tf.nn.top_k is not None


# ---- the oracle: the same expressions under TensorFlow ----------------------------------

ORACLE_SETUP = '''
X = np.arange(120, dtype=np.float32).reshape(4, 5, 6) / 7.0
x = tf.placeholder(tf.float32, [None, 5, None], name="x")
xk = tf.placeholder(tf.float32, [4, 5, 6], name="xk")
xu = tf.placeholder(tf.float32, None, name="xu")
m = tf.placeholder(tf.float32, [None, 3], name="m")
M = np.arange(12, dtype=np.float32).reshape(4, 3)
i = tf.placeholder(tf.int32, [], name="i")
iv = tf.placeholder(tf.int32, [None], name="iv")
sv = tf.placeholder(tf.string, [None], name="sv")
S = np.array([b"a", b"bb", b"a", b"c", b"bb"], dtype=object)
feed = {x: X, xk: X, xu: X, m: M, i: 2, iv: np.array([3, 1, 0, 1], np.int32), sv: S}
'''

ORACLE_EXPRS = [
    "tf.shape(x)", "tf.shape(xk)", "tf.shape(x, out_type=tf.int64)", "tf.size(x)",
    "tf.rank(xu)", "tf.shape_n([x, m])", "tf.size(xk, out_type=tf.int64)",
    "tf.reshape(x, [-1, 6])", "tf.reshape(x, [2, -1, 3])", "tf.reshape(xk, [-1])",
    "tf.reshape(xk, [4, 30])", "tf.reshape(x, [-1, tf.shape(x)[1]])",
    "tf.reshape(x, tf.shape(xk))", "tf.reshape(xk, [4, 7])", "tf.reshape(x, [7, -1])",
    "tf.reshape(xk, [-1, 7])", "tf.reshape(m, tf.stack([tf.shape(m)[0], 3, 1]))",
    "tf.reshape(xu, [6, -1])", "tf.reshape(x, [-1, -1])", "tf.reshape(x, 5)",
    "tf.expand_dims(x, 0)", "tf.expand_dims(x, -1)", "tf.expand_dims(x, 4)",
    "tf.expand_dims(m, i)", "tf.squeeze(tf.expand_dims(x, 2))",
    "tf.squeeze(tf.expand_dims(x, 2), [2])", "tf.squeeze(xk[:, :1], axis=1)",
    "tf.squeeze(xk, [0])", "tf.squeeze(xk[:1, :, :1])", "tf.squeeze(xk, [3])",
    "tf.transpose(x)", "tf.transpose(x, [1, 0, 2])", "tf.transpose(xu)",
    "tf.transpose(x, [0, 2])", "tf.transpose(m, tf.constant([1, 0]))",
    "tf.invert_permutation([2, 0, 1])",
    "tf.concat([x, x], 0)", "tf.concat([x, xk], -1)", "tf.concat([m, m, m], 1)",
    "tf.concat([x], 1)", "tf.concat([x, m], 0)", "tf.concat([xk, xk[:, :2]], 1)",
    "tf.concat([xk, xk[:, :, :2]], 1)", "tf.concat([x, x], 3)", "tf.concat([x, x], i)",
    "tf.split(xk, 2)", "tf.split(x, 3, axis=2)", "tf.split(xk, [1, -1, 2], axis=1)",
    "tf.split(xk, [1, 1], axis=1)", "tf.split(x, 5, axis=1)", "tf.split(xk, 3)",
    "tf.split(xk, [2, 2], axis=1)",
    "tf.stack([m, m])", "tf.stack([m, m], axis=1)", "tf.stack([m, m], axis=-1)",
    "tf.stack([m, xk[0, :, :3]])", "tf.stack([m, m], axis=3)", "tf.stack([1, i, 3])",
    "tf.unstack(xk[:, :2])", "tf.unstack(x[:2], axis=2, num=6)", "tf.unstack(xk, axis=-1)",
    "tf.unstack(x)", "tf.convert_to_tensor([[i, 1], [2, 3]])",
    "tf.tile(m, [2, 3])", "tf.tile(x, [1, 2, 1])", "tf.tile(m, [2])",
    "tf.pad(m, [[1, 2], [0, 1]])",
    "tf.pad(x, [[0, 0], [1, 1], [2, 0]], constant_values=-1.5)",
    "tf.pad(m, [[1, 1], [2, 2]], mode='REFLECT')",
    "tf.pad(m, [[3, 3], [2, 2]], mode='symmetric')",
    "tf.pad(m, [[1, 1], [3, 0]], mode='REFLECT')", "tf.pad(m, [[1, 1]])",
    "tf.pad(m, [[1, -1], [0, 0]])", "tf.pad(sv, [[1, 2]])",
    "tf.fill([2, 3], 1.5)", "tf.fill(tf.shape(m), i)", "tf.fill([2, -1], 1.0)",
    "tf.zeros([2, 3])", "tf.zeros(tf.shape(x), tf.int64)", "tf.ones([3], tf.bool)",
    "tf.zeros([2, tf.shape(m)[1]])", "tf.zeros_like(x)", "tf.zeros_like(xk, tf.int32)",
    "tf.ones_like(m)", "tf.ones_like(x, dtype=tf.float64)", "tf.zeros([2], tf.string)",
    "tf.zeros_like(sv)",
    "tf.slice(m, [1, 0], [2, -1])", "tf.slice(x, [0, 1, 2], [-1, 2, 3])",
    "tf.slice(m, [1, 0], [4, 1])", "tf.slice(m, [5, 0], [1, 1])",
    "tf.slice(xk, [0, 0], [1, 1])", "tf.strided_slice(xk, [0, 1], [4, 5], [2, 2])",
    "tf.strided_slice(x, [1, 0, 0], [0, 0, 0], [1, 1, 1], end_mask=7)",
    "x[1]", "x[-1, 2:]", "x[:, ::-1]", "x[..., 0]", "x[..., None]", "x[None, ..., ::2]",
    "xk[3, 4, 5]", "xk[1:3, -2:, ::-3]", "xk[4]", "xk[-5]", "xk[:, 7]", "xk[1, 2, 3, 4]",
    "xu[1:, 0]", "xu[..., 1]", "m[i]", "m[i:]", "m[:, i - 1]", "xk[::0]",
    "x[1, ..., 2, ...]", "m[-1:0:-1, ::-2]", "xk[:, tf.newaxis, 1:2, tf.newaxis]", "m[1.5]",
    "m[[1, 2]]", "m[m > 3.0]", "iv[1:-1]", "sv[::2]", "x[:, 1:4, None, 5:0:-2]",
    "x[..., None, None]", "x[-1::-1, -1, ...]", "x[:0]", "x[::3, ::-3, ::4]",
    "tf.gather(m, [3, 0, 0])", "tf.gather(m, [[1], [2]])", "tf.gather(x, iv, axis=2)",
    "tf.gather(m, iv)", "tf.gather(m, [0, 4])", "tf.gather(m, [-1])",
    "tf.gather(xk, [1, 0], axis=-1)",
    "tf.gather(xk, [[0, 4], [2, 1], [0, 0], [3, 3]], axis=1, batch_dims=1)",
    "tf.gather(xk, [[0, 5], [2, 1], [0, 0], [3, 3]], axis=2, batch_dims=1)",
    "tf.gather(sv, [4, 0])", "tf.gather(m, 2)", "tf.gather(m, [1], axis=2)",
    "tf.gather_nd(m, [[0, 1], [3, 2]])", "tf.gather_nd(xk, [[1], [0]])",
    "tf.gather_nd(x, [[[1, 2]], [[0, 0]]])", "tf.gather_nd(m, [[4, 0]])",
    "tf.gather_nd(m, [[0, 1, 2]])",
    "tf.scatter_nd([[1], [3], [1]], [1.0, 2.0, 3.0], [5])",
    "tf.scatter_nd([[0, 1], [2, 2]], [[5, 6], [7, 8]], [3, 3, 2])",
    "tf.scatter_nd([[0], [5]], [1.0, 2.0], [4])",
    "tf.scatter_nd([[0], [1]], [1.0, 2.0, 3.0], [4])",
    "tf.one_hot(iv, 4)", "tf.one_hot([[0, 2], [5, -1]], 3, axis=0)",
    "tf.one_hot(iv, 3, 5, -1)", "tf.one_hot(iv, 2, on_value=2.0, off_value=0.5, axis=1)",
    "tf.one_hot([1, 2], i, dtype=tf.int64)",
    "tf.reverse(x, [1])", "tf.reverse(xk, [0, -1])", "tf.reverse(m, [2])",
    "tf.reverse(m, [1, 1])", "tf.reverse(sv, [0])", "tf.broadcast_to(m[:1], [2, 4, 3])",
    "tf.broadcast_to(m, tf.shape(m))", "tf.broadcast_to(m, [4, 6])",
    "tf.broadcast_to([1.0, 2.0], [3, 2])",
    "tf.broadcast_static_shape(tf.TensorShape([2, 1]), tf.TensorShape([3]))",
    "tf.unique([4, 1, 4, 2, 1, 1])", "tf.unique(iv, out_idx=tf.int64)", "tf.unique(sv)",
    "tf.nn.top_k(m, 2)", "tf.nn.top_k([[1, 3, 3, 2, 3]], 3)", "tf.nn.top_k(x, 6)",
    "tf.nn.top_k(m, 4)", "tf.nn.top_k(tf.cast(iv, tf.float32), i)",
    "tf.dynamic_partition(m, [0, 1, 0, 2], 3)",
    "tf.dynamic_partition(xk, [[0, 1, 0, 1, 1]] * 4, 2)",
    "tf.dynamic_partition(m, [0, 1, 0, 3], 3)", "tf.dynamic_partition(m, [0, 1], 2)",
    "tf.dynamic_stitch([[0, 3], [1, 2]], [m[:2], m[2:]])",
    "tf.dynamic_stitch([[1, 1], [0]], [[1.0, 2.0], [3.0]])",
    "tf.dynamic_stitch([iv], [tf.cast(iv, tf.float32)])",
    "tf.boolean_mask(m, [True, False, True, True])", "tf.boolean_mask(xk, xk[..., 0] > 3.0)",
    "tf.boolean_mask(m, [True, False, True], axis=1)", "tf.sequence_mask([1, 3, 0], 4)",
    "tf.sequence_mask(iv)", "tf.sequence_mask([[1], [2]], 3, dtype=tf.float32)",
    "tf.gradients(tf.reduce_sum(tf.gather(m, [1, 1, 3]) * 2.0), m)[0].values",
    "tf.gradients(tf.reduce_sum(x[1:, ::2, 3] * x[1:, ::2, 3]), x)",
    "tf.gradients(tf.reduce_sum(tf.tile(m, [2, 3])), m)",
    "tf.gradients(tf.reduce_sum(tf.concat([m, 2.0 * m], 1) ** 2), m)",
    "tf.gradients(tf.reduce_sum(tf.nn.top_k(m, 2)[0] * 3.0), m)",
    "tf.gradients(tf.reduce_sum(tf.pad(m, [[1, 2], [2, 1]], mode='SYMMETRIC')), m)",
    "tf.gradients(tf.reduce_sum(tf.broadcast_to(m[:1], [2, 4, 3])), m)",
    "tf.broadcast_dynamic_shape(tf.shape(m)[:1], [3, 1, 1])",
    "tf.broadcast_dynamic_shape([2, 3], [4])",
    "tf.transpose(tf.complex(m, m * 2.0), conjugate=True)", "tf.transpose(m, conjugate=True)",
    "tf.gather(xk, [[0, 1], [2, 1], [0, 0], [3, 3]], axis=1, batch_dims=-1)",
    "tf.squeeze(xk[:, :1], squeeze_dims=[1])", "tf.expand_dims(m, dim=1)",
    "tf.split(m, tf.constant([1, 2]), axis=1)", "tf.split(m, np.array([3, 1]))",
    "tf.reshape(tf.constant([[1, 2], [3, 4]]), [-1])[::-1]",
    "tf.stack([tf.shape(m)[0], tf.shape(x)[2]])", "tf.fill([i, 2], 'a')", "tf.tile(sv, [2])",
    "tf.concat([sv, sv], 0)", "tf.gather_nd(sv, [[1], [3]])",
    "tf.pad(m, [[0, 0], [1, 1]], constant_values=tf.constant(7.0))", "tf.slice(iv, [1], [i])",
    "tf.strided_slice(m, [0], [-1], [1])", "tf.strided_slice(m, [1, 1], [3, 3])",
    "tf.unstack(m, num=4)", "tf.one_hot(iv, 4, dtype=tf.bool)",
    "tf.one_hot(iv, 4, on_value=1, off_value=0.0)", "tf.nn.top_k(iv, 2)", "tf.nn.top_k(m, 0)",
    "tf.zeros([0, 3])", "tf.ones([2, 2], tf.int8)", "tf.concat([m, tf.zeros([0, 3])], 0)",
    "tf.gather(m, tf.constant([], tf.int32))", "tf.unique(tf.constant([], tf.int32))",
    "tf.dynamic_partition(m, [2, 2, 2, 2], 3)", "tf.sequence_mask(tf.constant([2, 0, 1]), i)",
    "tf.boolean_mask(sv, [True, False, True, False, True])",
    "tf.reverse(xk, tf.constant([], tf.int32))", "tf.tile(m, [0, 2])",
    "tf.broadcast_to(3.0, [2, 2])", "tf.reshape(m, [2, -1, 0])",
    "tf.reshape(tf.zeros([0, 3]), [-1, 0])",
    "tf.gradients(tf.reduce_sum(tf.gather(xk, [2, 0], axis=1) ** 2), xk)",
    "tf.gradients(tf.reduce_sum(tf.gather(xk, [[1, 2], [0, 0], [4, 4], [3, 1]], axis=1, "
    "batch_dims=1) ** 2), xk)",
    "tf.gradients(tf.reduce_sum(tf.dynamic_partition(m, [0, 1, 0, 1], 2)[1] * 3.0), m)",
    "tf.gradients(tf.reduce_sum(tf.dynamic_stitch([[1, 0], [2, 3]], [m[:2], m[2:] * 2.0])), m)",
    "tf.gradients(tf.reduce_sum(tf.gather_nd(xk, [[1, 2], [1, 2]]) * 2.0), xk)",
    "tf.gradients(tf.reduce_sum(tf.gather_nd(xk, [[1], [1]]) * 2.0), xk)[0].values",
    "tf.gradients(tf.reduce_sum(tf.scatter_nd([[1], [1]], m[:2], [3, 3]) ** 2), m)",
    "tf.gradients(tf.reduce_sum(tf.transpose(x, [2, 0, 1])[1:] * 2.0), x)",
    "tf.gradients(tf.reduce_sum(tf.reverse(tf.unstack(xk, axis=1)[3], [0]) ** 2), xk)",
    "tf.gradients(tf.reduce_sum(tf.slice(x, [1, 1, 1], [-1, 2, 3]) ** 2), x)",
    "tf.gradients(tf.reduce_sum(tf.pad(x, [[1, 1], [0, 1], [2, 0]], constant_values=3.0) ** 2), x)",
    "tf.gradients(tf.reduce_sum(tf.fill(tf.shape(m), tf.reduce_sum(m))), m)",
]

# Evaluates each expression in a fresh graph with ORACLE_SETUP's placeholders, runs it, and
# records static shapes, dtypes, values, or the error (class and first message line).
RUNNER = r'''
def _first_line(e):
    msg = getattr(e, "message", None) or str(e)
    lines = [l for l in msg.split("\n") if l.strip() and not l.startswith((" ", "\t"))
             and "Graph execution" not in l and "Detected at" not in l
             and not l.startswith("Node:")]
    return (lines[0] if lines else msg).split(" for '{{node")[0]

def _record(t):
    if isinstance(t, tf.TensorShape):
        return {"static": t.as_list() if t.ndims is not None else None}
    return {"static": t.shape.as_list() if t.shape.ndims is not None else None,
            "dtype": t.dtype.name}

def run_exprs(exprs, setup):
    out = []
    for src in exprs:
        with tf.Graph().as_default():
            ns = {"tf": tf, "np": np}
            exec(setup, ns)
            try:
                r = eval(src, ns)
            except Exception as e:
                out.append({"error": type(e).__name__, "msg": _first_line(e)})
                continue
            rs = list(r) if isinstance(r, (list, tuple)) else [r]
            recs = [_record(t) for t in rs]
            tensors = [t for t in rs if not isinstance(t, tf.TensorShape)]
            try:
                with tf.Session() as s:
                    vals = s.run(tensors, ns["feed"])
            except Exception as e:
                out.append({"error": type(e).__name__, "msg": _first_line(e), "outputs": recs})
                continue
            vals = iter(vals)
            for rec in recs:
                if "dtype" in rec:
                    v = np.asarray(next(vals))
                    if v.dtype == object:
                        rec["value"] = [b.decode() for b in v.reshape(-1)]
                    elif v.dtype.kind == "c":
                        rec["value"] = [v.real.tolist(), v.imag.tolist()]
                    else:
                        rec["value"] = v.tolist()
                    rec["vshape"] = list(v.shape)
            out.append({"outputs": recs})
    return out
'''


def _same(want, got) -> bool:
    if want == got:
        return True
    if "error" in want or "error" in got or len(want["outputs"]) != len(got["outputs"]):
        return False
    for a, b in zip(want["outputs"], got["outputs"], strict=True):
        if any(a.get(k) != b.get(k) for k in ("static", "dtype", "vshape")):
            return False
        if "value" in a:
            try:
                if not np.allclose(np.array(a["value"], float), np.array(b["value"], float)):
                    return False
            except (TypeError, ValueError):
                if a["value"] != b["value"]:
                    return False
    return True


@pytest.mark.oracle
def test_against_tensorflow():
    """Static shapes, dtypes, values and errors (class and message) of many array-op
    expressions, in one TensorFlow subprocess."""
    want = oracle.run_tf(RUNNER + f"\nresult = run_exprs({ORACLE_EXPRS!r}, {ORACLE_SETUP!r})\n",
                         timeout=300)
    ns = {"tf": tf, "np": np}
    exec(RUNNER, ns)
    got = ns["run_exprs"](ORACLE_EXPRS, ORACLE_SETUP)
    bad = [f"{src}\n  TF:  {w}\n  TFX: {g}" for src, w, g in zip(ORACLE_EXPRS, want, got,
                                                                strict=True) if not _same(w, g)]
    assert not bad, "\n".join(bad)


# ---- semantics checked against TensorFlow 2.21 (issue 21); expected values from the oracle --


def test_unique_keeps_each_nan_apart():
    x = np.array([np.nan, -0.0, 0.0, np.nan, np.inf, 1.0, 1.0], np.float64)
    with tf.Session() as s:
        y, idx = s.run(tf.unique(x))
    np.testing.assert_array_equal(y, [np.nan, -0.0, np.nan, np.inf, 1.0])
    np.testing.assert_array_equal(idx, [0, 1, 1, 2, 3, 4, 4])


def test_single_output_list_ops_have_no_extra_dimension():
    p = tf.placeholder(tf.float64, None)
    q = tf.placeholder(tf.float64, None)
    x = np.arange(6.0).reshape(2, 3)
    fetches = {"split": tf.split(p, 1, axis=1)[0], "split_v": tf.split(p, [3], axis=1)[0],
               "shape_n": tf.shape_n([p])[0], "identity_n": tf.identity_n([p])[0],
               "unstack": tf.unstack(q, num=1)[0],
               "dynamic_partition": tf.dynamic_partition(p, [0, 0], 1)[0]}
    with tf.Session() as s:
        got = s.run(fetches, {p: x, q: x[:1]})
    for key, want in {"split": x, "split_v": x, "shape_n": [2, 3], "identity_n": x,
                      "unstack": x[0], "dynamic_partition": x}.items():
        np.testing.assert_array_equal(got[key], want, err_msg=key)
        assert np.shape(got[key]) == np.shape(want), key


@pytest.mark.parametrize("axis, shapes, message", [
    (1, [[2, 3], [3, 3]], "All dimensions except 1 must match. Input 1 has shape [3 3] and "
                          "doesn't match input 0 with shape [2 3]."),
    (1, [[2, 3], [2, 3, 1]], "input 1 should contain 2 elements, but got 3"),
    (2, [[2, 3], [2, 4]], "Concat dim is out of range: 2 vs. 2"),
])
def test_concat_offset_rejects_what_tensorflow_rejects(axis, shapes, message):
    from tensorflux.framework.op_def_library import apply_op

    offsets = apply_op("ConcatOffset", concat_dim=axis,
                       shape=[tf.constant(s) for s in shapes])
    with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError) as info:
        s.run(offsets)
    assert message in str(info.value)


def test_placeholder_with_default_shape_must_fit_its_default():
    from tensorflux.framework.op_def_library import apply_op

    x = np.zeros((2, 3), np.float32)
    # The op's shape function checks it, so apply_op (and GraphDef import) do too.
    with pytest.raises(ValueError, match="Dimension 1 in both shapes must be equal, but are 3 "
                                         "and 4"):
        apply_op("PlaceholderWithDefault", input=x, shape=[2, 4])
    with pytest.raises(ValueError, match="Shapes must be equal rank, but are 2 and 1"):
        tf.placeholder_with_default(x, shape=[None])
    assert tf.placeholder_with_default(x, shape=[None, 3]).shape.as_list() == [None, 3]
    # At run time TF does not check a default that comes from another tensor.
    p = tf.placeholder(tf.float32, None)
    d = tf.placeholder_with_default(p, shape=[2])
    with tf.Session() as s:
        assert s.run(d, {p: np.zeros(3, np.float32)}).shape == (3,)


def test_where_on_a_scalar_is_an_error():
    p = tf.placeholder(tf.bool, None)
    with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError,
                                          match="WhereOp : Unhandled input dimensions: 0"):
        s.run(tf.where(p), {p: True})


def test_gather_nd_with_empty_index_vectors_takes_all_of_params():
    params = np.arange(6.0).reshape(2, 3)
    with tf.Session() as s:
        got = s.run(tf.gather_nd(params, np.zeros((4, 0), np.int32)))
        np.testing.assert_array_equal(got, np.broadcast_to(params, (4, 2, 3)))
        assert s.run(tf.gather_nd(params, np.zeros((0, 0), np.int32))).shape == (0, 2, 3)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Requested more than 0 entries, but params is empty"):
            s.run(tf.gather_nd(np.zeros((0, 3)), np.zeros((4, 0), np.int32)))


def test_gather_nd_of_many_rows_in_blocks_equals_one_gather():
    """Over interrupt.SPAN_ELEMENTS, GatherNd checks and gathers its rows in blocks (the step
    checked between them): the values of one fancy index, and a bad index in a later block
    reported at its own position."""
    from tensorflux.kernels import interrupt

    rng = np.random.default_rng(7)
    params = rng.standard_normal((50, 6, 3)).astype(np.float32)
    rows = interrupt.SPAN_ELEMENTS // 3 * 2 + 11  # three blocks of rows
    idx = np.stack([rng.integers(0, 50, rows), rng.integers(0, 6, rows)], -1).astype(np.int64)
    idx = idx.reshape(rows, 1, 2)
    i = tf.placeholder(tf.int64, [None, 1, 2])
    with tf.Session() as s:
        got = s.run(tf.gather_nd(params, i), {i: idx})
        np.testing.assert_array_equal(got, params[idx[..., 0], idx[..., 1]])
        bad = idx.copy()
        late = rows - 5
        bad[late, 0] = [3, 6]
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=rf"indices\[{late},0\] = \[3, 6\] does not index into param "
                                 r"shape \[50,6,3\]"):
            s.run(tf.gather_nd(params, i), {i: bad})


def test_transpose_takes_negative_perm_entries():
    x = np.arange(24.0).reshape(2, 3, 4)
    p = tf.placeholder(tf.int32, [3])
    with tf.Session() as s:
        np.testing.assert_array_equal(s.run(tf.transpose(x, [-1, 0, -2])),
                                      np.transpose(x, [2, 0, 1]))
        np.testing.assert_array_equal(s.run(tf.transpose(x, p), {p: [-1, -3, 1]}),
                                      np.transpose(x, [2, 0, 1]))
        with pytest.raises(tf.errors.InvalidArgumentError, match="0 is missing from"):
            s.run(tf.transpose(x, p), {p: [-1, 1, 1]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="-4 is out of range"):
            s.run(tf.transpose(x, p), {p: [-4, 1, 0]})


def test_gather_of_empty_slices_checks_no_index():
    params = np.zeros((2, 0, 3), np.float32)
    with tf.Session() as s:
        assert s.run(tf.gather(params, [0, 2, 1])).shape == (3, 0, 3)  # 2 is out of range
        with pytest.raises(tf.errors.InvalidArgumentError, match="is not in"):
            s.run(tf.gather(np.zeros((2, 1)), [0, 2, 1]))


def _batch_gather_nd_np(params, indices, b):
    """gather_nd with b batch dimensions, one batch at a time in NumPy."""
    batch = params.shape[:b]
    out = [params[pos][tuple(np.moveaxis(indices[pos], -1, 0))]
           for pos in np.ndindex(*batch)]
    inner = indices.shape[b:-1] + params.shape[b + indices.shape[-1]:]
    return np.array(out).reshape(batch + inner)


@pytest.mark.parametrize("pshape,ishape,b", [
    ((2, 3, 4), (2, 1), 1), ((2, 3, 4), (2, 5, 2), 1), ((2, 3, 4), (2, 3, 1), 2),
    ((3, 2, 4, 5), (3, 2, 6, 1), 2), ((4, 3), (4, 2, 3, 1), 1), ((2, 3, 4), (2, 0, 1), 1)])
def test_gather_nd_with_batch_dims_gathers_per_batch(pshape, ishape, b):
    rng = np.random.default_rng(3)
    params = rng.standard_normal(pshape).astype(np.float32)
    k = ishape[-1]
    idx = np.stack([rng.integers(0, pshape[b + j], ishape[:-1]) for j in range(k)], -1)
    for dtype in (np.int32, np.int64):
        i = tf.placeholder(dtype, [None] * len(ishape))
        y = tf.gather_nd(params, i, batch_dims=b)
        with tf.Session() as s:
            got = s.run(y, {i: idx.astype(dtype)})
        np.testing.assert_array_equal(got, _batch_gather_nd_np(params, idx, b))
    static = tf.gather_nd(params, idx.astype(np.int32), batch_dims=tf.constant(b))
    assert static.shape.as_list() == list(_batch_gather_nd_np(params, idx, b).shape)


def test_gather_nd_with_batch_dims_gradient_and_errors():
    x = tf.placeholder(tf.float64, [None, 3, 4])
    idx = np.array([[[0], [2]], [[1], [1]]], np.int32)
    y = tf.gather_nd(x, idx, batch_dims=1)
    assert y.shape.as_list() == [2, 2, 4]
    xv = np.random.default_rng(0).standard_normal((2, 3, 4))
    with tf.Session():
        err = tf.test.compute_gradient_error(x, [2, 3, 4], y, [2, 2, 4], x_init_value=xv)
    assert err < 1e-8
    g = tf.gradients(tf.reduce_sum(y), x)[0]
    with tf.Session() as s:  # batch 1 takes row 1 twice
        np.testing.assert_array_equal(
            s.run(g, {x: xv})[:, :, 0], [[1, 0, 1], [0, 2, 0]])
    with pytest.raises(ValueError, match="does not allow negative batch_dims"):
        tf.gather_nd(xv, idx, batch_dims=-1)
    with pytest.raises(ValueError, match=r"`batch_dims` = 3 must be less than rank\(`indices`\)"):
        tf.gather_nd(xv, idx, batch_dims=3)
    # batches that differ: TF's own message, from the reshape of the indices
    with pytest.raises(ValueError, match="Cannot reshape a tensor with 4 elements"):
        tf.gather_nd(np.zeros((3, 3, 4)), idx, batch_dims=1)
    i = tf.placeholder(tf.int32, [None, 2, 1])
    with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError, match="reshape"):
        s.run(tf.gather_nd(x, i, batch_dims=1), {x: np.zeros((3, 3, 4)), i: idx})
