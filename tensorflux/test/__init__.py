"""`tf.test`: gradient checking and small helpers."""

from tensorflux.autodiff.gradient_checker import (  # noqa: F401
    compute_gradient,
    compute_gradient_error,
)
from tensorflux.distributed.server import create_local_cluster  # noqa: F401
from tensorflux.runtime.device import gpu_count as _gpu_count


def is_gpu_available(cuda_only: bool = False, min_cuda_compute_capability=None) -> bool:
    return _gpu_count() > 0


def is_built_with_cuda() -> bool:
    return _gpu_count() > 0


def gpu_device_name() -> str:
    return "/device:GPU:0" if _gpu_count() > 0 else ""


# ---- tf.test.TestCase and the helpers TF1 test files use ---------------------------------

import contextlib as _contextlib  # noqa: E402
import os as _os  # noqa: E402
import sys as _sys  # noqa: E402
import tempfile as _tempfile  # noqa: E402
import unittest as _unittest  # noqa: E402
from unittest import mock  # noqa: E402,F401 - tf.test.mock

import numpy as _np  # noqa: E402

from tensorflux.framework import graph as _graph_lib  # noqa: E402
from tensorflux.runtime import session as _session_lib  # noqa: E402

_TEMP_DIR: list = []


def get_temp_dir() -> str:
    """A temporary directory for this test process (removed at exit by the OS's tmp
    policy, as TF's)."""
    if not _TEMP_DIR:
        _TEMP_DIR.append(_tempfile.mkdtemp(prefix="tfx-test-"))
    return _TEMP_DIR[0]


def main(argv=None):
    """Runs the tests of the calling module (`tf.test.main()`)."""
    return _unittest.main(argv=argv)


def is_built_with_gpu_support() -> bool:
    return _gpu_count() > 0


def is_built_with_rocm() -> bool:
    return False


def is_built_with_xla() -> bool:
    return False


def is_cpu_target_available(cpu: str) -> bool:
    return cpu.lower() in ("x86", "x86_64", "aarch64", "arm")


def test_src_dir_path(relative_path: str) -> str:
    return _os.path.join(_os.path.dirname(_os.path.dirname(__file__)), relative_path)


def assert_equal_graph_def(actual, expected, checkpoint_v2=False, hash_table_shared_name=False):
    """Raises AssertionError when two GraphDefs differ (node order and attr order aside)."""
    def nodes(gd):
        return {n.name: n for n in gd.node}
    a, e = nodes(actual), nodes(expected)
    if set(a) != set(e):
        raise AssertionError(f"GraphDefs differ in nodes: only in actual {sorted(set(a) - set(e))},"
                             f" only in expected {sorted(set(e) - set(a))}")
    for name in a:
        if a[name] != e[name]:
            raise AssertionError(f"GraphDefs differ at node {name}:\n{a[name]}\nvs\n{e[name]}")


