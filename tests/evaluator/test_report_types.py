"""Run reports as typed results: the attributes hold what `report --json` prints, and `to_json()` keeps the keys
of the documented JSON in their order (users and scripts read it), for multiple-choice and POPE runs."""

from __future__ import annotations

import json

import pytest

from db import open_workspace
from evaluator.analysis.report import McqFigures, PopeFigures, RunSummary, Scores, run_report, run_summary
from evaluator.formats.importers import import_benchmark
from evaluator.scoring.pope import PopeMetrics
from tests.evaluator.test_runner import write_jsonl_bench
from vlmdesk.cli import main
from vlmdesk.demo import ensure_demo

pytestmark = pytest.mark.base  # also run in the base install (.ci/base-install)

HEAD = [
    "run_id",
    "benchmark",
    "model",
    "strategy",
    "status",
    "extractor",
    "questions",
    "scoring",
    "scoring_source",
    "scoring_summary",
    "scorings",
    "model_calls",
    "tokens",
    "undecided",
    "created_at",
    "finished_at",
    "config",
    "problems",
]
MCQ = [
    "scored_questions",
    "unscored_questions",
    "overall",
    "by_l2",
    "by_category",
    "by_split",
    "consistency",
    "circular_unasked_items",
    "circular_upper",
    "undecided_vanilla",
]
POPE = ["setting", "answered", "pope", "overall"]
METRICS = ["questions", "tp", "fp", "tn", "fn", "unknown", "accuracy", "precision", "recall", "f1", "yes_ratio"]
METRICS += ["accuracy_ci", "precision_ci", "recall_ci", "f1_ci"]  # each figure's 95 % interval (issue 38)


def _cli_json(capsys, *args):
    assert main([str(a) for a in args]) == 0
    return json.loads(capsys.readouterr().out)


def test_mcq_report_attributes_and_json(tmp_path, capsys):
    ws_path = tmp_path / "ws.sqlite"
    with open_workspace(ws_path) as ws:
        import_benchmark(ws, write_jsonl_bench(tmp_path / "b.jsonl", 15), fmt="jsonl", name="b")
    w = ["--workspace", ws_path]
    _cli_json(capsys, *w, "run", "--bench", "b", "--model", "baseline:random", "--full-passes", "--json")
    printed = _cli_json(capsys, *w, "report", "1", "--json")
    assert list(printed) == HEAD + MCQ
    assert list(printed["overall"]) == ["questions", "vanilla", "circular", "vanilla_ci", "circular_ci"]
    with open_workspace(ws_path) as ws:
        report = run_report(ws, 1)
        summary = run_summary(ws, 1)
    assert isinstance(report.figures, McqFigures) and report.pope is None
    assert isinstance(report.mcq.overall, Scores) and report.mcq.overall.questions == 15
    assert report.strategy == "circular" and report.status == "finished" and report.scorings == ("run",)
    assert report.mcq.consistency == printed["consistency"] and report.mcq.consistency is not None
    assert json.loads(json.dumps(report.to_json())) == printed
    assert isinstance(summary, RunSummary) and summary.vanilla == report.mcq.overall.vanilla
    assert summary.pope_f1 is None and summary.passes == report.model_calls


def test_pope_reports_carry_their_mean_and_metrics(tmp_path, capsys):
    ws_path = tmp_path / "ws.sqlite"
    with open_workspace(ws_path) as ws:
        ensure_demo(ws)
    w = ["--workspace", ws_path]
    pope_bench = next(b["name"] for b in _cli_json(capsys, *w, "benchmarks", "--json") if b["kind"] == "yesno")
    for batch_size in (4, 5):  # the same settings (batch size aside): one group, asked twice
        _cli_json(
            capsys,
            *w,
            "run",
            "--bench",
            pope_bench,
            "--model",
            "baseline:random",
            "--batch-size",
            batch_size,
            "--new",
            "--json",
        )
    one = _cli_json(capsys, *w, "report", "1", "--json")
    assert list(one) == HEAD + POPE + ["pope_mean"] and one["pope_mean"] is None
    assert list(one["pope"]) == ["official", "strict"] and list(one["pope"]["strict"]) == METRICS
    both = _cli_json(capsys, *w, "report", "1", "2", "--json")
    # Two runs of one setting: a group without a mean, saying why.
    assert both[0]["pope_mean"] == both[1]["pope_mean"]
    assert both[0]["pope_mean"]["settings"] is None and "appears in runs 1, 2" in both[0]["pope_mean"]["note"]
    with open_workspace(ws_path) as ws:
        report = run_report(ws, 1)
    assert isinstance(report.figures, PopeFigures) and report.mcq is None
    assert isinstance(report.pope.pope["official"], PopeMetrics)
    strict = {**report.pope.pope["strict"].to_json(), **report.pope.intervals["strict"].to_json()}
    assert json.loads(json.dumps(strict)) == one["pope"]["strict"]
    assert json.loads(json.dumps(report.to_json())) == one  # its own JSON: pope_mean None when none is attached
