"""Assert, CheckNumerics, Print, StringFormat and PrintV2 (tensorflux/ops/logging_ops.py):
what they print and the errors they raise, against TensorFlow, and their graph-level
behaviour (first_n across runs, gradients, output streams)."""

from __future__ import annotations

import io
import logging

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_both

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning:tensorflux.kernels.cpu"),
              pytest.mark.usefixtures("fresh_graph")]

# One program, run under TensorFlow and under tensorflux: everything Print and tf.print
# write, and the first line of each error. TensorFlow's kernels write to file descriptors
# 1 and 2; ours write to sys.stdout / sys.stderr.
PROGRAM = r'''
import contextlib, io, os, sys, tempfile

def capture(fn, stream="stderr"):
    if tf.__name__.startswith("tensorflow"):
        fd = 1 if stream == "stdout" else 2
        sys.stdout.flush(); sys.stderr.flush()
        tmp = tempfile.TemporaryFile()
        saved = os.dup(fd)
        os.dup2(tmp.fileno(), fd)
        try:
            fn()
        finally:
            sys.stdout.flush(); sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)
        tmp.seek(0)
        return tmp.read().decode()
    buf = io.StringIO()
    redirect = contextlib.redirect_stdout if stream == "stdout" else contextlib.redirect_stderr
    with redirect(buf):
        fn()
    return buf.getvalue()

def error_line(fn, marker):
    try:
        fn()
    except tf.errors.InvalidArgumentError as e:
        return type(e).__name__, [l for l in e.message.split("\n") if marker in l][0]
    return None

result = {}
s = tf.Session()
x = tf.placeholder(tf.float32, None, name="x")
m = np.arange(30, dtype=np.float32).reshape(5, 6)
p = tf.Print(x, [x, tf.constant("str\n\"q\"\t\x01"), tf.constant([[1, 2, 3], [4, 5, 6]])],
             message="msg: ", first_n=2, summarize=4)
result["print_first_n"] = capture(lambda: [s.run(p, {x: v}) for v in
                                           ([1.5, 2, 3, 4, 5], [7.0], [8.0])])
result["print_default"] = capture(lambda: s.run(tf.Print(x, [x]), {x: m[:2, :5]}))
result["print_all"] = capture(lambda: s.run(tf.Print(x, [x], summarize=-1), {x: m[:2, :3]}))
floats = [tf.constant([True, False]), tf.constant(1e-8), tf.constant(123456789.0),
          tf.constant(np.float64(1 / 3)), tf.constant([0.1, -0.0], tf.float64),
          tf.constant(np.array([1.1, 65504], np.float16)), tf.constant(2 ** 40, tf.int64),
          tf.constant([-np.inf])]
result["print_floats"] = capture(lambda: s.run(tf.Print(x, [x] + floats, summarize=20),
                                               {x: [0.1, 1e10, -2.5, np.nan, np.inf]}))
result["print_grad"] = s.run(tf.gradients(p * 3.0, x)[0], {x: [1.0, 2.0]}).tolist()

def tp(*args, **kwargs):
    op = tf.print(*args, **kwargs)
    return capture(lambda: s.run(op, {x: m}))

result["tp_scalars"] = tp(tf.constant(5), tf.constant(2.5), tf.constant("hi"), "lit", 3)
result["tp_string_alone"] = tp(tf.constant("just me"))
result["tp_matrix"] = tp("x:", x)
result["tp_summarize"] = tp(x, summarize=2)
result["tp_all"] = tp(x, summarize=-1)
result["tp_sep_end"] = tp("a", x[0, :2], "b", sep="|", end="!\n")
result["tp_structure"] = tp({"a": x[0, 0], "b": [1, x[0, 1]]}, ("t", x[1, 1]))
result["tp_values"] = tp(tf.constant(["a", "b\n"]), tf.constant([True, False]),
                         tf.constant([1.5, 2.0, 1e-9, 1e9]), tf.constant(1 / 3, tf.float64))
result["tp_3d"] = tp(tf.reshape(tf.range(24), [2, 3, 4]), summarize=1)
result["tp_empty"] = tp(tf.zeros([0, 3]), tf.zeros([2, 0]))
result["tp_braces"] = tp("{} literal", x[0, 0])
result["tp_stdout"] = capture(lambda: s.run(tf.print("to out", x[0, 0], output_stream=sys.stdout),
                                            {x: m}), "stdout")

c = tf.check_numerics(x, "boom")
result["nan"] = error_line(lambda: s.run(c, {x: [1, np.nan, 2]}), "Tensor had")
result["inf"] = error_line(lambda: s.run(c, {x: [1, np.inf]}), "Tensor had")
result["inf_nan"] = error_line(lambda: s.run(c, {x: [-np.inf, np.nan]}), "Tensor had")
result["finite"] = s.run(c, {x: [1.0, -2.0]}).tolist()
result["half"] = error_line(lambda: s.run(tf.check_numerics(tf.cast(x, tf.float16), "h"),
                                          {x: [1e6]}), "Tensor had")
try:
    tf.check_numerics(tf.constant([1, 2]), "ints")
except TypeError as e:
    result["int_type"] = str(e)
a = tf.Assert(tf.reduce_all(x > 0), ["s'\"\\", x, tf.constant([[1, 2, 3], [4, 5, 6]]),
                                     tf.constant([True, False, True])], summarize=2)
result["assert"] = error_line(lambda: s.run(a, {x: [1.0, -2.5, 3.0]}), "assertion failed")
result["assert_ok"] = s.run(a, {x: [1.0]})
'''


