"""tf.errors: classes and codes, TF's message format, and `annotate` for the runtime."""

import pickle

import pytest

from tensorflux.framework import errors
from tests import oracle

CLASSES = [
    ("CancelledError", "CANCELLED", 1), ("UnknownError", "UNKNOWN", 2),
    ("InvalidArgumentError", "INVALID_ARGUMENT", 3),
    ("DeadlineExceededError", "DEADLINE_EXCEEDED", 4), ("NotFoundError", "NOT_FOUND", 5),
    ("AlreadyExistsError", "ALREADY_EXISTS", 6),
    ("PermissionDeniedError", "PERMISSION_DENIED", 7),
    ("ResourceExhaustedError", "RESOURCE_EXHAUSTED", 8),
    ("FailedPreconditionError", "FAILED_PRECONDITION", 9), ("AbortedError", "ABORTED", 10),
    ("OutOfRangeError", "OUT_OF_RANGE", 11), ("UnimplementedError", "UNIMPLEMENTED", 12),
    ("InternalError", "INTERNAL", 13), ("UnavailableError", "UNAVAILABLE", 14),
    ("DataLossError", "DATA_LOSS", 15), ("UnauthenticatedError", "UNAUTHENTICATED", 16),
]


@pytest.mark.parametrize("name,const,code", CLASSES, ids=[c[0] for c in CLASSES])
def test_classes_and_codes(name, const, code):
    cls = getattr(errors, name)
    assert getattr(errors, const) == code
    assert issubclass(cls, errors.OpError) and issubclass(cls, Exception)
    err = cls(None, None, "went wrong")
    assert err.error_code == code and err.message == "went wrong" and str(err) == "went wrong"
    assert err.op is None and err.node_def is None and err.experimental_payloads == {}
    assert errors.exception_type_from_error_code(code) is cls
    assert errors.error_code_from_exception_type(cls) == code
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is cls and again.message == "went wrong"


def test_base_class_and_lookups():
    assert errors.OK == 0
    err = errors.OpError(None, None, "m", errors.INVALID_ARGUMENT)
    assert err.error_code == 3 and str(err) == "m"
    assert pickle.loads(pickle.dumps(err)).error_code == 3
    with pytest.raises(KeyError):
        errors.exception_type_from_error_code(99)
    assert errors.error_code_from_exception_type(ValueError) == errors.UNKNOWN
    with pytest.raises(errors.OpError):
        raise errors.NotFoundError(None, None, "no such file")


class _FakeOp:
    name = "add"
    traceback = [("model.py", 3, "<module>"), ("model.py", 17, "build")]


def test_str_appends_creation_stack_of_op():
    err = errors.InvalidArgumentError(None, _FakeOp(), "bad")
    assert str(err) == ("bad\n\nOriginal stack trace for 'add':\n"
                        '  File "model.py", line 3, in <module>\n'
                        '  File "model.py", line 17, in build\n')
    assert err.message == "bad"


