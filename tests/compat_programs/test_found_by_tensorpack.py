"""Behaviour TF1 libraries rely on, found by running tensorpack's tests and examples under
tensorflux (`import tensorflow` aliased to it):

- `tensorflow.python.ops.op_selector.get_backward_walk_ops` (tensorpack's session creator
  and `dependency_of_fetches` find what a fetch depends on with it);
- `tensorflow.python.client.session._FetchHandler` (the fetches and targets of a
  `Session.run` structure);
- `tensorflow.python.tools.optimize_for_inference_lib` (tensorpack's ModelExporter);
- `tf.image.decode_png` of a 16-bit grey PNG (export-model's lena.png) into 3 or 4 channels
  keeps each pixel's high byte (Pillow's conversion clipped values above 255 to 255), and
  `channels=2` is refused as in TF (a grey+alpha file still gives two with `channels=0`);
- `import tensorflow` imports multiprocessing's util module, so an atexit cleanup that a
  library registers before its first child process starts runs before multiprocessing's
  handler joins that child (tensorpack's ZeroMQ dataflows hung at exit).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

_WALK_GRAPH = """
a = tf.constant(1., name="a")
b = tf.constant(2., name="b")
c = tf.add(a, b, name="c")
with tf.control_dependencies([c]):
    d = tf.identity(a, name="d")
e = tf.shape(d, name="e")
"""

_WALKS = """
from tensorflow.python.ops import op_selector as s
walks = [
    s.get_backward_walk_ops([d]),
    s.get_backward_walk_ops([d], control_inputs=True),
    s.get_backward_walk_ops(d, inclusive=False, control_inputs=True),
    s.get_backward_walk_ops([d.op], stop_at_ts=[a], control_inputs=True),
    s.get_backward_walk_ops([e], within_ops=[e.op, d.op, c.op, b.op], control_inputs=True),
    s.get_backward_walk_ops([e], within_ops_fn=lambda op: op.name != "c",
                            control_inputs=True),
    s.get_backward_walk_ops([e, c], only_differentiable=True, control_inputs=True),
]
result = [sorted(op.name for op in w) for w in walks]
"""


@pytest.mark.oracle
def test_op_selector_backward_walk_matches_tf():
    from tensorflux.python.ops import op_selector as s

    theirs = run_tf(_WALK_GRAPH + _WALKS)
    namespace = {"tf": tf}
    with tf.Graph().as_default():
        exec(_WALK_GRAPH, namespace)  # noqa: S102 - the same graph as the oracle's
        d, e, c = namespace["d"], namespace["e"], namespace["c"]
        a, b = namespace["a"], namespace["b"]
        walks = [
            s.get_backward_walk_ops([d]),
            s.get_backward_walk_ops([d], control_inputs=True),
            s.get_backward_walk_ops(d, inclusive=False, control_inputs=True),
            s.get_backward_walk_ops([d.op], stop_at_ts=[a], control_inputs=True),
            s.get_backward_walk_ops([e], within_ops=[e.op, d.op, c.op, b.op],
                                    control_inputs=True),
            s.get_backward_walk_ops([e], within_ops_fn=lambda op: op.name != "c",
                                    control_inputs=True),
            s.get_backward_walk_ops([e, c], only_differentiable=True, control_inputs=True),
        ]
    # TF visits each wave of inputs as a set (an order by object ids): compare the ops
    # reached; ours are breadth first, each wave in input order.
    assert [sorted(op.name for op in w) for w in walks] == theirs
    assert [op.name for op in walks[1]] == ["d", "a", "c", "b"]


def test_op_selector_rejects_what_is_not_an_op_or_tensor():
    from tensorflux.python.ops import op_selector as s

    with pytest.raises(TypeError, match="tf.Operation or tf.Tensor"):
        s.get_backward_walk_ops([3])


_FETCH_GRAPH = """
a = tf.constant(1., name="a")
c = tf.add(a, 2., name="c")
with tf.control_dependencies([c]):
    d = tf.identity(a, name="d")
e = tf.no_op(name="e")
structures = [{"x": [c, "d:0"], "y": e, "z": c.op}, [c, c], (d, [e, (c,)]), "c:0"]
"""


@pytest.mark.oracle
def test_fetch_handler_fetches_and_targets_match_tf():
    from tensorflux.python.client.session import _FetchHandler

    theirs = run_tf(_FETCH_GRAPH + """
from tensorflow.python.client.session import _FetchHandler
out = []
for s in structures:
    h = _FetchHandler(tf.get_default_graph(), s, {})
    out.append([[t.name for t in h.fetches()], [op.name for op in h.targets()]])