@pytest.fixture(scope="module")
def both():
    with tf.Graph().as_default():
        return run_both(PROGRAM, tf)


@pytest.mark.oracle
def test_prints_and_errors_match_tensorflow(both):
    ours, theirs = both
    assert set(ours) == set(theirs)
    for key in sorted(theirs):
        expected = theirs[key]
        got = ours[key]
        if isinstance(expected, list) and expected and isinstance(expected[0], str):
            got = list(got)
        assert got == expected, key


def test_first_n_counts_runs_across_fetch_signatures(capsys):
    x = tf.placeholder(tf.float32, [], name="x")
    p = tf.Print(x, [x], message="v=", first_n=3)
    with tf.Session() as s:
        s.run(p, {x: 1.0})
        s.run([p, x + 1.0], {x: 2.0})  # another step graph, the same kernel state
        s.run(p, {x: 3.0})
        s.run(p, {x: 4.0})
    assert capsys.readouterr().err == "v=[1]\nv=[2]\nv=[3]\n"


def test_print_passes_its_input_and_gradient_through(capsys):
    x = tf.constant([1.0, 2.0])
    y = tf.Print(x, [x, tf.constant(7)], message="m ")
    assert y.shape.as_list() == [2] and y.op.type == "Print"
    g = tf.gradients(tf.reduce_sum(y * y), x)[0]
    with tf.Session() as s:
        np.testing.assert_allclose(s.run(g), [2.0, 4.0])
    assert capsys.readouterr().err == "m [1 2][7]\n"


def test_tf_print_to_a_file_and_to_logging(tmp_path, caplog):
    path = tmp_path / "out.txt"
    with tf.Session() as s:
        s.run(tf.print("one", tf.constant([1, 2]), output_stream=f"file://{path}"))
        s.run(tf.print("two", output_stream=f"file://{path}", end=""))
        with caplog.at_level(logging.INFO, logger="tensorflux"):
            s.run(tf.print("logged", tf.constant(3), output_stream=tf.logging.info))
            s.run(tf.print("warned", output_stream=tf.logging.warning))
    assert path.read_text() == "one [1 2]\ntwo"
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.INFO, "logged 3"), (logging.WARNING, "warned")]


def test_tf_print_rejects_unknown_streams_and_arguments():
    with pytest.raises(ValueError, match="Unsupported output stream"):
        tf.print("x", output_stream=io.StringIO())
    with pytest.raises(ValueError, match="Unrecognized keyword"):
        tf.print("x", colour="red")


def test_check_numerics_gradient_checks_the_incoming_gradient():
    x = tf.placeholder(tf.float32, [2])
    y = tf.check_numerics(x, "fwd")
    g = tf.gradients(y * tf.constant([np.inf, 1.0]), x)[0]
    assert g.op.type == "CheckNumerics"
    # TF 2.21 formats the message with Python 3 bytes ("b'fwd'"); TF1's text is kept.
    assert g.op.get_attr("message") == (
        b"Not a number (NaN) or infinity (Inf) values detected in gradient. fwd")
    with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError,
                                          match="in gradient. fwd : Tensor had Inf values"):
        s.run(g, {x: [1.0, 2.0]})


def test_the_graph_optimizer_keeps_checks_on_constants():
    c = tf.check_numerics(tf.constant([np.nan]), "folded?")
    with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError, match="folded"):
        s.run(c)
