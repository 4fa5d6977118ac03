"""Side-by-side benchmarks: the same TF1 program under tensorflux and under TensorFlow.

    python benchmarks/harness.py [names...] [--repeat N] [--markdown-out FILE]

Each program in benchmarks/programs/ is run as a subprocess once per backend per repeat:
with this repository's .venv python (`import tensorflux as tf`, the repository on
PYTHONPATH) and, when the oracle venv exists (../shared/anchors/setup_tf.sh), with its
python (`import tensorflow.compat.v1 as tf`). TensorFlow never shares a process with
tensorflux. The runs of the two backends are interleaved, and for each figure the best value
over the repeats is kept.

The table's ratio is the speed-up vs TensorFlow: how many times faster tensorflux is, so > 1
means tensorflux wins, whichever way the figure runs (TF time / tensorflux time for times,
tensorflux rate / TF rate for rates). A figure's target is the speed-up it must reach
(e.g. 2.0 for "latency at most half of TensorFlow's", 0.67 for "step time at most 1.5x").
A figure with a `goal` instead has an absolute one on tensorflux's own value (at least the
goal for figures where higher is better, at most it otherwise; e.g. mlp_step's share of the
machine's sgemm peak).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PROGRAMS = HERE / "programs"
TFX_PYTHON = ROOT / ".venv" / "bin" / "python"
# The tensorflux source tree put first on PYTHONPATH (--tensorflux-root changes it, e.g. to a
# `git archive` of one commit while the working tree is being edited).
TFX_ROOT = ROOT
ORACLE_PYTHON = Path(os.environ.get(
    "TENSORFLUX_ORACLE_PYTHON",
    Path.home() / ".cache" / "tensorflux-oracle-venv" / "bin" / "python"))
BACKENDS = ("tensorflux", "tensorflow")
# Table order: runtime overhead first, then models; programs not listed follow by name.
ORDER = ("null_ops", "session_run_latency", "mlp_step", "cnn_step", "lstm_lm",
         "checkpoint_io", "tfrecord_pipeline", "queue_throughput", "multi_device",
         "distributed", "graph_optimizer", "while_loop")

_VERSIONS = """
import importlib.metadata as m, json, platform
v = {"python": platform.python_version()}
for name in ("numpy", "tensorflow-cpu", "tensorflow", "tensorflux"):
    try:
        v[name] = m.version(name)
    except m.PackageNotFoundError:
        pass
print(json.dumps(v))
"""

# Which kernels each backend's products run on: NumPy's BLAS as threadpoolctl reports it for
# tensorflux (after its import applied the threading policy); TensorFlow's own kernels
# (Eigen, with oneDNN when enabled) for TensorFlow.
_TFX_BLAS = """
import json, tensorflux
from tensorflux.kernels.cpu import _blas
print(json.dumps(_blas.blas_info()))
"""
_TF_KERNELS = """
import json, os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf
from tensorflow.python.util import _pywrap_util_port as port
print(json.dumps({"onednn": bool(port.IsMklEnabled()),
                  "threads": [tf.config.threading.get_intra_op_parallelism_threads(),
                              tf.config.threading.get_inter_op_parallelism_threads()]}))
"""
# A competing process (--busy): one core's worth of pure-Python work, no memory traffic.
_BUSY = "while True:\n    pass\n"


@dataclass
class Figure:
    """One figure of one program on one backend (the JSON line a program prints)."""

    name: str
    backend: str
    value: float | None = None
    unit: str = ""
    better: str = "lower"
    error: str | None = None
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_json(cls, record: dict, backend: str) -> Figure:
        known = {"name", "value", "unit", "better", "error", "backend"}
        return cls(name=record["name"], backend=backend, value=record.get("value"),
                   unit=record.get("unit", ""), better=record.get("better", "lower"),
                   error=record.get("error"),
                   extra={k: v for k, v in record.items() if k not in known})

    def beats(self, other: Figure) -> bool:
        """True if this figure is better than `other` (an error is worse than anything)."""
        if self.error is not None or self.value is None:
            return False
        if other.error is not None or other.value is None:
            return True
        return self.value > other.value if self.better == "higher" else self.value < other.value


def speedup(tfx: Figure, tf: Figure) -> float | None:
    """How many times faster tensorflux is than TensorFlow on this figure (> 1: faster)."""
    if tfx.value is None or tf.value is None or tfx.error or tf.error:
        return None
    if tfx.value <= 0 or tf.value <= 0:
        return None
    return tfx.value / tf.value if tfx.better == "higher" else tf.value / tfx.value


# ---- running programs ----------------------------------------------------------------------

def discover() -> list[str]:
    """Program names (file stems) in benchmarks/programs/, helpers (_*.py) left out."""
    names = [p.stem for p in PROGRAMS.glob("*.py")
             if not p.name.startswith("_") and not p.name.startswith("test_")]
    return sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def python_for(backend: str) -> Path:
    if backend == "tensorflow":
        return ORACLE_PYTHON
    return TFX_PYTHON if TFX_PYTHON.exists() else Path(sys.executable)


def _env_for(backend: str) -> dict:
    env = dict(os.environ)
    env["TFX_BENCH_BACKEND"] = backend
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if backend == "tensorflux":
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(TFX_ROOT), env.get("PYTHONPATH")) if p)
    else:
        env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    return env


def parse_output(stdout: str, backend: str) -> list[Figure]:
    """The figures in a program's stdout: every line that is a JSON object with a name."""
    figures = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and "name" in record:
            figures.append(Figure.from_json(record, backend))
    return figures


