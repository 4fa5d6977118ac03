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


@kernel_factory("ParseSequenceExampleV2")
def _parse_sequence_example(node):
    a = node.attrs
    if a["context_ragged_value_types"] or a["feature_list_ragged_value_types"]:
        raise errors.UnimplementedError(
            None, None, "ParseSequenceExampleV2: ragged features are not supported")
    ctx_sparse_types = list(a["context_sparse_types"])
    ctx_specs = [_DenseSpec(t, tuple(s.as_list())) for t, s in
                 zip(a["Tcontext_dense"], a["context_dense_shapes"], strict=True)]
    fl_sparse_types = list(a["feature_list_sparse_types"])
    fl_specs = [_DenseSpec(t, tuple(s.as_list())) for t, s in
                zip(a["feature_list_dense_types"], a["feature_list_dense_shapes"],
                    strict=True)]

    def compute(ctx, serialized, debug_name, c_sparse_keys, c_dense_keys, c_ragged_keys,
                f_sparse_keys, f_dense_keys, f_ragged_keys, missing_ok, *defaults):
        serialized = np.asarray(serialized, dtype=object)
        if serialized.ndim > 1:
            raise errors.InvalidArgumentError(
                None, None, "Expected serialized to be a scalar or vector, got shape: "
                f"{list(serialized.shape)}")
        scalar = serialized.ndim == 0
        labels = _Labels(debug_name)
        examples = [_parse(s, labels[i]) for i, s in enumerate(serialized.reshape(-1))]
        contexts = [ex.context.feature for ex in examples]
        csk, cdk = _strings(c_sparse_keys), _strings(c_dense_keys)
        fsk, fdk = _strings(f_sparse_keys), _strings(f_dense_keys)
        missing_ok = np.asarray(missing_ok, bool).reshape(-1)
        if (len(csk) != len(ctx_sparse_types) or len(cdk) != len(ctx_specs)
                or len(fsk) != len(fl_sparse_types) or len(fdk) != len(fl_specs)
                or len(missing_ok) != len(fdk)):
            raise errors.InvalidArgumentError(
                None, None, "The number of keys does not match the number of types")
        outputs = [[], [], []]
        for key, dtype in zip(csk, ctx_sparse_types, strict=True):
            idx, vals, longest = _sparse(contexts, labels, key, dtype, scalar)
            for part, v in zip(outputs, (idx, vals, np.array(
                    [longest] if scalar else [len(examples), longest], np.int64)), strict=True):
                part.append(v)
        ctx_dense = [_dense(contexts, labels, key, spec, default, serialized.shape)
                     for key, spec, default in zip(cdk, ctx_specs, defaults, strict=True)]
        fl_sparse = [[], [], []]
        for key, dtype in zip(fsk, fl_sparse_types, strict=True):
            for part, v in zip(fl_sparse, _sparse_list(examples, labels, key, dtype, scalar),
                               strict=True):
                part.append(v)
        fl_dense = [_dense_list(examples, labels, key, spec, ok, serialized.shape)
                    for key, spec, ok in zip(fdk, fl_specs, missing_ok, strict=True)]
        result = (outputs[0] + outputs[1] + outputs[2] + ctx_dense + fl_sparse[0]
                  + fl_sparse[1] + fl_sparse[2] + [d for d, _ in fl_dense]
                  + [n for _, n in fl_dense])
        return result[0] if len(result) == 1 else tuple(result)

    return compute

