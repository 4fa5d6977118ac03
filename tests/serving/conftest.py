"""Fixtures: SavedModel version directories and a running server with an HTTP client."""

from __future__ import annotations

import json
import os
import shutil
import urllib.error
import urllib.request

import pytest

from tests.serving import models


class Client:
    """A real HTTP client (urllib) for one server: `call` returns (status, JSON body)."""

    def __init__(self, url: str):
        self.url = url

    def call(self, method: str, path: str, body=None, raw: bytes | None = None,
             timeout: float = 30.0):
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def predict(self, body, model="m", where=""):
        return self.call("POST", f"/v1/models/{model}{where}:predict", body)


_CACHE: dict[float, str] = {}


def exported(bias: float, tmp_root: str) -> str:
    """A SavedModel with bias `bias` (models.export_model), exported once per session."""
    src = _CACHE.get(bias)
    if src is None or not os.path.isdir(src):
        src = os.path.join(tmp_root, f"export-{bias}")
        models.export_model(src, bias)
        _CACHE[bias] = src
    return src


def write_version(base: str, version: int, bias: float, tmp_root: str) -> str:
    """Writes version `version` (bias `bias`) under `base` atomically (copied beside, then
    renamed, as TF Serving asks of exporters)."""
    src = exported(bias, tmp_root)
    staging = os.path.join(base, f".tmp-{version}")
    shutil.copytree(src, staging)
    final = os.path.join(base, str(version))
    os.rename(staging, final)
    return final


@pytest.fixture(scope="session")
def export_root(tmp_path_factory):
    return str(tmp_path_factory.mktemp("exports"))
