"""`tf.app`: `tf.app.run(main=None, argv=None)` and `tf.app.flags`.

`run` parses the command line into `tf.flags.FLAGS` as TF1's does, tolerating flags nobody
defined (they stay in the argv given to `main`), then exits with `main(argv)`'s return
value (`sys.exit`). A flag value that does not parse ends the program with absl's message
("FATAL Flags parsing error: flag --n=abc: ...") and exit status 1; `--help`, `--helpshort`,
`--helpfull` and `-?` print absl's help text (the main module's docstring, then its flags)
and exit with status 1, as absl does.
"""

from __future__ import annotations

import sys

from tensorflux.platform import flags

__all__ = ["flags", "run"]

_HELP = {"--help": "short", "-help": "short", "--helpshort": "short", "-helpshort": "short",
         "-?": "short", "--helpfull": "full", "-helpfull": "full"}


def usage(full: bool, out=None) -> None:
    """Writes absl's help text: the main module's doc, then the flags.

    Args:
      full: all modules' flags (`--helpfull`), else the main module's (`--help`).
      out: the stream (default sys.stdout).
    """
    out = out or sys.stdout
    main = sys.modules.get("__main__")
    prog = sys.argv[0] if sys.argv and sys.argv[0] else "main"
    doc = (getattr(main, "__doc__", None) or f"\nUSAGE: {prog} [flags]\n").replace("%s", prog)
    values = flags.FLAGS
    modules = values.modules() if full else [m for m in values.modules() if m == prog]
    if not full and not modules:
        modules = values.modules()
    text = "".join(f"\n{m}:\n{values.module_help(m)}\n" for m in modules)
    if full:
        text += "\nabsl.app:\n  -?,--[no]help: show this help\n"
    out.write(doc.rstrip() + "\nflags:\n" + text)
    if not full:
        out.write("\nTry --helpfull to get a list of all flags.\n")
    out.flush()


def _help_request(argv) -> str | None:
    for arg in argv[1:]:
        if arg == "--":
            return None
        if arg.partition("=")[0] in _HELP:
            return _HELP[arg.partition("=")[0]]
    return None


def run(main=None, argv=None):
    """Parses flags, runs `main(argv)` and exits with its return value (`tf.app.run`).

    Args:
      main: the function to run (default: `main` of the `__main__` module).
      argv: the command line (default `sys.argv`).

    Raises:
      SystemExit: always: `main`'s return value, or 1 after a flag error or help.
    """
    main = main or sys.modules["__main__"].main
    argv = list(sys.argv if argv is None else argv)
    wanted = _help_request(argv)
    if wanted is not None:
        usage(full=wanted == "full")
        sys.exit(1)
    try:
        remaining = flags.FLAGS(argv, known_only=True)
    except (flags.Error, ValueError) as e:
        message = str(e)
        sys.stderr.write(f"FATAL Flags parsing error: {message}\n" if "\n" not in message else
                         "FATAL Flags parsing error:\n  " + message.replace("\n", "\n  ") + "\n")
        sys.stderr.write("Pass --helpshort or --helpfull to see help on flags.\n")
        sys.exit(1)
    sys.exit(main(remaining))
