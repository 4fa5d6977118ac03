"""Checks of the benchmark harness's bookkeeping: parsing, best-of, speed-up, the table, and
crash handling. No timing is asserted. Run with

    .venv/bin/python -m pytest benchmarks/test_harness.py
"""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402


def _fig(name, value, backend, better="higher", **extra):
    return harness.Figure(name=name, backend=backend, value=value, unit="ops/s",
                          better=better, extra=extra)


def test_parse_output_keeps_json_figures_only():
    out = "\n".join(["warning: noise", json.dumps({"name": "a", "value": 2.0, "unit": "us",
                                                   "better": "lower", "target": 2.0}),
                     "{not json", json.dumps({"name": "b", "error": "no attribute 'nn'"})])
    figs = harness.parse_output(out, "tensorflux")
    assert [f.name for f in figs] == ["a", "b"]
    assert figs[0].value == 2.0 and figs[0].extra == {"target": 2.0}
    assert figs[1].error == "no attribute 'nn'" and figs[1].value is None


@pytest.mark.parametrize("better, tfx, tf, expected", [
    ("higher", 10.0, 5.0, 2.0),   # twice TF's rate
    ("lower", 10.0, 5.0, 0.5),    # twice TF's time
    ("lower", 100.0, 200.0, 2.0),
])
def test_speedup_is_how_many_times_faster_tensorflux_is(better, tfx, tf, expected):
    got = harness.speedup(_fig("x", tfx, "tensorflux", better), _fig("x", tf, "tensorflow",
                                                                       better))
    assert got == pytest.approx(expected)


def test_results_keep_the_best_value_and_errors_lose():
    r = harness.Results()
    r.add("p", harness.Figure(name="t", backend="tensorflux", error="boom"))
    r.add("p", _fig("t", 3.0, "tensorflux", "lower"))
    r.add("p", _fig("t", 5.0, "tensorflux", "lower"))
    r.add("p", _fig("t", 2.0, "tensorflux", "lower"))
    assert r.get("p", "t", "tensorflux").value == 2.0
    assert r.order == [("p", "t")]


def test_table_marks_targets_errors_and_compare_to():
    r = harness.Results()
    r.add("p", _fig("chain", 20.0, "tensorflux", target=1.0, label="chain"))
    r.add("p", _fig("chain", 10.0, "tensorflow", target=1.0, label="chain"))
    r.add("p", _fig("chain_df", 5.0, "tensorflux", compare_to="chain", label="dataflow"))
    r.add("q", harness.Figure(name="mlp", backend="tensorflux", error="AttributeError: nn",
                              extra={"label": "mlp", "target": 1.0}))
    r.add("q", _fig("mlp", 4.0, "tensorflow", "lower", label="mlp", target=1.0))
    rows, notes = harness.table(r, ["p", "q", "gone"], tf_available=True)
    body = "\n".join(rows)
    assert "| chain | 20.0 ops/s | 10.0 ops/s | 2.00× | ≥ 1.00× | yes |" in body
    assert "| dataflow | 5.00 ops/s | 10.0 ops/s | 0.50× | (info) | — |" in body
    assert "| mlp | n/a (error) | 4.00 ops/s | n/a | ≥ 1.00× | ? |" in body
    assert "| gone | n/a (no figures) |" in body
    assert any("AttributeError: nn" in n for n in notes)


@pytest.mark.parametrize("better, value, goal, text, met", [
    ("higher", 0.70, 0.65, "≥ 0.65 (value)", "yes"),
    ("higher", 0.41, 0.65, "≥ 0.65 (value)", "no"),
    ("lower", 4.0, 4.3, "≤ 4.3 (value)", "yes"),
    ("lower", 6.0, 4.3, "≤ 4.3 (value)", "no"),
])
def test_a_goal_is_met_by_tensorfluxs_own_value(better, value, goal, text, met):
    r = harness.Results()
    r.add("p", _fig("share", value, "tensorflux", better, goal=goal, label="share"))
    r.add("p", _fig("share", value * 2, "tensorflow", better, goal=goal, label="share"))
    rows, _ = harness.table(r, ["p"], tf_available=True)
    row = next(x for x in rows if x.startswith("| share |"))
    assert row.endswith(f"| {text} | {met} |")


def test_a_crashing_program_is_reported_not_raised(tmp_path, monkeypatch):
    (tmp_path / "crash.py").write_text(
        'import json\nprint(json.dumps({"name": "half", "value": 1, "unit": "s", '
        '"better": "lower"}))\nraise SystemExit("died here")\n')
    monkeypatch.setattr(harness, "PROGRAMS", tmp_path)
    figures, failure = harness.run_program("crash", "tensorflux", timeout=60)
    assert [f.name for f in figures] == ["half"]
    assert failure is not None and "died here" in failure


def test_session_run_latency_program_prints_a_figure():
    figures, failure = harness.run_program("session_run_latency", "tensorflux", timeout=120)
    assert failure is None
    (fig,) = figures
    assert fig.name == "session_run_latency" and fig.unit == "us" and fig.better == "lower"
    assert fig.error is not None or fig.value > 0


def test_busy_processes_run_for_the_body_only():
    import os

    with harness.busy_processes(2):
        children = [p for p in os.listdir("/proc") if p.isdigit()
                    and _parent(p) == os.getpid() and _is_busy(p)]
        assert len(children) == 2
    assert all(not os.path.exists(f"/proc/{p}") or _parent(p) != os.getpid()
               for p in children)


def _parent(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def _is_busy(pid: str) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return harness._BUSY.encode() in f.read()  # (not tests/forkserver.py's loop)
    except OSError:
        return False


def test_machine_info_names_the_blas_kernel_and_the_load():
    lines = harness.machine_info(tf_available=False, tf_skipped=True, busy=1)
    text = "\n".join(lines)
    assert "tensorflux kernels:" in text and "kernel" in text
    assert "1 competing busy process(es)" in text
    if harness.cpu_pressure() is not None:
        assert "CPU pressure" in text


def test_cpu_pressure_reads_the_some_line(tmp_path, monkeypatch):
    real = harness.Path
    cases = [("some avg10=12.50 avg60=3.04 avg300=1.00 total=5\nfull avg10=0.00", "12% / 3%"),
             ("garbage", None), ("", None)]
    for text, want in cases:
        f = tmp_path / "cpu"
        f.write_text(text)
        monkeypatch.setattr(harness, "Path",
                            lambda p, f=f: f if p == "/proc/pressure/cpu" else real(p))
        assert harness.cpu_pressure() == want
