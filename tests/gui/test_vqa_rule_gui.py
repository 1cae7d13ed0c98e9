"""Review and Browse score an open answer by the rule of its benchmark's reference (issue 37, ADR 0056), as the
report does: `Yes` against ten `yes` is right under lmms-eval's TextVQA rule (EvalAI's processing lower-cases it) and
wrong under VQAv2's official vqaEval.py (the answer as given)."""

from __future__ import annotations

import json

from db import open_workspace
from evaluator.formats.importers import import_benchmark
from tests.gui.test_item_kinds_gui import _show, _texts
from tests.open_plugins import run_parrot
from vlmdesk.demo import demo_dir

ROWS = [{"index": "1", "question": "Is it sunny?", "answer": ["yes"] * 10, "image": "coffee.jpg"}]


def test_browse_and_review_score_an_open_answer_by_its_benchmarks_vqa_rule(
    qtbot, demo_ws, make_window, tmp_path, monkeypatch
):
    folder = tmp_path / "q"
    folder.mkdir()
    (folder / "coffee.jpg").write_bytes((demo_dir() / "images" / "coffee.jpg").read_bytes())
    with open_workspace(demo_ws) as ws:
        for name in ("textvqa_val", "vqav2_val"):  # two files: one file is imported once
            (folder / f"{name}.jsonl").write_text("".join(json.dumps(r | {"category": name}) + "\n" for r in ROWS))
            import_benchmark(ws, folder / f"{name}.jsonl", fmt="jsonl", name=name)
    for name in ("textvqa_val", "vqav2_val"):
        run_parrot(demo_ws, name, {"Is it sunny?": "Yes"}, tmp_path, monkeypatch)
    window = make_window(demo_ws, blind=False)
    shown = {}
    for name in ("textvqa_val", "vqav2_val"):
        window.select_benchmark(name)
        window.show_view("browse")
        model = window.ctx.model
        qtbot.waitUntil(lambda m=model: bool(m.rows) and m.filter.run_id is not None)
        shown[name] = model.display_text(model.rows[0], 6)
        _show(window, name, "1")
        assert shown[name] in _texts(window)  # Review's Predictions say the same
    assert shown == {"textvqa_val": "VQA 100 %", "vqav2_val": "VQA 0 %"}
