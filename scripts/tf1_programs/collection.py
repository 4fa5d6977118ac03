"""Runs every top-level TF1 program of a repository snapshot under tensorflux, each in its
own directory with the repository's data files, the author's code unchanged but for the
import lines (`tensorflow` -> `tensorflux`, the MNIST download -> the digits stand-in in
shim/input_data.py):

    python scripts/tf1_programs/collection.py OWNER+NAME [GLOB] [--timeout S]

e.g. `hunkim+DeepLearningZeroToAll 'lab-*.py'`. The snapshot is read from
$TF1_MIRROR/OWNER+NAME/repo (default /work/.mirror); runs go to
$TF1_PROGRAMS_WORK/collections/OWNER+NAME/<program>/ (log.txt); one line per program.
"""

import argparse
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MIRROR = os.environ.get("TF1_MIRROR", "/work/.mirror")
WORK = os.environ.get("TF1_PROGRAMS_WORK", tempfile.gettempdir())
EDITS = [(r"^import tensorflow as tf\b", "import tensorflux as tf"),
         (r"^from tensorflow\.examples\.tutorials\.mnist import input_data",
          "import input_data  # local digits shim"),
         (r"^from tensorflow\.", "from tensorflux."),
         (r"^from tensorflow import", "from tensorflux import")]


def git(git_dir, *args):
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True,
                          capture_output=True).stdout


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("repo")
    ap.add_argument("glob", nargs="?", default="*.py")
    ap.add_argument("--timeout", type=int, default=600)
    args = ap.parse_args(argv)
    git_dir = os.path.join(MIRROR, args.repo, "repo")
    files = git(git_dir, "ls-tree", "--name-only", "HEAD").decode().split()
    programs = sorted(f for f in files if fnmatch.fnmatch(f, args.glob))
    data = [f for f in files if f.endswith((".csv", ".txt", ".json"))]
    out_root = os.path.join(WORK, "collections", args.repo)
    env = dict(os.environ, MPLBACKEND="Agg", TF_CPP_MIN_LOG_LEVEL="2",
               PYTHONPATH=os.pathsep.join([REPO, os.path.join(HERE, "shim")]),
               TF1_PROGRAMS_WORK=WORK)
    for name in programs:
        d = os.path.join(out_root, name[:-3])
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        for f in data:
            with open(os.path.join(d, f), "wb") as fh:
                fh.write(git(git_dir, "show", f"HEAD:{f}"))
        text = git(git_dir, "show", f"HEAD:{name}").decode()
        for pattern, repl in EDITS:
            text = re.sub(pattern, repl, text, flags=re.M)
        with open(os.path.join(d, "main.py"), "w") as fh:
            fh.write(text)
        t0 = time.time()
        with open(os.path.join(d, "log.txt"), "w") as log:
            try:
                rc = subprocess.run([sys.executable, "main.py"], cwd=d, env=env, stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    timeout=args.timeout, check=False).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
        with open(os.path.join(d, "log.txt")) as fh:
            lines = [line.rstrip() for line in fh if line.strip()]
        print(f"{name[:-3]:48s} rc={rc} {time.time() - t0:6.1f}s  {(lines or [''])[-1][:90]}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
