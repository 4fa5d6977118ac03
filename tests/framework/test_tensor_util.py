"""tensor_util: make_tensor_proto / MakeNdarray against TF's encoding, and convert_to_numpy.

MAKE_TENSOR_PROTO holds (values source, keyword arguments source, TF's TensorProto in text
format or "ERR <type>: <message prefix>"), generated from TensorFlow 2.21 and re-checked
(byte for byte) by the oracle test.
"""

import math
import re
import types

import ml_dtypes
import numpy as np
import pytest
from google.protobuf import text_format

from tensorflux.framework import dtypes, tensor_shape, tensor_util
from tensorflux.protos import tensor_pb2
from tests import oracle

# `tf.float32`, ... for the table's sources.
tf = types.SimpleNamespace(**{n: getattr(dtypes, n) for n in dir(dtypes)
                              if isinstance(getattr(dtypes, n), dtypes.DType)})
NAMESPACE = {"np": np, "ml_dtypes": ml_dtypes, "tf": tf, "tu": tensor_util,
             "TensorShape": tensor_shape.TensorShape}

MAKE_TENSOR_PROTO = [
    ('1', '', 'dtype: DT_INT32 tensor_shape { } int_val: 1'),
    ('1.5', '', 'dtype: DT_FLOAT tensor_shape { } float_val: 1.5'),
    ('[1, 2, 3]', '',
     'dtype: DT_INT32 tensor_shape { dim { size: 3 } } tensor_content: "\\001\\000\\000\\000'
     '\\002\\000\\000\\000\\003\\000\\000\\000"'),
    ('[1., 2.]', '',
     'dtype: DT_FLOAT tensor_shape { dim { size: 2 } } tensor_content: "\\000\\000\\200?\\00'
     '0\\000\\000@"'),
    ('np.array([1, 2], np.int64)', '',
     'dtype: DT_INT64 tensor_shape { dim { size: 2 } } tensor_content: "\\001\\000\\000\\000'
     '\\000\\000\\000\\000\\002\\000\\000\\000\\000\\000\\000\\000"'),
    ('np.array([1, 2], np.float32)', '',
     'dtype: DT_FLOAT tensor_shape { dim { size: 2 } } tensor_content: "\\000\\000\\200?\\00'
     '0\\000\\000@"'),
    ('np.array(1.5, np.float32)', '', 'dtype: DT_FLOAT tensor_shape { } float_val: 1.5'),
    ('np.float32(1.5)', '', 'dtype: DT_FLOAT tensor_shape { } float_val: 1.5'),
    ('2**40', '', 'dtype: DT_INT64 tensor_shape { } int64_val: 1099511627776'),
    ('2**63', '', 'dtype: DT_UINT64 tensor_shape { } uint64_val: 9223372036854775808'),
    ('[1, 2**40]', '',
     'dtype: DT_INT64 tensor_shape { dim { size: 2 } } tensor_content: "\\001\\000\\000\\000'
     '\\000\\000\\000\\000\\000\\000\\000\\000\\000\\001\\000\\000"'),
    ('-2**31', '', 'dtype: DT_INT32 tensor_shape { } int_val: -2147483648'),
    ('-2**31 - 1', '', 'dtype: DT_INT64 tensor_shape { } int64_val: -2147483649'),
    ('True', '', 'dtype: DT_BOOL tensor_shape { } bool_val: true'),
    ('[True, False]', '',
     'dtype: DT_BOOL tensor_shape { dim { size: 2 } } bool_val: true bool_val: false'),
    ("'abc'", '', 'dtype: DT_STRING tensor_shape { } string_val: "abc"'),
    ("b'abc'", '', 'dtype: DT_STRING tensor_shape { } string_val: "abc"'),
    ("['a', b'b']", '',
     'dtype: DT_STRING tensor_shape { dim { size: 2 } } string_val: "a" string_val: "b"'),
    ("'\\u00e9'", '', 'dtype: DT_STRING tensor_shape { } string_val: "\\303\\251"'),
    ("np.array(['ab', 'c'])", '',
     'dtype: DT_STRING tensor_shape { dim { size: 2 } } string_val: "ab" string_val: "c"'),
    ("b'\\xff\\x00'", '', 'dtype: DT_STRING tensor_shape { } string_val: "\\377\\000"'),
    ('1+2j', '', 'dtype: DT_COMPLEX128 tensor_shape { } dcomplex_val: 1.0 dcomplex_val: 2.0'),
    ('[1+2j, 3]', '',
     'dtype: DT_COMPLEX128 tensor_shape { dim { size: 2 } } dcomplex_val: 1.0 dcomplex_val: '
     '2.0 dcomplex_val: 3.0 dcomplex_val: 0.0'),
    ('np.array([1+2j], np.complex64)', '',
     'dtype: DT_COMPLEX64 tensor_shape { dim { size: 1 } } scomplex_val: 1.0 scomplex_val: 2'
     '.0'),
    ('1.5', 'dtype=tf.float16', 'dtype: DT_HALF tensor_shape { } half_val: 15872'),
    ('[1.5, 2]', 'dtype=tf.bfloat16',
     'dtype: DT_BFLOAT16 tensor_shape { dim { size: 2 } } tensor_content: "\\300?\\000@"'),
    ('np.array([1.5, 2], np.float16)', '',
     'dtype: DT_HALF tensor_shape { dim { size: 2 } } tensor_content: "\\000>\\000@"'),
    ('1.5', 'dtype=tf.int32', "ERR TypeError: Expected int32, but got 1.5 of type 'float'."),
    ('[1, 2.5]', '',
     'dtype: DT_FLOAT tensor_shape { dim { size: 2 } } tensor_content: "\\000\\000\\200?\\00'
     '0\\000 @"'),
    ('[1, 2.5]', 'dtype=tf.int32', "ERR TypeError: Expected int32, but got 2.5 of type 'float'."),
    ('np.array([1.5])', 'dtype=tf.int32',
     'dtype: DT_INT32 tensor_shape { dim { size: 1 } } int_val: 1'),
    ('np.array([1])', 'dtype=tf.float32',
     'dtype: DT_FLOAT tensor_shape { dim { size: 1 } } float_val: 1.0'),
    ('np.array([1.5], np.float32)', 'dtype=tf.float64',
     'dtype: DT_DOUBLE tensor_shape { dim { size: 1 } } double_val: 1.5'),
    ('1', 'dtype=tf.float32', 'dtype: DT_FLOAT tensor_shape { } float_val: 1.0'),
    ('1', 'dtype=tf.bool', "ERR TypeError: Expected bool, but got 1 of type 'int'."),
    ('True', 'dtype=tf.int32', 'dtype: DT_INT32 tensor_shape { } int_val: 1'),
    ("'a'", 'dtype=tf.int32', "ERR TypeError: Expected int32, but got a of type 'str'."),
    ('1', 'dtype=tf.string', "ERR TypeError: Expected string, but got 1 of type 'int'."),
    ('[[1, 2], [3, 4]]', 'shape=[4]',
     'dtype: DT_INT32 tensor_shape { dim { size: 4 } } tensor_content: "\\001\\000\\000\\000'
     '\\002\\000\\000\\000\\003\\000\\000\\000\\004\\000\\000\\000"'),
    ('[[1, 2], [3, 4]]', 'shape=[3]',
     'ERR ValueError: Too many elements provided. Takes at most 3, but got 4.'),
    ('1', 'shape=[2, 2]',
     'dtype: DT_INT32 tensor_shape { dim { size: 2 } dim { size: 2 } } int_val: 1'),
    ('[1, 2]', 'shape=[2, 2]',
     'dtype: DT_INT32 tensor_shape { dim { size: 2 } dim { size: 2 } } int_val: 1 int_val: 2'),
    ('[1, 2]', 'shape=[4], allow_broadcast=True',
     "ERR TypeError: Expected Tensor's shape: (4,), but got (2,)."),
    ('[1]', 'shape=[4], allow_broadcast=True',
     'dtype: DT_INT32 tensor_shape { dim { size: 4 } } int_val: 1'),
    ('1', 'shape=[4], allow_broadcast=True',
     'dtype: DT_INT32 tensor_shape { dim { size: 4 } } int_val: 1'),
    ('[1, 2]', 'shape=[2], verify_shape=True',
     'dtype: DT_INT32 tensor_shape { dim { size: 2 } } tensor_content: "\\001\\000\\000\\000'
     '\\002\\000\\000\\000"'),
    ('[1, 2]', 'shape=[1, 2], verify_shape=True',
     "ERR TypeError: Expected Tensor's shape: (1, 2), but got (2,)."),
    ('[]', 'dtype=tf.float32', 'dtype: DT_FLOAT tensor_shape { dim { } }'),
    ('[]', '', 'dtype: DT_FLOAT tensor_shape { dim { } }'),
    ('[[]]', '', 'dtype: DT_FLOAT tensor_shape { dim { size: 1 } dim { } }'),
    ('np.zeros((0, 3))', '', 'dtype: DT_DOUBLE tensor_shape { dim { } dim { size: 3 } }'),
    ('[1, 2]', 'shape=[]',
     'ERR ValueError: Too many elements provided. Takes at most 1, but got 2.'),
    ('1', 'shape=[]', 'dtype: DT_INT32 tensor_shape { } int_val: 1'),
    ('np.array([1, 2], np.uint8)', '',
     'dtype: DT_UINT8 tensor_shape { dim { size: 2 } } tensor_content: "\\001\\002"'),
    ('np.array([1, 2], np.uint16)', '',
     'dtype: DT_UINT16 tensor_shape { dim { size: 2 } } int_val: 1 int_val: 2'),
    ('np.array([1, 2], np.int16)', '',
     'dtype: DT_INT16 tensor_shape { dim { size: 2 } } tensor_content: "\\001\\000\\002\\000'
     '"'),
    ('np.array([1, 2], np.int8)', '',
     'dtype: DT_INT8 tensor_shape { dim { size: 2 } } tensor_content: "\\001\\002"'),
    ('np.array([1, 2], np.uint32)', '',
     'dtype: DT_UINT32 tensor_shape { dim { size: 2 } } tensor_content: "\\001\\000\\000\\00'
     '0\\002\\000\\000\\000"'),
    ('np.array([1, 2], np.uint64)', '',
     'dtype: DT_UINT64 tensor_shape { dim { size: 2 } } tensor_content: "\\001\\000\\000\\00'
     '0\\000\\000\\000\\000\\002\\000\\000\\000\\000\\000\\000\\000"'),
    ('np.array([1, 2], np.complex128)', '',
     'dtype: DT_COMPLEX128 tensor_shape { dim { size: 2 } } dcomplex_val: 1.0 dcomplex_val: '
     '0.0 dcomplex_val: 2.0 dcomplex_val: 0.0'),
    ('np.array([True, False, True])', '',
     'dtype: DT_BOOL tensor_shape { dim { size: 3 } } bool_val: true bool_val: false bool_va'
     'l: true'),
    ('2**32', 'dtype=tf.int32', 'dtype: DT_INT32 tensor_shape { } int_val: 0'),
    ('-1', 'dtype=tf.uint8', 'dtype: DT_UINT8 tensor_shape { } int_val: 255'),
    ('300', 'dtype=tf.uint8', 'dtype: DT_UINT8 tensor_shape { } int_val: 44'),
    ('np.array([300])', 'dtype=tf.uint8',
     'dtype: DT_UINT8 tensor_shape { dim { size: 1 } } int_val: 44'),
    ('-1', 'dtype=tf.uint32', 'dtype: DT_UINT32 tensor_shape { } uint32_val: 4294967295'),
    ('2**64 - 1', 'dtype=tf.uint64',
     'dtype: DT_UINT64 tensor_shape { } uint64_val: 18446744073709551615'),
    ('2**63', 'dtype=tf.int64', 'dtype: DT_INT64 tensor_shape { } int64_val: -9223372036854775808'),
    ('1', 'dtype=tf.qint8', "ERR TypeError: Expected qint8, but got 1 of type 'int'."),
    ('np.array([1, 2], np.int32)', 'dtype=tf.qint32',
     'dtype: DT_QINT32 tensor_shape { dim { size: 2 } } tensor_content: "\\001\\000\\000\\00'
     '0\\002\\000\\000\\000"'),
    ('np.array([1, 2], np.int32)', 'dtype=tf.quint8',
     'dtype: DT_QUINT8 tensor_shape { dim { size: 2 } } tensor_content: "\\001\\002"'),
    ('np.array([1, 2], np.int32)', 'dtype=tf.qint16',
     'dtype: DT_QINT16 tensor_shape { dim { size: 2 } } tensor_content: "\\001\\000\\002\\00'
     '0"'),
    ('np.array([1, 2], np.int32)', 'dtype=tf.quint16',
     'dtype: DT_QUINT16 tensor_shape { dim { size: 2 } } tensor_content: "\\001\\000\\002\\0'
     '00"'),
    ('np.array([1, 2], np.int8)', 'dtype=tf.qint8, shape=[3]',
     'dtype: DT_QINT8 tensor_shape { dim { size: 3 } } int_val: 1 int_val: 2'),
    ('None', '', 'ERR ValueError: None values not supported.'),
    ('[1, None]', '', 'ERR TypeError: Failed to convert elements of [1, None] to Tensor.'),
    ("[1, 'a']", '', "ERR TypeError: Failed to convert elements of [1, 'a'] to Tensor."),
    ("['a', 1]", '', "ERR TypeError: Failed to convert elements of ['a', 1] to Tensor."),
    ("{'a': 1}", '', "ERR TypeError: Failed to convert elements of {'a': 1} to Tensor."),
    ('2**64', '', 'ERR TypeError: Failed to convert elements of 18446744073709551616 to Tensor.'),
    ('1', 'dtype=tf.complex64',
     'dtype: DT_COMPLEX64 tensor_shape { } scomplex_val: 1.0 scomplex_val: 0.0'),
    ('1.5', 'dtype=tf.float64', 'dtype: DT_DOUBLE tensor_shape { } double_val: 1.5'),
    ("float('nan')", 'dtype=tf.int32',
     "ERR TypeError: Expected int32, but got nan of type 'float'."),
    ("float('inf')", 'dtype=tf.int32',
     "ERR TypeError: Expected int32, but got inf of type 'float'."),
    ('1e40', 'dtype=tf.float32', 'dtype: DT_FLOAT tensor_shape { } float_val: inf'),
    ('1e40', '', 'dtype: DT_FLOAT tensor_shape { } float_val: inf'),
    ('1e40', 'dtype=tf.float16', 'dtype: DT_HALF tensor_shape { } half_val: 31744'),
    ('[True, 1]', '',
     'dtype: DT_INT32 tensor_shape { dim { size: 2 } } tensor_content: "\\001\\000\\000\\000'
     '\\001\\000\\000\\000"'),
    ('[True, 2.5]', '',
     'dtype: DT_FLOAT tensor_shape { dim { size: 2 } } tensor_content: "\\000\\000\\200?\\00'
     '0\\000 @"'),
    ('np.int64(5)', '', 'dtype: DT_INT64 tensor_shape { } int64_val: 5'),
    ('[np.int64(5), 2]', '',
     'dtype: DT_INT32 tensor_shape { dim { size: 2 } } tensor_content: "\\005\\000\\000\\000'
     '\\002\\000\\000\\000"'),
    ('[np.int64(2**40), 2]', '',
     'dtype: DT_INT64 tensor_shape { dim { size: 2 } } tensor_content: "\\000\\000\\000\\000'
     '\\000\\001\\000\\000\\002\\000\\000\\000\\000\\000\\000\\000"'),
    ('[np.float64(5), 2]', '',
     'dtype: DT_FLOAT tensor_shape { dim { size: 2 } } tensor_content: "\\000\\000\\240@\\00'
     '0\\000\\000@"'),
    ('np.float64(1.5)', '', 'dtype: DT_DOUBLE tensor_shape { } double_val: 1.5'),
    ('[np.float16(1), np.float16(2)]', '',
     'dtype: DT_HALF tensor_shape { dim { size: 2 } } tensor_content: "\\000<\\000@"'),
    ('[1, np.float16(1)]', '',
     'dtype: DT_FLOAT tensor_shape { dim { size: 2 } } tensor_content: "\\000\\000\\200?\\00'
     '0\\000\\200?"'),
    ('[np.int8(1), np.int8(2)]', '',
     'dtype: DT_INT8 tensor_shape { dim { size: 2 } } tensor_content: "\\001\\002"'),
    ('np.uint8(3)', '', 'dtype: DT_UINT8 tensor_shape { } int_val: 3'),
    ('np.bool_(True)', '', 'dtype: DT_BOOL tensor_shape { } bool_val: true'),
    ('(1, 2)', '',
     'dtype: DT_INT32 tensor_shape { dim { size: 2 } } tensor_content: "\\001\\000\\000\\000'
     '\\002\\000\\000\\000"'),
    ('[(1, 2), [3, 4]]', '',
     'dtype: DT_INT32 tensor_shape { dim { size: 2 } dim { size: 2 } } tensor_content: "\\00'
     '1\\000\\000\\000\\002\\000\\000\\000\\003\\000\\000\\000\\004\\000\\000\\000"'),
    ('[[1, 2], np.array([3, 4], np.int64)]', '',
     'dtype: DT_INT32 tensor_shape { dim { size: 2 } dim { size: 2 } } tensor_content: "\\00'
     '1\\000\\000\\000\\002\\000\\000\\000\\003\\000\\000\\000\\004\\000\\000\\000"'),
    ('np.array([1, 2], np.int32)', 'dtype=tf.int64',
     'dtype: DT_INT64 tensor_shape { dim { size: 2 } } tensor_content: "\\001\\000\\000\\000'
     '\\000\\000\\000\\000\\002\\000\\000\\000\\000\\000\\000\\000"'),
    ('np.array([1, 2], np.int64)', 'dtype=tf.int32',
     'dtype: DT_INT32 tensor_shape { dim { size: 2 } } tensor_content: "\\001\\000\\000\\000'
     '\\002\\000\\000\\000"'),
    ('np.array([True])', 'dtype=tf.int32',
     'dtype: DT_INT32 tensor_shape { dim { size: 1 } } int_val: 1'),
    ("np.array([b'a', b'bb'], dtype=object)", '',
     'dtype: DT_STRING tensor_shape { dim { size: 2 } } string_val: "a" string_val: "bb"'),
    ('np.array([1, 2], dtype=object)', '',
     'ERR TypeError: Expected binary or unicode string, got 1'),
    ('np.array([1, 2])', 'dtype=tf.string',
     'ERR TypeError: Expected binary or unicode string, got 1'),
    ('[1, 2]', 'dtype=tf.float32, shape=[3]',
     'dtype: DT_FLOAT tensor_shape { dim { size: 3 } } float_val: 1.0 float_val: 2.0'),
    ('np.array([1, 2], np.float32)', 'shape=[2, 1]',
     'dtype: DT_FLOAT tensor_shape { dim { size: 2 } dim { size: 1 } } tensor_content: "\\00'
     '0\\000\\200?\\000\\000\\000@"'),
    ('np.array([1, 2], np.float32)', 'shape=[3]',
     'dtype: DT_FLOAT tensor_shape { dim { size: 3 } } float_val: 1.0 float_val: 2.0'),
    ('np.array(1, np.float32)', 'shape=[3]',
     'dtype: DT_FLOAT tensor_shape { dim { size: 3 } } float_val: 1.0'),
    ('np.array([1.5], np.float64)', 'dtype=tf.float16',
     'dtype: DT_HALF tensor_shape { dim { size: 1 } } half_val: 15872'),
    ('ml_dtypes.bfloat16(1.5)', '', 'dtype: DT_BFLOAT16 tensor_shape { } half_val: 16320'),
    ('np.array([1, 2], ml_dtypes.bfloat16)', '',
     'dtype: DT_BFLOAT16 tensor_shape { dim { size: 2 } } tensor_content: "\\200?\\000@"'),
    ('1.5', 'dtype=tf.bfloat16', 'dtype: DT_BFLOAT16 tensor_shape { } half_val: 16320'),
    ('np.array([1.5, 2.5], np.float16)', 'shape=[3]',
     'dtype: DT_HALF tensor_shape { dim { size: 3 } } half_val: 15872 half_val: 16640'),
    ('np.array([1.5, 2.5], ml_dtypes.bfloat16)', 'shape=[3]',
     'dtype: DT_BFLOAT16 tensor_shape { dim { size: 3 } } half_val: 16320 half_val: 16416'),
    ('np.array([True, False])', 'shape=[3]',
     'dtype: DT_BOOL tensor_shape { dim { size: 3 } } bool_val: true bool_val: false'),
    ('np.array([1, 2], np.uint32)', 'shape=[3]',
     'dtype: DT_UINT32 tensor_shape { dim { size: 3 } } uint32_val: 1 uint32_val: 2'),
    ('np.array([1, 2], np.int64)', 'shape=[3]',
     'dtype: DT_INT64 tensor_shape { dim { size: 3 } } int64_val: 1 int64_val: 2'),
    ('np.array([1+2j, 3], np.complex64)', 'shape=[4]',
     'dtype: DT_COMPLEX64 tensor_shape { dim { size: 4 } } scomplex_val: 1.0 scomplex_val: 2'
     '.0 scomplex_val: 3.0 scomplex_val: 0.0'),
    ('[1, 2]', 'dtype=tf.int32, shape=[0]', 'dtype: DT_INT32 tensor_shape { dim { } }'),
    ('[]', 'dtype=tf.int32, shape=[2]', 'dtype: DT_INT32 tensor_shape { dim { size: 2 } }'),
    ('[]', 'dtype=tf.string', 'dtype: DT_STRING tensor_shape { dim { } }'),
    ('np.array([[1, 2], [3, 4]], np.float32).T', '',
     'dtype: DT_FLOAT tensor_shape { dim { size: 2 } dim { size: 2 } } tensor_content: "\\00'
     '0\\000\\200?\\000\\000@@\\000\\000\\000@\\000\\000\\200@"'),
    ("np.array(['a', 'b'])", 'dtype=tf.int32',
     "ERR ValueError: invalid literal for int() with base 10: np.str_('a')"),
    ('np.zeros([2, 3])', 'shape=[7]',
     'dtype: DT_DOUBLE tensor_shape { dim { size: 7 } } double_val: 0.0 double_val: 0.0 doub'
     'le_val: 0.0 double_val: 0.0 double_val: 0.0 double_val: 0.0'),
    ('np.zeros([2])', 'shape=[5], verify_shape=True',
     "ERR TypeError: Expected Tensor's shape: (5,), but got (2,)."),
    ('[1.5, 2]', 'dtype=tf.float16',
     'dtype: DT_HALF tensor_shape { dim { size: 2 } } tensor_content: "\\000>\\000@"'),
    ('np.array([[1.5]], np.float16)', '',
     'dtype: DT_HALF tensor_shape { dim { size: 1 } dim { size: 1 } } half_val: 15872'),
    ('[[1]]', 'dtype=tf.complex128',
     'dtype: DT_COMPLEX128 tensor_shape { dim { size: 1 } dim { size: 1 } } dcomplex_val: 1.'
     '0 dcomplex_val: 0.0'),
]

