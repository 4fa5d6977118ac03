"""`tf.flags` / `tf.app.flags`: command-line flags in the style of absl.flags (TF1's API).

A small, self-contained implementation of the part of absl.flags TF1 programs use, so the
library takes no dependency on absl-py for it:

- `DEFINE_string/integer/float/boolean/bool/enum/list/multi_string/multi_integer(name,
  default, help, flag_values=FLAGS, ...)` add a flag to a `FlagValues` (a duplicate name
  raises DuplicateFlagError);
- `FLAGS(argv, known_only=False)` parses `--name=value`, `--name value`, `-name value`,
  `--flag`/`--noflag` for booleans, a short name (`-f`), repeated multi flags, and `--`
  (everything after it is positional); it returns argv[0] plus the arguments it did not
  consume (unknown flags too when `known_only`); bad values raise IllegalFlagValueError
  "flag --n=abc: invalid literal for int() with base 10: 'abc'", unknown flags
  UnrecognizedFlagError "Unknown command line flag 'x'";
- reading a flag of a FlagValues before it was parsed raises UnparsedFlagAccessError, except
  on the global `FLAGS`, which parses `sys.argv` on first access (TF1's behaviour);
- absl's other definitions and checks: DEFINE_multi_enum, DEFINE_enum_class (members of an
  enum.Enum by name), DEFINE_multi_enum_class, DEFINE_spaceseplist, DEFINE_alias;
  mark_flag(s)_as_required, mark_flags_as_mutual_exclusive,
  mark_bool_flags_as_mutual_exclusive, the `validator` and `multi_flags_validator`
  decorators (failures are IllegalFlagValueError at parse, worded as absl's);
  set_default/override_value on what a DEFINE returned; flag_dict_to_args. Key flags
  (declare_key_flag, adopt_module_key_flags) only shape absl's --helpshort and are
  accepted; --flagfile is not read.

`tf.app.run` (app.py) parses with `known_only=True`, as TF1's does, and prints absl's help
text for `--help`. Scripts written for TF <= 1.4's argparse flags call `FLAGS._parse_flags()`
and read `FLAGS.__flags` (a dict of values): both work.
"""

from __future__ import annotations

import csv
import sys

__all__ = [
    "DEFINE_alias", "DEFINE_bool", "DEFINE_boolean", "DEFINE_enum", "DEFINE_enum_class",
    "DEFINE_float", "DEFINE_integer", "DEFINE_list", "DEFINE_multi_enum",
    "DEFINE_multi_enum_class", "DEFINE_multi_float", "DEFINE_multi_integer",
    "DEFINE_multi_string", "DEFINE_spaceseplist", "DEFINE_string", "CantOpenFlagFileError",
    "DuplicateFlagError", "Error", "FLAGS", "Flag", "FlagHolder",
    "FlagNameConflictsWithMethodError", "FlagValues", "IllegalFlagValueError",
    "UnparsedFlagAccessError", "UnrecognizedFlagError", "ValidationError",
    "adopt_module_key_flags", "declare_key_flag", "disclaim_key_flags", "flag_dict_to_args",
    "mark_bool_flags_as_mutual_exclusive", "mark_flag_as_required", "mark_flags_as_required",
    "mark_flags_as_mutual_exclusive", "multi_flags_validator", "override_value",
    "register_multi_flags_validator", "register_validator", "set_default", "validator",
]


class Error(Exception):
    """The base of the flag errors."""


class DuplicateFlagError(Error):
    """A flag name was defined twice."""


class IllegalFlagValueError(Error):
    """A flag's value could not be parsed or is out of range."""


class UnrecognizedFlagError(Error):
    """A flag on the command line was never defined.

    Args:
      flagname: the flag's name.
      flagvalue: what was given ("--name=value").
    """

    def __init__(self, flagname: str, flagvalue: str = ""):
        super().__init__(f"Unknown command line flag '{flagname}'")
        self.flagname, self.flagvalue = flagname, flagvalue


class UnparsedFlagAccessError(Error):
    """A flag was read before its FlagValues parsed a command line."""


