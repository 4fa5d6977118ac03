"""`tf.dtypes`: the DType objects and the casts under their TF1 `tf.dtypes.*` names."""

from tensorflux.framework.dtypes import (  # noqa: F401
    QUANTIZED_DTYPES,
    DType,
    as_dtype,
    bfloat16,
    bool,  # noqa: A004 - tf.dtypes.bool
    complex64,
    complex128,
    double,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    qint8,
    qint16,
    qint32,
    quint8,
    quint16,
    resource,
    string,
    uint8,
    uint16,
    uint32,
    uint64,
    variant,
)
from tensorflux.math.math_impl import saturate_cast  # noqa: F401
from tensorflux.ops.math_ops import cast, complex  # noqa: F401,A004
from tensorflux.ops.string_ops import as_string  # noqa: F401,E402 - tf.dtypes.as_string
