"""The table-driven op test harness (STYLE rule 5).

One `OpCase` record per op (or per interesting configuration): how to build it from input
tensors, a NumPy reference, how to make inputs, which dtypes. `check_value` runs it under
every execution strategy of `STRATEGIES` (the reference executor, the static compiled path,
the dataflow executor) with fully known and with unknown placeholder shapes, and compares
static shape, dtype and value: the reference's with NumPy, every other strategy's with the
reference's, exactly; `check_gradient`
compares `tf.gradients` against central finite differences, in float32 and float64.

    CASES = [
        OpCase("add", lambda x, y: tf.add(x, y), np.add, shapes=[(2, 3), (3,)]),
        OpCase("relu", tf.nn.relu, lambda x: np.maximum(x, 0), shapes=[(4, 5)],
               make=lambda rng, shape, dt: away_from(rng, shape, dt, 0.0)),
    ]

    @pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
    @pytest.mark.parametrize("dtype", [np.float32, np.float64])
    def test_value(case, dtype):
        check_value(case, dtype)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

import tensorflux as tf
from tensorflux.runtime.exec_options import ExecOptions

# Every way a step can run (runtime/exec_options.py), the reference first: tests run a graph
# under each and compare with the reference. "auto" is the default (static partitions where
# they qualify, compiled loops); "frames" keeps every loop on the frame machinery.
STRATEGIES = {
    "reference": ExecOptions(strategy="reference"),
    "auto": ExecOptions(),
    "dataflow": ExecOptions(strategy="dataflow"),
    "frames": ExecOptions(strategy="dataflow", compile_loops=False, straight_line=False),
}

# Tolerances by dtype (absolute and relative), STYLE rule 5.
TOLERANCE = {
    np.dtype(np.float16): 5e-3,
    np.dtype(ml_dtypes.bfloat16): 2e-2,
    np.dtype(np.float32): 1e-4,
    np.dtype(np.float64): 1e-6,
    np.dtype(np.complex64): 1e-4,
    np.dtype(np.complex128): 1e-6,
}
# Finite-difference steps and gradient tolerances (relative to the Jacobian's scale).
GRAD_DELTA = {np.dtype(np.float32): 1e-2, np.dtype(np.float64): 1e-5}
GRAD_TOLERANCE = {np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-6}


def default_make(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        lo = 0 if np.issubdtype(dtype, np.unsignedinteger) else -5
        return rng.integers(lo, 6, size=shape).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def positive(rng, shape, dtype) -> np.ndarray:
    """Values in [0.5, 2): for log, sqrt, reciprocal, pow bases."""
    return rng.uniform(0.5, 2.0, size=shape).astype(dtype)


def away_from(rng, shape, dtype, point: float, gap: float = 0.1) -> np.ndarray:
    """Normal values at least `gap` away from `point` (kinks of relu, abs, sign, ...)."""
    v = rng.standard_normal(shape)
    v = np.where(np.abs(v - point) < gap, point + np.sign(v - point + 1e-12) * gap, v)
    return v.astype(dtype)


@dataclass
class OpCase:
    """One op configuration under test.

    Attributes:
      name: the test id.
      build: `fn(*input_tensors) -> Tensor or list of Tensors`.
      ref: `fn(*input_arrays) -> array or list of arrays` (NumPy reference).
      shapes: the input shapes.
      make: `fn(rng, shape, dtype) -> array` making each input (default: normal values).
      input_dtypes: per-input dtype override (e.g. int32 indices); None means the case dtype.
      grad: check gradients (for float dtypes).
      grad_inputs: indices of inputs to check gradients for (default: every float input).
      tol: overrides the dtype tolerance.
      unknown_shapes: also run with placeholders of unknown shape.
      consts: inputs passed as Python/NumPy values rather than placeholders (by index).
    """

    name: str
    build: Callable
    ref: Callable
    shapes: Sequence = ()
    make: Callable = default_make
    input_dtypes: Sequence | None = None
    grad: bool = True
    grad_inputs: Sequence[int] | None = None
    tol: float | None = None
    unknown_shapes: bool = True
    consts: Sequence[int] = field(default_factory=tuple)
    grad_tol: float | None = None

    def inputs(self, dtype, seed: int = 0) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        out = []
        for k, shape in enumerate(self.shapes):
            dt = dtype if self.input_dtypes is None or self.input_dtypes[k] is None \
                else self.input_dtypes[k]
            out.append(np.asarray(self.make(rng, shape, dt) if dt == dtype
                                  else default_make(rng, shape, dt)).astype(dt))
        return out


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _build(case: OpCase, arrays, known_shapes: bool):
    g = tf.Graph()
    with g.as_default():
        tensors, feed = [], {}
        for k, a in enumerate(arrays):
            if k in case.consts:
                tensors.append(a)
                continue
            shape = a.shape if known_shapes else None
            p = tf.placeholder(tf.as_dtype(a.dtype), shape, name=f"in{k}")
            tensors.append(p)
            feed[p] = a
        out = case.build(*tensors)
    return g, out, feed


def assert_close(got, want, dtype, tol=None, what=""):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != expected {want.shape}"
    if want.dtype == object or np.issubdtype(want.dtype, np.bool_) or \
            np.issubdtype(want.dtype, np.integer):
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    t = tol if tol is not None else TOLERANCE.get(np.dtype(dtype), 1e-6)
    np.testing.assert_allclose(got.astype(np.float64) if not np.iscomplexobj(got) else got,
                               want.astype(np.float64) if not np.iscomplexobj(want) else want,
                               rtol=t, atol=t, err_msg=what, equal_nan=True)


def check_value(case: OpCase, dtype, seed: int = 0) -> None:
    """Static shape, dtype and value under every strategy, with known and unknown shapes."""
    arrays = case.inputs(dtype, seed)
    want = _as_list(case.ref(*[a.copy() for a in arrays]))
    variants = [True, False] if case.unknown_shapes else [True]
    # Without control flow "frames" is "dataflow" again.
    strategies = {k: v for k, v in STRATEGIES.items() if k != "frames"}
    for known in variants:
        g, out, feed = _build(case, arrays, known)
        outs = _as_list(out)
        assert len(outs) == len(want), f"{case.name}: {len(outs)} outputs, expected {len(want)}"
        results = {}
        for name, options in strategies.items():
            with tf.Session(graph=g, exec_options=options) as sess:
                results[name] = sess.run(outs, feed)
        where = f"{case.name}[{np.dtype(dtype).name}, known_shapes={known}]"
        for k, (got, w, t) in enumerate(zip(results["reference"], want, outs, strict=True)):
            w = np.asarray(w)
            assert t.shape.is_compatible_with(np.shape(w)), \
                f"{where}: static shape {t.shape} vs value shape {np.shape(w)}"
            if w.dtype != object:
                assert np.asarray(got).dtype == w.dtype or t.dtype.as_numpy_dtype == \
                    np.asarray(got).dtype, f"{where}: dtype {np.asarray(got).dtype}"
            assert_close(got, w, dtype, case.tol, where)
            for name, values in results.items():
                assert_close(values[k], got, dtype, 0.0, f"{where} {name} vs reference")


def check_gradient(case: OpCase, dtype, seed: int = 0) -> None:
    """tf.gradients against central differences, for a random projection of the outputs."""
    arrays = case.inputs(dtype, seed)
    g, out, feed = _build(case, arrays, True)
    outs = _as_list(out)
    rng = np.random.default_rng(seed + 1)
    with g.as_default():
        terms = []
        for t in outs:
            if not t.dtype.is_floating:
                continue
            w = rng.standard_normal(t.shape.as_list()).astype(t.dtype.as_numpy_dtype)
            terms.append(tf.reduce_sum(t * w))
        y = tf.add_n(terms) if len(terms) > 1 else terms[0]
    indices = case.grad_inputs if case.grad_inputs is not None else [
        k for k, a in enumerate(arrays)
        if k not in case.consts and np.issubdtype(a.dtype, np.floating)]
    placeholders = [g.get_tensor_by_name(f"in{k}:0") for k in indices]
    tol = case.grad_tol if case.grad_tol is not None else GRAD_TOLERANCE[np.dtype(dtype)]
    with tf.Session(graph=g):  # compute_gradient runs in the default session
        for k, p in zip(indices, placeholders, strict=True):
            others = {q: v for q, v in feed.items() if q is not p}
            theoretical, numerical = tf.test.compute_gradient(
                p, arrays[k].shape, y, [], x_init_value=arrays[k],
                delta=GRAD_DELTA[np.dtype(dtype)], extra_feed_dict=others)
            scale = max(1.0, float(np.max(np.abs(numerical))) if numerical.size else 1.0)
            err = float(np.max(np.abs(theoretical - numerical))) if numerical.size else 0.0
            assert err <= tol * scale, (
                f"{case.name}[{np.dtype(dtype).name}] gradient of input {k}: max error "
                f"{err:.3g} > {tol * scale:.3g}\ntheoretical={theoretical.ravel()[:8]}\n"
                f"numerical={numerical.ravel()[:8]}")


def conv2d_gradient_error(x: np.ndarray, w: np.ndarray, strides=(1, 1, 1, 1),
                          padding: str = "SAME", data_format: str = "NHWC") -> float:
    """tf.test.compute_gradient_error of tf.nn.conv2d(x, w) with respect to both operands
    (float64 arrays), started at their values: the conv tests' finite-difference check."""
    xt, wt = tf.constant(x), tf.constant(w)
    y = tf.nn.conv2d(xt, wt, list(strides), padding, data_format=data_format)
    with tf.Session():
        return tf.test.compute_gradient_error([xt, wt], [x.shape, w.shape], y,
                                              y.shape.as_list(), x_init_value=[x, w])