result = out
""")
    ours = []
    namespace = {"tf": tf}
    with tf.Graph().as_default() as g:
        exec(_FETCH_GRAPH, namespace)  # noqa: S102 - the same graph as the oracle's
        for s in namespace["structures"]:
            h = _FetchHandler(g, s, {})
            ours.append([[t.name for t in h.fetches()], [op.name for op in h.targets()]])
        handler = _FetchHandler(g, {"x": [namespace["c"]], "y": namespace["e"]}, {})
        built = handler.build_results(None, [3.0])
    assert ours == theirs
    assert built == {"x": [3.0], "y": None}


def test_optimize_for_inference_lib_module_takes_tf_arguments():
    from tensorflux.python.tools import optimize_for_inference_lib as lib

    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.constant([[1.0], [2.0]])
        tf.identity(tf.matmul(x, w) + tf.constant(1.0) * 2.0, name="y")
        graph_def = g.as_graph_def()
    out = lib.optimize_for_inference(graph_def, ["x"], ["y"], [tf.float32.as_datatype_enum],
                                     False)
    with tf.Graph().as_default():
        tf.import_graph_def(out, name="")
        with tf.Session() as sess:
            y = sess.run("y:0", {"x:0": [[1.0, 1.0]]})
    assert y.tolist() == [[5.0]]


def test_exit_runs_library_cleanup_before_joining_children():
    # As tensorpack's ZeroMQ dataflows do: the cleanup that terminates a non-daemonic worker
    # is registered before the worker starts (which is when multiprocessing would first
    # import its util module and register the handler that joins children).
    program = textwrap.dedent("""
        import atexit, multiprocessing, time
        import tensorflux
        worker = multiprocessing.get_context("fork").Process(target=time.sleep, args=(300,))
        atexit.register(worker.terminate)
        worker.start()
        print("started", flush=True)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "started"


_GREY16 = """
import numpy as np
rng = np.random.default_rng(7)
grey16 = rng.integers(0, 65536, (5, 6, 1)).astype(np.uint16)
grey16[0, 0, 0], grey16[0, 1, 0] = 65535, 255
"""


@pytest.mark.oracle
def test_decode_png_of_16_bit_grey_matches_tf():
    # The PNG is encoded by each side from the same pixels (both write 16-bit grey PNGs).
    theirs = run_tf(_GREY16 + """
out = {}
with tf.Session() as sess:
    png = tf.image.encode_png(grey16)
    for ch in (0, 1, 3, 4):
        for dt in (tf.uint8, tf.uint16):
            out[f"{ch}-{dt.name}"] = sess.run(tf.image.decode_png(png, ch, dt)).tolist()
    out["image"] = sess.run(tf.image.decode_image(png, channels=3)).tolist()
result = out
""")
    namespace = {}
    exec(_GREY16, namespace)  # noqa: S102 - the same pixels as the oracle's
    ours = {}
    with tf.Graph().as_default(), tf.Session() as sess:
        png = tf.image.encode_png(namespace["grey16"])
        for ch in (0, 1, 3, 4):
            for dt in (tf.uint8, tf.uint16):
                got = sess.run(tf.image.decode_png(png, ch, dt))
                assert got.dtype == dt.as_numpy_dtype
                ours[f"{ch}-{dt.name}"] = got.tolist()
        ours["image"] = sess.run(tf.image.decode_image(png, channels=3)).tolist()
    assert ours == theirs
    high = np.asarray(ours["3-uint8"])
    assert high[0, 0].tolist() == [255] * 3 and high[0, 1].tolist() == [0] * 3


@pytest.mark.oracle
def test_decode_png_refuses_two_channels_as_tf():
    program = """
out = []
pixels = np.arange(8, dtype=np.uint8).reshape(2, 2, 2)
with tf.Session() as sess:
    png = tf.image.encode_png(pixels)
    out.append(sess.run(tf.image.decode_png(png)).tolist())
    for make in (lambda: tf.image.decode_png(png, 2), lambda: tf.image.decode_image(png, 2)):
        try:
            sess.run(make())
            out.append("ran")
        except tf.errors.InvalidArgumentError as e:
            out.append("`channels` must be 0, 1, 3 or 4 but got 2" in e.message)
result = out
"""
    theirs = run_tf(program)
    namespace = {"tf": tf, "np": np}
    with tf.Graph().as_default():
        exec(program, namespace)  # noqa: S102 - the same program as the oracle's
    assert namespace["result"] == theirs == [np.arange(8).reshape(2, 2, 2).tolist(), True, True]
