"""The commands that read a few rows start without the heavy libraries (issue 34): each runs in a fresh process of the
real command line on a real workspace, and the packages it loaded are compared with an allow-list (and the project's
own modules with what the command's parser and work need: `vlmdesk` builds only the named command's parser).

An allow-list rather than a list of forbidden libraries: a deny-list names what is heavy today (numpy, Pillow…) and
lets a new dependency slip in unseen, while any package outside this list fails here until someone decides it belongs
on every command's start. The standard library is not checked (its modules differ between Python versions), nor what
a bare interpreter loads on this machine (site hooks), measured beside it in the same way."""

import json
import subprocess
import sys

import pytest

from annotation import reviews
from db import catalog, open_workspace
from vlmdesk.cli import COMMANDS, build_parser, main

pytestmark = pytest.mark.base

# sqlite-utils opens the workspace: it and what it imports (click, python-dateutil and its six, pluggy, sqlite-fts4)
# come with every command that reads one; platformdirs finds the default workspace and log folders.
ALLOWED = {"sqlite_utils", "click", "dateutil", "six", "pluggy", "sqlite_fts4", "platformdirs"}
PROJECT = {"vlmdesk", "db", "evaluator", "annotation", "gui"}  # gui: only its Qt-free names (test_layers checks Qt)
# A run's settings in a list's words, and its prompt's (`runs --json`: compared with the default templates).
LISTING = {"evaluator.engine.run_words", "evaluator.engine.prompt_presets", "evaluator.engine.prompts"}

# Prints the modules outside the standard library loaded by the end of `vlmdesk.cli.main(argv)` (or by a bare
# interpreter without argv), as the last line of standard output, after whatever the command printed.
_PROBE = """
import json, sys
argv = sys.argv[1:]
code = 0
if argv:
    from vlmdesk.cli import main
    try:
        code = main(argv)
    except SystemExit as exc:  # --help
        code = exc.code
sys.stdout.flush()
modules = [m for m in sys.modules if m.split(".")[0] not in sys.stdlib_module_names and not m.startswith("_")]
print("\\n" + json.dumps(sorted(modules)))
sys.exit(code)
"""

LIGHT_COMMANDS = [
    (["--help"], "COMMAND"),
    (["run", "--help"], "--likelihood-score"),
    (["report", "--help"], "--groups"),
    (["compare", "--help"], "McNemar"),
    (["runs"], "baseline:random"),
    (["runs", "--json"], '"model": "baseline:random"'),
    (["benchmarks"], "demo-pope"),
    (["show", "demo", "1"], "question:"),
    (["check"], "healthy"),
    (["reviews", "export"], '"verdict": "ok"'),
]


def _loaded_modules(*argv: str) -> tuple[int, str, set[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, encoding="utf-8", timeout=120
    )
    output, _, last = proc.stdout.rstrip("\n").rpartition("\n")
    return proc.returncode, output + proc.stderr, set(json.loads(last))


def _loaded(*argv: str) -> tuple[int, str, set[str]]:
    """The top-level packages loaded."""
    code, output, modules = _loaded_modules(*argv)
    return code, output, {m.split(".")[0] for m in modules}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("light") / "ws.sqlite")
    assert main(["--workspace", path, "demo"]) == 0
    assert main(["--workspace", path, "run", "--bench", "demo", "--model", "baseline:random", "--limit", "3"]) == 0
    with open_workspace(path) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
        assert bench is not None
        reviews.add_review(ws, next(catalog.iter_items(ws, bench.id)).id, "ana", "ok")
    return path


@pytest.fixture(scope="module")
def bare() -> set[str]:
    """What a bare interpreter loads here before any vlmdesk code (sitecustomize, an editable install's finder…)."""
    code, output, packages = _loaded()
    assert code == 0, output
    return packages


@pytest.mark.parametrize(("argv", "expected"), LIGHT_COMMANDS, ids=[" ".join(a) for a, _ in LIGHT_COMMANDS])
def test_a_light_command_loads_only_the_workspace_library(workspace, bare, argv, expected):
    code, output, modules = _loaded_modules("--workspace", workspace, *argv)
    assert code == 0, output
    assert expected in output  # it did its work: a command that failed early would load little too
    assert sorted({m.split(".")[0] for m in modules} - bare - PROJECT - ALLOWED) == []
    # Of the project's modules: only the named command's own (and cmd_data's bench_or_fail), the top-level help
    # nothing beyond the command table and the workspace; the engine and the model backends only for `run --help`,
    # whose text lists every backend's spec syntax (lists take a run's words from LISTING, not the engine).
    named = {f"vlmdesk.{COMMANDS[argv[0]][0].partition(':')[0]}", "vlmdesk.cmd_data"} if argv[0] in COMMANDS else set()
    assert {m for m in modules if m.startswith("vlmdesk.cmd_")} <= named
    if argv == ["--help"]:
        assert not {m for m in modules if m.split(".")[0] in ("evaluator", "annotation", "gui")}
    if argv != ["run", "--help"]:
        heavy = {m for m in modules if m.startswith(("evaluator.engine.", "evaluator.backends"))}
        assert heavy <= LISTING


def test_the_probe_sees_the_heavy_libraries_of_a_command_that_uses_them(workspace, bare, tmp_path):
    # `report --plot` draws with matplotlib: the same probe must see it, or the test above proves nothing.
    chart = tmp_path / "chart.png"
    code, output, packages = _loaded("--workspace", workspace, "report", "1", "--plot", str(chart))
    assert code == 0, output
    assert chart.stat().st_size > 0
    assert {"matplotlib", "numpy"} <= packages - bare - ALLOWED


def test_a_command_line_fills_in_only_the_parser_of_the_command_it_names(capsys):
    # `vlmdesk` parses lazily (build_parser(lazy=True)): each command's --help must read as the whole parser's does.
    for name in COMMANDS:
        texts = []
        for parser in (build_parser(), build_parser(lazy=True)):
            with pytest.raises(SystemExit):
                parser.parse_args([name, "--help"])
            texts.append(capsys.readouterr().out)
        assert texts[0] == texts[1], name
    parser = build_parser(lazy=True)
    parser.parse_args(["runs"])
    commands = next(a for a in parser._actions if a.dest == "command")
    assert set(commands.unfilled) == set(COMMANDS) - {"runs"}
