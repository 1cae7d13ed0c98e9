"""A thinking model's run in `vlmdesk report` and `vlmdesk runs` (issue 36): the truncation line next to the
figures, reasoning tokens beside prompt and completion tokens, and the settings that decided the answers (system
prompt elided, reasoning rule, chat template kwargs, budgets, the spec's sampling and processor options), in text
and JSON; read from kept counts, so what they cost does not grow with the run's passes."""

from __future__ import annotations

import json

from db import open_workspace, runs
from evaluator.analysis.report import AnswerSettings, answer_settings, describe_truncation, run_report
from tests.sqlite_steps import counting_steps
from tests.thought_runs import SETTINGS, kind_of, thinking_workspace
from vlmdesk.cli import main


def _cli(capsys, *args) -> str:
    assert main([str(a) for a in args]) == 0
    return capsys.readouterr().out


def _expected_cuts(ws, run_id: int) -> tuple[int, int, int]:
    passes = runs.predictions_of(ws, run_id)
    return (
        sum(p.truncated for p in passes),
        sum(p.stage == "truncated" for p in passes),
        sum(p.truncated and p.correct is False for p in passes),
    )


def test_report_text_and_json_say_the_cut_off_passes_tokens_and_settings(tmp_path, capsys):
    path, run_id = thinking_workspace(tmp_path)
    with open_workspace(path) as ws:
        truncated, in_thought, wrong = _expected_cuts(ws, run_id)
        passes = runs.predictions_of(ws, run_id)
    assert truncated > in_thought > 0  # both kinds are there
    text = _cli(capsys, "--workspace", path, "report", run_id)
    lines = text.splitlines()
    cut = next(line for line in lines if line.startswith("truncated: "))
    assert cut.startswith(f"truncated: {truncated} of {len(passes)} ({in_thought} inside the thought)")
    assert f"{in_thought} gave no answer (counted wrong)" in cut
    assert f"{truncated - in_thought} cut after the thought are read as usual" in cut
    assert f"read as usual ({wrong - in_thought} of them wrong)" in cut  # every one cut inside the thought is wrong
    reasoning = sum(p.reasoning_tokens or 0 for p in passes)
    completion = sum(p.completion_tokens or 0 for p in passes)
    assert f"+ {completion:,} completion ({reasoning:,} of them reasoning) over {len(passes)} passes" in text
    settings = next(line for line in lines if line.startswith("settings: "))
    for part in ("max new tokens 32,768", "thinking budget 8,192", 'chat template {"enable_thinking": true}'):
        assert part in settings
    assert "temperature 0.6" in settings and "top_p 0.95" in settings and "max_pixels 1003520" in settings
    assert "concurrency" not in settings  # the transport's, not an answer's setting
    assert (
        'system "You are a careful visual assistant.' in settings and f"({len(SETTINGS['system'])} chars)" in settings
    )
    # Next to the figures: above the scoring table, under the counts.
    assert lines.index(cut) < next(i for i, line in enumerate(lines) if line.startswith("Overall"))

    printed = json.loads(_cli(capsys, "--workspace", path, "report", run_id, "--json"))
    assert printed["truncation"] == {
        "truncated": truncated,
        "in_thought": in_thought,
        "wrong": wrong,
        "passes": len(passes),
    }
    assert printed["tokens"]["reasoning"] == reasoning
    assert printed["settings"]["system"] == SETTINGS["system"]  # whole in JSON
    assert printed["settings"]["thinking_budget"] == 8192
    assert printed["settings"]["spec_options"] == {"temperature": "0.6", "top_p": "0.95", "max_pixels": "1003520"}
    keys = list(printed)
    assert keys.index("tokens") + 1 == keys.index("truncation") and keys.index("config") + 1 == keys.index("settings")


