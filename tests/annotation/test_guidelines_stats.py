"""Guidelines are versioned and every verdict records the version it was given under; annotator statistics
(verdicts by kind, items per hour, κ / α, disagreements) read the standing verdicts; saved filters are named,
checked and replaced by name."""

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from annotation import annotator_stats, guidelines, reviews, saved_filters
from db import catalog, open_workspace
from db.errors import InvalidInput
from evaluator.formats.importers import import_benchmark
from vlmdesk.demo import demo_dir


@pytest.fixture
def ws(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        import_benchmark(ws, demo_dir() / "demo_mcq.jsonl", fmt="jsonl", name="demo")
        yield ws


def _bench(ws):
    return catalog.benchmark_by_name(ws, "demo")


def _items(ws):
    return catalog.list_items(ws, _bench(ws).id)


def _version_of(ws, review_id):
    return ws.conn.execute("SELECT guideline_version FROM reviews WHERE id = ?", (review_id,)).fetchone()[0]


def test_guidelines_are_versioned_and_verdicts_record_their_version(ws):
    bench, (a, b, c) = _bench(ws), _items(ws)[:3]
    before = reviews.add_review(ws, a.id, "ann", "ok")
    assert guidelines.current(ws, bench.id) is None and _version_of(ws, before.id) is None
    v1 = guidelines.save(ws, bench.id, "# Rules\n\nA key is wrong only if…", "lead")
    assert (v1.version, v1.author) == (1, "lead")
    assert guidelines.save(ws, bench.id, v1.markdown, "lead") == v1  # the same text: no new version
    under_1 = reviews.add_review(ws, b.id, "ann", "ambiguous")
    v2 = guidelines.save(ws, bench.id, v1.markdown + "\n- Count partly hidden objects.", "lead")
    under_2 = reviews.add_review(ws, c.id, "bob", "ok")
    undo = reviews.undo_last(ws, "bob")
    assert v2.version == 2 and guidelines.current(ws, bench.id).markdown.endswith("objects.")
    assert [_version_of(ws, r.id) for r in (before, under_1, under_2)] == [None, 1, 2]
    assert ws.conn.execute("SELECT guideline_version FROM reviews WHERE verdict = 'undo'").fetchone()[0] is None
    assert undo.item_id == c.id
    assert guidelines.verdicts_per_version(ws, bench.id) == {None: 1, 1: 1, 2: 1}
    assert [g.version for g in guidelines.versions(ws, bench.id)] == [1, 2]
    # Old versions are evidence: never rewritten.
    with pytest.raises(sqlite3.DatabaseError, match="versioned"):
        ws.conn.execute("UPDATE guidelines SET markdown = 'x' WHERE version = 1")
    for bad in ("a\x00b", "x" * (guidelines.MAX_GUIDELINE_CHARS + 1)):
        with pytest.raises(InvalidInput):
            guidelines.save(ws, bench.id, bad, "lead")
    with pytest.raises(InvalidInput):
        guidelines.save(ws, bench.id, "text", "bad\u202ename")
    assert len(guidelines.versions(ws, bench.id)) == 2


def test_annotator_statistics_from_standing_verdicts(ws):
    bench, items = _bench(ws), _items(ws)
    # ann and bob agree on 3 items and disagree on 1; cy judges one item; a withdrawn verdict does not count.
    for n, item in enumerate(items[:4]):
        reviews.add_review(ws, item.id, "ann", "ok", seconds=30)
        reviews.add_review(ws, item.id, "bob", "ok" if n < 3 else "ambiguous", seconds=60)
    reviews.add_review(ws, items[5].id, "ann", "wrong_answer", corrected_answer="A", seconds=30)
    reviews.add_review(ws, items[5].id, "bob", "wrong_answer", corrected_answer="A", seconds=60)
    reviews.add_review(ws, items[6].id, "ann", "skip", seconds=30)
    reviews.add_review(ws, items[7].id, "ann", "bad_image", seconds=30)
    reviews.undo_last(ws, "ann")  # the bad_image
    reviews.add_review(ws, items[0].id, "cy", "ok")
    stats = annotator_stats.benchmark_stats(ws, bench.id)
    by = {a.annotator: a for a in stats.annotators}
    assert sorted(by) == ["ann", "bob", "cy"]
    ann, bob = by["ann"], by["bob"]
    # A skip is no verdict: ann judged 5 items, in 180 s of work (the skip's 30 s included).
    assert ann.verdicts == {"ok": 4, "wrong_answer": 1, "skip": 1} and ann.items == 5
    assert ann.items_per_hour == pytest.approx(3600 * 5 / 180) and bob.items_per_hour == pytest.approx(60)
    assert by["cy"].items_per_hour is None  # no time stored
    assert ann.shared["bob"] == 5 and ann.shared["cy"] == 1
    # κ over (ok, ok, ok, ok, wrong→A) vs (ok, ok, ok, ambiguous, wrong→A), through scikit-learn:
    from sklearn.metrics import cohen_kappa_score

    expected = cohen_kappa_score(["ok"] * 4 + ["w"], ["ok"] * 3 + ["amb", "w"])
    assert ann.kappa["bob"] == pytest.approx(expected) and bob.kappa["ann"] == pytest.approx(expected)
    assert ann.kappa["cy"] is None  # one shared item, one category: undefined, not NaN
    assert ann.disagreements == bob.disagreements == 1 and by["cy"].disagreements == 0
    assert stats.conflicts == 1 and stats.reviewed_items == 5 and stats.total_items == 30  # items[6]: a skip alone
    assert stats.alpha is not None and -1 <= stats.alpha <= 1
    assert stats.to_json()["annotators"][0]["annotator"] == "ann"


def test_saved_filters_are_named_checked_and_replaced(ws):
    f = saved_filters.save(ws, "CP to do", {"l2_category": "coarse_perception", "review": "unreviewed"}, "lead")
    assert f.filters == {"l2_category": "coarse_perception", "review": "unreviewed"}
    assert f.describe() == "L2 coarse_perception · review unreviewed"
    again = saved_filters.save(ws, "CP to do", {"text": "cat", "split": None}, "ann")
    assert again.filters == {"text": "cat"} and again.author == "ann"
    assert [s.name for s in saved_filters.list_filters(ws)] == ["CP to do"]
    for bad in ({"nope": 1}, {"run_id": "3"}, {"run_id": 0}, {"text": "a\x00"}, ["text"]):
        with pytest.raises(InvalidInput):
            saved_filters.save(ws, "bad", bad, "lead")
    with pytest.raises(InvalidInput, match="filter name"):
        saved_filters.save(ws, "", {}, "lead")
    assert saved_filters.delete(ws, "CP to do") and not saved_filters.delete(ws, "CP to do")
    assert saved_filters.list_filters(ws) == []


def test_check_reports_a_verdict_naming_a_guideline_version_its_benchmark_lacks(tmp_path):
    from db.check import check_workspace

    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        import_benchmark(ws, demo_dir() / "demo_mcq.jsonl", fmt="jsonl", name="demo")
        bench = _bench(ws)
        guidelines.save(ws, bench.id, "rules", "lead")
        good = reviews.add_review(ws, _items(ws)[0].id, "ann", "ok")
    assert {c.name: c.ok for c in check_workspace(path).results}["guideline_versions"]
    with sqlite3.connect(path) as conn:  # as a hand-edited or foreign file might hold it
        conn.execute("DROP TRIGGER reviews_no_update")
        conn.execute("UPDATE reviews SET guideline_version = 7 WHERE id = ?", (good.id,))
    found = {c.name: c for c in check_workspace(path).results}["guideline_versions"]
    assert found.problems == [f"review {good.id} names guideline version 7, which its benchmark does not have"]


@pytest.mark.parametrize("name", ["no-such-file.md", "a-folder"])
def test_guidelines_set_with_a_missing_or_unreadable_file_is_one_line_exit_2(tmp_path, name):
    from tests.test_errors import one_line_error, vlmdesk

    ws = str(tmp_path / "ws.sqlite")
    assert vlmdesk("--workspace", ws, "demo").returncode == 0
    (tmp_path / "a-folder").mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "vlmdesk", "--workspace", ws, "guidelines", "set", "demo", name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert proc.returncode == 2, proc.stderr
    assert one_line_error(proc).startswith(f"error: {name}")  # "…: No such file", "… is a directory"
    assert vlmdesk("--workspace", ws, "guidelines", "show", "demo", "--json").stdout.count('"version"') == 0
