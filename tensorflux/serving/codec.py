"""TensorFlow Serving's REST JSON <-> NumPy, as its documentation gives the shapes.

Predict requests come in one of two forms (never both):

    {"signature_name": "s", "instances": [row, row, ...]}    row format
    {"signature_name": "s", "inputs": value | {alias: value}}  columnar format

A row is the value of the one input, or `{alias: value}` when the signature names several;
rows stack along a new dimension 0. The answer mirrors the request: `{"predictions": [...]}`
(one value per row, or `{alias: value}` per row for several outputs) or `{"outputs": value |
{alias: value}}`. Bytes (DT_STRING) travel as UTF-8 text or `{"b64": "..."}`; outputs whose
alias ends in `_bytes` (and any that are not UTF-8) come back as `{"b64": ...}`.

Classify and regress take tf.Example-style features:

    {"signature_name": "s", "context": {feature: value}, "examples": [{feature: value}, ...]}

a feature value being a number, a string, `{"b64": ...}`, or a list of one kind: integers
become an int64_list, any float makes a float_list, strings a bytes_list. Context features
are merged into every example. Answers: `{"result": [[[label, score], ...], ...]}` and
`{"result": [value, ...]}`.

Every malformed request raises tf.errors.InvalidArgumentError (HTTP 400).
"""

from __future__ import annotations

import base64
import binascii
import json

import numpy as np

from tensorflux.framework import errors
from tensorflux.protos import example_pb2, feature_pb2
from tensorflux.saved_model import signature_constants as sc
from tensorflux.serving.servable import numpy_dtype

__all__ = ["parse_json", "predict_inputs", "predict_response", "examples_tensor",
           "classify_response", "regress_response", "to_json"]