class ValidationError(Error):
    """A validator or a required flag failed after parsing."""


# ---- parsers: text -> value, and the words help uses -------------------------------------


class _Parser:
    """Parses one flag's text; `kind` is the "(an integer)" line of the help text."""

    kind = ""

    def parse(self, text):
        return text


class _BoolParser(_Parser):
    def parse(self, text):
        if isinstance(text, bool):
            return text
        if isinstance(text, str):
            if text.lower() in ("true", "t", "1"):
                return True
            if text.lower() in ("false", "f", "0"):
                return False
        elif isinstance(text, int) and text in (0, 1):
            return bool(text)
        raise ValueError("Non-boolean argument to boolean flag", text)


def _range_words(lower, upper, noun: str, article: str) -> str:
    """absl's description of a bounded number: "a non-negative integer", ..."""
    if lower is not None and upper is not None:
        return f"{article} {noun} in the range [{lower}, {upper}]"
    if lower == 0:
        return f"a non-negative {noun}"
    if upper == 0:
        return f"a non-positive {noun}"
    if lower == 1 and noun == "integer":
        return "a positive integer"
    if upper == -1 and noun == "integer":
        return "a negative integer"
    if lower is not None:
        return f"{article} {noun} >= {lower}"
    if upper is not None:
        return f"{article} {noun} <= {upper}"
    return f"{article} {noun}"


class _NumberParser(_Parser):
    def __init__(self, integer: bool, lower=None, upper=None):
        self.integer, self.lower, self.upper = integer, lower, upper
        self.kind = _range_words(lower, upper, "integer" if integer else "number",
                                 "an" if integer else "a")

    def _convert(self, text):
        if not isinstance(text, str):
            if isinstance(text, bool) or not isinstance(text, (int, float)):
                raise TypeError(f"Expect argument to be a string or {self.kind}")
            return int(text) if self.integer else float(text)
        if not self.integer:
            return float(text)
        base = 10
        if len(text) > 2 and text[0] == "0" and text[1] in "ox":
            base = 8 if text[1] == "o" else 16
        return int(text, base)

    def parse(self, text):
        value = self._convert(text)
        if (self.lower is not None and value < self.lower) or \
                (self.upper is not None and value > self.upper):
            raise ValueError(f"{value} is not {self.kind}")
        return value


class _EnumParser(_Parser):
    def __init__(self, values, case_sensitive: bool = True):
        if not values:
            raise ValueError(f"enum_values cannot be empty, found '{values}'")
        self.values, self.case_sensitive = list(values), case_sensitive

    def parse(self, text):
        if text in self.values:
            return text
        if not self.case_sensitive:
            for v in self.values:
                if v.lower() == str(text).lower():
                    return v
        raise ValueError(f"value should be one of <{'|'.join(self.values)}>")


class _ListParser(_Parser):
    kind = "a comma separated list"

    def parse(self, text):
        if isinstance(text, list):
            return text
        if not text:
            return []
        return [s.strip() for s in next(csv.reader([text], strict=True))]


class _SpaceSeparatedParser(_Parser):
    """Whitespace-separated words (and commas too with `comma_compat`)."""

    def __init__(self, comma_compat: bool = False):
        self.comma_compat = comma_compat
        self.kind = "a whitespace or comma separated list" if comma_compat else \
            "a whitespace separated list"

    def parse(self, text):
        if isinstance(text, list):
            return text
        return (text.replace(",", " ") if self.comma_compat else text).split()


class _EnumClassParser(_Parser):
    """A member of an enum.Enum class, by name (any case unless `case_sensitive`)."""

    def __init__(self, enum_class, case_sensitive: bool = False):
        import enum

        if not (isinstance(enum_class, type) and issubclass(enum_class, enum.Enum)):
            raise TypeError(f"{enum_class} is not a subclass of Enum.")
        if not enum_class.__members__:
            raise ValueError(f"enum_class cannot be empty, but {enum_class!r} is empty.")
        self.enum_class, self.case_sensitive = enum_class, case_sensitive
        names = list(enum_class.__members__)
        self.values = names if case_sensitive else [n.lower() for n in names]

    def parse(self, text):
        if isinstance(text, self.enum_class):
            return text
        for name, member in self.enum_class.__members__.items():
            if name == text or (not self.case_sensitive and name.lower() == str(text).lower()):
                return member
        raise ValueError(f"value should be one of <{'|'.join(self.values)}>")


