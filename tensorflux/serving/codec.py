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

Values are checked as TF Serving checks them (json_tensor.cc): booleans only for DT_BOOL,
integers within the range of an integer input's type, and a number converted to a float
input only when no precision is lost (integers up to 2**24 for float32, finite values within
the type's range; NaN and +-Infinity are accepted as literals). A float literal beyond
double's range or a lone UTF-16 surrogate escape fail the parse as rapidjson fails them; a
tensor value nested deeper than 64 levels is refused.

Every malformed request raises tf.errors.InvalidArgumentError (HTTP 400).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re

import numpy as np

from tensorflux.framework import errors
from tensorflux.protos import example_pb2, feature_pb2
from tensorflux.saved_model import signature_constants as sc
from tensorflux.serving.servable import numpy_dtype

try:
    from tensorflux.serving import _jsonnum
except ImportError:  # not built (no C compiler at install time): json decodes everything
    _jsonnum = None

__all__ = ["parse_json", "signature_name", "predict_inputs", "fast_input",
           "predict_inputs_fast", "predict_response", "examples_tensor", "classify_response",
           "regress_response", "to_json"]

# The deepest nesting of a tensor value (NumPy's limit on a rank).
MAX_DEPTH = 64

# Bodies that may hold a UTF-16 surrogate escape are checked the slow way; the rest (nearly
# every request) parse at json's full speed.
_MAYBE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


def _bad(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _bad(f"JSON Parse error: Number too big to be stored in double: {text[:40]}")
    return value


def _check_strings(doc) -> None:
    """Raises for a string (or key) holding a lone surrogate, which cannot be UTF-8."""
    stack = [doc]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise _bad("JSON Parse error: The surrogate pair in string is invalid.") \
                    from None


def _show(value) -> str:
    """A short JSON rendering of a value for an error message (any nesting)."""
    try:
        return json.dumps(value)[:40]
    except (RecursionError, ValueError):
        return "(deeply nested value)"


class _Text:
    """What a request's JSON text says beyond its parsed values, asked only when needed:
    whether it may hold `true`/`false` (NumPy reads [true, 2] as integers), and whether an
    infinity came from a float literal beyond double's range (json reads 1e400 as inf; TF
    Serving's parser refuses it). Without the text (None) booleans are searched for and
    infinities taken as written."""

    __slots__ = ("body", "_booleans")

    def __init__(self, body: bytes | None):
        self.body = body
        self._booleans = None

    @property
    def may_hold_booleans(self) -> bool:
        if self._booleans is None:
            self._booleans = self.body is None or b"true" in self.body or \
                b"false" in self.body
        return self._booleans

    def check_infinities(self) -> None:
        """Raises if a float literal of the text overflows (called when an inf was read)."""
        if self.body is not None:
            json.loads(self.body, parse_float=_finite_float)


def parse_json(body: bytes) -> dict:
    """The request body as a JSON object (a float literal beyond double's range is found
    when its value is used: predict_inputs, examples_tensor).

    Raises:
      tf.errors.InvalidArgumentError: not UTF-8 JSON, not an object, a lone surrogate
        escape, or nesting deeper than json can parse.
    """
    try:
        doc = json.loads(body)
    except RecursionError:
        raise _bad("JSON Parse error: nesting too deep") from None
    except (UnicodeDecodeError, ValueError) as e:  # JSONDecodeError, int digit limits
        raise _bad(f"JSON Parse error: {e}") from None
    if not isinstance(doc, dict):
        raise _bad("JSON Value not an object")
    if _MAYBE_SURROGATE.search(body) is not None:
        _check_strings(doc)
    return doc


def signature_name(doc: dict) -> str:
    """The request's signature name ("serving_default" when absent or empty)."""
    name = doc.get("signature_name")
    if name is not None and not isinstance(name, str):
        raise _bad(f"JSON Value: {_show(name)} not formatted correctly. "
                   "'signature_name' key must be a string value.")
    return name or "serving_default"


def _is_b64(value) -> bool:
    return isinstance(value, dict) and len(value) == 1 and "b64" in value


def _bytes_of(value, depth: int = 0):
    """Nested lists of str / {"b64": ...} -> the same nesting of bytes."""
    if isinstance(value, list):
        if depth >= MAX_DEPTH:
            raise _bad(f"Encountered list at unexpected level: {depth} expected < {MAX_DEPTH}")
        return [_bytes_of(v, depth + 1) for v in value]
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
               f"{_show(value)}")


def _string_array(value, alias: str) -> np.ndarray:
    nested = _bytes_of(value)
    try:
        arr = np.array(nested, dtype=object)
        ref = np.array(value, dtype=object) if not isinstance(value, dict) else arr
    except (ValueError, RuntimeError) as e:
        raise _bad(f"Ragged or malformed DT_STRING tensor for {alias}: {e}") from None
    if arr.shape != ref.shape or any(not isinstance(x, bytes) for x in arr.reshape(-1)):
        raise _bad(f"Ragged DT_STRING tensor for {alias}")
    return arr


# JSON value kinds (NumPy's, after np.asarray) each input type takes, as TF Serving takes
# them: numbers for numbers, booleans only for booleans.
_ALLOWED_KINDS = {"b": "b", "i": "iu", "u": "iu", "f": "iuf", "c": "iufc"}


def _check_integers(raw: np.ndarray, dtype: np.dtype, alias: str) -> None:
    """Raises unless the integers of `raw` convert to `dtype` as TF Serving converts them:
    within an integer type's range; for a float type, held exactly."""
    if raw.size == 0 or raw.dtype.kind not in "iu":
        return
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = raw.min(), raw.max()
        if lo < info.min or hi > info.max:
            raise _bad(f"JSON Value: {lo if lo < info.min else hi} Type: Number is not of "
                       f"expected type: {dtype.name} (input {alias})")
    elif dtype.kind in "fc":
        exact = 2 ** (np.finfo(dtype).nmant + 1) - 1
        lo, hi = raw.min(), raw.max()
        if lo < -exact or hi > exact:
            raise _bad(f"Cannot convert JSON value: {lo if lo < -exact else hi} to "
                       f"{dtype.name} without loss of precision (input {alias}).")


def _check_infinities(raw: np.ndarray, out: np.ndarray, alias: str, text: _Text) -> None:
    """For floats converted to `out`, which holds an infinity: a finite value must stay
    finite (TF Serving: no loss of precision), and an infinity must have been written as
    one (not a literal beyond double's range)."""
    over = np.isfinite(raw) & np.isinf(out)
    if over.any():
        raise _bad(f"Cannot convert JSON value: {raw[over].flat[0]} to {out.dtype.name} "
                   f"without loss of precision (input {alias}).")
    text.check_infinities()


def _holds_bool(value) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, bool):
            return True
        if isinstance(v, list):
            stack.extend(v)
    return False


