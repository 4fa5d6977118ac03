"""Ragged dispatch for public functions (tf.add, tf.reduce_sum, tf.gather, tf.concat, ...):
the public namespace wraps its dense functions so that a RaggedTensor argument is handled
by the ragged implementation (as TF's dispatch does); dense calls are unchanged."""

from __future__ import annotations

import functools

from tensorflux.ragged import (
    dynamic_ragged_shape,
    ragged_nn_ops,
    ragged_ops,
    ragged_string_ops,
    ragged_structure_ops,
)
from tensorflux.ragged.ragged_tensor import RaggedTensor

# public name -> ragged implementation
RAGGED_IMPLEMENTATIONS = {
    "add": ragged_ops.add, "subtract": ragged_ops.subtract, "multiply": ragged_ops.multiply,
    "divide": ragged_ops.divide, "truediv": ragged_ops.truediv,
    "floordiv": ragged_ops.floordiv, "maximum": ragged_ops.maximum,
    "minimum": ragged_ops.minimum, "pow": ragged_ops.pow,
    "reduce_sum": ragged_ops.reduce_sum, "reduce_mean": ragged_ops.reduce_mean,
    "reduce_max": ragged_ops.reduce_max, "reduce_min": ragged_ops.reduce_min,
    "reduce_prod": ragged_ops.reduce_prod, "reduce_all": ragged_ops.reduce_all,
    "reduce_any": ragged_ops.reduce_any, "reduce_std": ragged_ops.reduce_std,
    "reduce_variance": ragged_ops.reduce_variance, "gather": ragged_ops.gather,
    "expand_dims": ragged_ops.expand_dims, "stack": ragged_ops.stack,
    "gather_nd": ragged_ops.gather_nd, "reduce_logsumexp": ragged_ops.reduce_logsumexp,
    "add_n": ragged_ops.add_n, "size": ragged_ops.size, "rank": ragged_ops.rank,
    "where": ragged_ops.where, "tile": ragged_structure_ops.tile,
    "reverse": ragged_structure_ops.reverse, "reverse_v2": ragged_structure_ops.reverse,
    "squeeze": ragged_structure_ops.squeeze, "split": ragged_structure_ops.split,
    "cumsum": ragged_structure_ops.cumsum, "reduce_join": ragged_ops.reduce_join,
    "format": ragged_string_ops.string_format, "string_format": ragged_string_ops.string_format,
    "print": ragged_string_ops.print_ragged, "shape": dynamic_ragged_shape.shape,
    "broadcast_to": dynamic_ragged_shape.broadcast_to, "zeros": dynamic_ragged_shape.zeros,
    "ones": dynamic_ragged_shape.ones, "fill": dynamic_ragged_shape.fill,
    "unsorted_segment_sum": ragged_nn_ops.unsorted_segment_sum,
    "unsorted_segment_prod": ragged_nn_ops.unsorted_segment_prod,
    "unsorted_segment_max": ragged_nn_ops.unsorted_segment_max,
    "unsorted_segment_min": ragged_nn_ops.unsorted_segment_min,
    "unsorted_segment_mean": ragged_nn_ops.unsorted_segment_mean,
    "unsorted_segment_sqrt_n": ragged_nn_ops.unsorted_segment_sqrt_n,
    "dynamic_partition": ragged_nn_ops.dynamic_partition,
    "bincount": ragged_nn_ops.bincount, "one_hot": ragged_nn_ops.one_hot,
    "reshape": ragged_nn_ops.reshape, "batch_gather": ragged_nn_ops.batch_gather,
    "matmul": ragged_nn_ops.matmul, "embedding_lookup": ragged_nn_ops.embedding_lookup,
    "embedding_lookup_sparse": ragged_nn_ops.embedding_lookup_sparse,
    "safe_embedding_lookup_sparse": ragged_nn_ops.safe_embedding_lookup_sparse,
    "assert_type": ragged_nn_ops.assert_type, "resize_images": ragged_nn_ops.resize_images,
    "resize": ragged_nn_ops.resize_images,
}