# ---- flags --------------------------------------------------------------------------------


class Flag:
    """One flag: its name, help, parser, default and current value.

    Args:
      parser: parses the flag's text.
      name: the long name (`--name`).
      default: the default, as a value or as text to parse (None: no value).
      help_string: the help text.
      short_name: an optional one-letter name (`-f`).
      boolean: a flag that takes no value (`--flag`, `--noflag`).
    """

    def __init__(self, parser: _Parser, name: str, default, help_string: str,
                 short_name: str | None = None, boolean: bool = False):
        self.parser, self.name, self.help = parser, name, help_string or "(no help available)"
        self.short_name, self.boolean = short_name, boolean
        self.present = 0
        self.using_default_value = True
        self.module_name = ""
        self.default = self.value = None
        self._set_default(default)

    def _parse_text(self, text):
        try:
            return self.parser.parse(text)
        except (TypeError, ValueError) as e:
            raise IllegalFlagValueError(f"flag --{self.name}={text}: {e}") from e

    def _set_default(self, default) -> None:
        self.default = None if default is None else self._parse_text(default)
        self.default_as_str = None if default is None else self._default_text(default)
        if self.using_default_value:
            self.value = self.default

    def _default_text(self, default) -> str:
        if self.boolean:
            return "true" if self.default else "false"
        if isinstance(self.parser, _EnumClassParser) and not isinstance(default, str):
            name = self.default.name
            return name if self.parser.case_sensitive else name.lower()
        if isinstance(self.parser, _ListParser):
            return default if isinstance(default, str) else ",".join(map(str, default))
        return str(default)

    def parse(self, text) -> None:
        """Sets the value from command-line text (counts as present)."""
        self.value = self._parse_text(text)
        self.present += 1
        self.using_default_value = False

    def help_text(self) -> str:
        """absl's help lines for this flag."""
        names = f"-{self.short_name},--" if self.short_name else "--"
        names += f"[no]{self.name}" if self.boolean else self.name
        lines = [f"  {names}: {self._help_head()}"]
        if self.default_as_str is not None:
            quote = '"' if "'" in self.default_as_str else "'"
            lines.append(f"    (default: {quote}{self.default_as_str}{quote})")
        if self.parser.kind:
            lines.append(f"    ({self.parser.kind})")
        return "\n".join(lines)

    def _help_head(self) -> str:
        if isinstance(self.parser, (_EnumParser, _EnumClassParser)):
            return f"<{'|'.join(self.parser.values)}>: {self.help}"
        return self.help


class MultiFlag(Flag):
    """A flag that may be given several times; its value is the list of all of them."""

    def _parse_text(self, text):
        items = text if isinstance(text, (list, tuple)) else [text]
        return [Flag._parse_text(self, t) for t in items]

    def _default_text(self, default) -> str:
        if isinstance(self.parser, _EnumClassParser):
            items = default if isinstance(default, (list, tuple)) else [default]
            return ",".join(i if isinstance(i, str) else i.name.lower() for i in items)
        return repr(self.default)

    def parse(self, text) -> None:
        values = self._parse_text(text)
        self.value = (self.value if self.present else []) + values
        self.present += 1
        self.using_default_value = False

    def _help_head(self) -> str:
        return f"{Flag._help_head(self)};\n    repeat this option to specify a list of values"


def _forwarded(attr: str) -> property:
    def get(self):
        return getattr(self.original, attr)

    def put(self, value):
        setattr(self.original, attr, value)

    return property(get, put)