# Deliberate differences from TF 2.21: (values, kwargs, tensorflux result).
MAKE_TENSOR_PROTO_DIFFERS = [
    # TF passes NumPy's "setting an array element with a sequence..." through.
    ("[[1, 2], [3]]", "", "ERR ValueError: Can't convert non-rectangular Python sequence"),
    # TF converts TensorShapes only in convert_to_tensor; tensorflux here too.
    ("TensorShape([2, 3])", "",
     'dtype: DT_INT32 tensor_shape { dim { size: 2 } } tensor_content: "\\002\\000\\000\\000'
     '\\003\\000\\000\\000"'),
    ("TensorShape([2, None])", "",
     "ERR ValueError: Cannot convert a partially known TensorShape (2, ?) to a Tensor."),
    # TF rejects lists of arrays ("Expected values ... to be a dense tensor").
    ("[np.array([1, 2]), np.array([3, 4])]", "",
     'dtype: DT_INT32 tensor_shape { dim { size: 2 } dim { size: 2 } } tensor_content: "\\00'
     '1\\000\\000\\000\\002\\000\\000\\000\\003\\000\\000\\000\\004\\000\\000\\000"'),
    # TF writes big-endian arrays' bytes as they are; TensorProto content is little-endian.
    ("np.array([1, 2], '>i4')", "",
     'dtype: DT_INT32 tensor_shape { dim { size: 2 } } tensor_content: "\\001\\000\\000\\000'
     '\\002\\000\\000\\000"'),
    ("[1, 2]", "dtype=tf.float32_ref",
     'dtype: DT_FLOAT tensor_shape { dim { size: 2 } } tensor_content: "\\000\\000\\200?\\00'
     '0\\000\\000@"'),
    ("tu.make_tensor_proto(7)", "", "dtype: DT_INT32 tensor_shape { } int_val: 7"),
    ("[1, 2]", "shape=[None]", "ERR ValueError: make_tensor_proto needs a fully defined shape"),
]


