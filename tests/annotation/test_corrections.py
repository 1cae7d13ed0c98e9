"""Every label kind can be corrected and undone: the log keeps every row with its time, a withdrawal names the uuid
it withdraws, and every statistic follows the standing record (the latest not withdrawn, by time)."""

from __future__ import annotations

import re
import sqlite3

import pytest
from sqlite_utils import Database

from annotation import alignment, qc, reviews
from annotation.alignment import (
    add_label,
    adjudicate,
    alignment_report,
    build_set,
    final_labels,
    next_for,
    remaining_for,
    remaining_items,
    reveal,
    undo_adjudication,
    undo_label,
)
from annotation.curation import curation_plan
from db import catalog, open_workspace, schema
from evaluator.formats.importers import import_benchmark
from tests.annotation.test_alignment import SaysA, study  # noqa: F401  (a fixture)
from tests.annotation.test_qc import make_run, write_bench
from vlmdesk.demo import demo_dir

UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def _rows(path, table):
    """The table as another process sees it: a fresh connection to the file."""
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY id")]
    finally:
        conn.close()


@pytest.fixture
def demo_ws(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        import_benchmark(ws, demo_dir() / "demo_mcq.jsonl", fmt="jsonl", name="demo")
        yield ws


# ---- verdicts -------------------------------------------------------------------------------------------


def test_a_corrected_then_undone_verdict_keeps_its_history_and_the_statistics_follow(demo_ws):
    ws = demo_ws
    a, b = catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)[:2]
    bench = a.benchmark_id
    first = reviews.add_review(ws, a.id, "ann", "ok")
    reviews.add_review(ws, a.id, "bob", "ok")
    assert reviews.conflicts(ws, bench) == {}
    corrected = reviews.add_review(ws, a.id, "ann", "wrong_answer", corrected_answer="C", note="key is C")
    assert set(reviews.conflicts(ws, bench)) == {a.id}  # the correction stands, not the first verdict
    assert [r.verdict for r in reviews.standing_reviews(ws, annotator="ann")] == ["wrong_answer"]
    withdrawn = reviews.undo_last(ws, "ann", item_id=a.id)
    assert withdrawn.uuid == corrected.uuid
    assert [r.uuid for r in reviews.standing_reviews(ws, annotator="ann")] == [first.uuid]
    assert reviews.conflicts(ws, bench) == {}
    rows = _rows(ws.path, "reviews")
    assert [(r["annotator"], r["verdict"]) for r in rows] == [
        ("ann", "ok"),
        ("bob", "ok"),
        ("ann", "wrong_answer"),
        ("ann", "undo"),
    ]
    assert all(UUID4.fullmatch(r["uuid"]) for r in rows) and len({r["uuid"] for r in rows}) == 4
    assert rows[3]["withdraws"] == corrected.uuid and rows[2]["created_at"] == corrected.created_at
    assert [r["withdraws"] for r in rows[:3]] == [None, None, None]
    # Undo again withdraws the first verdict: nothing of ann's stands; progress counts bob only.
    assert reviews.undo_last(ws, "ann").uuid == first.uuid
    assert reviews.progress(ws, bench, "ann") == {"total": 30, "reviewed": 1, "mine": 0}
    assert reviews.undo_last(ws, "ann") is None
    assert [r.verdict for r in reviews.history(ws, a.id)] == ["ok", "ok", "wrong_answer", "undo", "undo"]


def test_time_decides_what_stands_not_the_row_id(demo_ws):
    # A verdict merged in from another machine gets a higher id but may be older: the newer time stands.
    ws = demo_ws
    item = catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)[0]
    newer = reviews.add_review(ws, item.id, "ann", "ambiguous")
    with ws.db.atomic():
        ws.conn.execute(
            "INSERT INTO reviews (item_id, annotator, verdict, created_at, uuid) VALUES (?, 'ann', 'ok', "
            "'2020-01-01T00:00:00.000+00:00', 'older')",
            (item.id,),
        )
    assert [r.uuid for r in reviews.standing_reviews(ws)] == [newer.uuid]
    assert [r.verdict for r in reviews.history(ws, item.id)] == ["ok", "ambiguous"]  # in time order


def test_withdrawal_rows_are_checked_by_the_schema(demo_ws):
    ws = demo_ws
    item = catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)[0]
    r = reviews.add_review(ws, item.id, "ann", "ok")
    with pytest.raises(sqlite3.IntegrityError):  # only an undo row withdraws
        with ws.db.atomic():
            ws.conn.execute(
                "INSERT INTO reviews (item_id, annotator, verdict, created_at, withdraws) "
                "VALUES (?, 'ann', 'ok', 'x', ?)",
                (item.id, r.uuid),
            )
    with pytest.raises(sqlite3.IntegrityError):  # and it names a row that exists
        with ws.db.atomic():
            ws.conn.execute(
                "INSERT INTO reviews (item_id, annotator, verdict, created_at, withdraws) "
                "VALUES (?, 'ann', 'undo', 'x', 'no-such-uuid')",
                (item.id,),
            )
    with pytest.raises(sqlite3.IntegrityError):  # uuids are unique
        with ws.db.atomic():
            ws.conn.execute(
                "INSERT INTO reviews (item_id, annotator, verdict, created_at, uuid) VALUES (?, 'ann', 'ok', 'x', ?)",
                (item.id, r.uuid),
            )
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        ws.conn.execute("UPDATE reviews SET uuid = 'x'")
    ws.conn.rollback()
    assert len(_rows(ws.path, "reviews")) == 1