class _AliasFlag(Flag):
    """Another name of a flag (DEFINE_alias): parsing it sets the original, reading it
    reads the original."""

    value = _forwarded("value")
    present = _forwarded("present")
    using_default_value = _forwarded("using_default_value")
    default = _forwarded("default")
    default_as_str = _forwarded("default_as_str")

    def __init__(self, name: str, original: Flag):
        self.original, self.parser, self.name = original, original.parser, name
        self.help = f"Alias for --{original.name}."
        self.short_name, self.boolean, self.module_name = None, original.boolean, ""

    def parse(self, text) -> None:
        self.original.parse(text)


# ---- the registry and the parser ----------------------------------------------------------


class FlagValues:
    """A set of flags: define into it, parse a command line with it, read values from it.

    `flag_values.name` reads a flag's value and `flag_values.name = v` sets it;
    `flag_values["name"]` is the Flag object. Reading before a parse raises
    UnparsedFlagAccessError unless `parse_on_access` (the global FLAGS), which parses
    `sys.argv` first.

    Args:
      parse_on_access: parse `sys.argv` on the first read of an unparsed flag.
    """

    def __init__(self, parse_on_access: bool = False):
        object.__setattr__(self, "_flags", {})
        object.__setattr__(self, "_short", {})
        object.__setattr__(self, "_parsed", False)
        object.__setattr__(self, "_parse_on_access", parse_on_access)
        object.__setattr__(self, "_validators", [])

    # -- definition
    def register(self, flag: Flag, module_name: str) -> None:
        """Adds `flag`, defined in `module_name`.

        Raises:
          DuplicateFlagError: its name or short name is taken.
        """
        for key, table in ((flag.name, self._flags), (flag.short_name, self._short)):
            if key is not None and key in table:
                first = table[key].module_name
                raise DuplicateFlagError(
                    f"The flag '{key}' is defined twice. First from {first}, Second from "
                    f"{module_name}.  Description from first occurrence: {table[key].help}")
        flag.module_name = module_name
        self._flags[flag.name] = flag
        if flag.short_name:
            self._short[flag.short_name] = flag

    # -- reading and writing values
    def __getattr__(self, name):
        if name == "__flags":  # TF <= 1.4's argparse FLAGS kept {name: value} there
            if not self._parsed and self._parse_on_access:
                self(sys.argv, known_only=True)
            return self.flag_values_dict()
        if name.startswith("__") or name in ("_flags", "_short", "_parsed"):
            raise AttributeError(name)
        flag = self._flags.get(name)
        if flag is None:
            raise AttributeError(name)
        if not self._parsed:
            if not self._parse_on_access:
                raise UnparsedFlagAccessError(
                    f"Trying to access flag --{name} before flags were parsed.")
            self(sys.argv)
        return flag.value

    def __setattr__(self, name, value):
        flag = self._flags.get(name)
        if flag is None:
            raise AttributeError(name)
        flag.value = value
        flag.using_default_value = False

    def __getitem__(self, name: str) -> Flag:
        return self._flags[name]

    def __contains__(self, name: str) -> bool:
        return name in self._flags

    def __iter__(self):
        return iter(self._flags)

    def __len__(self) -> int:
        return len(self._flags)

    def __dir__(self):
        return sorted(self._flags)

    def is_parsed(self) -> bool:
        return self._parsed

    def mark_as_parsed(self) -> None:
        object.__setattr__(self, "_parsed", True)

    def unparse_flags(self) -> None:
        """Back to defaults and unparsed."""
        for flag in self._flags.values():
            flag.value, flag.present, flag.using_default_value = flag.default, 0, True
        object.__setattr__(self, "_parsed", False)

    def _parse_flags(self, args=None) -> list:
        """TF <= 1.4's spelling: parses `args` (default `sys.argv[1:]`), known flags only;
        returns the arguments left."""
        argv = sys.argv if args is None else [sys.argv[0] if sys.argv else ""] + list(args)
        return self(argv, known_only=True)[1:]

    def flag_values_dict(self) -> dict:
        """{name: value} of every flag."""
        return {name: flag.value for name, flag in self._flags.items()}

    def get_flag_value(self, name: str, default):
        """The value of flag `name`, or `default` when there is none."""
        flag = self._flags.get(name)
        return default if flag is None else flag.value

    def set_default(self, name: str, value) -> None:
        """Changes flag `name`'s default (and its value while it has not been set)."""
        self._flags[name]._set_default(value)

    # -- parsing
    def __call__(self, argv, known_only: bool = False) -> list:
        """Parses `argv[1:]` into the flags.

        Args:
          argv: the command line, program name first.
          known_only: leave unknown flags among the returned arguments instead of failing.

        Returns:
          argv[0] and the arguments that were not flags (after `--` all of them, `--`
          included).

        Raises:
          IllegalFlagValueError: a value does not parse or is out of range.
          UnrecognizedFlagError: an unknown flag (unless `known_only`).
          Error: a flag lacks its value, or a boolean was given one with `--noflag=`.
          ValidationError: a required flag is None or a validator fails.
        """
        if isinstance(argv, str) or not argv:
            raise TypeError("argv should be a tuple/list of strings, not bytes or string.")
        args = list(argv)
        rest, unknown = self._parse_args(args[1:], known_only)
        if unknown:
            name, text = unknown[0]
            raise UnrecognizedFlagError(name, text)
        self.mark_as_parsed()
        self._validate()
        return args[:1] + rest

    def _parse_args(self, args: list, known_only: bool):
        """(arguments left, [(name, text)] of unknown flags)."""
        rest: list = []
        unknown: list = []
        i = 0
        while i < len(args):
            arg = args[i]
            i += 1
            if arg == "--":
                rest.extend(args[i - 1:])
                break
            if not arg.startswith("-") or arg == "-":
                rest.append(arg)
                continue
            name, eq, value = arg.lstrip("-").partition("=")
            flag = self._flags.get(name) or self._short.get(name)
            if flag is None and name.startswith("no") and \
                    getattr(self._flags.get(name[2:]), "boolean", False):
                if eq:
                    raise ValueError(f"{arg} does not take an argument")
                self._flags[name[2:]].parse("false")
                continue
            if flag is None:
                (rest if known_only else unknown).append(arg if known_only else (name, arg))
                continue
            if not eq:
                if flag.boolean:
                    value = "true"
                elif i < len(args):
                    value, i = args[i], i + 1
                else:
                    raise Error(f"Missing value for flag {arg}")
            flag.parse(value)
        return rest, unknown

    def _validate(self) -> None:
        for names, check, message, several in self._validators:
            values = {n: self._flags[n].value for n in names}
            if not check(values if several else values[names[0]]):
                if several:
                    shown = "flags " + ", ".join(f"{n}={v}" for n, v in values.items())
                else:
                    shown = "flag " + ", ".join(f"--{n}={v}" for n, v in values.items())
                raise IllegalFlagValueError(f"{shown}: {message}")

    def add_validator(self, names: list, check, message: str,
                      several: bool | None = None) -> None:
        """Runs `check(value)` (or `check({name: value})` for several flags, or with
        `several`) after each parse."""
        names = list(names)
        several = len(names) > 1 if several is None else several
        self._validators.append((names, check, message, several))

    # -- help
    def module_help(self, module: str) -> str:
        """The help lines of the flags `module` defined, sorted by name."""
        flags = sorted((f for f in self._flags.values() if f.module_name == module),
                       key=lambda f: f.name)
        return "\n".join(f.help_text() for f in flags)

    def modules(self) -> list[str]:
        return sorted({f.module_name for f in self._flags.values()})

    def __str__(self) -> str:
        return "\n".join(f"\n{m}:\n{self.module_help(m)}" for m in self.modules())