def _make(values_src, kwargs_src):
    return eval(f"tu.make_tensor_proto({values_src}{', ' + kwargs_src if kwargs_src else ''})",
                NAMESPACE)


@pytest.mark.parametrize("values,kwargs,expected", MAKE_TENSOR_PROTO + MAKE_TENSOR_PROTO_DIFFERS,
                         ids=[f"{v}|{k}" for v, k, _ in
                              MAKE_TENSOR_PROTO + MAKE_TENSOR_PROTO_DIFFERS])
def test_make_tensor_proto(values, kwargs, expected):
    if expected.startswith("ERR "):
        kind, message = expected[4:].split(": ", 1)
        with pytest.raises(Exception) as info:  # noqa: B017 - the type is checked below
            _make(values, kwargs)
        assert type(info.value).__name__ == kind
        assert str(info.value).startswith(message)
    else:
        proto = _make(values, kwargs)
        assert isinstance(proto, tensor_pb2.TensorProto)
        assert text_format.MessageToString(proto, as_one_line=True) == expected


# (TensorProto text, expected values (flat list), dtype name, shape).
MAKE_NDARRAY = [
    ("dtype: DT_FLOAT tensor_shape { dim { size: 3 } } float_val: 1 float_val: 2",
     [1, 2, 2], "float32", (3,)),
    ("dtype: DT_FLOAT tensor_shape { dim { size: 3 } }", [0, 0, 0], "float32", (3,)),
    ("dtype: DT_FLOAT tensor_shape { } float_val: 3", [3], "float32", ()),
    ("dtype: DT_FLOAT float_val: 3", [3], "float32", ()),
    ("dtype: DT_DOUBLE tensor_shape { dim { size: 2 } dim { size: 2 } } double_val: 1.5",
     [1.5] * 4, "float64", (2, 2)),
    ("dtype: DT_STRING tensor_shape { dim { size: 3 } } string_val: 'a' string_val: 'b'",
     [b"a", b"b", b"b"], "object", (3,)),
    ("dtype: DT_HALF tensor_shape { dim { size: 2 } } half_val: 15872", [1.5, 1.5], "float16",
     (2,)),
    ("dtype: DT_BFLOAT16 tensor_shape { dim { size: 2 } } half_val: 16320", [1.5, 1.5],
     "bfloat16", (2,)),
    ("dtype: DT_COMPLEX64 tensor_shape { dim { size: 2 } } scomplex_val: 1 scomplex_val: 2",
     [1 + 2j, 1 + 2j], "complex64", (2,)),
    ("dtype: DT_COMPLEX128 tensor_shape { dim { size: 3 } } dcomplex_val: 1 dcomplex_val: 2 "
     "dcomplex_val: 3 dcomplex_val: 4", [1 + 2j, 3 + 4j, 3 + 4j], "complex128", (3,)),
    ("dtype: DT_BOOL tensor_shape { dim { size: 3 } } bool_val: true", [True] * 3, "bool",
     (3,)),
    ("dtype: DT_UINT8 tensor_shape { dim { size: 2 } } int_val: 255", [255, 255], "uint8",
     (2,)),
    ("dtype: DT_INT8 tensor_shape { dim { size: 2 } } int_val: -3", [-3, -3], "int8", (2,)),
    ("dtype: DT_UINT16 tensor_shape { dim { size: 2 } } int_val: 65535", [65535] * 2, "uint16",
     (2,)),
    ("dtype: DT_UINT32 tensor_shape { dim { size: 2 } } uint32_val: 4294967295",
     [4294967295] * 2, "uint32", (2,)),
    ("dtype: DT_UINT64 tensor_shape { dim { size: 2 } } uint64_val: 5", [5, 5], "uint64", (2,)),
    ("dtype: DT_INT64 tensor_shape { dim { size: 2 } } int64_val: 5", [5, 5], "int64", (2,)),
    ("dtype: DT_INT64 tensor_shape { dim { size: 2 } } int_val: 5", [0, 0], "int64", (2,)),
    ("dtype: DT_INT32 tensor_shape { dim { size: 2 } } tensor_content: "
     "'\\001\\000\\000\\000\\002\\000\\000\\000'", [1, 2], "int32", (2,)),
    ("dtype: DT_INT32 tensor_shape { dim { size: 2 } dim { size: 0 } }", [], "int32", (2, 0)),
]
# tensorflux keeps quantized tensors in their integer carrier (TF: structured arrays), and
# fills string tensors with no values with b"" (TF: "").
MAKE_NDARRAY_OURS = [
    ("dtype: DT_QINT8 tensor_shape { dim { size: 2 } } int_val: 5", [5, 5], "int8", (2,)),
    ("dtype: DT_QINT32 tensor_shape { dim { size: 2 } } tensor_content: "
     "'\\001\\000\\000\\000\\002\\000\\000\\000'", [1, 2], "int32", (2,)),
    ("dtype: DT_STRING tensor_shape { dim { size: 2 } }", [b"", b""], "object", (2,)),
]


