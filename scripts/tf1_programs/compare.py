"""python compare.py [KEY ...]: the last result lines of each program's tensorflux and
TensorFlow logs, side by side (what docs/tf1_programs.md's table was read from)."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prep import WORK, P  # noqa: E402

KEEP = re.compile(r"(accuracy|cost|loss|정확도|Prediction|Test|W=|\[\[|Step|Epoch|Hello|"
                  r"Addition|Multipl|^\d|Training)", re.I)
ERROR = re.compile(r"^\w*(Error|Exception)\b|^\w+\.\w+.*Error:")


def tail(path, n):
    try:
        with open(path, errors="replace") as f:
            lines = [line.rstrip() for line in f if line.strip()]
    except FileNotFoundError:
        return ["(no log)"]
    errors = [line for line in lines if ERROR.match(line)]
    results = [line for line in lines if KEEP.search(line)
               and not line.startswith(("WARNING", "Instructions", "W0", "I0"))]
    return (results[-n:] or lines[-n:]) + (["ERR: " + errors[-1]] if errors else [])


for key in sys.argv[1:] or P:
    print(f"=== {key}")
    for variant in ("tfx", "tf"):
        for line in tail(os.path.join(WORK, "logs", variant, key + ".log"), 3):
            print(f"  {variant:3s} | {line[:150]}")
