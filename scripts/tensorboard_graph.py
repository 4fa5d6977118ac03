"""Writes a small TF1 model's graph with tensorflux, serves it with TensorBoard on
localhost, and (when a Chromium is installed) takes a screenshot of TensorBoard's graph tab.

    python scripts/tensorboard_graph.py [--out docs/tensorboard_graph.png] [--logdir DIR]

It checks what TensorBoard itself serves: the graph plugin lists the run, and the graph it
returns holds the model's name scopes and the devices the nodes asked for. The screenshot
shows the graph tab as a user sees it (name scopes collapsed, colored by device). Exit
status 0 when TensorBoard served the graph (and, with a browser, the screenshot was written).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import tensorflux as tf  # noqa: E402


def write_model(logdir: str) -> None:
    """A two-layer classifier under name scopes, its layers on two CPU devices."""
    g = tf.Graph()
    with g.as_default():
        with tf.name_scope("input"):
            x = tf.placeholder(tf.float32, [None, 64], name="images")
            y = tf.placeholder(tf.int64, [None], name="labels")
        with tf.device("/cpu:0"), tf.variable_scope("hidden"):
            h = tf.layers.dense(x, 32, tf.nn.relu)
        with tf.device("/cpu:1"), tf.variable_scope("logits"):
            logits = tf.layers.dense(h, 10)
        with tf.name_scope("loss"):
            loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
        with tf.name_scope("train"):
            train = tf.train.AdamOptimizer(1e-3).minimize(loss)
        tf.summary.scalar("loss", loss)
        tf.global_variables_initializer()
    writer = tf.summary.FileWriter(logdir, g)
    writer.flush()
    writer.close()
    del train


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, timeout: float) -> bytes:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.read()
        except OSError as e:
            last = e
            time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer in {timeout}s: {last}")


def check_served(base: str) -> str:
    """The graph TensorBoard serves for the run (pbtxt), after checking its contents."""
    runs = wait_for(f"{base}/data/plugin/graphs/info", 60).decode()
    if '"."' not in runs and "run" not in runs:
        raise RuntimeError(f"TensorBoard lists no run with a graph: {runs[:300]}")
    graph = wait_for(f"{base}/data/plugin/graphs/graph?run=.&conceptual=false", 30).decode()
    for needle in ('name: "hidden/dense/MatMul"', 'name: "loss/', 'device: "/device:CPU:1"',
                   'name: "train/'):
        if needle not in graph:
            raise RuntimeError(f"the served graph lacks {needle!r}")
    return graph


_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
          "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def screenshot(url: str, out: str, chromium: str) -> None:
    """The graph tab colored by device (through Playwright when it is installed: it picks
    "Device" under "Color by"; else Chromium's own --screenshot of the default view)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return _plain_screenshot(url, out, chromium)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(url)
            page.get_by_text("Main Graph").wait_for(timeout=60000)
            page.get_by_role("radio", name="Device").click()
            page.wait_for_timeout(1500)
            page.screenshot(path=out)
        finally:
            browser.close()


def _plain_screenshot(url: str, out: str, chromium: str) -> None:
    profile = tempfile.mkdtemp(prefix="tfx-chromium-")
    try:
        subprocess.run([chromium, "--headless", *_FLAGS, f"--user-data-dir={profile}",
                        "--hide-scrollbars",
                        "--window-size=1400,900", "--virtual-time-budget=20000",
                        f"--screenshot={os.path.abspath(out)}", url],
                       check=True, timeout=120, capture_output=True)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "tensorboard_graph.png"))
    ap.add_argument("--logdir", default=None)
    args = ap.parse_args()
    logdir = args.logdir or tempfile.mkdtemp(prefix="tfx-tb-")
    write_model(logdir)
    port = free_port()
    tb = shutil.which("tensorboard") or os.path.join(os.path.dirname(sys.executable),
                                                      "tensorboard")
    proc = subprocess.Popen([tb, "--logdir", logdir, "--host", "127.0.0.1", "--port",
                             str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        base = f"http://127.0.0.1:{port}"
        check_served(base)
        print(f"TensorBoard serves the graph: {base}/#graphs")
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if chromium is None:
            print("no Chromium on this machine: no screenshot")
            return 0
        screenshot(f"{base}/#graphs", args.out, chromium)
        print(f"screenshot: {args.out} ({os.path.getsize(args.out)} bytes)")
        return 0
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    sys.exit(main())