FLAGS = FlagValues(parse_on_access=True)


def _caller_module() -> str:
    """The module calling a DEFINE function (the script's path for `__main__`)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    name = frame.f_globals.get("__name__", "") if frame is not None else ""
    return sys.argv[0] if name == "__main__" and sys.argv and sys.argv[0] else name


_OLD_KEYWORDS = {"flag_name": "name", "default_value": "default", "docstring": "help"}


def _renamed(kwargs: dict) -> dict:
    """TF1's DEFINE functions also take `flag_name`, `default_value` and `docstring`."""
    return {_OLD_KEYWORDS.get(k, k): v for k, v in kwargs.items()}


def _make(flag_cls, parser, name, default, help, flag_values, short_name=None,  # noqa: A002
          boolean=False, required=False, module_name=None):
    flag = flag_cls(parser, name, default, help, short_name=short_name, boolean=boolean)
    values = flag_values if flag_values is not None else FLAGS
    values.register(flag, module_name or _caller_module())
    if required:
        mark_flag_as_required(name, values)
    return flag


def DEFINE_string(*args, **kwargs) -> Flag:  # noqa: N802 - absl's name
    """Defines a string flag: DEFINE_string(name, default, help, flag_values=FLAGS,
    short_name=None, required=False). Returns the Flag."""
    return _string(*args, **_renamed(kwargs))