# Elementwise functions applied to the flat values of a RaggedTensor argument (TF's ragged
# dispatch for unary elementwise ops), and binary ones taking two RaggedTensors with the same
# row splits, or a RaggedTensor and a scalar / broadcastable dense tensor.
UNARY = ["abs", "negative", "square", "sqrt", "rsqrt", "exp", "expm1", "log", "log1p", "sin",
         "cos", "tan", "tanh", "sigmoid", "round", "rint", "floor", "ceil", "sign", "cast",
         "logical_not", "is_nan", "is_inf", "is_finite", "reciprocal", "erf", "ones_like",
         "zeros_like", "to_float", "to_int32", "to_int64", "saturate_cast", "string_to_number",
         "as_string", "length", "lower", "upper", "strip", "substr", "to_number",
         "regex_full_match", "regex_replace", "to_hash_bucket", "to_hash_bucket_fast",
         "to_hash_bucket_strong", "unicode_script", "string_to_hash_bucket_fast",
         "string_strip", "string_length", "clip_by_value",
         # the rest of TF's unary list: math, casts, complex parts, bytes, tf.nn
         # activations and dropout, tf.image's per-pixel adjustments
         "acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh", "digamma", "erfc",
         "erfinv", "erfcinv", "lgamma", "log_sigmoid", "ndtri", "reciprocal_no_nan",
         "softplus", "bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e", "angle", "conj",
         "real", "imag", "invert", "bitcast", "check_numerics", "to_bfloat16", "to_double",
         "to_complex64", "to_complex128", "encode_base64", "decode_base64",
         "decode_compressed", "unicode_transcode", "string_to_hash_bucket",
         "string_to_hash_bucket_strong", "relu", "relu6", "elu", "selu", "leaky_relu",
         "softsign", "silu", "swish", "adjust_brightness", "adjust_gamma",
         "convert_image_dtype", "random_brightness", "join", "string_join", "log_softmax",
         "bessel_j0", "bessel_j1", "bessel_k0", "bessel_k0e", "bessel_k1", "bessel_k1e",
         "bessel_y0", "bessel_y1", "dawsn", "expint", "fresnel_cos", "fresnel_sin", "spence"]
BINARY = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
          "logical_and", "logical_or", "logical_xor", "squared_difference", "floormod", "mod",
          "realdiv", "atan2", "div", "floor_div", "truncatediv", "truncatemod",
          "divide_no_nan", "multiply_no_nan", "xdivy", "xlog1py", "xlogy", "zeta",
          "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "complex"]

# Assertions on two tensors (tf.assert_equal, tf.debugging.assert_less, ...).
ASSERTIONS = ["assert_equal", "assert_greater", "assert_greater_equal", "assert_less",
              "assert_less_equal", "assert_near", "assert_none_equal"]

# The namespaces whose functions dispatch by name only for the names listed (the others,
# tf, tf.math, tf.strings and tf.dtypes, for every name above); tf.sparse and tf.linalg
# hold functions that share a name with tf's but mean something else.
NAMESPACE_NAMES = {
    "nn": ["relu", "relu6", "elu", "selu", "leaky_relu", "softsign", "silu", "swish",
           "softplus", "sigmoid", "tanh", "dropout", "log_softmax", "embedding_lookup",
           "embedding_lookup_sparse", "safe_embedding_lookup_sparse"],
    "bitwise": ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
                "invert"],
    "io": ["encode_base64", "decode_base64", "decode_compressed"],
    "image": ["adjust_brightness", "adjust_gamma", "convert_image_dtype",
              "random_brightness", "resize_images", "resize"],
    "debugging": ["check_numerics", "is_nan", "is_inf", "is_finite", "assert_type"]
    + ASSERTIONS,
    "linalg": ["matmul"],
    "sparse": ["bincount"],
    "manip": ["gather_nd", "reverse", "tile"],
}


def _unary(dense_fn):
    def apply(*args, **kwargs):
        return ragged_ops.map_flat_values(dense_fn, *args, **kwargs)
    return apply


def _has_ragged(args, kwargs) -> bool:
    def ragged(x):
        if isinstance(x, (RaggedTensor, dynamic_ragged_shape.DynamicRaggedShape)):
            return True
        return isinstance(x, (list, tuple)) and any(isinstance(i, RaggedTensor) for i in x)
    return any(ragged(a) for a in args) or any(ragged(v) for v in kwargs.values())


