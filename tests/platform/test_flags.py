"""`tf.flags` (tensorflux/platform/flags.py): absl-style definition, parsing and errors.

The expected messages are absl-py's (2.5.1, what TensorFlow 2.21's `tf.flags` is built on),
observed with the same command lines.
"""

from __future__ import annotations

import sys

import pytest

import tensorflux as tf
from tensorflux.platform import flags


@pytest.fixture
def fv():
    values = flags.FlagValues()
    flags.DEFINE_string("name", "world", "who to greet", flag_values=values)
    flags.DEFINE_integer("n", 3, "count", lower_bound=0, flag_values=values)
    flags.DEFINE_float("lr", 0.1, "rate", flag_values=values)
    flags.DEFINE_boolean("verbose", False, "talk", flag_values=values)
    flags.DEFINE_bool("fast", True, "go fast", short_name="f", flag_values=values)
    flags.DEFINE_enum("mode", "train", ["train", "eval"], "mode", flag_values=values)
    flags.DEFINE_list("layers", "1,2", "sizes", flag_values=values)
    flags.DEFINE_multi_string("tag", None, "tags", flag_values=values)
    flags.DEFINE_multi_integer("ids", [1], "ids", flag_values=values)
    return values


def _values(fv):
    return [fv.name, fv.n, fv.lr, fv.verbose, fv.fast, fv.mode, fv.layers, fv.tag, fv.ids]


def test_defaults_and_every_spelling(fv):
    assert fv(["prog"]) == ["prog"]
    assert _values(fv) == ["world", 3, 0.1, False, True, "train", ["1", "2"], None, [1]]
    fv.unparse_flags()
    rest = fv(["prog", "--name=bob", "--n", "5", "-lr=0.5", "--verbose", "--nofast",
               "--mode", "eval", "--layers=a, b,c", "--tag", "x", "--tag=y", "--ids", "4",
               "--ids=0x10", "pos1", "--", "--name=zz"])
    assert rest == ["prog", "pos1", "--", "--name=zz"]
    assert _values(fv) == ["bob", 5, 0.5, True, False, "eval", ["a", "b", "c"], ["x", "y"],
                           [4, 16]]
    assert fv["n"].present == 1 and not fv["n"].using_default_value
    fv(["prog", "-f", "--verbose=false"])
    assert fv.fast is True and fv.verbose is False


@pytest.mark.parametrize("argv, error, message", [
    (["--n=abc"], flags.IllegalFlagValueError,
     "flag --n=abc: invalid literal for int() with base 10: 'abc'"),
    (["--n=-1"], flags.IllegalFlagValueError, "flag --n=-1: -1 is not a non-negative integer"),
    (["--mode=bad"], flags.IllegalFlagValueError,
     "flag --mode=bad: value should be one of <train|eval>"),
    (["--verbose=maybe"], flags.IllegalFlagValueError,
     "flag --verbose=maybe: ('Non-boolean argument to boolean flag', 'maybe')"),
    (["--lr=x"], flags.IllegalFlagValueError,
     "flag --lr=x: could not convert string to float: 'x'"),
    (["--nofast=1"], ValueError, "--nofast=1 does not take an argument"),
    (["--name"], flags.Error, "Missing value for flag --name"),
    (["--bogus=3"], flags.UnrecognizedFlagError, "Unknown command line flag 'bogus'"),
])
def test_errors(fv, argv, error, message):
    with pytest.raises(error) as e:
        fv(["prog"] + argv)
    assert str(e.value) == message


def test_unknown_flags_stay_when_known_only(fv):
    assert fv(["prog", "--bogus=3", "x", "--n=4"], known_only=True) == ["prog", "--bogus=3", "x"]
    assert fv.n == 4


def test_reading_before_parsing(fv, monkeypatch):
    with pytest.raises(flags.UnparsedFlagAccessError,
                       match="Trying to access flag --name before flags were parsed."):
        _ = fv.name
    with pytest.raises(AttributeError):
        _ = fv.nonexistent
    fv.name = "set"  # setting needs no parse
    fv.mark_as_parsed()
    assert fv.name == "set"
    # The global FLAGS (tf.flags.FLAGS, tf.app.flags.FLAGS) parses sys.argv on first read.
    monkeypatch.setattr(flags, "FLAGS", flags.FlagValues(parse_on_access=True))
    flags.DEFINE_integer("steps", 1, "steps")
    monkeypatch.setattr(sys, "argv", ["prog", "--steps=7"])
    assert tf.flags.FLAGS.steps == 7 and tf.app.flags.FLAGS is tf.flags.FLAGS
    assert tf.flags.FLAGS.flag_values_dict() == {"steps": 7}


def test_duplicates_required_validators_and_old_keywords(fv):
    with pytest.raises(flags.DuplicateFlagError, match="The flag 'name' is defined twice"):
        flags.DEFINE_string("name", "x", "again", flag_values=fv)
    flags.DEFINE_string(flag_name="out", default_value=None, docstring="path", flag_values=fv)
    flags.mark_flag_as_required("out", fv)
    with pytest.raises(flags.IllegalFlagValueError,
                       match="Flag --out must have a value other than None."):
        fv(["prog"])
    fv(["prog", "--out=/tmp/x"])
    assert fv.out == "/tmp/x"
    flags.register_validator("n", lambda v: v % 2 == 0, "n must be even", flag_values=fv)
    with pytest.raises(flags.IllegalFlagValueError, match="flag --n=5: n must be even"):
        fv(["prog", "--out=x", "--n=5"])


def test_help_text(fv):
    assert fv["fast"].help_text() == "  -f,--[no]fast: go fast\n    (default: 'true')"
    assert fv["ids"].help_text() == (
        "  --ids: ids;\n    repeat this option to specify a list of values\n"
        "    (default: '[1]')\n    (an integer)")
    assert fv["mode"].help_text() == "  --mode: <train|eval>: mode\n    (default: 'train')"
    assert fv["n"].help_text() == "  --n: count\n    (default: '3')\n    (a non-negative integer)"
    assert fv["layers"].help_text().endswith("(default: '1,2')\n    (a comma separated list)")
    assert fv["tag"].help_text() == (
        "  --tag: tags;\n    repeat this option to specify a list of values")


def test_tf_1_4_spellings(fv, monkeypatch):
    """Scripts from TF <= 1.4 (argparse flags) call `FLAGS._parse_flags()` and read
    `FLAGS.__flags` (e.g. cnn-text-classification-tf's eval.py)."""
    monkeypatch.setattr(sys, "argv", ["prog", "--n=7", "--other=1", "rest"])
    left = fv._parse_flags()
    assert left == ["--other=1", "rest"] and fv.n == 7
    values = getattr(fv, "__flags")
    assert values["n"] == 7 and values["name"] == "world"
    assert fv._parse_flags(["--lr=0.5"]) == [] and fv.lr == 0.5