def _string(name, default, help, flag_values=None, **kw):  # noqa: A002
    return _make(Flag, _Parser(), name, default, help, flag_values, **kw)


def DEFINE_boolean(*args, **kwargs) -> Flag:  # noqa: N802
    """Defines a boolean flag (`--name`, `--noname`, `--name=false`): DEFINE_boolean(name,
    default, help, flag_values=FLAGS, short_name=None). Returns the Flag."""
    return _boolean(*args, **_renamed(kwargs))


def _boolean(name, default, help, flag_values=None, **kw):  # noqa: A002
    return _make(Flag, _BoolParser(), name, default, help, flag_values, boolean=True, **kw)


DEFINE_bool = DEFINE_boolean


def DEFINE_integer(*args, **kwargs) -> Flag:  # noqa: N802
    """Defines an integer flag: DEFINE_integer(name, default, help, lower_bound=None,
    upper_bound=None, flag_values=FLAGS, short_name=None). Returns the Flag."""
    return _number(True, *args, **_renamed(kwargs))


def DEFINE_float(*args, **kwargs) -> Flag:  # noqa: N802
    """Defines a float flag: DEFINE_float(name, default, help, lower_bound=None,
    upper_bound=None, flag_values=FLAGS, short_name=None). Returns the Flag."""
    return _number(False, *args, **_renamed(kwargs))


def _number(integer, name, default, help, lower_bound=None, upper_bound=None,  # noqa: A002
            flag_values=None, **kw):
    parser = _NumberParser(integer, lower_bound, upper_bound)
    return _make(Flag, parser, name, default, help, flag_values, **kw)


def DEFINE_enum(name, default, enum_values, help, flag_values=None,  # noqa: N802,A002
                case_sensitive=True, **kw) -> Flag:
    """Defines a flag whose value is one of `enum_values`. Returns the Flag."""
    return _make(Flag, _EnumParser(enum_values, case_sensitive), name, default, help,
                 flag_values, **kw)


def DEFINE_list(name, default, help, flag_values=None, **kw) -> Flag:  # noqa: N802,A002
    """Defines a comma-separated list flag ("a,b,c" -> ["a", "b", "c"]). Returns the Flag."""
    return _make(Flag, _ListParser(), name, default, help, flag_values, **kw)


def DEFINE_multi_string(name, default, help, flag_values=None, **kw) -> Flag:  # noqa: N802,A002
    """Defines a flag that may repeat; its value is the list of strings. Returns the Flag."""
    return _make(MultiFlag, _Parser(), name, default, help, flag_values, **kw)


def DEFINE_multi_integer(name, default, help, lower_bound=None, upper_bound=None,  # noqa: N802
                         flag_values=None, **kw) -> Flag:
    """Defines a flag that may repeat; its value is the list of integers. Returns the Flag."""
    return _make(MultiFlag, _NumberParser(True, lower_bound, upper_bound), name, default,
                 help, flag_values, **kw)


