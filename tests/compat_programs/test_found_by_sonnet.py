"""Behaviour TF1 libraries rely on, found by running DeepMind Sonnet v1.36's test suite
under tensorflux (`import tensorflow` aliased to it):

- TF's internal modules: `ops.register_proto_function` (Sonnet serializes its modules into
  the MetaGraphDef), `tf_inspect.getargspec` (gone from Python 3.11's inspect),
  `layers.utils.constant_value` / `framework.smart_cond`, `io_ops.restore_v2` (TF's
  `*_ops` modules import their `gen_*_ops` wholesale) and `function.Defun`;
- `tf.contrib.eager`'s graph-mode helpers and `tf.contrib.framework.smart_cond`;
- `Distribution.param_shapes` / `param_static_shapes`;
- `tf.test.main()` parses the command line's flags (absl's too);
- and, for TensorLayer 1.11: `eager.context`, `array_ops.shape_internal`,
  `constant_op._tensor_shape_tensor_conversion_function`, `tf.nn.lrn` with None arguments.
The semantics found by the same suite are in test_found_by_sonnet_semantics.py.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf


def _both(code: str):
    """`code`'s `result` under TensorFlow and under tensorflux (ROOT: the package)."""
    theirs = run_tf(code.replace("ROOT", "tensorflow"))
    ns = {"tf": tf, "np": np}
    with tf.Graph().as_default():
        exec(code.replace("ROOT", "tensorflux"), ns)  # noqa: S102 - the shared program
    return theirs, ns["result"]


GETARGSPEC = """
import functools
from ROOT.python.util import tf_inspect
def f(a, b=1, *c, d, e=2, **k): pass
def g(a, b, c=3): pass
class C:
    def __init__(self, q): pass
    def __call__(self, x, y=1): pass
    def m(self, x, y=2): pass
out = []
for target in [f, g, functools.partial(g, 1, c=4), functools.partial(g, c=4),
               functools.partial(g, b=2), functools.partial(g, a=1), C, C(0), C(0).m, C.m]:
    try:
        spec = tf_inspect.getargspec(target)
        out.append([list(spec.args), spec.varargs, spec.keywords,
                    list(spec.defaults) if spec.defaults else None])
    except ValueError as e:
        out.append("ValueError" + str(e)[str(e).index(" has"):])
result = out
"""


@pytest.mark.oracle
def test_tf_inspect_getargspec_as_tensorflows():
    theirs, ours = _both(GETARGSPEC)
    assert ours == theirs


CONSTANT_VALUE = """
from ROOT.python.layers import utils
from ROOT.python.framework import smart_cond
v = tf.Variable(True)
out = []
for x in [True, False, 1, 0, 1.0, np.bool_(True), tf.constant(True), tf.constant([1, 2]),
          tf.placeholder(tf.bool), v, 2, "a", None]:
    try:
        value = utils.constant_value(x)
        out.append(None if value is None else np.asarray(value).tolist())
    except TypeError as e:
        out.append(str(e))
out.append(smart_cond.smart_constant_value(tf.constant(False)).tolist())
out.append(smart_cond.smart_cond(tf.constant(True), lambda: 1, lambda: 2))
result = out
"""


@pytest.mark.oracle
def test_layers_utils_constant_value_as_tensorflows():
    theirs, ours = _both(CONSTANT_VALUE)
    assert ours == theirs
    assert tf.contrib.framework.smart_cond(True, lambda: 1, lambda: 2) == 1


PARAM_SHAPES = """
d = tf.distributions
out = {}
for name in ["Bernoulli", "Beta", "Categorical", "Dirichlet", "Exponential", "Gamma",
             "Laplace", "Multinomial", "Normal", "StudentT", "Uniform"]:
    try:
        out[name] = {k: s.as_list() for k, s in
                     getattr(d, name).param_static_shapes([3, 2]).items()}
    except NotImplementedError as e:
        out[name] = str(e)
out["shape"] = {k: s.as_list() for k, s in
                d.Normal.param_static_shapes(tf.TensorShape([4])).items()}
out["scalar"] = {k: s.as_list() for k, s in d.Normal.param_static_shapes(5).items()}
for bad in [tf.TensorShape([None]), [-1]]:
    try:
        d.Normal.param_static_shapes(bad)
    except ValueError as e:
        out[str(bad)] = str(e)
shapes = d.Uniform.param_shapes([3, 2])
with tf.Session() as s:
    out["dynamic"] = {k: v.tolist() for k, v in s.run(shapes).items()}
out["names"] = sorted({v.op.name for v in shapes.values()})
result = out
"""


@pytest.mark.oracle
def test_distribution_param_shapes_as_tensorflows():
    theirs, ours = _both(PARAM_SHAPES)
    assert ours == theirs
    assert ours["Normal"] == {"loc": [3, 2], "scale": [3, 2]}


def test_register_proto_function_round_trips_a_collection_through_the_meta_graph():
    from tensorflux.python.framework import ops

    from tensorflux.protos import node_def_pb2

    def to_proto(item, export_scope=None):
        return node_def_pb2.NodeDef(name=item, op="Item")

    def from_proto(proto, import_scope=None):
        return "restored:" + proto.name

    ops.register_proto_function("test_sonnet_items", node_def_pb2.NodeDef,
                                to_proto=to_proto, from_proto=from_proto)
    assert ops.get_collection_proto_type("test_sonnet_items") is node_def_pb2.NodeDef
    assert ops.get_to_proto_function("test_sonnet_items") is to_proto
    assert ops.get_from_proto_function("test_sonnet_items") is from_proto
    assert ops.get_to_proto_function("no_such_collection") is None
    with tf.Graph().as_default():
        tf.add_to_collection("test_sonnet_items", "mod_a")
        meta = tf.train.export_meta_graph()
    with tf.Graph().as_default() as g:
        tf.train.import_meta_graph(meta)
        assert g.get_collection("test_sonnet_items") == ["restored:mod_a"]


