"""absl's other flag definitions and checks in `tf.flags` (tensorflux/platform/flags.py):
enum classes, multi enums, space-separated lists, aliases, mutual exclusion, validator
decorators, set_default/override_value, flag_dict_to_args.

The expected values and messages are absl-py's (2.x, under TensorFlow 2.21), observed with
the same definitions and command lines.
"""

from __future__ import annotations

import enum

import pytest

import tensorflux as tf
from tensorflux.platform import flags


class Color(enum.Enum):
    RED = 1
    BLUE = 2


def _pair(**kw):
    values = flags.FlagValues()
    flags.DEFINE_string("a", None, "a", flag_values=values)
    flags.DEFINE_string("b", None, "b", flag_values=values)
    flags.DEFINE_boolean("x", False, "x", flag_values=values)
    flags.DEFINE_boolean("y", False, "y", flag_values=values)
    return values


@pytest.mark.parametrize("argv, required, message", [
    (["p"], True, "flags a=None, b=None: Exactly one of (a, b) must have a value other "
                  "than None."),
    (["p", "--a=1", "--b=2"], True, "flags a=1, b=2: Exactly one of (a, b) must have a "
                                    "value other than None."),
    (["p", "--a=1", "--b=1"], False, "flags a=1, b=1: At most one of (a, b) must have a "
                                     "value other than None."),
    (["p", "--a=1"], True, None),
    (["p"], False, None),
])
def test_mutually_exclusive(argv, required, message):
    values = _pair()
    flags.mark_flags_as_mutual_exclusive(["a", "b"], required=required, flag_values=values)
    if message is None:
        assert values(argv) == ["p"]
        return
    with pytest.raises(flags.IllegalFlagValueError) as e:
        values(argv)
    assert str(e.value) == message


@pytest.mark.parametrize("argv, required, message", [
    (["p", "--x", "--y"], False, "flags x=True, y=True: At most one of (x, y) must be True."),
    (["p"], True, "flags x=False, y=False: Exactly one of (x, y) must be True."),
    (["p", "--y"], True, None),
    (["p"], False, None),
])
def test_bool_mutually_exclusive(argv, required, message):
    values = _pair()
    flags.mark_bool_flags_as_mutual_exclusive(["x", "y"], required=required,
                                              flag_values=values)
    if message is None:
        values(argv)
        return
    with pytest.raises(flags.IllegalFlagValueError, match=None) as e:
        values(argv)
    assert str(e.value) == message


def test_bool_mutual_exclusion_refuses_other_flags():
    values = _pair()
    with pytest.raises(ValueError, match="is not Boolean"):
        flags.mark_bool_flags_as_mutual_exclusive(["a", "x"], flag_values=values)


def test_enum_class_multi_enum_spaceseplist_alias():
    values = flags.FlagValues()
    flags.DEFINE_multi_enum("m", ["x"], ["x", "y"], "m", flag_values=values)
    flags.DEFINE_multi_enum("mi", "x", ["x", "y"], "mi", case_sensitive=False,
                            flag_values=values)
    flags.DEFINE_spaceseplist("s", "a b", "s", flag_values=values)
    flags.DEFINE_spaceseplist("sc", "a b", "sc", comma_compat=True, flag_values=values)
    held = flags.DEFINE_enum_class("c", Color.RED, Color, "c", flag_values=values)
    flags.DEFINE_multi_enum_class("mc", ["red"], Color, "mc", flag_values=values)
    flags.DEFINE_alias("s2", "s", flag_values=values)
    assert values(["p"]) == ["p"]
    assert (values.m, values.mi, values.s, values.sc, values.c, values.mc) == \
        (["x"], ["x"], ["a", "b"], ["a", "b"], Color.RED, [Color.RED])
    values.unparse_flags()
    values(["p", "--m=y", "--m=x", "--mi=Y", "--s2=c d", "--sc=a,b c", "--c=BLUE",
            "--mc=blue", "--mc=red"])
    assert (values.m, values.mi, values.s, values.s2, values.sc) == \
        (["y", "x"], ["y"], ["c", "d"], ["c", "d"], ["a", "b", "c"])
    assert (values.c, values.mc, held.value) == (Color.BLUE, [Color.BLUE, Color.RED],
                                                 Color.BLUE)
    assert values["s"].present == 1 and values["s2"].value is values["s"].value
    for argv, message in ((["p", "--c=green"], "flag --c=green: value should be one of "
                                               "<red|blue>"),
                          (["p", "--m=z"], "flag --m=z: value should be one of <x|y>")):
        values.unparse_flags()
        with pytest.raises(flags.IllegalFlagValueError) as e:
            values(argv)
        assert str(e.value) == message
    help_text = values.module_help(values["m"].module_name)
    assert "--m: <x|y>: m;\n    repeat this option to specify a list of values\n" \
           "    (default: \"['x']\")" in help_text
    assert "--c: <red|blue>: c\n    (default: 'red')" in help_text
    assert "(a whitespace or comma separated list)" in help_text
    with pytest.raises(flags.UnrecognizedFlagError, match="'nope'"):
        flags.DEFINE_alias("a2", "nope", flag_values=values)
    with pytest.raises(TypeError, match="not a subclass of Enum"):
        flags.DEFINE_enum_class("bad", None, int, "bad", flag_values=values)


