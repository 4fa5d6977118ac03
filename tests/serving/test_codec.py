"""codec.predict_inputs_fast (the C reader `_jsonnum`) against the general decode: whatever
it takes it decodes to the same arrays bit for bit, and everything else it leaves to the
general path (which also gives the error, if any)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tensorflux.framework import errors
from tensorflux.protos import meta_graph_pb2, types_pb2
from tensorflux.serving import codec

pytestmark = pytest.mark.skipif(codec._jsonnum is None, reason="_jsonnum is not built")


def _signature(dtype=types_pb2.DT_FLOAT, aliases=("x",)):
    sig = meta_graph_pb2.SignatureDef(method_name="tensorflow/serving/predict")
    for a in aliases:
        sig.inputs[a].name = a + ":0"
        sig.inputs[a].dtype = dtype
        sig.inputs[a].tensor_shape.unknown_rank = True
    return sig


def _general(body: bytes, sig):
    """The general path's answer: (inputs, row_format) or the error it raises."""
    try:
        return codec.predict_inputs(codec.parse_json(body), sig, body)
    except errors.InvalidArgumentError as e:
        return e


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _check(body: bytes, sig, taken: bool | None):
    """The fast path agrees with the general one; `taken`: whether it must take the body
    (None: either way)."""
    fast = codec.predict_inputs_fast(body, codec.fast_input(sig))
    general = _general(body, sig)
    if taken is not None:
        assert (fast is not None) == taken, body
    if fast is not None:
        assert not isinstance(general, Exception), (body, general)
        (fast_inputs, fast_rows), (inputs, rows) = fast, general
        assert fast_rows == rows and fast_inputs.keys() == inputs.keys()
        for k in inputs:
            assert _same(fast_inputs[k], inputs[k]), (body, fast_inputs[k], inputs[k])


TAKEN = [
    b'{"instances": [[[[0.637], [0.27]], [[0.041], [-1e-3]]]]}',
    b'{"instances":[1.5,2,3]}',                        # integers among floats
    b'{"instances": [1, 2, 16777215]}',                 # integers float32 holds exactly
    b' \n{ "inputs" :\t[[1.0, 2.5], [3E2, 4e-2]] } \r\n',  # columnar, JSON whitespace
    b'{"instances": [-0.0, 0.0, 1e-45, 3.4028234663852886e38]}',
    b'{"instances": [0.1000000000000000055511151231257827021181583404541015625]}',
    b'{"instances": [[1e-400]]}',                       # underflow: 0.0, as json reads it
]
LEFT = [
    b'{"instances": []}',                               # empty: the general path's 400
    b'{"instances": [[1, 2], [3]]}',                    # ragged
    b'{"instances": [[1, 2], 3]}',                      # leaves at two depths
    b'{"instances": [1, [2]]}',
    b'{"instances": [1, 2,]}', b'{"instances": [,1]}', b'{"instances": [1 2]}',
    b'{"instances": [01]}', b'{"instances": [1.]}', b'{"instances": [.5]}',
    b'{"instances": [+1]}', b'{"instances": [1e]}', b'{"instances": [1.5.3]}',
    b'{"instances": [--1]}', b'{"instances": [1e5e5]}',
    b'{"instances": [NaN]}', b'{"instances": [Infinity]}', b'{"instances": [true, 1]}',
    b'{"instances": [null]}', b'{"instances": ["1"]}', b'{"instances": [{"x": 1}]}',
    b'{"instances": [1e400]}',                          # overflows double: a 400
    b'{"instances": [3.5e38]}',                         # finite, beyond float32: a 400
    b'{"instances": [16777216]}',                       # an integer float32 cannot hold
    b'{"instances": [123456789012345678901]}',          # beyond int64
    b'{"instances": [-0, 1.5]}',                        # the integer -0 is +0.0 in json
    b'{"instances": [1]} x', b'{"instances": [1]',       # not one JSON object
    b'{"instances": [1], "signature_name": "s"}',       # other keys: the general path
    b'{"instances": [1], "instances": [2]}',
    b'\xef\xbb\xbf{"instances": [1]}',                  # a BOM
    b'{"instances": [1\x0c]}',                          # form feed is not JSON whitespace
    b'{"instances": ' + b'[' * 40 + b'1' + b']' * 40 + b'}',  # deeper than the C reader
    b'{"instances": [0.' + b'1' * 200 + b']}',          # a longer token than it copies
]


