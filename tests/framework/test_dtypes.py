"""tf.DType: the singletons, their properties, and as_dtype's table of inputs."""

import copy
import pickle

import ml_dtypes
import numpy as np
import pytest

from tensorflux.framework import dtypes
from tests import oracle

# name, enum, numpy type, size, (floating, integer, unsigned, complex, bool, quantized)
TYPES = [
    ("float16", 19, np.float16, 2, (1, 0, 0, 0, 0, 0)),
    ("float32", 1, np.float32, 4, (1, 0, 0, 0, 0, 0)),
    ("float64", 2, np.float64, 8, (1, 0, 0, 0, 0, 0)),
    ("bfloat16", 14, ml_dtypes.bfloat16, 2, (1, 0, 0, 0, 0, 0)),
    ("int8", 6, np.int8, 1, (0, 1, 0, 0, 0, 0)),
    ("int16", 5, np.int16, 2, (0, 1, 0, 0, 0, 0)),
    ("int32", 3, np.int32, 4, (0, 1, 0, 0, 0, 0)),
    ("int64", 9, np.int64, 8, (0, 1, 0, 0, 0, 0)),
    ("uint8", 4, np.uint8, 1, (0, 1, 1, 0, 0, 0)),
    ("uint16", 17, np.uint16, 2, (0, 1, 1, 0, 0, 0)),
    ("uint32", 22, np.uint32, 4, (0, 1, 1, 0, 0, 0)),
    ("uint64", 23, np.uint64, 8, (0, 1, 1, 0, 0, 0)),
    ("bool", 10, np.bool_, 1, (0, 0, 0, 0, 1, 0)),
    ("complex64", 8, np.complex64, 8, (0, 0, 0, 1, 0, 0)),
    ("complex128", 18, np.complex128, 16, (0, 0, 0, 1, 0, 0)),
    ("string", 7, np.object_, 0, (0, 0, 0, 0, 0, 0)),
    ("resource", 20, np.object_, 0, (0, 0, 0, 0, 0, 0)),
    ("variant", 21, np.object_, 0, (0, 0, 0, 0, 0, 0)),
    ("qint8", 11, None, 1, (0, 0, 0, 0, 0, 1)),
    ("quint8", 12, None, 1, (0, 0, 0, 0, 0, 1)),
    ("qint16", 15, None, 2, (0, 0, 0, 0, 0, 1)),
    ("quint16", 16, None, 2, (0, 0, 0, 0, 0, 1)),
    ("qint32", 13, None, 4, (0, 0, 0, 0, 0, 1)),
]


@pytest.mark.parametrize("name,enum,np_type,size,flags", TYPES, ids=[t[0] for t in TYPES])
def test_properties(name, enum, np_type, size, flags):
    dt = getattr(dtypes, name)
    ref = getattr(dtypes, name + "_ref")
    assert dt.name == name and ref.name == name + "_ref"
    assert dt.as_datatype_enum == enum and ref.as_datatype_enum == enum + 100
    assert dtypes.DType(enum) is dt and dtypes.as_dtype(enum + 100) is ref
    assert repr(dt) == f"tf.{name}" and str(dt) == f"<dtype: '{name}'>"
    assert dt.size == size == ref.size
    got = (dt.is_floating, dt.is_integer, dt.is_unsigned, dt.is_complex, dt.is_bool,
           dt.is_quantized)
    assert got == tuple(bool(f) for f in flags)
    assert (ref.is_floating, ref.is_integer, ref.is_quantized) == got[:2] + got[5:]
    if np_type is not None:
        assert dt.as_numpy_dtype is np_type
    else:
        assert dt.as_numpy_dtype == np.dtype([(name, dt.numpy_dtype)])
    assert dt.is_numpy_compatible == (name not in ("resource", "variant"))
    assert ref.base_dtype is dt and dt.base_dtype is dt
    assert dt._as_ref is ref and ref._as_ref is ref
    assert ref._is_ref_dtype and not dt._is_ref_dtype
    assert hash(dt) == enum
    assert dt == name and dt != ref and dt != name + "_ref"


def test_singletons_survive_copy_and_pickle():
    for dt in (dtypes.float32, dtypes.string_ref, dtypes.qint8):
        assert copy.copy(dt) is dt and copy.deepcopy(dt) is dt
        assert pickle.loads(pickle.dumps(dt)) is dt


