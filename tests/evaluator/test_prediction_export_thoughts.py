"""A thinking model's run exported (issue 36): each pass's thought, finish reason, truncated flag and reasoning
tokens as columns (lmms-eval: beside `resps`), the prediction column the answer only; a run without thoughts keeps
its columns."""

from __future__ import annotations

import csv
import json

from openpyxl import load_workbook

from db import open_workspace, runs
from evaluator.formats.prediction_export import THINKING_COLUMNS
from tests.thought_runs import thinking_workspace
from vlmdesk.cli import main


def _export(path, run_id, out, *more) -> None:
    assert main(["--workspace", str(path), "export-predictions", str(run_id), "--out", str(out), *more]) == 0


def _rows(path, sep):
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter=sep))


def test_each_pass_carries_its_thought_apart_from_its_answer(tmp_path, capsys):
    path, run_id = thinking_workspace(tmp_path)
    with open_workspace(path) as ws:
        passes = runs.predictions_of(ws, run_id)
    by_thought = {p.thought: p for p in passes}  # each pass's thought names it
    _export(path, run_id, tmp_path / "p.tsv")
    rows = _rows(tmp_path / "p.tsv", "\t")
    assert list(rows[0])[-len(THINKING_COLUMNS) :] == list(THINKING_COLUMNS)
    asked = [r for r in rows if r["finish_reason"]]
    assert len(asked) == len(passes)
    thoughts = {p.thought for p in passes}
    for r in asked:
        assert r["thought"] in thoughts and r["prediction"] not in thoughts  # the answer column stays the answer
        assert r["truncated"] == ("1" if r["finish_reason"] == "length" else "0")
        p = by_thought[r["thought"]]
        assert (r["prediction"], r["finish_reason"], int(r["reasoning_tokens"])) == (
            p.response,
            p.finish_reason,
            p.reasoning_tokens,
        )
    cut_inside = [r for r in asked if r["truncated"] == "1" and not r["prediction"]]
    assert len(cut_inside) == sum(p.stage == "truncated" for p in passes) > 0
    never = [r for r in rows if not r["finish_reason"]]  # passes never asked: every thinking cell empty
    assert never and all(r[c] == "" for r in never for c in THINKING_COLUMNS)

    _export(path, run_id, tmp_path / "p.xlsx")
    sheet = load_workbook(tmp_path / "p.xlsx", read_only=True).active
    head, *cells = [list(r) for r in sheet.iter_rows(values_only=True)]
    assert head[-4:] == list(THINKING_COLUMNS)
    assert sorted(r[head.index("thought")] for r in cells if r[head.index("thought")]) == sorted(
        p.thought for p in passes
    )

    _export(path, run_id, tmp_path / "s.jsonl", "--layout", "lmms-eval")
    samples = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    said = [s for s in samples if s["finish_reason"] is not None]
    assert len(said) == len(passes)
    assert all("thought" not in s["doc"] for s in samples)
    assert {s["truncated"] for s in said} == {True, False}
    assert all(s["resps"] == [[s["filtered_resps"][0]]] and s["thought"] != s["resps"][0][0] for s in said)


def test_a_run_without_thoughts_keeps_its_columns(tmp_path, capsys):
    path, _ = thinking_workspace(tmp_path)
    _export(path, 1, tmp_path / "p.csv")
    rows = _rows(tmp_path / "p.csv", ",")
    assert list(rows[0])[-1] == "prediction" and not set(THINKING_COLUMNS) & set(rows[0])