# dense function -> its dispatching wrapper: a function exported by several namespaces
# (tf.add and tf.math.add, tf.as_string and tf.dtypes.as_string) stays one object.
_WRAPPERS: dict = {}


def dispatching(dense_fn, ragged_fn):
    """`dense_fn`, calling `ragged_fn` instead when an argument is a RaggedTensor."""
    if getattr(dense_fn, "_ragged_dispatch", False):
        return dense_fn
    if dense_fn in _WRAPPERS:
        return _WRAPPERS[dense_fn]

    @functools.wraps(dense_fn)
    def ragged_dispatch(*args, **kwargs):  # a frame of its own in tracebacks
        if _has_ragged(args, kwargs):
            return ragged_fn(*args, **kwargs)
        return dense_fn(*args, **kwargs)

    ragged_dispatch._ragged_dispatch = True
    _WRAPPERS[dense_fn] = ragged_dispatch
    return ragged_dispatch


def _concat(dense_concat):
    def ragged_concat(values, axis, name="concat"):
        return ragged_ops.concat(values, axis, name=None if name == "concat" else name)
    return dispatching(dense_concat, ragged_concat)


def _scalar_mul(dense_scalar_mul):
    def ragged_scalar_mul(scalar, x, name=None):
        if isinstance(scalar, RaggedTensor):
            raise ValueError(f"The input scalar must be a 0-D value. Received shape "
                             f"{tuple(scalar.flat_values.shape.as_list())}.")
        return ragged_ops.map_flat_values(
            lambda v: dense_scalar_mul(scalar, v, name=name), x)
    return dispatching(dense_scalar_mul, ragged_scalar_mul)


def _nextafter(dense_nextafter):
    def ragged_nextafter(x1, x2, name=None):
        # TF dispatches on x1 only: a ragged x2 reaches the dense op (and its TypeError)
        if isinstance(x2, RaggedTensor):
            return dense_nextafter(x1.flat_values if isinstance(x1, RaggedTensor) else x1,
                                   x2, name=name)
        return ragged_ops.map_flat_values(lambda v: dense_nextafter(v, x2, name=name), x1)
    return dispatching(dense_nextafter, ragged_nextafter)


def _dropout(dense_dropout):
    def ragged_dropout(x, *args, **kwargs):
        noise_shape = args[1] if len(args) > 1 else kwargs.get("noise_shape")
        if noise_shape is not None:
            raise ValueError("noise_shape is not supported yet for RaggedTensor x")
        return ragged_ops.map_flat_values(dense_dropout, x, *args, **kwargs)
    return dispatching(dense_dropout, ragged_dropout)


_SPECIAL = {"concat": _concat, "scalar_mul": _scalar_mul, "nextafter": _nextafter,
            "dropout": _dropout}
for _name in ASSERTIONS:
    _SPECIAL[_name] = lambda fn: dispatching(fn, ragged_nn_ops.binary_assert(fn))


def install(namespace, names=None, skip=()) -> None:
    """Wraps the dispatchable functions present in the module `namespace` (only those
    called `names` when given, none of those called `skip`)."""
    def present(name):
        fn = getattr(namespace, name, None)
        if names is not None and name not in names or name in skip:
            return None
        return fn if callable(fn) and not isinstance(fn, type) else None

    for name, ragged_fn in RAGGED_IMPLEMENTATIONS.items():
        if fn := present(name):
            setattr(namespace, name, dispatching(fn, ragged_fn))
    for name in UNARY:
        if fn := present(name):
            setattr(namespace, name, dispatching(fn, _unary(fn)))
    for name in BINARY:
        if fn := present(name):
            setattr(namespace, name, dispatching(fn, ragged_ops.binary(fn)))
    for name, make in _SPECIAL.items():
        if fn := present(name):
            setattr(namespace, name, make(fn))


def install_all(tf) -> None:
    """Ragged dispatch in the public namespace `tf` and its submodules."""
    for namespace in (tf, tf.math, tf.math.special, tf.dtypes):
        install(namespace)
    install(tf.strings, skip=("split",))  # tf.strings.split splits strings
    for attr, names in NAMESPACE_NAMES.items():
        install(getattr(tf, attr), names)