def test_aliases_and_groups():
    assert dtypes.half is dtypes.float16 and dtypes.double is dtypes.float64
    assert dtypes.half_ref is dtypes.float16_ref and dtypes.double_ref is dtypes.float64_ref
    assert dtypes.QUANTIZED_DTYPES == {
        dtypes.qint8, dtypes.quint8, dtypes.qint16, dtypes.quint16, dtypes.qint32,
        dtypes.qint8_ref, dtypes.quint8_ref, dtypes.qint16_ref, dtypes.quint16_ref,
        dtypes.qint32_ref}
    assert len(dtypes.ALL_DTYPES) == 23
    assert dtypes.NUMERIC_DTYPES == dtypes.REAL_NUMBER_DTYPES | dtypes.COMPLEX_DTYPES
    assert dtypes.float32 in dtypes.FLOATING_DTYPES
    assert dtypes.uint8 in dtypes.UNSIGNED_DTYPES and dtypes.uint8 in dtypes.INTEGER_DTYPES


def test_real_dtype_and_compatibility():
    assert dtypes.complex64.real_dtype is dtypes.float32
    assert dtypes.complex128.real_dtype is dtypes.float64
    assert dtypes.float32_ref.real_dtype is dtypes.float32_ref
    assert dtypes.int32.real_dtype is dtypes.int32
    assert dtypes.float32.is_compatible_with(dtypes.float32_ref)
    assert not dtypes.float32_ref.is_compatible_with(dtypes.float32)
    assert dtypes.float32.is_compatible_with("float32")
    assert not dtypes.float32.is_compatible_with(dtypes.float64)


def test_equality_with_other_things():
    f = dtypes.float32
    assert f == 1 and f == np.float32 and f == np.dtype("float32") and f == "float"
    assert np.dtype("float32") == f
    assert not (f == None)  # noqa: E711
    assert f != "garbage" and f != [1] and f != 1.5 and f != object()
    assert {f: 1}[dtypes.as_dtype("float32")] == 1


MIN_MAX = [
    ("int8", -128, 127), ("uint8", 0, 255), ("int16", -32768, 32767), ("uint16", 0, 65535),
    ("int32", -2**31, 2**31 - 1), ("uint32", 0, 2**32 - 1), ("int64", -2**63, 2**63 - 1),
    ("uint64", 0, 2**64 - 1),
    ("float16", -65504.0, 65504.0),
    ("float32", float(np.finfo(np.float32).min), float(np.finfo(np.float32).max)),
    ("float64", float(np.finfo(np.float64).min), float(np.finfo(np.float64).max)),
    ("bfloat16", -3.3895313892515355e38, 3.3895313892515355e38),
]


@pytest.mark.parametrize("name,lo,hi", MIN_MAX)
def test_min_max(name, lo, hi):
    dt = getattr(dtypes, name)
    assert dt.min == lo and dt.max == hi
    if dt.is_integer:
        assert type(dt.min) is int and type(dt.max) is int
    assert getattr(dtypes, name + "_ref").max == dt.max


@pytest.mark.parametrize("name,message", [
    ("bool", "Cannot find minimum value of <dtype: 'bool'> with type <dtype: 'bool'>."),
    ("string", "Cannot find minimum value of <dtype: 'string'> with type <dtype: 'string'>."),
    ("complex64", "with type <dtype: 'complex64'>."),
    ("qint8", "Cannot find minimum value of <dtype: 'qint8'> with quantized type"),
    ("resource", "Cannot find minimum value of <dtype: 'resource'>."),
])
def test_min_errors(name, message):
    with pytest.raises(TypeError, match=message.replace("(", r"\(").replace(".", r"\.")):
        _ = getattr(dtypes, name).min
    with pytest.raises(TypeError, match="maximum"):
        _ = getattr(dtypes, name).max


def test_limits():
    assert dtypes.float32.limits == (0, 1) and dtypes.float64.limits == (0, 1)
    assert dtypes.uint8.limits == (0, 255) and dtypes.int8.limits == (0, 127)
    assert dtypes.bool.limits == (0, True)
    for name in ("float16", "bfloat16", "complex64", "string", "qint8"):
        with pytest.raises(ValueError, match="does not have defined limits"):
            _ = getattr(dtypes, name).limits


