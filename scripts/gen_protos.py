"""Regenerates tensorflux/protos/*_pb2.py from the .proto files beside them.

    python scripts/gen_protos.py           # rewrite the committed *_pb2.py files
    python scripts/gen_protos.py --check   # fail if any committed *_pb2.py is missing or stale

Runs `python -m grpc_tools.protoc` (the `dev` extra pins grpcio-tools, and with it the protoc
version that the committed files were made with) with the repository root as the only import
root, so generated modules import each other as `from tensorflux.protos import types_pb2`.
`--check` generates into a temporary directory and compares byte for byte; CI runs it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = Path("tensorflux", "protos")


def generate(out_root: Path) -> None:
    """Runs protoc on every .proto in PROTO_DIR, writing `PROTO_DIR/*_pb2.py` under out_root."""
    protos = sorted(str(p.relative_to(ROOT)) for p in (ROOT / PROTO_DIR).glob("*.proto"))
    cmd = [sys.executable, "-m", "grpc_tools.protoc", f"-I{ROOT}", f"--python_out={out_root}"]
    proc = subprocess.run(cmd + protos, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"protoc failed:\n{proc.stderr}")


def stale_files(fresh_dir: Path) -> list[str]:
    """Names the committed *_pb2.py files that differ from, lack, or have no fresh counterpart."""
    fresh = {p.name: p.read_bytes() for p in fresh_dir.glob("*_pb2.py")}
    committed = {p.name: p.read_bytes() for p in (ROOT / PROTO_DIR).glob("*_pb2.py")}
    problems = []
    for name in sorted(fresh.keys() | committed.keys()):
        if name not in committed:
            problems.append(f"{name}: missing")
        elif name not in fresh:
            problems.append(f"{name}: no .proto generates it any more")
        elif fresh[name] != committed[name]:
            problems.append(f"{name}: differs from what protoc generates")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="only verify that the committed files are current"
    )
    args = parser.parse_args()
    if not args.check:
        for old in (ROOT / PROTO_DIR).glob("*_pb2.py"):
            old.unlink()
        generate(ROOT)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp))
        problems = stale_files(Path(tmp) / PROTO_DIR)
    if problems:
        print(f"{PROTO_DIR}: generated protobuf modules are not current:", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        print("Run `python scripts/gen_protos.py` and commit the result.", file=sys.stderr)
        return 1
    print(f"{PROTO_DIR}: all generated protobuf modules are current.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