# (error, annotate kwargs, class, message). The node line follows TF: `{{node x}}` alone;
# with a creation site, TF1's "node x (defined at f:l) "; with op type and device, the
# NodeDef-like "= Op[_device=...]" that TF 1.x printed.
STACK = [("m.py", 3, "<module>"), ("m.py", 17, "build")]
ANNOTATE = [
    (errors.InvalidArgumentError(None, None, "Incompatible shapes: [2] vs. [3]"),
     {"node_name": "add"}, errors.InvalidArgumentError,
     "Incompatible shapes: [2] vs. [3]\n\t [[{{node add}}]]"),
    (errors.InvalidArgumentError(None, None, "Incompatible shapes: [2] vs. [3]"),
     {"node_name": "add", "traceback": STACK}, errors.InvalidArgumentError,
     "Incompatible shapes: [2] vs. [3]\n\t [[node add (defined at m.py:17) ]]"),
    (errors.OutOfRangeError(None, None, "closed"),
     {"node_name": "deq", "op_type": "QueueDequeueV2",
      "device": "/job:localhost/replica:0/task:0/device:CPU:0", "traceback": STACK},
     errors.OutOfRangeError,
     "closed\n\t [[node deq (defined at m.py:17) = QueueDequeueV2"
     '[_device="/job:localhost/replica:0/task:0/device:CPU:0"]]]'),
    (errors.InvalidArgumentError(None, None, "x"),
     {"node_name": "mul", "op_type": "Mul", "inputs": ["a", "b:1"]},
     errors.InvalidArgumentError, "x\n\t [[{{node mul}} = Mul(a, b:1)]]"),
    (ValueError("bad value"), {"node_name": "n"}, errors.InvalidArgumentError,
     "bad value\n\t [[{{node n}}]]"),
    (TypeError("bad type"), {"node_name": "n"}, errors.InvalidArgumentError,
     "bad type\n\t [[{{node n}}]]"),
    (KeyError("k"), {"node_name": "n"}, errors.InvalidArgumentError, "k\n\t [[{{node n}}]]"),
    (IndexError("i"), {"node_name": "n"}, errors.InvalidArgumentError,
     "i\n\t [[{{node n}}]]"),
    (StopIteration(), {"node_name": "n"}, errors.OutOfRangeError,
     "StopIteration\n\t [[{{node n}}]]"),
    (MemoryError("oom"), {"node_name": "n"}, errors.ResourceExhaustedError,
     "oom\n\t [[{{node n}}]]"),
    (NotImplementedError("no"), {"node_name": "n"}, errors.UnimplementedError,
     "no\n\t [[{{node n}}]]"),
    (FileNotFoundError("gone"), {"node_name": "n"}, errors.NotFoundError,
     "gone\n\t [[{{node n}}]]"),
    (AttributeError("oops"), {"node_name": "n"}, errors.UnknownError,
     "oops\n\t [[{{node n}}]]"),
]


@pytest.mark.parametrize("error,kwargs,cls,message", ANNOTATE,
                         ids=[f"{type(a[0]).__name__}-{i}" for i, a in enumerate(ANNOTATE)])
def test_annotate(error, kwargs, cls, message):
    out = errors.annotate(error, **kwargs)
    assert type(out) is cls and out.message == message
    assert out.__cause__ is error
    assert out.node_name == kwargs["node_name"]
    assert out.device == kwargs.get("device")
    if "traceback" in kwargs:
        assert str(out) == message + (
            f"\n\nOriginal stack trace for {kwargs['node_name']!r}:\n"
            '  File "m.py", line 3, in <module>\n  File "m.py", line 17, in build\n')
    else:
        assert str(out) == message


def test_annotate_keeps_op_node_def_and_payloads_and_is_idempotent():
    original = errors.AbortedError(None, None, "conflict", {"k": b"v"})
    op = _FakeOp()
    out = errors.annotate(original, "add", op=op, node_def="NODE_DEF")
    assert out.op is op and out.node_def == "NODE_DEF"
    assert out.experimental_payloads == {"k": b"v"}
    assert "Original stack trace for 'add'" in str(out)  # from op.traceback
    assert errors.annotate(out, "other_node") is out


def test_annotate_keeps_python_traceback():
    try:
        raise ValueError("inner")
    except ValueError as e:
        out = errors.annotate(e, "n")
    assert out.__traceback__ is not None


def test_error_code_for_exception():
    assert errors.error_code_for_exception(errors.AbortedError(None, None, "")) == 10
    assert errors.error_code_for_exception(ZeroDivisionError()) == errors.INVALID_ARGUMENT
    assert errors.error_code_for_exception(RuntimeError()) == errors.UNKNOWN


@pytest.mark.oracle
def test_classes_match_tensorflow():
    snippet = f"""
from tensorflow.python.framework import errors_impl
out = {{}}
for name, const, code in {CLASSES!r}:
    cls = getattr(tf.errors, name)
    e = cls(None, None, "went wrong")
    out[name] = [getattr(tf.errors, const), e.error_code, str(e), e.message,
                 errors_impl.exception_type_from_error_code(code).__name__,
                 errors_impl.error_code_from_exception_type(cls),
                 issubclass(cls, tf.errors.OpError), e.experimental_payloads]
e = tf.errors.OpError(None, None, "m", 3)
out["OpError"] = [e.error_code, str(e)]
result = out
"""
    got = oracle.run_tf(snippet)
    for name, _, code in CLASSES:
        assert got[name] == [code, code, "went wrong", "went wrong", name, code, True, {}]
    assert got["OpError"] == [3, "m"]
