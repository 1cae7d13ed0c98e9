"""Verdicts are appended, never edited; undo withdraws; what stands is derived from the log."""

import sqlite3

import pytest

from annotation import reviews
from db import catalog, open_workspace
from evaluator.formats.importers import import_benchmark
from vlmdesk.demo import demo_dir

pytestmark = pytest.mark.base  # also run in the base install (.ci/base-install)


@pytest.fixture
def ws(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        import_benchmark(ws, demo_dir() / "demo_mcq.jsonl", fmt="jsonl", name="demo")
        yield ws


def _items(ws):
    return catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)


def test_verdicts_stand_per_annotator_and_undo_withdraws_the_latest(ws):
    a, b = _items(ws)[:2]
    reviews.add_review(ws, a.id, "ann", "ok", seconds=2.5)
    reviews.add_review(ws, a.id, "ann", "ambiguous", note="two readings")
    reviews.add_review(ws, b.id, "ann", "wrong_answer", corrected_answer="C")
    assert {(r.item_id, r.verdict) for r in reviews.standing_reviews(ws, annotator="ann")} == {
        (a.id, "ambiguous"),
        (b.id, "wrong_answer"),
    }
    withdrawn = reviews.undo_last(ws, "ann")
    assert withdrawn.item_id == b.id
    assert reviews.undo_last(ws, "ann", item_id=a.id).verdict == "ambiguous"
    assert [(r.item_id, r.verdict) for r in reviews.standing_reviews(ws, annotator="ann")] == [(a.id, "ok")]
    # Nothing was deleted: 3 verdicts + 2 undo rows.
    assert [r.verdict for r in reviews.history(ws, a.id)] == ["ok", "ambiguous", "undo"]
    assert ws.conn.execute("SELECT count(*) FROM reviews").fetchone()[0] == 5


def test_log_is_append_only_and_verdicts_are_checked(ws):
    item = _items(ws)[0]
    reviews.add_review(ws, item.id, "ann", "ok")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        ws.conn.execute("UPDATE reviews SET verdict = 'skip'")
    with pytest.raises(ValueError, match="unknown verdict"):
        reviews.add_review(ws, item.id, "ann", "great")
    with pytest.raises(ValueError, match="right option's letter"):
        reviews.add_review(ws, item.id, "ann", "wrong_answer")
    with pytest.raises(ValueError, match="annotator"):
        reviews.add_review(ws, item.id, "  ", "ok")


def test_conflicts_and_progress(ws):
    a, b, c = _items(ws)[:3]
    bench_id = a.benchmark_id
    reviews.add_review(ws, a.id, "ann", "ok")
    reviews.add_review(ws, a.id, "bob", "ambiguous")
    reviews.add_review(ws, b.id, "ann", "ok")
    reviews.add_review(ws, b.id, "bob", "ok")
    reviews.add_review(ws, c.id, "bob", "skip")
    assert set(reviews.conflicts(ws, bench_id)) == {a.id}
    # c holds bob's skip alone: a skip is no verdict, so c is not judged (issue 35).
    assert reviews.progress(ws, bench_id, "ann") == {"total": 30, "reviewed": 2, "mine": 2}
    assert reviews.progress(ws, bench_id, "bob")["mine"] == 2


def test_a_verdict_is_committed_at_once(ws, tmp_path):
    item = _items(ws)[0]
    reviews.add_review(ws, item.id, "ann", "bad_image")
    # A second connection (another process) sees it without any further commit or close.
    other = sqlite3.connect(ws.path)
    assert other.execute("SELECT verdict FROM reviews").fetchall() == [("bad_image",)]
    other.close()
