"""The curated export: removed items gone, corrected answers in every rotation, the source's format kept.

The TSV is checked with the csv module against VLMEvalKit's rules, not only by re-importing it into vlmdesk.
"""

from __future__ import annotations

import base64
import csv
import json
import sys

import pytest

from annotation import qc, reviews
from annotation.curation import curation_plan, export_curated
from db import catalog, open_workspace
from evaluator.engine.launch import execute_run, open_backend, start_run
from evaluator.engine.prompts import default_template
from evaluator.engine.runner import RunSettings
from evaluator.formats.importers import import_benchmark
from tests.factories import HEADER, mmbench_rows, write_tsv
from vlmdesk.demo import demo_dir, ensure_demo

STRIDE = 1_000_000


def consensus_over_first(ws, name: str) -> None:
    """baseline:first is never right on every pass (multiple choice), so every item becomes a candidate;
    on POPE it is right exactly on the yes questions."""
    bench = catalog.benchmark_by_name(ws, name)
    backend = open_backend(ws, bench.id, "baseline:first", seed=0)
    run = start_run(ws, bench, "baseline:first", RunSettings(), default_template(bench.kind), backend, batch_size=32)
    execute_run(ws, run, backend, batch_size=32)
    qc.compute_stage(ws, bench.id, "consensus", [run.id])


def read_tsv(path):
    csv.field_size_limit(sys.maxsize)
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
        f.seek(0)
        header = next(csv.reader(f, delimiter="\t"))
    return header, rows


@pytest.fixture
def tsv_ws(tmp_path):
    source = write_tsv(tmp_path / "MMB.tsv", list(mmbench_rows(12, seed=3)), header=HEADER)
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        import_benchmark(ws, source, name="mmb")
        consensus_over_first(ws, "mmb")
        yield ws, tmp_path, source


def _decisions(ws):
    """Item 0..: removed (text), corrected, disputed (not applied), rejected; returns what should happen."""
    bench = catalog.benchmark_by_name(ws, "mmb")
    items = [i for i in catalog.list_items(ws, bench.id) if len(i.options) >= 3]
    removed, corrected, disputed, rejected = items[0], items[1], items[2], items[3]
    qc.decide(ws, removed.id, "consensus", "ann", "confirm", reason="ambiguous", note="two readings")
    qc.decide(ws, removed.id, "consensus", "bob", "confirm", reason="bad_image")
    new = next(letter for letter in "ABCD"[: len(corrected.options)] if letter != corrected.answer)
    qc.decide(ws, corrected.id, "consensus", "ann", "confirm", answer=new)
    qc.decide(ws, disputed.id, "consensus", "ann", "confirm", reason="other")
    qc.decide(ws, disputed.id, "consensus", "bob", "reject")
    qc.decide(ws, rejected.id, "consensus", "ann", "reject")
    return bench, removed, corrected, new, disputed