@pytest.mark.parametrize("body", TAKEN)
def test_common_bodies_are_taken_and_equal_the_general_decode(body):
    _check(body, _signature(), taken=True)
    _check(body, _signature(types_pb2.DT_DOUBLE), taken=True)


def test_the_range_of_double_is_taken_for_double_inputs():
    body = b'{"instances": [5e-324, 1.7976931348623157e308, -1.7976931348623157e308]}'
    _check(body, _signature(types_pb2.DT_DOUBLE), taken=True)
    _check(body, _signature(), taken=False)  # beyond float32: the general path's 400


@pytest.mark.parametrize("body", LEFT)
def test_everything_else_goes_the_general_way(body):
    _check(body, _signature(), taken=False)


@pytest.mark.parametrize("sig", [_signature(types_pb2.DT_INT32), _signature(types_pb2.DT_HALF),
                                 _signature(aliases=("a", "b"))])
def test_other_signatures_go_the_general_way(sig):
    assert codec.fast_input(sig) is None
    assert codec.predict_inputs_fast(b'{"instances": [1.5, 2]}', None) is None


def _number(rng: random.Random) -> str:
    k = rng.random()
    if k < 0.2:
        return repr(rng.uniform(-1e3, 1e3))
    if k < 0.35:
        return f"{rng.uniform(-9.99, 9.99):.{rng.randint(0, 25)}f}e{rng.randint(-330, 330)}"
    if k < 0.5:
        return str(rng.randint(-(1 << 25), 1 << 25))
    if k < 0.6:
        return "-" * rng.randint(0, 1) + "0." + "".join(
            rng.choice("0123456789") for _ in range(rng.randint(1, 40)))
    if k < 0.7:
        return str(rng.randint(-10 ** 19, 10 ** 19))
    if k < 0.8:
        return rng.choice(["0", "-0", "-0.0", "1E+2", "1e-2", "2E2", "NaN", "true", "1.", ".5"])
    return repr(rng.random() * 10 ** rng.randint(-40, 40))


def _nested(rng: random.Random, shape, ragged: bool) -> str:
    if not shape:
        return _number(rng)
    n = shape[0] + (rng.choice([-1, 1]) if ragged and rng.random() < 0.1 else 0)
    sep = rng.choice([",", ", ", " ,\n"])
    return "[" + sep.join(_nested(rng, shape[1:], ragged) for _ in range(max(n, 0))) + "]"


@pytest.mark.parametrize("seed", range(4))
def test_random_bodies_agree_with_the_general_decode(seed):
    rng = random.Random(seed)
    for dtype in (types_pb2.DT_FLOAT, types_pb2.DT_DOUBLE):
        sig = _signature(dtype)
        for _ in range(300):
            shape = [rng.randint(1, 4) for _ in range(rng.randint(1, 4))]
            value = _nested(rng, shape, ragged=rng.random() < 0.2)
            key = rng.choice(["instances", "inputs"])
            _check(f'{{"{key}": {value}}}'.encode(), sig, taken=None)


def test_the_digits_request_is_taken():
    body = ('{"instances": [' + str(np.random.default_rng(0).random((8, 8, 1)).round(3)
                                    .tolist()) + ']}').encode()
    _check(body, _signature(), taken=True)


def test_numbers_read_as_float_reads_them():
    rng = random.Random(7)
    tokens = [_number(rng) for _ in range(20000)]
    tokens = [t for t in tokens if t not in ("NaN", "true", "1.", ".5", "-0")]
    tokens += ["0.1", "0.3", "9007199254740993", "9007199254740992e-22", "1e22", "1e23",
               "123456789012345.6", "0.000000000000000000001", "5e-324", "2.2250738585072011e-308"]
    for t in tokens:
        got = codec._jsonnum.numbers(f"[{t}]".encode(), 0)
        if got is None:  # an integer beyond int64's digits: the general path's
            assert len(t.lstrip("-")) > 18 and "." not in t and "e" not in t.lower(), t
            continue
        value = np.frombuffer(got[0], np.float64)[0]
        assert value.tobytes() == np.float64(float(t)).tobytes(), (t, value, float(t))
