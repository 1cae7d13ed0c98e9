"""One base for expected errors: every error class of vlmdesk is a UserError (exit 2) or an EnvironmentFault
(exit 1), and a command never turns an arbitrary ValueError or LookupError into a usage error — a bug inside one
of the commands that used to do so is an internal error naming the log (real `vlmdesk` subprocesses)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

from db.errors import EnvironmentFault, InvalidInput, NotFound, UserError
from tests.test_errors import one_line_error, vlmdesk

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("db", "evaluator", "annotation", "vlmdesk")


def _error_classes():
    for layer in LAYERS:
        package = importlib.import_module(layer)
        for info in pkgutil.walk_packages(package.__path__, f"{layer}."):
            if info.name.endswith("__main__"):  # importing it runs the command
                continue
            module = importlib.import_module(info.name)
            for name, cls in inspect.getmembers(module, inspect.isclass):
                if cls.__module__ == info.name and issubclass(cls, Exception) and not name.startswith("_"):
                    yield cls


def test_every_error_class_is_a_user_error_or_an_environment_fault():
    found = {cls.__name__: cls for cls in _error_classes()}
    assert {
        "NotLabelledYet",
        "QCError",
        "RescoreError",
        "ExportError",
        "BackendError",
        "InputError",
        "RunBusy",
        "RunLost",
        "UsageError",
        "InvalidInput",
        "NotFound",
    } <= set(found)
    stray = [
        name
        for name, cls in found.items()
        if cls not in (UserError, EnvironmentFault) and not issubclass(cls, (UserError, EnvironmentFault))
    ]
    assert stray == []
    assert not issubclass(found["NotLabelledYet"], OSError)  # it was a PermissionError: an I/O failure it is not
    assert issubclass(found["RunBusy"], UserError) and issubclass(found["RunLost"], EnvironmentFault)
    assert issubclass(found["BackendError"], EnvironmentFault)


def test_plain_value_and_lookup_errors_are_not_user_errors():
    assert not issubclass(ValueError, UserError) and not issubclass(LookupError, UserError)
    assert issubclass(InvalidInput, ValueError) and issubclass(NotFound, LookupError)  # callers that catch those


# A bug planted in the layer under a command that used to catch ValueError / LookupError around it.
_PLANTED = """
import sys
import {module} as target
def broken(*args, **kwargs):
    raise {error}("a bug, not bad input")
target.{function} = broken
from vlmdesk import cli
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize(
    "module, function, error, argv",
    [
        (
            "evaluator.analysis.pope_report",
            "score_files",
            "ValueError",
            ["pope", "score", "--questions", "q", "--answers", "a"],
        ),
        ("evaluator.analysis.report", "group_items", "LookupError", ["run-items", "1"]),
        ("evaluator.analysis.report", "run_report", "KeyError", ["report", "1"]),
        ("evaluator.engine.model_check", "validate_spec", "ValueError", ["models", "add", "m", "baseline:first"]),
        ("annotation.alignment", "alignment_report", "ValueError", ["align", "report"]),
    ],
)
def test_a_bug_under_a_command_is_an_internal_error_not_a_usage_error(tmp_path, module, function, error, argv):
    if argv[0] in ("report", "run-items", "align"):
        made = vlmdesk("--workspace", str(tmp_path / "ws.sqlite"), "demo")
        assert made.returncode == 0, made.stderr
        ran = vlmdesk(
            "--workspace",
            str(tmp_path / "ws.sqlite"),
            "run",
            "--bench",
            "demo",
            "--model",
            "baseline:first",
            "--limit",
            "4",
            "--json",
        )
        assert ran.returncode == 0, ran.stderr
        if argv[0] == "align":
            made = vlmdesk(
                "--workspace",
                str(tmp_path / "ws.sqlite"),
                "align",
                "sample",
                "--run",
                "1",
                "--size",
                "2",
                "--name",
                "s",
            )
            assert made.returncode == 0, made.stderr
    proc = vlmdesk(
        "--workspace",
        str(tmp_path / "ws.sqlite"),
        *argv,
        code=_PLANTED.format(module=module, function=function, error=error),
        env={"VLMDESK_LOG_DIR": str(tmp_path / "logs")},
    )
    assert proc.returncode == 1
    assert f"internal error: {error}: " in one_line_error(proc)
    assert (tmp_path / "logs" / "vlmdesk.log").is_file()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run-items", "99"], "error: no run 99"),
        (["report", "1", "--scoring", "nope"], "error: run 1 has no scoring 'nope'"),
        (["align", "report", "--set", "nope"], "error: no adjudication set named 'nope'"),
        (["run", "--bench", "demo", "--model", "baseline:first", "--extractor", "regex"], "error: unknown extractor"),
        (["models", "add", "bad:name", "baseline:first"], "error: model name 'bad:name'"),
    ],
)
def test_expected_errors_stay_one_line_exit_2(tmp_path, argv, message):
    ws = str(tmp_path / "ws.sqlite")
    assert vlmdesk("--workspace", ws, "demo").returncode == 0
    assert (
        vlmdesk(
            "--workspace", ws, "run", "--bench", "demo", "--model", "baseline:first", "--limit", "3", "--json"
        ).returncode
        == 0
    )
    proc = vlmdesk("--workspace", ws, *argv)
    assert proc.returncode == 2
    assert one_line_error(proc).startswith(message)