# ---- alignment labels and adjudications -----------------------------------------------------------------


def test_a_label_corrected_after_the_reveal_stands_and_moves_the_alignment_rate(study):
    ws, path, (first, _) = study
    s = build_set(ws, "s", [first], [SaysA()], size=10, seed=0)
    items = remaining_items(ws, "s", "ana")
    assert len(items) == remaining_for(ws, "s", "ana") == s.items == 10
    for item_id in items:
        rules = reveal_rules(ws, item_id)
        add_label(ws, item_id, "ana", rules if rules else "unclear")  # agree with the rules everywhere
    before = alignment_report(ws, "s").extractors["rules"].overall
    assert before.rate == 1.0 and remaining_for(ws, "s", "ana") == 0 and next_for(ws, "s", "ana") is None
    target = next(i for i in items if reveal_rules(ws, i) == "A")
    assert reveal(ws, target, "ana")["rules"].choice == "A"  # revealed, then corrected
    old = alignment.label_history(ws, target)[-1]
    new = add_label(ws, target, "ana", "B")
    assert final_labels(ws, "s")[target].choice == "B"
    after = alignment_report(ws, "s").extractors["rules"].overall
    assert (after.n, after.agreed) == (before.n, before.agreed - 1)
    # Undo the correction: the first label stands again, and the rate is back.
    assert undo_label(ws, target, "ana").uuid == new.uuid
    assert final_labels(ws, "s")[target].choice == "A"
    assert alignment_report(ws, "s").extractors["rules"].overall.agreed == before.agreed
    # Undo the first one too: the item is left for ana again, everywhere, and blind again.
    assert undo_label(ws, target, "ana").uuid == old.uuid
    assert remaining_for(ws, "s", "ana") == 1 == len(remaining_items(ws, "s", "ana"))
    task = next_for(ws, "s", "ana")
    assert (task.item_id, task.done, task.total) == (target, 9, 10)
    with pytest.raises(alignment.NotLabelledYet):
        reveal(ws, target, "ana")
    assert undo_label(ws, target, "ana") is None
    rows = [r for r in _rows(path, "labels") if r["item_id"] == target]
    assert [r["choice"] for r in rows] == ["A", "B", "undo", "undo"]
    assert [r["withdraws"] for r in rows] == [None, None, new.uuid, old.uuid]
    assert rows[1]["created_at"] == new.created_at


def reveal_rules(ws, item_id):
    return alignment._outputs(ws, item_id)["rules"].choice


def test_an_adjudication_corrected_and_undone(study):
    ws, path, (first, _) = study
    build_set(ws, "s", [first], [], size=10, seed=0)
    item = next_for(ws, "s", "ana").item_id
    add_label(ws, item, "ana", "A")
    add_label(ws, item, "bob", "B")
    assert final_labels(ws, "s")[item].source == "tie"
    first_adj = adjudicate(ws, item, "lead", "A")
    second = adjudicate(ws, item, "lead", "C", note="on reflection")
    assert final_labels(ws, "s")[item] == alignment.FinalLabel("C", "adjudicated")
    assert alignment.disagreements(ws, "s")[0].adjudicated == "C"
    assert undo_adjudication(ws, item, "lead").uuid == second.uuid
    assert final_labels(ws, "s")[item] == alignment.FinalLabel("A", "adjudicated")
    assert undo_adjudication(ws, item, "lead").uuid == first_adj.uuid
    assert final_labels(ws, "s")[item].source == "tie"
    assert undo_adjudication(ws, item, "lead") is None
    rows = _rows(path, "adjudications")
    assert [(r["choice"], r["withdraws"]) for r in rows] == [
        ("A", None),
        ("C", None),
        ("undo", second.uuid),
        ("undo", first_adj.uuid),
    ]
    assert [a.choice for a in alignment.adjudication_history(ws, item)] == ["A", "C", "undo", "undo"]


# ---- QC decisions ---------------------------------------------------------------------------------------