def DEFINE_multi_float(name, default, help, lower_bound=None, upper_bound=None,  # noqa: N802
                       flag_values=None, **kw) -> Flag:
    """Defines a flag that may repeat; its value is the list of floats. Returns the Flag."""
    return _make(MultiFlag, _NumberParser(False, lower_bound, upper_bound), name, default,
                 help, flag_values, **kw)


def mark_flag_as_required(flag_name: str, flag_values=None) -> None:
    """Makes parsing fail unless flag `flag_name` ends up other than None.

    Raises:
      KeyError: no such flag.
    """
    values = flag_values if flag_values is not None else FLAGS
    values[flag_name]  # noqa: B018 - KeyError for an unknown flag, as absl
    values.add_validator([flag_name], lambda v: v is not None,
                         f"Flag --{flag_name} must have a value other than None.")


def register_validator(flag_name: str, checker, message: str = "Flag validation failed",
                       flag_values=None) -> None:
    """Makes parsing fail with `message` unless `checker(value)` is true."""
    values = flag_values if flag_values is not None else FLAGS
    values[flag_name]  # noqa: B018
    values.add_validator([flag_name], checker, message)


def DEFINE_multi_enum(name, default, enum_values, help, flag_values=None,  # noqa: N802,A002
                      case_sensitive=True, **kw) -> Flag:
    """Defines a flag that may repeat, each value one of `enum_values`. Returns the Flag."""
    return _make(MultiFlag, _EnumParser(enum_values, case_sensitive), name, default, help,
                 flag_values, **kw)


def DEFINE_enum_class(name, default, enum_class, help, flag_values=None,  # noqa: N802,A002
                      case_sensitive=False, **kw) -> Flag:
    """Defines a flag whose value is a member of the enum.Enum `enum_class`, given by name
    (in any case unless `case_sensitive`). Returns the Flag."""
    return _make(Flag, _EnumClassParser(enum_class, case_sensitive), name, default, help,
                 flag_values, **kw)


def DEFINE_multi_enum_class(name, default, enum_class, help, flag_values=None,  # noqa: N802
                            case_sensitive=False, **kw) -> Flag:
    """DEFINE_enum_class's flag that may repeat; its value is the list of members."""
    return _make(MultiFlag, _EnumClassParser(enum_class, case_sensitive), name, default,
                 help, flag_values, **kw)


def DEFINE_spaceseplist(name, default, help, comma_compat=False,  # noqa: N802,A002
                        flag_values=None, **kw) -> Flag:
    """Defines a whitespace-separated list flag ("a b c" -> ["a", "b", "c"]; commas
    separate too with `comma_compat`). Returns the Flag."""
    return _make(Flag, _SpaceSeparatedParser(comma_compat), name, default, help,
                 flag_values, **kw)


def DEFINE_alias(name, original_name, flag_values=None, module_name=None) -> Flag:  # noqa: N802
    """Defines `--name` as another name of the flag `original_name`.

    Raises:
      UnrecognizedFlagError: no flag `original_name`.
    """
    values = flag_values if flag_values is not None else FLAGS
    if original_name not in values:
        raise UnrecognizedFlagError(original_name)
    alias = _AliasFlag(name, values[original_name])
    values.register(alias, module_name or _caller_module())
    return alias


def mark_flags_as_required(flag_names, flag_values=None) -> None:
    """`mark_flag_as_required` of each name."""
    for name in flag_names:
        mark_flag_as_required(name, flag_values)


def _mutually_exclusive(flag_names, required, flag_values, count, what: str) -> None:
    values = flag_values if flag_values is not None else FLAGS
    names = list(flag_names)
    for name in names:
        values[name]  # noqa: B018 - KeyError for an unknown flag, as absl
    quantifier = "Exactly" if required else "At most"
    message = f"{quantifier} one of ({', '.join(names)}) {what}."
    values.add_validator(
        names, lambda d: count(d.values()) == 1 if required else count(d.values()) <= 1,
        message, several=True)