def _parse(text):
    return text_format.Parse(text, tensor_pb2.TensorProto())


@pytest.mark.parametrize("text,values,dtype,shape", MAKE_NDARRAY + MAKE_NDARRAY_OURS)
def test_make_ndarray(text, values, dtype, shape):
    arr = tensor_util.MakeNdarray(_parse(text))
    assert arr.dtype == np.dtype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    assert arr.shape == shape
    assert arr.ravel().tolist() == values
    assert tensor_util.make_ndarray is tensor_util.MakeNdarray


@pytest.mark.parametrize("text,error", [
    ("dtype: DT_FLOAT tensor_shape { dim { size: 1 } } float_val: 1 float_val: 2",
     "float_val holds 2 values; shape [1] has only 1 elements"),
    ("dtype: DT_FLOAT tensor_shape { dim { size: 2 } } tensor_content: 'abc'",
     "tensor_content holds 3 bytes; shape [2] of float32 needs 8"),
    ("dtype: DT_FLOAT tensor_shape { dim { size: -1 } }", "unknown dimensions"),
    ("dtype: DT_COMPLEX64 tensor_shape { dim { size: 1 } } scomplex_val: 1", "odd number"),
])
def test_make_ndarray_errors(text, error):
    with pytest.raises(ValueError, match=re.escape(error)):
        tensor_util.MakeNdarray(_parse(text))
    with pytest.raises(TypeError):
        tensor_util.MakeNdarray(_parse("dtype: DT_INVALID"))