def test_a_run_without_thoughts_reads_as_before(tmp_path, capsys):
    path, _ = thinking_workspace(tmp_path)
    text = _cli(capsys, "--workspace", path, "report", 1)
    assert "truncated" not in text and "settings:" not in text
    printed = json.loads(_cli(capsys, "--workspace", path, "report", 1, "--json"))
    assert "truncation" not in printed and "settings" not in printed


def test_runs_lists_the_settings_and_cut_off_passes_compactly(tmp_path, capsys):
    path, run_id = thinking_workspace(tmp_path)
    with open_workspace(path) as ws:
        truncated, in_thought, wrong = _expected_cuts(ws, run_id)
        cut = runs.truncation(ws, run_id)
    text = _cli(capsys, "--workspace", path, "runs")
    mine = [line for line in text.splitlines() if line.startswith(f"run {run_id}: ")]
    assert any("thinking budget 8,192" in line and "reasoning" not in line for line in mine)  # auto: the default
    assert f"run {run_id}: {describe_truncation(cut)}" in mine
    assert not any(line.startswith("run 1: ") for line in text.splitlines())
    listed = {r["run_id"]: r for r in json.loads(_cli(capsys, "--workspace", path, "runs", "--json"))}
    assert listed[run_id]["truncation"] == {
        "truncated": truncated,
        "in_thought": in_thought,
        "wrong": wrong,
        "passes": cut.passes,
    }
    assert listed[run_id]["settings"]["chat_template_kwargs"] == SETTINGS["chat_template_kwargs"]
    assert listed[1]["truncation"] is None and listed[1]["settings"]["spec_options"] == {}


def test_settings_read_bad_stored_values_as_absent():
    got = answer_settings(
        {"max_new_tokens": True, "system": 3, "reasoning": ["x"], "thinking_budget": "8"}, "hf:m?top_k=20&dtype=bf16"
    )
    assert got == AnswerSettings(None, "auto", None, None, None, {"top_k": "20"})
    custom = answer_settings({"reasoning": "<t>,</t>", "max_new_tokens": 64}, "hf:m")
    assert custom.notable and custom.line(compact=True) == "max new tokens 64 · reasoning <t>,</t>"


def test_what_the_report_adds_costs_the_same_at_any_size(tmp_path):
    """The truncation line and the settings read kept counts and the run's row: beyond the kept figures (whose rows
    follow the groups present), the report's SQLite steps are the same for a run of 30 and of 240 questions, and so
    are those of the runs list's truncation reads."""
    counts = []
    for n in (30, 240):
        folder = tmp_path / str(n)
        folder.mkdir()
        path, run_id = thinking_workspace(folder, n)
        with open_workspace(path) as ws:
            run = runs.get_run(ws, run_id)
            assert run is not None
            assert runs.truncation(ws, run_id).truncated == sum(
                kind_of(i) != "whole" for i in range(len(runs.predictions_of(ws, run_id)))
            )
            with counting_steps(ws.conn, every=1) as whole:
                report = run_report(ws, run_id)
            with counting_steps(ws.conn, every=1) as kept:
                runs.kept_figures(ws, run)
            with counting_steps(ws.conn, every=1) as listed:
                for r in runs.list_runs(ws):
                    runs.truncation(ws, r.id)
            assert report is not None and report.truncation is not None and report.settings is not None
            counts.append((whole.count - kept.count, listed.count))
    assert counts[0] == counts[1]


def test_the_truncation_line_says_wrong_only_where_items_have_a_key():
    from evaluator.analysis.report import describe_truncation

    keyed = describe_truncation(runs.Truncation(5, 3, 40, wrong=4))
    assert keyed.endswith(
        "3 gave no answer (counted wrong), 2 cut after the thought are read as usual (1 of them wrong)"
    )
    open_run = describe_truncation(runs.Truncation(3, 2, 40, wrong=0))  # open items: no key, nothing counted wrong
    assert open_run.endswith("2 gave no answer, 1 cut after the thought are read as usual")
