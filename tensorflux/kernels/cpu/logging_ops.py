"""CPU kernels of the run-time checks and printing ops (tensorflux/ops/logging_ops.py):
Assert, CheckNumerics, Print, StringFormat, PrintV2.

Tensors are formatted the way TensorFlow's `Tensor::SummarizeValue` does, in its two styles:

- messages (Assert, Print): at most `summarize` entries in all, nested brackets without
  spaces between rows ("[[1 2 3][4...]...]"), "..." where entries were left out;
- `tf.print` (StringFormat): numpy-like, `summarize` entries at each end of every
  dimension with "..." between ("[[0 1 ... 4 5]\\n [6 7 ... 10 11]]"), strings quoted.

Elements: floats in the shortest of 6 (float) / 15 (double) significant digits that reads
back to the same value, else 9 / 17; bools as 1 and 0; strings C-escaped (bytes from 0x80
up are kept, so UTF-8 text stays readable).
"""

from __future__ import annotations

import itertools
import logging
import sys

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels import interrupt
from tensorflux.kernels.registry import kernel_factory

_ESCAPES = {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x22: '\\"', 0x27: "\\'", 0x5C: "\\\\"}


def c_escape(data: bytes) -> str:
    """`data` C-escaped as TensorFlow prints strings (UTF-8 bytes left as they are)."""
    out = bytearray()
    for b in data:
        if b in _ESCAPES:
            out += _ESCAPES[b].encode()
        elif b < 0x20 or b == 0x7F:
            out += f"\\{b:03o}".encode()
        else:
            out.append(b)
    return out.decode("utf-8", "replace")


def _float_text(x, single: bool) -> str:
    """A float the way TensorFlow's StrCat writes it: the shortest of two precisions that
    reads back to the same value."""
    v = float(x)
    if v != v or v in (float("inf"), float("-inf")):
        return "nan" if v != v else ("inf" if v > 0 else "-inf")
    short, full = (6, 9) if single else (15, 17)
    text = f"{v:.{short}g}"
    back = np.float32(float(text)) if single else float(text)
    return text if back == (np.float32(v) if single else v) else f"{v:.{full}g}"


def _element(x, quote: bool = False) -> str:
    if isinstance(x, bytes):
        return f'"{c_escape(x)}"' if quote else c_escape(x)
    if isinstance(x, str):
        return _element(x.encode("utf-8"), quote)
    if isinstance(x, (np.bool_, bool)):
        return "1" if x else "0"
    if isinstance(x, (np.complexfloating, complex)):
        single = not isinstance(x, np.complex128) and not isinstance(x, complex)
        return f"({_float_text(x.real, single)},{_float_text(x.imag, single)})"
    if isinstance(x, np.floating) or isinstance(x, float):
        return _float_text(x, not isinstance(x, (np.float64, float)))
    if isinstance(x, np.generic) and x.dtype.kind == "V":  # bfloat16 and friends
        return _float_text(np.float32(x), True)
    return str(x)


def _print_dim(dim: int, shape, limit: int, flat, pos: list, out: list,
               tick=interrupt.no_tick) -> None:
    """Entries of dimension `dim` onwards in the message style, stopping at `limit`
    (calling `tick` once per entry)."""
    if pos[0] >= limit:
        return
    if dim == len(shape) - 1:
        for i in range(shape[dim]):
            if pos[0] >= limit:
                if dim != 0:
                    out.append("...")
                return
            if i > 0:
                out.append(" ")
            tick()
            out.append(_element(flat[pos[0]]))
            pos[0] += 1
        return
    for _ in range(shape[dim]):
        opened = pos[0] < limit
        if opened:
            out.append("[")
        _print_dim(dim + 1, shape, limit, flat, pos, out, tick)
        if pos[0] < limit or opened:
            out.append("]")


def summarize(value, max_entries: int, ctx=None) -> str:
    """A tensor's value as TensorFlow prints it in messages (Assert, Print); a large one
    checks step `ctx` every few thousand entries."""
    a = np.asarray(value)
    flat = a.reshape(-1)
    limit = min(max_entries, flat.size) if max_entries >= 0 else flat.size
    if a.ndim == 0:
        text = " ".join(_element(x) for x in flat[:limit])
    else:
        out: list[str] = []
        _print_dim(0, a.shape, limit, flat, [0], out, interrupt.ticker(ctx))
        text = "".join(out)
    return text + ("..." if flat.size > limit else "")


def _spacing(dim: int, ndim: int) -> str:
    """What separates two entries of dimension `dim` in the `tf.print` style."""
    if dim == ndim - 1:
        return " "
    return "\n" * (ndim - dim - 1) + " " * (dim + 1)


def _print_dim_v2(a: np.ndarray, dim: int, index: tuple, ends: int, out: list,
                  tick=interrupt.no_tick) -> None:
    if dim == a.ndim:
        tick()
        out.append(_element(a[index], quote=True))
        return
    out.append("[")
    count = a.shape[dim]
    for i in range(min(ends, count)):
        if i > 0:
            out.append(_spacing(dim, a.ndim))
        _print_dim_v2(a, dim + 1, index + (i,), ends, out, tick)
    if count > 2 * ends:
        out.append(_spacing(dim, a.ndim) + "...")
    for i in range(max(ends, count - ends), count):
        out.append(_spacing(dim, a.ndim))
        _print_dim_v2(a, dim + 1, index + (i,), ends, out, tick)
    out.append("]")