ROUND_TRIP_TYPES = ["float16", "bfloat16", "float32", "float64", "int8", "int16", "int32",
                    "int64", "uint8", "uint16", "uint32", "uint64", "bool", "complex64",
                    "complex128", "qint8", "quint8", "qint16", "quint16", "qint32"]


@pytest.mark.parametrize("name", ROUND_TRIP_TYPES)
@pytest.mark.parametrize("shape", [(), (1,), (2, 3), (0, 4)])
def test_round_trip(name, shape):
    dt = getattr(dtypes, name)
    rng = np.random.default_rng(0)
    raw = rng.normal(size=shape) * 100
    if dt.is_complex:
        raw = raw + 1j * rng.normal(size=shape)
    arr = raw.astype(dt.numpy_dtype) if name != "bool" else raw > 0
    proto = tensor_util.make_tensor_proto(arr, dtype=dt)
    assert proto.dtype == dt.as_datatype_enum
    back = tensor_util.MakeNdarray(proto)
    assert back.dtype == dt.numpy_dtype and back.shape == shape
    assert _bits(back) == _bits(arr)
    if arr.size:  # fewer values than elements: the last one repeats
        first = arr.ravel()[:1]
        filled = tensor_util.MakeNdarray(
            tensor_util.make_tensor_proto(first, dtype=dt, shape=(3,) + shape))
        assert filled.shape == (3,) + shape
        assert _bits(filled) == _bits(first) * filled.size


