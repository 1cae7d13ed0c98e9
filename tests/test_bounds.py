"""Every number is bounded at the door, and a bad stored value never makes the workspace unreadable.

Issue 12, items 3 and 6: `--limit 99999999999999999999` printed an OverflowError and stored a failed run that then
stopped `runs --scores`, `report` and the app; huge ids in report / run-items / export-predictions / rescore /
--resume, a huge --seed or items --limit, and a template `{question:>999999999}` gave tracebacks.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from db import open_workspace, runs
from tests.backend_plugins import slow_backend  # noqa: F401 (fixture)
from vlmdesk.cli import main
from vlmdesk.demo import ensure_demo

HUGE = "99999999999999999999"


@pytest.fixture
def ws_path(tmp_path):
    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    assert main(["--workspace", str(path), "run", "--bench", "demo", "--model", "baseline:first", "--limit", "6"]) == 0
    return path


def cli(capsys, path, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = main(["--workspace", str(path), *map(str, args)])
    except SystemExit as exc:  # argparse's errors
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def stored_runs(path) -> list[tuple]:
    return sqlite3.connect(path).execute("SELECT id, status, config FROM runs ORDER BY id").fetchall()


RUN = ["run", "--bench", "demo", "--model", "baseline:random"]


@pytest.mark.parametrize(
    "args",
    [
        [*RUN, "--limit", HUGE],
        [*RUN, "--batch-size", HUGE],
        [*RUN, "--max-new-tokens", HUGE],
        [*RUN, "--seed", HUGE],
        [*RUN, "--seed", "-1"],
        [*RUN, "--limit", "1" * 5000],
        [*RUN, "--limit", "0"],
        ["run", "--resume", HUGE],
        ["run", "--resume", "0"],
        ["report", HUGE],
        ["report", "1", HUGE],
        ["run-items", HUGE],
        ["export-predictions", HUGE, "--out", "x.tsv"],
        ["rescore", HUGE, "--extractor", "rules"],
        ["items", "demo", "--limit", HUGE],
        ["align", "sample", "--run", HUGE, "--size", "1", "--name", "s"],
        ["align", "sample", "--run", "1", "--size", HUGE, "--name", "s"],
        ["align", "sample", "--run", "1", "--size", "1", "--seed", HUGE, "--name", "s"],
        ["qc", "consensus", "--bench", "demo", "--run", HUGE],
        ["qc", "text-only", "--bench", "demo", "--model", "baseline:first", "--seed", HUGE],
        [
            "pope",
            "build",
            "--annotations",
            "a.json",
            "--images",
            ".",
            "--setting",
            "random",
            "--images-count",
            HUGE,
            "--out",
            "o.jsonl",
        ],
    ],
)
def test_huge_or_out_of_range_numbers_are_one_line_errors_and_store_nothing(ws_path, capsys, args):
    before = stored_runs(ws_path)
    code, out, err = cli(capsys, ws_path, *args)
    assert code == 2, (out, err)
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert "must be at" in err or "is not" in err
    assert stored_runs(ws_path) == before


def test_the_overflowing_limit_of_the_issue_through_the_real_command(ws_path):
    """The exact command of the report, as a process: one line, exit 2, no run stored, workspace still readable."""
    env_cmd = [sys.executable, "-m", "vlmdesk", "--workspace", str(ws_path)]
    done = subprocess.run([*env_cmd, *RUN, "--limit", HUGE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "OverflowError" not in done.stderr
    assert len(stored_runs(ws_path)) == 1
    for args in (["runs", "--scores"], ["report", "1"]):
        assert subprocess.run([*env_cmd, *args], capture_output=True, timeout=120).returncode == 0


@pytest.mark.parametrize(
    "spec",
    [
        "baseline:random?seed=" + HUGE,
        "baseline:random?delay_ms=5",
        "slow:random?delay_ms=inf",
        "slow:random?delay_ms=nan",
        "openai:m@http://127.0.0.1:9/v1?concurrency=" + HUGE,
        "openai:m@http://127.0.0.1:9/v1?timeout=nan",
        "openai:m@http://127.0.0.1:9/v1?timeout=1e999",
        "openai:m@http://127.0.0.1:9/v1?retries=" + HUGE,
        "openai:m@http://127.0.0.1:9/v1?temperature=-3",
        "hf:./nowhere?batch_size=" + HUGE,
    ],
)
@pytest.mark.usefixtures("slow_backend")
def test_model_spec_options_are_range_checked_before_a_run_exists(ws_path, capsys, spec):
    code, _, err = cli(capsys, ws_path, "run", "--bench", "demo", "--model", spec)
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert len(stored_runs(ws_path)) == 1


@pytest.mark.parametrize(
    "template, why",
    [
        ("{question:>999999999}\n{options}", "width 999999999 is larger than 1000"),
        ("{question:.99999}\n{options}", "precision"),
        ("{question:d}\n{options}", "format 'd'"),
        ("{question:{hint}}\n{options}", "format '{hint}'"),
        ("{question!x}\n{options}", "conversion"),
        ("{question[0]}\n{options}", "unknown field"),
        ('{"en": "{question:>99999999999999999999}{options}"}', "larger than 1000"),
    ],
)
def test_template_fields_are_checked_when_the_template_is_read(ws_path, capsys, tmp_path, template, why):
    path = tmp_path / "t.txt"
    path.write_text(template)
    code, _, err = cli(capsys, ws_path, *RUN, "--prompt-template", path)
    assert code == 2 and err.startswith(f"error: {path}: ") and why in err and err.count("\n") == 1, err
    assert len(stored_runs(ws_path)) == 1


def test_a_template_within_bounds_runs_and_is_stored(ws_path, capsys, tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("{question:<10}|{hint!r}\n{options:>5}\nAnswer with {letters}.")
    code, out, err = cli(capsys, ws_path, *RUN, "--limit", "2", "--prompt-template", path, "--json")
    assert code == 0, err
    with open_workspace(ws_path) as ws:
        [pred, *_] = runs.predictions_of(ws, json.loads(out)["run_id"])
    assert "|''\n" in pred.prompt or "|'" in pred.prompt


def test_a_huge_template_file_or_a_device_is_refused(ws_path, capsys, tmp_path):
    big = tmp_path / "big.txt"
    big.write_text("{question}{options}" + " " * 100_000)
    for path, why in ((big, "larger than"), ("/dev/zero", "regular file")):
        code, _, err = cli(capsys, ws_path, *RUN, "--prompt-template", path)
        assert code == 2 and why in err and err.count("\n") == 1, err


# -- a bad stored value never makes the workspace unreadable ------------------------------------------------------

BAD_CONFIGS = [
    "{not json",
    '{"limit": 99999999999999999999999999, "full_passes": "yes", "seed": -5}',
    '{"limit": 1e999, "batch_size": "eight", "max_new_tokens": null}',
    '{"limit": NaN}',
    "[1, 2, 3]",
    "[" * 100_000 + "]" * 100_000,
    '{"limit": -3, "strategy": 7, "text_only": 2}',
]


@pytest.mark.parametrize("garbage", BAD_CONFIGS, ids=range(len(BAD_CONFIGS)))
def test_a_garbage_stored_config_is_shown_as_such_and_never_stops_reading(ws_path, capsys, tmp_path, garbage):
    with sqlite3.connect(ws_path) as conn:
        conn.execute("UPDATE runs SET config = ?, versions = ? WHERE id = 1", (garbage, "{broken"))
    code, out, err = cli(capsys, ws_path, "runs")
    assert code == 0 and "run 1: unreadable stored value(s): config" in out, err
    code, out, _ = cli(capsys, ws_path, "runs", "--scores", "--json")
    [listed] = json.loads(out)
    assert code == 0 and listed["status"] == "finished" and listed["problems"] and listed["vanilla"] is not None
    code, out, err = cli(capsys, ws_path, "report", "1")
    assert code == 0 and "unreadable stored value(s)" in out and "Overall" in out, err
    code, out, _ = cli(capsys, ws_path, "report", "1", "--json")
    assert code == 0 and json.loads(out)["problems"]
    assert cli(capsys, ws_path, "run-items", "1")[0] == 0
    assert cli(capsys, ws_path, "export-predictions", "1", "--out", tmp_path / "p.tsv")[0] == 0
    # A damaged run is shown, never executed: resuming it is refused in one line and changes nothing.
    with sqlite3.connect(ws_path) as conn:
        conn.execute("UPDATE runs SET status = 'interrupted' WHERE id = 1")
    before = stored_runs(ws_path)
    code, _, err = cli(capsys, ws_path, "run", "--resume", "1")
    assert code == 2 and "stored settings are unreadable" in err and err.count("\n") == 1, err
    assert stored_runs(ws_path) == before


def test_a_garbage_stored_template_refuses_resume_without_failing_the_run(ws_path, capsys):
    with sqlite3.connect(ws_path) as conn:
        conn.execute(
            'UPDATE runs SET prompt_template = \'{"en": "{question:>999999999}"}\', '
            "status = 'interrupted' WHERE id = 1"
        )
    code, _, err = cli(capsys, ws_path, "run", "--resume", "1")
    assert code == 2 and "cannot be resumed" in err and "larger than 1000" in err
    assert stored_runs(ws_path)[0][1] == "interrupted"
