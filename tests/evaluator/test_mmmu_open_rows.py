"""MMMU's open questions: rows of its multiple-choice TSV with no option at all (VLMEvalKit's MMMU_DEV_VAL holds them
beside its multiple-choice ones). They import as items with no options whose answer is their reference, are asked
once whatever the strategy, count in no multiple-choice figure (they have no key letter) and are scored by MMMU's
official rule against their reference."""

from __future__ import annotations

import json

from db import catalog, open_workspace, runs
from evaluator.analysis import metrics
from tests.evaluator.test_open_layouts import _b64, _cli, _write

HEADER = ["index", "image", "question", "A", "B", "C", "D", "answer", "split"]


def _mmmu(tmp_path):
    rows = [
        {
            "index": 0,
            "image": _b64(1),
            "question": "Which colour?",
            "A": "red",
            "B": "blue",
            "answer": "A",
            "split": "validation",
        },
        {
            "index": 1,
            "image": _b64(2),
            "question": "How many?",
            "A": "2",
            "B": "3",
            "C": "4",
            "answer": "C",
            "split": "validation",
        },
        {"index": 2, "image": _b64(3), "question": "What is the area in m^2?", "answer": "12.5", "split": "validation"},
    ]
    return _write(tmp_path / "MMMU_DEV_VAL.tsv", HEADER, rows)


def test_an_open_question_of_a_multiple_choice_file_imports_runs_and_is_scored_by_its_reference(
    tmp_path, capsys, serve
):
    ws = tmp_path / "w.sqlite"
    code, out, err = _cli(capsys, ws, "import", _mmmu(tmp_path), "--name", "mmmu", "--json")
    assert code == 0, err
    with open_workspace(ws) as w:
        bench = catalog.benchmark_by_name(w, "mmmu")
        assert bench.kind == "mcq"
        open_item = catalog.list_items(w, bench.id)[2]
    assert (open_item.options, open_item.answer, open_item.references) == ((), None, ("12.5",))
    # A model answering the open question right and one multiple-choice question right, under CircularEval.
    answers = {"Which colour?": "B", "How many?": "C", "What is the area": "The area is 12.5"}
    server = serve(respond=lambda text: next(v for k, v in answers.items() if k in text))
    code, out, err = _cli(capsys, ws, "run", "--bench", "mmmu", "--model", f"openai:m@{server.url}", "--json")
    assert code == 0, err
    run_id = json.loads(out.strip().splitlines()[-1])["run_id"]
    with open_workspace(ws) as w:
        passes = runs.predictions_of(w, run_id)
        asked = {p.item_id: 0 for p in passes}
        for p in passes:
            asked[p.item_id] += 1
        assert asked[open_item.id] == 1  # nothing to rotate: asked once
        by_item = {p.item_id: p for p in passes if p.pass_ == 0}
        assert by_item[open_item.id].correct is None  # no key letter: in no multiple-choice figure
        official = metrics.compute(w, "mmmu_accuracy", run_id)
    assert official is not None and abs(official - 2 / 3) < 1e-9  # MMMU's rule: 12.5 found in the open answer
    code, out, err = _cli(capsys, ws, "report", run_id, "--json")
    assert code == 0, err
    report = json.loads(out)
    # vlmdesk's own figures are over the keyed (multiple-choice) questions; the official one over all three.
    assert (report["questions"], report["scored_questions"], report["unscored_questions"]) == (3, 2, 1)
    overall = {k: v for k, v in report["overall"].items() if not k.endswith("_ci")}  # intervals: their own tests
    assert overall == {"questions": 2, "vanilla": 0.5, "circular": 0.0}
    assert report["official"]["metric"] == "mmmu_accuracy" and report["official"]["shown"] == "66.7"