def to_array(value, tensor_info, alias: str, text: _Text | None = None) -> np.ndarray:
    """A JSON value as the array the TensorInfo asks for (dtype checked, not coerced from
    strings or booleans; values within range; rectangular). `text`: the request's JSON text
    (see _Text; booleans among numbers are found by a walk over the value, skipped when the
    text has no `true` or `false`)."""
    text = text or _Text(None)
    dtype = numpy_dtype(tensor_info)
    if dtype is np.object_:
        return _string_array(value, alias)
    try:
        raw = np.asarray(value)
    except (ValueError, RecursionError, RuntimeError) as e:
        raise _bad(f"Ragged or malformed tensor for input {alias}: {e}") from None
    dtype = np.dtype(dtype)
    if raw.dtype.kind not in _ALLOWED_KINDS.get(dtype.kind, "iuf"):
        got = {"U": "strings", "b": "booleans", "O": "values of mixed or unsupported types "
               "(null, objects, integers beyond 64 bits)"}.get(raw.dtype.kind, raw.dtype.name)
        raise _bad(f"Expected values of type {dtype.name} for input {alias}, got {got} "
                   "(or a ragged or malformed list)")
    if dtype.kind != "b" and raw.dtype.kind != "b" and text.may_hold_booleans and \
            _holds_bool(value):
        raise _bad(f"Expected values of type {dtype.name} for input {alias}, got booleans")
    _check_integers(raw, dtype, alias)
    if raw.dtype.kind == "f" and raw.dtype != dtype:
        with np.errstate(over="ignore", invalid="ignore"):  # overflow: checked below
            out = raw.astype(dtype)
    else:
        out = raw.astype(dtype, copy=False)
    if raw.dtype.kind == "f" and out.dtype.kind == "f" and np.isinf(out).any():
        _check_infinities(raw, out, alias, text)
    return out


def predict_inputs(doc: dict, signature, body: bytes | None = None) -> tuple[dict, bool]:
    """(alias -> array, row_format) from a predict request (`body`: its JSON text, for the
    checks the parsed values cannot tell; see _Text)."""
    text = _Text(body)
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
        return {k: to_array(v, infos[k], k, text) for k, v in named.items()}, False
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
        return {k: to_array(v, infos[k], k, text) for k, v in columns.items()}, True
    if len(infos) != 1:
        raise _bad("Expected each instance to be an object naming the signature's "
                   f"{len(infos)} inputs")
    alias = next(iter(infos))
    return {alias: to_array(rows, infos[alias], alias, text)}, True