@pytest.mark.parametrize("source_kept", [True, False])
def test_curated_tsv_follows_vlmevalkit_rules_and_reimports(tsv_ws, source_kept):
    ws, tmp, source = tsv_ws
    bench, removed, corrected, new, disputed = _decisions(ws)
    originals = {int(r["index"]): r for r in mmbench_rows(12, seed=3) if int(r["index"]) < STRIDE}
    if not source_kept:
        source.unlink()  # the header order then falls back to VLMEvalKit's
    out = tmp / "curated.tsv"
    report, changes = export_curated(ws, bench, out)

    header, rows = read_tsv(out)
    if source_kept:
        assert header == HEADER  # every column the source had, in its order
    else:
        assert header[:2] == ["index", "question"] and {
            "A",
            "B",
            "C",
            "D",
            "answer",
            "image",
            "l2-category",
            "source",
            "split",
            "category",
            "hint",
        } <= set(header)
    by_index = {int(r["index"]): r for r in rows}
    assert len(by_index) == len(rows)  # indexes are unique
    kept = [i for i in originals if i != removed.index]
    # Removed: the question and every rotated copy of it.
    assert not [i for i in by_index if i % STRIDE == removed.index]
    assert sorted(i for i in by_index if i < STRIDE) == kept
    for base in kept:
        src = originals[base]
        options = [src[c] for c in "ABCD" if src[c]]
        n = len(options)
        answer = new if base == corrected.index else src["answer"]
        meant = options["ABCD".index(answer)]
        row = by_index[base]
        # The original row holds the image as base64, byte-identical to the source's.
        assert base64.b64decode(row["image"]) == base64.b64decode(src["image"])
        assert [row[c] for c in "ABCD" if row[c]] == options and row["answer"] == answer
        assert row["category"] == src["category"] and row["l2-category"] == src["l2-category"]
        assert row["source"] == "generated"
        copies = sorted(i for i in by_index if i % STRIDE == base and i >= STRIDE)
        assert copies == [base + k * STRIDE for k in range(1, n)]
        for k in range(1, n):
            copy = by_index[base + k * STRIDE]
            shown = [copy[c] for c in "ABCD" if copy[c]]
            assert shown == options[k:] + options[:k]  # rotated the way the source did
            assert shown["ABCD".index(copy["answer"])] == meant  # the (corrected) answer in every rotation
            assert copy["image"] == str(base)  # a reference to the original's row, never a chain
            assert copy["question"] == row["question"]
    # Copies come after every original.
    positions = [int(r["index"]) >= STRIDE for r in rows]
    assert positions == sorted(positions)

    with open_workspace(tmp / "again.sqlite") as again:
        rep = import_benchmark(again, out, name="curated")
        assert rep.questions == len(kept) == report.questions
        assert rep.rows_folded == sum(len([c for c in "ABCD" if originals[b][c]]) - 1 for b in kept)
        assert rep.rows_read == report.rows == len(rows)
        b2 = catalog.benchmark_by_name(again, "curated")
        assert catalog.item_by_index(again, b2.id, corrected.index).answer == new
        assert catalog.item_by_index(again, b2.id, disputed.index).answer == disputed.answer  # disputed: unchanged

    log = [json.loads(line) for line in open(str(out) + ".changes.jsonl")]
    assert [(c["index"], c["action"]) for c in log] == [
        (removed.index, "removed"),
        (corrected.index, "answer_corrected"),
    ]
    assert log[0]["annotators"] == ["ann", "bob"] and log[0]["reasons"] == ["ambiguous"]
    assert log[0]["notes"] == ["two readings"] and log[0]["sources"] == ["qc:consensus"]
    assert (log[1]["old_answer"], log[1]["new_answer"]) == (corrected.answer, new)
    assert [c.action for c in changes] == ["removed", "answer_corrected"]


