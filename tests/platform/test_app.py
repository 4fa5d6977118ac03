"""`tf.app.run` (tensorflux/platform/app.py): flags parsed as TF1's app.run parses them
(undefined flags are passed on to main), main's return value as the exit status, absl's
messages for bad values and for --help."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tensorflux as tf
from tensorflux.platform import flags

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh_flags(monkeypatch):
    monkeypatch.setattr(flags, "FLAGS", flags.FlagValues(parse_on_access=True))
    tf.flags.DEFINE_integer("batch", 32, "batch size", lower_bound=1)
    tf.flags.DEFINE_boolean("train", True, "train or not")
    return flags.FLAGS


def test_main_gets_the_rest_and_its_return_value_is_the_exit_status(fresh_flags):
    seen = []

    def main(argv):
        seen.append((argv, fresh_flags.batch, fresh_flags.train))
        return 3

    with pytest.raises(SystemExit) as e:
        tf.app.run(main, argv=["prog", "--batch=8", "--unknown=1", "file", "--notrain"])
    assert e.value.code == 3
    assert seen == [(["prog", "--unknown=1", "file"], 8, False)]


def test_main_defaults_to_the_main_module_and_sys_argv(fresh_flags, monkeypatch):
    main_module = type(sys)("__main__")
    main_module.main = lambda argv: len(argv)
    monkeypatch.setitem(sys.modules, "__main__", main_module)
    monkeypatch.setattr(sys, "argv", ["prog", "a", "b"])
    with pytest.raises(SystemExit) as e:
        tf.app.run()
    assert e.value.code == 3


def test_a_bad_value_exits_with_absl_s_message(fresh_flags, capsys):
    with pytest.raises(SystemExit) as e:
        tf.app.run(lambda argv: 0, argv=["prog", "--batch=0"])
    assert e.value.code == 1
    assert capsys.readouterr().err == (
        "FATAL Flags parsing error: flag --batch=0: 0 is not a positive integer\n"
        "Pass --helpshort or --helpfull to see help on flags.\n")


_SCRIPT = '''\
"""Trains a model.

Usage: %s [flags]
"""
import tensorflux as tf

tf.flags.DEFINE_string("data_dir", "/tmp/data", "where the data is")
tf.flags.DEFINE_float("lr", 0.01, "learning rate")
FLAGS = tf.flags.FLAGS


def main(argv):
    print(argv[1:], FLAGS.data_dir, FLAGS.lr)


if __name__ == "__main__":
    tf.app.run()
'''


def test_a_script_with_help(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(_SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def run(*args):
        return subprocess.run([sys.executable, "train.py", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)

    done = run("--lr", "0.5", "x", "--help")  # a help flag wins wherever it is
    assert done.returncode == 1
    assert done.stdout == textwrap.dedent('''\
        Trains a model.

        Usage: train.py [flags]
        flags:

        train.py:
          --data_dir: where the data is
            (default: '/tmp/data')
          --lr: learning rate
            (default: '0.01')
            (a number)

        Try --helpfull to get a list of all flags.
        ''')
    done = run("--lr", "0.5", "x")
    assert (done.returncode, done.stdout) == (0, "['x'] /tmp/data 0.5\n")
