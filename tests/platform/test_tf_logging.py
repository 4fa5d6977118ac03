"""`tf.logging` (tensorflux/platform/tf_logging.py): levels, verbosity, the n-times helpers
and TF1's line format. The messages are TensorFlow 2.21's, logger name aside ("tensorflux")."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tensorflux as tf

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def logger():
    log = tf.get_logger()
    level = log.level
    yield log
    log.setLevel(level)


def test_levels_and_verbosity(logger):
    L = tf.logging
    assert (L.DEBUG, L.INFO, L.WARN, L.ERROR, L.FATAL) == (10, 20, 30, 40, 50)
    assert logger is logging.getLogger("tensorflux")
    logger.setLevel(logging.NOTSET)
    assert L.get_verbosity() == logging.getLogger().getEffectiveLevel()
    L.set_verbosity(L.ERROR)
    assert L.get_verbosity() == L.ERROR == logger.level
    # The library's own loggers are children: the verbosity governs them too.
    assert not logging.getLogger("tensorflux.train").isEnabledFor(logging.WARNING)


def _emitted(caplog):
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "tensorflux"]


def test_functions_and_call_site_counts(logger, caplog):
    L = tf.logging
    L.set_verbosity(L.DEBUG)
    with caplog.at_level(logging.DEBUG, logger="tensorflux"):
        L.debug("d %d", 1)
        L.info("i %s", "x")
        L.warn("w")
        L.warning("w2")
        L.error("e")
        L.fatal("f")  # logs at CRITICAL; the program goes on, as TF's
        L.log(L.INFO, "log %d", 2)
        L.vlog(L.INFO, "vlog")
        L.vlog(1, "too verbose")
        L.TaskLevelStatusMessage("status")
        for i in range(5):
            L.log_every_n(L.INFO, "every %d", 2, i)
            L.log_first_n(L.INFO, "first %d", 2, i)
            L.log_if(L.INFO, "if %d", i % 2 == 0, i)
        L.log_first_n(L.INFO, "another call site %d", 1, 9)
    assert _emitted(caplog) == [
        ("DEBUG", "d 1"), ("INFO", "i x"), ("WARNING", "w"), ("WARNING", "w2"), ("ERROR", "e"),
        ("CRITICAL", "f"), ("INFO", "log 2"), ("INFO", "vlog"), ("ERROR", "status"),
        ("INFO", "every 0"), ("INFO", "first 0"), ("INFO", "if 0"), ("INFO", "first 1"),
        ("INFO", "every 2"), ("INFO", "if 2"), ("INFO", "every 4"), ("INFO", "if 4"),
        ("INFO", "another call site 9")]
    assert caplog.records[1].filename == "test_tf_logging.py"  # the caller, not the wrapper
    with pytest.raises(NotImplementedError):
        L.flush()


def test_line_format_and_default_verbosity():
    code = ("import tensorflux as tf\n"
            "tf.logging.info('hidden')\n"
            "tf.logging.warning('shown %d', 1)\n"
            "tf.logging.set_verbosity(tf.logging.INFO)\n"
            "tf.logging.info('now shown')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=60)
    assert done.returncode == 0
    assert done.stderr == "WARNING:tensorflux:shown 1\nINFO:tensorflux:now shown\n"
