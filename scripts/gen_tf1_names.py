"""TF1 API coverage: which of tf.compat.v1's public names tensorflux has.

    # with the oracle's python (TensorFlow installed): list tf.compat.v1's names
    ~/.cache/tensorflux-oracle-venv/bin/python scripts/gen_tf1_names.py
    # with the project's python:
    python scripts/gen_tf1_names.py --baseline   # record the names tensorflux has today
    python scripts/gen_tf1_names.py --readme     # refresh README's "API coverage" table
    python scripts/gen_tf1_names.py --table      # print the table

tests/api/tf1_names.json maps each namespace ("" is the top level, then "nn", "train", ...)
to its sorted public names. tests/api/present_names.txt lists, one per line as
"tf.<namespace>.<name>", the names tensorflux had when the baseline was last recorded;
tests/test_api_coverage.py fails when one of them disappears.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMES = ROOT / "tests" / "api" / "tf1_names.json"
BASELINE = ROOT / "tests" / "api" / "present_names.txt"
README = ROOT / "README.md"
BEGIN, END = "<!-- api-coverage:begin -->", "<!-- api-coverage:end -->"

NAMESPACES = ("", "layers", "losses", "metrics", "data", "data.experimental", "feature_column",
              "nn", "math", "linalg", "image", "io", "strings", "random", "signal", "sparse",
              "sets", "bitwise", "dtypes",
              "debugging", "train", "summary", "lookup", "initializers", "manip",
              "spectral", "queue", "saved_model", "graph_util", "errors", "test", "app",
              "flags", "gfile", "logging", "profiler")


def _public(obj) -> list[str]:
    return sorted(n for n in dir(obj) if not n.startswith("_"))


def generate() -> dict[str, list[str]]:
    """tf.compat.v1's public names per namespace (run under TensorFlow)."""
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    # tf.compat.v1.layers and friends load Keras 2 (the tf_keras package) lazily.
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    import tensorflow.compat.v1 as tf1

    out = {}
    for ns in NAMESPACES:
        try:
            obj = _namespace(tf1, ns)
            if obj is not None:
                out[ns] = _public(obj)
        except ImportError as exc:
            print(f"tf.compat.v1.{ns}: not listed ({exc})", file=sys.stderr)
    return out


def _namespace(module, ns: str):
    """`module`'s namespace `ns` (dotted for nested ones, "" for the module itself)."""
    obj = module
    for part in ns.split(".") if ns else ():
        obj = getattr(obj, part, None)
    return obj


def _has(obj, name: str) -> bool:
    try:
        return obj is not None and hasattr(obj, name)
    except Exception:  # noqa: BLE001 - a broken attribute counts as absent
        return False


def full_name(ns: str, name: str) -> str:
    return f"tf.{ns}.{name}" if ns else f"tf.{name}"


def present(tf1_names: dict[str, list[str]]) -> dict[str, list[str]]:
    """Per namespace, the TF1 names tensorflux has."""
    import tensorflux

    result = {}
    for ns, names in tf1_names.items():
        obj = _namespace(tensorflux, ns)
        result[ns] = [n for n in names if _has(obj, n)]
    return result


def table(tf1_names, have) -> list[tuple[str, int, int]]:
    """(namespace, names tensorflux has, TF1 names) per namespace, then the total."""
    rows = [("tf" + (f".{ns}" if ns else ""), len(have[ns]), len(names))
            for ns, names in tf1_names.items()]
    rows.append(("total", sum(r[1] for r in rows), sum(r[2] for r in rows)))
    return rows


def format_table(rows) -> str:
    lines = ["| namespace | present | TF1 names | coverage |",
             "| --- | ---: | ---: | ---: |"]
    for ns, n, total in rows:
        pct = 100.0 * n / total if total else 100.0
        label = f"**{ns}**" if ns == "total" else f"`{ns}`"
        lines.append(f"| {label} | {n} | {total} | {pct:.0f}% |")
    return "\n".join(lines)


def format_compact(rows, per_row: int = 4) -> str:
    """The table for README: `per_row` namespaces per line, "present/total (pct)"."""
    cells = []
    for ns, n, total in rows:
        pct = 100.0 * n / total if total else 100.0
        label = "**total**" if ns == "total" else f"`{ns}`"
        cells.append(f"{label} {n}/{total} ({pct:.0f}%)")
    cells += [""] * (-len(cells) % per_row)
    lines = ["| " + " | ".join(["namespace: present/TF1"] * per_row) + " |",
             "|" + " --- |" * per_row]
    for i in range(0, len(cells), per_row):
        lines.append("| " + " | ".join(cells[i:i + per_row]) + " |")
    return "\n".join(lines)


def load_names() -> dict[str, list[str]]:
    return json.loads(NAMES.read_text())


def load_baseline() -> set[str]:
    if not BASELINE.exists():
        return set()
    return {line.strip() for line in BASELINE.read_text().splitlines() if line.strip()}


def write_baseline(have) -> None:
    names = sorted(full_name(ns, n) for ns, ns_names in have.items() for n in ns_names)
    BASELINE.write_text("\n".join(names) + "\n")


def write_readme(rows) -> None:
    text = README.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"README.md has no {BEGIN} ... {END} section")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    body = ("\nOf tf.compat.v1's public names (TensorFlow 2.21) in each namespace, how many "
            "tensorflux has\n(`python scripts/gen_tf1_names.py --readme` regenerates this "
            "table):\n\n" + format_compact(rows) + "\n")
    README.write_text(head + BEGIN + body + END + tail)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--baseline", action="store_true",
                      help="record the names tensorflux has in tests/api/present_names.txt")
    mode.add_argument("--readme", action="store_true", help="refresh README's table")
    mode.add_argument("--table", action="store_true", help="print the coverage table")
    args = parser.parse_args(argv)
    if not (args.baseline or args.readme or args.table):
        NAMES.parent.mkdir(parents=True, exist_ok=True)
        NAMES.write_text(json.dumps(generate(), indent=1, sort_keys=True) + "\n")
        print(f"wrote {NAMES.relative_to(ROOT)}")
        return 0
    sys.path.insert(0, str(ROOT))
    names = load_names()
    have = present(names)
    if args.baseline:
        write_baseline(have)
        print(f"wrote {BASELINE.relative_to(ROOT)}")
    elif args.readme:
        write_readme(table(names, have))
        print("updated README.md")
    else:
        print(format_table(table(names, have)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
