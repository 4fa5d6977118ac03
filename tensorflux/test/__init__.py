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
import functools as _functools  # noqa: E402
import os as _os  # noqa: E402
import random as _random  # noqa: E402
import re as _re  # noqa: E402
import sys as _sys  # noqa: E402
import tempfile as _tempfile  # noqa: E402
import unittest as _unittest  # noqa: E402
from unittest import mock  # noqa: E402,F401 - tf.test.mock

import numpy as _np  # noqa: E402

from tensorflux.framework import graph as _graph_lib  # noqa: E402
from tensorflux.framework import random_seed as _random_seed  # noqa: E402
from tensorflux.runtime import session as _session_lib  # noqa: E402
from tensorflux.test.absl_assertions import AbslAssertions as _AbslAssertions  # noqa: E402
from tensorflux.test.stubout import StubOutForTesting  # noqa: E402,F401

_TEMP_DIR: list = []


def _define_absltest_flags() -> None:
    """The two flags absltest defines, which TF's tf.test brings along (programs read
    `FLAGS.test_srcdir` for their test data)."""
    from tensorflux.platform import flags

    if "test_srcdir" not in flags.FLAGS:
        flags.DEFINE_string("test_srcdir", _os.environ.get("TEST_SRCDIR", ""),
                            "Root of directory tree where source files live")
    if "test_tmpdir" not in flags.FLAGS:
        flags.DEFINE_string("test_tmpdir", _os.environ.get(
            "TEST_TMPDIR", _os.path.join(_tempfile.gettempdir(), "absl_testing")),
            "Directory for temporary testing files")


_define_absltest_flags()


def get_temp_dir() -> str:
    """A temporary directory for this test process (removed at exit by the OS's tmp
    policy, as TF's)."""
    if not _TEMP_DIR:
        _TEMP_DIR.append(_tempfile.mkdtemp(prefix="tfx-test-"))
    return _TEMP_DIR[0]


def main(argv=None):
    """Runs the tests of the calling module (`tf.test.main()`), after parsing the command
    line's flags into `tf.flags.FLAGS` and, where the program defines flags with absl-py,
    into absl's FLAGS too (TF's `tf.test.main` runs through absl's app); what neither knows
    goes to unittest."""
    from tensorflux.platform import flags

    argv = list(_sys.argv if argv is None else argv)
    absl_flags = _sys.modules.get("absl.flags")
    if absl_flags is not None and not absl_flags.FLAGS.is_parsed():
        argv = absl_flags.FLAGS(argv, known_only=True)
    argv = flags.FLAGS(argv, known_only=True)
    return _unittest.main(argv=argv)


def disable_with_predicate(pred, skip_message: str):
    """A decorator of test methods: the test is skipped with `skip_message` when `pred()`
    is true at the time it runs (`tf.test.disable_with_predicate`)."""
    def decorator(func):
        @_functools.wraps(func)
        def wrapper(self, *args, **kwargs):
            if pred():
                self.skipTest(skip_message)
            return func(self, *args, **kwargs)
        return wrapper
    return decorator


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


def _test_config(config, force_gpu: bool):
    """A test session's config: TF's test sessions place softly (a model pinned to
    /gpu:0 runs on the CPU) unless the test forces a GPU."""
    if config is not None:
        return config
    from tensorflux.protos import config_pb2  # noqa: PLC0415 - test helper

    return config_pb2.ConfigProto(allow_soft_placement=not force_gpu)


def _text_as_bytes(x):
    """Strings as UTF-8 bytes (an object array), as TF's assertAllEqual compares them: a
    fetched string tensor (bytes) equals the Python strings a test expects."""
    if x.dtype.kind == "U" or (x.dtype == object and any(isinstance(e, str) for e in x.flat)):
        out = _np.empty(x.shape, dtype=object)
        for i, e in enumerate(x.flat):
            out.flat[i] = e.encode("utf-8") if isinstance(e, str) else e
        return out
    if x.dtype.kind == "S":
        return x.astype(object)
    return x


def _assert_nested(a, b, msg, check) -> None:
    """`check(x, y, message)` on each pair of arrays of two nested structures."""
    if isinstance(a, dict) or isinstance(b, dict):
        if not (isinstance(a, dict) and isinstance(b, dict)) or set(a) != set(b):
            raise AssertionError(msg or f"mismatched keys: {a!r} vs {b!r}")
        for key in a:
            _assert_nested(a[key], b[key], msg or f"at key {key!r}", check)
        return
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        try:
            x, y = _np.asarray(a), _np.asarray(b)
        except ValueError:  # ragged: compare the parts
            x = y = None
        if x is None or x.dtype == object or y.dtype == object:
            if len(a) != len(b):
                raise AssertionError(msg or f"lengths differ: {len(a)} vs {len(b)}")
            for i, (u, v) in enumerate(zip(a, b, strict=True)):
                _assert_nested(u, v, msg or f"at index {i}", check)
            return
    check(_np.asarray(a), _np.asarray(b), msg or "")


