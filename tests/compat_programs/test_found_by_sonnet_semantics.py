"""Semantics TF1 libraries rely on, found by running DeepMind Sonnet v1.36's test suite
under tensorflux (`import tensorflow` aliased to it):

- `make_template(create_scope_now_=True)` opens no name scope (the first call gets the
  plain name), and an exception raised by the template's function names where the template
  was made (Sonnet's modules are templates; its tests match the creation line);
- `nest.pack_sequence_as` keeps the structure's key order (OrderedDict, defaultdict) and
  raises TF's errors; `map_structure` of nothing raises ValueError;
- a variable whose initial value was made inside a while loop is refused when it is made
  (TF's ValueError), not when the session runs its initializer;
- the Const `dropout/Shape` (Sonnet's MLP test looks it up); `Graph.collections`.
"""

from __future__ import annotations

import pytest

import tensorflux as tf
from tests.compat_programs.test_found_by_sonnet import _both

TEMPLATES = """
def f(x):
    w = tf.get_variable("w", [], initializer=tf.ones_initializer())
    return tf.multiply(x, w, name="out")
a = tf.make_template("dumb", f, create_scope_now_=True)
b = tf.make_template("dumb", f, create_scope_now_=True)
c = tf.make_template("lazy", f)
names = [a.variable_scope.name, b.variable_scope.name, a.variable_scope.original_name_scope]
names += [a(1.).name, b(1.).name, a(2.).name, c(1.).name, c(2.).name]
with tf.name_scope("foo"):
    names += [a(3.).name]
def fails(x):
    raise KeyError("bad key", 7)
t = tf.make_template("failing", fails)
try:
    t(1)
except KeyError as e:
    message, rest = e.args[0], list(e.args[1:])
result = {"names": names, "vars": [v.name for v in tf.global_variables()],
          "head": message.split("originally defined at:")[0], "rest": rest,
          "origin": "originally defined at:\\n" in message}
"""


@pytest.mark.oracle
def test_templates_made_now_open_no_name_scope_and_errors_say_where_they_were_made():
    theirs, ours = _both(TEMPLATES)
    assert ours == theirs
    assert ours["names"][3] == "dumb/out:0" and ours["origin"]


NEST = """
import collections
from ROOT.python.util import nest
dd = collections.defaultdict(list)
dd["z"], dd["a"] = 1, 2
out = []
for call in [lambda: nest.pack_sequence_as("hi", "bye"),
             lambda: nest.pack_sequence_as("hi", ["bye", "twice"]),
             lambda: nest.pack_sequence_as([1, 2], 5),
             lambda: nest.map_structure(lambda x: x),
             lambda: nest.pack_sequence_as(5, (7,)),
             lambda: nest.pack_sequence_as(
                 {"c": collections.OrderedDict([("b", 9), ("a", 8)]), "b": 3}, [1, 2, 3]),
             lambda: nest.map_structure(lambda v: v * 2, dd)]:
    try:
        r = call()
        out.append([type(r).__name__, repr(r)])
    except (TypeError, ValueError) as e:
        out.append([type(e).__name__, str(e)])
result = out
"""


@pytest.mark.oracle
def test_nest_pack_sequence_as_keeps_key_order_and_raises_as_tensorflow():
    theirs, ours = _both(NEST)
    assert ours == theirs


LOOP_INITIAL_VALUE = """
out = {}
for use_resource in (False, True):
    with tf.Graph().as_default():
        def body(i, acc):
            v = tf.get_variable("v", initializer=tf.random_uniform([2]),
                                use_resource=use_resource)
            return i + 1, acc + v
        try:
            tf.while_loop(lambda i, a: i < 3, body, [tf.constant(0), tf.zeros([2])])
            out[str(use_resource)] = "built"
        except ValueError as e:
            out[str(use_resource)] = str(e).split(" Got:")[0]
        def lazy_body(i, acc):  # a callable initializer is built outside the loop
            v = tf.get_variable("w", [2], initializer=tf.ones_initializer(),
                                use_resource=use_resource)
            return i + 1, acc + v
        r = tf.while_loop(lambda i, a: i < 3, lazy_body, [tf.constant(0), tf.zeros([2])])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            out["lazy" + str(use_resource)] = s.run(r)[1].tolist()
result = out
"""


@pytest.mark.oracle
def test_a_variable_initial_value_from_a_while_loop_is_refused_when_made():
    theirs, ours = _both(LOOP_INITIAL_VALUE)
    assert ours == theirs
    assert "inside a control-flow" in ours["True"]


DROPOUT_NAMES = """
y = tf.nn.dropout(tf.ones([1, 3]), keep_prob=0.5)
z = tf.nn.dropout(tf.placeholder(tf.float32, [None, 3]), rate=0.5)
result = sorted(op.name for op in tf.get_default_graph().get_operations()
                if op.name.endswith("Shape"))
"""


@pytest.mark.oracle
def test_dropout_names_its_noise_shape_as_tensorflow():
    theirs, ours = _both(DROPOUT_NAMES)
    assert ours == theirs == ["dropout/Shape", "dropout_1/Shape"]


def test_graph_collections_lists_the_collection_names():
    with tf.Graph().as_default() as g:
        tf.add_to_collection("a", 1)
        tf.add_to_collection("b", 2)
        assert sorted(g.collections) == ["a", "b"]