# The request predict_inputs_fast takes: one key, then the array; JSON whitespace only.
_FAST_HEAD = re.compile(rb'[ \t\n\r]*\{[ \t\n\r]*"(instances|inputs)"[ \t\n\r]*:[ \t\n\r]*\[')
_FAST_TAIL = re.compile(rb'[ \t\n\r]*\}[ \t\n\r]*')
_FAST_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_FAST_EXACT = {d: float(2 ** (np.finfo(d).nmant + 1) - 1) for d in _FAST_DTYPES}
_FAST_MAX = {d: float(np.finfo(d).max) for d in _FAST_DTYPES}


def fast_input(signature) -> tuple[str, np.dtype] | None:
    """(alias, dtype) of a signature `predict_inputs_fast` can decode for: one float32 or
    float64 input; None for any other (a server asks once per signature)."""
    if _jsonnum is None or len(signature.inputs) != 1:
        return None
    alias, info = next(iter(signature.inputs.items()))
    dtype = np.dtype(numpy_dtype(info))
    return (alias, dtype) if dtype in _FAST_DTYPES else None


def predict_inputs_fast(body: bytes, fast: tuple[str, np.dtype] | None
                        ) -> tuple[dict, bool] | None:
    """`predict_inputs(parse_json(body), signature, body)` for the common request, without
    building Python lists: `{"instances": A}` or `{"inputs": A}` for a signature with one
    float32/float64 input (`fast`: its `fast_input`), A a rectangular nested list of JSON
    numbers (the C extension `_jsonnum` reads it). None for every other body -- and for any
    value the general path would refuse (integers beyond the float's exact range,
    overflowing literals, values beyond float32) -- so that the general path decodes it,
    errors included; the arrays returned are those it would give, bit for bit
    (tests/serving/test_codec.py)."""
    if fast is None:
        return None
    head = _FAST_HEAD.match(body)
    if head is None:
        return None
    got = _jsonnum.numbers(body, head.end() - 1)
    if got is None or _FAST_TAIL.fullmatch(body, got[3]) is None:
        return None
    values, shape, ints, _, largest = got
    alias, dtype = fast
    raw = np.frombuffer(values, np.float64).reshape(shape)
    # All integers: taken when the float type holds each exactly. Otherwise: finite values
    # within the type's range (an overflowing literal, or a value beyond float32, is a 400)
    if not largest <= (_FAST_EXACT if ints == raw.size else _FAST_MAX)[dtype]:
        return None
    return {alias: raw.astype(dtype, copy=False)}, head.group(1) == b"instances"


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


_INT64 = (-(1 << 63), (1 << 63) - 1)
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_FLOAT32_EXACT = 2 ** 24 - 1


def _feature(name: str, value, text: _Text) -> feature_pb2.Feature:
    """A tf.train.Feature from a JSON feature value (TF Serving's rules: booleans are
    int64s, integers must fit int64, floats must fit float32)."""
    values = value if isinstance(value, list) else [value]
    f = feature_pb2.Feature()
    if values and all(isinstance(v, str) or _is_b64(v) for v in values):
        f.bytes_list.value.extend(_bytes_of(values))
    elif all(isinstance(v, int) for v in values):
        ints = [int(v) for v in values]
        if any(not _INT64[0] <= v <= _INT64[1] for v in ints):
            raise _bad(f"Feature: {name} has an integer element outside int64's range. "
                       "Only int64 is supported.")
        f.int64_list.value.extend(ints)
    elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        if any(isinstance(v, float) and math.isinf(v) for v in values):
            text.check_infinities()
        if any(abs(v) > (_FLOAT32_EXACT if isinstance(v, int) else _FLOAT32_MAX)
               for v in values if isinstance(v, int) or math.isfinite(v)):
            raise _bad(f"Feature: {name}: cannot convert a JSON value to float without loss "
                       "of precision.")
        f.float_list.value.extend(values)
    else:
        raise _bad(f"Feature {name}: expected a number, a string, {{\"b64\": ...}} or a list "
                   "of one kind")
    return f


def examples_tensor(doc: dict, body: bytes | None = None) -> np.ndarray:
    """The request's examples (context merged in) as serialized tf.Example protos (`body`:
    its JSON text, to tell an infinity written as Infinity from an overflowing literal)."""
    examples, context = doc.get("examples"), doc.get("context", {})
    text = _Text(body)
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
            proto.features.feature[name].CopyFrom(_feature(name, value, text))
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


_ENCODE = json.JSONEncoder(separators=(",", ":")).encode  # json.dumps builds one per call


def to_json(doc) -> bytes:
    """JSON bytes; NaN and infinities as TF Serving writes them (NaN, Infinity)."""
    return _ENCODE(doc).encode("utf-8")
