"""The `vlmdesk` command: argument parsing, workspace opening, one-line errors. Work is done by the layers below."""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import textwrap

from db.errors import EnvironmentFault, UserError
from db.workspace import database_error, default_workspace_path, open_workspace
from vlmdesk.args import Parser, positive_int  # noqa: F401 (positive_int moved to vlmdesk/args.py)
from vlmdesk.errors import internal_error_line


class UsageError(UserError):
    """A mistake in the command line that argparse cannot see (unknown benchmark, bad index...)."""


def output_file(path_text: str):
    """The path a command will write, checked before any work (evaluator/formats/outfiles.py's rule: no folder, device,
    FIFO, socket or SQLite database, an existing folder); the writer checks again when it writes."""
    from pathlib import Path

    from evaluator.formats.outfiles import check_output

    check_output(path_text)
    return Path(path_text).expanduser()


def write_json_array(objects) -> None:
    """A JSON array on stdout, each element written as it comes (the same bytes as json.dumps of the whole list):
    a listing of a million records starts at once, in constant memory."""
    sys.stdout.write("[")
    for n, obj in enumerate(objects):
        sys.stdout.write((", " if n else "") + json.dumps(obj, ensure_ascii=False))
    sys.stdout.write("]\n")


def _formatter(prog):
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


def _workspace_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workspace",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="workspace file (default: $VLMDESK_WORKSPACE, else the user data directory)",
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        default=argparse.SUPPRESS,
        help="open the workspace read-only: reading commands work, writes are refused (a file that "
        "cannot be written opens read-only anyway)",
    )


# Each module has register(add): it adds its subcommands through `add(name, help=, description=, examples=)`.
COMMAND_MODULES = (
    "cmd_data",
    "cmd_fetch",
    "cmd_import_predictions",
    "cmd_run",
    "cmd_pope",
    "cmd_qc",
    "cmd_extract",
    "cmd_align",
    "cmd_models",
    "cmd_results",
    "cmd_desiderata",
    "cmd_judge",
    "cmd_gui",
    "cmd_reviews",
    "cmd_check",
    "cmd_team",
    "cmd_arena",
)


def build_parser() -> argparse.ArgumentParser:
    import importlib

    parser = Parser(
        prog="vlmdesk",
        formatter_class=_formatter,
        description="A workbench for vision-language model benchmarks. With no command, opens the app.",
        epilog=textwrap.dedent(f"""\
            examples:
              vlmdesk                                    open the app on the default workspace
              vlmdesk import MMBench_DEV_EN.tsv          import a VLMEvalKit / MMBench TSV
              vlmdesk benchmarks --json                  list what the workspace holds
              vlmdesk --workspace my.sqlite items demo   use another workspace file
              vlmdesk --read-only report 1               read without any chance of writing

            default workspace: {default_workspace_path()}"""),
    )
    _workspace_option(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        importlib.import_module(f"vlmdesk.{module}").register(lambda name, **kw: add_command(sub, name, **kw))
    return parser


def model_specs_help() -> str:
    """The closing paragraph of the --help of commands taking a model spec: every backend's syntax, and the extra
    that hf: models need (not in the base install: docs/adr/0041)."""
    from evaluator.backends import spec_help
    from evaluator.backends.hf import INSTALL_HF

    return f"model specs: {spec_help()}\n\nhf: models need the hf extra: {INSTALL_HF}"


def add_command(sub, name: str, *, help: str, examples: str, description: str | None = None, handler=None):
    """Add command or subcommand `name` to `sub` (an add_subparsers action): its help line, its description
    (default: the help as a sentence), its examples (one per line) and the workspace options every command takes."""
    lines = textwrap.dedent(examples).strip("\n")
    p = sub.add_parser(
        name,
        help=help.replace("%", "%%"),  # argparse %-formats a help line ("95 % intervals"), not a description
        description=description if description is not None else help[:1].upper() + help[1:] + ".",
        formatter_class=_formatter,
        epilog=("examples:\n" if "\n" in lines else "example:\n") + textwrap.indent(lines, "  "),
    )
    _workspace_option(p)
    if handler is not None:
        p.set_defaults(handler=handler)
    return p


def workspace_path(args):
    """The workspace file a command works on: --workspace, else the default."""
    from pathlib import Path

    path = getattr(args, "workspace", None)
    return Path(path).expanduser() if path is not None else default_workspace_path()


# Commands that may create a missing workspace: they bring something in from outside. Every other command works on
# what a workspace already holds, so a missing file is a mistyped path: one line "no such workspace", nothing made.
CREATING_COMMANDS = frozenset({("import",), ("demo",), ("extract",), ("models", "add"), ("pope", "build")})


def creates_workspace(args) -> bool:
    """Whether the command in `args` may create its workspace when the file does not exist."""
    action = getattr(args, f"{args.command}_command", None) if args.command else None
    return (args.command,) in CREATING_COMMANDS or (args.command, action) in CREATING_COMMANDS


def open_from_args(args, *, create: bool | None = None):
    """The command's workspace, opened (`create`: default, whether the command is one that may create it)."""
    create = creates_workspace(args) if create is None else create
    return open_workspace(workspace_path(args), create=create, read_only=getattr(args, "read_only", False))


def main(argv: list[str] | None = None) -> int:
    """Run one command. Every failure ends here, once: expected ones (UserError: exit 2; EnvironmentFault and SQLite
    errors about the file: exit 1 or 2) as one line `error: …`; anything else is a bug, reported in one line that
    names the log file holding its traceback (exit 1). The process's own command line (`argv` None) that was
    interrupted ends at once (`_exit_interrupted`)."""
    code = _main(argv)
    if argv is None and code == INTERRUPTED:
        _exit_interrupted()
    return code


INTERRUPTED = 130  # what a shell reports for a command ended by Ctrl+C; SIGTERM (the app's Cancel) exits alike


def _exit_interrupted() -> None:
    """Exit now, without the interpreter's teardown: the command has stored what it had, closed the workspace and
    said how to continue; freeing a thousand modules takes a second or two on a busy machine, and Cancel must end a
    run within 2 s (docs/adr/0024) — request threads left blocked in reads included."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            pass
    os._exit(INTERRUPTED)


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command is None:
            from vlmdesk.app import start

            return start(args)
        return args.handler(args) or 0
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except EnvironmentFault as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except sqlite3.DatabaseError as exc:
        error = database_error(workspace_path(args), exc)
        if error is None:  # not about the file (e.g. a wrong statement): a bug
            print(internal_error_line(exc, command=args.command), file=sys.stderr)
            return 1
        print(f"error: {error}", file=sys.stderr)
        return 2 if isinstance(error, UserError) else 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:
        return 0
    except Exception as exc:
        print(internal_error_line(exc, command=args.command), file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
