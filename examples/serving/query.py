"""Query a served digits model over TensorFlow Serving's REST API with the standard library.

    python examples/serving/query.py --url http://127.0.0.1:8501 --model digits --count 20

Sends `--count` test digits in one `:predict` request (row format, `{"instances": [...]}`),
prints the model's status and each prediction, and the accuracy on those digits. Works
against tensorflux-serve and TensorFlow Serving alike.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_digits import load_data  # noqa: E402


def call(url: str, body=None) -> dict:
    data = None if body is None else json.dumps(body).encode("utf-8")
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def predict(url: str, model: str, images) -> list:
    """One predict request: a list of {"probabilities": [...], "classes": k} per image."""
    body = {"signature_name": "serving_default", "instances": images.tolist()}
    return call(f"{url}/v1/models/{model}:predict", body)["predictions"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default="http://127.0.0.1:8501")
    p.add_argument("--model", default="digits")
    p.add_argument("--count", type=int, default=20)
    args = p.parse_args(argv)
    status = call(f"{args.url}/v1/models/{args.model}")["model_version_status"]
    print("status:", ", ".join(f"version {s['version']} {s['state']}" for s in status))
    _, (x_test, y_test) = load_data()
    images, labels = x_test[:args.count], y_test[:args.count]
    predictions = predict(args.url, args.model, images)
    right = 0
    for label, pred in zip(labels, predictions, strict=True):
        right += int(pred["classes"] == label)
        print(f"label {label}  predicted {pred['classes']}  "
              f"p={max(pred['probabilities']):.2f}")
    print(f"accuracy {right / len(labels):.3f} on {len(labels)} digits")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