def _bad(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def parse_json(body: bytes) -> dict:
    """The request body as a JSON object."""
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _bad(f"JSON Parse error: {e}") from None
    if not isinstance(doc, dict):
        raise _bad("JSON Value not an object")
    return doc


def _is_b64(value) -> bool:
    return isinstance(value, dict) and len(value) == 1 and "b64" in value


def _bytes_of(value):
    """Nested lists of str / {"b64": ...} -> the same nesting of bytes."""
    if isinstance(value, list):
        return [_bytes_of(v) for v in value]
    if _is_b64(value):
        if not isinstance(value["b64"], str):
            raise _bad("'b64' value must be a string")
        try:
            return base64.b64decode(value["b64"], validate=True)
        except (binascii.Error, ValueError):
            raise _bad(f"Unable to base64 decode: {value['b64'][:40]!r}") from None
    if isinstance(value, str):
        return value.encode("utf-8")
    raise _bad(f"Expected a string or {{\"b64\": ...}} for a DT_STRING tensor, got "
               f"{json.dumps(value)[:40]}")


def to_array(value, tensor_info, alias: str) -> np.ndarray:
    """A JSON value as the array the TensorInfo asks for (dtype checked, not coerced from
    strings; rectangular)."""
    dtype = numpy_dtype(tensor_info)
    if dtype is np.object_:
        nested = _bytes_of(value)
        try:
            arr = np.array(nested, dtype=object)
            ref = np.array(value, dtype=object) if not isinstance(value, dict) else arr
        except ValueError as e:
            raise _bad(f"Ragged or malformed DT_STRING tensor for {alias}: {e}") from None
        if arr.shape != ref.shape or any(not isinstance(x, bytes) for x in arr.flat):
            raise _bad(f"Ragged DT_STRING tensor for {alias}")
        return arr
    try:
        raw = np.asarray(value)
    except ValueError as e:
        raise _bad(f"Ragged or malformed tensor for input {alias}: {e}") from None
    kind = np.dtype(dtype).kind
    allowed = {"b": "b", "i": "biu", "u": "biu", "f": "biuf", "c": "biufc"}.get(kind, "biuf")
    if raw.dtype.kind not in allowed:
        raise _bad(f"Expected values of type {np.dtype(dtype).name} for input {alias}, got "
                   f"{raw.dtype.kind == 'U' and 'strings' or raw.dtype.name} "
                   f"(or a ragged or malformed list)")
    return raw.astype(dtype, copy=False)


def predict_inputs(doc: dict, signature) -> tuple[dict, bool]:
    """(alias -> array, row_format) from a predict request."""
    has_rows, has_cols = "instances" in doc, "inputs" in doc
    if has_rows == has_cols:
        raise _bad("Missing 'inputs' or 'instances' key" if not has_rows else
                   "Not formatted correctly expecting only one of 'inputs' or 'instances' keys")
    infos = signature.inputs
    if has_cols:
        value = doc["inputs"]
        if isinstance(value, dict) and not _is_b64(value):
            named = value
        elif len(infos) == 1:
            named = {next(iter(infos)): value}
        else:
            raise _bad("'inputs' must be an object naming each of the signature's "
                       f"{len(infos)} inputs")
        unknown = [k for k in named if k not in infos]
        if unknown:
            raise _bad(f"input tensor alias not found in signature: {unknown[0]}. "
                       f"Inputs expected to be in the set {{{','.join(sorted(infos))}}}.")
        return {k: to_array(v, infos[k], k) for k, v in named.items()}, False
    rows = doc["instances"]
    if not isinstance(rows, list) or not rows:
        raise _bad("Expected 'instances' to be a non-empty list")
    if all(isinstance(r, dict) and not _is_b64(r) for r in rows):
        columns: dict[str, list] = {}
        for r in rows:
            if set(r) != set(rows[0]):
                raise _bad("Failed to process element: every instance must name the same "
                           f"inputs ({sorted(rows[0])} vs {sorted(r)})")
            for k, v in r.items():
                columns.setdefault(k, []).append(v)
        unknown = [k for k in columns if k not in infos]
        if unknown:
            raise _bad(f"input tensor alias not found in signature: {unknown[0]}. "
                       f"Inputs expected to be in the set {{{','.join(sorted(infos))}}}.")
        return {k: to_array(v, infos[k], k) for k, v in columns.items()}, True
    if len(infos) != 1:
        raise _bad("Expected each instance to be an object naming the signature's "
                   f"{len(infos)} inputs")
    alias = next(iter(infos))
    return {alias: to_array(rows, infos[alias], alias)}, True


def _jsonable(arr: np.ndarray, alias: str):
    if arr.dtype == object or arr.dtype.kind == "S":
        force = alias.endswith("_bytes")

        def enc(x):
            if isinstance(x, list):
                return [enc(v) for v in x]
            b = x if isinstance(x, bytes) else str(x).encode("utf-8")
            if not force:
                try:
                    return b.decode("utf-8")
                except UnicodeDecodeError:
                    pass
            return {"b64": base64.b64encode(b).decode("ascii")}
        return enc(arr.tolist())
    return arr.tolist()


def predict_response(outputs: dict, row_format: bool) -> dict:
    """TF Serving's `{"predictions": ...}` or `{"outputs": ...}` for alias -> array."""
    outputs = {k: np.asarray(v) for k, v in outputs.items()}
    if not row_format:
        cols = {k: _jsonable(v, k) for k, v in outputs.items()}
        return {"outputs": next(iter(cols.values())) if len(cols) == 1 else cols}
    batch = None
    for k, v in outputs.items():
        if v.ndim == 0 or (batch is not None and v.shape[0] != batch):
            raise _bad(f"Tensor name: {k} has inconsistent batch size: "
                       f"{v.shape[0] if v.ndim else 0} expecting: {batch}")
        batch = v.shape[0]
    cols = {k: _jsonable(v, k) for k, v in outputs.items()}
    if len(cols) == 1:
        return {"predictions": next(iter(cols.values()))}
    return {"predictions": [{k: cols[k][i] for k in cols} for i in range(batch or 0)]}


def _feature(name: str, value) -> feature_pb2.Feature:
    values = value if isinstance(value, list) else [value]
    f = feature_pb2.Feature()
    if values and all(isinstance(v, str) or _is_b64(v) for v in values):
        f.bytes_list.value.extend(_bytes_of(values))
    elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        f.int64_list.value.extend(values)
    elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        f.float_list.value.extend(values)
    else:
        raise _bad(f"Feature {name}: expected a number, a string, {{\"b64\": ...}} or a list "
                   "of one kind")
    return f


def examples_tensor(doc: dict) -> np.ndarray:
    """The request's examples (context merged in) as serialized tf.Example protos."""
    examples, context = doc.get("examples"), doc.get("context", {})
    if not isinstance(examples, list) or not examples:
        raise _bad("'examples' must be a non-empty list of objects")
    if not isinstance(context, dict):
        raise _bad("'context' must be an object")
    out = []
    for e in examples:
        if not isinstance(e, dict):
            raise _bad("Each element of 'examples' must be an object")
        proto = example_pb2.Example()
        for name, value in {**context, **e}.items():
            proto.features.feature[name].CopyFrom(_feature(name, value))
        out.append(proto.SerializeToString())
    return np.array(out, dtype=object)


def _check_method(signature, method: str, what: str) -> None:
    if signature.method_name != method:
        raise _bad(f"Expected {what} signature method_name to be {method}. "
                   f"Was: {signature.method_name}")


def classify_input(signature) -> str:
    _check_method(signature, sc.CLASSIFY_METHOD_NAME, "classification")
    return sc.CLASSIFY_INPUTS


def regress_input(signature) -> str:
    _check_method(signature, sc.REGRESS_METHOD_NAME, "regression")
    return sc.REGRESS_INPUTS


def classify_response(outputs: dict, n: int) -> dict:
    """`{"result": [[[label, score], ...] per example]}` from classes and/or scores."""
    classes = outputs.get(sc.CLASSIFY_OUTPUT_CLASSES)
    scores = outputs.get(sc.CLASSIFY_OUTPUT_SCORES)
    ref = np.asarray(scores if scores is not None else classes)
    if ref.ndim != 2 or ref.shape[0] != n:
        raise _bad(f"Expected classify outputs of shape [batch_size={n}, num_classes], got "
                   f"{list(ref.shape)}")
    result = []
    for i in range(n):
        row = []
        for j in range(ref.shape[1]):
            label = "" if classes is None else classes[i][j]
            label = label.decode("utf-8", "replace") if isinstance(label, bytes) else str(label)
            score = 0.0 if scores is None else float(scores[i][j])
            row.append([label, score])
        result.append(row)
    return {"result": result}


def regress_response(outputs: dict, n: int) -> dict:
    values = np.asarray(outputs[sc.REGRESS_OUTPUTS], dtype=np.float64)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.shape != (n,):
        raise _bad(f"Expected output Tensor shape to be either [batch_size] or "
                   f"[batch_size, 1] but got {list(values.shape)}")
    return {"result": values.tolist()}


def to_json(doc) -> bytes:
    """JSON bytes; NaN and infinities as TF Serving writes them (NaN, Infinity)."""
    return json.dumps(doc, separators=(",", ":")).encode("utf-8")