class TestCase(_unittest.TestCase):
    """`tf.test.TestCase`: a unittest.TestCase with a fresh default graph per test, sessions
    on it, and NumPy-aware assertions."""

    def setUp(self):
        super().setUp()
        _graph_lib.reset_default_graph()
        self._cached_session = None

    def tearDown(self):
        if self._cached_session is not None:
            self._cached_session.close()
            self._cached_session = None
        super().tearDown()

    def get_temp_dir(self) -> str:
        path = _os.path.join(get_temp_dir(), self.id())
        _os.makedirs(path, exist_ok=True)
        return path

    @_contextlib.contextmanager
    def session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """A new Session on `graph` (default: the default graph), made the default one."""
        graph = graph or _graph_lib.get_default_graph()
        sess = _session_lib.Session(graph=graph, config=config)
        try:
            with graph.as_default(), sess.as_default():
                yield sess
        finally:
            sess.close()

    @_contextlib.contextmanager
    def cached_session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """One Session per test, reused by later calls (closed in tearDown)."""
        graph = graph or _graph_lib.get_default_graph()
        if self._cached_session is None or self._cached_session.graph is not graph:
            if self._cached_session is not None:
                self._cached_session.close()
            self._cached_session = _session_lib.Session(graph=graph, config=config)
        with graph.as_default(), self._cached_session.as_default():
            yield self._cached_session

    def __getattr__(self, name):
        # `self.test_session()` (TF1's older name) without a `test_session` attribute the
        # test loaders would take for a test.
        if name == "test_session":
            return self.cached_session
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def evaluate(self, tensors):
        """The values of `tensors` in the default session (or a cached one)."""
        sess = _session_lib.get_default_session()
        if sess is not None:
            return sess.run(tensors)
        with self.cached_session() as s:
            return s.run(tensors)

    # NumPy-aware assertions with TF's names and defaults.
    def assertAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):  # noqa: N802
        _np.testing.assert_allclose(_np.asarray(a), _np.asarray(b), rtol=rtol, atol=atol,
                                    err_msg=msg or "")

    def assertAllEqual(self, a, b, msg=None):  # noqa: N802
        _np.testing.assert_array_equal(_np.asarray(a), _np.asarray(b), err_msg=msg or "")

    def assertNotAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):  # noqa: N802
        if _np.allclose(_np.asarray(a), _np.asarray(b), rtol=rtol, atol=atol):
            raise AssertionError(msg or f"{a} and {b} are close")

    def assertArrayNear(self, farray1, farray2, err, msg=None):  # noqa: N802
        self.assertAllClose(farray1, farray2, rtol=0, atol=err, msg=msg)

    def assertNear(self, f1, f2, err, msg=None):  # noqa: N802
        self.assertTrue(abs(f1 - f2) <= err, msg or f"{f1} != {f2} +/- {err}")

    def assertShapeEqual(self, np_array, tf_tensor, msg=None):  # noqa: N802
        self.assertEqual(list(_np.shape(np_array)), tf_tensor.get_shape().as_list(), msg)

    def assertAllGreater(self, a, comparison_target):  # noqa: N802
        self.assertTrue(_np.all(_np.asarray(a) > comparison_target))

    def assertAllLess(self, a, comparison_target):  # noqa: N802
        self.assertTrue(_np.all(_np.asarray(a) < comparison_target))

    def assertAllInRange(self, target, lower_bound, upper_bound, open_lower_bound=False,  # noqa: N802
                         open_upper_bound=False):
        t = _np.asarray(target)
        lo = t > lower_bound if open_lower_bound else t >= lower_bound
        hi = t < upper_bound if open_upper_bound else t <= upper_bound
        self.assertTrue(_np.all(lo & hi), f"{target} not in [{lower_bound}, {upper_bound}]")

    def assertDTypeEqual(self, target, expected_dtype):  # noqa: N802
        self.assertEqual(_np.asarray(target).dtype, _np.dtype(expected_dtype))

    def assertProtoEquals(self, expected, message, msg=None):  # noqa: N802
        from google.protobuf import text_format  # noqa: PLC0415 - protobuf is a dependency

        if isinstance(expected, str):
            parsed = type(message)()
            text_format.Parse(expected, parsed)
            expected = parsed
        self.assertEqual(expected, message, msg)


class Benchmark:
    """`tf.test.Benchmark`: `report_benchmark` prints one line per benchmark."""

    def report_benchmark(self, iters=None, cpu_time=None, wall_time=None, throughput=None,
                         extras=None, name=None, metrics=None):
        print(f"benchmark {name or type(self).__name__}: iters={iters} wall_time={wall_time}"
              f" extras={extras}", file=_sys.stdout)


def benchmark_config():
    """The ConfigProto TF uses for benchmarks (graph optimizations as configured)."""
    from tensorflux.protos.config_pb2 import ConfigProto  # noqa: PLC0415

    return ConfigProto()