def _bits(arr):
    flat = np.ascontiguousarray(arr).reshape(-1)
    return [x.tobytes() for x in flat]


def test_round_trip_strings():
    values = np.array([[b"a", b"b\x00"], ["\u00e9", b""]], dtype=object)
    back = tensor_util.MakeNdarray(tensor_util.make_tensor_proto(values))
    assert back.dtype == object and back.tolist() == [[b"a", b"b\x00"], ["\u00e9".encode(), b""]]


# (source, dtype, expected dtype name, expected flat values) for convert_to_numpy.
CONVERT = [
    ("1", None, "int32", [1]), ("1.5", None, "float32", [1.5]), ("True", None, "bool", [True]),
    ("2**40", None, "int64", [2**40]), ("2**63", None, "uint64", [2**63]),
    ("-2**31 - 1", None, "int64", [-2**31 - 1]), ("[1, 2.5]", None, "float32", [1, 2.5]),
    ("[True, 1]", None, "int32", [1, 1]), ("1+2j", None, "complex128", [1 + 2j]),
    ("'ab'", None, "object", [b"ab"]), ("['a', b'b\\x00']", None, "object", [b"a", b"b\x00"]),
    ("np.array(['x'])", None, "object", [b"x"]), ("[]", None, "float32", []),
    ("np.float64(1.5)", None, "float64", [1.5]), ("[np.float64(1.5)]", None, "float32", [1.5]),
    ("[np.int8(1), np.int8(2)]", None, "int8", [1, 2]), ("np.int64(5)", None, "int64", [5]),
    ("np.array([1, 2], np.int64)", None, "int64", [1, 2]),
    ("1e40", None, "float32", [math.inf]), ("1e40", "float16", "float16", [math.inf]),
    ("1", "float32", "float32", [1.0]), ("True", "float32", "float32", [1.0]),
    ("300", "uint8", "uint8", [44]), ("-1", "uint32", "uint32", [4294967295]),
    ("2**63", "int64", "int64", [-2**63]), ("1.5", "complex64", "complex64", [1.5]),
    ("np.array([1.5, -2.7])", "int32", "int32", [1, -2]),
    ("np.array([0, 2])", "bool", "bool", [False, True]),
    ("np.array([1, 2])", "qint8", "int8", [1, 2]),
    ("[1, 2]", "bfloat16", "bfloat16", [1, 2]),
    ("TensorShape([2, 3])", None, "int32", [2, 3]),
    ("TensorShape([2, 3])", "int64", "int64", [2, 3]),
    ("range(3)", None, "int32", [0, 1, 2]),
]