class TestCase(_AbslAssertions, _unittest.TestCase):
    """`tf.test.TestCase`: a unittest.TestCase with a fresh default graph per test, sessions
    on it, NumPy-aware assertions and absltest's container assertions (TF's base class)."""

    def __init__(self, methodName="runTest"):
        super().__init__(methodName)
        # Set here, as TF does, so a subclass whose setUp skips super().setUp() (PTB's
        # reader_test.py) still gets sessions and a tearDown.
        self._cached_session = None

    # TF seeds every test alike (Python's and NumPy's generators and the new default graph,
    # with random_seed.DEFAULT_GRAPH_SEED); a subclass turns the graph's seed off so.
    _set_default_seed = True

    def setUp(self):
        super().setUp()
        _random.seed(_random_seed.DEFAULT_GRAPH_SEED)
        _np.random.seed(_random_seed.DEFAULT_GRAPH_SEED)
        _graph_lib.reset_default_graph()
        if self._set_default_seed:
            _random_seed.set_random_seed(_random_seed.DEFAULT_GRAPH_SEED)
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
        sess = _session_lib.Session(graph=graph, config=_test_config(config, force_gpu))
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
            self._cached_session = _session_lib.Session(graph=graph,
                                                        config=_test_config(config, force_gpu))
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

    # NumPy-aware assertions with TF's names and defaults; nested dicts, lists and tuples of
    # arrays are compared element by element, as TF's are.
    def assertAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):  # noqa: N802
        _assert_nested(a, b, msg, lambda x, y, m: _np.testing.assert_allclose(
            x, y, rtol=rtol, atol=atol, err_msg=m))

    def assertAllEqual(self, a, b, msg=None):  # noqa: N802
        _assert_nested(a, b, msg, lambda x, y, m: _np.testing.assert_array_equal(
            _text_as_bytes(x), _text_as_bytes(y), err_msg=m))

    def assertAllCloseAccordingToType(self, a, b, rtol=1e-6, atol=1e-6,  # noqa: N802
                                      float_rtol=1e-6, float_atol=1e-6, half_rtol=1e-3,
                                      half_atol=1e-3, bfloat16_rtol=1e-2,
                                      bfloat16_atol=1e-2, msg=None):
        """assertAllClose with tolerances loosened for float32, float16 and bfloat16."""
        kind = _np.asarray(a).dtype
        if kind == _np.float32:
            rtol, atol = max(rtol, float_rtol), max(atol, float_atol)
        elif kind == _np.float16:
            rtol, atol = max(rtol, half_rtol), max(atol, half_atol)
        elif kind.name == "bfloat16":
            rtol, atol = max(rtol, bfloat16_rtol), max(atol, bfloat16_atol)
        self.assertAllClose(_np.asarray(a, _np.float64) if kind.name == "bfloat16" else a,
                            _np.asarray(b, _np.float64) if kind.name == "bfloat16" else b,
                            rtol=rtol, atol=atol, msg=msg)

    @_contextlib.contextmanager
    def assertRaisesWithPredicateMatch(self, exception_type,  # noqa: N802
                                       expected_err_re_or_predicate):
        """Expects `exception_type` raised in the block, its message matching the regular
        expression (searched) or satisfying the predicate."""
        if callable(expected_err_re_or_predicate):
            predicate = expected_err_re_or_predicate
        else:
            def predicate(e):
                return _re.search(expected_err_re_or_predicate, str(e)) is not None
        try:
            yield
        except exception_type as e:
            if not predicate(e):
                raise AssertionError(f"Exception of type {type(e).__name__}: {e} does not "
                                     f"match {expected_err_re_or_predicate!r}") from e
        else:
            raise AssertionError(f"Exception of type {exception_type.__name__} not raised")

    def assertRaisesOpError(self, expected_err_re_or_predicate):  # noqa: N802
        """assertRaisesWithPredicateMatch for `tf.errors.OpError`."""
        from tensorflux.framework import errors  # noqa: PLC0415 - test helper

        return self.assertRaisesWithPredicateMatch(errors.OpError,
                                                   expected_err_re_or_predicate)

    def assertStartsWith(self, actual, expected_start, msg=None):  # noqa: N802
        if not actual.startswith(expected_start):
            raise AssertionError(msg or f"{actual!r} does not start with {expected_start!r}")

    assertItemsEqual = _unittest.TestCase.assertCountEqual  # noqa: N815 - TF1's name

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

    def assertDeviceEqual(self, device1, device2, msg=None):  # noqa: N802
        """The two device strings (or DeviceSpecs) name the same device once parsed."""
        from tensorflux.framework.device_spec import DeviceSpecV2  # noqa: PLC0415

        def canonical(device):
            device = device if isinstance(device, str) else device.to_string()
            return DeviceSpecV2.from_string(device).to_string()
        device1, device2 = canonical(device1), canonical(device2)
        self.assertEqual(device1, device2,
                         f"Devices {device1} and {device2} are not equal. {msg}")

    def assertSameElements(self, expected_seq, actual_seq, msg=None):  # noqa: N802
        """absltest's: the two sequences hold the same set of elements (counts ignored)."""
        expected, actual = set(expected_seq), set(actual_seq)
        if expected != actual:
            self.fail(msg or f"Expected, but missing: {sorted(expected - actual, key=repr)}; "
                      f"unexpected, but present: {sorted(actual - expected, key=repr)}")

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
