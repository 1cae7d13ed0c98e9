"""A keypress costs the same in any benchmark (issue 27): what "next", "previous", a verdict and undo ask SQLite is
read by index — no full scan of items, reviews, labels, votes or the standing verdicts — and the work SQLite does
for them (virtual-machine steps, counted by the progress handler) does not grow with the benchmark or the log."""

from __future__ import annotations

import json
import re

import pytest

from annotation import reviews
from db import catalog, open_workspace
from db.catalog import now_iso

# Tables a keypress must never read whole (the standing verdicts are the log's index). Small tables read whole by
# design (adjudication set names, a benchmark's runs) are not listed.
BIG_TABLES = ("items", "reviews", "labels", "arena_votes", "review_standing", "predictions", "adjudication_items")
ANNOTATORS = ("ann", "bob", "cy")


def build(path, items: int, verdicts: int) -> None:
    """A benchmark of `items` items (no images: the images are not what is measured) with `verdicts` standing
    verdicts of three annotators on its first items, one item in three with a dissent (conflicts for the queues)."""
    with open_workspace(path) as ws:
        with ws.db.atomic():
            bid = catalog.insert_benchmark(
                ws, name="big", kind="mcq", format="jsonl", source="generated", source_sha256="big", meta={}
            )
            catalog.insert_items(
                ws,
                [
                    (bid, n, n, f"Question {n}?", None, json.dumps(["a", "b", "c"]), "A", "cat", "l2", "dev", "en")
                    + (None, 0, "{}")
                    for n in range(items)
                ],
            )
            catalog.finish_benchmark(ws, bid, rows_read=items, rows_folded=0, rows_skipped=0)
            first = ws.conn.execute("SELECT min(id) FROM items").fetchone()[0]
            ws.conn.executemany(
                "INSERT INTO reviews (item_id, annotator, verdict, created_at) VALUES (?, ?, ?, ?)",
                [
                    (first + 10 + k // 3, ANNOTATORS[k % 3], "ambiguous" if k % 9 == 2 else "ok", now_iso())
                    for k in range(verdicts)
                ],
            )


def keypresses(window) -> tuple[list[str], int]:
    """The statements and the SQLite steps of: next ×3, a verdict, previous, undo, previous, next unreviewed."""
    review = window.view("review")
    window.show_view("review")
    review.show_row(2)
    conn = window.ctx.ws.conn
    statements: list[str] = []
    steps = [0]

    def step() -> int:
        steps[0] += 1
        return 0

    conn.set_trace_callback(statements.append)
    conn.set_progress_handler(step, 10)
    try:
        for action in ("next", "next", "next", "verdict", "previous", "undo", "previous", "next_unreviewed"):
            if action == "verdict":
                review.verdict("ok")
            else:
                getattr(review, action)()
    finally:
        conn.set_trace_callback(None)
        conn.set_progress_handler(None, 0)
    return statements, steps[0]


def full_scans(conn, statements: list[str]) -> list[tuple[str, str]]:
    found = []
    for sql in statements:
        if not re.match(r"\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b", sql, re.I):
            continue  # BEGIN, COMMIT, trigger markers
        for *_, detail in conn.execute("EXPLAIN QUERY PLAN " + sql):
            m = re.match(r"SCAN (\w+)(?: AS (\w+))?", detail)
            if m and (m[1] in BIG_TABLES or _alias_of(sql, m[1]) in BIG_TABLES):
                found.append((detail, sql[:160]))
    return found


def _alias_of(sql: str, name: str) -> str | None:
    m = re.search(rf"\b(\w+)\s+(?:AS\s+)?{re.escape(name)}\b", sql)
    return m[1] if m else None


@pytest.fixture
def two_sizes(tmp_path):
    small, large = tmp_path / "small.sqlite", tmp_path / "large.sqlite"
    build(small, 1_000, 300)
    build(large, 10_000, 3_000)
    return small, large


def test_a_keypress_reads_by_index_and_costs_the_same_at_ten_times_the_size(make_window, two_sizes):
    measured = {}
    for path in two_sizes:
        window = make_window(path)
        statements, steps = keypresses(window)
        assert full_scans(window.ctx.ws.conn, statements) == []
        measured[path.stem] = (len(statements), steps)
        window.close()
    (n_small, steps_small), (n_large, steps_large) = measured["small"], measured["large"]
    assert n_large == n_small  # the same statements at any size
    # B-tree depth grows with the log of the size; a query over the benchmark would grow ten times.
    assert steps_large <= 1.3 * steps_small, measured


def test_a_refresh_after_another_process_wrote_a_verdict_reads_that_item_only(make_window, two_sizes):
    _, large = two_sizes
    window = make_window(large)
    window.show_view("review")
    review = window.view("review")
    review.show_row(0)
    model = window.ctx.model
    resets = []
    model.modelReset.connect(lambda: resets.append(1))
    item_id = model.rows[5].id
    with open_workspace(large) as other:
        reviews.add_review(other, item_id, "dee", "ambiguous")
    conn = window.ctx.ws.conn
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        window._check_for_changes()  # the once-a-second poll, now
    finally:
        conn.set_trace_callback(None)
    assert model.status[item_id].by("dee") == ("ambiguous", None)  # shown ...
    assert resets == []  # ... without reloading the listing
    assert full_scans(conn, statements) == []
    assert review.progress.text().startswith("Reviewed 1001\u00a0/\u00a010000")  # the progress line follows
    window.close()


def test_next_unreviewed_walks_by_index_to_the_first_item_without_a_visible_verdict(make_window, tmp_path):
    path = tmp_path / "walk.sqlite"
    build(path, 3_000, 0)
    with open_workspace(path) as ws:
        ids = [r[0] for r in ws.conn.execute("SELECT id FROM items ORDER BY position")]
        # Items 0..1999 judged by bob; 2000 by me (ann) as well; 2500 by me only (a skip still counts as mine).
        for i in ids[:2001]:
            reviews.add_review(ws, i, "bob", "ok")
        reviews.add_review(ws, ids[2000], "ann", "ok")
        reviews.add_review(ws, ids[2500], "ann", "skip")
    window = make_window(path)
    window.show_view("review")
    review, model = window.view("review"), window.ctx.model
    conn = window.ctx.ws.conn
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        review.show_row(0)
        review.next_unreviewed()  # nobody's verdict: the first item after bob's two thousand
    finally:
        conn.set_trace_callback(None)
    assert review.item.id == ids[2001] and review.row == 2001
    assert full_scans(conn, statements) == []
    assert len(model.rows) < 2001 + 20 * 200  # paged in by growing chunks, up to the item found (not the rest)
    review.show_row(2499)
    review.next_unreviewed()  # my skip is a visible verdict
    assert review.item.id == ids[2501]
    review.show_row(2999)
    review.next_unreviewed()  # past the end: from the top again
    assert review.item.id == ids[2001]

    window.ctx.update_prefs(blind=True)  # blind: only my own verdicts show, so bob's items are unreviewed to me
    review.show_row(1999)
    review.next_unreviewed()
    assert review.item.id == ids[2001]  # 2000 has my verdict
    review.show_row(0)
    review.next_unreviewed()
    assert review.item.id == ids[1]
    window.close()


def test_a_verdict_does_not_recount_the_queues_while_they_are_hidden(make_window, two_sizes):
    _, large = two_sizes
    window = make_window(large)
    queues = window.view("queues")
    counted = []
    queues.update_counts = lambda: counted.append(1)  # what recounts every queue
    window.show_view("review")
    review = window.view("review")
    review.show_row(0)
    review.verdict("ok")
    review.verdict("ambiguous")
    assert counted == []  # hidden: nothing recounted
    window.show_view("queues")
    assert counted  # shown: counted once it is in sight
    window.close()


def test_a_run_writing_elsewhere_refreshes_the_rows_it_answered_not_the_listing(make_window, tmp_path):
    from db import runs
    from db.item_query import ItemFilter

    path = tmp_path / "run.sqlite"
    build(path, 2_000, 0)

    def passes(ws, run_id, items):
        runs.add_predictions(
            ws,
            [runs.Prediction(run_id, i, 0, (0, 1, 2), "p", "A", "A", "A", "rules", None, True, 1.0) for i in items],
        )

    with open_workspace(path) as other:
        bench = catalog.benchmark_by_name(other, "big")
        run_id = runs.create_run(
            other,
            benchmark_id=bench.id,
            model_spec="baseline:first",
            strategy="vanilla",
            prompt_template="{}",
            extractor="rules",
            config={},
            config_key="k",
            versions={},
            git_revision=None,
            seed=0,
        )
        ids = [r[0] for r in other.conn.execute("SELECT id FROM items ORDER BY position")]
        passes(other, run_id, ids[:10])
    window = make_window(path)
    model = window.ctx.model
    model.set_filter(ItemFilter(run_id=run_id))
    assert [r.run_result for r in model.rows[8:12]] == ["right", "right", "none", "none"]
    window._check_for_changes()  # the marks as they are now
    resets = []
    model.modelReset.connect(lambda: resets.append(1))
    with open_workspace(path) as other:
        passes(other, run_id, ids[10:15])
    conn = window.ctx.ws.conn
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        window._check_for_changes()
    finally:
        conn.set_trace_callback(None)
    assert [r.run_result for r in model.rows[8:17]] == ["right"] * 7 + ["none"] * 2  # the new passes show …
    assert resets == []  # … without reloading the listing
    assert full_scans(conn, statements) == []
    assert next(r for r in runs.list_runs(window.ctx.ws) if r.id == run_id).predictions == 15  # the kept count
    window.close()
