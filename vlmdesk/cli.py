"""The `vlmdesk` command: argument parsing, workspace opening, one-line errors. Work is done by the layers below."""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import sqlite3
import sys
import textwrap
from collections.abc import Callable
from typing import cast

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


# Every command, in the order `vlmdesk --help` lists them: "module:function" adding its arguments, and its help line.
# The function is given add(description=, examples=), which describes the command's parser (add_command's rules) and
# returns it. A command's module is imported, and its parser filled in, only when the command line names it
# (build_parser): a command loads no other command's modules, nor the libraries their help texts read (issue 34).
COMMANDS: dict[str, tuple[str, str]] = {
    "import": (
        "cmd_data:register_import",
        "import a benchmark file (VLMEvalKit/MMBench TSV, VQA/caption TSV, POPE, JSONL, parquet)",
    ),
    "demo": ("cmd_data:register_demo", "import the bundled demo benchmarks (demo, demo-pope, demo-open)"),
    "benchmarks": (
        "cmd_data:register_benchmarks",
        "list the benchmarks in the workspace; tag one with its capability groups",
    ),
    "items": ("cmd_data:register_items", "list the items (questions) of a benchmark"),
    "show": ("cmd_data:register_show", "show one item, optionally writing its image"),
    "fetch": (
        "cmd_fetch:register_fetch",
        "download a benchmark by name (MMBench, SEED-Bench, MMStar, POPE, TextVQA, DocVQA, COCO…) into the cache",
    ),
    "import-predictions": (
        "cmd_import_predictions:register_import_predictions",
        "store predictions made elsewhere (VLMEvalKit .xlsx/.tsv/.csv, lmms-eval samples .jsonl) as a run",
    ),
    "run": ("cmd_run:register_run", "evaluate a model on a benchmark (CircularEval, VanillaEval, POPE)"),
    "runs": ("cmd_run:register_runs", "list the runs in the workspace"),
    "report": ("cmd_run:register_report", "scores of a run: overall, per ability, per category, per split"),
    "compare": ("cmd_compare:register_compare", "two runs of one benchmark, item by item: paired differences, McNemar"),
    "pope": ("cmd_pope:register_pope", "POPE: score answer files, build question sets"),
    "qc": ("cmd_qc:register_qc", "quality control: flag text-answerable and possibly flawed items, decide, export"),
    "extract": ("cmd_extract:register_extract", "read which option free-text answers chose (rules, an LLM, or both)"),
    "rescore": (
        "cmd_extract:register_rescore",
        "score a run's stored answers again with another extractor or with human labels",
    ),
    "official": (
        "cmd_official:register_official",
        "score a run by its benchmark's official LLM-graded rule (MathVista, MMVet) with a judge",
    ),
    "align": ("cmd_align:register_align", "measure how well extractors agree with people (blind labelling, κ, α)"),
    "models": (
        "cmd_models:register_models",
        "saved models: add, list, remove, test (load it and answer one item); the verified families",
    ),
    "export-predictions": (
        "cmd_results:register_export_predictions",
        "write a run's predictions as a VLMEvalKit prediction file (XLSX/TSV/CSV) or lmms-eval samples (JSONL)",
    ),
    "run-items": (
        "cmd_results:register_run_items",
        "the items behind a report figure: one ability, category or split of a run",
    ),
    "desiderata": (
        "cmd_desiderata:register_desiderata",
        "ChEF's desiderata of the models of some runs: calibration, instruction following, robustness, "
        "in-context learning, language, hallucination",
    ),
    "judge": (
        "cmd_judge:register_judge",
        "an LLM judge's verdicts (right / partly / wrong, with a reason) on an open run's answers",
    ),
    "judge-pairs": (
        "cmd_judge:register_judge_pairs",
        "a judge model's verdicts on the arena's pairs (which answer is better), for `align pairs`",
    ),
    "gui": ("cmd_gui:register_gui", "open the desktop app (or save a screenshot of a view)"),
    "reviews": (
        "cmd_reviews:register_reviews",
        "item verdicts: give one (add), move them between annotators' copies of a workspace (export, import)",
    ),
    "check": (
        "cmd_check:register_check",
        "check the workspace file (integrity, search index, orphan images…) and repair it",
    ),
    "guidelines": (
        "cmd_team:register_guidelines",
        "a benchmark's annotation guidelines (versioned Markdown: show, set)",
    ),
    "annotators": (
        "cmd_team:register_annotators",
        "per-annotator statistics of a benchmark: verdicts, items per hour, agreement (κ, α)",
    ),
    "team": ("cmd_team:register_team", "a team's work: assignment plans with gold items, a shared folder that syncs"),
    "arena": ("cmd_arena:register_arena", "blind pairwise votes on open answers, and Bradley–Terry ratings from them"),
}


class _Commands(argparse._SubParsersAction):
    """The COMMAND positional: fills in the parser of the command named before parsing the rest with it."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.unfilled: dict[str, Callable[[], None]] = {}

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        fill = self.unfilled.pop(values[0], None)
        if fill is not None:
            fill()
        super().__call__(parser, namespace, values, option_string)


def build_parser(*, lazy: bool = False) -> argparse.ArgumentParser:
    """The parser of the whole command line; `lazy` (the `vlmdesk` command itself): each command's parser holds its
    help line only until the command line names it."""
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

            default workspace: {default_workspace_path()}

            VLMDESK_PLUGINS (module names, comma-separated) runs code: every command that asks for backends, formats
            or metrics imports those modules, --help and read-only commands included. Name only modules you trust."""),
    )
    _workspace_option(parser)
    sub = cast(_Commands, parser.add_subparsers(dest="command", metavar="COMMAND", action=_Commands))
    for name, (register, help) in COMMANDS.items():
        fill = functools.partial(_fill, _add_parser(sub, name, help), help, register)
        if lazy:
            sub.unfilled[name] = fill
        else:
            fill()
    return parser


def _fill(parser: argparse.ArgumentParser, help: str, register: str) -> None:
    module, _, function = register.partition(":")
    getattr(importlib.import_module(f"vlmdesk.{module}"), function)(functools.partial(_describe, parser, help))


def model_specs_help() -> str:
    """The closing paragraph of the --help of commands taking a model spec: every backend's syntax, and the extra
    that hf: models need (not in the base install: docs/adr/0041)."""
    from evaluator.backends import spec_help
    from evaluator.backends.hf import INSTALL_HF

    return f"model specs: {spec_help()}\n\nhf: models need the hf extra: {INSTALL_HF}"


def add_command(sub, name: str, *, help: str, examples: str, description: str | None = None, handler=None):
    """Add subcommand `name` to `sub` (an add_subparsers action): its help line, its description (default: the help
    as a sentence), its examples (one per line) and the workspace options every command takes."""
    return _describe(_add_parser(sub, name, help), help, examples=examples, description=description, handler=handler)


def _add_parser(sub, name: str, help: str) -> argparse.ArgumentParser:
    # argparse %-formats a help line ("95 % intervals"), not a description
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help.replace("%", "%%"), formatter_class=_formatter)
    return parser


def _describe(parser, help: str, *, examples: str, description: str | None = None, handler=None):
    lines = textwrap.dedent(examples).strip("\n")
    parser.description = description if description is not None else help[:1].upper() + help[1:] + "."
    parser.epilog = ("examples:\n" if "\n" in lines else "example:\n") + textwrap.indent(lines, "  ")
    _workspace_option(parser)
    if handler is not None:
        parser.set_defaults(handler=handler)
    return parser


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
    args = build_parser(lazy=True).parse_args(argv)
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
