"""CPU kernel of ParseSequenceExampleV2 (tensorflux/ops/parsing_seq_ops.py).

The context of each SequenceExample is a Features map, decoded by the same functions as
ParseExampleV2's features (kernels/cpu/parsing_ops.py: `_sparse`, `_dense`). Feature lists
add a time dimension: a dense one stacks its steps (each with exactly the feature's number
of values) and pads the batch to its longest sequence with zeros, reporting each example's
length; a sparse one indexes values by (example, step, position).
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes, errors
from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu.parsing_ops import (
    _dense,
    _DenseSpec,
    _Labels,
    _sparse,
    _to_array,
    _values,
)
from tensorflux.kernels.registry import kernel_factory
from tensorflux.protos import example_pb2


def _parse(data: bytes, label: str):
    try:
        return example_pb2.SequenceExample.FromString(bytes(data))
    except Exception:  # noqa: BLE001 - the protobuf runtime's DecodeError
        raise errors.InvalidArgumentError(
            None, None, f"Invalid protocol message input, example id: {label}") from None


def _strings(arr) -> list[str]:
    return [k.decode() if isinstance(k, bytes) else str(k)
            for k in np.asarray(arr, dtype=object).reshape(-1)]


def _steps(example, key: str):
    """The Features of feature list `key`, or None when the example lacks it."""
    lists = example.feature_lists.feature_list
    return lists[key].feature if key in lists else None


def _sparse_list(examples, labels, key, dtype, scalar: bool):
    """A sparse feature list: indices [n, 2 or 3], values, dense shape."""
    indices, values = [], []
    most_steps = most_values = 0
    for b, ex in enumerate(examples):
        steps = _steps(ex, key) or []
        most_steps = max(most_steps, len(steps))
        for t, feature in enumerate(steps):
            vals = _values(feature, dtype, key, labels[b], t)
            most_values = max(most_values, len(vals))
            values.extend(vals)
            prefix = [t] if scalar else [b, t]
            indices.extend(prefix + [j] for j in range(len(vals)))
    rank = 2 if scalar else 3
    shape = [most_steps, most_values] if scalar else [len(examples), most_steps, most_values]
    return (np.array(indices, np.int64).reshape(-1, rank), _to_array(values, dtype),
            np.array(shape, np.int64))


def _dense_list(examples, labels, key, spec: _DenseSpec, missing_ok: bool, batch_shape):
    """A dense feature list: [batch..., steps] + shape, zero-padded, and the lengths."""
    rows = []
    for b, ex in enumerate(examples):
        steps = _steps(ex, key)
        if steps is None:
            if not missing_ok:
                raise errors.InvalidArgumentError(
                    None, None, f"Name: {labels[b]}, Feature list '{key}' is required but "
                    "could not be found.  Did you mean to include it in "
                    "feature_list_dense_missing_assumed_empty or feature_list_dense_defaults?")
            steps = []
        row = []
        for t, feature in enumerate(steps):
            vals = _values(feature, spec.dtype, key, labels[b], t)
            if len(vals) != spec.per:
                raise errors.InvalidArgumentError(
                    None, None, f"Name: {labels[b]}, Key: {key}, Index: {t}.  Number of "
                    f"values != expected.  values size: {len(vals)} but output shape: "
                    f"[{','.join(str(d) for d in spec.shape)}]")
            row.extend(vals)
        rows.append(_to_array(row, spec.dtype))
    lengths = np.array([len(r) // spec.per for r in rows], np.int64)
    longest = int(lengths.max(initial=0))
    pad = b"" if spec.dtype is dtypes.string else 0
    out = np.full((len(rows), longest * spec.per), pad, dtype=spec.np_dtype)
    for b, r in enumerate(rows):
        out[b, :len(r)] = r
    out = out.reshape(tuple(batch_shape) + (longest,) + tuple(spec.shape))
    return out, lengths.reshape(batch_shape)


class _Specs:
    """The attrs of a SequenceExample parsing op that do not change between runs."""

    __slots__ = ("ctx_sparse", "ctx_dense", "fl_sparse", "fl_dense")

    def __init__(self, a):
        self.ctx_sparse = list(a["context_sparse_types"])
        self.ctx_dense = [_DenseSpec(t, tuple(s.as_list())) for t, s in
                          zip(a["Tcontext_dense"], a["context_dense_shapes"], strict=True)]
        self.fl_sparse = list(a["feature_list_sparse_types"])
        self.fl_dense = [_DenseSpec(t, tuple(s.as_list())) for t, s in
                         zip(a["feature_list_dense_types"], a["feature_list_dense_shapes"],
                             strict=True)]


def _parse_all(specs: _Specs, serialized, debug_name, keys, missing_ok, defaults,
               with_lengths: bool, ctx=None):
    """Every output of a SequenceExample parse, flat in the ops' order.

    `keys` is (context sparse, context dense, feature-list sparse, feature-list dense) key
    lists; `missing_ok` one bool per dense feature list.
    """
    serialized = np.asarray(serialized, dtype=object)
    if serialized.ndim > 1:
        raise errors.InvalidArgumentError(
            None, None, "Expected serialized to be a scalar or vector, got shape: "
            f"{list(serialized.shape)}")
    csk, cdk, fsk, fdk = keys
    if (len(csk) != len(specs.ctx_sparse) or len(cdk) != len(specs.ctx_dense)
            or len(fsk) != len(specs.fl_sparse) or len(fdk) != len(specs.fl_dense)
            or len(missing_ok) != len(fdk)):
        raise errors.InvalidArgumentError(
            None, None, "The number of keys does not match the number of types")
    scalar = serialized.ndim == 0
    labels = _Labels(debug_name)
    examples = [_parse(s, labels[i])
                for i, s in enumerate(interrupt.each(ctx, serialized.reshape(-1)))]
    contexts = [ex.context.feature for ex in examples]
    ctx_sparse = [[], [], []]
    for key, dtype in zip(csk, specs.ctx_sparse, strict=True):
        idx, vals, longest = _sparse(contexts, labels, key, dtype, scalar)
        shape = np.array([longest] if scalar else [len(examples), longest], np.int64)
        for part, v in zip(ctx_sparse, (idx, vals, shape), strict=True):
            part.append(v)
    ctx_dense = [_dense(contexts, labels, key, spec, default, serialized.shape)
                 for key, spec, default in zip(cdk, specs.ctx_dense, defaults, strict=True)]
    fl_sparse = [[], [], []]
    for key, dtype in zip(fsk, specs.fl_sparse, strict=True):
        for part, v in zip(fl_sparse, _sparse_list(examples, labels, key, dtype, scalar),
                           strict=True):
            part.append(v)
    fl_dense = [_dense_list(examples, labels, key, spec, bool(ok), serialized.shape)
                for key, spec, ok in zip(fdk, specs.fl_dense, missing_ok, strict=True)]
    result = (ctx_sparse[0] + ctx_sparse[1] + ctx_sparse[2] + ctx_dense + fl_sparse[0]
              + fl_sparse[1] + fl_sparse[2] + [d for d, _ in fl_dense])
    if with_lengths:
        result += [n for _, n in fl_dense]
    return result[0] if len(result) == 1 else tuple(result)


@kernel_factory("ParseSequenceExampleV2")
def _parse_sequence_example_v2(node):
    a = node.attrs
    if a["context_ragged_value_types"] or a["feature_list_ragged_value_types"]:
        raise errors.UnimplementedError(
            None, None, "ParseSequenceExampleV2: ragged features are not supported")
    specs = _Specs(a)

    def compute(ctx, serialized, debug_name, c_sparse_keys, c_dense_keys, c_ragged_keys,
                f_sparse_keys, f_dense_keys, f_ragged_keys, missing_ok, *defaults):
        keys = tuple(_strings(k) for k in (c_sparse_keys, c_dense_keys, f_sparse_keys,
                                            f_dense_keys))
        return _parse_all(specs, serialized, debug_name, keys,
                          np.asarray(missing_ok, bool).reshape(-1), defaults, True, ctx=ctx)

    return compute


@kernel_factory("ParseSequenceExample")
def _parse_sequence_example(node):
    a = node.attrs
    specs = _Specs(a)
    keys = tuple(list(a[k]) for k in ("context_sparse_keys", "context_dense_keys",
                                      "feature_list_sparse_keys", "feature_list_dense_keys"))
    keys = tuple([k.decode() if isinstance(k, bytes) else k for k in ks] for ks in keys)
    empty_ok = {k.decode() if isinstance(k, bytes) else k
                for k in a["feature_list_dense_missing_assumed_empty"]}
    missing_ok = [k in empty_ok for k in keys[3]]

    def compute(ctx, serialized, debug_name, *defaults):
        return _parse_all(specs, serialized, debug_name, keys, missing_ok, defaults, True,
                          ctx=ctx)

    return compute


@kernel_factory("ParseSingleSequenceExample")
def _parse_single_sequence_example(node):
    a = node.attrs
    specs = _Specs(a)
    n_dense = a["Ncontext_dense"]
    counts = [a["Ncontext_sparse"], n_dense, a["Nfeature_list_sparse"],
              a["Nfeature_list_dense"]]

    def compute(ctx, serialized, missing_assumed_empty, *rest):
        keys, at = [], 0
        for n in counts:
            keys.append([_strings(k)[0] for k in rest[at:at + n]])
            at += n
        defaults, debug_name = rest[at:at + n_dense], rest[at + n_dense]
        if np.ndim(serialized) != 0:
            raise errors.InvalidArgumentError(
                None, None, f"Expected serialized to be a scalar, got shape: "
                f"{list(np.shape(serialized))}")
        empty_ok = set(_strings(missing_assumed_empty))
        missing_ok = [k in empty_ok for k in keys[3]]
        return _parse_all(specs, serialized, debug_name, tuple(keys), missing_ok, defaults,
                          False, ctx=ctx)

    return compute
