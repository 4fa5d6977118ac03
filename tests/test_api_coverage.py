"""TF1 API coverage: the share of tf.compat.v1's public names (tests/api/tf1_names.json,
made by scripts/gen_tf1_names.py under TensorFlow) that tensorflux has, per namespace.

`pytest tests/test_api_coverage.py -s` prints the table. The test fails when a name listed
in tests/api/present_names.txt (the names present when the baseline was recorded) is gone.
After adding names, record them: `python scripts/gen_tf1_names.py --baseline`, or run this
test with TENSORFLUX_UPDATE_API_BASELINE=1.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gen_tf1_names.py"
_spec = importlib.util.spec_from_file_location("gen_tf1_names", _SCRIPT)
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)


def test_api_coverage_table_and_baseline():
    names = gen.load_names()
    have = gen.present(names)
    rows = gen.table(names, have)
    print("\nTF1 API coverage (tf.compat.v1 names tensorflux has)\n" + gen.format_table(rows))
    if os.environ.get("TENSORFLUX_UPDATE_API_BASELINE"):
        gen.write_baseline(have)
    now = {gen.full_name(ns, n) for ns, ns_names in have.items() for n in ns_names}
    lost = sorted(gen.load_baseline() - now)
    assert not lost, (f"{len(lost)} TF1 names that tensorflux had are gone: {lost[:20]}"
                      " (if on purpose: python scripts/gen_tf1_names.py --baseline)")
    assert rows[-1][2] > 1000  # the name list is tf.compat.v1's, not an empty file


def test_name_list_covers_the_namespaces():
    names = gen.load_names()
    assert set(names) == set(gen.NAMESPACES)
    assert {"Session", "placeholder", "Variable"} <= set(names[""])
    assert "accuracy" in names["metrics"] and "StaticHashTable" in names["lookup"]


def _reasons() -> list[tuple[str, str]]:
    path = Path(__file__).resolve().parent / "api" / "not_implemented.txt"
    out = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            pattern, _, reason = line.strip().partition(" ")
            out.append((pattern, reason.strip()))
    return out


def test_every_missing_name_is_listed_with_its_reason():
    """tests/api/not_implemented.txt says why each absent tf.compat.v1 name is absent (TPU,
    eager-only, TF2 object APIs, or "not yet"); an entry for a name that exists now is
    stale."""
    import fnmatch

    names = gen.load_names()
    have = gen.present(names)
    reasons = _reasons()
    assert all(reason for _, reason in reasons)
    missing = [gen.full_name(ns, n) for ns, ns_names in names.items() for n in ns_names
               if n not in have.get(ns, ())]
    unexplained = [m for m in missing
                   if not any(fnmatch.fnmatchcase(m, p) for p, _ in reasons)]
    assert not unexplained, ("tf.compat.v1 names missing without a reason in "
                             f"tests/api/not_implemented.txt: {unexplained}")
    present = {gen.full_name(ns, n) for ns, ns_names in have.items() for n in ns_names}
    stale = [p for p, _ in reasons if not any(c in p for c in "*?[") and p in present]
    assert not stale, f"listed as missing but present now (remove them): {stale}"
