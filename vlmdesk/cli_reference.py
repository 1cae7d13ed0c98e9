"""The command reference, docs/reference/cli.md, written from the CLI's own argparse definitions.

`python -m vlmdesk.cli_reference` writes it; tests/test_cli_reference.py renders it in memory and fails when the
committed file differs. Every command and subcommand gets its `--help` as argparse formats it, at a fixed width (not
the terminal's), with what depends on the machine left out: VLMDESK_PLUGINS' entries and the default workspace's path.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

from db.workspace import default_workspace_path
from vlmdesk.cli import build_parser

WIDTH = 100
"""Columns of the rendered help (argparse otherwise takes $COLUMNS or the terminal's)."""

PYTHON = (3, 11)
"""The Python whose argparse writes the file: the layout moves between versions (3.13 writes `-o, --out FILE` where
3.11 writes `-o FILE, --out FILE`), so the file is written, and held to the parsers, by this one."""

OUTPUT = Path(__file__).resolve().parents[1] / "docs" / "reference" / "cli.md"
COMMAND = "python -m vlmdesk.cli_reference"
_DEFAULT_WORKSPACE = "USER_DATA_DIR/workspace.sqlite"


def walk(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser of the tree, depth first in the order `--help` lists them, with the words that reach it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, (*path, name))


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """The CLI's formatter (vlmdesk.cli._formatter) at WIDTH columns. A prose paragraph of a description or epilog with
    a line longer than that, which a terminal wraps by itself, is wrapped at WIDTH too; indented lines (the examples,
    one shell line each) stay whole."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=32, width=WIDTH)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out: list[str] = []
        paragraph: list[str] = []  # consecutive prose lines: kept as written unless one is too long

        def flush() -> None:
            if any(len(indent + line) > WIDTH for line in paragraph):
                out.extend(textwrap.wrap(" ".join(paragraph), WIDTH, initial_indent=indent, subsequent_indent=indent))
            else:
                out.extend(indent + line for line in paragraph)
            paragraph.clear()

        for line in text.splitlines():
            if line and not line[:1].isspace():
                paragraph.append(line)
                continue
            flush()
            out.append(indent + line if line else "")
        flush()
        return "\n".join(out)


def render() -> str:
    """The whole reference as Markdown: a contents list, then one section per command with its help."""
    saved = {name: os.environ.pop(name, None) for name in ("VLMDESK_PLUGINS", "VLMDESK_WORKSPACE")}
    try:
        machine_path = str(default_workspace_path())
        parsers = list(walk(build_parser()))
        helps = []
        for _, parser in parsers:
            parser.formatter_class = _Formatter
            for text in ("description", "epilog"):  # before wrapping, which could cut a long path
                if getattr(parser, text):
                    setattr(parser, text, getattr(parser, text).replace(machine_path, _DEFAULT_WORKSPACE))
            helps.append(parser.format_help().rstrip() + "\n")
    finally:
        os.environ.update({name: value for name, value in saved.items() if value is not None})

    intro = (
        f"Written by `{COMMAND}` from the argparse definitions of every command (`COMMANDS` in vlmdesk/cli.py): "
        "do not edit it by hand; change a command's help and run that command again (tests/test_cli_reference.py "
        f"fails while this file is out of date). Each section is the command's `--help` as argparse formats it at "
        f"{WIDTH} columns; `{_DEFAULT_WORKSPACE}` stands for the default workspace's path on your machine, and "
        "backends or metrics added through `VLMDESK_PLUGINS` are not listed. The user guide explains the tasks "
        "behind the commands: [docs/guide](../guide/README.md)."
    )
    out = [
        "# Command reference",
        "",
        *textwrap.wrap(intro, 118, break_on_hyphens=False),
        "",
        "## Commands",
        "",
    ]
    for path, _ in parsers:
        title = " ".join(("vlmdesk", *path))
        out.append(f"{'  ' * max(len(path) - 1, 0)}- [{title}](#{title.replace(' ', '-')})")
    for (path, _), text in zip(parsers, helps):
        out += ["", f"{'#' * min(len(path) + 2, 4)} {' '.join(('vlmdesk', *path))}", "", "```text", text + "```"]
    return "\n".join(out) + "\n"


def main() -> int:
    if sys.version_info[:2] != PYTHON:
        print(
            f"{COMMAND}: run it with Python {'.'.join(map(str, PYTHON))} (argparse's layout differs)", file=sys.stderr
        )
        return 2
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(render(), encoding="utf-8")
    print(f"wrote {OUTPUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