# (Python source of the input, expected type name or None for TypeError), the same in TF.
AS_DTYPE = [
    ("1", "float32"), ("101", "float32_ref"), ("23", "uint64"), ("0", None), ("99", None),
    ("200", None), ("'float32'", "float32"), ("'float'", "float32"), ("'double'", "float64"),
    ("'half'", "float16"), ("'int64'", "int64"), ("'string'", "string"),
    ("'bfloat16'", "bfloat16"), ("'bool'", "bool"), ("'float32_ref'", "float32_ref"),
    ("'half_ref'", "float16_ref"), ("'double_ref'", "float64_ref"), ("'qint8'", "qint8"),
    ("'resource'", "resource"), ("'variant'", "variant"), ("'complex'", None),
    ("'int'", None), ("'Float32'", None), ("'tf.float32'", None), ("''", None),
    ("np.float32", "float32"), ("np.dtype('float32')", "float32"),
    ("np.dtype('>f4')", "float32"), ("np.int64", "int64"), ("np.longlong", "int64"),
    ("np.intc", "int32"), ("np.uint64", "uint64"), ("np.float16", "float16"),
    ("np.bool_", "bool"), ("np.complex64", "complex64"), ("np.str_", "string"),
    ("np.bytes_", "string"), ("object", "string"), ("np.object_", "string"),
    ("np.dtype('U5')", "string"), ("np.dtype('S3')", "string"), ("np.dtype('O')", "string"),
    ("ml_dtypes.bfloat16", "bfloat16"), ("np.dtype(ml_dtypes.bfloat16)", "bfloat16"),
    ("np.dtype([('qint8', 'i1')])", "qint8"), ("float", "float32"), ("bool", "bool"),
    ("True", "float32"), ("None", None), ("1.5", None), ("[1]", None),
    ("np.datetime64", None), ("np.void", None), ("list", None), ("np.dtype('V4')", None),
]
# Python types TF 2.21's as_dtype rejects but tensorflux accepts (with tf.constant's types).
AS_DTYPE_EXTENSIONS = [("int", "int32"), ("complex", "complex128"), ("str", "string"),
                       ("bytes", "string")]


@pytest.mark.parametrize("source,expected", AS_DTYPE + AS_DTYPE_EXTENSIONS,
                         ids=[s for s, _ in AS_DTYPE + AS_DTYPE_EXTENSIONS])
def test_as_dtype(source, expected):
    value = eval(source, {"np": np, "ml_dtypes": ml_dtypes})
    if expected is None:
        with pytest.raises(TypeError, match="Cannot convert the argument `type_value`"):
            dtypes.as_dtype(value)
    else:
        assert dtypes.as_dtype(value) is getattr(dtypes, expected)


def test_dtype_constructor_rejects_bad_enums():
    with pytest.raises(TypeError, match="not a valid"):
        dtypes.DType(0)


def test_numpy_dtype_is_storage():
    assert dtypes.qint8.numpy_dtype == np.int8 and dtypes.qint32.numpy_dtype == np.int32
    assert dtypes.string.numpy_dtype == np.dtype(object)
    assert dtypes.bfloat16.numpy_dtype == np.dtype(ml_dtypes.bfloat16)


@pytest.mark.oracle
def test_as_dtype_and_properties_match_tensorflow():
    """One TF run checks the whole as_dtype table and every type's properties."""
    code = f"""
import ml_dtypes
def conv(source):
    try:
        return tf.as_dtype(eval(source)).name
    except TypeError:
        return None
props = {{}}
for name in {[t[0] for t in TYPES]!r}:
    d = tf.as_dtype(name)
    props[name] = [d.as_datatype_enum, d.size, d.is_floating, d.is_integer, d.is_unsigned,
                   d.is_complex, d.is_bool, d.is_quantized, d.is_numpy_compatible]
result = {{"as_dtype": [conv(s) for s in {[s for s, _ in AS_DTYPE]!r}], "props": props}}
"""
    got = oracle.run_tf(code)
    assert got["as_dtype"] == [e for _, e in AS_DTYPE]
    for name, *_ in TYPES:
        d = getattr(dtypes, name)
        assert got["props"][name] == [
            d.as_datatype_enum, d.size, d.is_floating, d.is_integer, d.is_unsigned,
            d.is_complex, d.is_bool, d.is_quantized, d.is_numpy_compatible], name