def test_pope_export_round_trips_in_the_official_format(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        ensure_demo(ws)
        consensus_over_first(ws, "demo-pope")
        bench = catalog.benchmark_by_name(ws, "demo-pope")
        flagged = qc.queue(ws, benchmark_id=bench.id)
        assert flagged and all(c.answer == "no" for c in flagged)
        qc.decide(ws, flagged[0].item_id, "consensus", "ann", "confirm", answer="YES")
        qc.decide(ws, flagged[1].item_id, "consensus", "ann", "confirm", reason="bad_image")
        out = tmp_path / "pope_curated.json"
        report, _ = export_curated(ws, bench, out)
        records = [json.loads(line) for line in out.read_text().splitlines()]
        assert report.questions == len(records) == bench.questions - 1
        assert all(list(r)[:4] == ["question_id", "image", "text", "label"] for r in records)
        by_id = {r["question_id"]: r for r in records}
        assert flagged[1].index not in by_id and by_id[flagged[0].index]["label"] == "yes"
        source = {
            json.loads(line)["question_id"]: json.loads(line)
            for line in (demo_dir() / "demo_pope.jsonl").read_text().splitlines()
            if line.strip()
        }
        assert all(r == source[q] for q, r in by_id.items() if q != flagged[0].index)
    with open_workspace(tmp_path / "again.sqlite") as again:
        rep = import_benchmark(again, out, fmt="pope", name="p", images_dir=demo_dir() / "images")
        assert rep.questions == len(records) and rep.images == bench.images


def test_jsonl_export_round_trips_with_images_and_optional_reviews(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        ensure_demo(ws)
        consensus_over_first(ws, "demo")
        bench = catalog.benchmark_by_name(ws, "demo")
        items = catalog.list_items(ws, bench.id)
        a, b, c = items[0], items[1], items[2]
        qc.decide(ws, a.id, "consensus", "ann", "confirm", reason="ambiguous")
        other = next(x for x in "ABCD" if x != b.answer)
        qc.decide(ws, b.id, "consensus", "ann", "confirm", answer=other)
        third = next(x for x in "ABCD"[: len(b.options)] if x not in (b.answer, other))
        reviews.add_review(ws, b.id, "rev", "wrong_answer", corrected_answer=third)  # conflicts with QC's correction
        reviews.add_review(ws, c.id, "rev", "text_answerable")

        out = tmp_path / "curated.jsonl"
        report, changes = export_curated(ws, bench, out)
        assert [ch.action for ch in changes] == ["removed", "answer_corrected"]
        records = [json.loads(line) for line in out.read_text().splitlines()]
        assert len(records) == bench.questions - 1 and all(r["image"].startswith("curated_images/") for r in records)
        _, changes = export_curated(ws, bench, tmp_path / "with_reviews.jsonl", with_reviews=True)
        assert [(ch.index, ch.action) for ch in changes] == [
            (a.index, "removed"),
            (b.index, "not_applied"),
            (c.index, "removed"),
        ]
        assert "conflicting corrections" in changes[1].why_not_applied
        assert curation_plan(ws, bench.id)[b.id].new_answer == other
    with open_workspace(tmp_path / "again.sqlite") as again:
        rep = import_benchmark(again, out, fmt="jsonl", name="d")
        b2 = catalog.benchmark_by_name(again, "d")
        assert rep.questions == report.questions == bench.questions - 1 and rep.images == bench.images
        assert catalog.item_by_index(again, b2.id, b.index).answer == other
        assert catalog.item_by_index(again, b2.id, a.index) is None
        originals = {i.index: i for i in items}
        for item in catalog.list_items(again, b2.id):
            assert item.image_sha256 == originals[item.index].image_sha256  # the very same image bytes
            assert item.options == originals[item.index].options


def test_a_jsonl_benchmark_exports_as_vlmevalkit_tsv_with_shared_images_referenced(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        ensure_demo(ws)
        bench = catalog.benchmark_by_name(ws, "demo")
        items = catalog.list_items(ws, bench.id)
        report, changes = export_curated(ws, bench, tmp_path / "demo.tsv", fmt="mmbench-tsv")
    assert changes == [] and report.questions == 30 and report.images == bench.images < 30
    header, rows = read_tsv(tmp_path / "demo.tsv")
    assert header[:3] == ["index", "question", "hint"]
    holders = {r["index"] for r in rows if len(r["image"]) > 64}
    assert len(holders) == bench.images
    # Every reference names a row that holds base64 (no chains).
    assert all(r["image"] in holders for r in rows if len(r["image"]) <= 64)
    with open_workspace(tmp_path / "again.sqlite") as again:
        rep = import_benchmark(again, tmp_path / "demo.tsv", name="t")
        back = catalog.list_items(again, catalog.benchmark_by_name(again, "t").id)
    assert rep.questions == 30 and rep.images == bench.images
    assert [(i.index, i.options, i.answer, i.image_sha256, i.hint, i.category) for i in back] == [
        (i.index, i.options, i.answer, i.image_sha256, i.hint, i.category) for i in items
    ]
