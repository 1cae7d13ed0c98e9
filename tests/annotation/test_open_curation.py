"""The curated export of an open benchmark: a wrong reference is replaced by the annotators' answer, an incomplete
verdict's answer is added to the references (VQA's repeats kept as votes), and the change log says so (issue 35)."""

from __future__ import annotations

import csv
import json
import sys

from annotation import reviews
from annotation.curation import changes_path, export_curated
from db import catalog, open_workspace
from evaluator.formats.importers import import_benchmark
from vlmdesk.demo import ensure_demo


def _rows(path):
    csv.field_size_limit(sys.maxsize)
    with open(path, newline="", encoding="utf-8") as f:
        return {r["index"]: r for r in csv.DictReader(f, delimiter="\t")}


def test_open_corrections_and_missing_answers_reach_the_curated_file(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        ensure_demo(ws)
        bench = catalog.benchmark_by_name(ws, "demo-open")
        items = catalog.list_items(ws, bench.id)
        wrong, incomplete, untouched = items[0], items[1], items[2]
        reviews.add_review(ws, wrong.id, "ann", "wrong_answer", corrected_answer="A tabby cat, face in focus")
        reviews.add_review(ws, wrong.id, "bea", "wrong_answer", corrected_answer="A tabby cat, face in focus")
        reviews.add_review(ws, incomplete.id, "ann", "incomplete", corrected_answer="an espresso and a spoon")
        reviews.add_review(ws, incomplete.id, "bea", "incomplete", corrected_answer="a red cup, spoon on the right")
        reviews.add_review(ws, untouched.id, "ann", "ok")
        out = tmp_path / "curated.tsv"
        report, changes = export_curated(ws, bench, out, fmt="vqa-tsv", with_reviews=True)
        # Read back by vlmdesk's own importer too: the references are the item's, not a string.
        import_benchmark(ws, out, fmt="vqa-tsv", name="curated-open")
        back = catalog.benchmark_by_name(ws, "curated-open")
        again = {str(i.index): i for i in catalog.list_items(ws, back.id)}

    assert report.questions == len(items)
    by_index = {str(c.index): c for c in changes}
    assert by_index[str(wrong.index)].action == "answer_corrected"
    assert by_index[str(incomplete.index)].action == "references_added"
    assert str(untouched.index) not in by_index
    rows = _rows(out)
    assert rows[str(wrong.index)]["answer"] == "A tabby cat, face in focus"
    assert again[str(wrong.index)].references == ("A tabby cat, face in focus",)
    assert again[str(incomplete.index)].references == (
        *incomplete.references,
        "an espresso and a spoon",
        "a red cup, spoon on the right",
    )
    assert again[str(untouched.index)].references == untouched.references
    log = [json.loads(line) for line in changes_path(out).read_text().splitlines()]
    added = next(e for e in log if e["index"] == incomplete.index)
    assert added["added_references"] == ["an espresso and a spoon", "a red cup, spoon on the right"]
    assert "added_references" not in next(e for e in log if e["index"] == wrong.index)


def test_the_majority_reference_applies_and_a_tie_applies_nothing(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        ensure_demo(ws)
        bench = catalog.benchmark_by_name(ws, "demo-open")
        majority, tie = catalog.list_items(ws, bench.id)[3:5]
        for who, answer in (("ann", "one answer"), ("bea", "one answer"), ("cy", "another answer")):
            reviews.add_review(ws, majority.id, who, "wrong_answer", corrected_answer=answer)
        reviews.add_review(ws, tie.id, "ann", "wrong_answer", corrected_answer="one answer")
        reviews.add_review(ws, tie.id, "bea", "wrong_answer", corrected_answer="another answer")
        out = tmp_path / "curated.tsv"
        _, changes = export_curated(ws, bench, out, fmt="vqa-tsv", with_reviews=True)
    (change,) = changes
    assert (change.index, change.action, change.annotators) == (majority.index, "answer_corrected", ("ann", "bea"))
    rows = _rows(out)
    assert rows[str(majority.index)]["answer"] == "one answer"
    assert rows[str(tie.index)]["answer"] == tie.references[0]