@contextlib.contextmanager
def busy_processes(n: int):
    """`n` competing busy processes (each keeps one core busy) for the body's duration:
    the shared machine of issue 20, the same for both backends."""
    procs = [subprocess.Popen([sys.executable, "-c", _BUSY], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def run_program(name: str, backend: str, timeout: float,
                busy: int = 0) -> tuple[list[Figure], str | None]:
    """Runs one program on one backend (beside `busy` competing busy processes). Returns its
    figures and, if the process itself failed (crash, timeout, no output), a one-line
    reason."""
    cmd = [str(python_for(backend)), str(PROGRAMS / f"{name}.py"), "--backend", backend]
    try:
        with busy_processes(busy):
            proc = subprocess.run(cmd, cwd=str(PROGRAMS), env=_env_for(backend), text=True,
                                  capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        out = e.stdout or ""
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        figures = parse_output(out, backend)
        return figures, f"timed out after {timeout:g} s"
    figures = parse_output(proc.stdout, backend)
    if proc.returncode != 0:
        tail = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        reason = tail[-1] if tail else f"exit status {proc.returncode}"
        return figures, f"crashed ({reason[:200]})"
    if not figures:
        return figures, "printed no figures"
    return figures, None


@dataclass
class Results:
    """Best figure per (program, figure name, backend), in first-seen order."""

    best: dict = field(default_factory=dict)
    order: list = field(default_factory=list)
    failures: dict = field(default_factory=dict)  # (program, backend) -> reason

    def add(self, program: str, figure: Figure) -> None:
        key = (program, figure.name)
        if key not in self.order:
            self.order.append(key)
        old = self.best.get((program, figure.name, figure.backend))
        if old is None or figure.beats(old):
            self.best[(program, figure.name, figure.backend)] = figure

    def get(self, program: str, name: str, backend: str) -> Figure | None:
        return self.best.get((program, name, backend))


def run_all(names: list[str], backends: list[str], repeat: int, timeout: float,
            log=print, busy: int = 0) -> Results:
    results = Results()
    for name in names:
        for r in range(repeat):
            for backend in backends:
                log(f"  running {name} on {backend} ({r + 1}/{repeat}) ...")
                figures, failure = run_program(name, backend, timeout, busy)
                for f in figures:
                    results.add(name, f)
                if failure is not None:
                    results.failures[(name, backend)] = failure
                    log(f"    {failure}")
    return results


# ---- reporting -----------------------------------------------------------------------------

def machine_info(tf_available: bool, tf_skipped: bool = False, busy: int = 0) -> list[str]:
    """Lines describing the machine and the software, for the top of the report."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        cpu = platform.processor() or "unknown"
    cores = os.cpu_count()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    try:
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        load = "unknown"
    pressure = cpu_pressure()
    lines = [
        f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
        f"machine: {cpu}, {cores} logical cores ({usable} usable), {platform.system()} "
        f"{platform.release()}, load average {load} at start" +
        (f", CPU pressure {pressure} (share of the last 10 s / 60 s in which some task "
         "waited for a core: near 0 on a quiet machine)" if pressure else ""),
    ]
    tfx = _versions(python_for("tensorflux"))
    where = _git_commit() if TFX_ROOT == ROOT else f"source tree {TFX_ROOT}"
    lines.append(f"tensorflux: {tfx.get('tensorflux', '?')} at {where}, python "
                 f"{tfx.get('python', '?')}, numpy {tfx.get('numpy', '?')}")
    tfx_blas = _run_json(python_for("tensorflux"), _TFX_BLAS, _env_for("tensorflux"))
    lines.append(f"tensorflux kernels: {_blas_line(tfx_blas)}")
    if tf_available:
        tfv = _versions(ORACLE_PYTHON)
        tf_version = tfv.get("tensorflow-cpu") or tfv.get("tensorflow") or "?"
        lines.append(f"TensorFlow: {tf_version} (CPU), python {tfv.get('python', '?')}, "
                     f"numpy {tfv.get('numpy', '?')}, from {ORACLE_PYTHON}")
        k = _run_json(ORACLE_PYTHON, _TF_KERNELS)
        lines.append("TensorFlow kernels: Eigen" + (
            " with oneDNN" if k.get("onednn") else "" if k else " (oneDNN: unknown)") +
            " (its own thread pools; NumPy's BLAS is not used by its ops)")
    openblas_env = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                                               "OPENBLAS_NUM_THREADS") if k in os.environ}
    lines.append("environment: " + (", ".join(f"{k}={v}" for k, v in openblas_env.items())
                                    or "no OPENBLAS_* variables set (as on a user's machine)") +
                 (f"; {busy} competing busy process(es) during every run" if busy else ""))
    if tf_available:
        pass
    elif tf_skipped:
        lines.append("TensorFlow: not run (--no-tf); tensorflux figures only")
    else:
        lines.append(f"TensorFlow: not available (no {ORACLE_PYTHON}; "
                     "../shared/anchors/setup_tf.sh installs it); tensorflux figures only")
    return lines


def cpu_pressure() -> str | None:
    """Linux's CPU pressure (/proc/pressure/cpu, "some" avg10 / avg60, in %), or None where
    the kernel does not report it. The load average does not tell a quiet machine: with
    the scheduler's autogroups (one per login session, as each agent's shell here) the
    cores are shared per session, not per thread, so another session's one busy thread
    keeps two thirds of its core from a benchmark however many threads that runs, and a
    load of 1 means a third of a 2-core machine gone. The pressure says how much of the
    time anything waited for a core."""
    try:
        first = Path("/proc/pressure/cpu").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    fields = dict(f.split("=", 1) for f in first[1:] if "=" in f)
    if first[0] != "some" or "avg10" not in fields or "avg60" not in fields:
        return None
    return f"{float(fields['avg10']):.0f}% / {float(fields['avg60']):.0f}%"


def _run_json(python: Path, code: str, env: dict | None = None) -> dict:
    """The JSON object the last stdout line of `python -c code` prints; {} on failure."""
    try:
        out = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                             timeout=120, check=True, env=env).stdout
        return json.loads(out.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError, IndexError):
        return {}


def _versions(python: Path) -> dict:
    return _run_json(python, _VERSIONS)


def _blas_line(info: dict) -> str:
    """NumPy's BLAS in one line: library, version, kernel family (threadpoolctl's
    `architecture`) and thread count."""
    if not info:
        return "NumPy's BLAS: unknown (threadpoolctl found none)"
    return (f"NumPy's BLAS {info.get('internal_api', '?')} {info.get('version', '?')}, "
            f"kernel {info.get('architecture', '?')}, {info.get('num_threads', '?')} "
            "thread(s) per call (tensorflux's own pools split the work)")


def _git_commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=10, check=True).stdout
        return f"commit {out.strip()}"
    except (OSError, subprocess.SubprocessError):
        return "an unknown commit"


def format_value(f: Figure | None, failure: str | None) -> str:
    if f is None:
        return f"n/a ({failure})" if failure else "n/a"
    if f.error is not None or f.value is None:
        return "n/a (error)"
    v = f.value
    if abs(v) >= 1000:
        text = f"{v:,.0f}"
    elif abs(v) >= 100:
        text = f"{v:.0f}"
    elif abs(v) >= 10:
        text = f"{v:.1f}"
    else:
        text = f"{v:.2f}"
    unit = "µs" if f.unit == "us" else f.unit
    return f"{text} {unit}"


def table(results: Results, names: list[str],
          tf_available: bool) -> tuple[list[str], list[str]]:
    """The markdown table (one row per figure, programs in `names` order) and the notes
    under it (errors, crashes, row notes)."""
    rows = ["| benchmark | tensorflux | TensorFlow | speed-up vs TF | target | met? |",
            "| --- | ---: | ---: | ---: | ---: | :---: |"]
    notes: list[str] = []
    for program in names:
        figure_names = [n for p, n in results.order if p == program]
        if not figure_names:
            tfx_text = f"n/a ({results.failures.get((program, 'tensorflux'), 'no figures')})"
            tf_failure = results.failures.get((program, "tensorflow"), "no figures")
            tf_text = f"n/a ({tf_failure})" if tf_available else "not run"
            rows.append(f"| {program} | {tfx_text} | {tf_text} | n/a | ? | ? |")
        for name in figure_names:
            row, row_notes = _row(results, program, name, tf_available)
            rows.append(row)
            notes += row_notes
    for (program, backend), reason in results.failures.items():
        notes.append(f"{program} on {backend}: {reason}")
    return rows, notes


def _row(results: Results, program: str, name: str, tf_available: bool):
    tfx = results.get(program, name, "tensorflux")
    ref = tfx or results.get(program, name, "tensorflow")
    meta = ref.extra if ref else {}
    tf = results.get(program, meta.get("compare_to", name), "tensorflow")
    label = meta.get("label", name)
    target = meta.get("target")
    goal = meta.get("goal")
    ratio = speedup(tfx, tf) if tfx and tf else None
    ratio_text = f"{ratio:.2f}×" if ratio is not None else "n/a"
    target_text = f"≥ {target:.2f}×" if target is not None else "(info)"
    if goal is not None:  # an absolute goal on tensorflux's own value, not a speed-up
        higher = ref is not None and ref.better == "higher"
        target_text = f"{'≥' if higher else '≤'} {goal:g} (value)"
        if tfx is None or tfx.value is None:
            met = "?"
        else:
            met = "yes" if (tfx.value >= goal if higher else tfx.value <= goal) else "no"
    elif target is None:
        met = "—"
    elif ratio is None:
        met = "?"
    else:
        met = "yes" if ratio >= target else "no"
    tfx_text = format_value(tfx, results.failures.get((program, "tensorflux")))
    if tf_available:
        tf_text = format_value(tf, results.failures.get((program, "tensorflow")))
    else:
        tf_text = "not run"
    notes = [f"{label}: {f.backend} error: {f.error}"
             for f in (tfx, tf) if f is not None and f.error is not None]
    if meta.get("note"):
        notes.append(f"{label}: {meta['note']}")
    row = f"| {label} | {tfx_text} | {tf_text} | {ratio_text} | {target_text} | {met} |"
    return row, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help=f"programs to run (default: all of "
                        f"{', '.join(discover())})")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per program and backend; the best figure is kept")
    parser.add_argument("--markdown-out", metavar="FILE",
                        help="also write the machine lines and the table to FILE")
    parser.add_argument("--timeout", type=float, default=180.0,
                        help="seconds one program run may take (default 180)")
    parser.add_argument("--no-tf", action="store_true",
                        help="run tensorflux only, even if the oracle venv exists")
    parser.add_argument("--busy", type=int, default=0, metavar="N",
                        help="run every program beside N competing busy processes (the "
                             "shared-machine mode of issue 20)")
    parser.add_argument("--tensorflux-root", metavar="DIR",
                        help="benchmark the tensorflux package under DIR instead of this "
                             "checkout's (e.g. an unpacked `git archive`)")
    args = parser.parse_args(argv)
    global TFX_ROOT
    if args.tensorflux_root:
        TFX_ROOT = Path(args.tensorflux_root).resolve()
        if not (TFX_ROOT / "tensorflux" / "__init__.py").exists():
            parser.error(f"no tensorflux package under {TFX_ROOT}")

    available = discover()
    unknown = [n for n in args.names if n not in available]
    if unknown:
        parser.error(f"unknown program(s) {', '.join(unknown)}; have {', '.join(available)}")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    names = args.names or available
    tf_available = ORACLE_PYTHON.exists() and not args.no_tf
    backends = list(BACKENDS if tf_available else BACKENDS[:1])

    if args.busy < 0:
        parser.error("--busy must be at least 0")
    header = machine_info(tf_available, tf_skipped=args.no_tf, busy=args.busy)
    for line in header:
        print(line)
    if not tf_available and not args.no_tf:
        print("TensorFlow was not available: printing tensorflux figures only.")
    print(flush=True)
    results = run_all(names, backends, args.repeat, args.timeout,
                      log=lambda s: print(s, file=sys.stderr, flush=True), busy=args.busy)
    rows, notes = table(results, names, tf_available)
    command = "python benchmarks/harness.py" + "".join(f" {a}" for a in (
        sys.argv[1:] if argv is None else argv))
    convention = (f"best of {args.repeat} run(s) per backend; speed-up vs TF = how many "
                  "times faster tensorflux is (> 1: tensorflux wins)")
    body = [*rows, "", convention]
    if notes:
        body += ["", "Notes:", *[f"- {n}" for n in notes]]
    print("\n".join(body))
    if args.markdown_out:
        md = ["```", *header, f"command: {command}", "```", "", *body, ""]
        Path(args.markdown_out).write_text("\n".join(md), encoding="utf-8")
        print(f"\nwrote {args.markdown_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