CONVERT_ERRORS = [
    ("None", None, ValueError, "None values not supported."),
    ("1.5", "int32", TypeError, "Expected int32, but got 1.5 of type 'float'."),
    ("[1, 2.5]", "int32", TypeError, "Expected int32, but got 2.5 of type 'float'."),
    ("1", "bool", TypeError, "Expected bool, but got 1 of type 'int'."),
    ("1", "string", TypeError, "Expected string, but got 1 of type 'int'."),
    ("'a'", "float32", TypeError, "Expected float32, but got a of type 'str'."),
    ("1+1j", "float32", TypeError, "Expected float32, but got (1+1j) of type 'complex'."),
    ("[1, None]", None, TypeError, "Failed to convert elements of [1, None] to Tensor."),
    ("['a', 1]", None, TypeError, "Failed to convert elements of ['a', 1] to Tensor."),
    ("2**64", None, TypeError, "Failed to convert elements of"),
    ("object()", None, TypeError, "Failed to convert elements of"),
    ("[[1, 2], [3]]", None, ValueError, "Can't convert non-rectangular Python sequence"),
    ("[['a'], ['b', 'c']]", None, ValueError, "Can't convert non-rectangular"),
    ("np.array([1, 2])", "string", TypeError, "Expected binary or unicode string, got 1"),
    ("np.datetime64('2020-01-01')", None, TypeError, "Cannot convert the argument"),
    ("1", "resource", TypeError, "`dtype` <dtype: 'resource'> is not compatible"),
    ("TensorShape([2, None])", None, ValueError, "Cannot convert a partially known"),
    ("TensorShape([2])", "float32", TypeError, "Cannot convert (2,) to a Tensor of dtype"),
]


@pytest.mark.parametrize("source,dtype,np_dtype,values", CONVERT,
                         ids=[f"{c[0]}|{c[1]}" for c in CONVERT])
def test_convert_to_numpy(source, dtype, np_dtype, values):
    arr = tensor_util.convert_to_numpy(eval(source, NAMESPACE), dtype)
    assert isinstance(arr, np.ndarray)
    want = np.dtype(ml_dtypes.bfloat16) if np_dtype == "bfloat16" else np.dtype(np_dtype)
    assert arr.dtype == want
    assert arr.ravel().tolist() == values