def test_validator_decorators():
    values = flags.FlagValues()
    flags.DEFINE_spaceseplist("s", "a b", "s", flag_values=values)
    flags.DEFINE_integer("n", 1, "n", flag_values=values)
    seen = []

    @flags.validator("s", message="too long", flag_values=values)
    def short(v):
        return len(v) < 3

    @flags.multi_flags_validator(["s", "n"], message="n too small", flag_values=values)
    def enough(d):
        seen.append(dict(d))
        return d["n"] >= len(d["s"])

    assert short(["a"]) and callable(enough)  # the decorated functions stay themselves
    with pytest.raises(flags.IllegalFlagValueError) as e:
        values(["p", "--s=a b c"])
    assert str(e.value) == "flag --s=['a', 'b', 'c']: too long"
    values.unparse_flags()
    with pytest.raises(flags.IllegalFlagValueError) as e:
        values(["p", "--s=a b"])
    assert str(e.value) == "flags s=['a', 'b'], n=1: n too small"
    values.unparse_flags()
    values(["p", "--s=a b", "--n=2"])
    assert seen[-1] == {"s": ["a", "b"], "n": 2}
    with pytest.raises(KeyError):
        flags.register_multi_flags_validator(["s", "missing"], lambda d: True,
                                             flag_values=values)


def test_required_set_default_override_value():
    values = flags.FlagValues()
    flags.DEFINE_integer("k", None, "k", flag_values=values)
    held = flags.DEFINE_integer("q", 3, "q", flag_values=values)
    flags.mark_flags_as_required(["k"], flag_values=values)
    with pytest.raises(flags.IllegalFlagValueError) as e:
        values(["p"])
    assert str(e.value) == "flag --k=None: Flag --k must have a value other than None."
    flags.set_default(held, 5)
    values.unparse_flags()
    values(["p", "--k=1"])
    assert values.q == 5
    flags.override_value(held, 7)
    assert (values.q, values["q"].present) == (7, 0)


@pytest.mark.parametrize("mapping, multi, expected", [
    ({"a": 1, "b": True, "c": False, "d": [1, 2], "e": None, "f": "x y"}, None,
     ["--a=1", "--b", "--noc", "--d=1,2", "--e", "--f=x y"]),
    ({"m": ["p", "q"]}, {"m"}, ["--m=p", "--m=q"]),
])
def test_flag_dict_to_args(mapping, multi, expected):
    assert list(flags.flag_dict_to_args(mapping, multi_flags=multi)) == expected


def test_key_flags_and_namespaces():
    values = _pair()
    flags.declare_key_flag("a", flag_values=values)
    with pytest.raises(ValueError, match="Flag --zz is undefined"):
        flags.declare_key_flag("zz", flag_values=values)
    flags.adopt_module_key_flags(flags, flag_values=values)
    flags.disclaim_key_flags()
    for name in ("mark_flags_as_required", "DEFINE_enum_class", "validator", "FlagHolder",
                 "mark_flags_as_mutual_exclusive", "flag_dict_to_args"):
        assert getattr(tf.flags, name) is getattr(tf.app.flags, name)