def test_ops_modules_hold_the_generated_wrappers_of_their_gen_modules():
    from tensorflux.python.ops import array_ops, io_ops

    with tf.Graph().as_default():
        restored = io_ops.restore_v2("ckpt", ["w"], [""], [tf.float32])
        assert restored[0].op.type == "RestoreV2" and restored[0].dtype == tf.float32
    assert array_ops.reshape is tf.reshape  # a public name still comes first
    with pytest.raises(AttributeError, match="no counterpart"):
        io_ops.no_such_op_anywhere  # noqa: B018


DEFUN = """
from ROOT.python.framework import function
def backward(op, grad):
    return grad * 10., None
@function.Defun(tf.float32, tf.float32, python_grad_func=backward, func_name="PassThrough")
def forward(x, y):
    return tf.identity(y) * 2.
@function.Defun(tf.float32)
def two(x):
    return x + 1., x * x
x, y = tf.constant([1., 2.]), tf.constant([3., 4.])
z, (p, q) = forward(x, y), two(x)
grads = tf.gradients(z, [x, y])
out = {"none": grads[1] is None, "type": type(two(x)).__name__, "name": forward.name,
       "types": [t.name for t in forward.declared_input_types]}
try:
    forward(x)
except ValueError as e:
    out["error"] = str(e)
with tf.Session() as s:
    out["values"] = [a.tolist() for a in s.run([z, grads[0], p, q, tf.gradients(q, x)[0]])]
result = out
"""


@pytest.mark.oracle
def test_defun_values_and_python_grad_func_as_tensorflows():
    theirs, ours = _both(DEFUN)
    assert ours == theirs
    assert ours["values"][1] == [10.0, 10.0]


def test_contrib_eager_runs_tests_in_graph_mode_with_a_session():
    from tensorflux.contrib.eager.python import tfe

    seen = []

    @tfe.run_all_tests_in_graph_and_eager_modes
    class Case(tf.test.TestCase):
        def test_value(self):
            seen.append(self.evaluate(tf.constant(3) * 2))
            seen.append(tfe.executing_eagerly())

        def testSkipEagerKept(self):  # noqa: N802 - TF's prefix
            seen.append(tf.get_default_session())

    for name in ("test_value", "testSkipEagerKept"):
        result = Case(name).run()
        assert result.wasSuccessful(), result.errors + result.failures
    assert seen == [6, False, None]
    doubled = tfe.defun(lambda x: x * 2)
    with tf.Graph().as_default(), tf.Session() as s:
        assert s.run(doubled(tf.constant(4))) == 8
    assert tf.contrib.eager.run_test_in_graph_and_eager_modes is \
        tfe.run_test_in_graph_and_eager_modes


def test_test_main_parses_flags_before_running_the_tests(monkeypatch):
    flags = pytest.importorskip("absl.flags")
    values = flags.FlagValues()
    flags.DEFINE_integer("sonnet_steps", 1, "steps", flag_values=values)
    fake_absl = type(sys)("absl.flags")
    fake_absl.FLAGS = values
    monkeypatch.setitem(sys.modules, "absl.flags", fake_absl)
    seen = {}

    def fake_unittest_main(argv):
        seen["argv"] = argv

    monkeypatch.setattr(tf.test._unittest, "main", fake_unittest_main)
    tf.test.main(argv=["prog", "--sonnet_steps=5", "-v"])
    assert values.sonnet_steps == 5
    assert seen["argv"] == ["prog", "-v"]


TENSORLAYER_INTERNALS = """
from ROOT.python.eager import context
from ROOT.python.framework import constant_op
from ROOT.python.ops.array_ops import shape_internal
x = tf.reshape(tf.range(16, dtype=tf.float32), [1, 2, 2, 4])
y = tf.nn.lrn(x, depth_radius=None, bias=None, alpha=None, beta=None)
c = constant_op._tensor_shape_tensor_conversion_function(tf.TensorShape([2, 3]))
out = {"attrs": [y.op.get_attr(a) for a in ("depth_radius", "bias", "alpha", "beta")],
       "const": [c.op.name, c.dtype.name], "eager": context.executing_eagerly()}
try:
    constant_op._tensor_shape_tensor_conversion_function(tf.TensorShape([None, 3]))
except ValueError as e:
    out["partial"] = str(e)
s1 = shape_internal(x)
s2 = shape_internal(tf.placeholder(tf.float32, [None, 2]), optimize=True)
out["shapes"] = [s1.op.type, s2.op.type]
with tf.Session() as s:
    out["lrn"] = np.round(s.run(y).ravel()[:4], 5).tolist()
    out["shape"] = s.run(s1).tolist()
result = out
"""


@pytest.mark.oracle
def test_internals_tensorlayer_imports_and_lrn_defaults_as_tensorflows():
    theirs, ours = _both(TENSORLAYER_INTERNALS)
    assert ours == theirs
    assert ours["attrs"] == [5, 1.0, 1.0, 0.5]


def test_tensor_shape_helpers_and_variable_scope_variable_of_tf1():
    from tensorflux.python.ops import variable_scope

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        unknown = tf.placeholder(tf.float32)
        assert x._shape_tuple() == (None, 3) and unknown._shape_tuple() is None
        assert x._shape_as_list() == [None, 3] and tf.constant(1.)._shape_tuple() == ()
        assert x._rank() == 2 and unknown._rank() is None
        # TF 1.x's optimizers (and TensorLayer's AMSGrad) make their beta powers with it
        power = variable_scope.variable(0.9, name="beta1_power", trainable=False)
        assert power.name == "beta1_power:0" and not power.trainable