def summarize_v2(value, max_entries: int, ctx=None) -> str:
    """A tensor's value as `tf.print` prints it: `max_entries` at each end of each dim (a
    large one checks step `ctx` every few thousand entries of a dimension)."""
    a = np.asarray(value)
    ends = a.size if max_entries < 0 else min(max_entries, a.size)
    if a.ndim == 0:
        return _element(a[()], quote=True) if ends else ""
    out: list[str] = []
    _print_dim_v2(a, 0, (), ends, out, interrupt.ticker(ctx))
    return "".join(out)


@kernel_factory("Assert")
def _assert(node):
    n = node.attrs["summarize"]

    def compute(ctx, condition, *data):
        cond = np.asarray(condition)
        if cond.ndim != 0:
            raise errors.InvalidArgumentError(
                None, None, "In[0] should be a scalar: [" + ",".join(map(str, cond.shape)) + "]")
        if bool(cond):
            return None
        parts = " ".join(f"[{summarize(d, n, ctx)}]" for d in data)
        raise errors.InvalidArgumentError(None, None, f"assertion failed: {parts}")

    return compute


def _v1_found(a) -> str:
    """CheckNumerics' words for the non-finite values of `a`."""
    nan, inf = bool(np.isnan(a).any()), bool(np.isinf(a).any())
    return "Inf and NaN" if nan and inf else ("NaN" if nan else "Inf")


def _v2_found(a) -> str:
    """CheckNumericsV2's words: the infinities by sign."""
    found = [what for what, present in (("-Inf", np.isneginf(a).any()),
                                        ("+Inf", np.isposinf(a).any()),
                                        ("NaN", np.isnan(a).any())) if present]
    return "-Inf, +Inf, and NaN" if len(found) == 3 else " and ".join(found)


def _check_numerics_kernel(describe):
    def factory(node):
        message = _text(node.attrs["message"])

        def compute(ctx, x):
            a = np.asarray(x)
            if a.dtype.kind == "V":  # bfloat16: NumPy's tests need a float view
                a = a.astype(np.float32)
            if np.isfinite(a).all():
                return x
            raise errors.InvalidArgumentError(
                None, None, f"{message} : Tensor had {describe(a)} values")

        return compute

    return factory


kernel_factory("CheckNumerics", forwards_input=True)(_check_numerics_kernel(_v1_found))
kernel_factory("CheckNumericsV2", forwards_input=True)(_check_numerics_kernel(_v2_found))


def _text(attr) -> str:
    return attr.decode("utf-8", "replace") if isinstance(attr, bytes) else attr


@kernel_factory("Print", forwards_input=True)
def _print(node):
    message, first_n = _text(node.attrs["message"]), node.attrs["first_n"]
    n = node.attrs["summarize"]

    def compute(ctx, x, *data):
        if first_n >= 0:
            # One counter per node and device, kept across steps as TF's kernel instance is.
            counter = ctx.resource_mgr.lookup_or_create(
                "", f"_print_counter/{node.name}", itertools.count)
            if next(counter) >= first_n:
                return x
        line = message + "".join(f"[{summarize(d, n, ctx)}]" for d in data)
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
        return x

    return compute


@kernel_factory("StringFormat")
def _string_format(node):
    template, placeholder = _text(node.attrs["template"]), _text(node.attrs["placeholder"])
    pieces = template.split(placeholder)
    n = node.attrs["summarize"]
    if len(pieces) - 1 != len(node.attrs["T"]):
        raise errors.InvalidArgumentError(
            None, None, "Num placeholders in template and num inputs must match: "
            f"{len(pieces) - 1} vs. {len(node.attrs['T'])}")

    def compute(ctx, *inputs):
        out = [pieces[0]]
        for value, piece in zip(inputs, pieces[1:], strict=True):
            out.append(summarize_v2(value, n, ctx))
            out.append(piece)
        return np.array("".join(out).encode("utf-8"), dtype=object)

    return compute


_LOG_LEVELS = {"log(info)": logging.INFO, "log(warning)": logging.WARNING,
               "log(error)": logging.ERROR}


@kernel_factory("PrintV2")
def _print_v2(node):
    stream, end = _text(node.attrs["output_stream"]), _text(node.attrs["end"])
    if stream not in ("stdout", "stderr") and stream not in _LOG_LEVELS and \
            not stream.startswith("file://"):
        raise errors.InvalidArgumentError(
            None, None, f"{stream} is not a valid output stream. Valid streams are stdout, "
            "stderr, log(info), log(warning), log(error), and file://<filename>")

    def compute(ctx, line):
        text = _text(np.asarray(line).reshape(-1)[0])
        if stream in _LOG_LEVELS:
            logging.getLogger("tensorflux").log(_LOG_LEVELS[stream], text)
        elif stream.startswith("file://"):
            with open(stream[len("file://"):], "a", encoding="utf-8") as f:
                f.write(text + end)
        else:
            out = sys.stdout if stream == "stdout" else sys.stderr
            out.write(text + end)
            out.flush()
        return None

    return compute