@pytest.fixture
def qc_ws(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        import_benchmark(ws, write_bench(tmp_path / "b.jsonl", 20), fmt="jsonl", name="b")
        bench = catalog.benchmark_by_name(ws, "b")
        result = qc.compute_stage(ws, bench.id, "consensus", [make_run(ws, "b", "baseline:first", text_only=False)])
        assert result.candidates
        yield ws, bench, result.candidates[0]


def test_a_qc_decision_corrected_and_undone_drives_the_resolution_and_the_export(qc_ws):
    ws, bench, item_id = qc_ws
    item = next(i for i in catalog.list_items(ws, bench.id) if i.id == item_id)
    other = next(letter for letter in "AB" if letter != item.answer)

    def status():
        c = next(c for c in qc.queue(ws, benchmark_id=bench.id) if c.item_id == item_id)
        return c.status, c.resolution.action

    confirm = qc.decide(ws, item_id, "consensus", "ann", "confirm", reason="ambiguous")
    assert status() == ("confirmed", "remove") and curation_plan(ws, bench.id)[item_id].action == "removed"
    reject = qc.decide(ws, item_id, "consensus", "ann", "reject")  # the correction stands
    assert status() == ("rejected", "keep") and item_id not in curation_plan(ws, bench.id)
    qc.decide(ws, item_id, "consensus", "bob", "confirm", answer=other)
    assert status() == ("disputed", None)
    assert qc.undo_decision(ws, item_id, "consensus", "ann").uuid == reject.uuid
    assert status() == ("disputed", None)  # ann's confirm (remove) stands again, against bob's correction
    assert qc.undo_decision(ws, item_id, "consensus", "ann").uuid == confirm.uuid
    assert status() == ("confirmed", "correct")
    assert curation_plan(ws, bench.id)[item_id].new_answer == other
    summary = qc.summary(ws, bench.id)[0]["stages"]["consensus"]
    assert summary["by_reason"] == {"wrong_answer": 1}
    assert qc.undo_decision(ws, item_id, "consensus", "ann") is None
    rows = [r for r in _rows(ws.path, "qc_decisions") if r["item_id"] == item_id]
    assert [(r["annotator"], r["decision"], r["withdraws"]) for r in rows] == [
        ("ann", "confirm", None),
        ("ann", "reject", None),
        ("bob", "confirm", None),
        ("ann", "undo", reject.uuid),
        ("ann", "undo", confirm.uuid),
    ]
    candidate = next(c for c in qc.queue(ws, benchmark_id=bench.id) if c.item_id == item_id)
    assert len(candidate.history) == 5 and [d.annotator for d in candidate.resolution.votes] == ["bob"]
    with pytest.raises(ValueError, match="standing decision"):
        qc.resolve(list(candidate.history))


# ---- the migration --------------------------------------------------------------------------------------


def test_migration_0007_gives_old_rows_uuids_and_names_what_old_undo_rows_withdrew(tmp_path):
    path = tmp_path / "old.sqlite"
    db = Database(str(path))
    schema.migrations.apply(db, stop_before="0007_label_ids")
    db.execute(f"PRAGMA user_version = {len(schema.migrations.applied(db))}")
    db.conn.commit()
    db.close()
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "INSERT INTO benchmarks (id, name, kind, format, source, source_sha256, rows_read, imported_at) "
            "VALUES (1, 'old', 'mcq', 'jsonl', 'x', 'abc', 2, 't')"
        )
        for i in (1, 2):
            conn.execute(
                "INSERT INTO items (id, benchmark_id, position, source_index, question, options, answer) "
                "VALUES (?, 1, ?, ?, 'Q?', '[\"x\", \"y\"]', 'A')",
                (i, i, i),
            )
        old_rows = [
            (1, "ann", "ok", None),
            (1, "ann", "ambiguous", None),
            (2, "ann", "skip", None),
            (1, "ann", "undo", "withdraws review 2"),  # names its target
            (1, "bob", "ok", None),
            (1, "bob", "undo", None),
        ]  # an undo from before notes: the latest
        for n, (item, who, verdict, note) in enumerate(old_rows):
            conn.execute(
                "INSERT INTO reviews (item_id, annotator, verdict, note, created_at) VALUES (?, ?, ?, ?, ?)",
                (item, who, verdict, note, f"2026-01-01T00:00:0{n}.000+00:00"),
            )
        conn.execute(
            "INSERT INTO qc_decisions (item_id, stage, annotator, decision, created_at) "
            "VALUES (1, 'consensus', 'ann', 'reject', 't')"
        )
    conn.close()
    with open_workspace(path) as ws:
        rows = _rows(path, "reviews")
        assert all(UUID4.fullmatch(r["uuid"]) for r in rows) and len({r["uuid"] for r in rows}) == 6
        assert [r["withdraws"] for r in rows] == [None, None, None, rows[1]["uuid"], None, rows[4]["uuid"]]
        assert [(r.item_id, r.verdict) for r in reviews.standing_reviews(ws)] == [(1, "ok"), (2, "skip")]
        assert [r["decision"] for r in _rows(path, "qc_decisions")] == ["reject"]
        # The rebuilt tables keep their index and trigger, and qc_decisions now admits a withdrawal.
        names = {r[0] for r in ws.conn.execute("SELECT name FROM sqlite_master WHERE type IN ('index', 'trigger')")}
        assert {
            "reviews_item",
            "reviews_no_update",
            "labels_no_update",
            "adjudications_no_update",
            "qc_decisions_item",
            "qc_decisions_no_update",
        } <= names
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            ws.conn.execute("UPDATE qc_decisions SET note = 'x'")
        ws.conn.rollback()
        withdrawn = qc.undo_decision(ws, 1, "consensus", "ann")
        assert withdrawn.decision == "reject" and qc.standing_decisions(ws, 1, "consensus") == []
