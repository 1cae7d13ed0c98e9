"""docs/reference/cli.md is what `python -m vlmdesk.cli_reference` writes from the parsers as they are now, whatever
the machine: the terminal's width, the default workspace's path and VLMDESK_PLUGINS change nothing in it."""

import argparse
import re
import sys

import pytest

from tests.backend_plugins import slow_backend  # noqa: F401 (fixture)
from vlmdesk.cli import build_parser
from vlmdesk.cli_reference import COMMAND, OUTPUT, PYTHON, WIDTH, render, walk

written_here = pytest.mark.skipif(
    sys.version_info[:2] != PYTHON, reason="the reference is written with another Python's argparse layout"
)


@written_here
def test_the_committed_reference_is_the_one_the_parsers_give():
    committed = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
    assert committed == render(), f"docs/reference/cli.md is out of date: run `{COMMAND}` and commit the file"


def test_every_command_and_subcommand_has_a_section_with_its_options(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    text = render()
    sections = dict(re.findall(r"^#+ (vlmdesk[^\n]*)\n\n```text\n(.*?)```$", text, re.MULTILINE | re.DOTALL))
    paths = list(walk(build_parser()))
    assert len(sections) == len(paths) > 50
    for path, parser in paths:
        title = " ".join(("vlmdesk", *path))
        section = sections[title]
        assert section.startswith(f"usage: {title} ")
        assert "example" in section or not path
        for action in parser._actions:
            if action.option_strings and action.help != argparse.SUPPRESS:
                assert action.option_strings[-1] in section, (title, action.option_strings)
        assert f"- [{title}](#{title.replace(' ', '-')})" in text  # in the contents, linked to its heading
        # the width is the generator's, not $COLUMNS': only the examples' shell lines (indented) run past it
        assert all(len(line) <= WIDTH for line in section.splitlines() if not line.startswith(" ")), title


@written_here
def test_the_machine_leaves_no_trace(monkeypatch, tmp_path, slow_backend):  # noqa: F811 (fixture)
    monkeypatch.setenv("VLMDESK_WORKSPACE", str(tmp_path / "mine.sqlite"))
    monkeypatch.setenv("COLUMNS", "250")
    text = render()
    assert "default workspace: USER_DATA_DIR/workspace.sqlite" in text
    assert str(tmp_path) not in text and "slow:" not in text
    assert text == OUTPUT.read_text(encoding="utf-8")
