"""Every command and subcommand explains each of its arguments and shows at least one example."""

import argparse

from vlmdesk.cli import build_parser
from vlmdesk.cli_reference import walk as _parsers


def test_every_argument_has_help_and_every_command_an_example():
    missing = []
    for path, parser in _parsers(build_parser()):
        missing += [
            f"{' '.join(path)} {a.option_strings or a.dest}"
            for a in parser._actions
            if a.help is None and not isinstance(a, argparse._SubParsersAction)
        ]
        if path and "example" not in (parser.epilog or ""):
            missing.append(f"{' '.join(path)}: no example")
    assert missing == []
    assert len(list(_parsers(build_parser()))) > 25


def test_help_of_every_command_and_subcommand_prints(capsys):
    """`vlmdesk … --help` for every parser in the tree (argparse %-formats help lines: "95 % intervals" raised)."""
    paths = [path for path, _ in _parsers(build_parser())]
    for path in paths:
        try:
            build_parser().parse_args([*path, "--help"])
        except SystemExit as exc:
            assert exc.code == 0, path
        out = capsys.readouterr().out
        assert out.startswith("usage: vlmdesk"), path
        assert "examples:" in out or "example:" in out or not path, path
    assert ("arena", "ratings") in paths and len(paths) > 50


def test_run_help_names_the_prompt_presets_and_keeps_the_template_alias(capsys):
    try:
        build_parser().parse_args(["run", "--help"])
    except SystemExit:
        pass
    out = " ".join(capsys.readouterr().out.split())
    assert "--prompt PRESET|FILE" in out and "vlmevalkit:MODEL_TYPE" in out and "vlmdesk (default" in out
    assert "--prompt-template FILE a template file (the same as --prompt FILE)" in out
    assert "--prompt vlmevalkit" in out  # an example