@pytest.mark.parametrize("source,dtype,error,message", CONVERT_ERRORS,
                         ids=[f"{c[0]}|{c[1]}" for c in CONVERT_ERRORS])
def test_convert_to_numpy_errors(source, dtype, error, message):
    with pytest.raises(error) as info:
        tensor_util.convert_to_numpy(eval(source, NAMESPACE), dtype)
    assert str(info.value).startswith(message)


def test_convert_to_numpy_fast_path_returns_the_same_array():
    arr = np.zeros((4, 3), np.float32)
    assert tensor_util.convert_to_numpy(arr, dtypes.float32) is arr
    assert tensor_util.convert_to_numpy(arr, "float32") is arr
    assert tensor_util.convert_to_numpy(arr) is arr
    strings = np.array([b"a", b"b"], dtype=object)
    assert tensor_util.convert_to_numpy(strings, dtypes.string) is strings
    converted = tensor_util.convert_to_numpy(arr, dtypes.float64)
    assert converted.dtype == np.float64 and converted is not arr


def test_convert_to_numpy_emits_no_warnings():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for value, dtype in [(1e40, None), (1e40, "float16"), ([1e40, 1.0], None),
                             (float("nan"), "float32"), (1e300, "bfloat16")]:
            tensor_util.convert_to_numpy(value, dtype)


@pytest.mark.oracle
def test_make_tensor_proto_matches_tensorflow_bytes():
    """TF re-derives the table; its serialized protos equal ours byte for byte."""
    cases = [(v, k) for v, k, _ in MAKE_TENSOR_PROTO]
    code = f"""
import ml_dtypes
from google.protobuf import text_format
from tensorflow.python.framework import tensor_util as tu
out = []
for v, k in {cases!r}:
    try:
        p = eval(f"tu.make_tensor_proto({{v}}{{', ' + k if k else ''}})")
        out.append([text_format.MessageToString(p, as_one_line=True), p.SerializeToString()])
    except Exception as e:
        out.append([f"ERR {{type(e).__name__}}: {{e}}", None])
arrays = []
from tensorflow.core.framework import tensor_pb2
for text in {[t for t, *_ in MAKE_NDARRAY]!r}:
    a = tu.MakeNdarray(text_format.Parse(text, tensor_pb2.TensorProto()))
    flat = [[v.real, v.imag] if isinstance(v, complex) else v for v in a.ravel().tolist()]
    arrays.append([flat, str(a.dtype), list(a.shape)])
result = {{"protos": out, "arrays": arrays}}
"""
    got = oracle.run_tf(code)
    for (values, kwargs, expected), (text, wire) in zip(MAKE_TENSOR_PROTO, got["protos"],
                                                         strict=True):
        if expected.startswith("ERR "):
            assert text.startswith(expected), (values, kwargs)
        else:
            assert text == expected, (values, kwargs)
            assert _make(values, kwargs).SerializeToString() == wire, (values, kwargs)
    for (_, values, dtype, shape), (tf_values, tf_dtype, tf_shape) in zip(
            MAKE_NDARRAY, got["arrays"], strict=True):
        assert tf_dtype == dtype and tuple(tf_shape) == shape
        ours = [[v.real, v.imag] if isinstance(v, complex) else v for v in values]
        assert [v.encode() if isinstance(v, str) else v for v in tf_values] == ours


def test_a_splat_larger_than_the_bound_is_resource_exhausted_not_allocated(monkeypatch):
    import tensorflux as tf

    huge = text_format.Parse('dtype: DT_FLOAT tensor_shape { dim { size: 1099511627776 } } '
                             'float_val: 1.0', tensor_pb2.TensorProto())
    with pytest.raises(tf.errors.ResourceExhaustedError, match=r"\[1099511627776\].*4398046511104"
                       r" bytes, expanded from 1 stored value"):
        tensor_util.MakeNdarray(huge)
    # The bound is the configured one: 1 KiB refuses 257 float32s, takes 256.
    monkeypatch.setattr(tensor_util, "_max_expanded_bytes", tensor_util._max_expanded_bytes)
    tensor_util.set_max_expanded_bytes(1024)  # (monkeypatch restores the default after)
    small = text_format.Parse('dtype: DT_FLOAT tensor_shape { dim { size: 256 } } float_val: 3',
                              tensor_pb2.TensorProto())
    np.testing.assert_array_equal(tensor_util.MakeNdarray(small), np.full(256, 3, np.float32))
    small.tensor_shape.dim[0].size = 257
    with pytest.raises(tf.errors.ResourceExhaustedError):
        tensor_util.MakeNdarray(small)
    # Values given in full are not an expansion: no bound applies.
    full = tensor_util.make_tensor_proto(np.arange(300, dtype=np.float32))
    assert tensor_util.MakeNdarray(full).shape == (300,)
    # Importing a GraphDef holding such a Const allocates nothing (the static shape is
    # known); running it fails the same way, typed, naming the node (issue 21).
    gd = text_format.Parse(
        'node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } } '
        'attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: '
        '1099511627776 } } float_val: 1.0 } } } }', tf.GraphDef())
    with tf.Graph().as_default() as g:
        tf.import_graph_def(gd, name="")
        c = g.get_tensor_by_name("c:0")
        assert c.shape.as_list() == [1099511627776]
        with tf.Session() as s, pytest.raises(tf.errors.ResourceExhaustedError, match="node c"):
            s.run(c)