def mark_flags_as_mutual_exclusive(flag_names, required=False, flag_values=None) -> None:
    """Makes parsing fail when more than one of the flags (or, with `required`, other than
    exactly one) has a value other than None."""
    _mutually_exclusive(flag_names, required, flag_values,
                        lambda vs: sum(v is not None for v in vs),
                        "must have a value other than None")


def mark_bool_flags_as_mutual_exclusive(flag_names, required=False,
                                        flag_values=None) -> None:
    """The same for boolean flags: at most (with `required`, exactly) one of them True."""
    values = flag_values if flag_values is not None else FLAGS
    for name in flag_names:
        if not values[name].boolean:
            raise ValueError(f"Flag --{name} is not Boolean, which is required for flags "
                             "used in mark_bool_flags_as_mutual_exclusive.")
    _mutually_exclusive(flag_names, required, flag_values, lambda vs: sum(map(bool, vs)),
                        "must be True")


def validator(flag_name: str, message: str = "Flag validation failed", flag_values=None):
    """A decorator registering its function as `flag_name`'s validator (the function is
    returned unchanged)."""

    def register(checker):
        register_validator(flag_name, checker, message, flag_values)
        return checker

    return register


def register_multi_flags_validator(flag_names, multi_flags_checker,
                                   message="Flags validation failed", flag_values=None):
    """Makes parsing fail with `message` unless `multi_flags_checker({name: value})` is
    true."""
    values = flag_values if flag_values is not None else FLAGS
    for name in flag_names:
        values[name]  # noqa: B018
    values.add_validator(list(flag_names), multi_flags_checker, message, several=True)


def multi_flags_validator(flag_names, message="Flag validation failed", flag_values=None):
    """A decorator registering its function as a validator of several flags (it gets a
    dict of their values)."""

    def register(checker):
        register_multi_flags_validator(flag_names, checker, message, flag_values)
        return checker

    return register


def set_default(flag, value) -> None:
    """Changes the default of the flag a DEFINE function returned (and its value while it
    was not set on the command line)."""
    flag._set_default(value)


def override_value(flag, value) -> None:
    """Sets the flag a DEFINE function returned to `value` (not counted as present)."""
    flag.value = flag._parse_text(value) if isinstance(value, str) else value
    flag.using_default_value = False


def declare_key_flag(flag_name: str, flag_values=None) -> None:
    """absl's key flags choose what `--helpshort` lists; tensorflux's help lists a module's
    own flags, so this only checks that the flag exists.

    Raises:
      ValueError: no such flag.
    """
    values = flag_values if flag_values is not None else FLAGS
    if flag_name not in values:
        raise ValueError(f"Flag --{flag_name} is undefined. To set a flag as a key flag "
                         "first define it in Python.")


def adopt_module_key_flags(module, flag_values=None) -> None:
    """Accepted for absl compatibility (key flags only shape `--helpshort`)."""
    del module, flag_values


def disclaim_key_flags() -> None:
    """Accepted for absl compatibility (key flags only shape `--helpshort`)."""


def flag_dict_to_args(flag_map, multi_flags=None):
    """Command-line arguments for a {name: value} dict, as absl writes them: `--name=value`,
    `--name`/`--noname` for True/False, comma-joined lists (each item repeated for a name
    in `multi_flags`), `--name` for None."""
    for key, value in flag_map.items():
        if value is None:
            yield f"--{key}"
        elif isinstance(value, bool):
            yield f"--{key}" if value else f"--no{key}"
        elif isinstance(value, (bytes, str)):
            yield f"--{key}={value.decode() if isinstance(value, bytes) else value}"
        else:
            try:
                items = list(value)
            except TypeError:
                yield f"--{key}={value}"
                continue
            if multi_flags and key in multi_flags:
                for item in items:
                    yield f"--{key}={item}"
            else:
                yield f"--{key}={','.join(map(str, items))}"


class CantOpenFlagFileError(Error):
    """A --flagfile could not be read."""


class FlagNameConflictsWithMethodError(Error):
    """A flag's name is a method name of FlagValues."""


FlagHolder = Flag  # what DEFINE returns: `.value`, `.name`, `.default`, `.present`
